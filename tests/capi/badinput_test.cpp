// Bad input to every public function: the documented code, a message that
// names the problem, and nothing left behind in ZooKeeper. Paths that must
// never be created carry "never" in their name; the pytest wrapper checks
// with its own ZooKeeper client that none exists after the run.
#include "capi_util.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <mutex>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

using namespace capi;

namespace {

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
}

// The message must be non-empty, NUL-terminated within errlen, and mention
// the word that names the problem.
void expect_message(const char *err, size_t errlen, const std::string &word,
                    const std::string &what) {
    size_t n = strnlen(err, errlen);
    EXPECT_LT(n, errlen) << what << ": errbuf not NUL-terminated";
    EXPECT_GT(n, 0u) << what << ": empty message";
    EXPECT_NE(lower(err).find(lower(word)), std::string::npos)
        << what << ": message \"" << err << "\" does not mention \"" << word << "\"";
}

struct NullCase {
    const char *name;
    std::function<int()> call;
    int expect;
};

void collect_cb(zkelect_election_t *, const zkelect_event_t *, void *) {}

class BadInput : public ::testing::Test {
  protected:
    void SetUp() override {
        client = new_client();
        ASSERT_TRUE(client);
    }
    // Count of candidate nodes at path, asked through another session.
    size_t nodes(const std::string &path) { return participants(client.get(), path).size(); }
    Client client;
};

}  // namespace

