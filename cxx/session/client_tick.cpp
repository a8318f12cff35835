// The connected server's tickTime, asked after each new connection (the
// conf four-letter word, through the port or TickProbe) for the lease's
// report lag, and the WARNING when the server granted a session timeout
// below 2 x tickTime.
#include <algorithm>

#include "client.h"

namespace zkelect {

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

}  // namespace zkelect
