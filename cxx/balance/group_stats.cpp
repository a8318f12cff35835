#include "group_stats.h"

#include <cinttypes>
#include <cstdio>
#include <vector>

#include "balancer.h"
#include "stats_json.h"

namespace zkelect::balance {

namespace {
std::string session_hex(int64_t owner) {
    char b[24];
    std::snprintf(b, sizeof b, "0x%" PRIx64, uint64_t(owner));
    return b;
}
}  // namespace

int group_stats_json(Client &client, const std::string &group, int timeout_ms, std::string *json,
                     std::string *why) {
    std::vector<NodeRead> nodes;
    size_t unread = 0;
    int rc = client.read_children(group, timeout_ms, member_name, kGroupStatsMax, kMemberDataMax,
                                  &nodes, &unread, why);
    if (rc != kOk) return rc;
    std::string &o = *json;
    o += '{';
    json_key(o, "group");
    json_str(o, group);
    json_key(o, "members");
    o += '[';
    int64_t total = 0;
    for (const NodeRead &n : nodes) {
        int64_t leading = 0, in_line = 0;
        // As the balancer counts a member: held by a session, its data parsed.
        bool valid = n.stat.ephemeral_owner != 0 && parse_member_data(n.data, &leading, &in_line);
        if (o.back() == '}') o += ',';
        o += '{';
        json_key(o, "node");
        json_str(o, n.name);
        json_key(o, "session");
        json_str(o, session_hex(n.stat.ephemeral_owner));
        json_key(o, "valid");
        o += valid ? "true" : "false";
        if (valid) {
            json_int(o, "leading", leading);
            json_int(o, "in_line", in_line);
            total += leading;
        }
        o += '}';
    }
    o += ']';
    json_int(o, "leading", total);
    json_uint(o, "unread", unread);
    o += '}';
    return kOk;
}

}  // namespace zkelect::balance
