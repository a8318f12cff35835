#include "client.h"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <stdexcept>
#include <system_error>

#include "clock.h"
#include "crash_guard.h"
#include "ensemble_config.h"
#include "names.h"
#include "sasl_probe.h"

namespace zkelect {

// Pause before a new session after a server granted none (see
// on_session_event): long against a handshake, short against a session.
// It doubles while servers keep granting none, up to the cap: each refused
// handle still costs the dozens of connections libzookeeper makes before
// the loop hears of the first handshake.
constexpr int64_t kBrokenServerRetryMs = 1000;
constexpr int64_t kBrokenServerRetryMaxMs = 2000;

namespace {

std::shared_ptr<ZkPort> libzookeeper_port(const Settings &settings, WatchFn on_watch,
                                          std::atomic<uint64_t> *request_counter, bool connect) {
    return std::make_shared<ZkSession>(settings, std::move(on_watch), request_counter, connect);
}

}  // namespace

Client::Client(const Settings &settings, PortFactory make_port)
    : settings_(settings),
      make_port_(make_port ? std::move(make_port) : libzookeeper_port),
      chroot_bytes_([&] {
          std::string c = chroot_of(settings.hosts);
          return c == "/" ? int64_t(0) : int64_t(c.size());
      }()),
      hosts_in_use_(settings.hosts) {
    wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    timer_fd_ = timerfd_create(CLOCK_BOOTTIME, TFD_NONBLOCK | TFD_CLOEXEC);
    if (wake_fd_ < 0 || timer_fd_ < 0) {
        int e = errno;
        if (wake_fd_ >= 0) ::close(wake_fd_);
        if (timer_fd_ >= 0) ::close(timer_fd_);
        throw std::system_error(e, std::generic_category(), "eventfd/timerfd");
    }
    try {
        join_crash_guard();
        open_session();
        // No thread but ours yet: the loop's timers are ours to set.
        at(boottime_ns() + lease::probe_period(int64_t(settings_.session_timeout_ms) * kNsPerMs),
           [this] { probe(); });
#ifndef ZKELECT_SIM
        loop_ = std::thread([this] { run(); });
#endif
    } catch (...) {
        session_.reset();
        if (guard_ticket_) crash_guard::leave(guard_ticket_);
        ::close(wake_fd_);
        ::close(timer_fd_);
        throw;
    }
#ifdef ZKELECT_SIM
    loop_id_ = std::this_thread::get_id();  // the simulator's scheduler turns the loop
#else
    loop_id_ = loop_.get_id();
#endif
}

Client::~Client() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stopping_ = true;
    }
    uint64_t one = 1;
    ssize_t n = ::write(wake_fd_, &one, sizeof one);
    (void)n;
    if (loop_.joinable()) loop_.join();
    // The probe's thread posts to the mailbox: gone before anything it reaches.
    tick_probe_.stop();
    if (sasl_probe_.joinable()) sasl_probe_.join();  // at most 1 s
    // Close the session before the members and the mailbox go: its threads
    // may still be delivering into them until zookeeper_close returns.
    {
        std::shared_ptr<ZkPort> s;
        {
            std::lock_guard<std::mutex> lock(session_mu_);
            s = std::move(session_);
        }
        s.reset();
    }
    // Withdrawn only now: a crash while the session closed was still covered.
    if (guard_ticket_) crash_guard::leave(guard_ticket_);
    closer_.join_all();
    members_.clear();
    mailbox_.clear();
    timers_.clear();
    ::close(wake_fd_);
    ::close(timer_fd_);
}

// The guard's lines carry the connect string and, over TLS, the zk.tls.*
// files' names (the guard takes lines of at most 4096 bytes).
constexpr size_t kGuardHostsMax = 3900;
constexpr size_t kGuardLineMax = 4096;

// How the guard authenticates, as this client does (zk.sasl.*): a server
// that requires SASL refuses an unauthenticated connection's closeSession
// (-124). With GSSAPI, the Kerberos environment this process finds its
// credentials through: the guard's own environment is empty.
GuardedSasl Client::guard_sasl() const {
    GuardedSasl a;
    const Settings::Sasl &s = settings_.sasl;
    if (s.mechanism.empty()) return a;
    a.mechanism = s.mechanism;
    a.service = s.service;
    a.host = s.host;
    a.user = s.user;
    a.password = s.password;
    auto env = [](const char *name) {
        const char *v = secure_getenv(name);
        return std::string(v ? v : "");
    };
    a.ccache = env("KRB5CCNAME");
    a.client_keytab = env("KRB5_CLIENT_KTNAME");
    a.krb5_config = env("KRB5_CONFIG");
    return a;
}

void Client::join_crash_guard() {
    if (settings_.guard == GuardMode::kOff) return;
    std::string why;
    if (crash_guard::sasl_line_size(guard_sasl()) > kGuardLineMax) {
        why = "the zk.sasl.* values (and the Kerberos environment) are longer than the crash "
              "guard takes (" + std::to_string(kGuardLineMax) + " bytes, hex-encoded)";
    } else if (settings_.hosts.size() + settings_.tls.size() > kGuardHostsMax) {
        why = std::string(settings_.tls.empty() ? "zk.hosts is"
                                                : "zk.hosts and the zk.tls.* files' names are") +
              " longer than the crash guard takes (" + std::to_string(kGuardHostsMax) + " bytes)";
    } else {
        std::string fallback;
        guard_ticket_ = crash_guard::join(
            settings_.guard_delay_ms, settings_.guard_socket,
            [this](const std::string &what) { post([this, what] { warn_about_guard(what); }); },
            settings_.guard == GuardMode::kOn, &why, &fallback);
        // A private guard in place of the service: guarded, and told why
        // not by the service.
        if (guard_ticket_ && why.empty() && !fallback.empty()) {
            bump(kCrashGuardWarnings);
            guard_warning_ = fallback;
        }
        // With a place but no guard running (auto): the session goes to the
        // guard once one runs again.
        if (guard_ticket_ && why.empty()) return;
    }
    if (settings_.guard == GuardMode::kOn) throw std::runtime_error("crash.guard is \"on\": " + why);
    bump(kCrashGuardWarnings);
    guard_warning_ = "crash.guard: " + why +
                     "; this client runs without the guard: if this process dies, the next "
                     "leader takes over only after the session timeout";
}

