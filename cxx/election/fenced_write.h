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
// and Election::fenced_commit (the user's thread's side, which waits);
// fenced_commit_at is the same fence for a process that holds no
// candidacy but knows a leader's node and token (`zkelect fenced` under
// `zkelect run`): that node was elected (the caller says so), so while it
// stands no successor is, and the multi's check of it fences alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "zk_port.h"

namespace zkelect {

class Client;

// What a fenced multi's reply means (ops: the user's operations, the check
// not counted): kOk, kEFenced (the check failed: nothing committed),
// kEConnLoss / kESessionExpired (the outcome is unknown), kEAuth, kENotSup,
// or kEZk. *failed: the user's op refused (-1: none); *zk_rc: ZooKeeper's
// code behind the answer (0 for kOk). *why: a message for anything but kOk.
int fenced_outcome(const Reply &r, size_t ops, int *failed, int *zk_rc, std::string *why);

// A fenced write from a process that does not hold the candidacy (a
// command that `zkelect run` started, with its own session): ops committed
// in one multi behind a check of the leader's node `node` (a full path)
// only while it stands and is the node of the term whose token is `token`
// (its czxid). The node is read first, for its data version and czxid (a
// read that finds no node is asked again behind a sync, so that a server
// behind the quorum does not end a term that is not over); then the multi,
// whose check is what fences. Waits at most timeout_ms. Any thread but the
// client's loop (kEDeadlk). Codes as Election::fenced_commit's, but
// kENotLeader: a node that is gone or not the token's is kEFenced.
int fenced_commit_at(Client &client, const std::string &node, int64_t token,
                     std::vector<ZkOp> ops, int timeout_ms, int *failed, int *zk_rc,
                     std::string *why);

// The payload above which a fenced multi is refused before it is sent:
// ZooKeeper closes the connection on a request above its jute.maxbuffer
// (1 MiB by default), which would leave the write's outcome unknown.
constexpr size_t kFencedMaxBytes = 1000000;

}  // namespace zkelect
