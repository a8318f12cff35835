// /zookeeper/config as ZooKeeper writes it, and as a hostile or broken
// server might: the client follows only a config it fully understands.
#include "ensemble_config.h"

#include <gtest/gtest.h>

using zkelect::chroot_of;
using zkelect::ensemble_client_hosts;
using zkelect::with_chroot;
using V = std::vector<std::string>;

TEST(EnsembleConfig, ClientAddressesInOrder) {
    EXPECT_EQ(ensemble_client_hosts("server.1=10.0.0.1:2888:3888:participant;10.0.0.1:2181\n"
                                    "server.2=zk2.example:2888:3888:observer;2182\n"
                                    "server.3=[fe80::1]:2888:3888;[fe80::1]:2183\n"
                                    "version=100000000"),
              (V{"10.0.0.1:2181", "zk2.example:2182", "[fe80::1]:2183"}));
}

TEST(EnsembleConfig, AWildcardClientAddressIsReachedAtTheServersAddress) {
    EXPECT_EQ(ensemble_client_hosts("server.1=zk1:2888:3888:participant;0.0.0.0:2181\n"
                                    "server.2=zk2:2888:3888:participant;[::]:2181\n"),
              (V{"zk1:2181", "zk2:2181"}));
}

TEST(EnsembleConfig, OtherKeysAreIgnoredAndDuplicatesDropped) {
    EXPECT_EQ(ensemble_client_hosts("group.1=1:2\nweight.1=1\n"
                                    "server.1=a:1:2;a:3\r\nserver.2=a:1:2;a:3\n\n"),
              (V{"a:3"}));
}

TEST(EnsembleConfig, AnythingNotUnderstoodGivesNothing) {
    // A server without a client address: the list would lose it.
    EXPECT_TRUE(ensemble_client_hosts("server.1=a:1:2;a:3\nserver.2=b:1:2\n").empty());
    EXPECT_TRUE(ensemble_client_hosts("server.1=a:1:2;a:0\n").empty());
    EXPECT_TRUE(ensemble_client_hosts("server.1=a:1:2;a:65536\n").empty());
    EXPECT_TRUE(ensemble_client_hosts("server.1=a:1:2;a,b:1\n").empty());
    EXPECT_TRUE(ensemble_client_hosts("server.1=a:1:2;a/x:1\n").empty());
    EXPECT_TRUE(ensemble_client_hosts("server.1=a:1:2;[zz]:1\n").empty());
    EXPECT_TRUE(ensemble_client_hosts("server.1a:1:2;a:1\n").empty());
    EXPECT_TRUE(ensemble_client_hosts(std::string("server.1=a:1:2;a:1\0", 20)).empty());
    EXPECT_TRUE(ensemble_client_hosts("version=1\n").empty());
    EXPECT_TRUE(ensemble_client_hosts("").empty());
    std::string big;
    for (int i = 0; i < 300; ++i)
        big += "server." + std::to_string(i) + "=h" + std::to_string(i) + ":1:2;h:" +
               std::to_string(i + 1) + "\n";
    EXPECT_TRUE(ensemble_client_hosts(big).empty());
    EXPECT_TRUE(ensemble_client_hosts(std::string(70000, 'x')).empty());
}

TEST(EnsembleConfig, TheChrootOfZkHostsIsKept) {
    EXPECT_EQ(chroot_of("a:1,b:2/app/x"), "/app/x");
    EXPECT_EQ(chroot_of("a:1"), "");
    EXPECT_EQ(with_chroot({"c:3", "d:4"}, "a:1,b:2/app"), "c:3,d:4/app");
    EXPECT_EQ(with_chroot({"c:3"}, "a:1"), "c:3");
}