TEST_F(BadInput, NullHandlesAndPointers) {
    Election e = new_election(client.get(), fresh_path(), "x");
    ASSERT_TRUE(e);
    zkelect_conf_t *conf = zkelect_conf_new();
    ASSERT_NE(conf, nullptr);
    char buf[64];
    size_t len = sizeof buf;
    int64_t tok;
    uint64_t val;
    const int EINV = ZKELECT_EINVAL;
    std::vector<NullCase> cases = {
        {"conf_set(NULL conf)", [&] { return zkelect_conf_set(nullptr, "zk.hosts", "h:1", buf, sizeof buf); }, EINV},
        {"conf_set(NULL key)", [&] { return zkelect_conf_set(conf, nullptr, "h:1", buf, sizeof buf); }, EINV},
        {"conf_set(NULL value)", [&] { return zkelect_conf_set(conf, "zk.hosts", nullptr, buf, sizeof buf); }, EINV},
        {"conf_get(NULL conf)", [&] { return zkelect_conf_get(nullptr, "zk.hosts", buf, &len); }, EINV},
        {"conf_get(NULL key)", [&] { return zkelect_conf_get(conf, nullptr, buf, &len); }, EINV},
        {"conf_get(NULL len)", [&] { return zkelect_conf_get(conf, "zk.hosts", buf, nullptr); }, EINV},
        {"client_destroy(NULL)", [&] { return zkelect_client_destroy(nullptr); }, EINV},
        {"client_await_connected(NULL)", [&] { return zkelect_client_await_connected(nullptr, 10); }, EINV},
        {"client_is_connected(NULL)", [&] { return zkelect_client_is_connected(nullptr); }, 0},
        {"client_session_timeout_ms(NULL)", [&] { return zkelect_client_session_timeout_ms(nullptr); }, 0},
        {"client_session_id(NULL)", [&] { return int(zkelect_client_session_id(nullptr)); }, 0},
        {"client_counter(NULL client)", [&] { return zkelect_client_counter(nullptr, 0, &val); }, EINV},
        {"client_counter(NULL value)", [&] { return zkelect_client_counter(client.get(), 0, nullptr); }, EINV},
        {"client_counter(-1)", [&] { return zkelect_client_counter(client.get(), -1, &val); }, EINV},
        {"client_counter(COUNT)", [&] { return zkelect_client_counter(client.get(), ZKELECT_COUNTER__COUNT, &val); }, EINV},
        {"election_destroy(NULL)", [&] { return zkelect_election_destroy(nullptr); }, EINV},
        {"volunteer(NULL)", [&] { return zkelect_volunteer(nullptr); }, EINV},
        {"resign(NULL)", [&] { return zkelect_resign(nullptr); }, EINV},
        {"is_leader(NULL)", [&] { return zkelect_is_leader(nullptr); }, 0},
        {"await_leader(NULL)", [&] { return zkelect_await_leader(nullptr, 10); }, EINV},
        {"fencing_token(NULL e)", [&] { return zkelect_fencing_token(nullptr, &tok); }, EINV},
        {"fencing_token(NULL token)", [&] { return zkelect_fencing_token(e.get(), nullptr); }, EINV},
        {"leader_id(NULL e)", [&] { return zkelect_leader_id(nullptr, buf, sizeof buf); }, EINV},
        {"leader_id(NULL buf)", [&] { return zkelect_leader_id(e.get(), nullptr, 10); }, EINV},
        {"event_fd(NULL)", [&] { return zkelect_event_fd(nullptr); }, EINV},
        {"wake(NULL)", [&] { return zkelect_wake(nullptr); }, EINV},
        {"set_event_cb(NULL)", [&] { return zkelect_set_event_cb(nullptr, collect_cb, nullptr); }, EINV},
        {"dispatch(NULL)", [&] { return zkelect_dispatch(nullptr, 0); }, EINV},
        {"set_background_event_cb(NULL)", [&] { return zkelect_set_background_event_cb(nullptr, collect_cb, nullptr); }, EINV},
        {"observer_event_fd(NULL)", [&] { return zkelect_observer_event_fd(nullptr); }, EINV},
        {"observer_wake(NULL)", [&] { return zkelect_observer_wake(nullptr); }, EINV},
        {"observer_destroy(NULL)", [&] { return zkelect_observer_destroy(nullptr); }, EINV},
        {"event_type(NULL)", [&] { return zkelect_event_type(nullptr); }, 0},
        {"event_reason(NULL)", [&] { return zkelect_event_reason(nullptr); }, ZKELECT_REASON_NONE},
        {"event_token(NULL)", [&] { return int(zkelect_event_token(nullptr)); }, 0},
        {"event_error(NULL)", [&] { return zkelect_event_error(nullptr); }, 0},
        {"event_zk_rc(NULL)", [&] { return zkelect_event_zk_rc(nullptr); }, 0},
        {"event_time_ns(NULL)", [&] { return int(zkelect_event_time_ns(nullptr)); }, 0},
        {"participants_count(NULL)", [&] { return int(zkelect_participants_count(nullptr)); }, 0},
        {"participants_token(NULL)", [&] { return int(zkelect_participants_token(nullptr, 0)); }, 0},
        {"participants_ctime_ms(NULL)", [&] { return int(zkelect_participants_ctime_ms(nullptr, 0)); }, 0},
        {"participants_id(NULL) is NULL", [&] { return zkelect_participants_id(nullptr, 0) ? 1 : 0; }, 0},
        {"participants_node(NULL) is NULL", [&] { return zkelect_participants_node(nullptr, 0) ? 1 : 0; }, 0},
        {"next_event(NULL) is NULL", [&] { return zkelect_next_event(nullptr, 0) ? 1 : 0; }, 0},
        {"observer_next_event(NULL) is NULL", [&] { return zkelect_observer_next_event(nullptr, 0) ? 1 : 0; }, 0},
        {"counter_name(-1) is NULL", [&] { return zkelect_counter_name(-1) ? 1 : 0; }, 0},
        {"counter_name(COUNT) is NULL", [&] { return zkelect_counter_name(ZKELECT_COUNTER__COUNT) ? 1 : 0; }, 0},
    };
    for (auto &c : cases) EXPECT_EQ(c.call(), c.expect) << c.name;

    // NULL-tolerant frees and NULL-returning constructors, each with a message.
    zkelect_conf_destroy(nullptr);
    zkelect_event_destroy(nullptr);
    zkelect_participants_destroy(nullptr);
    char err[128];
    struct Ctor {
        const char *name;
        std::function<void *()> call;
        const char *word;
    };
    std::vector<Ctor> ctors = {
        {"client_new(NULL conf)", [&] { return (void *)zkelect_client_new(nullptr, err, sizeof err); }, "conf"},
        {"election_new(NULL client)", [&] { return (void *)zkelect_election_new(nullptr, (root() + "/never-a").c_str(), "x", err, sizeof err); }, "client"},
        {"election_new(NULL path)", [&] { return (void *)zkelect_election_new(client.get(), nullptr, "x", err, sizeof err); }, "path"},
        {"election_new(NULL id)", [&] { return (void *)zkelect_election_new(client.get(), (root() + "/never-nullid").c_str(), nullptr, err, sizeof err); }, "id"},
        {"observer_new(NULL client)", [&] { return (void *)zkelect_observer_new(nullptr, (root() + "/never-b").c_str(), err, sizeof err); }, "client"},
        {"observer_new(NULL path)", [&] { return (void *)zkelect_observer_new(client.get(), nullptr, err, sizeof err); }, "path"},
        {"client_participants(NULL client)", [&] { return (void *)zkelect_client_participants(nullptr, (root() + "/never-c").c_str(), err, sizeof err); }, "client"},
        {"client_participants(NULL path)", [&] { return (void *)zkelect_client_participants(client.get(), nullptr, err, sizeof err); }, "path"},
        {"participants(NULL election)", [&] { return (void *)zkelect_participants(nullptr, err, sizeof err); }, "election"},
    };
    for (auto &c : ctors) {
        err[0] = '\0';
        EXPECT_EQ(c.call(), nullptr) << c.name;
        expect_message(err, sizeof err, c.word, c.name);
    }
    // No errbuf at all, and a tiny one: still no crash, still NUL-terminated.
    EXPECT_EQ(zkelect_client_new(nullptr, nullptr, 0), nullptr);
    EXPECT_EQ(zkelect_election_new(client.get(), "bad", "x", nullptr, 100), nullptr);
    char tiny[6];
    memset(tiny, 'Z', sizeof tiny);
    EXPECT_EQ(zkelect_election_new(client.get(), "bad", "x", tiny, sizeof tiny), nullptr);
    EXPECT_LT(strnlen(tiny, sizeof tiny), sizeof tiny) << "truncated message not NUL-terminated";
    char one = 'Z';
    EXPECT_EQ(zkelect_election_new(client.get(), "bad", "x", &one, 1), nullptr);
    EXPECT_EQ(one, '\0');
    zkelect_conf_destroy(conf);
}

TEST_F(BadInput, BadPaths) {
    std::string r = root();
    const std::vector<std::pair<std::string, std::string>> bad = {
        {"", "empty"},
        {"relative/x", "absolute"},
        {"never-rel", "absolute"},
        {"/", "root"},
        {r + "//never-dbl", "//"},
        {r + "/never-a//b", "//"},
        {r + "/never-trail/", "end"},
        {r + "/never-dot/./x", "."},
        {r + "/never-dotdot/../x", ".."},
        {"/zookeeper", "/zookeeper"},
        {"/zookeeper/x", "/zookeeper"},
        {"/zookeeper/config", "/zookeeper"},
        {r + "/never-\xff", "utf-8"},
        {r + "/never-ctl\x01", "character"},
    };
    for (auto &b : bad) {
        const std::string what = "path \"" + b.first + "\"";
        char err[256];
        err[0] = '\0';
        EXPECT_EQ(zkelect_election_new(client.get(), b.first.c_str(), "x", err, sizeof err), nullptr)
            << what;
        expect_message(err, sizeof err, "path", "election_new " + what);
        expect_message(err, sizeof err, b.second, "election_new " + what);
        err[0] = '\0';
        EXPECT_EQ(zkelect_observer_new(client.get(), b.first.c_str(), err, sizeof err), nullptr) << what;
        expect_message(err, sizeof err, "path", "observer_new " + what);
        err[0] = '\0';
        EXPECT_EQ(zkelect_client_participants(client.get(), b.first.c_str(), err, sizeof err), nullptr)
            << what;
        expect_message(err, sizeof err, "path", "client_participants " + what);
    }
}

