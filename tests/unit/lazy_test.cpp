// Lazy<C>: a candidacy's nearly always empty sets and maps cost a pointer
// until used (issue 35), and must behave as C where the candidacy uses them.
#include "lazy.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

using zkelect::Lazy;

TEST(Lazy, UnmadeIsEmptyAndItsLoopsRunNoTurn) {
    Lazy<std::map<std::string, std::string>> m;
    EXPECT_TRUE(m.empty());
    EXPECT_EQ(m.size(), 0u);
    EXPECT_EQ(m.count("a"), 0u);
    EXPECT_TRUE(m.find("a") == m.end());
    EXPECT_TRUE(m.begin() == m.end());
    EXPECT_EQ(m.erase("a"), 0u);
    int turns = 0;
    for (const auto &kv : m) turns += static_cast<int>(kv.first.size()) + 1;
    EXPECT_EQ(turns, 0);
}

TEST(Lazy, BehavesAsItsContainerOnceUsed) {
    Lazy<std::set<std::string>> s;
    EXPECT_TRUE(s.insert("x").second);
    EXPECT_FALSE(s.insert("x").second);
    EXPECT_TRUE(s.insert("y").second);
    EXPECT_EQ(s.size(), 2u);
    EXPECT_EQ(s.count("x"), 1u);
    EXPECT_EQ(s.erase("x"), 1u);
    EXPECT_EQ(s.size(), 1u);

    Lazy<std::map<std::string, std::string>> m;
    m["u1"] = "n1";
    m["u2"] = "";
    m["u3"] = "n1";
    // The candidacy's erase-while-walking (forget a name wherever it is).
    for (auto it = m.begin(); it != m.end();) it = it->second == "n1" ? m.erase(it) : std::next(it);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(m.begin()->first, "u2");
    auto f = m.find("u2");
    ASSERT_TRUE(f != m.end());
    f->second = "n2";
    EXPECT_EQ(m["u2"], "n2");
}

TEST(Lazy, ClearGivesTheMemoryBackAndItCanBeUsedAgain) {
    Lazy<std::set<std::string>> s;
    s.insert("a");
    s.clear();
    EXPECT_TRUE(s.empty());
    EXPECT_TRUE(s.begin() == s.end());
    s.insert("b");
    EXPECT_EQ(s.count("b"), 1u);
    EXPECT_EQ(sizeof(s), sizeof(void *));
}
