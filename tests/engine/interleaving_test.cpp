// The engine driven through interleavings a timing-based test would hit
// only by luck, against a real ensemble. A client's loop runs one mailbox
// item at a time; a Gate posted into it holds the loop while replies and
// watch events pile up behind it, and the test issues the user's commands
// at the exact point in that order the scenario needs. Nothing is mocked:
// requests and notifications are ZooKeeper's.
//
// Needs ZKELECT_TEST_HOSTS (run by tests/integration/test_engine.py).
#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "client.h"
#include "clock.h"
#include "election.h"

using namespace zkelect;
using namespace std::chrono_literals;

namespace {

std::string hosts() {
    const char *h = std::getenv("ZKELECT_TEST_HOSTS");
    if (!h || !*h) {
        std::fprintf(stderr, "FATAL: ZKELECT_TEST_HOSTS is not set (run through pytest)\n");
        std::exit(2);
    }
    return h;
}

std::string fresh_path(const char *tag) {
    static int n = 0;
    const char *r = std::getenv("ZKELECT_TEST_ROOT");
    std::string root = (r && *r) ? r : "/engine-" + std::to_string(getpid());
    return root + "/" + tag + "-" + std::to_string(getpid()) + "-" + std::to_string(++n);
}

std::unique_ptr<Client> new_client(int timeout_ms = 2000) {
    Settings s;
    s.hosts = hosts();
    s.session_timeout_ms = timeout_ms;
    s.log_level = 0;  // libzookeeper quiet
    // The server's tickTime is read on a thread of its own, whose answer
    // reaches the mailbox and whose socket stands beside the session's at
    // moments of their own: these interleavings are about other messages
    // (tests/integration/test_ticktime.py has the probe).
    s.probe_ticktime = false;
    auto c = std::make_unique<Client>(s);
    EXPECT_EQ(c->await_connected(15000), kOk);
    return c;
}

// A raw ZooKeeper handle of the test's own, closed however the test ends:
// an ASSERT that returned early leaked one, and its socket was counted by
// the next test's zk_sockets().
struct RawZk {
    zhandle_t *zh;
    explicit RawZk(int timeout_ms = 2000)
        : zh(zookeeper_init(hosts().c_str(), nullptr, timeout_ms, nullptr, nullptr, 0)) {}
    RawZk(const RawZk &) = delete;
    RawZk &operator=(const RawZk &) = delete;
    ~RawZk() { close(); }
    void close() {
        if (zh) zookeeper_close(zh);
        zh = nullptr;
    }
};

// Holds a client's loop until opened. close() returns once the loop is
// inside the gate, so everything posted afterwards queues behind it.
class Gate {
public:
    // Posts the gate; the loop stops when it gets there.
    void place(Client &c) {
        auto open = open_.get_future().share();
        c.post([this, open] {
            entered_.set_value();
            open.wait();
        });
    }
    // Returns once the loop is stopped at the gate.
    bool reached() { return entered_.get_future().wait_for(10s) == std::future_status::ready; }
    // place() and reached(): everything posted afterwards queues behind it.
    void close(Client &c) {
        place(c);
        ASSERT_TRUE(reached()) << "the loop never reached the gate";
    }
    void open() { open_.set_value(); }

private:
    std::promise<void> entered_, open_;
};

// Bounded wait for a condition that the loop or ZooKeeper makes true.
template <class F>
bool eventually(F &&f, std::chrono::milliseconds limit = 10s) {
    auto end = std::chrono::steady_clock::now() + limit;
    while (!f()) {
        if (std::chrono::steady_clock::now() > end) return false;
        std::this_thread::sleep_for(1ms);
    }
    return true;
}

std::unique_ptr<Event> wait_for(Election &e, EventType t, int timeout_ms, std::vector<EventType> *seen) {
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
        if (left.count() <= 0) return nullptr;
        auto ev = e.shared().queue.pop(int(left.count()));
        if (!ev) return nullptr;
        if (seen) seen->push_back(ev->type);
        if (ev->type == t) return ev;
    }
}

