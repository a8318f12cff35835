#include "crash_guard.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "clock.h"
#include "log_sink.h"

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
// The protocol's version, in the hello line the helper reads first
// (zkelect-guard.c): a helper of another release refuses with kExitVersion.
constexpr int kProtocolVersion = 3;
constexpr int kExitProtocol = 4, kExitVersion = 5;
constexpr int64_t kRetryFirstMs = 1000, kRetryMaxMs = 60000;
// A helper that ran this long before it died was not refusing us: the next
// one starts at once and the backoff starts over.
constexpr int64_t kHealthyMs = 30000;
// A helper with lines waiting that takes none of them for this long is
// stopped, traced or starved: declared lost and replaced.
constexpr int64_t kStallMs = 2000;
// Lines waiting for a helper, at most (a replacement gets every session
// anew, about 100 bytes each plus the connect string).
constexpr size_t kQueueMax = size_t(64) << 20;
constexpr size_t kWriteChunk = 65536;
// The start's verdict (the exit of the child posix_spawn made), at most.
constexpr int64_t kStartBoundMs = 2000;

// Memory that held a session's password is wiped before it is freed.
template <class T>
struct Wiping {
    using value_type = T;
    Wiping() = default;
    template <class U>
    Wiping(const Wiping<U> &) {}
    T *allocate(size_t n) { return std::allocator<T>().allocate(n); }
    void deallocate(T *p, size_t n) {
        explicit_bzero(p, n * sizeof(T));
        std::allocator<T>().deallocate(p, n);
    }
    template <class U>
    bool operator==(const Wiping<U> &) const { return true; }
    template <class U>
    bool operator!=(const Wiping<U> &) const { return false; }
};
using Secret = std::basic_string<char, std::char_traits<char>, Wiping<char>>;

void wipe(Secret &s) {
    explicit_bzero(s.data(), s.size());
    s.clear();
}

// The write end of one helper's pipe, non-blocking. Closing it lets the
// helper go: it sees EOF with its owner alive and exits without closing
// anything. Shared: the watcher writes outside the registry's lock, and the
// descriptor must not close (and be reused) under that write.
//
// The host may close the descriptor behind our back (a daemon closing
// every descriptor, say) and open something else at its number: each
// write and the close first check that the number is still our pipe, so
// that no session's password goes into a host's file and no host's file
// is closed.
class GuardPipe {
public:
    explicit GuardPipe(int fd) : fd_(fd) {
        struct stat st{};
        if (::fstat(fd, &st) == 0) {
            dev_ = st.st_dev;
            ino_ = st.st_ino;
        }
    }
    ~GuardPipe() {
        if (fd_ >= 0 && ours()) ::close(fd_);
    }
    GuardPipe(const GuardPipe &) = delete;
    GuardPipe &operator=(const GuardPipe &) = delete;
    int fd() const { return fd_; }
    bool ours() const {
        struct stat st{};
        return ::fstat(fd_, &st) == 0 && S_ISFIFO(st.st_mode) && st.st_dev == dev_ &&
               st.st_ino == ino_;
    }
    // What the pipe takes now: bytes written, 0 when it is full, -1 when the
    // helper is gone (EPIPE) or the number is no longer our pipe. SIGPIPE is
    // blocked for this thread during the write and a SIGPIPE it raised is
    // taken back, so the host never sees one.
    ssize_t write_some(const char *p, size_t n) {
        if (!ours()) return -1;
        sigset_t pipe_set, old, pending;
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
        sigpending(&pending);
        const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
        ssize_t got;
        do got = ::write(fd_, p, n);
        while (got < 0 && errno == EINTR);
        const int e = errno;
        if (got < 0 && e == EPIPE && !was_pending) {
            timespec zero{};
            sigtimedwait(&pipe_set, nullptr, &zero);
        }
        pthread_sigmask(SIG_SETMASK, &old, nullptr);
        if (got >= 0) return got;
        return e == EAGAIN ? 0 : -1;
    }

private:
    int fd_;
    dev_t dev_ = 0;
    ino_t ino_ = 0;
};

