// NodesAhead: a follower's names ahead, kept as 20 bytes each when they are
// of our own shape and as text otherwise, always given back as they were.
#include "nodes_ahead.h"

#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <vector>

#include "names.h"

using namespace zkelect;

namespace {
std::vector<Candidate> listing(const std::vector<std::string> &names) {
    std::vector<Candidate> out;
    for (const auto &n : names) out.push_back({n, parse_sequence(n).value_or(0)});
    return out;
}
std::vector<std::string> drain(NodesAhead &a) {
    std::vector<std::string> out;
    for (int i = 0; i < 1000 && !a.empty(); ++i) out.push_back(a.pop_front());
    return out;
}
}  // namespace

TEST(NodesAhead, OurNamesPackAndComeBackExactly) {
    for (int prio : {0, 7, 255}) {
        std::string uuid = make_uuid(prio);
        for (const char *seq : {"0000000000", "0000000042", "2147483647", "-2147483648",
                                "-000000001"}) {
            std::string name = node_prefix(uuid) + seq;
            char packed[20];
            ASSERT_TRUE(pack_node_name(name, packed)) << name;
            EXPECT_EQ(unpack_node_name(packed), name);
        }
    }
}

TEST(NodesAhead, OtherShapesAreNotPacked) {
    std::string uuid = make_uuid();
    std::string upper = uuid;
    for (auto &c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    char packed[20];
    for (const std::string &name :
         {node_prefix(upper) + "0000000001",          // upper case hex
          node_prefix(uuid) + "1",                   // not "%010d"
          node_prefix(uuid) + "00000000001",          // eleven digits
          "_c_" + uuid + "-latch0000000001",          // no dash
          "x_c_" + uuid + "-latch-0000000001", "_c_" + uuid.substr(1) + "x-latch-0000000001",
          std::string("n_0000000001"), std::string(), std::string("_c_\0", 4)}) {
        EXPECT_FALSE(pack_node_name(name, packed)) << name;
    }
}

TEST(NodesAhead, NearestFirstWithinTheCount) {
    std::vector<std::string> names;
    for (int i = 0; i < 10; ++i) names.push_back(node_prefix(make_uuid()) + "000000000" + std::to_string(i));
    auto order = listing(names);
    NodesAhead a;
    EXPECT_TRUE(a.empty());
    a.assign(order, 6, 4);  // the four before order[6], nearest first
    EXPECT_EQ(drain(a), (std::vector<std::string>{names[5], names[4], names[3], names[2]}));
    a.assign(order, 2, 32);  // fewer there than asked for
    EXPECT_EQ(drain(a), (std::vector<std::string>{names[1], names[0]}));
    a.assign(order, 0, 32);
    EXPECT_TRUE(a.empty());
}

// What the packing is for: 32 names of our shape in 20 bytes each (as
// text, grown by appends, they took some 2.9 KB in every follower of a long
// queue; bench/memcand.c measured 8 KB a candidacy).
TEST(NodesAhead, ThirtyTwoOfOurNamesTakeTwentyBytesEach) {
    std::vector<std::string> names;
    for (int i = 0; i < 40; ++i) names.push_back(node_prefix(make_uuid()) + "00000001" + std::to_string(10 + i));
    NodesAhead a;
    a.assign(listing(names), 40, 32);
    EXPECT_LE(a.memory(), 32u * 20u);
    EXPECT_EQ(drain(a).size(), 32u);
}

TEST(NodesAhead, OneForeignNameKeepsTheListAsText) {
    std::vector<std::string> names = {node_prefix(make_uuid()) + "0000000001", "foreign-0000000002",
                                      node_prefix(make_uuid()) + "0000000003",
                                      node_prefix(make_uuid()) + "0000000004"};
    auto order = listing(names);
    NodesAhead a;
    a.assign(order, 4, 32);
    size_t text = 0;
    for (const auto &n : names) text += n.size() + 1;
    EXPECT_LE(a.memory(), text) << "sized once, not grown by appends";
    EXPECT_EQ(drain(a), (std::vector<std::string>{names[3], names[2], names[1], names[0]}));
    a.assign(order, 4, 32);
    a.clear();
    EXPECT_TRUE(a.empty());
}
