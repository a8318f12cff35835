// A balanced group as seen from outside (zkelect_client_group_stats,
// `zkelect status --group`): its member nodes read now, each one's counts
// parsed as the balancer parses them, as one JSON document. Any client may
// ask, a member of the group or not; nothing is written.
#pragma once

#include <string>

#include "client.h"

namespace zkelect::balance {

// The most member nodes one query reads (the first by name; the rest are
// counted in "unread"): a path anyone can write to cannot make the answer
// unbounded.
constexpr size_t kGroupStatsMax = 4096;

// Appends the group's document to *json:
//   {"group":PATH,"members":[{"node":N,"session":"0x..","valid":true,
//    "leading":L,"in_line":M},...],"leading":TOTAL,"unread":K}
// in node order; a member whose data does not parse (or that no session
// holds) is {"node":N,"session":"0x..","valid":false}, counted in no total.
// A group path that does not exist has no members. Blocks up to
// timeout_ms on a user's thread (not the loop's). Returns kOk, or an error
// code with *why (Client::read_children's).
int group_stats_json(Client &client, const std::string &group, int timeout_ms, std::string *json,
                     std::string *why);

}  // namespace zkelect::balance
