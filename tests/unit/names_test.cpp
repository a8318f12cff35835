#include <gtest/gtest.h>

#include <climits>
#include <set>

#include "names.h"

using namespace zkelect;

namespace {
std::string node(const std::string &uuid, const char *seq) { return node_prefix(uuid) + seq; }
std::vector<std::string> names(const std::vector<Candidate> &cs) {
    std::vector<std::string> out;
    for (auto &c : cs) out.push_back(c.name);
    return out;
}
}  // namespace

TEST(Sequence, ParsesCuratorNames) {
    EXPECT_EQ(parse_sequence("_c_0f8e8f52-1b1e-4a8b-9c33-1e2d3c4b5a69-latch-0000000007"), 7);
    EXPECT_EQ(parse_sequence("_c_x-latch-2147483647"), INT32_MAX);
    EXPECT_EQ(parse_sequence("_c_x-latch--2147483648"), INT32_MIN);
    // The uuid may not contain "latch-" but the last marker is what counts.
    EXPECT_EQ(parse_sequence("latch-1-latch-0000000002"), 2);
    EXPECT_FALSE(parse_sequence("lock-0000000001"));
    EXPECT_FALSE(parse_sequence("_c_x-latch-"));
    EXPECT_FALSE(parse_sequence("_c_x-latch-12a"));
    EXPECT_FALSE(parse_sequence("_c_x-latch-99999999999"));
}

TEST(Order, BySequenceNotByName) {
    // The uuid differs per node, so whole-name order would be random.
    auto got = order_candidates({node("ffff", "0000000003"), node("0000", "0000000005"),
                                 node("aaaa", "0000000001"), "unrelated-node"});
    EXPECT_EQ(names(got), (std::vector<std::string>{node("aaaa", "0000000001"),
                                                    node("ffff", "0000000003"),
                                                    node("0000", "0000000005")}));
}

TEST(Order, SurvivesTheWrap) {
    // After 2^31 creates the counter wraps to INT32_MIN; the wrapped nodes
    // are the newest and must sort last.
    auto got = order_candidates({node("c", "-2147483647"), node("a", "2147483646"),
                                 node("d", "-2147483648"), node("b", "2147483647")});
    EXPECT_EQ(names(got), (std::vector<std::string>{node("a", "2147483646"), node("b", "2147483647"),
                                                    node("d", "-2147483648"),
                                                    node("c", "-2147483647")}));
}

TEST(Order, WrapFromEveryStartingPoint) {
    // Whatever order the server lists them in, the result is the same.
    std::vector<std::string> in = {node("1", "2147483600"), node("2", "2147483647"),
                                   node("3", "-2147483648"), node("4", "-2147483000"),
                                   node("5", "-2147482000")};
    auto want = names(order_candidates(in));
    ASSERT_EQ(want.front(), node("1", "2147483600"));
    ASSERT_EQ(want.back(), node("5", "-2147482000"));
    std::sort(in.begin(), in.end());
    do {
        EXPECT_EQ(names(order_candidates(in)), want);
    } while (std::next_permutation(in.begin(), in.end()));
}

TEST(Order, MixedWithOtherRecipesAndCurator) {
    // Curator LeaderLatch nodes (same layout) and foreign children together.
    auto got = order_candidates({"_c_5c0e0b4e-2e1c-4b43-8d0e-2c61b3a0e7a1-latch-0000000010",
                                 "leader", "_c_1b4f...-lock-0000000001",
                                 node("mine", "0000000009")});
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].name, node("mine", "0000000009"));
}

TEST(Uuid, CanonicalAndFresh) {
    std::set<std::string> seen;
    for (int i = 0; i < 100; ++i) {
        std::string u = make_uuid();
        ASSERT_EQ(u.size(), 36u);
        EXPECT_EQ(u[8], '-');
        EXPECT_EQ(u[14], '8');  // version 8: this node steps back for a transfer
        EXPECT_TRUE(u[19] == '8' || u[19] == '9' || u[19] == 'a' || u[19] == 'b');
        EXPECT_TRUE(seen.insert(u).second);
        EXPECT_TRUE(has_uuid(node_prefix(u) + "0000000001", u));
        EXPECT_FALSE(has_uuid(node_prefix(u) + "0000000001", make_uuid()));
    }
}