TEST_F(BadInput, BadConnectStrings) {
    // Loopback hosts where the point is the syntax, so that a resolver
    // failure cannot stand in for the check under test.
    const std::vector<std::string> bad = {
        "",
        "nohostport",
        "127.0.0.1:",
        ":2181",
        "127.0.0.1:port",
        "127.0.0.1:0",
        "127.0.0.1:65536",
        "127.0.0.1:99999",
        "127.0.0.1:-1",
        "127.0.0.1:1,,127.0.0.1:2",
        ",",
        "127.0.0.1:1//x",
        "127.0.0.1:1/zookeeper",
        "127.0.0.1:1/a/",
        "127.0.0.1:1/a/../b",
        "[::1:2181",
        "no-such-host.invalid:2181",
    };
    for (auto &h : bad) {
        const std::string what = "zk.hosts \"" + h + "\"";
        zkelect_conf_t *conf = zkelect_conf_new();
        ASSERT_NE(conf, nullptr);
        char err[256] = "";
        int rc = zkelect_conf_set(conf, "zk.hosts", h.c_str(), err, sizeof err);
        if (rc == 0) {
            // Accepted as a string: client_new must refuse it.
            zkelect_client_t *c = zkelect_client_new(conf, err, sizeof err);
            EXPECT_EQ(c, nullptr) << what << " made a client";
            if (c) zkelect_client_destroy(c);
        } else {
            EXPECT_EQ(rc, ZKELECT_EINVAL) << what;
        }
        size_t n = strnlen(err, sizeof err);
        EXPECT_GT(n, 0u) << what << ": no message";
        EXPECT_TRUE(lower(err).find("zk.hosts") != std::string::npos ||
                    lower(err).find("connect string") != std::string::npos)
            << what << ": message \"" << err << "\" names neither zk.hosts nor the connect string";
        zkelect_conf_destroy(conf);
    }
    // zk.hosts never set.
    zkelect_conf_t *conf = zkelect_conf_new();
    char err[256] = "";
    EXPECT_EQ(zkelect_client_new(conf, err, sizeof err), nullptr);
    expect_message(err, sizeof err, "zk.hosts", "no zk.hosts");
    // creator ACL without auth.
    ASSERT_EQ(zkelect_conf_set(conf, "zk.hosts", hosts().c_str(), err, sizeof err), 0);
    ASSERT_EQ(zkelect_conf_set(conf, "election.acl", "creator", err, sizeof err), 0);
    err[0] = '\0';
    EXPECT_EQ(zkelect_client_new(conf, err, sizeof err), nullptr);
    expect_message(err, sizeof err, "zk.auth", "creator acl without zk.auth");
    zkelect_conf_destroy(conf);
}

TEST_F(BadInput, ConfKeysAndValues) {
    zkelect_conf_t *conf = zkelect_conf_new();
    ASSERT_NE(conf, nullptr);
    char err[256];
    const std::vector<std::pair<std::string, std::string>> bad = {
        {"zk.nope", "1"},
        {"", "1"},
        {"ZK.HOSTS", "h:1"},
        {"zk.session.timeout.ms", ""},
        {"zk.session.timeout.ms", "0"},
        {"zk.session.timeout.ms", "999"},
        {"zk.session.timeout.ms", "3600001"},
        {"zk.session.timeout.ms", "-5"},
        {"zk.session.timeout.ms", "10ms"},
        {"zk.session.timeout.ms", "abc"},
        {"zk.session.timeout.ms", "99999999999999999999"},
        {"zk.connect.timeout.ms", "0"},
        {"zk.connect.timeout.ms", "x"},
        {"zk.auth", "nocolon"},
        {"election.acl", "everyone"},
        {"leadership", "maybe"},
        {"leadership", "LEASE"},
        {"lease.margin.ms", "-1"},
        {"lease.margin.ms", "0"},
        {"lease.margin.ms", "60001"},
        {"zk.log.level", "loud"},
        {"zk.session.nodes.max.bytes", ""},
        {"zk.session.nodes.max.bytes", "-1"},
        {"zk.session.nodes.max.bytes", "1MB"},
        {"zk.session.nodes.max.bytes", "2147483648"},
        {"zk.session.nodes.max.bytes", "1e6"},
        {"events.queue.max", ""},
        {"events.queue.max", "-1"},
        {"events.queue.max", "1"},  // room for the OVERFLOW marker alone
        {"events.queue.max", "1025"},
    };
    for (auto &kv : bad) {
        const std::string what = kv.first + "=\"" + kv.second + "\"";
        size_t len = 0;
        char before[256] = "";
        bool known = zkelect_conf_get(conf, kv.first.c_str(), nullptr, &len) != ZKELECT_EINVAL;
        if (known) {
            len = sizeof before;
            ASSERT_EQ(zkelect_conf_get(conf, kv.first.c_str(), before, &len), 0) << what;
        }
        err[0] = '\0';
        EXPECT_EQ(zkelect_conf_set(conf, kv.first.c_str(), kv.second.c_str(), err, sizeof err),
                  ZKELECT_EINVAL)
            << what;
        expect_message(err, sizeof err, kv.first.empty() ? "key" : kv.first, what);
        if (known) {
            char after[256] = "";
            len = sizeof after;
            ASSERT_EQ(zkelect_conf_get(conf, kv.first.c_str(), after, &len), 0);
            EXPECT_STREQ(after, before) << what << " changed the conf";
        }
    }
    // conf_get: unknown key, buffer too small (untouched, needed size told).
    ASSERT_EQ(zkelect_conf_set(conf, "zk.hosts", "127.0.0.1:1", err, sizeof err), 0);
    char buf[4];
    memset(buf, 'Q', sizeof buf);
    size_t len = sizeof buf;
    EXPECT_EQ(zkelect_conf_get(conf, "zk.hosts", buf, &len), ZKELECT_ERANGE);
    EXPECT_EQ(len, strlen("127.0.0.1:1") + 1);
    EXPECT_EQ(buf[0], 'Q');
    len = 4;
    EXPECT_EQ(zkelect_conf_get(conf, "zk.nope", buf, &len), ZKELECT_EINVAL);
    char ok[32];
    len = sizeof ok;
    EXPECT_EQ(zkelect_conf_get(conf, "zk.hosts", ok, &len), 0);
    EXPECT_STREQ(ok, "127.0.0.1:1");
    // Good values are taken.
    for (auto kv : std::vector<std::pair<const char *, const char *>>{
             {"zk.session.timeout.ms", "1000"}, {"zk.session.timeout.ms", "3600000"},
             {"leadership", "strict"}, {"lease.margin.ms", "1"}, {"zk.log.level", "keep"},
             {"election.acl", "creator"}, {"zk.auth", "digest:u:p"},
             {"zk.session.nodes.max.bytes", "0"}, {"zk.session.nodes.max.bytes", "2147483647"},
             {"zk.session.nodes.max.bytes", "1000000"}, {"events.queue.max", "0"},
             {"events.queue.max", "2"}, {"events.queue.max", "1024"}}) {
        EXPECT_EQ(zkelect_conf_set(conf, kv.first, kv.second, err, sizeof err), 0)
            << kv.first << "=" << kv.second << ": " << err;
    }
    zkelect_conf_destroy(conf);
}