void Client::warn_about_guard(const std::string &what) {
    bump(kCrashGuardWarnings);
    const std::string about = "crash guard " + std::to_string(++guard_warnings_);
    std::vector<std::shared_ptr<Member>> told;
    for (auto &[id, m] : members_) told.push_back(m);
    for (auto &m : told) m->on_warning(about, what);
}

// A session once granted goes to the guard (replacing the client's last).
void Client::guard_session() {
    if (!guard_ticket_) return;
    GuardedSession g;
    if (!session_->credentials(&g.id, &g.passwd)) return;
    g.timeout_ms = session_->negotiated_timeout_ms();
    // The servers in use: after a reconfiguration zk.hosts may name none.
    g.hosts = hosts();
    // The server connected to, as an address: the guard resolves no name
    // (its drain leaves this process's connections to it out).
    g.servers = last_peer_.text();
    // Over TLS the guard connects as this client does (its CA, certificate
    // and key), so that a TLS-only ensemble takes its close.
    g.tls = settings_.tls;
    g.sasl = guard_sasl();
    if (g.hosts.size() + g.tls.size() <= kGuardHostsMax &&
        crash_guard::sasl_line_size(g.sasl) <= kGuardLineMax)
        crash_guard::add(guard_ticket_, g);
}

bool Client::guarded() const { return guard_ticket_ && crash_guard::guarded(guard_ticket_); }

int Client::crash_guard_wait(int pid) {
    if (pid < 0) return kEInval;
    // The process must exist now: the guard takes a pidfd on it, and a
    // number already free would name whatever comes to reuse it.
    if (pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH) return kEInval;
    if (!guard_ticket_) return kOk;  // no guard: the session outlives us by T anyway
    crash_guard::wait_for(guard_ticket_, pid);
    return kOk;
}

std::shared_ptr<ZkPort> Client::open_session(bool connect) {
    uint64_t gen = session_gen_.fetch_add(1) + 1;
    ever_connected_ = false;
    // Listings of the old session answer nobody now: its members started over.
    lists_.clear();
    touch_floor_ = boottime_ns();  // the new session is created after this
    connected_at_ = INT64_MAX;
    known_paths_.clear();
    leftovers_.clear();
    // A session opened after the ensemble changed goes to its servers now:
    // the ones zk.hosts named may all be gone.
    Settings settings = settings_;
    if (!learned_hosts_.empty()) settings.hosts = with_chroot(learned_hosts_, settings_.hosts);
    auto s = make_port_(
        settings,
        [this, gen](int type, int state, const std::string &path, int64_t stamp, int64_t floor,
                    int timeout_ms, const PeerAddr &peer) {
            // ZooKeeper's completion thread. A handshake bounds every lease
            // before the loop hears of it (handshake_cap.h); the loop lifts
            // the bound once it has applied the handshake, whatever it did
            // with the event.
            uint64_t capped = 0;
            if (type == ZOO_SESSION_EVENT && state == ZOO_CONNECTED_STATE && timeout_ms > 0) {
                int64_t t = int64_t(timeout_ms) * kNsPerMs;
                int64_t margin = lease::margin_ns(t, settings_.lease_margin_ms);
                capped = handshake_cap_.lower(floor + t - margin);
            }
            post([this, gen, type, state, path, stamp, capped, peer] {
                on_watch_event(gen, type, state, path, stamp, peer);
                if (capped) handshake_cap_.settle(capped);
            });
        },
        &counters_[kZkRequests], connect);
    {
        std::lock_guard<std::mutex> lock(session_mu_);
        session_.swap(s);
    }
    if (connect) nudge_while_disconnected(++disconnect_epoch_);
    return s;  // the retired session closes outside the lock
}

// libzookeeper-mt 3.8 advances its position in the host list twice per
// failed connection attempt (once in its error handler, once before the
// next attempt), so with an even number of addresses it only ever tries half
// of them: a client on a two-server list whose server dies retries that dead
// server until its session expires, with the other server up. One extra
// advance now and then, while the connection stays down, breaks that
// parity; with the list's own order otherwise kept, every address is tried.
// The step is small against the lease (T/2 - margin), so a leader whose
// server died moves to a live one well within it.
void Client::nudge_while_disconnected(uint64_t epoch) {
    int64_t step_ms = std::clamp<int64_t>(effective_timeout_ms() / 16, 25, 1000);
    at(boottime_ns() + step_ms * kNsPerMs, [this, epoch] {
        if (epoch != disconnect_epoch_ || connected()) return;
        // A server that refused this client's SASL credentials leaves the
        // handle in AUTH_FAILED without a session event (libzookeeper's I/O
        // thread just ends): only its state says so.
        if (session_->state() == ZOO_AUTH_FAILED_STATE) {
            on_session_event(static_cast<uint64_t>(session_gen_.load()), ZOO_AUTH_FAILED_STATE, 0,
                             PeerAddr{});
            return;
        }
        session_->try_next_server();
        nudge_while_disconnected(epoch);
    });
}

// A session that no server takes for longer than its timeout is gone for
// us. Had a quorum served meanwhile, it expired the session, and the EXPIRED
// a server would say on the next handshake may never come: an ensemble
// rebuilt empty (storage wiped, or an old snapshot restored) refuses the
// session outright, for having seen less than the client ("client has seen
// zxid ..."), by closing the connection unanswered, and libzookeeper offers
// it again for ever. So the client ends it as if it expired and opens
// another. The lease ended long before (T/2 - margin after the last touch),
// and nothing of the old session acts again: safety does not rest on this,
// only liveness. The cost: a quorum that was down longer than T revalidates
// its sessions when it comes back; this one is not among them, and its nodes
// stay until the quorum expires them.
void Client::give_up_unless_taken(uint64_t epoch) {
    // T from when the loop heard of the break, not from the last answer
    // before it: a process resumed from a long pause first lets the C client
    // reconnect and hear EXPIRED, which settles the session at once.
    const int64_t t = int64_t(effective_timeout_ms()) * kNsPerMs;
    at(boottime_ns() + t, [this, epoch] {
        if (epoch != disconnect_epoch_ || connected() || !ever_connected_) return;
        bump(kExpiries);
        end_of_session();
        closer_.retire(open_session());
    });
}

