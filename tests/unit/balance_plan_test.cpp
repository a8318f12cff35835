// The balanced group's plan (cxx/balance/plan.h) and the member node's data
// (balancer.h): shares of floor or ceil of the mean, capped by what a
// member can lead; the fewest moves; every member computing the same plan
// from the same snapshot gives exactly the deficits; untrusted data refused.
#include <gtest/gtest.h>

#include <map>
#include <numeric>

#include "balancer.h"
#include "plan.h"

using zkelect::balance::GroupMember;
using zkelect::balance::gives_of;
using zkelect::balance::shares;

namespace {

// Every member's gives, applied: the counts after one round of the plan.
std::vector<int64_t> after_moves(const std::vector<GroupMember> &m) {
    std::map<int64_t, int64_t> delta;
    for (const GroupMember &g : m)
        for (auto give : gives_of(m, g.owner)) {
            delta[g.owner] -= give.count;
            delta[give.owner] += give.count;
        }
    std::vector<int64_t> out;
    for (const GroupMember &g : m) out.push_back(g.leading + delta[g.owner]);
    return out;
}

int64_t moves(const std::vector<GroupMember> &m) {
    int64_t n = 0;
    for (const GroupMember &g : m)
        for (auto give : gives_of(m, g.owner)) n += give.count;
    return n;
}

}  // namespace

TEST(BalancePlan, ThreeJoinedOneAfterTheOtherEndEven) {
    std::vector<GroupMember> m = {{"m1", 1, 3000, 3000}, {"m2", 2, 0, 3000}, {"m3", 3, 0, 3000}};
    EXPECT_EQ(shares(m), (std::vector<int64_t>{1000, 1000, 1000}));
    EXPECT_EQ(after_moves(m), (std::vector<int64_t>{1000, 1000, 1000}));
    EXPECT_EQ(moves(m), 2000);
}

TEST(BalancePlan, AFourthJoiningMovesOnlyItsShare) {
    std::vector<GroupMember> m = {
        {"m1", 1, 1000, 3000}, {"m2", 2, 1000, 3000}, {"m3", 3, 1000, 3000}, {"m4", 4, 0, 3000}};
    EXPECT_EQ(after_moves(m), (std::vector<int64_t>{750, 750, 750, 750}));
    EXPECT_EQ(moves(m), 750);
}

TEST(BalancePlan, TheCeilSharesStayWithThoseLeadingMost) {
    // 10 over 3: 4, 3, 3; the 4 is the one that leads most already.
    std::vector<GroupMember> m = {{"a", 1, 2, 10}, {"b", 2, 5, 10}, {"c", 3, 3, 10}};
    EXPECT_EQ(shares(m), (std::vector<int64_t>{3, 4, 3}));
    EXPECT_EQ(moves(m), 1);
    // Even already (floor or ceil each): nothing moves.
    m = {{"a", 1, 3, 10}, {"b", 2, 4, 10}, {"c", 3, 3, 10}};
    EXPECT_EQ(moves(m), 0);
}

TEST(BalancePlan, AMemberLeadsNoMoreThanItHasInLine) {
    // The newcomer has joined only 10 of its elections so far.
    std::vector<GroupMember> m = {{"a", 1, 300, 300}, {"b", 2, 0, 10}};
    EXPECT_EQ(shares(m), (std::vector<int64_t>{290, 10}));
    EXPECT_EQ(after_moves(m), (std::vector<int64_t>{290, 10}));
}

TEST(BalancePlan, GiversFillEachDeficitInNameOrder) {
    std::vector<GroupMember> m = {
        {"a", 1, 6, 9}, {"b", 2, 3, 9}, {"c", 3, 0, 9}, {"d", 4, 0, 9}};  // 9 over 4: 3,2,2,2
    auto g = gives_of(m, 1);
    ASSERT_EQ(g.size(), 2u);
    EXPECT_EQ(g[0].owner, 3);
    EXPECT_EQ(g[0].count, 2);
    EXPECT_EQ(g[1].owner, 4);
    EXPECT_EQ(g[1].count, 1);
    // b's ceil share is a's (a leads most): b gives its 1 to d.
    auto gb = gives_of(m, 2);
    ASSERT_EQ(gb.size(), 1u);
    EXPECT_EQ(gb[0].owner, 4);
    EXPECT_EQ(gb[0].count, 1);
    EXPECT_EQ(after_moves(m), (std::vector<int64_t>{3, 2, 2, 2}));
    EXPECT_TRUE(gives_of(m, 3).empty());
    EXPECT_TRUE(gives_of(m, 99).empty());  // not a member
}

TEST(BalancePlan, EmptyAndOneMemberGroupsMoveNothing) {
    EXPECT_TRUE(shares({}).empty());
    EXPECT_TRUE(gives_of({}, 1).empty());
    EXPECT_TRUE(gives_of({{"a", 1, 5, 5}}, 1).empty());
}

TEST(BalancePlan, MemberDataIsParsedStrictly) {
    int64_t l = -1, n = -1;
    EXPECT_TRUE(zkelect::balance::parse_member_data("zkelect-balance 1 3 7", &l, &n));
    EXPECT_EQ(l, 3);
    EXPECT_EQ(n, 7);
    EXPECT_EQ(zkelect::balance::member_data(3, 7), "zkelect-balance 1 3 7");
    // More leading than in line: in line is at least what it leads.
    EXPECT_TRUE(zkelect::balance::parse_member_data("zkelect-balance 1 9 7", &l, &n));
    EXPECT_EQ(n, 9);
    for (const char *bad : {"", "zkelect-balance 1 3", "zkelect-balance 2 3 7", "zkelect-balance 1 -3 7",
                            "zkelect-balance 1 3 7 ", "zkelect-balance 1 3  7", "zkelect-balance 1 x 7",
                            "zkelect-balance 1 999999999 7", "zkelect-balance 1 3 0x7"})
        EXPECT_FALSE(zkelect::balance::parse_member_data(bad, &l, &n)) << bad;
    EXPECT_TRUE(zkelect::balance::member_name("zkelect-member-0000000012"));
    EXPECT_TRUE(zkelect::balance::member_name("zkelect-member--2147483648"));
    for (const char *bad : {"zkelect-member-12", "zkelect-member-00000000x2", "_c_x-latch-0000000001",
                            "zkelect-member-00000000012"})
        EXPECT_FALSE(zkelect::balance::member_name(bad)) << bad;
}
