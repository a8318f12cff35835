// Pure functions about names: validation of what users pass in, the node
// layout shared with Curator's LeaderLatch, and the order of candidates.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zkelect {

// Each returns an empty string when the input is valid, else a message.
std::string check_election_path(std::string_view path);
std::string check_hosts(std::string_view hosts);
std::string check_participant_id(std::string_view id);

// A random UUID in its 36-character canonical form, of version 8 (RFC 9562's
// custom version; 122 random bits as in version 4). The version digit is how
// a transfer tells who reads its requests: Curator's LeaderLatch, and
// libzkelect before transfer, make version 4 uuids and never step back.
//
// Its first byte is the candidacy's priority (election.priority, 0..255;
// docs/semantics.md, "Preferred leaders"), so every reader of a listing
// knows each candidate's priority without reading anything more; the other
// 114 bits but the version's and the variant's are random.
std::string make_uuid(int priority = 0);
// A uuid's 16 bytes as make_uuid writes them (8-4-4-4-12 lowercase hex),
// and back: false for any other text.
std::string uuid_text(const unsigned char b[16]);
bool uuid_bytes(std::string_view text, unsigned char out[16]);

// True when name is a candidate node whose uuid says it steps back for a
// transfer (see make_uuid). Names come from ZooKeeper: any other shape is
// simply false.
bool steps_back(std::string_view name);

// The priority a candidate node's name carries (make_uuid): 0 for any name
// that does not step back (Curator's LeaderLatch, older libzkelect, names
// of any other shape).
int node_priority(std::string_view name);

// A transfer asked from outside (docs/semantics.md, "Transferring
// leadership"): the request an asker writes in the election path's data,
// and the outcome the leader writes back in its place. The tags differ from
// the leader's own marker ("zkelect-transfer"), so a candidate that only
// knows that one ignores both.
//   zkelect-transfer-request 1 <leader's node> <timeout ms> <target's id>
//   zkelect-transfer-result 1 <leader's node> <code> <target's id>
inline constexpr int kRequestTimeoutMaxMs = 600000;
struct TransferLine {
    std::string leader;  // a candidate node's name
    int number = 0;      // the timeout (request) or the code (result)
    std::string id;      // a valid participant id (it may hold spaces)
};
std::string transfer_request_text(const std::string &leader, int timeout_ms, const std::string &id);
std::string transfer_result_text(const std::string &leader, int code, const std::string &id);
// P's data is anyone's with WRITE on P: nothing unless exactly the shape,
// a candidate name, a timeout in 1..kRequestTimeoutMaxMs or a code in
// -99..0, and a valid id.
std::optional<TransferLine> parse_transfer_request(std::string_view data);
std::optional<TransferLine> parse_transfer_result(std::string_view data);

// Curator LeaderLatch with protection: "_c_<uuid>-latch-<seq>".
inline constexpr std::string_view kLatchMarker = "latch-";
std::string node_prefix(const std::string &uuid);  // "_c_<uuid>-latch-"

// The sequence after the last "latch-", or nothing when name is not a
// candidate node. Sequences are ZooKeeper's signed 32-bit counter ("%010d"),
// which wraps to -2147483648 after 2^31 creates.
std::optional<int32_t> parse_sequence(std::string_view name);

// True when name was created with this uuid (our protection marker).
bool has_uuid(std::string_view name, std::string_view uuid);

struct Candidate {
    std::string name;
    int32_t seq;
};

// The candidate nodes among children, earliest first. Order is by sequence
// in serial-number arithmetic, so it stays right across the wrap as long as
// the live candidates span fewer than 2^31 creates (they always do: each
// live node is one live session's).
std::vector<Candidate> order_candidates(const std::vector<std::string> &children);

// "/a/b" -> {"/a", "/a/b"}: every ancestor and path itself.
std::vector<std::string> path_prefixes(const std::string &path);

}  // namespace zkelect