// A handshake that grants no session (id 0, timeout <= 0) comes from a
// broken or hostile server. libzookeeper calls it connected; with a timeout
// of 0 it drops the connection on its next turn and connects again at once,
// thousands of times a second, for as long as the handle lives. So the
// handle goes at once, a placeholder holds its place, and a new handle asks
// again after a pause. The handle closes on a thread of its own
// (session_closer.h): closing one libzookeeper thinks connected waits for
// the server, and it is connected at almost every moment; waiting here for
// a moment between two reconnects let hundreds of them through.
// (Random bytes in answer to the handshake can also read as a read-only
// "session". Those are left to libzookeeper's own pace, which is no pace at
// all: tests/hostile's SPINS.)
void Client::refuse_session(uint64_t gen) {
    if (gen != static_cast<uint64_t>(session_gen_.load()) || connected()) return;
    if (ever_connected_) end_of_session();
    closer_.retire(open_session(false));
    reopen_after_refusal();
}

void Client::reopen_after_refusal() {
    int64_t pause_ms = std::min(kBrokenServerRetryMs << std::min(refusals_in_row_, 8),
                                kBrokenServerRetryMaxMs);
    ++refusals_in_row_;
    at(boottime_ns() + pause_ms * kNsPerMs, [this] { reopen_session(); });
}

// We give up a session that was live (a reconnect answered with no
// timeout): for its candidacies it ended as if it expired. Nothing of it
// may carry over to the next one: its nodes are not ours to check, its
// touches prove nothing of the next session, its watches are gone.
void Client::end_of_session() {
    if (guard_ticket_) crash_guard::remove(guard_ticket_);
    interest_.clear();
    watched_.clear();
    leftovers_.clear();  // the session's close removes them
    lease_.on_expired();
    std::vector<std::shared_ptr<Member>> ms;
    for (auto &[id, m] : members_) ms.push_back(m);
    for (auto &m : ms) m->on_expired();
}

void Client::keep_removing(const std::string &path) {
    if (leftovers_.insert(path).second && connected()) remove_leftover(path);
}

// Sent on every reconnect while the node stays; a reply of an older
// session (gen) is not this session's to act on.
void Client::remove_leftover(const std::string &path) {
    uint64_t gen = static_cast<uint64_t>(session_gen_.load());
    session_->remove(path, on_loop([this, path, gen](Reply &&r) {
        if (gen != static_cast<uint64_t>(session_gen_.load()) || !leftovers_.count(path)) return;
        if (r.rc == ZOK || r.rc == ZNONODE) {
            leftovers_.erase(path);
        } else if (!connection_trouble(r.rc)) {
            at(boottime_ns() + int64_t(effective_timeout_ms()) * kNsPerMs, [this, path, gen] {
                if (gen == static_cast<uint64_t>(session_gen_.load()) && leftovers_.count(path) &&
                    connected())
                    remove_leftover(path);
            });
        }
    }));
}

void Client::reopen_session() {
    try {
        open_session();
    } catch (...) {
        // zookeeper_init failing for a connect string it accepted before
        // means resources ran out for now; try again rather than give up.
        at(boottime_ns() + 1000 * kNsPerMs, [this] { reopen_session(); });
    }
}

std::shared_ptr<ZkPort> Client::session_snapshot() {
    std::lock_guard<std::mutex> lock(session_mu_);
    return session_;
}

void Client::post(std::function<void()> fn) {
    bool was_empty;
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) return;
        was_empty = mailbox_.empty();
        mailbox_.push_back(std::move(fn));
    }
    if (was_empty) {
        uint64_t one = 1;
        ssize_t n = ::write(wake_fd_, &one, sizeof one);
        (void)n;
    }
}

// A ReplyFn is called once (its request's one reply), so the handler moves
// into the mail rather than being copied: one allocation less per reply,
// and a join of 10,000 elections has up to 20,000 replies waiting in the
// mailbox at its end (issue 35).
ReplyFn Client::on_loop(std::function<void(Reply &&)> fn) {
    return [this, fn = std::move(fn)](Reply &&r) mutable {
        post([fn = std::move(fn), r = std::move(r)]() mutable { fn(std::move(r)); });
    };
}

// A read of our own while connected, so that some request of ours sent at
// most T/3 ago has always been answered (or is on its way): its answer is
// the evidence of a touch that a quiet session (no keepalives: no leader,
// no heir) would otherwise lack, and the first write of a candidacy earns
// its lease on it. It replaces libzookeeper's ping, which is only sent when
// nothing else was for T/3, so the wire carries no more than before;
// unlike the ping, its answer is seen.
//
// Also without candidacies: a client connected for a while before its
// first volunteer had only its handshake to earn that write's lease on,
// which ran out a few hundred milliseconds after ELECTED, before the first
// keepalive that could count the create (lease_ended right after a join;
// tests/integration/test_quiet_session_lease.py).
void Client::probe() {
    int64_t now = boottime_ns();
    int64_t period = lease::probe_period(int64_t(effective_timeout_ms()) * kNsPerMs);
    int64_t next = now + period;
    if (connected()) {
        // A session already busy (keepalives every T/6, listings) has fresh
        // answers of its own: a probe would add nothing now, and the next
        // look is due T/3 after the newest of them, not T/3 from now. Timed
        // from now, the sends of a session that is busy only now and then
        // could lie up to 2T/3 apart, where the lease counts on T/3.
        auto answered = session_->answered();
        int64_t newest = answered.empty() ? INT64_MIN : answered.back().sent;
        if (newest < connected_at_) newest = INT64_MIN;  // the lease counts none of those
        if (newest < now - period) session_->exists("/", false, ReplyFn([](Reply &&) {}));
        else next = std::max(newest + period, now + kNsPerMs);
    }
    at(next, [this] { probe(); });
}