size_t candidates_at(Client &c, const std::string &path) {
    std::vector<ParticipantInfo> out;
    std::string why;
    EXPECT_EQ(c.participants(path, 10000, &out, &why), kOk) << why;
    return out.size();
}

}  // namespace

// Issue 16, finding 2: the heir's claim (its predecessor's deletion already
// queued on the loop) must not make is_leader() answer 1, or ELECTED come,
// after the user's resign returned.
TEST(Interleaving, LateClaimCannotUndoResign) {
    auto ca = new_client(), cb = new_client();
    std::string path = fresh_path("late-claim");
    Election a(*ca, path, "a"), b(*cb, path, "b");
    ASSERT_EQ(a.volunteer(), kOk);
    ASSERT_EQ(a.await_leader(10000, [] { return false; }), kOk);
    ASSERT_EQ(b.volunteer(), kOk);
    ASSERT_TRUE(wait_for(b, EventType::kFollowing, 10000, nullptr));
    // The heir holds a lease before it is needed (its keepalive came back).
    ASSERT_TRUE(eventually([&] { return cb->counter(kKeepalives) >= 1; }));

    Gate gate;
    gate.close(*cb);
    size_t before = cb->mailbox_size();
    ASSERT_EQ(a.resign(), kOk);
    // The deletion of the heir's predecessor is now queued behind the gate.
    ASSERT_TRUE(eventually([&] { return cb->mailbox_size() > before; }));
    ASSERT_EQ(b.resign(), kOk);
    ASSERT_FALSE(b.is_leader());
    gate.open();

    std::vector<EventType> seen;
    std::atomic<bool> done{false};
    std::atomic<int> ones{0};
    std::thread sampler([&] {
        while (!done.load()) ones += b.is_leader() ? 1 : 0;
    });
    auto resigned = wait_for(b, EventType::kResigned, 10000, &seen);
    done = true;
    sampler.join();
    ASSERT_TRUE(resigned) << "no RESIGNED";
    for (EventType t : seen) EXPECT_NE(t, EventType::kElected) << "ELECTED after resign returned";
    EXPECT_EQ(ones.load(), 0) << "is_leader() answered 1 after resign returned";
    EXPECT_EQ(candidates_at(*ca, path), 0u);
}

