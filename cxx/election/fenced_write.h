// Fenced ZooKeeper writes (docs/fencing.md, "Fenced ZooKeeper writes"): the
// user's operations and a version check of the leader's own candidate node,
// in one multi, so the quorum commits them only while that node stands.
//
// Why that is a fence: in this recipe no candidate is elected while a node
// ahead of it stands (a transfer's drain included), so a multi whose check
// of our node commits is ordered, in ZooKeeper's one commit order, before
// any successor's election and before every write of the successor's term.
// The check on the loop that this candidacy leads right now (a follower's
// node stands too) comes first; nothing is sent without it.
//
// The members defined here are Candidacy::fenced_write (the loop's side)
// and Election::fenced_commit (the user's thread's side, which waits).
#pragma once

#include <cstddef>
#include <string>

#include "zk_port.h"

namespace zkelect {

// What a fenced multi's reply means (ops: the user's operations, the check
// not counted): kOk, kEFenced (the check failed: nothing committed),
// kEConnLoss / kESessionExpired (the outcome is unknown), kEAuth, kENotSup,
// or kEZk. *failed: the user's op refused (-1: none); *zk_rc: ZooKeeper's
// code behind the answer (0 for kOk). *why: a message for anything but kOk.
int fenced_outcome(const Reply &r, size_t ops, int *failed, int *zk_rc, std::string *why);

// The payload above which a fenced multi is refused before it is sent:
// ZooKeeper closes the connection on a request above its jute.maxbuffer
// (1 MiB by default), which would leave the write's outcome unknown.
constexpr size_t kFencedMaxBytes = 1000000;

}  // namespace zkelect