SessionFacts Client::session_facts() {
    SessionFacts f;
    f.timeout_ns = int64_t(effective_timeout_ms()) * kNsPerMs;
    f.touch_floor = touch_floor_;
    f.connected_at = connected_at_;
    answered_ = session_->answered();
    f.answered = &answered_;
    return f;
}

void Client::list(const std::string &path, ListingFn fn, bool synced) {
    // One session's requests are answered in order: a listing sent after
    // the sync, now or when the one in flight returns, comes after it.
#ifdef ZKELECT_MUTATION_UNSYNCED_READS
    synced = false;
#endif
    ListQueue &q = lists_[path];
    // One sync ahead of the listing that will carry this call is enough for
    // every synced call that shares that listing.
    if (synced && !q.sync_ahead) {
        auto answered = std::make_shared<bool>(false);
        session_->sync(path, on_loop([answered](Reply &&r) { *answered = r.rc == ZOK; }));
        q.sync_ahead = answered;
    }
    q.waiting.push_back(Lister{std::move(fn), synced});
    if (!q.in_flight) send_listing(path);
}

void Client::send_listing(const std::string &path) {
    ListQueue &q = lists_[path];
    q.in_flight = true;
    q.sent.swap(q.waiting);
    q.sync_of_sent = std::move(q.sync_ahead);  // the sync sent so far is ahead of this listing
    q.sync_ahead.reset();
    int64_t gen = session_gen_.load();
    session_->get_children(path, false, on_loop([this, path, gen](Reply &&r) {
        if (gen != session_gen_.load()) return;
        auto it = lists_.find(path);
        if (it == lists_.end()) return;
        std::vector<Lister> to_call;
        to_call.swap(it->second.sent);
        // Answered in order, the sync's answer came first. A sync that was
        // not answered (the connection broke between the two; the listing
        // then went out on the next connection, maybe to a server behind)
        // leaves this listing unsynced: the calls that need a synced one
        // ask again (the simulator's seed 6325: a stale listing judged a
        // create that had landed, and RESIGNED came while its node stood).
        bool synced = it->second.sync_of_sent && *it->second.sync_of_sent;
        it->second.sync_of_sent.reset();
        it->second.in_flight = false;
        std::vector<Lister> again;
        if ((r.rc == ZOK || r.rc == ZNONODE) && !synced) {
            for (auto c = to_call.begin(); c != to_call.end();) {
                if (c->synced) {
                    again.push_back(std::move(*c));
                    c = to_call.erase(c);
                } else {
                    ++c;
                }
            }
        }
        for (auto &c : again) list(path, std::move(c.fn), true);
        it = lists_.find(path);
        if (it != lists_.end() && !it->second.in_flight) {
            if (!it->second.waiting.empty()) send_listing(path);
            else lists_.erase(it);
        }
        Listing l;
        l.rc = r.rc;
        l.children = std::move(r.children);
        if (l.rc == ZOK) {
            l.order = order_candidates(l.children);
            l.position.reserve(l.order.size());
            for (size_t i = 0; i < l.order.size(); ++i) l.position.emplace(l.order[i].name, i);
        }
        for (auto &c : to_call) c.fn(l);
    }));
}

void Client::at(int64_t at_ns, std::function<void()> fn) { timers_.emplace(at_ns, std::move(fn)); }

bool Client::turn(size_t max_items) {
    std::deque<std::function<void()>> batch;
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) return false;
        if (max_items >= mailbox_.size()) {
            batch.swap(mailbox_);
        } else {
            for (size_t i = 0; i < max_items; ++i) {
                batch.push_back(std::move(mailbox_.front()));
                mailbox_.pop_front();
            }
        }
    }
    uint64_t drained;
    ssize_t n = ::read(wake_fd_, &drained, sizeof drained);
    (void)n;
    for (auto &fn : batch) {
        try {
            fn();
        } catch (...) {
            // A bug in a handler must not take the loop down; the member
            // reports through its own ERROR events where it can.
        }
    }
    batch.clear();
    // Timers due now; handlers may add timers, so take one at a time.
    for (int i = 0; i < 100000 && !timers_.empty(); ++i) {
        auto it = timers_.begin();
        if (it->first > boottime_ns()) break;
        auto fn = std::move(it->second);
        timers_.erase(it);
        try {
            fn();
        } catch (...) {
        }
    }
    std::lock_guard<std::mutex> lock(mu_);
    return !stopping_;
}

#ifdef ZKELECT_SIM
bool Client::sim_has_mail() const {
    std::lock_guard<std::mutex> lock(mu_);
    return !mailbox_.empty();
}
#endif

void Client::run() {
    for (;;) {
        if (!turn()) return;
        {
            std::lock_guard<std::mutex> lock(mu_);
            if (stopping_) return;
            if (!mailbox_.empty()) continue;
        }
        itimerspec its{};
        {
            // The probe's timer is always armed, so there is always one.
            int64_t wake = timers_.empty() ? INT64_MAX / 2 : timers_.begin()->first;
            int64_t t = std::max<int64_t>(wake, 1);
            its.it_value.tv_sec = t / 1000000000;
            its.it_value.tv_nsec = t % 1000000000;
        }
        timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &its, nullptr);
        pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {timer_fd_, POLLIN, 0}};
        int rc = ::poll(fds, 2, -1);
        if (rc > 0 && (fds[1].revents & POLLIN)) {
            uint64_t expirations;
            ssize_t n = ::read(timer_fd_, &expirations, sizeof expirations);
            (void)n;
        }
    }
}