// Issue 16, finding 6: a candidacy that stops on an error while the user's
// resign is queued must not let a volunteer in before that resign is
// carried out (the phase would be overwritten and a second enrollment
// would drop the first one's node: a ghost).
TEST(Interleaving, ErrorDuringResignKeepsOnePhaseWriter) {
    // T = 10 s here, not 2 s: the interleaving needs the create to fail,
    // which a lost connection (the client's, retried without an error) or
    // an expired raw session (its ephemeral gone, the create then
    // succeeding) would turn into no failure at all, the loop held at the
    // gate below until the test gives up. A loaded ./dev test once saw no
    // failure within 10 s, a stall of 2/3 T being enough for the first.
    auto c = new_client(10000);
    std::string parent = fresh_path("error-resign");
    // An election path that is an ephemeral node of another session:
    // creating a candidate under it fails with ZNOCHILDRENFOREPHEMERALS.
    {
        RawZk raw(10000);
        zhandle_t *zh = raw.zh;
        ASSERT_NE(zh, nullptr);
        int rc = ZCONNECTIONLOSS;
        std::string prefix;
        for (size_t at = 1; at != std::string::npos;) {
            size_t next = parent.find('/', at);
            if (next == std::string::npos) break;
            prefix = parent.substr(0, next);
            rc = ZCONNECTIONLOSS;
            for (int i = 0; i < 250 && (rc == ZCONNECTIONLOSS || rc == ZINVALIDSTATE); ++i) {
                rc = zoo_create(zh, prefix.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE, 0, nullptr, 0);
                if (rc == ZCONNECTIONLOSS || rc == ZINVALIDSTATE) std::this_thread::sleep_for(20ms);
            }
            ASSERT_TRUE(rc == ZOK || rc == ZNODEEXISTS) << prefix << ": " << zerror(rc);
            at = next + 1;
        }
        rc = zoo_create(zh, parent.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL,
                        nullptr, 0);
        ASSERT_EQ(rc, ZOK) << zerror(rc);
        // The election path is the ephemeral node itself.
        const std::string &path = parent;
        Election e(*c, path, "e");

        // g0 holds the loop while the volunteer and g1 queue behind it, so
        // the create's failure cannot come back before g1: a test thread
        // descheduled between the volunteer and g1 (./dev test under load)
        // let the loop handle the failure first, and resign said ESTATE.
        Gate g0, g1, g2;
        g0.close(*c);
        ASSERT_EQ(e.volunteer(), kOk);
        g1.place(*c);
        g0.open();
        ASSERT_TRUE(g1.reached());  // the loop sent the create, and waits at g1
        ASSERT_TRUE(eventually([&] { return c->mailbox_size() >= 1; }));  // its failure is queued
        g2.place(*c);
        // Behind g1: the failed create, then g2; resign queues behind g2.
        ASSERT_EQ(e.resign(), kOk);
        g1.open();
        ASSERT_TRUE(g2.reached());
        // The loop has handled the failure and waits at g2; the resign is
        // not carried out yet: a volunteer queues behind it (1.2), a
        // second one is refused.
        ASSERT_TRUE(eventually([&] { return e.shared().last_error.load() != 0; }));
        EXPECT_EQ(e.volunteer(), kOk) << "volunteer refused while the resign is queued";
        EXPECT_EQ(e.volunteer(), kEState) << "a second volunteer accepted";
        g2.open();
        // The resign's RESIGNED, then the queued volunteer's create fails
        // the same way: ERROR, and the stop's RESIGNED; then idle, once.
        std::vector<EventType> seen;
        ASSERT_TRUE(wait_for(e, EventType::kResigned, 10000, &seen));
        ASSERT_TRUE(wait_for(e, EventType::kError, 10000, &seen));
        ASSERT_TRUE(wait_for(e, EventType::kResigned, 10000, &seen));
        ASSERT_TRUE(eventually([&] { return e.shared().phase.load() == Phase::kIdle; }));

        // The obstacle goes; the next volunteer leads, with exactly one node.
        raw.close();  // its ephemeral parent with it
        ASSERT_TRUE(eventually([&] {
            std::vector<ParticipantInfo> out;
            std::string why;
            return c->participants(parent, 2000, &out, &why) == kOk && out.empty();
        }));
        ASSERT_EQ(e.volunteer(), kOk);
        ASSERT_EQ(e.await_leader(15000, [] { return false; }), kOk);
        EXPECT_EQ(e.volunteer(), kEState);
        EXPECT_EQ(candidates_at(*c, path), 1u);
    }
}

// Issue 16, finding 4: resign while the create is in flight and another
// candidacy's listing of the same path is in flight too: the node is found
// both by the create's late reply and by a listing, and must be deleted and
// RESIGNED said, not left waiting in kResigning.
TEST(Interleaving, ResignDuringCreateWithAListingInFlight) {
    auto c = new_client();
    std::string path = fresh_path("resign-create");
    Election first(*c, path, "first"), second(*c, path, "second");
    ASSERT_EQ(first.volunteer(), kOk);
    ASSERT_EQ(first.await_leader(10000, [] { return false; }), kOk);

    Gate gate;
    gate.close(*c);
    Client *cp = c.get();
    c->post([cp, path] { cp->list(path, [](const Listing &) {}); });  // in flight first
    ASSERT_EQ(second.volunteer(), kOk);
    ASSERT_EQ(second.resign(), kOk);
    gate.open();
    std::vector<EventType> seen;
    EXPECT_TRUE(wait_for(second, EventType::kResigned, 10000, &seen)) << "stuck resigning";
    EXPECT_TRUE(eventually([&] { return candidates_at(*c, path) == 1; }))
        << "the resigned candidacy's node is left";
    EXPECT_EQ(second.volunteer(), kOk);
}

