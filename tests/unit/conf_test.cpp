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
    // The level is libzookeeper's process-wide one: a client leaves it alone
    // unless told (the log goes to zkelect_set_log_cb's callback, or nowhere).
    EXPECT_EQ(s.log_level, -1);
    ASSERT_EQ(c.set("zk.log.level", "debug"), "");
    ASSERT_TRUE(c.settings(&s, &why));
    EXPECT_EQ(s.log_level, 4);
}

// A default reaches a client from its row in gen/vocabulary.toml; a
// Settings made in code starts from its own initializers. They agree.
TEST(Conf, SettingsInitializersAreTheRowsDefaults) {
    Conf c;
    ASSERT_EQ(c.set("zk.hosts", "127.0.0.1:2181"), "");
    Settings s;
    std::string why;
    ASSERT_TRUE(c.settings(&s, &why)) << why;
    const Settings d;
    // BEGIN gen/vocab.py defaults
    EXPECT_EQ(d.session_timeout_ms, s.session_timeout_ms) << "zk.session.timeout.ms";
    EXPECT_EQ(d.connect_timeout_ms, s.connect_timeout_ms) << "zk.connect.timeout.ms";
    EXPECT_EQ(d.acl_creator_only, s.acl_creator_only) << "election.acl";
    EXPECT_EQ(d.priority, s.priority) << "election.priority";
    EXPECT_EQ(d.priority_holddown_ms, s.priority_holddown_ms) << "election.priority.holddown.ms";
    EXPECT_EQ(d.transfer_drain_ms, s.transfer_drain_ms) << "transfer.drain.ms";
    EXPECT_EQ(d.lease_warn_percent, s.lease_warn_percent) << "lease.warn.percent";
    EXPECT_EQ(d.leadership, s.leadership) << "leadership";
    EXPECT_EQ(d.session_nodes_max_bytes, s.session_nodes_max_bytes) << "zk.session.nodes.max.bytes";
    EXPECT_EQ(d.log_level, s.log_level) << "zk.log.level";
    EXPECT_EQ(d.probe_ticktime, s.probe_ticktime) << "zk.probe.ticktime";
    EXPECT_EQ(d.tls_hostname_verify, s.tls_hostname_verify) << "zk.tls.hostname.verify";
    EXPECT_EQ(d.follow_hosts, s.follow_hosts) << "zk.hosts.follow";
    EXPECT_EQ(d.guard, s.guard) << "crash.guard";
    EXPECT_EQ(d.guard_delay_ms, s.guard_delay_ms) << "crash.guard.delay.ms";
    EXPECT_EQ(d.sasl.service, s.sasl.service) << "zk.sasl.service";
    EXPECT_EQ(d.balance_moves_max, s.balance_moves_max) << "balance.moves.max";
    // END gen/vocab.py defaults
}

// zk.tls.* follow what the build found (a link test for zookeeper_init_ssl):
// without it a value is refused, naming the tunnel to use instead; an empty
// value (TLS off) is always fine.
TEST(Conf, TlsKeysFollowTheBuild) {
    Conf c;
    for (const char *k : {"zk.tls.ca", "zk.tls.cert", "zk.tls.key", "zk.tls.key.password"}) {
        EXPECT_EQ(c.set(k, ""), "") << k;
        std::string why = c.set(k, "/etc/zk/file.pem");
#ifdef ZKELECT_HAVE_ZK_TLS
        EXPECT_EQ(why, "") << k;
        EXPECT_FALSE(Conf::unsupported(k, "/etc/zk/file.pem"));
#else
        EXPECT_TRUE(Conf::unsupported(k, "/etc/zk/file.pem")) << k;
        EXPECT_NE(why.find(k), std::string::npos) << why;
        EXPECT_NE(why.find("zookeeper_init_ssl"), std::string::npos) << why;
        EXPECT_NE(why.find("stunnel"), std::string::npos) << why;
        std::string v;
        ASSERT_TRUE(c.get(k, &v));
        EXPECT_EQ(v, "") << "a refused value is not kept";
#endif
    }
    EXPECT_FALSE(Conf::unsupported("zk.hosts", "h:1"));
    EXPECT_FALSE(Conf::unsupported("zk.tls.ca", ""));
}