// Names what the servers refused, for ZKELECT_EAUTH's message: never a
// credential, only which keys gave them.
std::string Client::auth_failure_cause(bool sasl_required) const {
    const Settings::Sasl &sasl = settings_.sasl;
    if (sasl.mechanism.empty() && sasl_required)
        return "the ZooKeeper server requires SASL authentication of its clients "
               "(enforce.auth.schemes=sasl) and this client has none" +
               std::string(settings_.auth_scheme.empty()
                               ? ""
                               : " (zk.auth's " + settings_.auth_scheme + " does not count)") +
               ": set zk.sasl.mechanism and its credentials (docs/security.md)";
    if (sasl.mechanism.empty())
        return settings_.auth_scheme.empty()
                   ? "ZooKeeper authentication failed"
                   : "ZooKeeper authentication failed (zk.auth " + settings_.auth_scheme +
                         ": the server refused the credentials)";
    std::string who = sasl.user.empty() ? "" : ", zk.sasl.user " + sasl.user;
    if (sasl.mechanism == "GSSAPI")
        return "the ZooKeeper server refused SASL authentication (zk.sasl.mechanism GSSAPI" + who +
               ", service principal " + sasl.service + "/" + sasl.host +
               "): is the client's Kerberos principal valid and its ticket or keytab current?";
    return "the ZooKeeper server refused SASL authentication (zk.sasl.mechanism " +
           sasl.mechanism + who + "): a wrong password (zk.sasl.password.file) or an unknown user?";
}

std::string Client::auth_failure() const {
    std::lock_guard<std::mutex> lock(mu_);
    return auth_why_;
}

int Client::await_connected(int timeout_ms) {
    if (timeout_ms < 0) timeout_ms = settings_.connect_timeout_ms;
    std::unique_lock<std::mutex> lock(mu_);
    bool ok = connected_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                                     [this] { return connected() || auth_failed_ || stopping_; });
    if (auth_failed_) return kEAuth;
    if (stopping_) return kEClosed;
    return ok ? kOk : kETimedOut;
}

uint64_t Client::add_member(std::shared_ptr<Member> m) {
    uint64_t id = next_member_++;
    members_.emplace(id, m);
    member_count_.fetch_add(1);
    if (!tick_warning_.empty()) m->on_warning(tick_warning_server_, tick_warning_);
    if (!guard_warning_.empty()) m->on_warning("crash guard", guard_warning_);
    return id;
}

namespace {
// Erases the one (key, value) entry of a multimap, if there is one.
template <class M, class K, class V>
void erase_entry(M &m, const K &key, const V &value) {
    auto range = m.equal_range(key);
    for (auto it = range.first; it != range.second; ++it)
        if (it->second == value) {
            m.erase(it);
            return;
        }
}
}  // namespace

void Client::remove_member(uint64_t id) {
    if (members_.erase(id)) member_count_.fetch_sub(1);
    // Through the member's own paths: a scan of every watch made tearing
    // down E members cost E x E (issue 35).
    auto range = watched_.equal_range(id);
    for (auto it = range.first; it != range.second; ++it) {
        std::string path = *it->second;  // the key dies with its entry
        erase_entry(interest_, path, id);
    }
    watched_.erase(id);
}

void Client::watch(const std::string &path, uint64_t member_id) {
    auto range = interest_.equal_range(path);
    for (auto it = range.first; it != range.second; ++it)
        if (it->second == member_id) return;
    auto at = interest_.emplace(path, member_id);
    watched_.emplace(member_id, &at->first);
}

void Client::unwatch(const std::string &path, uint64_t member_id) {
    erase_watched(member_id, path);  // before the entry whose key it points at
    erase_entry(interest_, path, member_id);
}

void Client::erase_watched(uint64_t member_id, const std::string &path) {
    auto range = watched_.equal_range(member_id);
    for (auto it = range.first; it != range.second; ++it)
        if (*it->second == path) {
            watched_.erase(it);
            return;
        }
}

void Client::on_watch_event(uint64_t gen, int type, int state, const std::string &path,
                            int64_t stamp, const PeerAddr &peer) {
    if (gen != static_cast<uint64_t>(session_gen_.load())) return;  // a retired session
    if (type == ZOO_SESSION_EVENT) {
        on_session_event(gen, state, stamp, peer);
        return;
    }
    if (path == ZOO_CONFIG_NODE && settings_.follow_hosts) read_ensemble_config();
    std::vector<uint64_t> ids;
    auto range = interest_.equal_range(path);
    for (auto it = range.first; it != range.second; ++it) ids.push_back(it->second);
    for (uint64_t id : ids) erase_watched(id, path);
    interest_.erase(path);
    for (uint64_t id : ids) {
        auto m = members_.find(id);
        if (m != members_.end()) {
            auto keep = m->second;  // a handler may remove the member
            keep->on_node_event(type, path);
        }
    }
}

// Read on every connection (a watch lost with the connection is set again)
// and on every change. Servers older than 3.5 answer ZNONODE; a read that
// fails is tried again with the next connection.
void Client::read_ensemble_config() {
    const int64_t gen = session_gen_.load();
    session_->get_config(on_loop([this, gen](Reply &&r) {
        if (gen != session_gen_.load() || r.rc != ZOK) return;
        apply_ensemble_config(r.data);
    }));
}