// Issue 27 finding 7: a touch of the session is credited only from an
// answer the library saw, never from a ping libzookeeper's I/O thread may or
// may not have sent. On a live session with a candidacy, the library's own
// probe (an exists every T/3) supplies those answers; while ZooKeeper's
// completion thread is held (no answer delivered), no touch later than the
// hold's start is credited, however long the connection stays up.
TEST(Interleaving, TouchesAreCreditedOnlyFromAnswersSeen) {
    const int64_t t = 2000 * kNsPerMs;
    auto c = new_client(2000);
    Client *cp = c.get();
    auto on_loop = [cp](auto fn) {
        auto done = std::make_shared<std::promise<decltype(fn())>>();
        auto f = done->get_future();
        cp->post([fn, done] { done->set_value(fn()); });
        EXPECT_EQ(f.wait_for(10s), std::future_status::ready);
        return f.get();
    };
    auto heard = [&] {
        return on_loop([cp] {
            int64_t now = boottime_ns();
            return now - lease::surely_heard(cp->session_facts(), now);
        });
    };
    Election e(*c, "/interleaving-probe", "probe");
    ASSERT_EQ(e.volunteer(), kOk);
    ASSERT_EQ(e.await_leader(10000), kOk);
    ASSERT_EQ(e.resign(), kOk);  // no keepalives: only the probe answers now
    std::this_thread::sleep_for(std::chrono::nanoseconds(t));  // the handshake's touch is old
    int64_t age = heard();
    EXPECT_LE(age, t / 4 + lease::probe_period(t) + 200 * kNsPerMs)
        << "the probe's answers are not credited";
    std::promise<void> inside, release;
    auto released = release.get_future().share();
    on_loop([&] {
        cp->session().exists("/", false, [&inside, released](Reply &&) {
            inside.set_value();
            released.wait();  // ZooKeeper's completion thread: no answer is delivered meanwhile
        });
        return 0;
    });
    ASSERT_EQ(inside.get_future().wait_for(10s), std::future_status::ready);
    int64_t held = boottime_ns();
    std::this_thread::sleep_for(std::chrono::nanoseconds(t));  // the connection stays up
    int64_t credited = on_loop([cp] {
        return lease::surely_heard(cp->session_facts(), boottime_ns());
    });
    release.set_value();
    EXPECT_LE(credited, held) << "a touch was credited that no answer showed";
    std::this_thread::sleep_for(std::chrono::nanoseconds(t));
    EXPECT_LE(heard(), t / 4 + lease::probe_period(t) + 200 * kNsPerMs)
        << "the credit did not come back with the answers";
}

namespace {
// The ports of the test's ZooKeeper servers.
std::set<int> zk_ports() {
    std::set<int> out;
    std::string h = hosts();
    size_t i = 0;
    while (i < h.size()) {
        size_t comma = h.find(',', i);
        std::string one = h.substr(i, comma == std::string::npos ? std::string::npos : comma - i);
        size_t colon = one.rfind(':');
        if (colon != std::string::npos) out.insert(std::atoi(one.c_str() + colon + 1));
        if (comma == std::string::npos) break;
        i = comma + 1;
    }
    return out;
}

// This process's TCP sockets connected to a ZooKeeper server, as
// (fd << 16 | local port): a reconnect may reuse the fd, never the port.
std::set<int64_t> zk_sockets() {
    std::set<int64_t> out;
    auto ports = zk_ports();
    DIR *d = opendir("/proc/self/fd");
    if (!d) return out;
    while (dirent *e = readdir(d)) {
        int fd = std::atoi(e->d_name);
        if (fd <= 2) continue;
        sockaddr_storage ss{};
        socklen_t len = sizeof ss;
        if (getpeername(fd, reinterpret_cast<sockaddr *>(&ss), &len) != 0) continue;
        int port = ss.ss_family == AF_INET ? ntohs(reinterpret_cast<sockaddr_in *>(&ss)->sin_port)
                   : ss.ss_family == AF_INET6
                       ? ntohs(reinterpret_cast<sockaddr_in6 *>(&ss)->sin6_port)
                       : -1;
        sockaddr_storage me{};
        socklen_t mlen = sizeof me;
        if (!ports.count(port) || getsockname(fd, reinterpret_cast<sockaddr *>(&me), &mlen) != 0)
            continue;
        int local = me.ss_family == AF_INET ? ntohs(reinterpret_cast<sockaddr_in *>(&me)->sin_port)
                                            : ntohs(reinterpret_cast<sockaddr_in6 *>(&me)->sin6_port);
        out.insert(int64_t(fd) << 16 | local);
    }
    closedir(d);
    return out;
}
}  // namespace

