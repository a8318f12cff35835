#include "vocabulary.h"

#include "errors.h"

namespace zkelect {
namespace vocabulary {

namespace {

struct ErrWords {
    int code;
    const char *symbol;
    const char *message;
};

// BEGIN gen/vocab.py errors
constexpr ErrWords kErrors[] = {
    {kOk, "ZKELECT_OK", "success"},
    {kEInval, "ZKELECT_EINVAL", "invalid argument"},
    {kENoMem, "ZKELECT_ENOMEM", "out of memory"},
    {kEState, "ZKELECT_ESTATE", "operation not valid in the handle's current state"},
    {kEClosed, "ZKELECT_ECLOSED", "handle is closing"},
    {kETimedOut, "ZKELECT_ETIMEDOUT", "timed out"},
    {kEConnLoss, "ZKELECT_ECONNLOSS", "connection to ZooKeeper lost"},
    {kESessionExpired, "ZKELECT_ESESSION_EXPIRED", "ZooKeeper session expired"},
    {kEAuth, "ZKELECT_EAUTH", "authentication failed or permission denied"},
    {kENotSup, "ZKELECT_ENOTSUP", "not supported by this build"},
    {kEDeadlk, "ZKELECT_EDEADLK", "would deadlock: destroy called from the handle's own callback"},
    {kEZk, "ZKELECT_EZK", "ZooKeeper error"},
    {kEInternal, "ZKELECT_EINTERNAL", "internal error"},
    {kENoLeader, "ZKELECT_ENOLEADER", "the election has no leader"},
    {kERange, "ZKELECT_ERANGE", "buffer too small"},
    {kENotLeader, "ZKELECT_ENOTLEADER", "not the leader"},
    {kENoCandidate, "ZKELECT_ENOCANDIDATE", "no candidate with that id"},
    {kETargetLost, "ZKELECT_ETARGET_LOST", "the transfer's target left the election"},
    {kELimit, "ZKELECT_ELIMIT", "a configured limit of the client would be exceeded"},
    {kEFenced, "ZKELECT_EFENCED", "the leadership term is over: the fenced write was refused"},
};
// END gen/vocab.py errors

const ErrWords *find(int code) {
    for (const auto &e : kErrors)
        if (e.code == code) return &e;
    return nullptr;
}

// Indexed by EventType, Reason and Counter (errors.h).
// BEGIN gen/vocab.py names
constexpr const char *kEventTypes[] = {
    "UNKNOWN",
    "ELECTED",
    "DEPOSED",
    "FOLLOWING",
    "SUSPENDED",
    "RECONNECTED",
    "EXPIRED",
    "LEADER_CHANGED",
    "ERROR",
    "RESIGNED",
    "OVERFLOW",
    "WARNING",
    "STEPPED_BACK",
    "LEASE_LOW",
};
constexpr const char *kReasons[] = {
    "none",
    "resigned",
    "suspended",
    "lease_ended",
    "expired",
    "node_deleted",
    "closed",
    "transferred",
};
constexpr const char *kCounters[] = {
    "terms_won",
    "deposed_resigned",
    "deposed_suspended",
    "deposed_lease_ended",
    "deposed_expired",
    "deposed_node_deleted",
    "deposed_closed",
    "reconnects",
    "expiries",
    "zk_requests",
    "keepalives",
    "sequence_near_wrap",
    "session_timeout_below_two_ticks",
    "crash_guard_warnings",
    "lease_low",
    "balance_moves",
};
// END gen/vocab.py names

static_assert(sizeof kEventTypes / sizeof *kEventTypes == int(EventType::kLeaseLow) + 1,
              "a name for every event type");
static_assert(sizeof kReasons / sizeof *kReasons == int(Reason::kTransferred) + 1,
              "a name for every reason");
static_assert(sizeof kCounters / sizeof *kCounters == kCounterCount, "a name for every counter");

template <class T, int N>
const char *at(const T (&names)[N], int i, const char *otherwise) {
    return i >= 0 && i < N ? names[i] : otherwise;
}

}  // namespace

const char *err_symbol(int code) {
    const ErrWords *e = find(code);
    return e ? e->symbol : "ZKELECT_EUNKNOWN";
}

const char *err_message(int code) {
    const ErrWords *e = find(code);
    return e ? e->message : "unknown error";
}

const char *event_type_name(int type) {
    return type >= 1 ? at(kEventTypes, type, "UNKNOWN") : "UNKNOWN";
}

const char *reason_name(int reason) { return at(kReasons, reason, "unknown"); }

const char *counter_name(int counter) { return at(kCounters, counter, nullptr); }

}  // namespace vocabulary
}  // namespace zkelect
