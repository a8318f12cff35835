// Compile-time only: the numbers the ABI promises (zkelect.h) against the
// engine's own copy (cxx/base/errors.h; the engine must not include the public
// header) and the event queue's bound. Nothing here is linked in.
#include <zkelect/zkelect.h>

#include "errors.h"
#include "conf.h"
#include "event_queue.h"

using namespace zkelect;

// The ABI promises these numbers; the engine keeps its own copy (it must not
// include the public header). Every value is held to the header here, at
// compile time: gen/vocab.py writes one line per word of
// gen/vocabulary.toml, and the compiler compares the two enums it names;
// tests/abi/test_vocabulary.py holds the name tables and the docs to the
// header.
#define ZKE_SAME(pub, eng) static_assert(int(pub) == int(eng), #pub " drifted from " #eng)
// BEGIN gen/vocab.py same
ZKE_SAME(ZKELECT_OK, kOk);
ZKE_SAME(ZKELECT_EINVAL, kEInval);
ZKE_SAME(ZKELECT_ENOMEM, kENoMem);
ZKE_SAME(ZKELECT_ESTATE, kEState);
ZKE_SAME(ZKELECT_ECLOSED, kEClosed);
ZKE_SAME(ZKELECT_ETIMEDOUT, kETimedOut);
ZKE_SAME(ZKELECT_ECONNLOSS, kEConnLoss);
ZKE_SAME(ZKELECT_ESESSION_EXPIRED, kESessionExpired);
ZKE_SAME(ZKELECT_EAUTH, kEAuth);
ZKE_SAME(ZKELECT_ENOTSUP, kENotSup);
ZKE_SAME(ZKELECT_EDEADLK, kEDeadlk);
ZKE_SAME(ZKELECT_EZK, kEZk);
ZKE_SAME(ZKELECT_EINTERNAL, kEInternal);
ZKE_SAME(ZKELECT_ENOLEADER, kENoLeader);
ZKE_SAME(ZKELECT_ERANGE, kERange);
ZKE_SAME(ZKELECT_ENOTLEADER, kENotLeader);
ZKE_SAME(ZKELECT_ENOCANDIDATE, kENoCandidate);
ZKE_SAME(ZKELECT_ETARGET_LOST, kETargetLost);
ZKE_SAME(ZKELECT_ELIMIT, kELimit);
ZKE_SAME(ZKELECT_EFENCED, kEFenced);
ZKE_SAME(ZKELECT_EV_ELECTED, EventType::kElected);
ZKE_SAME(ZKELECT_EV_DEPOSED, EventType::kDeposed);
ZKE_SAME(ZKELECT_EV_FOLLOWING, EventType::kFollowing);
ZKE_SAME(ZKELECT_EV_SUSPENDED, EventType::kSuspended);
ZKE_SAME(ZKELECT_EV_RECONNECTED, EventType::kReconnected);
ZKE_SAME(ZKELECT_EV_EXPIRED, EventType::kExpired);
ZKE_SAME(ZKELECT_EV_LEADER_CHANGED, EventType::kLeaderChanged);
ZKE_SAME(ZKELECT_EV_ERROR, EventType::kError);
ZKE_SAME(ZKELECT_EV_RESIGNED, EventType::kResigned);
ZKE_SAME(ZKELECT_EV_OVERFLOW, EventType::kOverflow);
ZKE_SAME(ZKELECT_EV_WARNING, EventType::kWarning);
ZKE_SAME(ZKELECT_EV_STEPPED_BACK, EventType::kSteppedBack);
ZKE_SAME(ZKELECT_EV_LEASE_LOW, EventType::kLeaseLow);
ZKE_SAME(ZKELECT_REASON_NONE, Reason::kNone);
ZKE_SAME(ZKELECT_REASON_RESIGNED, Reason::kResigned);
ZKE_SAME(ZKELECT_REASON_SUSPENDED, Reason::kSuspended);
ZKE_SAME(ZKELECT_REASON_LEASE_ENDED, Reason::kLeaseEnded);
ZKE_SAME(ZKELECT_REASON_EXPIRED, Reason::kExpired);
ZKE_SAME(ZKELECT_REASON_NODE_DELETED, Reason::kNodeDeleted);
ZKE_SAME(ZKELECT_REASON_CLOSED, Reason::kClosed);
ZKE_SAME(ZKELECT_REASON_TRANSFERRED, Reason::kTransferred);
ZKE_SAME(ZKELECT_COUNTER_TERMS_WON, kTermsWon);
ZKE_SAME(ZKELECT_COUNTER_DEPOSED_RESIGNED, kDeposedResigned);
ZKE_SAME(ZKELECT_COUNTER_DEPOSED_SUSPENDED, kDeposedSuspended);
ZKE_SAME(ZKELECT_COUNTER_DEPOSED_LEASE_ENDED, kDeposedLeaseEnded);
ZKE_SAME(ZKELECT_COUNTER_DEPOSED_EXPIRED, kDeposedExpired);
ZKE_SAME(ZKELECT_COUNTER_DEPOSED_NODE_DELETED, kDeposedNodeDeleted);
ZKE_SAME(ZKELECT_COUNTER_DEPOSED_CLOSED, kDeposedClosed);
ZKE_SAME(ZKELECT_COUNTER_RECONNECTS, kReconnects);
ZKE_SAME(ZKELECT_COUNTER_EXPIRIES, kExpiries);
ZKE_SAME(ZKELECT_COUNTER_ZK_REQUESTS, kZkRequests);
ZKE_SAME(ZKELECT_COUNTER_KEEPALIVES, kKeepalives);
ZKE_SAME(ZKELECT_COUNTER_SEQUENCE_NEAR_WRAP, kSequenceNearWrap);
ZKE_SAME(ZKELECT_COUNTER_SESSION_TIMEOUT_BELOW_TWO_TICKS, kSessionTimeoutBelowTwoTicks);
ZKE_SAME(ZKELECT_COUNTER_CRASH_GUARD_WARNINGS, kCrashGuardWarnings);
ZKE_SAME(ZKELECT_COUNTER_LEASE_LOW, kLeaseLow);
ZKE_SAME(ZKELECT_COUNTER_BALANCE_MOVES, kBalanceMoves);
ZKE_SAME(ZKELECT_COUNTER__COUNT, kCounterCount);
// END gen/vocab.py same
ZKE_SAME(ZKELECT_EVENT_QUEUE_MAX, EventQueue::kMaxEvents);
// events.queue.max's default and most (gen/vocabulary.toml) is that bound.
ZKE_SAME(ZKELECT_EVENT_QUEUE_MAX, kDefaultEventsQueueMax);
#undef ZKE_SAME
