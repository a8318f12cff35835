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
        at(boottime_ns() + lease::probe_period(int64_t(effective_timeout_ms()) * kNsPerMs),
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