// Issue 16, finding 1: the handshake of a reconnect is stamped on
// ZooKeeper's thread when it is delivered, not when the loop gets to it: a
// loop that is late must not make the handshake look more recent than it was
// (the lease counts the session's life from it). The client's connection is
// cut for real (shutdown of its socket) while its loop is held; the reconnect
// happens behind the gate.
TEST(Interleaving, AReconnectIsStampedWhenZooKeeperDeliversIt) {
    auto c = new_client(4000);
    auto before = zk_sockets();
    ASSERT_EQ(before.size(), 1u) << "expected one connection to ZooKeeper";
    Gate gate;
    gate.close(*c);
    int64_t cut = boottime_ns();
    ::shutdown(int(*before.begin() >> 16), SHUT_RDWR);
    // The client reconnects on its own threads; wait until a new connection
    // stands, then hold the loop a while longer (the lateness under test).
    ASSERT_TRUE(eventually([&] {
        auto now = zk_sockets();
        for (int64_t k : now)
            if (!before.count(k)) return true;
        return false;
    })) << "no new connection to ZooKeeper";
    std::this_thread::sleep_for(300ms);
    int64_t opened = boottime_ns();
    gate.open();
    ASSERT_TRUE(eventually([&] { return c->connected(); }));
    std::promise<SessionFacts> facts;
    Client *cp = c.get();
    c->post([cp, &facts] { facts.set_value(cp->session_facts()); });
    auto f = facts.get_future();
    ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
    SessionFacts sf = f.get();
    EXPECT_GT(sf.connected_at, cut);
    EXPECT_LT(sf.connected_at, opened)
        << "the handshake was stamped when the loop got to it, "
        << (sf.connected_at - opened) / 1000000 << " ms after the gate opened";
    EXPECT_GE(sf.touch_floor, cut - 1000 * kNsPerMs) << "the touch floor went back in time";
    EXPECT_EQ(c->counter(kReconnects), 1u);
}