// Debian's libzookeeper-mt has no TLS: the zk.tls.* keys say so with
// ENOTSUP and name the alternative; a build that has it takes them.
TEST_F(BadInput, TlsKeysWithoutTlsAreEnotsup) {
    zkelect_conf_t *conf = zkelect_conf_new();
    ASSERT_NE(conf, nullptr);
    for (const char *k : {"zk.tls.ca", "zk.tls.cert", "zk.tls.key", "zk.tls.key.password"}) {
        char err[512] = "";
        EXPECT_EQ(zkelect_conf_set(conf, k, "", err, sizeof err), 0) << k << ": " << err;
        int rc = zkelect_conf_set(conf, k, "/etc/zk/f.pem", err, sizeof err);
        if (rc == 0) continue;  // a libzookeeper with zookeeper_init_ssl
        EXPECT_EQ(rc, ZKELECT_ENOTSUP) << k << ": " << zkelect_err_name(rc);
        expect_message(err, sizeof err, k, k);
        expect_message(err, sizeof err, "tunnel", k);
    }
    zkelect_conf_destroy(conf);
}

TEST_F(BadInput, BadParticipantIds) {
    std::string path = fresh_path("never-ids");
    const std::vector<std::pair<std::string, std::string>> bad = {
        {std::string(ZKELECT_ID_MAX + 1, 'a'), "ZKELECT_ID_MAX"},
        {std::string(ZKELECT_ID_MAX + 1000, 'b'), "ZKELECT_ID_MAX"},
        {"\xff", "utf-8"},
        {"ab\xc3", "utf-8"},           // truncated sequence
        {"\xc0\xaf", "utf-8"},         // overlong '/'
        {"\xed\xa0\x80", "utf-8"},     // surrogate
        {"\xf4\x90\x80\x80", "utf-8"}, // above U+10FFFF
        {"\x80", "utf-8"},             // lone continuation
        {"", "empty"},
        {"evil\nLEADER fake token=1", "control character"},
        {"tab\there", "control character"},
        {"cr\r", "control character"},
        {"\x1b[2J", "control character"},  // an escape sequence
        {"del\x7f", "control character"},
        {"nel\xc2\x85", "control character"},  // U+0085, a C1 line break
    };
    for (auto &b : bad) {
        char err[256] = "";
        EXPECT_EQ(zkelect_election_new(client.get(), path.c_str(), b.first.c_str(), err, sizeof err),
                  nullptr)
            << "id of " << b.first.size() << " bytes";
        expect_message(err, sizeof err, "participant id", "id " + b.second);
        expect_message(err, sizeof err, b.second, "id " + b.second);
    }
    EXPECT_EQ(nodes(path), 0u);

    // Exactly ZKELECT_ID_MAX bytes (multi-byte UTF-8 included) is fine, and
    // leader_id returns it whole; one byte short of room is ERANGE.
    std::string good = fresh_path();
    std::string id(ZKELECT_ID_MAX - 2, 'x');
    id += "\xc3\xa9";
    ASSERT_EQ(id.size(), size_t(ZKELECT_ID_MAX));
    Election e = new_election(client.get(), good, id);
    ASSERT_TRUE(e);
    ASSERT_EQ(zkelect_volunteer(e.get()), 0);
    ASSERT_TRUE(wait_event(e.get(), ZKELECT_EV_ELECTED, 10000));
    std::vector<char> buf(ZKELECT_ID_MAX + 1);
    ASSERT_EQ(zkelect_leader_id(e.get(), buf.data(), buf.size()), 0);
    EXPECT_EQ(std::string(buf.data()), id);
    EXPECT_EQ(zkelect_leader_id(e.get(), buf.data(), buf.size() - 1), ZKELECT_ERANGE);
    EXPECT_EQ(zkelect_leader_id(e.get(), buf.data(), 0), ZKELECT_ERANGE);
    auto ps = participants(client.get(), good);
    ASSERT_EQ(ps.size(), 1u);
    EXPECT_EQ(ps[0].id, id);
}