std::string hello_line() { return "HELLO zkelect-guard " + std::to_string(kProtocolVersion) + "\n"; }

// Starts the helper: posix_spawn (no fork of a threaded host), the pipe's
// read end as fd 3 with the hello line in it already, the write end
// O_CLOEXEC (no other child of the host inherits it through exec) and
// non-blocking, an empty environment. The child posix_spawn made exits at
// once with the start's verdict (the helper proper is its child, in a
// session of its own); it is reaped here.
std::shared_ptr<GuardPipe> spawn_guard(int delay_ms, std::string *why) {
    const std::string path = crash_guard_path();
    if (getpid() == 1) {
        // When PID 1 of a PID namespace exits, the kernel kills every other
        // process of the namespace: a guard started from here dies with its
        // owner, before it could close the session. Said, not tried.
        *why = "this process is PID 1 of its PID namespace (a container without an init), and "
               "when PID 1 exits the kernel kills every process of the namespace, the crash "
               "guard with it: a crash of this process hands over only after the session "
               "timeout. An init in the container does not help if it exits with the app; "
               "set crash.guard=off to say so and silence this";
        return {};
    }
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
        *why = std::string("cannot make the crash guard's pipe: ") + std::strerror(errno);
        return {};
    }
    auto w = std::make_shared<GuardPipe>(p[1]);
    fcntl(p[1], F_SETFL, fcntl(p[1], F_GETFL) | O_NONBLOCK);
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
    const std::string hello = hello_line();
    if (w->write_some(hello.data(), hello.size()) != static_cast<ssize_t>(hello.size())) {
        ::close(rd);
        *why = "cannot write to the crash guard's pipe";
        return {};
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
    // Nothing of the host's environment: the helper needs none of it.
    char *envp[] = {nullptr};
    pid_t child = -1;
    int rc = posix_spawn(&child, path.c_str(), &fa, &at, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    ::close(rd);
    if (rc != 0) {
        *why = "cannot start the crash guard " + path + ": " + std::strerror(rc);
        return {};
    }
    // The child's verdict comes in milliseconds; a helper that gives none
    // (hung, stopped, a wrong program) is killed rather than waited for:
    // the registry's lock, which fork() takes too, is held meanwhile.
    bool hung = false;
    int pfd = static_cast<int>(syscall(SYS_pidfd_open, child, 0));
    if (pfd >= 0) {
        // Still our unreaped child (a host that reaps its own children may
        // have taken it): then the pidfd is its, not a reused pid's.
        siginfo_t peek{};
        if (waitid(P_PID, static_cast<id_t>(child), &peek, WEXITED | WNOHANG | WNOWAIT) != 0 ||
            peek.si_pid != 0) {
            ::close(pfd);
            pfd = -1;
        }
    }
    if (pfd >= 0) {
        pollfd pf{pfd, POLLIN, 0};
        const int64_t until = boottime_ns() + kStartBoundMs * kNsPerMs;
        int r;
        do r = ::poll(&pf, 1, static_cast<int>(std::max<int64_t>(0, (until - boottime_ns()) / kNsPerMs)));
        while (r < 0 && errno == EINTR);
        if (r == 0) {
            hung = true;
            syscall(SYS_pidfd_send_signal, pfd, SIGKILL, nullptr, 0);
        }
        ::close(pfd);
    }
    int st = 0;
    pid_t got;
    do got = waitpid(child, &st, 0);
    while (got < 0 && errno == EINTR);
    if (hung) {
        *why = "the crash guard " + path + " gave no verdict within " +
               std::to_string(kStartBoundMs) + " ms of its start and was killed";
        return {};
    }
    if (got == child) {
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return w;
        if (WIFEXITED(st) && WEXITSTATUS(st) == kExitVersion)
            *why = "the crash guard " + path + " speaks another version of the guard protocol "
                   "than this library (" + std::to_string(kProtocolVersion) +
                   ") and refused to start: install the zkelect-guard of this library's release";
        else if (WIFEXITED(st) && WEXITSTATUS(st) == kExitProtocol)
            *why = "the crash guard " + path + " did not take this library's hello line and "
                   "refused to start: install the zkelect-guard of this library's release";
        else
            *why = "the crash guard " + path +
                   (WIFEXITED(st) ? " refused to start (exit status " + std::to_string(WEXITSTATUS(st)) + ")"
                                  : " was killed at start (signal " + std::to_string(WTERMSIG(st)) + ")");
        return {};
    }
    // The host reaps its children itself (a SIGCHLD handler, or SIGCHLD
    // ignored): the child has exited by now, and a helper that runs holds
    // the pipe's read end; none does when the start failed.
    pollfd pf{w->fd(), 0, 0};
    if (::poll(&pf, 1, 0) > 0 && (pf.revents & (POLLERR | POLLHUP | POLLNVAL))) {
        *why = "the crash guard " + path + " refused to start";
        return {};
    }
    return w;
}

void hex_of(Secret &line, int64_t id) {
    char b[24];
    std::snprintf(b, sizeof b, "%016" PRIx64, static_cast<uint64_t>(id));
    line += b;
}

// A SASL record's field: "-" when empty, else its bytes in hex (a field may
// hold spaces; the password never appears as itself in the pipe's bytes).
void sasl_field(Secret &line, const std::string &v) {
    static const char hex[] = "0123456789abcdef";
    line += ' ';
    if (v.empty()) line += '-';
    for (unsigned char c : v) {
        line += hex[c >> 4];
        line += hex[c & 15];
    }
}

// What a guard is told of a member's session: ADD, its servers' addresses
// (SRV: the guard resolves no name), TLS, SASL, and its WAIT if any.
Secret session_lines(const GuardedSession &s, int wait_pid) {
    static const char hex[] = "0123456789abcdef";
    Secret line;
    line.reserve(96 + 2 * s.passwd.size() + s.hosts.size() + s.servers.size() + s.tls.size());
    line += "ADD ";
    hex_of(line, s.id);
    line += ' ';
    for (unsigned char c : s.passwd) {
        line += hex[c >> 4];
        line += hex[c & 15];
    }
    line += ' ';
    line += std::to_string(s.timeout_ms);
    line += ' ';
    line += s.hosts;
    line += '\n';
    if (!s.servers.empty()) {
        line += "SRV ";
        hex_of(line, s.id);
        line += ' ';
        line += s.servers;
        line += '\n';
    }
    if (!s.tls.empty()) {
        line += "TLS ";
        hex_of(line, s.id);
        line += ' ';
        line += s.tls;
        line += '\n';
    }
    if (!s.sasl.mechanism.empty()) {
        const GuardedSasl &a = s.sasl;
        line += "SASL ";
        hex_of(line, s.id);
        line += ' ';
        line += a.mechanism;
        for (const std::string *f : {&a.service, &a.host, &a.user, &a.password, &a.ccache,
                                     &a.client_keytab, &a.krb5_config})
            sasl_field(line, *f);
        line += '\n';
    }
    if (wait_pid) {
        line += "WAIT ";
        hex_of(line, s.id);
        line += ' ' + std::to_string(wait_pid) + '\n';
    }
    return line;
}

}  // namespace