TEST(Uuid, OnlyOurOwnNodesStepBack) {
    EXPECT_TRUE(steps_back(node_prefix(make_uuid()) + "0000000001"));
    // Curator's LeaderLatch (java.util.UUID.randomUUID: version 4).
    EXPECT_FALSE(steps_back("_c_3e95edc5-1e17-4e0c-8dd4-9c2bc3f2146c-latch-0000000001"));
    EXPECT_TRUE(steps_back("_c_3e95edc5-1e17-8e0c-8dd4-9c2bc3f2146c-latch-0000000001"));
    // Anything else ZooKeeper may list: never.
    EXPECT_FALSE(steps_back(""));
    EXPECT_FALSE(steps_back("latch-0000000001"));
    EXPECT_FALSE(steps_back("_c_8-latch-0000000001"));
    EXPECT_FALSE(steps_back("_c_3e95edc5-1e17-8e0c-8dd4-9c2bc3f2146c-latch-"));
    EXPECT_FALSE(steps_back("_c_3e95edc5-1e17-8e0c-8dd4-9c2bc3f2146cX-latch-0000000001"));
    EXPECT_FALSE(steps_back("_x_3e95edc5-1e17-8e0c-8dd4-9c2bc3f2146c-latch-0000000001"));
}

TEST(Uuid, CarriesThePriority) {
    for (int p : {0, 1, 7, 128, 255}) {
        std::string name = node_prefix(make_uuid(p)) + "0000000001";
        EXPECT_TRUE(steps_back(name));
        EXPECT_EQ(node_priority(name), p);
    }
    EXPECT_EQ(node_priority(node_prefix(make_uuid(300)) + "0000000001"), 255);
    // A version 4 uuid (Curator) has no priority, whatever its first byte.
    EXPECT_EQ(node_priority("_c_ff95edc5-1e17-4e0c-8dd4-9c2bc3f2146c-latch-0000000001"), 0);
    EXPECT_EQ(node_priority("_c_ff95edc5-1e17-8e0c-8dd4-9c2bc3f2146c-latch-0000000001"), 255);
    EXPECT_EQ(node_priority("latch-0000000001"), 0);
}

TEST(TransferLines, RoundTripAndRejectEverythingElse) {
    const std::string n = "_c_3e95edc5-1e17-8e0c-8dd4-9c2bc3f2146c-latch-0000000001";
    auto q = parse_transfer_request(transfer_request_text(n, 3000, "web 1"));
    ASSERT_TRUE(q.has_value());
    EXPECT_EQ(q->leader, n);
    EXPECT_EQ(q->number, 3000);
    EXPECT_EQ(q->id, "web 1");  // the id is the rest of the line: spaces kept
    auto r = parse_transfer_result(transfer_result_text(n, -17, "b"));
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->number, -17);
    // One shape is not the other.
    EXPECT_FALSE(parse_transfer_result(transfer_request_text(n, 3000, "b")));
    EXPECT_FALSE(parse_transfer_request(transfer_result_text(n, 0, "b")));
    for (const char *bad : {"", "zkelect-transfer-request", "zkelect-transfer-request 1",
                            "zkelect-transfer-request 1 x 3000 b",
                            "zkelect-transfer-request 2 NODE 3000 b",
                            "zkelect-transfer-request 1 NODE 0 b",
                            "zkelect-transfer-request 1 NODE -5 b",
                            "zkelect-transfer-request 1 NODE 03000 b",
                            "zkelect-transfer-request 1 NODE +3000 b",
                            "zkelect-transfer-request 1 NODE 600001 b",
                            "zkelect-transfer-request 1 NODE 3000 ",
                            "zkelect-transfer-request 1 NODE 3000 b\n",
                            "zkelect-transfer-request  1 NODE 3000 b",
                            "zkelect-transfer 1 NODE NODE asked b"}) {
        std::string line = bad;
        if (auto at = line.find("NODE"); at != std::string::npos) line.replace(at, 4, n);
        EXPECT_FALSE(parse_transfer_request(line)) << line;
    }
    EXPECT_FALSE(parse_transfer_result("zkelect-transfer-result 1 " + n + " 1 b"));
    EXPECT_FALSE(parse_transfer_result("zkelect-transfer-result 1 " + n + " -100 b"));
    EXPECT_FALSE(parse_transfer_request(transfer_request_text(n, 3000, std::string(1200, 'x'))));
}

