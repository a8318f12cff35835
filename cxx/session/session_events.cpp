// A client's session through its states (Client::on_session_event and
// its steps): a handshake that grants a session or none, a connection
// lost and the nudges and the give-up while it stays lost, an expiry and
// the next session, credentials refused (and the SASL a server requires
// found out after quick drops); what a caller waiting to connect is told.
#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "client.h"
#include "clock.h"
#include "crash_guard.h"
#include "sasl_probe.h"

namespace zkelect {

// Pause before a new session after a server granted none (see
// on_session_event): long against a handshake, short against a session.
// It doubles while servers keep granting none, up to the cap: each refused
// handle still costs the dozens of connections libzookeeper makes before
// the loop hears of the first handshake.
constexpr int64_t kBrokenServerRetryMs = 1000;
constexpr int64_t kBrokenServerRetryMaxMs = 2000;

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

void Client::reopen_session() {
    try {
        open_session();
    } catch (...) {
        // zookeeper_init failing for a connect string it accepted before
        // means resources ran out for now; try again rather than give up.
        at(boottime_ns() + 1000 * kNsPerMs, [this] { reopen_session(); });
    }
}

void Client::on_session_event(uint64_t gen, int state, int64_t stamp, const PeerAddr &peer) {
    if (state == ZOO_CONNECTED_STATE) on_connected_event(gen, stamp, peer);
    else if (state == ZOO_CONNECTING_STATE || state == ZOO_ASSOCIATING_STATE)
        on_connection_lost(gen, stamp);
    else if (state == ZOO_EXPIRED_SESSION_STATE) on_session_expired();
    else if (state == ZOO_AUTH_FAILED_STATE || state == ZSESSIONCLOSEDREQUIRESASLAUTH)
        on_auth_refused(state == ZSESSIONCLOSEDREQUIRESASLAUTH);
}

void Client::tell_members(const std::function<void(Member &)> &fn) {
    // A member may leave (or another join) while it is told: tell a copy.
    std::vector<std::shared_ptr<Member>> ms;
    for (auto &[id, m] : members_) ms.push_back(m);
    for (auto &m : ms) fn(*m);
}

void Client::on_connected_event(uint64_t gen, int64_t stamp, const PeerAddr &peer) {
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
    // In the guard before anyone hears of the session: a client that says
    // it is connected says whether it is guarded (the stats). A reconnect
    // to another server tells the guard that server's address.
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
    tell_members([first](Member &m) { m.on_connected(first); });
    join_line_.on_connected();  // after every member that waits is back in line
}

void Client::on_connection_lost(uint64_t gen, int64_t stamp) {
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
    tell_members([](Member &m) { m.on_suspended(); });
}

void Client::on_session_expired() {
    connected_.store(false, std::memory_order_release);
    bump(kExpiries);
    end_of_session();
    // The old handle is dead; a new session takes over. Its close runs
    // here, on the loop (it joins ZooKeeper's threads, which never wait on
    // us), or on the last query still holding it. A session that expired
    // without ever being granted was refused by a broken server: wait
    // before asking again, or the two would ping-pong thousands of
    // connections a second.
    if (ever_connected_) reopen_session();
    else reopen_after_refusal();
}

void Client::on_auth_refused(bool sasl_required) {
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
        auth_why_ = auth_failure_cause(sasl_required);
    }
    // Refused credentials stay refused: a handle left open would only
    // connect again and again (the server closes a session without the
    // SASL it requires on its first request), so it goes, and no other
    // follows. The client answers ZKELECT_EAUTH from now on.
    closer_.retire(open_session(false));
    connected_cv_.notify_all();
    tell_members([](Member &m) { m.on_auth_failed(); });
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

std::string Client::reply_error(int zk_rc) const {
    if (zk_rc == ZSESSIONCLOSEDREQUIRESASLAUTH || zk_rc == ZAUTHFAILED)
        return auth_failure_cause(zk_rc == ZSESSIONCLOSEDREQUIRESASLAUTH);
    return zerror(zk_rc);
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

}  // namespace zkelect