// Issue 16, finding 10: a path whose sequence numbers near the wrap gets a
// WARNING (once) and a counter, and the election goes on.
TEST(Interleaving, SequenceNearTheWrapIsWarnedOnce) {
    auto c = new_client();
    std::string path = fresh_path("near-wrap");
    RawZk raw;
    zhandle_t *zh = raw.zh;
    ASSERT_NE(zh, nullptr);
    std::string prefix;
    for (size_t at = 1;;) {
        size_t next = path.find('/', at);
        prefix = next == std::string::npos ? path : path.substr(0, next);
        int rc = ZCONNECTIONLOSS;
        for (int i = 0; i < 250 && (rc == ZCONNECTIONLOSS || rc == ZINVALIDSTATE); ++i) {
            rc = zoo_create(zh, prefix.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE, 0, nullptr, 0);
            if (rc == ZCONNECTIONLOSS || rc == ZINVALIDSTATE) std::this_thread::sleep_for(20ms);
        }
        ASSERT_TRUE(rc == ZOK || rc == ZNODEEXISTS) << prefix << ": " << zerror(rc);
        if (next == std::string::npos) break;
        at = next + 1;
    }
    // A foreign candidate (another library's, by the layout) far along.
    std::string far = path + "/_c_00000000-0000-4000-8000-000000000000-latch-2147480000";
    ASSERT_EQ(zoo_create(zh, far.c_str(), "far", 3, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, nullptr, 0),
              ZOK);
    Election e(*c, path, "w");
    ASSERT_EQ(e.volunteer(), kOk);
    std::vector<EventType> seen;
    auto w = wait_for(e, EventType::kWarning, 10000, &seen);
    ASSERT_TRUE(w) << "no WARNING";
    EXPECT_NE(w->message.find("2147480000"), std::string::npos) << w->message;
    EXPECT_EQ(c->counter(kSequenceNearWrap), 1u);
    ASSERT_EQ(e.await_leader(10000, [] { return false; }), kOk);  // ours sorts first
    ASSERT_EQ(e.resign(), kOk);
    ASSERT_TRUE(wait_for(e, EventType::kResigned, 10000, &seen));
    ASSERT_EQ(e.volunteer(), kOk);
    ASSERT_EQ(e.await_leader(10000, [] { return false; }), kOk);
    EXPECT_EQ(c->counter(kSequenceNearWrap), 1u) << "warned more than once";
}

// Issue 15: the third in line learns that it moved up from its watch on the
// node before its predecessor. Here both nodes ahead of it go while its loop
// is held, so the two deletions are handled back to back: the first makes
// it heir (that node was first), the second makes it leader. It must lead
// once, and not while another candidacy leads.
TEST(Interleaving, BothNodesAheadGoWhileTheThirdIsBusy) {
    auto ca = new_client(), cb = new_client(), cc = new_client();
    std::string path = fresh_path("two-ahead");
    Election a(*ca, path, "a"), b(*cb, path, "b"), c(*cc, path, "c");
    ASSERT_EQ(a.volunteer(), kOk);
    ASSERT_EQ(a.await_leader(10000, [] { return false; }), kOk);
    ASSERT_EQ(b.volunteer(), kOk);
    ASSERT_TRUE(wait_for(b, EventType::kFollowing, 10000, nullptr));
    ASSERT_EQ(c.volunteer(), kOk);
    ASSERT_TRUE(wait_for(c, EventType::kFollowing, 10000, nullptr));
    // The heir b holds a lease; c is third and holds none.
    ASSERT_TRUE(eventually([&] { return cb->counter(kKeepalives) >= 1; }));
    EXPECT_EQ(cc->counter(kKeepalives), 0u);

    Gate gate;
    gate.close(*cc);
    size_t before = cc->mailbox_size();
    ASSERT_EQ(a.resign(), kOk);
    ASSERT_TRUE(eventually([&] { return b.is_leader(); })) << "the heir did not take over";
    ASSERT_EQ(b.resign(), kOk);
    // Both deletions are queued behind the gate now.
    ASSERT_TRUE(eventually([&] { return cc->mailbox_size() >= before + 2; }));
    EXPECT_FALSE(c.is_leader());
    gate.open();

    std::vector<EventType> seen;
    auto elected = wait_for(c, EventType::kElected, 10000, &seen);
    ASSERT_TRUE(elected) << "c never led";
    EXPECT_TRUE(c.is_leader());
    EXPECT_FALSE(a.is_leader());
    EXPECT_FALSE(b.is_leader());
    for (EventType t : seen) EXPECT_NE(t, EventType::kDeposed);
}