TEST_F(BadInput, WrongStateCalls) {
    std::string path = fresh_path();
    Election e = new_election(client.get(), path, "s");
    ASSERT_TRUE(e);
    char buf[64];
    int64_t tok = 0;
    // Idle.
    EXPECT_EQ(zkelect_resign(e.get()), ZKELECT_ESTATE) << "resign before volunteer";
    EXPECT_EQ(zkelect_await_leader(e.get(), 10), ZKELECT_ESTATE);
    EXPECT_EQ(zkelect_fencing_token(e.get(), &tok), ZKELECT_ENOTLEADER);
    EXPECT_EQ(zkelect_leader_id(e.get(), buf, sizeof buf), ZKELECT_ENOLEADER);
    EXPECT_EQ(zkelect_dispatch(e.get(), 0), ZKELECT_ESTATE) << "dispatch without a callback";
    EXPECT_EQ(nodes(path), 0u);

    ASSERT_EQ(zkelect_volunteer(e.get()), 0);
    EXPECT_EQ(zkelect_volunteer(e.get()), ZKELECT_ESTATE) << "volunteer twice";
    ASSERT_TRUE(wait_event(e.get(), ZKELECT_EV_ELECTED, 10000));
    EXPECT_EQ(zkelect_volunteer(e.get()), ZKELECT_ESTATE) << "volunteer while leader";
    EXPECT_EQ(zkelect_client_destroy(client.get()), ZKELECT_ESTATE) << "client with a live election";
    EXPECT_EQ(zkelect_client_is_connected(client.get()), 1) << "the refused destroy did something";
    EXPECT_EQ(zkelect_leader_id(e.get(), buf, 1), ZKELECT_ERANGE);
    EXPECT_EQ(zkelect_leader_id(e.get(), buf, 0), ZKELECT_ERANGE);
    EXPECT_EQ(nodes(path), 1u);

    ASSERT_EQ(zkelect_resign(e.get()), 0);
    EXPECT_EQ(zkelect_resign(e.get()), ZKELECT_ESTATE) << "resign twice";
    // A volunteer while the resign runs queues behind it (1.2); a resign
    // before its node is made cancels it again.
    EXPECT_EQ(zkelect_volunteer(e.get()), 0) << "volunteer while the resign runs";
    EXPECT_EQ(zkelect_volunteer(e.get()), ZKELECT_ESTATE) << "volunteer twice while resigning";
    EXPECT_EQ(zkelect_is_leader(e.get()), 0) << "a queued volunteer leads";
    ASSERT_EQ(zkelect_resign(e.get()), 0) << "resign of the queued volunteer";
    EXPECT_EQ(zkelect_fencing_token(e.get(), &tok), ZKELECT_ENOTLEADER) << "after resign";
    EXPECT_EQ(zkelect_await_leader(e.get(), 100), ZKELECT_ESTATE) << "after resign";
    EXPECT_EQ(zkelect_is_leader(e.get()), 0);
    ASSERT_TRUE(wait_event(e.get(), ZKELECT_EV_RESIGNED, 5000));
    EXPECT_EQ(zkelect_resign(e.get()), ZKELECT_ESTATE) << "resign after RESIGNED";
    EXPECT_EQ(zkelect_fencing_token(e.get(), &tok), ZKELECT_ENOTLEADER);
    EXPECT_EQ(zkelect_await_leader(e.get(), 0), ZKELECT_ESTATE);
    EXPECT_EQ(zkelect_leader_id(e.get(), buf, sizeof buf), ZKELECT_ENOLEADER);
    EXPECT_EQ(nodes(path), 0u);

    // Background callback excludes the dispatch callback.
    ASSERT_EQ(zkelect_set_background_event_cb(e.get(), collect_cb, nullptr), 0);
    EXPECT_EQ(zkelect_set_event_cb(e.get(), collect_cb, nullptr), ZKELECT_ESTATE);
    ASSERT_EQ(zkelect_set_background_event_cb(e.get(), nullptr, nullptr), 0);
    EXPECT_EQ(zkelect_set_event_cb(e.get(), collect_cb, nullptr), 0);
    EXPECT_EQ(zkelect_dispatch(e.get(), 0), 0);
    EXPECT_EQ(zkelect_set_event_cb(e.get(), nullptr, nullptr), 0);
    EXPECT_EQ(zkelect_dispatch(e.get(), 0), ZKELECT_ESTATE);

    // Counters: every name, every value readable.
    for (int k = 0; k < ZKELECT_COUNTER__COUNT; ++k) {
        uint64_t v = 0;
        EXPECT_EQ(zkelect_client_counter(client.get(), k, &v), 0) << k;
        ASSERT_NE(zkelect_counter_name(k), nullptr) << k;
        EXPECT_GT(strlen(zkelect_counter_name(k)), 0u);
    }
    uint64_t v = 0;
    ASSERT_EQ(zkelect_client_counter(client.get(), ZKELECT_COUNTER_DEPOSED_RESIGNED, &v), 0);
    EXPECT_EQ(v, 1u);
    EXPECT_STREQ(zkelect_counter_name(ZKELECT_COUNTER_TERMS_WON), "terms_won");
}