void Client::apply_ensemble_config(const std::string &data) {
    std::vector<std::string> hosts = ensemble_client_hosts(data);
    if (hosts.empty()) return;  // nothing usable: keep what works
    std::sort(hosts.begin(), hosts.end());
    std::vector<std::string> current = learned_hosts_;
    if (current.empty()) {
        // Compared with zk.hosts as the user wrote it: no change, no move.
        std::string list = settings_.hosts.substr(0, settings_.hosts.find('/'));
        for (size_t at = 0; at <= list.size();) {
            size_t comma = list.find(',', at);
            if (comma == std::string::npos) comma = list.size();
            if (comma > at) current.push_back(list.substr(at, comma - at));
            at = comma + 1;
        }
        std::sort(current.begin(), current.end());
    }
    if (hosts == current) return;
    std::string list = with_chroot(hosts, "");
    // libzookeeper may move this session to another server to even out the
    // load (a reconnect within the session, which the lease rides out).
    if (session_->set_servers(list) != ZOK) return;
    learned_hosts_ = std::move(hosts);
    {
        std::lock_guard<std::mutex> lock(hosts_mu_);
        hosts_in_use_ = with_chroot(learned_hosts_, settings_.hosts);
    }
    // The guard closes the session through the servers it was told of: it
    // hears of the new ones (an ADD replaces the session's line).
    if (connected()) guard_session();
}

void Client::on_session_event(uint64_t gen, int state, int64_t stamp, const PeerAddr &peer) {
    auto each = [this](auto &&fn) {
        std::vector<std::shared_ptr<Member>> ms;
        for (auto &[id, m] : members_) ms.push_back(m);
        for (auto &m : ms) fn(*m);
    };
    if (state == ZOO_CONNECTED_STATE) {
        // A handshake that grants no session (id 0, timeout <= 0): neither
        // connected nor expired for us.
        if (session_->session_id() == 0 || session_->negotiated_timeout_ms() <= 0) {
            refuse_session(gen);
            return;
        }
        bool first = !ever_connected_;
        ever_connected_ = true;
        refusals_in_row_ = 0;
        ++disconnect_epoch_;
        // Stamped on ZooKeeper's thread when it delivered the event: the
        // handshake was before that, however late the loop gets here.
        connected_at_ = stamp;
        const bool moved = !first && peer.text() != last_peer_.text();
        last_peer_ = peer;
        timeout_ms_.store(session_->negotiated_timeout_ms());
        session_id_.store(session_->session_id());
        // In the guard before anyone hears of the session: a client that
        // says it is connected says whether it is guarded (the stats). A
        // reconnect to another server tells the guard that server's address.
        if (first || moved) guard_session();
        {
            std::lock_guard<std::mutex> lock(mu_);
            connected_.store(true, std::memory_order_release);
        }
        connected_cv_.notify_all();
        if (!first) bump(kReconnects);
        lease_.on_connected(first);
        ask_tick_time(peer);
        if (settings_.follow_hosts) read_ensemble_config();
        for (const auto &path : leftovers_) remove_leftover(path);
        each([first](Member &m) { m.on_connected(first); });
        join_line_.on_connected();  // after every member that waits is back in line
    } else if (state == ZOO_CONNECTING_STATE || state == ZOO_ASSOCIATING_STATE) {
        if (!connected()) return;
        connected_.store(false, std::memory_order_release);
        watch_for_sasl_refusal(gen, boottime_ns() - connected_at_);
        const uint64_t epoch = ++disconnect_epoch_;
        nudge_while_disconnected(epoch);
        give_up_unless_taken(epoch);
        // The connection broke after the latest request answered on it was
        // sent (stamped on ZooKeeper's thread, in delivery order): a
        // reconnect's revalidation comes after that.
        touch_floor_ = std::max(touch_floor_, stamp);
        connected_at_ = INT64_MAX;
        tick_asked_ = 0;  // an answer now would be about a connection gone
        each([](Member &m) { m.on_suspended(); });
    } else if (state == ZOO_EXPIRED_SESSION_STATE) {
        connected_.store(false, std::memory_order_release);
        bump(kExpiries);
        end_of_session();
        // The old handle is dead; a new session takes over. Its close runs
        // here, on the loop (it joins ZooKeeper's threads, which never wait
        // on us), or on the last query still holding it. A session that
        // expired without ever being granted was refused by a broken server:
        // wait before asking again, or the two would ping-pong thousands of
        // connections a second.
        if (ever_connected_) reopen_session();
        else reopen_after_refusal();
    } else if (state == ZOO_AUTH_FAILED_STATE || state == ZSESSIONCLOSEDREQUIRESASLAUTH) {
        connected_.store(false, std::memory_order_release);
        ++disconnect_epoch_;  // the handle is dead: nothing to nudge
        if (ever_connected_) {
            // The session ends for us (its members hear why just below, not
            // as an expiry): no lease, no guard, nothing left to remove.
            if (guard_ticket_) crash_guard::remove(guard_ticket_);
            interest_.clear();
            watched_.clear();
            leftovers_.clear();
            lease_.on_expired();
        }
        {
            std::lock_guard<std::mutex> lock(mu_);
            auth_failed_ = true;
            auth_why_ = auth_failure_cause(state == ZSESSIONCLOSEDREQUIRESASLAUTH);
        }
        // Refused credentials stay refused: a handle left open would only
        // connect again and again (the server closes a session without the
        // SASL it requires on its first request), so it goes, and no other
        // follows. The client answers ZKELECT_EAUTH from now on.
        closer_.retire(open_session(false));
        connected_cv_.notify_all();
        each([](Member &m) { m.on_auth_failed(); });
    }
}

// A server that requires SASL of a client without it lets each connection
// through its handshake and closes it at the first request, and the -124
// it answers is lost with the connection (sasl_probe.h). Connections that
// keep breaking within a second of their handshakes are the symptom: after
// the 2nd, 4th, 8th... in a row the client asks the server itself, on a
// thread of its own (at most 1 s), and a server that says it requires SASL
// ends the client as a refusal of its credentials would.
void Client::watch_for_sasl_refusal(uint64_t gen, int64_t lived_ns) {
    // Authenticated (not this), or no server address to ask.
    if (!settings_.sasl.mechanism.empty() || last_peer_.len == 0) return;
    if (lived_ns > 1000 * kNsPerMs) {
        quick_drops_ = 0;
        return;
    }
    ++quick_drops_;
    if (quick_drops_ < 2 || (quick_drops_ & (quick_drops_ - 1)) != 0 || sasl_probing_.load())
        return;
    if (sasl_probe_.joinable()) sasl_probe_.join();  // ended: sasl_probing_ is false
    sasl_probing_.store(true);
    PeerAddr peer = last_peer_;
    std::string tls = settings_.tls;
    try {
        sasl_probe_ = std::thread([this, gen, peer, tls] {
            SaslVerdict v = probe_sasl_required(peer, tls, 1000);
            if (v == SaslVerdict::kRequired)
                post([this, gen] {
                    if (gen == static_cast<uint64_t>(session_gen_.load()) && !auth_failed())
                        on_session_event(gen, ZSESSIONCLOSEDREQUIRESASLAUTH, 0, PeerAddr{});
                });
            sasl_probing_.store(false);
        });
    } catch (...) {
        sasl_probing_.store(false);  // no thread to be had: the next drops ask again
    }
}

