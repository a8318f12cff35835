#include "crash_guard.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "clock.h"

extern char **environ;

#ifndef ZKELECT_GUARD_PATH
#define ZKELECT_GUARD_PATH "/usr/lib/zkelect/zkelect-guard"
#endif

namespace zkelect {

std::string crash_guard_path() {
    // secure_getenv: a set-user-ID program does not run a helper its
    // caller named.
    const char *e = secure_getenv("ZKELECT_GUARD");
    return e && *e ? std::string(e) : std::string(ZKELECT_GUARD_PATH);
}

namespace crash_guard {
namespace {

constexpr int kGuardFd = 3;  // where the helper reads (zkelect-guard.c)
constexpr int64_t kRetryFirstMs = 1000, kRetryMaxMs = 30000;

// The write end of one helper's pipe. Closing it lets the helper go: it
// sees EOF with its owner alive and exits without closing anything.
class GuardPipe {
public:
    GuardPipe() = default;
    explicit GuardPipe(int fd) : fd_(fd) {}
    ~GuardPipe() { reset(); }
    GuardPipe(GuardPipe &&o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
    GuardPipe &operator=(GuardPipe &&o) noexcept {
        if (this != &o) {
            reset();
            fd_ = o.fd_;
            o.fd_ = -1;
        }
        return *this;
    }
    int fd() const { return fd_; }
    bool up() const { return fd_ >= 0; }
    void reset() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }
    // One whole line, or false: the helper is gone (EPIPE) or not reading
    // (a full pipe). SIGPIPE is blocked for this thread during the write
    // and a SIGPIPE it raised is taken back, so the host never sees one.
    bool write_line(const std::string &line) {
        if (fd_ < 0) return false;
        sigset_t pipe_set, old, pending;
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
        sigpending(&pending);
        const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
        ssize_t n;
        do n = ::write(fd_, line.data(), line.size());
        while (n < 0 && errno == EINTR);
        const int e = errno;
        if (n < 0 && e == EPIPE && !was_pending) {
            timespec zero{};
            sigtimedwait(&pipe_set, nullptr, &zero);
        }
        pthread_sigmask(SIG_SETMASK, &old, nullptr);
        // A pipe's write of at most PIPE_BUF bytes is whole or nothing.
        return n == static_cast<ssize_t>(line.size());
    }

private:
    int fd_ = -1;
};

// Starts the helper: posix_spawn (no fork of a threaded host), the pipe's
// read end as fd 3, the write end O_CLOEXEC (no other child of the host
// inherits it through exec). The child posix_spawn made exits at once with
// the start's verdict (the helper proper is its child, in a session of its
// own); it is reaped here.
GuardPipe spawn_guard(int delay_ms, std::string *why) {
    const std::string path = crash_guard_path();
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
        *why = std::string("cannot make the crash guard's pipe: ") + std::strerror(errno);
        return {};
    }
    GuardPipe w(p[1]);
    int rd = p[0];
    if (rd == kGuardFd) {
        // dup2(3, 3) would leave FD_CLOEXEC set on some C libraries.
        rd = fcntl(p[0], F_DUPFD_CLOEXEC, kGuardFd + 1);
        ::close(p[0]);
        if (rd < 0) {
            *why = std::string("cannot make the crash guard's pipe: ") + std::strerror(errno);
            return {};
        }
    }
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, rd, kGuardFd);
    posix_spawnattr_init(&at);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    // The host's signal mask and handlers are its own, not the helper's.
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    std::string delay = std::to_string(delay_ms), owner = std::to_string(getpid());
    char *argv[] = {const_cast<char *>(path.c_str()), const_cast<char *>("--delay-ms"),
                    delay.data(), owner.data(), nullptr};
    pid_t child = -1;
    int rc = posix_spawn(&child, path.c_str(), &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    ::close(rd);
    if (rc != 0) {
        *why = "cannot start the crash guard " + path + ": " + std::strerror(rc);
        return {};
    }
    int st = 0;
    pid_t got;
    do got = waitpid(child, &st, 0);
    while (got < 0 && errno == EINTR);
    if (got == child) {
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return w;
        *why = "the crash guard " + path +
               (WIFEXITED(st) ? " refused to start (exit status " + std::to_string(WEXITSTATUS(st)) + ")"
                              : " was killed at start (signal " + std::to_string(WTERMSIG(st)) + ")");
        return {};
    }
    // The host reaps its children itself (a SIGCHLD handler, or SIGCHLD
    // ignored): the child has exited by now, and a helper that runs holds
    // the pipe's read end; none does when the start failed.
    pollfd pf{w.fd(), 0, 0};
    if (::poll(&pf, 1, 0) > 0 && (pf.revents & (POLLERR | POLLHUP | POLLNVAL))) {
        *why = "the crash guard " + path + " refused to start";
        return {};
    }
    return w;
}

std::string add_line(const GuardedSession &s) {
    char head[96];
    std::snprintf(head, sizeof head, "ADD %016" PRIx64 " ", static_cast<uint64_t>(s.id));
    std::string line = head;
    static const char hex[] = "0123456789abcdef";
    for (unsigned char c : s.passwd) {
        line += hex[c >> 4];
        line += hex[c & 15];
    }
    line += ' ' + std::to_string(s.timeout_ms) + ' ' + s.hosts + '\n';
    return line;
}

std::string wait_line(int64_t id, int pid) {
    char b[64];
    std::snprintf(b, sizeof b, "WAIT %016" PRIx64 " %d\n", static_cast<uint64_t>(id), pid);
    return b;
}

// What a guard is told of a member's session: ADD, and its WAIT if any.
std::string session_lines(const GuardedSession &s, int wait_pid) {
    std::string tls;
    if (!s.tls.empty()) {
        char head[32];
        std::snprintf(head, sizeof head, "TLS %016" PRIx64 " ", static_cast<uint64_t>(s.id));
        tls = head + s.tls + '\n';
    }
    return add_line(s) + tls + (wait_pid ? wait_line(s.id, wait_pid) : std::string());
}

std::string del_line(int64_t id) {
    char b[40];
    std::snprintf(b, sizeof b, "DEL %016" PRIx64 "\n", static_cast<uint64_t>(id));
    return b;
}

class Registry {
public:
    static Registry &self();
    Registry() { pthread_atfork(&Registry::prepare, &Registry::parent, &Registry::child); }

