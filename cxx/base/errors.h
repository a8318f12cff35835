// Codes shared by the engine and the C boundary. The numbers are part of the
// ABI (capi/ static_asserts them against zkelect.h), so they live here as
// plain enums: the engine must not include the public header.
#pragma once

namespace zkelect {

enum Err : int {
    kOk = 0,
    kEInval = -1,
    kENoMem = -2,
    kEState = -3,
    kEClosed = -4,
    kETimedOut = -5,
    kEConnLoss = -6,
    kESessionExpired = -7,
    kEAuth = -8,
    kENotSup = -9,
    kEDeadlk = -10,
    kEZk = -11,
    kEInternal = -12,
    kENoLeader = -13,
    kERange = -14,
    kENotLeader = -15,
    kENoCandidate = -16,
    kETargetLost = -17,
    kELimit = -18,
    kEFenced = -19,
};

enum class EventType : int {
    kElected = 1,
    kDeposed = 2,
    kFollowing = 3,
    kSuspended = 4,
    kReconnected = 5,
    kExpired = 6,
    kLeaderChanged = 7,
    kError = 8,
    kResigned = 9,
    kOverflow = 10,
    kWarning = 11,
    kSteppedBack = 12,
    kLeaseLow = 13,
};

enum class Reason : int {
    kNone = 0,
    kResigned = 1,
    kSuspended = 2,
    kLeaseEnded = 3,
    kExpired = 4,
    kNodeDeleted = 5,
    kClosed = 6,
    kTransferred = 7,
};

enum Counter : int {
    kTermsWon = 0,
    kDeposedResigned = 1,
    kDeposedSuspended = 2,
    kDeposedLeaseEnded = 3,
    kDeposedExpired = 4,
    kDeposedNodeDeleted = 5,
    kDeposedClosed = 6,
    kReconnects = 7,
    kExpiries = 8,
    kZkRequests = 9,
    kKeepalives = 10,
    kSequenceNearWrap = 11,
    kSessionTimeoutBelowTwoTicks = 12,
    kCrashGuardWarnings = 13,
    kLeaseLow = 14,
    kBalanceMoves = 15,
    kCounterCount = 16,
};

// Map a ZooKeeper return code to the closest library code.
int err_from_zk(int zk_rc);

}  // namespace zkelect