bool Client::auth_failed() const {
    std::lock_guard<std::mutex> lock(mu_);
    return auth_failed_;
}

// The lease counts a touch of ours as heard by the quorum's leader T/4
// after it, which holds only while T >= 2 x tickTime (docs/semantics.md,
// "Why that is safe"): ZooKeeper's default, not a rule. So after each new
// connection the server is asked for its tickTime (the conf four-letter
// word, on TickProbe's thread), and until it answers no candidacy claims
// and only the handshake earns a lease. The request is bounded (1 s, or T/5
// if less: nothing answered on the new connection would count before T/4
// anyway) and so is its wait here: a timer ends it as unanswered. A refusal, silence, garbage or an
// answer that does not fit the timeout this connection was granted all
// count as no answer: what was assumed before 1.2 holds, silently, unless
// another server of this client said more.
void Client::ask_tick_time(const PeerAddr &peer) {
    tick_asked_ = 0;
    tick_warning_.clear();
    tick_warning_server_.clear();
    if (!settings_.probe_ticktime || !settings_.tls.empty()) {
        lease_.tick_known(largest_tick_ns_);
        tick_time_ns_.store(largest_tick_ns_, std::memory_order_relaxed);
        return;
    }
    uint64_t ticket = ++tick_ticket_;
    int64_t timeout = std::min<int64_t>(1000 * kNsPerMs,
                                        int64_t(effective_timeout_ms()) * kNsPerMs / 5);
    const bool by_port = session_->ask_conf([this, ticket](bool ok, const ServerConf &conf) {
        post([this, ticket, ok, conf] { on_tick_answer(ticket, ok, conf); });
    });
    if (!by_port && (peer.len == 0 || !tick_probe_.ask(ticket, peer, timeout))) {
        lease_.tick_known(largest_tick_ns_);
        tick_time_ns_.store(largest_tick_ns_, std::memory_order_relaxed);
        return;
    }
    lease_.asking();
    tick_asked_ = ticket;
    tick_peer_ = peer;
    at(boottime_ns() + timeout + 10 * kNsPerMs, [this, ticket] {
        if (ticket == tick_asked_) on_tick_answer(ticket, false, ServerConf{});
    });
}

void Client::on_tick_answer(uint64_t ticket, bool ok, const ServerConf &conf) {
    if (ticket != tick_asked_) return;  // late, or for a connection gone
    tick_asked_ = 0;
    const int64_t t_ms = effective_timeout_ms();
    // The server that granted this connection's timeout grants within its
    // own window: an answer outside it is not that server's.
    if (ok && ((conf.min_session_ms > 0 && t_ms < conf.min_session_ms) ||
               (conf.max_session_ms > 0 && t_ms > conf.max_session_ms)))
        ok = false;
    int64_t tick = ok ? conf.tick_ms * kNsPerMs : 0;
    largest_tick_ns_ = std::max(largest_tick_ns_, tick);
    tick_time_ns_.store(largest_tick_ns_, std::memory_order_relaxed);
    if (tick > 0 && int64_t(t_ms) * kNsPerMs < 2 * tick) warn_below_two_ticks(tick_peer_.text(), tick);
    lease_.tick_known(largest_tick_ns_);
}

// Counted once per client and server; told to every candidacy of the
// client, and to each one added while connected to that server, each of
// which says it once per server (Candidacy::on_warning).
void Client::warn_below_two_ticks(const std::string &server, int64_t tick_ns) {
    if (warned_servers_.insert(server).second) bump(kSessionTimeoutBelowTwoTicks);
    const int64_t t = int64_t(effective_timeout_ms()) * kNsPerMs;
    const int64_t lag = lease::report_lag(t, tick_ns);
    const int64_t margin = lease::margin_ns(t, settings_.lease_margin_ms);
    auto ms = [](int64_t ns) { return std::to_string(ns / kNsPerMs); };
    std::string what =
        "the ZooKeeper server " + (server.empty() ? std::string("connected to") : server) +
        " granted a session timeout of " + ms(t) + " ms, below 2 x its tickTime of " +
        ms(tick_ns) + " ms: it reports this session's touches to the quorum's leader only every " +
        ms(lag) + " ms (tickTime/2), later than the lease assumes (T/4). ";
    if (lease::lease_usable(t, lag, margin)) {
        what += "Leases are shortened to at most " + ms(lease::longest_ns(t, lag, margin)) +
                " ms (from " + ms(lease::full_ns(t, margin)) + " ms), with a keepalive every " +
                ms(lease::keepalive_period(t, lag, margin)) + " ms. ";
    } else {
        what += "That leaves no usable lease: this client will not lead while connected to it "
                "(its candidacies wait in line). ";
    }
    what += "Set minSessionTimeout to at least " + ms(2 * tick_ns) +
            " (2 x tickTime, ZooKeeper's default) on the servers, or ask for a "
            "zk.session.timeout.ms of at least " + ms(2 * tick_ns) + ".";
    tick_warning_ = what;
    tick_warning_server_ = server;
    std::vector<std::shared_ptr<Member>> told;
    for (auto &[id, m] : members_) told.push_back(m);
    for (auto &m : told) m->on_warning(server, what);
}

