#include "stats_json.h"

#include <cstdio>

#include "client.h"
#include "clock.h"
#include "election_shared.h"
#include "vocabulary.h"

namespace zkelect {

void json_str(std::string &o, const std::string &v) {
    o += '"';
    for (unsigned char c : v) {
        if (c == '"' || c == '\\') {
            o += '\\';
            o += char(c);
        } else if (c < 0x20 || c == 0x7f) {
            char b[8];
            std::snprintf(b, sizeof b, "\\u%04x", c);
            o += b;
        } else {
            o += char(c);
        }
    }
    o += '"';
}

void json_key(std::string &o, const char *k) {
    if (o.back() != '{' && o.back() != '[') o += ',';
    o += '"';
    o += k;
    o += "\":";
}

void json_int(std::string &o, const char *k, int64_t v) {
    json_key(o, k);
    o += std::to_string(v);
}

void json_uint(std::string &o, const char *k, uint64_t v) {
    json_key(o, k);
    o += std::to_string(v);
}

namespace {

template <int N>
void json_hist(std::string &o, const char *k, const Histogram<N> &h) {
    json_key(o, k);
    o += '{';
    json_uint(o, "count", h.count);
    json_int(o, "sum_us", h.sum_us);
    json_int(o, "last_us", h.last_us);
    json_int(o, "min_us", h.min_us);
    json_int(o, "max_us", h.max_us);
    // Cumulative, as Prometheus' buckets are; the implied +Inf is "count".
    json_key(o, "buckets");
    o += '[';
    uint64_t acc = 0;
    for (int i = 0; i < N; ++i) {
        acc += h.counts[i];
        if (i) o += ',';
        o += "{\"le_us\":" + std::to_string(h.bounds_us[i]) + ",\"count\":" + std::to_string(acc) + '}';
    }
    o += "]}";
}

int64_t ns_to_ms(int64_t ns) { return ns / 1000000; }

// The user's view of the engine's states (Candidacy::State order).
const char *coarse_state(int engine_state, bool leader) {
    if (leader) return "leader";
    switch (engine_state) {
        case 0: case 10: return "idle";             // idle, closed
        case 5: case 6: return "follower";          // following, heir
        case 9: return "resigning";
        default: return "candidate";                // enrolling, listing, claiming
    }
}

void election_json(std::string &o, const ElectionShared &sh) {
    // Everything read once, before formatting: the lock is held for the copy only.
    ElectionStats st = sh.stats.copy();
    int64_t now_boot = boottime_ns();
    int64_t lease = sh.lease.value();
    bool leader = lease > 0 && now_boot < lease;
    int64_t token = sh.token.load();
    o += '{';
    json_int(o, "version", 1);
    json_key(o, "path");
    json_str(o, sh.path);
    json_key(o, "id");
    json_str(o, sh.id);
    json_int(o, "time_at_ms", ns_to_ms(realtime_ns()));
    json_key(o, "state");
    json_str(o, coarse_state(st.state, leader));
    json_key(o, "engine_state");
    json_str(o, st.state_name);
    json_int(o, "state_since_at_ms", ns_to_ms(st.state_since_ns));
    json_key(o, "is_leader");
    o += leader ? "true" : "false";
    json_int(o, "token", leader ? token : 0);
    json_int(o, "lease_left_us", leader ? (lease - now_boot) / 1000 : 0);
    json_int(o, "queue_position", st.queue_position);
    json_int(o, "queue_length", st.queue_length);
    json_int(o, "term_began_at_ms", ns_to_ms(st.term_began_ns));
    json_int(o, "term_ended_at_ms", ns_to_ms(st.term_ended_ns));
    json_int(o, "term_token", st.term_token);
    json_uint(o, "terms_won", st.terms_won);
    json_key(o, "losses");
    o += '{';
    for (int r = 1; r <= 7; ++r) json_uint(o, vocabulary::reason_name(r), st.losses[r]);
    o += '}';
    json_uint(o, "requests", st.requests);
    json_uint(o, "notifications", st.notifications);
    json_hist(o, "keepalive_rtt", st.keepalive);
    json_hist(o, "failover", st.failover);
    o += '}';
}

}  // namespace

void election_stats_json(std::string &out, const ElectionShared &e) { election_json(out, e); }

void client_stats_json(std::string &o, const Client &c, const EachElection &each) {
    o += '{';
    json_int(o, "version", 1);
    json_int(o, "time_at_ms", ns_to_ms(realtime_ns()));
    json_key(o, "connected");
    o += c.connected() ? "true" : "false";
    json_int(o, "session_id", c.session_id());
    json_int(o, "session_timeout_us", int64_t(c.negotiated_timeout_ms()) * 1000);
    json_int(o, "tick_time_us", c.tick_time_ns() / 1000);
    json_key(o, "hosts");
    json_str(o, c.hosts());
    // The session is in the process's crash guard, which runs (crash.guard).
    json_key(o, "crash_guarded");
    o += c.guarded() ? "true" : "false";
    json_key(o, "counters");
    o += '{';
    for (int i = 0; i < kCounterCount; ++i) json_uint(o, vocabulary::counter_name(i), c.counter(i));
    o += '}';
    // A balanced group's part (balance.group): the client's leaderships now
    // and the moves it made (docs/monitoring.md).
    if (!c.settings().balance_group.empty()) {
        json_key(o, "balance");
        o += '{';
        json_key(o, "group");
        json_str(o, c.settings().balance_group);
        json_uint(o, "leading", c.leaderships().leading());
        json_uint(o, "in_line", c.leaderships().in_line());
        json_uint(o, "moves", c.counter(kBalanceMoves));
        o += '}';
    }
    json_key(o, "elections");
    o += '[';
    bool first = true;
    each([&](const ElectionShared &e) {
        if (!first) o += ',';
        first = false;
        election_json(o, e);
    });
    o += "]}";
}

bool leader_answer_json(std::string &o, const ElectionShared &sh) {
    int64_t token = 0, left = 0;
    bool leading = false;
    if (sh.is_leader()) {
        token = sh.token.load();
        left = sh.lease_left_ns() / kNsPerMs;
        leading = left > 0 && sh.is_leader() && sh.token.load() == token;
    }
    o += '{';
    json_key(o, "leader");
    o += leading ? "true" : "false";
    if (leading) {
        json_key(o, "path");
        json_str(o, sh.path);
        json_key(o, "id");
        json_str(o, sh.id);
        json_int(o, "token", token);
        json_int(o, "lease_left_ms", left);
    }
    o += '}';
    return leading;
}

}  // namespace zkelect