size_t sasl_line_size(const GuardedSasl &a) {
    size_t n = 5 + 16 + 1 + a.mechanism.size() + 1;
    for (const std::string *f : {&a.service, &a.host, &a.user, &a.password, &a.ccache,
                                 &a.client_keytab, &a.krb5_config})
        n += 1 + (f->empty() ? 1 : 2 * f->size());
    return n;
}

namespace {

Secret wait_line(int64_t id, int pid) {
    Secret line = "WAIT ";
    hex_of(line, id);
    line += ' ';
    line += std::to_string(pid);
    line += '\n';
    return line;
}

Secret del_line(int64_t id) {
    Secret line = "DEL ";
    hex_of(line, id);
    line += '\n';
    return line;
}

class Registry {
public:
    static Registry &self();
    Registry() { pthread_atfork(&Registry::prepare, &Registry::parent, &Registry::child); }

    uint64_t join(int delay_ms, Listener l, bool required, std::string *why) {
        std::lock_guard<std::mutex> lock(mu_);
        Guard &g = guards_[delay_ms];
        const int64_t now = boottime_ns();
        if (!g.up()) {
            // While a helper is being backed off, a new client does not start
            // one of its own (1,000 clients would be 1,000 starts), unless
            // it cannot go on without.
            if (!required && g.retry_ms > 0 && g.retry_at > now) {
                *why = g.why_down;
            } else if (start(delay_ms, g, why)) {
                told_up(delay_ms, g);
            } else {
                backoff(g, *why);
            }
        }
        if (!g.up() && required) {
            if (no_members_of(delay_ms)) guards_.erase(delay_ms);
            return 0;
        }
        uint64_t t = next_ticket_++;
        Member m;
        m.delay_ms = delay_ms;
        m.listener = std::move(l);
        // The client says itself that it runs without the guard (why).
        m.told_down = !g.up();
        members_.emplace(t, std::move(m));
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
        // Down: the watcher's new guard gets it.
        return queue(m.delay_ms, g, session_lines(s, m.wait_pid), &m.mark);
    }