// zk.session.nodes.max.bytes (issue 35): the bytes a client reserves for its
// candidate nodes follow the nodes: one node's worth per candidacy, two
// while a resign's node is still going and a volunteer already counts (the
// loop held at a gate), two during a transfer's step back, none once every
// node is gone; a volunteer past the bound is refused and changes nothing.
TEST(Interleaving, NodeBytesFollowTheNodes) {
    Settings s;
    s.hosts = hosts();
    s.session_timeout_ms = 2000;
    s.log_level = 0;
    s.probe_ticktime = false;
    std::string path = fresh_path("node-bytes");
    {
        Client probe(s);  // only for the size of one node of path
        s.session_nodes_max_bytes = int(3 * probe.candidate_node_bytes(path));
    }
    Client c(s);
    ASSERT_EQ(c.await_connected(15000), kOk);
    const int64_t one = c.candidate_node_bytes(path);
    auto a = std::make_unique<Election>(c, path, "a");
    auto b = std::make_unique<Election>(c, path, "b");
    Election d(c, path, "d"), x(c, path, "x");
    EXPECT_EQ(c.node_bytes(), 0);
    ASSERT_EQ(a->volunteer(), kOk);
    ASSERT_EQ(a->await_leader(10000, [] { return false; }), kOk);
    ASSERT_EQ(b->volunteer(), kOk);
    ASSERT_TRUE(wait_for(*b, EventType::kFollowing, 10000, nullptr));
    EXPECT_EQ(c.node_bytes(), 2 * one);

    // A resign, and a volunteer queued behind it: both nodes count.
    Gate g;
    g.close(c);
    ASSERT_EQ(a->resign(), kOk);
    ASSERT_EQ(a->volunteer(), kOk);
    EXPECT_EQ(c.node_bytes(), 3 * one);
    std::string why;
    EXPECT_EQ(d.volunteer(&why), kELimit) << "a fourth node's bytes accepted";
    EXPECT_NE(why.find("zk.session.nodes.max.bytes"), std::string::npos) << why;
    EXPECT_EQ(d.shared().phase.load(), Phase::kIdle);
    EXPECT_EQ(a->requeue(&why), kELimit);
    g.open();
    ASSERT_TRUE(wait_for(*a, EventType::kResigned, 10000, nullptr));
    ASSERT_TRUE(wait_for(*a, EventType::kFollowing, 10000, nullptr));
    EXPECT_TRUE(eventually([&] { return c.node_bytes() == 2 * one; })) << c.node_bytes();

    // A step back: counted beside the old node until that is gone.
    ASSERT_EQ(b->await_leader(10000, [] { return false; }), kOk);
    ASSERT_EQ(a->requeue(), kOk);
    ASSERT_TRUE(wait_for(*a, EventType::kResigned, 10000, nullptr));
    ASSERT_TRUE(wait_for(*a, EventType::kFollowing, 10000, nullptr));
    EXPECT_TRUE(eventually([&] { return c.node_bytes() == 2 * one; })) << c.node_bytes();

    // A transfer: the leader steps back on the loop, never refused.
    ASSERT_EQ(b->transfer("a", 5000), kOk);
    ASSERT_EQ(a->await_leader(10000, [] { return false; }), kOk);
    EXPECT_TRUE(eventually([&] { return c.node_bytes() == 2 * one; })) << c.node_bytes();
    EXPECT_EQ(candidates_at(c, path), 2u);

    // A third fits, a fourth does not; a destroy gives its bytes back.
    ASSERT_EQ(x.volunteer(), kOk);
    EXPECT_EQ(d.volunteer(), kELimit);
    b.reset();  // waits for the delete, within a session timeout
    EXPECT_TRUE(eventually([&] { return c.node_bytes() == 2 * one; })) << c.node_bytes();
    ASSERT_EQ(d.volunteer(), kOk);
    ASSERT_TRUE(wait_for(d, EventType::kFollowing, 10000, nullptr));
    EXPECT_EQ(candidates_at(c, path), 3u);
    a.reset();
    ASSERT_EQ(x.resign(), kOk);
    ASSERT_EQ(d.resign(), kOk);
    ASSERT_TRUE(wait_for(x, EventType::kResigned, 10000, nullptr));
    ASSERT_TRUE(wait_for(d, EventType::kResigned, 10000, nullptr));
    EXPECT_TRUE(eventually([&] { return c.node_bytes() == 0; })) << c.node_bytes();
    EXPECT_EQ(candidates_at(c, path), 0u);
}