TEST_F(BadInput, TransferCodesAndMessages) {
    std::string path = fresh_path();
    Election a = new_election(client.get(), path, "a");
    Election b = new_election(client.get(), path, "b");
    ASSERT_TRUE(a && b);
    auto check = [](int rc, int want, const char *word, const char *what) {
        EXPECT_EQ(rc, want) << what << ": " << zkelect_err_name(rc);
        std::string why = zkelect_last_error();
        EXPECT_NE(lower(why).find(word), std::string::npos) << what << ": \"" << why << "\"";
    };
    check(zkelect_transfer(nullptr, "b", 100), ZKELECT_EINVAL, "invalid", "NULL election");
    check(zkelect_transfer(a.get(), nullptr, 100), ZKELECT_EINVAL, "target_id", "NULL target");
    check(zkelect_transfer(a.get(), "", 100), ZKELECT_EINVAL, "target_id", "empty id");
    check(zkelect_transfer(a.get(), "b\x01", 100), ZKELECT_EINVAL, "target_id", "control char");
    check(zkelect_transfer(a.get(), "b", 0), ZKELECT_EINVAL, "timeout", "timeout 0");
    check(zkelect_transfer(a.get(), "b", -1), ZKELECT_EINVAL, "timeout", "timeout -1");
    check(zkelect_transfer(a.get(), "a", 100), ZKELECT_EINVAL, "own id", "own id");
    check(zkelect_transfer(a.get(), "b", 100), ZKELECT_ENOTLEADER, "leader", "idle");
    ASSERT_EQ(zkelect_volunteer(a.get()), 0);
    ASSERT_TRUE(wait_event(a.get(), ZKELECT_EV_ELECTED, 10000));
    ASSERT_EQ(zkelect_volunteer(b.get()), 0);
    ASSERT_TRUE(wait_event(b.get(), ZKELECT_EV_FOLLOWING, 10000));
    check(zkelect_transfer(b.get(), "a", 100), ZKELECT_ENOTLEADER, "leader", "follower");
    check(zkelect_transfer(a.get(), "nobody", 1000), ZKELECT_ENOCANDIDATE, "candidate",
          "unknown id");
    EXPECT_EQ(zkelect_is_leader(a.get()), 1) << "a refused transfer changed the leader";
    EXPECT_EQ(nodes(path), 2u);
}

TEST(ErrorText, EveryCodeHasANameAndDescription) {
    const std::map<int, const char *> names = {
        // BEGIN gen/vocab.py error names
        {ZKELECT_OK, "ZKELECT_OK"},
        {ZKELECT_EINVAL, "ZKELECT_EINVAL"},
        {ZKELECT_ENOMEM, "ZKELECT_ENOMEM"},
        {ZKELECT_ESTATE, "ZKELECT_ESTATE"},
        {ZKELECT_ECLOSED, "ZKELECT_ECLOSED"},
        {ZKELECT_ETIMEDOUT, "ZKELECT_ETIMEDOUT"},
        {ZKELECT_ECONNLOSS, "ZKELECT_ECONNLOSS"},
        {ZKELECT_ESESSION_EXPIRED, "ZKELECT_ESESSION_EXPIRED"},
        {ZKELECT_EAUTH, "ZKELECT_EAUTH"},
        {ZKELECT_ENOTSUP, "ZKELECT_ENOTSUP"},
        {ZKELECT_EDEADLK, "ZKELECT_EDEADLK"},
        {ZKELECT_EZK, "ZKELECT_EZK"},
        {ZKELECT_EINTERNAL, "ZKELECT_EINTERNAL"},
        {ZKELECT_ENOLEADER, "ZKELECT_ENOLEADER"},
        {ZKELECT_ERANGE, "ZKELECT_ERANGE"},
        {ZKELECT_ENOTLEADER, "ZKELECT_ENOTLEADER"},
        {ZKELECT_ENOCANDIDATE, "ZKELECT_ENOCANDIDATE"},
        {ZKELECT_ETARGET_LOST, "ZKELECT_ETARGET_LOST"},
        {ZKELECT_ELIMIT, "ZKELECT_ELIMIT"},
        {ZKELECT_EFENCED, "ZKELECT_EFENCED"},
        // END gen/vocab.py error names
    };
    std::set<std::string> texts;
    for (auto &kv : names) {
        EXPECT_STREQ(zkelect_err_name(kv.first), kv.second);
        const char *s = zkelect_strerror(kv.first);
        ASSERT_NE(s, nullptr);
        EXPECT_GT(strlen(s), 3u) << kv.second;
        EXPECT_STRNE(s, "unknown error") << kv.second;
        texts.insert(s);
    }
    EXPECT_EQ(texts.size(), names.size()) << "two codes share a description";
    // One below the lowest code is the first the library does not know (the
    // codes run down from -1; gen/vocabulary.toml appends each new one below).
    const int below_lowest = names.begin()->first - 1;
    for (int unknown : {1, below_lowest, -99, 12345, INT32_MIN}) {
        EXPECT_STREQ(zkelect_err_name(unknown), "ZKELECT_EUNKNOWN") << unknown;
        EXPECT_STREQ(zkelect_strerror(unknown), "unknown error") << unknown;
    }
    for (int t = ZKELECT_EV_ELECTED; t <= ZKELECT_EV_RESIGNED; ++t)
        EXPECT_STRNE(zkelect_event_type_name(t), "UNKNOWN") << t;
    EXPECT_STREQ(zkelect_event_type_name(0), "UNKNOWN");
    EXPECT_STREQ(zkelect_event_type_name(99), "UNKNOWN");
    EXPECT_STREQ(zkelect_reason_name(ZKELECT_REASON_NONE), "none");
    EXPECT_STREQ(zkelect_reason_name(ZKELECT_REASON_RESIGNED), "resigned");
    EXPECT_STREQ(zkelect_reason_name(ZKELECT_REASON_TRANSFERRED), "transferred");
    EXPECT_STREQ(zkelect_event_type_name(ZKELECT_EV_STEPPED_BACK), "STEPPED_BACK");
    EXPECT_STREQ(zkelect_event_type_name(ZKELECT_EV_LEASE_LOW), "LEASE_LOW");
    EXPECT_STREQ(zkelect_reason_name(99), "unknown");
    EXPECT_EQ(zkelect_version(), unsigned(ZKELECT_VERSION_NUMBER));
    EXPECT_STREQ(zkelect_version_string(), ZKELECT_PROJECT_VERSION)
        << "library version differs from meson.build's project version";
    unsigned maj = 0, min = 0, pat = 0;
    ASSERT_EQ(std::sscanf(ZKELECT_PROJECT_VERSION, "%u.%u.%u", &maj, &min, &pat), 3);
    EXPECT_EQ(zkelect_version(), (maj << 16) | (min << 8) | pat);
    char v[32];
    snprintf(v, sizeof v, "%d.%d.%d", ZKELECT_VERSION_MAJOR, ZKELECT_VERSION_MINOR,
             ZKELECT_VERSION_PATCH);
    EXPECT_STREQ(zkelect_version_string(), v);
}