TEST(Paths, Validation) {
    EXPECT_EQ(check_election_path("/svc/leader"), "");
    EXPECT_EQ(check_election_path("/a"), "");
    EXPECT_NE(check_election_path(""), "");
    EXPECT_NE(check_election_path("relative/path"), "");
    EXPECT_NE(check_election_path("/"), "");
    EXPECT_NE(check_election_path("/a//b"), "");
    EXPECT_NE(check_election_path("/a/"), "");
    EXPECT_NE(check_election_path("/a/./b"), "");
    EXPECT_NE(check_election_path("/a/../b"), "");
    EXPECT_NE(check_election_path("/zookeeper/x"), "");
    EXPECT_NE(check_election_path("/a\x01"), "");
    EXPECT_NE(check_election_path("/bad\xff"), "");
    // Found by fuzz_path_id: a NUL inside the path (reachable from C++ and
    // from bindings whose strings may hold one) was accepted.
    EXPECT_NE(check_election_path(std::string("/a\0b", 4)), "");
    EXPECT_NE(check_hosts(std::string("h:1/q\0x", 8)), "");
    EXPECT_EQ(path_prefixes("/a/b/c"), (std::vector<std::string>{"/a", "/a/b", "/a/b/c"}));
}

TEST(Hosts, Validation) {
    EXPECT_EQ(check_hosts("127.0.0.1:2181"), "");
    EXPECT_EQ(check_hosts("a:1,b:2,c:3/chroot/x"), "");
    EXPECT_EQ(check_hosts("[::1]:2181"), "");
    EXPECT_NE(check_hosts(""), "");
    EXPECT_NE(check_hosts("localhost"), "");
    EXPECT_NE(check_hosts("localhost:"), "");
    EXPECT_NE(check_hosts("localhost:99999"), "");
    EXPECT_NE(check_hosts("a:1,,b:2"), "");
    EXPECT_NE(check_hosts("a:1/bad//chroot"), "");
    EXPECT_NE(check_hosts(":2181"), "");
}

TEST(Ids, Validation) {
    EXPECT_EQ(check_participant_id("node-1"), "");
    EXPECT_EQ(check_participant_id("\xc3\xa9t\xc3\xa9"), "");
    EXPECT_EQ(check_participant_id(std::string(1024, 'x')), "");
    EXPECT_NE(check_participant_id(std::string(1025, 'x')), "");
    EXPECT_NE(check_participant_id("\xc3"), "");
    EXPECT_NE(check_participant_id("\xed\xa0\x80"), "");  // a lone surrogate
    // Empty and control characters (C0, DEL, C1) are refused; other
    // non-ASCII text, including the characters around them, is fine.
    EXPECT_NE(check_participant_id(""), "");
    EXPECT_NE(check_participant_id("evil\nLEADER fake token=1"), "");
    EXPECT_NE(check_participant_id("a\tb"), "");
    EXPECT_NE(check_participant_id("\x1b[31mred"), "");
    EXPECT_NE(check_participant_id("del\x7f"), "");
    EXPECT_NE(check_participant_id("c1\xc2\x85"), "");  // U+0085 NEL
    EXPECT_NE(check_participant_id("c1\xc2\x9f"), "");  // U+009F
    EXPECT_EQ(check_participant_id("\xc2\xa0nbsp ~"), "");  // U+00A0 is text
    EXPECT_EQ(check_participant_id(" "), "");
}