    bool wait_for(uint64_t ticket, int pid) {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = members_.find(ticket);
        if (it == members_.end()) return false;
        Member &m = it->second;
        m.wait_pid = pid;
        Guard &g = guards_[m.delay_ms];
        if (!g.up()) return false;
        if (!m.session) return true;  // goes with the session's ADD
        return queue(m.delay_ms, g, wait_line(m.session->id, pid), &m.mark);
    }

    void remove(uint64_t ticket) {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = members_.find(ticket);
        if (it != members_.end()) withdraw(it->second);
    }

    // The session is in a running helper: its lines are written to the
    // pipe, not waiting in the queue.
    bool guarded(uint64_t ticket) {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = members_.find(ticket);
        if (it == members_.end() || !it->second.session) return false;
        auto g = guards_.find(it->second.delay_ms);
        return g != guards_.end() && g->second.up() && g->second.serial == it->second.mark.serial &&
               g->second.written >= it->second.mark.bytes;
    }

private:
    struct Mark {
        uint64_t serial = 0;  // the helper the member's lines were queued for
        uint64_t bytes = 0;   // its queue's length, in bytes ever queued, after them
    };
    struct Guard {
        std::shared_ptr<GuardPipe> pipe;  // null: down (being started again)
        uint64_t serial = 0;     // which helper the pipe is to (its fd may be reused)
        Secret out;              // lines queued, not yet written
        uint64_t queued = 0, written = 0;  // bytes, since this helper's start
        int64_t progress_at = 0;  // CLOCK_BOOTTIME ns: out turned non-empty, or the pipe took some
        int64_t retry_at = 0;     // while down: the next start
        int64_t retry_ms = 0;     // the backoff; 0: start at once
        int64_t started_at = 0;   // the running helper's start
        std::string why_down;     // why the helper is down, for the clients
        std::string cause;        // what brought a running helper down, for the clients
        uid_t ruid = 0, euid = 0;  // this process's users when it started the helper
        bool up() const { return pipe != nullptr; }
    };
    struct Member {
        int delay_ms = 0;
        Listener listener;
        std::optional<GuardedSession> session;
        int wait_pid = 0;  // WAIT (0: none)
        Mark mark;
        bool told_down = false;  // warned that it is not guarded, and not since that it is
    };