    uint64_t join(int delay_ms, Listener l, std::string *why) {
        std::lock_guard<std::mutex> lock(mu_);
        Guard &g = guards_[delay_ms];
        if (!g.pipe.up()) {
            // A guard that was down (being retried) comes back for every
            // client it has.
            const bool was_down = !no_members_of(delay_ms);
            if (!start(delay_ms, g, why)) {
                if (!was_down) guards_.erase(delay_ms);
                return 0;
            }
            if (was_down)
                tell(delay_ms, "the crash guard of this process (" + crash_guard_path() +
                                   ") runs again and guards this client's session");
        }
        uint64_t t = next_ticket_++;
        members_[t] = Member{delay_ms, std::move(l), std::nullopt, 0};
        start_watcher();
        return t;
    }

    void leave(uint64_t ticket) {
        std::thread stopped;
        {
            std::lock_guard<std::mutex> lock(mu_);
            auto it = members_.find(ticket);
            if (it == members_.end()) return;
            const int delay = it->second.delay_ms;
            withdraw(it->second);
            members_.erase(it);
            if (no_members_of(delay)) guards_.erase(delay);  // closes its pipe
            if (members_.empty() && watcher_) {
                ++watcher_gen_;
                stopped = std::move(*watcher_);
                watcher_.reset();
                wake();
            }
        }
        if (stopped.joinable()) stopped.join();
    }

    bool add(uint64_t ticket, const GuardedSession &s) {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = members_.find(ticket);
        if (it == members_.end()) return false;
        Member &m = it->second;
        if (m.session && m.session->id != s.id) withdraw(m);
        m.session = s;
        Guard &g = guards_[m.delay_ms];
        if (!g.pipe.up()) return false;  // the watcher's new guard gets it
        if (g.pipe.write_line(session_lines(s, m.wait_pid))) return true;
        lost(g);
        return false;
    }

    bool wait_for(uint64_t ticket, int pid) {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = members_.find(ticket);
        if (it == members_.end()) return false;
        Member &m = it->second;
        m.wait_pid = pid;
        Guard &g = guards_[m.delay_ms];
        if (!g.pipe.up()) return false;
        if (!m.session) return true;  // goes with the session's ADD
        if (g.pipe.write_line(wait_line(m.session->id, pid))) return true;
        lost(g);
        return false;
    }