TEST_F(BadInput, ParticipantsAccessorsOutOfRange) {
    std::string path = fresh_path();
    Election e = new_election(client.get(), path, "p");
    ASSERT_EQ(zkelect_volunteer(e.get()), 0);
    ASSERT_TRUE(wait_event(e.get(), ZKELECT_EV_ELECTED, 10000));
    char err[128] = "";
    Parts p(zkelect_participants(e.get(), err, sizeof err));
    ASSERT_TRUE(p) << err;
    ASSERT_EQ(zkelect_participants_count(p.get()), 1u);
    EXPECT_EQ(zkelect_participants_id(p.get(), 1), nullptr);
    EXPECT_EQ(zkelect_participants_node(p.get(), 1), nullptr);
    EXPECT_EQ(zkelect_participants_token(p.get(), 1), 0);
    EXPECT_EQ(zkelect_participants_id(p.get(), SIZE_MAX), nullptr);
    EXPECT_GT(zkelect_participants_ctime_ms(p.get(), 0), 1600000000000LL);
    // A path with no election is an empty list, not an error, and is not created.
    std::string none = fresh_path("never-listed");
    Parts q(zkelect_client_participants(client.get(), none.c_str(), err, sizeof err));
    ASSERT_TRUE(q) << err;
    EXPECT_EQ(zkelect_participants_count(q.get()), 0u);
    // Observers of a bad or missing path.
    zkelect_observer_t *o = zkelect_observer_new(client.get(), fresh_path("never-observed").c_str(),
                                                 err, sizeof err);
    ASSERT_NE(o, nullptr) << err;
    Event ev(zkelect_observer_next_event(o, 10000));
    ASSERT_TRUE(ev);
    EXPECT_EQ(zkelect_event_type(ev.get()), ZKELECT_EV_LEADER_CHANGED);
    EXPECT_STREQ(zkelect_event_id(ev.get()), "");
    EXPECT_EQ(zkelect_event_token(ev.get()), 0);
    EXPECT_EQ(zkelect_observer_destroy(o), 0);
}

// A margin of half the session timeout or more leaves no lease: refused when
// the client is made, and reported (not waited on for ever) when the server
// negotiates a timeout for which the margin is too large.
TEST_F(BadInput, LeaseMarginThatLeavesNoLease) {
    char err[256] = "";
    zkelect_conf_t *conf = zkelect_conf_new();
    ASSERT_NE(conf, nullptr);
    ASSERT_EQ(zkelect_conf_set(conf, "zk.hosts", hosts().c_str(), err, sizeof err), 0) << err;
    ASSERT_EQ(zkelect_conf_set(conf, "zk.session.timeout.ms", "4000", err, sizeof err), 0);
    ASSERT_EQ(zkelect_conf_set(conf, "lease.margin.ms", "2000", err, sizeof err), 0);
    err[0] = '\0';
    EXPECT_EQ(zkelect_client_new(conf, err, sizeof err), nullptr);
    expect_message(err, sizeof err, "lease.margin.ms", "margin = T/2");
    ASSERT_EQ(zkelect_conf_set(conf, "lease.margin.ms", "1999", err, sizeof err), 0);
    Client ok(zkelect_client_new(conf, err, sizeof err));
    EXPECT_NE(ok, nullptr) << err;
    ok.reset();

    // Ask for the longest timeout; the ensemble grants its maximum.
    Client probe = new_client(hosts(), 3600000);
    ASSERT_TRUE(probe);
    int granted = zkelect_client_session_timeout_ms(probe.get());
    ASSERT_GT(granted, 0);
    ASSERT_LT(granted, 3600000) << "the test needs an ensemble whose maxSessionTimeout is below 1 h";
    ASSERT_EQ(zkelect_conf_set(conf, "zk.session.timeout.ms", "3600000", err, sizeof err), 0);
    ASSERT_EQ(zkelect_conf_set(conf, "lease.margin.ms", std::to_string(granted / 2).c_str(), err,
                               sizeof err), 0);
    Client c(zkelect_client_new(conf, err, sizeof err));
    zkelect_conf_destroy(conf);
    ASSERT_TRUE(c) << err;
    ASSERT_EQ(zkelect_client_await_connected(c.get(), 15000), 0);
    std::string path = fresh_path("margin");
    Election e = new_election(c.get(), path, "m");
    ASSERT_TRUE(e);
    ASSERT_EQ(zkelect_volunteer(e.get()), 0);
    EXPECT_EQ(zkelect_await_leader(e.get(), 10000), ZKELECT_EINVAL);
    Event ev(zkelect_next_event(e.get(), 5000));
    ASSERT_TRUE(ev);
    EXPECT_EQ(zkelect_event_type(ev.get()), ZKELECT_EV_ERROR) << describe(ev.get());
    EXPECT_EQ(zkelect_event_error(ev.get()), ZKELECT_EINVAL);
    EXPECT_NE(std::string(zkelect_event_message(ev.get())).find("lease.margin.ms"), std::string::npos)
        << zkelect_event_message(ev.get());
    EXPECT_EQ(nodes(path), 0u) << "a candidacy that cannot lead must not stand in the queue";
}