void Client::deliver_lease(int64_t until, int64_t rtt_us) {
    // A member may leave (or another join) while it is told: tell a copy.
    std::vector<std::shared_ptr<Member>> ms;
    for (auto &[id, m] : members_) ms.push_back(m);
    for (auto &m : ms) m->on_lease(until, rtt_us);
}

void Client::deliver_lease_to(uint64_t id, int64_t until) {
    auto it = members_.find(id);
    if (it == members_.end()) return;
    auto m = it->second;  // a handler may remove the member
    m->on_lease(until, -1);
}

void Client::deliver_node_failed(uint64_t id, const std::string &path, bool deleted) {
    auto it = members_.find(id);
    if (it == members_.end()) return;
    auto m = it->second;  // a handler may remove the member
    if (deleted) m->on_node_event(ZOO_DELETED_EVENT, path);
    else m->on_node_refused(path);
}

namespace {
struct QueryState {
    std::mutex mu;
    std::condition_variable cv;
    int outstanding = 0;
    int rc = 0;
    bool listed = false;
    std::vector<std::string> children;
    std::vector<Reply> datas;
};
}  // namespace

int Client::participants(const std::string &path, int timeout_ms,
                         std::vector<ParticipantInfo> *out, std::string *why) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    std::shared_ptr<ZkPort> session;
    std::shared_ptr<QueryState> st;
    std::vector<Candidate> order;
    // A connection lost under the listing: asked again once the client is
    // back, after a pause that doubles (at most 6 times, within the
    // deadline). A server that requires SASL of a client without it drops
    // every connection at its first request: meanwhile the client finds
    // out why (watch_for_sasl_refusal) and the query says so.
    for (int attempt = 0;; ++attempt) {
        session = session_snapshot();
        if (!session) {
            *why = "the client is closing";
            return kEClosed;
        }
        st = std::make_shared<QueryState>();
        st->outstanding = 1;
        // "Who leads now" asked of a server that has not applied another
        // session's latest create or delete would answer with the past: sync
        // first (one more round trip, through the quorum's leader).
#ifndef ZKELECT_MUTATION_UNSYNCED_READS
        session->sync(path, ReplyFn([](Reply &&) {}));
#endif
        session->get_children(path, false, [st](Reply &&r) {
            std::lock_guard<std::mutex> lock(st->mu);
            st->rc = r.rc;
            st->children = std::move(r.children);
            st->listed = true;
            st->outstanding--;
            st->cv.notify_all();
        });
        std::unique_lock<std::mutex> lock(st->mu);
        if (!st->cv.wait_until(lock, deadline, [&] { return st->outstanding == 0; })) {
            *why = "ZooKeeper did not answer within " + std::to_string(timeout_ms) + " ms";
            return connected() ? kETimedOut : kEConnLoss;
        }
        if (st->rc == ZCONNECTIONLOSS && attempt < 6) {
            lock.unlock();
            std::unique_lock<std::mutex> l(mu_);
            auto pause = std::min(deadline, std::chrono::steady_clock::now() +
                                                std::chrono::milliseconds(50 << attempt));
            connected_cv_.wait_until(l, pause, [&] { return auth_failed_ || stopping_; });
            connected_cv_.wait_until(l, deadline,
                                     [&] { return auth_failed_ || stopping_ || connected(); });
            if (auth_failed_) {
                *why = auth_why_;
                return kEAuth;
            }
            if (connected()) continue;
        }
        if (st->rc == ZNONODE) {
            out->clear();
            return kOk;  // no path: no candidates
        }
        if (st->rc != ZOK) {
            *why = std::string("listing ") + path + ": " + zerror(st->rc);
            return err_from_zk(st->rc);
        }
        order = order_candidates(st->children);
        st->datas.assign(order.size(), Reply{});
        st->outstanding = static_cast<int>(order.size());
        break;
    }
    for (size_t i = 0; i < order.size(); ++i) {
        session->get(path + "/" + order[i].name, false, [st, i](Reply &&r) {
            std::lock_guard<std::mutex> lock(st->mu);
            st->datas[i] = std::move(r);
            st->outstanding--;
            st->cv.notify_all();
        });
    }
    std::unique_lock<std::mutex> lock(st->mu);
    if (!st->cv.wait_until(lock, deadline, [&] { return st->outstanding == 0; })) {
        *why = "ZooKeeper did not answer within " + std::to_string(timeout_ms) + " ms";
        return connected() ? kETimedOut : kEConnLoss;
    }
    out->clear();
    for (size_t i = 0; i < order.size(); ++i) {
        const Reply &r = st->datas[i];
        if (r.rc == ZNONODE) continue;  // left while we asked
        if (r.rc != ZOK) {
            *why = "reading " + order[i].name + ": " + zerror(r.rc);
            return err_from_zk(r.rc);
        }
        out->push_back({order[i].name, r.data, r.stat.czxid, r.stat.ctime_ms});
    }
    return kOk;
}

int Client::request_transfer(const std::string &path, const std::string &target, int timeout_ms,
                             std::string *why) {
    int rc = TransferAsk(*this, path, target, timeout_ms).run(why);
    // Before the request is written only: once it is, the waiting goes on
    // with the client's next session (the request is in the path's data,
    // not tied to a session).
    if (rc == kESessionExpired) {
        *why = "this client's session expired while asking (" + *why + "); nothing was changed";
        rc = kEConnLoss;
    }
    return rc;
}

int err_from_zk(int rc) {
    switch (rc) {
        case ZOK: return kOk;
        case ZCONNECTIONLOSS:
        case ZOPERATIONTIMEOUT: return kEConnLoss;
        case ZSESSIONEXPIRED:
        case ZINVALIDSTATE: return kESessionExpired;
        case ZNOAUTH:
        case ZAUTHFAILED:
        case ZSESSIONCLOSEDREQUIRESASLAUTH: return kEAuth;
        case ZCLOSING: return kEClosed;
        case ZBADARGUMENTS: return kEInval;
        default: return kEZk;
    }
}

}  // namespace zkelect