    void remove(uint64_t ticket) {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = members_.find(ticket);
        if (it != members_.end()) withdraw(it->second);
    }

    bool guarded(uint64_t ticket) {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = members_.find(ticket);
        if (it == members_.end() || !it->second.session) return false;
        auto g = guards_.find(it->second.delay_ms);
        return g != guards_.end() && g->second.pipe.up();
    }

private:
    struct Guard {
        GuardPipe pipe;       // down (-1): being started again
        uint64_t serial = 0;  // which helper the pipe is to (its fd may be reused)
        int64_t retry_at = 0;  // CLOCK_BOOTTIME ns, while down
        int64_t retry_ms = 0;  // the wait before the next start, while down
        int64_t started_at = 0;  // CLOCK_BOOTTIME ns of the running helper's start
    };
    struct Member {
        int delay_ms;
        Listener listener;
        std::optional<GuardedSession> session;
        int wait_pid;  // WAIT (0: none)
    };

    bool no_members_of(int delay) const {
        return std::none_of(members_.begin(), members_.end(),
                            [delay](const auto &m) { return m.second.delay_ms == delay; });
    }

    // Under mu_. DEL of the member's session, if any.
    void withdraw(Member &m) {
        if (!m.session) return;
        const int64_t id = m.session->id;
        m.session.reset();
        auto g = guards_.find(m.delay_ms);
        if (g != guards_.end() && g->second.pipe.up() && !g->second.pipe.write_line(del_line(id)))
            lost(g->second);
    }

    // Under mu_: the guard stopped reading. Its pipe closes (should it
    // merely be stopped, it exits on EOF once resumed, closing nothing) and
    // the watcher starts another at once.
    void lost(Guard &g) {
        g.pipe.reset();
        g.retry_at = 0;
        g.retry_ms = 0;
        wake();
    }

    void wake() {
        if (wake_fd_ < 0) return;
        uint64_t one = 1;
        ssize_t n = ::write(wake_fd_, &one, sizeof one);
        (void)n;
    }

    void start_watcher() {
        if (watcher_) return;
        if (wake_fd_ < 0) wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        const uint64_t gen = watcher_gen_;
        watcher_.emplace([this, gen] { watch(gen); });
    }

    // Tells each member of the guard of delay (under mu_: a listener only
    // posts to its client's loop).
    void tell(int delay, const std::string &what) {
        for (auto &[t, m] : members_)
            if (m.delay_ms == delay && m.listener) m.listener(what);
    }

    // Under mu_: a helper for a guard that is down, given every session its
    // members hold. False with *why.
    bool start(int delay, Guard &g, std::string *why) {
        g.pipe = spawn_guard(delay, why);
        if (!g.pipe.up()) return false;
        g.serial = ++serials_;
        g.started_at = boottime_ns();
        for (auto &[t, m] : members_) {
            if (m.delay_ms == delay && m.session &&
                !g.pipe.write_line(session_lines(*m.session, m.wait_pid))) {
                g.pipe.reset();
                *why = "the new crash guard stopped reading at once";
                return false;
            }
        }
        g.retry_ms = 0;
        return true;
    }

    // Under mu_: a new helper for a guard that is down. At most three tries
    // now; then later, less often.
    void restart(int delay, Guard &g, bool died) {
        std::string why;
        // A helper that dies as soon as it starts (killed by a watchdog, or
        // refusing what it is sent) is not started again at once, or the
        // two would loop.
        const bool short_lived = died && g.started_at > boottime_ns() - kRetryFirstMs * kNsPerMs;
        for (int attempt = 0; attempt < 3 && !short_lived; ++attempt) {
            why.clear();
            if (start(delay, g, &why)) break;
        }
        const std::string path = crash_guard_path();
        if (short_lived) why = "it died within a second of its start";
        if (g.pipe.up()) {
            tell(delay, died ? "the crash guard of this process (" + path +
                                   ") died; a new one was started and guards this client's "
                                   "session again (meanwhile a crash of this process would "
                                   "have handed over only after the session timeout)"
                             : "the crash guard of this process (" + path +
                                   ") runs again and guards this client's session");
            return;
        }
        const bool first = g.retry_ms == 0;
        g.retry_ms = first ? kRetryFirstMs : std::min(g.retry_ms * 2, kRetryMaxMs);
        g.retry_at = boottime_ns() + g.retry_ms * kNsPerMs;
        if (first)
            tell(delay, std::string(died ? "the crash guard of this process died and "
                                         : "the crash guard of this process ") +
                            "could not be started again (" + why +
                            "): until it can (it is tried again), a crash of this process "
                            "hands over only after the session timeout");
    }

