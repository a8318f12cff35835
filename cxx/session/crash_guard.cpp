#include "crash_guard.h"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <fcntl.h>
#include <sys/syscall.h>
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
#include "guard_link.h"
#include "log_sink.h"

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
// (SRV: the guard resolves no name), TLS and SASL (its WAIT: queue_wait).
Secret session_lines(const GuardedSession &s) {
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

// WAIT for process pid (0: none), or, over a connection to the service,
// for the pidfd that goes with the line ("fd": a pid of this process's PID
// namespace need not be one of the service's).
Secret wait_line(int64_t id, int pid, bool passed) {
    Secret line = "WAIT ";
    hex_of(line, id);
    line += ' ';
    line += passed ? std::string("fd") : std::to_string(pid);
    line += '\n';
    return line;
}

Secret del_line(int64_t id) {
    Secret line = "DEL ";
    hex_of(line, id);
    line += '\n';
    return line;
}

// Where a client's session goes: a guard per drain delay and service
// socket in use (normally one; "" is the private helper).
using Place = std::pair<int, std::string>;

class Registry {
public:
    static Registry &self();
    Registry() { pthread_atfork(&Registry::prepare, &Registry::parent, &Registry::child); }

    uint64_t join(const Place &place, Listener l, bool required, std::string *why,
                  std::string *fallback) {
        std::lock_guard<std::mutex> lock(mu_);
        Guard &g = guards_[place];
        const int64_t now = boottime_ns();
        if (!g.up()) {
            // While a helper is being backed off, a new client does not start
            // one of its own (1,000 clients would be 1,000 starts), unless
            // it cannot go on without.
            if (!required && g.retry_ms > 0 && g.retry_at > now) {
                *why = g.why_down;
            } else if (start(place, g, why)) {
                told_up(place, g);
            } else {
                backoff(g, *why);
            }
        }
        if (!g.up() && required) {
            if (no_members_of(place)) guards_.erase(place);
            return 0;
        }
        if (g.up() && !g.fallback.empty()) *fallback = fallback_warning(place, g);
        uint64_t t = next_ticket_++;
        Member m;
        m.place = place;
        m.listener = std::move(l);
        // The client says itself that it runs without the guard (why).
        m.told_down = !g.up();
        members_.emplace(t, std::move(m));
        start_watcher();
        return t;
    }

    void leave(uint64_t ticket) {
        std::thread stopped;
        int stop_fd = -1;
        {
            std::lock_guard<std::mutex> lock(mu_);
            auto it = members_.find(ticket);
            if (it == members_.end()) return;
            const Place place = it->second.place;
            withdraw(it->second);
            members_.erase(it);
            if (no_members_of(place)) guards_.erase(place);  // closes its link
            if (members_.empty() && watcher_) {
                ++watcher_gen_;
                stopped = std::move(*watcher_);
                watcher_.reset();
                // Its wait for a service's answer (up to kStartBoundMs)
                // ends: no destroy waits for a service it no longer needs.
                std::swap(stop_fd, stop_fd_);
                poke(stop_fd);
                wake();
            }
        }
        if (stopped.joinable()) stopped.join();
        if (stop_fd >= 0) ::close(stop_fd);
    }

    bool add(uint64_t ticket, const GuardedSession &s) {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = members_.find(ticket);
        if (it == members_.end()) return false;
        Member &m = it->second;
        if (m.session && m.session->id != s.id) withdraw(m);
        m.session = s;
        Guard &g = guards_[m.place];
        // Down: the watcher's new guard gets it.
        return queue(m.place, g, session_lines(s), &m.mark) &&
               (!m.wait_pid || queue_wait(m.place, g, s.id, m.wait_pid, &m.mark));
    }

    bool wait_for(uint64_t ticket, int pid) {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = members_.find(ticket);
        if (it == members_.end()) return false;
        Member &m = it->second;
        m.wait_pid = pid;
        Guard &g = guards_[m.place];
        if (!g.up()) return false;
        if (!m.session) return true;  // goes with the session's ADD
        return queue_wait(m.place, g, m.session->id, pid, &m.mark);
    }

    void remove(uint64_t ticket) {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = members_.find(ticket);
        if (it != members_.end()) withdraw(it->second);
    }

    // The session is in a running guard: its lines are written to the
    // link, not waiting in the queue.
    bool guarded(uint64_t ticket) {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = members_.find(ticket);
        if (it == members_.end() || !it->second.session) return false;
        auto g = guards_.find(it->second.place);
        return g != guards_.end() && g->second.up() && g->second.serial == it->second.mark.serial &&
               g->second.written >= it->second.mark.bytes;
    }

private:
    struct Mark {
        uint64_t serial = 0;  // the guard the member's lines were queued for
        uint64_t bytes = 0;   // its queue's length, in bytes ever queued, after them
    };
    // A WAIT's pidfd, to go over the service's connection with the byte at
    // offset `at` of the guard's stream (the WAIT line's first).
    struct Passed {
        uint64_t at;
        int fd;
    };
    struct Guard {
        std::shared_ptr<GuardLink> link;  // null: down (being started again)
        uint64_t serial = 0;     // which guard the link is to (its fd may be reused)
        Secret out;              // lines queued, not yet written
        std::vector<Passed> passed;  // pidfds queued with their lines, oldest first
        uint64_t queued = 0, written = 0;  // bytes, since this guard's start
        int64_t progress_at = 0;  // CLOCK_BOOTTIME ns: out turned non-empty, or the link took some
        int64_t retry_at = 0;     // while down: the next start
        int64_t retry_ms = 0;     // the backoff; 0: start at once
        int64_t started_at = 0;   // the running guard's start
        std::string why_down;     // why the guard is down, for the clients
        std::string cause;        // what brought a running guard down, for the clients
        std::string lost;         // who that was
        std::string fallback;     // why the service is not used (a private helper guards)
        bool told_fallback = false;  // the last start said so to the members
        bool skip_service = false;   // the next start goes to a private guard at once
        // While a private helper stands in for the service: when the
        // service is asked again, and the pause after that (doubling while
        // it cannot be had or drops the connection early; reset by a
        // connection that lasted kHealthyMs).
        int64_t service_at = 0;
        int64_t service_ms = 0;
        // The helper the service replaced, kept until the service's
        // connection has taken every session (its bytes up to
        // retire_after): a crash in between is still guarded.
        std::shared_ptr<GuardLink> retiring;
        uint64_t retire_after = 0;
        uid_t ruid = 0, euid = 0;  // this process's users when it started the guard
        Guard() = default;
        Guard(const Guard &) = delete;
        Guard &operator=(const Guard &) = delete;
        ~Guard() { drop_passed(); }
        bool up() const { return link != nullptr; }
        // A private helper guards in the service's place.
        bool standing_in(const Place &place) const {
            return up() && !link->socket() && !place.second.empty();
        }
        void drop_passed() {
            for (const Passed &p : passed) ::close(p.fd);
            passed.clear();
        }
    };
    struct Member {
        Place place;
        Listener listener;
        std::optional<GuardedSession> session;
        int wait_pid = 0;  // WAIT (0: none)
        Mark mark;
        bool told_down = false;  // warned that it is not guarded, and not since that it is
    };

    bool no_members_of(const Place &place) const {
        return std::none_of(members_.begin(), members_.end(),
                            [&place](const auto &m) { return m.second.place == place; });
    }

    // Under mu_: the lines go to the guard's queue (the watcher writes
    // them). False when the guard is down, or lost as its queue is full.
    bool queue(const Place &place, Guard &g, Secret &&lines, Mark *mark, int pass_fd = -1) {
        Secret l = std::move(lines);
        if (g.up() && changed_user(g)) down(place, g, changed_user_cause(), false);
        if (!g.up()) {
            wipe(l);
            if (pass_fd >= 0) ::close(pass_fd);
            return false;
        }
        if (g.out.empty()) g.progress_at = boottime_ns();
        if (pass_fd >= 0) g.passed.push_back(Passed{g.queued, pass_fd});
        g.out += l;
        g.queued += l.size();
        wipe(l);
        if (mark) *mark = Mark{g.serial, g.queued};
        if (g.out.size() > kQueueMax) {
            down(place, g, "its pipe was not read (more than " + std::to_string(kQueueMax >> 20) +
                               " MiB waiting)", false);
            return false;
        }
        wake();
        return true;
    }

    // Under mu_: the session's WAIT. Over the service's connection the
    // process goes as a pidfd taken here: a process gone already holds
    // nothing back, as with a pid.
    bool queue_wait(const Place &place, Guard &g, int64_t id, int pid, Mark *mark) {
        if (!g.up() || !g.link->socket() || pid == 0) return queue(place, g, wait_line(id, pid, false), mark);
        const int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
        if (fd < 0) return queue(place, g, wait_line(id, 0, false), mark);
        return queue(place, g, wait_line(id, pid, true), mark, fd);
    }

    // Under mu_. DEL of the member's session, if any.
    void withdraw(Member &m) {
        if (!m.session) return;
        const int64_t id = m.session->id;
        m.session.reset();
        auto g = guards_.find(m.place);
        if (g != guards_.end()) queue(m.place, g->second, del_line(id), nullptr);
    }

    // Under mu_: the guard is gone (died), or declared lost (it stopped
    // reading). Its link closes: should it merely be stopped, it exits on
    // EOF once resumed, closing nothing. The watcher starts another: at
    // once after a guard that ran a while, after the backoff after one
    // that died early (a helper refusing what it is sent, or killed by a
    // watchdog, would otherwise be started again and again).
    void down(const Place &place, Guard &g, const std::string &cause, bool died) {
        const std::string name = g.link->name();
        const bool service = g.link->socket();
        g.link.reset();
        wipe(g.out);
        g.drop_passed();
        const int64_t now = boottime_ns();
        const bool early = died && now - g.started_at < kHealthyMs * kNsPerMs;
        // A service whose connection ended early (stopped, its worker
        // killed, or refusing what it is sent): a private guard at once,
        // without asking the service again (no storm of connections).
        g.skip_service = early && service;
        if (service && !early) g.service_ms = 0;
        g.retiring.reset();
        if (!early || g.skip_service) {
            g.retry_ms = 0;
            g.retry_at = now;
        } else {
            backoff(g, "it " + cause + " " + std::to_string((now - g.started_at) / kNsPerMs) +
                           " ms after its start");
        }
        g.cause = cause;
        g.lost = name;
        if (g.why_down.empty()) g.why_down = "it " + cause;
        if (!died) {
            // Once, to the process's log as well: a stopped helper is
            // something an operator looks into.
            std::string line = "zkelect:ZOO_WARN@crash_guard: " + name + " (process " +
                               std::to_string(getpid()) + ", drain " + std::to_string(place.first) +
                               " ms) " + cause + ": declared lost, a new one is started";
            zk_log_message(line.c_str());
        }
        wake();
    }

    // The process changed its user since it started the guard (setuid
    // after its clients began): a guard must never stay more privileged
    // than its owner, who could still send it records. It is replaced by
    // one of the new user (the helper checks it too, on each read; the
    // service takes the new user from the new connection).
    static bool changed_user(const Guard &g) { return getuid() != g.ruid || geteuid() != g.euid; }
    static std::string changed_user_cause() {
        return "was started as another user than this process now runs as";
    }

    void backoff(Guard &g, const std::string &why) {
        g.retry_ms = g.retry_ms ? std::min(g.retry_ms * 2, kRetryMaxMs) : kRetryFirstMs;
        g.retry_at = boottime_ns() + g.retry_ms * kNsPerMs;
        g.why_down = why;
    }

    static void poke(int fd) {
        uint64_t one = 1;
        if (fd >= 0 && ::write(fd, &one, sizeof one) < 0) return;  // full: readable already
    }
    void wake() { poke(wake_fd_); }

    void start_watcher() {
        if (watcher_) return;
        if (wake_fd_ < 0) wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        // Each watcher's own, readable once it is to stop (-1: none could
        // be made, and the wait is bounded by kStartBoundMs alone).
        stop_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        const uint64_t gen = watcher_gen_;
        watcher_.emplace([this, gen] { watch(gen); });
    }

    // Who guards the place's sessions when it is up, for the WARNINGs.
    static std::string who(const Place &place, const Guard &g) {
        if (g.up()) return g.link->name();
        return place.second.empty() ? "the crash guard of this process (" + crash_guard_path() + ")"
                                    : "the crash guard of this process (crash.guard.socket " +
                                          place.second + ")";
    }

    static std::string fallback_warning(const Place &place, const Guard &g) {
        return "crash.guard.socket " + place.second + ": " + g.fallback + "; " + who(place, g) +
               " guards this client's session instead, which dies with this process's PID "
               "namespace or control group";
    }

    // Under mu_: one WARNING per member per change of its guarded state (a
    // listener only posts to its client's loop).
    void told_up(const Place &place, Guard &g) {
        for (auto &[t, m] : members_) {
            if (m.place != place || !m.told_down) continue;
            m.told_down = false;
            if (m.listener) m.listener(who(place, g) + " runs again and guards this client's session");
        }
        g.why_down.clear();
        g.cause.clear();
    }

    void told_down(const Place &place, Guard &g) {
        for (auto &[t, m] : members_) {
            if (m.place != place || m.told_down) continue;
            m.told_down = true;
            if (m.listener)
                m.listener(who(place, g) + " is down (" + g.why_down +
                           "); it is started again, with a growing pause while it fails: until "
                           "it runs, a crash of this process hands over only after the "
                           "session timeout");
        }
    }

    // Under mu_: a guard that replaced one that went down while running;
    // its members hear it in one WARNING (down and up again).
    void told_replaced(const Place &place, Guard &g) {
        for (auto &[t, m] : members_) {
            if (m.place != place || m.told_down || !m.listener) continue;
            m.listener(g.lost + " " + g.cause + "; " + who(place, g) +
                       " was started and guards this client's session again "
                       "(meanwhile a crash of this process would have handed over only after "
                       "the session timeout)");
        }
        told_up(place, g);
    }

    // Under mu_: a guard for a place that is down: the service's, or, when
    // the service cannot be had, a private helper (said once per cause).
    // Given every session its members hold (queued). False with *why.
    bool start(const Place &place, Guard &g, std::string *why) {
        std::string fallback;
        if (g.skip_service)
            fallback = "the guard service closed this process's connection " +
                       std::to_string((boottime_ns() - g.started_at) / kNsPerMs) + " ms after taking it";
        else if (!place.second.empty())
            g.link = connect_guard(place.second, place.first, &fallback);
        g.skip_service = false;
        if (!g.link) g.link = spawn_guard(place.first, why);
        if (!g.link) {
            if (!fallback.empty()) *why = "crash.guard.socket " + place.second + ": " + fallback + "; and " + *why;
            return false;
        }
        const bool news = fallback != g.fallback;
        g.fallback = fallback;
        g.told_fallback = news && !fallback.empty();
        if (g.told_fallback)
            for (auto &[t, m] : members_)
                if (m.place == place && m.listener) m.listener(fallback_warning(place, g));
        if (g.standing_in(place)) next_service_try(g);
        return give_sessions(place, g);
    }

    // Under mu_: a new link (started, or the service reached again) gets
    // every session its members hold, queued.
    bool give_sessions(const Place &place, Guard &g) {
        g.serial = ++serials_;
        g.started_at = boottime_ns();
        g.ruid = getuid();
        g.euid = geteuid();
        wipe(g.out);
        g.drop_passed();
        g.queued = g.written = 0;
        for (auto &[t, m] : members_)
            if (m.place == place && m.session) {
                queue(place, g, session_lines(*m.session), &m.mark);
                if (m.wait_pid) queue_wait(place, g, m.session->id, m.wait_pid, &m.mark);
            }
        return g.up();
    }

    static void next_service_try(Guard &g) {
        g.service_ms = g.service_ms ? std::min(g.service_ms * 2, kRetryMaxMs) : kRetryFirstMs;
        g.service_at = boottime_ns() + g.service_ms * kNsPerMs;
    }

    // Under mu_, on the watcher: a private helper that stands in for the
    // service (it could not be had, or dropped this process early) hands
    // its sessions back once the service answers again: otherwise the
    // process would stay with a guard that dies with its PID namespace or
    // control group for as long as that helper lives. The service is
    // asked outside the lock (its answer may take up to kStartBoundMs: no
    // add() or fork() waits for it), and at a growing pause while it
    // cannot be had, so a missing service costs a failed connect a minute.
    void ask_service_again(std::unique_lock<std::mutex> &lock) {
        std::vector<std::pair<Place, uint64_t>> due;  // place, serial
        const int64_t now = boottime_ns();
        for (auto &[place, g] : guards_)
            if (g.standing_in(place) && g.service_at <= now) due.emplace_back(place, g.serial);
        const int stop_fd = stop_fd_;  // closed only once this watcher is joined
        for (auto &[place, serial] : due) {
            lock.unlock();
            std::string fallback;
            std::shared_ptr<GuardLink> link = connect_guard(place.second, place.first, &fallback, stop_fd);
            lock.lock();
            auto it = guards_.find(place);
            if (it == guards_.end() || it->second.serial != serial || !it->second.standing_in(place))
                continue;  // closed or replaced meanwhile: `link` closes unused
            Guard &g = it->second;
            if (!link) {
                next_service_try(g);
                continue;
            }
            const std::string was = g.link->name();
            g.retiring = std::move(g.link);
            g.link = std::move(link);
            g.fallback.clear();
            g.told_fallback = false;
            g.skip_service = false;
            give_sessions(place, g);
            g.retire_after = g.queued;
            if (g.retire_after == 0) g.retiring.reset();
            for (auto &[t, m] : members_)
                if (m.place == place && m.listener)
                    m.listener(g.link->name() + " answers again and guards this client's session; " +
                               was + ", which stood in for it, lets go");
            wake();
        }
    }

    // Under mu_, on the watcher: how much of the guard's queue goes in the
    // next write, and the pidfd that goes with it (a copy, -1: none). A
    // write that carries a pidfd begins at its line; none runs past the
    // next one's.
    static size_t next_write(const Guard &g, int *pass_fd) {
        size_t n = std::min(g.out.size(), kWriteChunk);
        *pass_fd = -1;
        for (const Passed &p : g.passed) {
            const uint64_t rel = p.at - g.written;
            if (rel == 0 && *pass_fd < 0) {
                *pass_fd = fcntl(p.fd, F_DUPFD_CLOEXEC, 0);
                continue;
            }
            if (rel > 0) {
                n = std::min<uint64_t>(n, rel);
                break;
            }
        }
        return n;
    }

    // Under mu_, on the watcher: writes what the links take now, outside
    // the lock (the writes do not block, but a fork() waits for nothing of
    // the guard's). A guard that has taken nothing for kStallMs is lost.
    void flush(std::unique_lock<std::mutex> &lock) {
        std::vector<std::pair<Place, uint64_t>> due;  // place, serial
        for (auto &[place, g] : guards_)
            if (g.up() && !g.out.empty()) due.emplace_back(place, g.serial);
        for (auto &[place, serial] : due) {
            auto it = guards_.find(place);
            if (it == guards_.end() || it->second.serial != serial || !it->second.up()) continue;
            std::shared_ptr<GuardLink> link = it->second.link;
            int pass_fd = -1;
            Secret chunk(it->second.out, 0, next_write(it->second, &pass_fd));
            inflight_fd_ = link->fd();
            lock.unlock();
            size_t done = 0;
            ssize_t n = 0;
            while (done < chunk.size() &&
                   (n = link->write_some(chunk.data() + done, chunk.size() - done,
                                         done == 0 ? pass_fd : -1)) > 0)
                done += static_cast<size_t>(n);
            wipe(chunk);
            if (pass_fd >= 0) ::close(pass_fd);
            lock.lock();
            inflight_fd_ = -1;
            it = guards_.find(place);
            // Closed, replaced or gone meanwhile: nothing of this is owed.
            if (it == guards_.end() || it->second.serial != serial || !it->second.up()) continue;
            Guard &g = it->second;
            if (n < 0) {
                if (g.link->ours())
                    down(place, g, "died", true);
                else
                    down(place, g, "lost its pipe (this process closed the descriptor)", false);
                continue;
            }
            if (done > 0) {
                char *p = g.out.data();
                const size_t left = g.out.size() - done;
                std::memmove(p, p + done, left);
                explicit_bzero(p + left, done);
                g.out.resize(left);
                if (pass_fd >= 0 && !g.passed.empty() && g.passed.front().at == g.written) {
                    ::close(g.passed.front().fd);
                    g.passed.erase(g.passed.begin());
                }
                g.written += done;
                g.progress_at = boottime_ns();
                if (g.retiring && g.written >= g.retire_after) g.retiring.reset();
            }
        }
    }

    // Under mu_: the watcher's pass over the guards after a poll.
    void tend() {
        const int64_t now = boottime_ns();
        for (auto &[place, g] : guards_) {
            if (g.up() && changed_user(g)) down(place, g, changed_user_cause(), false);
            if (g.up() && !g.out.empty() && now - g.progress_at >= kStallMs * kNsPerMs)
                down(place, g,
                     "took nothing from its pipe for " + std::to_string(kStallMs) +
                         " ms (stopped, traced or starved)",
                     false);
            if (!g.up() && g.retry_at <= now) {
                const bool replacing = g.retry_ms == 0 && !g.cause.empty();
                std::string why;
                if (start(place, g, &why)) {
                    // A private guard in the service's place was said
                    // once, with why: not again as a replacement.
                    if (replacing && !g.told_fallback) told_replaced(place, g);
                    else told_up(place, g);
                    continue;
                }
                backoff(g, why);
            }
            if (!g.up()) told_down(place, g);
        }
    }

    void watch(uint64_t gen) {
        std::unique_lock<std::mutex> lock(mu_);
        for (;;) {
            if (gen != watcher_gen_) return;
            flush(lock);
            if (gen != watcher_gen_) return;
            tend();
            ask_service_again(lock);
            if (gen != watcher_gen_) return;
            std::vector<pollfd> fds{{wake_fd_, POLLIN, 0}};
            std::vector<std::pair<Place, uint64_t>> polled;  // place, serial
            int64_t next = INT64_MAX;
            for (auto &[place, g] : guards_) {
                if (g.up()) {
                    // A pipe's write end reports POLLERR once no reader is
                    // left, i.e. the helper is gone; a connection POLLHUP
                    // once the service's worker closed it.
                    const short ev = g.out.empty() ? 0 : POLLOUT;
                    fds.push_back({g.link->fd(), ev, 0});
                    polled.emplace_back(place, g.serial);
                    if (ev) next = std::min(next, g.progress_at + kStallMs * kNsPerMs);
                    if (g.standing_in(place)) next = std::min(next, g.service_at);
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
                // The link may have been closed or replaced while we polled.
                if (g == guards_.end() || !g->second.up() || g->second.serial != polled[i - 1].second)
                    continue;
                if (!g->second.link->ours()) {
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
    // links close (the parent's guards keep theirs; so does a write the
    // watcher had under way; a connection to the service stays open while
    // the parent holds it); the watcher's thread object is left behind
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
        if (r.stop_fd_ >= 0) ::close(r.stop_fd_);
        r.stop_fd_ = -1;
        r.mu_.unlock();
    }

    std::mutex mu_;
    std::map<Place, Guard> guards_;  // one guard per place in use
    std::map<uint64_t, Member> members_;
    uint64_t next_ticket_ = 1;
    uint64_t serials_ = 0;
    std::optional<std::thread> watcher_;
    uint64_t watcher_gen_ = 0;
    int wake_fd_ = -1;
    int stop_fd_ = -1;  // the watcher's: readable once it is to stop (leave())
    int inflight_fd_ = -1;  // the link the watcher writes to outside mu_
};

Registry &Registry::self() {
    // Never destroyed: a client may outlive static destruction at exit,
    // and the atfork handlers stay registered for the process's life.
    static Registry *r = new Registry;
    return *r;
}

}  // namespace

uint64_t join(int delay_ms, const std::string &socket, Listener on_warning, bool required,
              std::string *why, std::string *fallback) {
    return Registry::self().join(Place{delay_ms, socket}, std::move(on_warning), required, why,
                                 fallback);
}
void leave(uint64_t ticket) { Registry::self().leave(ticket); }
bool add(uint64_t ticket, const GuardedSession &s) { return Registry::self().add(ticket, s); }
void remove(uint64_t ticket) { Registry::self().remove(ticket); }
bool wait_for(uint64_t ticket, int pid) { return Registry::self().wait_for(ticket, pid); }
bool guarded(uint64_t ticket) { return Registry::self().guarded(ticket); }

}  // namespace crash_guard
}  // namespace zkelect
