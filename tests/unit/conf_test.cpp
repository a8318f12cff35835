#include <gtest/gtest.h>

#include "conf.h"

using namespace zkelect;

TEST(Conf, UnknownKeyIsNamed) {
    Conf c;
    std::string why = c.set("zk.hostz", "a:1");
    EXPECT_NE(why.find("zk.hostz"), std::string::npos);
}

TEST(Conf, ValuesAreCheckedWhenSet) {
    Conf c;
    EXPECT_NE(c.set("zk.session.timeout.ms", "abc"), "");
    EXPECT_NE(c.set("zk.session.timeout.ms", "999"), "");
    EXPECT_EQ(c.set("zk.session.timeout.ms", "2000"), "");
    EXPECT_NE(c.set("leadership", "loose"), "");
    EXPECT_EQ(c.set("leadership", "strict"), "");
    EXPECT_NE(c.set("zk.auth", "nocolon"), "");
    EXPECT_NE(c.set("zk.hosts", "nohostport"), "");
    std::string v;
    ASSERT_TRUE(c.get("zk.session.timeout.ms", &v));
    EXPECT_EQ(v, "2000");
    ASSERT_TRUE(c.get("zk.connect.timeout.ms", &v));
    EXPECT_EQ(v, "15000");
    EXPECT_FALSE(c.get("nope", &v));
}

TEST(Conf, SettingsNeedHosts) {
    Conf c;
    Settings s;
    std::string why;
    EXPECT_FALSE(c.settings(&s, &why));
    EXPECT_NE(why.find("zk.hosts"), std::string::npos);
    ASSERT_EQ(c.set("zk.hosts", "127.0.0.1:2181"), "");
    ASSERT_EQ(c.set("election.acl", "creator"), "");
    EXPECT_FALSE(c.settings(&s, &why));  // creator needs zk.auth
    ASSERT_EQ(c.set("zk.auth", "digest:u:p"), "");
    ASSERT_TRUE(c.settings(&s, &why)) << why;
    EXPECT_EQ(s.auth_scheme, "digest");
    EXPECT_EQ(s.auth_credentials, "u:p");
    EXPECT_TRUE(s.acl_creator_only);
    EXPECT_EQ(s.log_level, 1) << "libzookeeper's INFO chatter is off unless asked for";
    ASSERT_EQ(c.set("zk.log.level", "keep"), "");
    ASSERT_TRUE(c.settings(&s, &why));
    EXPECT_EQ(s.log_level, -1);
}