// zkelect_last_error: the reason of this thread's last failure, with the
// code's name first; a success leaves it alone.
TEST_F(BadInput, LastErrorNamesTheCodeAndTheProblem) {
    EXPECT_EQ(zkelect_volunteer(nullptr), ZKELECT_EINVAL);
    EXPECT_EQ(std::string(zkelect_last_error()).rfind("ZKELECT_EINVAL: ", 0), 0u) << zkelect_last_error();
    Election e = new_election(client.get(), fresh_path("last-error"), "x");
    ASSERT_TRUE(e);
    EXPECT_EQ(zkelect_resign(e.get()), ZKELECT_ESTATE);
    EXPECT_EQ(std::string(zkelect_last_error()).rfind("ZKELECT_ESTATE: ", 0), 0u) << zkelect_last_error();
    EXPECT_EQ(zkelect_is_leader(e.get()), 0);  // not a failure: leaves the message
    EXPECT_EQ(std::string(zkelect_last_error()).rfind("ZKELECT_ESTATE: ", 0), 0u);
    int64_t tok;
    EXPECT_EQ(zkelect_fencing_token(e.get(), &tok), ZKELECT_ENOTLEADER);
    EXPECT_EQ(std::string(zkelect_last_error()).rfind("ZKELECT_ENOTLEADER: ", 0), 0u);
    zkelect_conf_t *conf = zkelect_conf_new();
    char err[256] = "";
    EXPECT_EQ(zkelect_conf_set(conf, "zk.session.timeout.ms", "12", err, sizeof err), ZKELECT_EINVAL);
    EXPECT_EQ(std::string(zkelect_last_error()), "ZKELECT_EINVAL: " + std::string(err));
    zkelect_conf_destroy(conf);
    // Per thread: another thread's failure does not change ours.
    std::thread([] { zkelect_wake(nullptr); }).join();
    EXPECT_EQ(std::string(zkelect_last_error()), "ZKELECT_EINVAL: " + std::string(err));
    EXPECT_EQ(zkelect_set_log_cb(7, nullptr, nullptr), ZKELECT_EINVAL);
}

// zkelect_last_error_code: the code of the same failure, the message's
// first word, also after a NULL (a handle refused through errbuf).
TEST_F(BadInput, LastErrorCodeIsTheMessagesCode) {
    EXPECT_EQ(zkelect_fencing_token(nullptr, nullptr), ZKELECT_EINVAL);
    EXPECT_EQ(zkelect_last_error_code(), ZKELECT_EINVAL);
    Election e = new_election(client.get(), fresh_path("last-code"), "x");
    ASSERT_TRUE(e);
    int64_t tok;
    EXPECT_EQ(zkelect_fencing_token(e.get(), &tok), ZKELECT_ENOTLEADER);
    EXPECT_EQ(zkelect_last_error_code(), ZKELECT_ENOTLEADER);
    EXPECT_EQ(zkelect_is_leader(e.get()), 0);  // not a failure: leaves the code
    EXPECT_EQ(zkelect_last_error_code(), ZKELECT_ENOTLEADER);
    char err[256] = "";
    EXPECT_EQ(zkelect_election_new(client.get(), "no-slash", "x", err, sizeof err), nullptr);
    EXPECT_EQ(zkelect_last_error_code(), ZKELECT_EINVAL) << err;
    int other = 1;
    std::thread([&other] { other = zkelect_last_error_code(); }).join();
    EXPECT_EQ(other, 0);  // per thread: a thread that never failed has none
}

// A library never writes to its host's stderr unless asked: a client that
// keeps failing to reach its ensemble prints nothing; with a log callback
// set, the same lines reach the callback instead.
namespace {
struct LogLines {
    std::mutex mu;
    std::vector<std::pair<int, std::string>> lines;
};
void collect_log(int level, const char *message, void *opaque) {
    auto *l = static_cast<LogLines *>(opaque);
    std::lock_guard<std::mutex> lock(l->mu);
    l->lines.emplace_back(level, message);
}
}  // namespace

TEST(Log, NothingOnStderrUnlessAskedThenTheCallbackGetsIt) {
    // A port that refuses: nothing listens on it once the socket closes.
    int s = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(s, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(bind(s, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
    socklen_t alen = sizeof a;
    ASSERT_EQ(getsockname(s, reinterpret_cast<sockaddr *>(&a), &alen), 0);
    close(s);
    std::string dead = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));

    char path[] = "/tmp/zkelect-stderr-XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    unlink(path);
    std::fflush(stderr);
    int saved = dup(2);
    ASSERT_GE(saved, 0);
    dup2(fd, 2);
    auto run_client = [&] {
        char err[256] = "";
        zkelect_conf_t *conf = zkelect_conf_new();
        zkelect_conf_set(conf, "zk.hosts", dead.c_str(), err, sizeof err);
        zkelect_client_t *c = zkelect_client_new(conf, err, sizeof err);
        zkelect_conf_destroy(conf);
        if (!c) return;
        EXPECT_EQ(zkelect_client_await_connected(c, 1500), ZKELECT_ETIMEDOUT);
        zkelect_client_destroy(c);
    };
    run_client();
    std::fflush(stderr);
    off_t quiet = lseek(fd, 0, SEEK_END);
    LogLines log;
    ASSERT_EQ(zkelect_set_log_cb(ZKELECT_LOG_ERROR, collect_log, &log), 0);
    run_client();
    ASSERT_EQ(zkelect_set_log_cb(ZKELECT_LOG_NONE, nullptr, nullptr), 0);
    std::fflush(stderr);
    off_t after = lseek(fd, 0, SEEK_END);
    dup2(saved, 2);
    close(saved);
    std::string printed(static_cast<size_t>(after), '\0');
    pread(fd, printed.data(), printed.size(), 0);
    close(fd);
    EXPECT_EQ(quiet, 0) << "the library wrote to stderr unasked:\n" << printed.substr(0, 2000);
    EXPECT_EQ(after, 0) << "with a callback set, lines still went to stderr:\n" << printed.substr(0, 2000);
    std::lock_guard<std::mutex> lock(log.mu);
    ASSERT_FALSE(log.lines.empty()) << "the callback got none of the connection errors";
    for (auto &[level, line] : log.lines) {
        EXPECT_EQ(level, ZKELECT_LOG_ERROR) << line;
        EXPECT_EQ(line.find('\n'), std::string::npos) << "a line with a newline: " << line;
    }
}