    bool no_members_of(int delay) const {
        return std::none_of(members_.begin(), members_.end(),
                            [delay](const auto &m) { return m.second.delay_ms == delay; });
    }

    // Under mu_: the lines go to the helper's queue (the watcher writes
    // them). False when the helper is down, or lost as its queue is full.
    bool queue(int delay, Guard &g, Secret &&lines, Mark *mark) {
        Secret l = std::move(lines);
        if (g.up() && changed_user(g)) down(delay, g, changed_user_cause(), false);
        if (!g.up()) {
            wipe(l);
            return false;
        }
        if (g.out.empty()) g.progress_at = boottime_ns();
        g.out += l;
        g.queued += l.size();
        wipe(l);
        if (mark) *mark = Mark{g.serial, g.queued};
        if (g.out.size() > kQueueMax) {
            down(delay, g, "its pipe was not read (more than " + std::to_string(kQueueMax >> 20) +
                               " MiB waiting)", false);
            return false;
        }
        wake();
        return true;
    }

    // Under mu_. DEL of the member's session, if any.
    void withdraw(Member &m) {
        if (!m.session) return;
        const int64_t id = m.session->id;
        m.session.reset();
        auto g = guards_.find(m.delay_ms);
        if (g != guards_.end()) queue(m.delay_ms, g->second, del_line(id), nullptr);
    }

    // Under mu_: the helper is gone (died), or declared lost (it stopped
    // reading). Its pipe closes: should it merely be stopped, it exits on
    // EOF once resumed, closing nothing. The watcher starts another: at
    // once after a helper that ran a while, after the backoff after one
    // that died early (a helper refusing what it is sent, or killed by a
    // watchdog, would otherwise be started again and again).
    void down(int delay, Guard &g, const std::string &cause, bool died) {
        g.pipe.reset();
        wipe(g.out);
        const int64_t now = boottime_ns();
        const bool early = died && now - g.started_at < kHealthyMs * kNsPerMs;
        if (!early) {
            g.retry_ms = 0;
            g.retry_at = now;
        } else {
            backoff(g, "it " + cause + " " + std::to_string((now - g.started_at) / kNsPerMs) +
                           " ms after its start");
        }
        g.cause = cause;
        if (g.why_down.empty()) g.why_down = "it " + cause;
        if (!died) {
            // Once, to the process's log as well: a stopped helper is
            // something an operator looks into.
            std::string line = "zkelect:ZOO_WARN@crash_guard: the crash guard of process " +
                               std::to_string(getpid()) + " (" + crash_guard_path() + ", drain " +
                               std::to_string(delay) + " ms) " + cause +
                               ": declared lost, a new one is started";
            zk_log_message(line.c_str());
        }
        wake();
    }

    // The process changed its user since it started the helper (setuid
    // after its clients began): a helper must never stay more privileged
    // than its owner, who could still send it records. It is replaced by
    // one of the new user (the helper checks it too, on each read).
    static bool changed_user(const Guard &g) { return getuid() != g.ruid || geteuid() != g.euid; }
    static std::string changed_user_cause() {
        return "was started as another user than this process now runs as";
    }