// zk.tls.ca alone is TLS without a client certificate (servers with
// ssl.clientAuth=none): the bundled client is patched for it
// (zkclient/patches/); cert and key go together; a system client, which
// always loads a certificate, refuses it up front.
#ifdef ZKELECT_HAVE_ZK_TLS
TEST(Conf, TlsWithOrWithoutAClientCertificate) {
    Conf c;
    Settings s;
    std::string why;
    ASSERT_EQ(c.set("zk.hosts", "h:1"), "");
    ASSERT_EQ(c.set("zk.tls.ca", "/ca.pem"), "");
#ifdef ZKELECT_HAVE_ZK_TLS_CA_ONLY
    ASSERT_TRUE(c.settings(&s, &why)) << why;
    EXPECT_EQ(s.tls, "/ca.pem");  // no empty fields: both of the client's parsers take it
#else
    EXPECT_FALSE(c.settings(&s, &why));
    EXPECT_NE(why.find("-Dzookeeper=bundled"), std::string::npos) << why;
#endif
    ASSERT_EQ(c.set("zk.tls.key.password", "pw"), "");
    EXPECT_FALSE(c.settings(&s, &why));
    EXPECT_NE(why.find("zk.tls.key.password"), std::string::npos) << why;
    ASSERT_EQ(c.set("zk.tls.cert", "/c.pem"), "");
    EXPECT_FALSE(c.settings(&s, &why));  // a certificate without its key
    EXPECT_NE(why.find("go together"), std::string::npos) << why;
    ASSERT_EQ(c.set("zk.tls.key", "/k.pem"), "");
    ASSERT_TRUE(c.settings(&s, &why)) << why;
    EXPECT_EQ(s.tls, "/ca.pem,/c.pem,/k.pem,pw");
    ASSERT_EQ(c.set("zk.tls.ca", ""), "");
    EXPECT_FALSE(c.settings(&s, &why));
    EXPECT_NE(why.find("TLS needs zk.tls.ca"), std::string::npos) << why;
}
#endif

// zk.sasl.*: what a client's settings make of them (the bundled client has
// SASL; a system build refuses the keys, tests/sasl/test_sasl.py).
#ifdef ZKELECT_HAVE_ZK_SASL
TEST(Conf, SaslSettings) {
    Conf c;
    Settings s;
    std::string why;
    ASSERT_EQ(c.set("zk.hosts", "zk1.example:2181,zk2.example:2181/app"), "");
    ASSERT_EQ(c.set("zk.sasl.user", "alice"), "");
    EXPECT_FALSE(c.settings(&s, &why));  // a user without a mechanism
    EXPECT_NE(why.find("zk.sasl.mechanism"), std::string::npos) << why;
    ASSERT_EQ(c.set("zk.sasl.mechanism", "DIGEST-MD5"), "");
    ASSERT_EQ(c.set("election.acl", "creator"), "");  // the SASL identity is one
    ASSERT_TRUE(c.settings(&s, &why)) << why;
    EXPECT_EQ(s.sasl.service, "zookeeper");
    EXPECT_EQ(s.sasl.host, "zk-sasl-md5");  // as ZooKeeper's Java client asks
    ASSERT_EQ(c.set("zk.sasl.mechanism", "GSSAPI"), "");
    ASSERT_TRUE(c.settings(&s, &why)) << why;
    EXPECT_EQ(s.sasl.host, "zk1.example");  // the first address's host
    ASSERT_EQ(c.set("zk.sasl.host", "zk.example"), "");
    ASSERT_TRUE(c.settings(&s, &why)) << why;
    EXPECT_EQ(s.sasl.host, "zk.example");
    EXPECT_NE(c.set("zk.sasl.user", std::string("a\nb")), "");
    EXPECT_TRUE(s.sasl.password.empty());  // read by sasl_check, not here
}
#endif