    void watch(uint64_t gen) {
        std::unique_lock<std::mutex> lock(mu_);
        for (;;) {
            if (gen != watcher_gen_) return;
            std::vector<pollfd> fds{{wake_fd_, POLLIN, 0}};
            std::vector<std::pair<int, uint64_t>> polled;  // delay, serial
            int64_t next_retry = INT64_MAX;
            for (auto &[delay, g] : guards_) {
                if (g.pipe.up()) {
                    // events 0: a pipe's write end reports POLLERR once no
                    // reader is left, i.e. the helper is gone.
                    fds.push_back({g.pipe.fd(), 0, 0});
                    polled.emplace_back(delay, g.serial);
                } else {
                    next_retry = std::min(next_retry, g.retry_at);
                }
            }
            int timeout = -1;
            if (next_retry != INT64_MAX)
                timeout = static_cast<int>(std::clamp<int64_t>(
                    (next_retry - boottime_ns()) / kNsPerMs + 1, 0, kRetryMaxMs));
            lock.unlock();
            int rc = ::poll(fds.data(), fds.size(), timeout);
            lock.lock();
            if (gen != watcher_gen_) return;
            if (rc > 0 && (fds[0].revents & POLLIN)) {
                uint64_t drained;
                ssize_t n = ::read(wake_fd_, &drained, sizeof drained);
                (void)n;
            }
            for (size_t i = 1; i < fds.size(); ++i) {
                if (!(fds[i].revents & (POLLERR | POLLHUP | POLLNVAL))) continue;
                auto g = guards_.find(polled[i - 1].first);
                // The pipe may have been closed or replaced while we polled.
                if (g == guards_.end() || !g->second.pipe.up() ||
                    g->second.serial != polled[i - 1].second)
                    continue;
                g->second.pipe.reset();
                restart(g->first, g->second, true);
            }
            const int64_t now = boottime_ns();
            for (auto &[delay, g] : guards_)
                if (!g.pipe.up() && g.retry_at <= now) restart(delay, g, g.retry_ms == 0);
        }
    }

    static void prepare() { self().mu_.lock(); }
    static void parent() { self().mu_.unlock(); }
    // The child has none of the parent's threads, and the parent's guards
    // watch the parent: the child keeps none of it. Its copies of the
    // pipes close (the parent's helpers keep theirs); the watcher's thread
    // object is left behind unjoined, as its thread is not in this process.
    static void child() {
        Registry &r = self();
        r.guards_.clear();
        r.members_.clear();
        if (r.watcher_) {
            new std::thread(std::move(*r.watcher_));  // never joined, never destroyed
            r.watcher_.reset();
        }
        ++r.watcher_gen_;
        if (r.wake_fd_ >= 0) ::close(r.wake_fd_);
        r.wake_fd_ = -1;
        r.mu_.unlock();
    }

    std::mutex mu_;
    std::map<int, Guard> guards_;  // by drain delay: one helper per delay in use
    std::map<uint64_t, Member> members_;
    uint64_t next_ticket_ = 1;
    uint64_t serials_ = 0;
    std::optional<std::thread> watcher_;
    uint64_t watcher_gen_ = 0;
    int wake_fd_ = -1;
};

Registry &Registry::self() {
    // Never destroyed: a client may outlive static destruction at exit,
    // and the atfork handlers stay registered for the process's life.
    static Registry *r = new Registry;
    return *r;
}

}  // namespace

uint64_t join(int delay_ms, Listener on_warning, std::string *why) {
    return Registry::self().join(delay_ms, std::move(on_warning), why);
}
void leave(uint64_t ticket) { Registry::self().leave(ticket); }
bool add(uint64_t ticket, const GuardedSession &s) { return Registry::self().add(ticket, s); }
void remove(uint64_t ticket) { Registry::self().remove(ticket); }
bool wait_for(uint64_t ticket, int pid) { return Registry::self().wait_for(ticket, pid); }
bool guarded(uint64_t ticket) { return Registry::self().guarded(ticket); }

}  // namespace crash_guard
}  // namespace zkelect