    void backoff(Guard &g, const std::string &why) {
        g.retry_ms = g.retry_ms ? std::min(g.retry_ms * 2, kRetryMaxMs) : kRetryFirstMs;
        g.retry_at = boottime_ns() + g.retry_ms * kNsPerMs;
        g.why_down = why;
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

    // Under mu_: one WARNING per member per change of its guarded state (a
    // listener only posts to its client's loop).
    void told_up(int delay, Guard &g) {
        const std::string path = crash_guard_path();
        for (auto &[t, m] : members_) {
            if (m.delay_ms != delay || !m.told_down) continue;
            m.told_down = false;
            if (m.listener)
                m.listener("the crash guard of this process (" + path +
                           ") runs again and guards this client's session");
        }
        g.why_down.clear();
        g.cause.clear();
    }

    void told_down(int delay, Guard &g) {
        for (auto &[t, m] : members_) {
            if (m.delay_ms != delay || m.told_down) continue;
            m.told_down = true;
            if (m.listener)
                m.listener("the crash guard of this process (" + crash_guard_path() +
                           ") is down (" + g.why_down +
                           "); it is started again, with a growing pause while it fails: until "
                           "it runs, a crash of this process hands over only after the "
                           "session timeout");
        }
    }

    // Under mu_: a helper that replaced one that went down while running;
    // its members hear it in one WARNING (down and up again).
    void told_replaced(int delay, Guard &g) {
        const std::string path = crash_guard_path();
        for (auto &[t, m] : members_) {
            if (m.delay_ms != delay || m.told_down || !m.listener) continue;
            m.listener("the crash guard of this process (" + path + ") " + g.cause +
                       "; a new one was started and guards this client's session again "
                       "(meanwhile a crash of this process would have handed over only after "
                       "the session timeout)");
        }
        told_up(delay, g);
    }

    // Under mu_: a helper for a guard that is down, given every session its
    // members hold (queued). False with *why.
    bool start(int delay, Guard &g, std::string *why) {
        g.pipe = spawn_guard(delay, why);
        if (!g.pipe) return false;
        g.serial = ++serials_;
        g.started_at = boottime_ns();
        g.ruid = getuid();
        g.euid = geteuid();
        wipe(g.out);
        g.queued = g.written = 0;
        for (auto &[t, m] : members_)
            if (m.delay_ms == delay && m.session)
                queue(delay, g, session_lines(*m.session, m.wait_pid), &m.mark);
        return g.up();
    }

    // Under mu_, on the watcher: writes what the pipes take now, outside
    // the lock (the writes do not block, but a fork() waits for nothing of
    // the guard's). A helper that has taken nothing for kStallMs is lost.
    void flush(std::unique_lock<std::mutex> &lock) {
        std::vector<std::pair<int, uint64_t>> due;  // delay, serial
        for (auto &[delay, g] : guards_)
            if (g.up() && !g.out.empty()) due.emplace_back(delay, g.serial);
        for (auto [delay, serial] : due) {
            auto it = guards_.find(delay);
            if (it == guards_.end() || it->second.serial != serial || !it->second.up()) continue;
            std::shared_ptr<GuardPipe> pipe = it->second.pipe;
            Secret chunk(it->second.out, 0, std::min(it->second.out.size(), kWriteChunk));
            inflight_fd_ = pipe->fd();
            lock.unlock();
            size_t done = 0;
            ssize_t n = 0;
            while (done < chunk.size() &&
                   (n = pipe->write_some(chunk.data() + done, chunk.size() - done)) > 0)
                done += static_cast<size_t>(n);
            wipe(chunk);
            lock.lock();
            inflight_fd_ = -1;
            it = guards_.find(delay);
            // Closed, replaced or gone meanwhile: nothing of this is owed.
            if (it == guards_.end() || it->second.serial != serial || !it->second.up()) continue;
            Guard &g = it->second;
            if (n < 0) {
                if (g.pipe->ours())
                    down(delay, g, "died", true);
                else
                    down(delay, g, "lost its pipe (this process closed the descriptor)", false);
                continue;
            }
            if (done > 0) {
                char *p = g.out.data();
                const size_t left = g.out.size() - done;
                std::memmove(p, p + done, left);
                explicit_bzero(p + left, done);
                g.out.resize(left);
                g.written += done;
                g.progress_at = boottime_ns();
            }
        }
    }

    // Under mu_: the watcher's pass over the guards after a poll.
    void tend() {
        const int64_t now = boottime_ns();
        for (auto &[delay, g] : guards_) {
            if (g.up() && changed_user(g)) down(delay, g, changed_user_cause(), false);
            if (g.up() && !g.out.empty() && now - g.progress_at >= kStallMs * kNsPerMs)
                down(delay, g,
                     "took nothing from its pipe for " + std::to_string(kStallMs) +
                         " ms (stopped, traced or starved)",
                     false);
            if (!g.up() && g.retry_at <= now) {
                const bool replacing = g.retry_ms == 0 && !g.cause.empty();
                std::string why;
                if (start(delay, g, &why)) {
                    if (replacing) told_replaced(delay, g);
                    else told_up(delay, g);
                    continue;
                }
                backoff(g, why);
            }
            if (!g.up()) told_down(delay, g);
        }
    }

    void watch(uint64_t gen) {
        std::unique_lock<std::mutex> lock(mu_);
        for (;;) {
            if (gen != watcher_gen_) return;
            flush(lock);
            if (gen != watcher_gen_) return;
            tend();
            std::vector<pollfd> fds{{wake_fd_, POLLIN, 0}};
            std::vector<std::pair<int, uint64_t>> polled;  // delay, serial
            int64_t next = INT64_MAX;
            for (auto &[delay, g] : guards_) {
                if (g.up()) {
                    // A pipe's write end reports POLLERR once no reader is
                    // left, i.e. the helper is gone.
                    const short ev = g.out.empty() ? 0 : POLLOUT;
                    fds.push_back({g.pipe->fd(), ev, 0});
                    polled.emplace_back(delay, g.serial);
                    if (ev) next = std::min(next, g.progress_at + kStallMs * kNsPerMs);
                } else {
                    next = std::min(next, g.retry_at);
                }
            }
            int timeout = -1;
            if (next != INT64_MAX)
                timeout = static_cast<int>(std::clamp<int64_t>(
                    (next - boottime_ns()) / kNsPerMs + 1, 0, kRetryMaxMs));
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
                if (g == guards_.end() || !g->second.up() || g->second.serial != polled[i - 1].second)
                    continue;
                if (!g->second.pipe->ours()) {
                    // Closed by the host (POLLNVAL), or another file at its
                    // number: not ours to write to or close.
                    down(g->first, g->second, "lost its pipe (this process closed the descriptor)",
                         false);
                    continue;
                }
                down(g->first, g->second, "died", true);
            }
        }
    }

    static void prepare() { self().mu_.lock(); }
    static void parent() { self().mu_.unlock(); }
    // The child has none of the parent's threads, and the parent's guards
    // watch the parent: the child keeps none of it. Its copies of the
    // pipes close (the parent's helpers keep theirs; so does a write the
    // watcher had under way); the watcher's thread object is left behind
    // unjoined, as its thread is not in this process.
    static void child() {
        Registry &r = self();
        r.guards_.clear();
        r.members_.clear();
        if (r.inflight_fd_ >= 0) ::close(r.inflight_fd_);
        r.inflight_fd_ = -1;
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
    int inflight_fd_ = -1;  // the pipe the watcher writes to outside mu_
};

Registry &Registry::self() {
    // Never destroyed: a client may outlive static destruction at exit,
    // and the atfork handlers stay registered for the process's life.
    static Registry *r = new Registry;
    return *r;
}

}  // namespace

uint64_t join(int delay_ms, Listener on_warning, bool required, std::string *why) {
    return Registry::self().join(delay_ms, std::move(on_warning), required, why);
}
void leave(uint64_t ticket) { Registry::self().leave(ticket); }
bool add(uint64_t ticket, const GuardedSession &s) { return Registry::self().add(ticket, s); }
void remove(uint64_t ticket) { Registry::self().remove(ticket); }
bool wait_for(uint64_t ticket, int pid) { return Registry::self().wait_for(ticket, pid); }
bool guarded(uint64_t ticket) { return Registry::self().guarded(ticket); }

}  // namespace crash_guard
}  // namespace zkelect
