// Election behaviour through the public C API against a real ensemble:
// election of one, queue order on resign, node removal on destroy, Curator's
// node layout, fencing tokens.
#include "capi_util.h"

#include <algorithm>
#include <regex>
#include <set>
#include <thread>

using namespace capi;

namespace {

// One candidacy and everything its queue delivered so far.
struct Cand {
    Client own;  // set when the candidacy has a client of its own
    Election e;
    std::string id;
    std::vector<std::string> log;

    Event wait(int type, int timeout_ms) {
        auto deadline = now_ms() + timeout_ms;
        for (;;) {
            int64_t left = deadline - now_ms();
            if (left <= 0) return nullptr;
            Event ev(zkelect_next_event(e.get(), static_cast<int>(left)));
            if (!ev) continue;
            log.push_back(describe(ev.get()));
            if (zkelect_event_type(ev.get()) == type) return ev;
        }
    }
    // Enrolled: ELECTED or FOLLOWING, whichever comes first.
    int wait_enrolled(int timeout_ms) {
        auto deadline = now_ms() + timeout_ms;
        for (;;) {
            int64_t left = deadline - now_ms();
            if (left <= 0) return 0;
            Event ev(zkelect_next_event(e.get(), static_cast<int>(left)));
            if (!ev) continue;
            log.push_back(describe(ev.get()));
            int t = zkelect_event_type(ev.get());
            if (t == ZKELECT_EV_ELECTED || t == ZKELECT_EV_FOLLOWING) return t;
        }
    }
    // Enter `path` as `pid` on client c and wait until enrolled: ELECTED or
    // FOLLOWING, 0 on failure (history() says which step failed).
    int enrol(zkelect_client_t *c, const std::string &path, const std::string &pid) {
        id = pid;
        e = new_election(c, path, id);
        if (!e) {
            log.push_back("zkelect_election_new failed");
            return 0;
        }
        if (int rc = zkelect_volunteer(e.get())) {
            log.push_back(std::string("zkelect_volunteer: ") + zkelect_err_name(rc));
            return 0;
        }
        return wait_enrolled(10000);
    }
    // Everything already queued, without waiting.
    std::vector<int> drain() {
        std::vector<int> types;
        while (Event ev{zkelect_next_event(e.get(), 0)}) {
            log.push_back(describe(ev.get()));
            types.push_back(zkelect_event_type(ev.get()));
        }
        return types;
    }
    std::string history() const { return id + ": " + join(log); }
};

const std::regex kCuratorNode("^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
                              "-latch-([0-9]{10})$");

int64_t seq_of(const std::string &node) {
    std::smatch m;
    if (!std::regex_match(node, m, kCuratorNode)) return -1;
    return std::stoll(m[1]);
}

}  // namespace

TEST(Election, OneCandidateIsElected) {
    Client c = new_client();
    ASSERT_TRUE(c);
    std::string path = fresh_path();
    Election e = new_election(c.get(), path, "solo");
    ASSERT_TRUE(e);

    // Idle: neither leader nor candidate.
    EXPECT_EQ(zkelect_is_leader(e.get()), 0);
    int64_t token = -1;
    EXPECT_EQ(zkelect_fencing_token(e.get(), &token), ZKELECT_ENOTLEADER);
    EXPECT_EQ(zkelect_await_leader(e.get(), 100), ZKELECT_ESTATE);

    ASSERT_EQ(zkelect_volunteer(e.get()), 0);
    std::vector<std::string> skipped;
    Event ev = wait_event(e.get(), ZKELECT_EV_ELECTED, 10000, &skipped);
    ASSERT_TRUE(ev) << "no ELECTED within 10 s; saw " << join(skipped);
    EXPECT_TRUE(skipped.empty()) << "events before ELECTED: " << join(skipped);
    EXPECT_GT(zkelect_event_token(ev.get()), 0);
    EXPECT_STREQ(zkelect_event_id(ev.get()), "solo");
    EXPECT_GE(seq_of(zkelect_event_node(ev.get())), 0) << zkelect_event_node(ev.get());
    EXPECT_NE(std::string(zkelect_event_message(ev.get())), "");
    EXPECT_EQ(zkelect_is_leader(e.get()), 1);
    ASSERT_EQ(zkelect_fencing_token(e.get(), &token), 0);
    EXPECT_EQ(token, zkelect_event_token(ev.get()));
    EXPECT_EQ(zkelect_await_leader(e.get(), 5000), 0);
    EXPECT_EQ(zkelect_await_leader(e.get(), 0), 0);
    EXPECT_EQ(zkelect_await_leader(e.get(), -1), 0);

    char buf[64];
    ASSERT_EQ(zkelect_leader_id(e.get(), buf, sizeof buf), 0);
    EXPECT_STREQ(buf, "solo");
    auto ps = participants(c.get(), path);
    ASSERT_EQ(ps.size(), 1u);
    EXPECT_EQ(ps[0].id, "solo");
    EXPECT_EQ(ps[0].token, token);
    EXPECT_EQ(ps[0].node, zkelect_event_node(ev.get()));

    uint64_t won = 0;
    ASSERT_EQ(zkelect_client_counter(c.get(), ZKELECT_COUNTER_TERMS_WON, &won), 0);
    EXPECT_EQ(won, 1u);
    EXPECT_GT(zkelect_client_session_timeout_ms(c.get()), 0);
    EXPECT_LE(zkelect_client_session_timeout_ms(c.get()), kSessionMs);
    EXPECT_NE(zkelect_client_session_id(c.get()), 0);
}

TEST(Election, ResignPassesLeadershipInQueueOrder) {
    const int n = 4, rounds = 8;
    std::string path = fresh_path();
    Client checker = new_client(single_host());
    ASSERT_TRUE(checker);
    std::vector<Cand> cs(n);
    for (int i = 0; i < n; ++i) {
        cs[i].own = new_client(single_host());
        ASSERT_TRUE(cs[i].own);
        // One at a time, so the queue order is the order of volunteering.
        int t = cs[i].enrol(cs[i].own.get(), path, "p" + std::to_string(i));
        ASSERT_EQ(t, i == 0 ? ZKELECT_EV_ELECTED : ZKELECT_EV_FOLLOWING) << cs[i].history();
    }
    auto index_of = [&](const std::string &id) {
        for (int i = 0; i < n; ++i)
            if (cs[i].id == id) return i;
        return -1;
    };
    std::vector<std::string> order = ids_of(participants(checker.get(), path));
    ASSERT_EQ(order, (std::vector<std::string>{"p0", "p1", "p2", "p3"}));

    for (int r = 0; r < rounds; ++r) {
        SCOPED_TRACE("round " + std::to_string(r) + ", queue " + join(order));
        int leader = index_of(order[0]), heir = index_of(order[1]);
        ASSERT_EQ(zkelect_is_leader(cs[leader].e.get()), 1);
        char buf[16];
        ASSERT_EQ(zkelect_leader_id(cs[heir].e.get(), buf, sizeof buf), 0);
        EXPECT_EQ(std::string(buf), order[0]);

        ASSERT_EQ(zkelect_resign(cs[leader].e.get()), 0);
        EXPECT_EQ(zkelect_is_leader(cs[leader].e.get()), 0) << "still leader after resign returned";
        Event d = next_event(cs[leader].e.get(), 5000);
        ASSERT_TRUE(d) << cs[leader].history();
        EXPECT_EQ(zkelect_event_type(d.get()), ZKELECT_EV_DEPOSED) << describe(d.get());
        EXPECT_EQ(zkelect_event_reason(d.get()), ZKELECT_REASON_RESIGNED) << describe(d.get());
        Event rs = next_event(cs[leader].e.get(), 5000);
        ASSERT_TRUE(rs) << cs[leader].history();
        EXPECT_EQ(zkelect_event_type(rs.get()), ZKELECT_EV_RESIGNED) << describe(rs.get());
        EXPECT_EQ(zkelect_await_leader(cs[leader].e.get(), 0), ZKELECT_ESTATE);

        Event el = cs[heir].wait(ZKELECT_EV_ELECTED, 5000);
        ASSERT_TRUE(el) << "heir " << cs[heir].history();
        EXPECT_EQ(zkelect_is_leader(cs[heir].e.get()), 1);
        for (int i = 0; i < n; ++i) {
            if (i == heir) continue;
            for (int t : cs[i].drain())
                EXPECT_NE(t, ZKELECT_EV_ELECTED) << "not the heir but elected: " << cs[i].history();
            EXPECT_EQ(zkelect_is_leader(cs[i].e.get()), 0) << cs[i].id;
        }

        // Back of the queue.
        ASSERT_EQ(zkelect_volunteer(cs[leader].e.get()), 0);
        ASSERT_EQ(cs[leader].wait_enrolled(5000), ZKELECT_EV_FOLLOWING) << cs[leader].history();
        std::vector<std::string> expect(order.begin() + 1, order.end());
        expect.push_back(order[0]);
        order = ids_of(participants(checker.get(), path));
        EXPECT_EQ(order, expect);
        ASSERT_EQ(order.size(), size_t(n));
    }
}

// zkelect_transfer (1.2): p1 and p2 step back, p3 leads, p0 follows at the
// back; a blocked transfer runs beside is_leader calls of other threads
// (the sanitizer builds run this too).
TEST(Election, TransferHandsLeadershipToTheNamedCandidate) {
    const int n = 4;
    std::string path = fresh_path();
    Client checker = new_client(single_host());
    ASSERT_TRUE(checker);
    std::vector<Cand> cs(n);
    for (int i = 0; i < n; ++i) {
        cs[i].own = new_client(single_host());
        ASSERT_TRUE(cs[i].own);
        int t = cs[i].enrol(cs[i].own.get(), path, "p" + std::to_string(i));
        ASSERT_EQ(t, i == 0 ? ZKELECT_EV_ELECTED : ZKELECT_EV_FOLLOWING) << cs[i].history();
    }
    int64_t before = 0;
    ASSERT_EQ(zkelect_fencing_token(cs[0].e.get(), &before), 0);
    std::atomic<bool> stop{false};
    std::atomic<int> both{0};
    // p0 read 1, then p3 read 1, then p0 read 1 again: both led at the
    // moment p3 was read (two reads alone prove nothing: the thread may be
    // preempted between them).
    std::thread sampler([&] {
        while (!stop.load()) {
            int x = zkelect_is_leader(cs[0].e.get());
            int z = zkelect_is_leader(cs[3].e.get());
            if (x + z + zkelect_is_leader(cs[0].e.get()) == 3) ++both;
        }
    });
    int rc = zkelect_transfer(cs[0].e.get(), "p3", 10000);
    Event el = cs[3].wait(ZKELECT_EV_ELECTED, 5000);
    stop = true;
    sampler.join();
    ASSERT_EQ(rc, 0) << zkelect_err_name(rc) << ": " << zkelect_last_error();
    ASSERT_TRUE(el) << cs[3].history();
    EXPECT_GT(zkelect_event_token(el.get()), before);
    EXPECT_EQ(both.load(), 0) << "p0 and p3 both led at once";
    EXPECT_EQ(zkelect_is_leader(cs[0].e.get()), 0);
    Event d = wait_event(cs[0].e.get(), ZKELECT_EV_DEPOSED, 5000);
    ASSERT_TRUE(d) << cs[0].history();
    EXPECT_EQ(zkelect_event_reason(d.get()), ZKELECT_REASON_TRANSFERRED) << describe(d.get());
    for (int i : {1, 2}) {
        Event b = wait_event(cs[i].e.get(), ZKELECT_EV_STEPPED_BACK, 5000);
        ASSERT_TRUE(b) << cs[i].history();
        EXPECT_EQ(zkelect_event_reason(b.get()), ZKELECT_REASON_TRANSFERRED);
        EXPECT_STREQ(zkelect_event_id(b.get()), "p3");
    }
    std::vector<std::string> order;
    for (int k = 0; k < 500; ++k) {
        order = ids_of(participants(checker.get(), path));
        if (order.size() == size_t(n)) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    // p3 first; the three others at the back, in no promised order (a
    // step back's new node may land after a later one's).
    ASSERT_EQ(order.size(), size_t(n)) << join(order);
    EXPECT_EQ(order[0], "p3") << join(order);
    std::sort(order.begin() + 1, order.end());
    EXPECT_EQ(order, (std::vector<std::string>{"p3", "p0", "p1", "p2"}));
}

TEST(Election, DestroyRemovesNodeAtOnce) {
    std::string path = fresh_path();
    Client checker = new_client(single_host());
    Client shared = new_client(single_host());
    ASSERT_TRUE(checker && shared);
    std::vector<Cand> cs(5);
    for (int i = 0; i < 5; ++i) {
        if (i < 3) cs[i].own = new_client(single_host());
        ASSERT_NE(cs[i].enrol(i < 3 ? cs[i].own.get() : shared.get(), path, "d" + std::to_string(i)), 0)
            << cs[i].history();
    }
    ASSERT_EQ(participants(checker.get(), path).size(), 5u);

    auto gone = [&](const std::string &id) {
        for (auto &p : participants(checker.get(), path))
            if (p.id == id) return false;
        return true;
    };
    // The leader, a follower in the middle, one of two on a shared client,
    // then a whole client after its election.
    for (int i : {0, 2, 3}) {
        cs[i].e.reset();
        EXPECT_TRUE(gone(cs[i].id)) << cs[i].id << " still listed right after destroy returned";
    }
    cs[1].e.reset();
    cs[1].own.reset();
    EXPECT_TRUE(gone("d1"));
    auto left = ids_of(participants(checker.get(), path));
    EXPECT_EQ(left, std::vector<std::string>{"d4"});
    // The survivor takes over.
    ASSERT_TRUE(cs[4].wait(ZKELECT_EV_ELECTED, 5000)) << cs[4].history();
    cs[4].e.reset();
    EXPECT_TRUE(participants(checker.get(), path).empty());
}

// The zkelect tool and the bindings resign and then destroy at once; the
// destroy must wait for the resign's delete, not send a second one.
TEST(Election, ResignThenDestroySendsOneDelete) {
    std::string path = fresh_path();
    Client checker = new_client(single_host());
    ASSERT_TRUE(checker);
    std::vector<Cand> cs(3);
    for (int i = 0; i < 3; ++i) {
        cs[i].own = new_client(single_host());
        ASSERT_NE(cs[i].enrol(cs[i].own.get(), path, "r" + std::to_string(i)), 0) << cs[i].history();
    }
    // The third in line: no heir keepalive, no lease, so nothing but the
    // delete is due from its client.
    Cand &last = cs[2];
    uint64_t before = 0, after = 0;
    ASSERT_EQ(zkelect_client_counter(last.own.get(), ZKELECT_COUNTER_ZK_REQUESTS, &before), 0);
    ASSERT_EQ(zkelect_resign(last.e.get()), 0);
    last.e.reset();
    ASSERT_EQ(zkelect_client_counter(last.own.get(), ZKELECT_COUNTER_ZK_REQUESTS, &after), 0);
    EXPECT_EQ(after - before, 1u) << "requests for resign + destroy";
    EXPECT_EQ(ids_of(participants(checker.get(), path)), (std::vector<std::string>{"r0", "r1"}));
}

TEST(Election, LeaderIdAndParticipantsMatchCuratorLayout) {
    std::string path = fresh_path();
    Client a = new_client(single_host()), b = new_client(single_host());
    ASSERT_TRUE(a && b);
    std::vector<Cand> cs(5);
    for (int i = 0; i < 5; ++i) {
        std::string id = "node-" + std::to_string(i) + "-\xc3\xa9t\xc3\xa9";  // UTF-8 survives
        ASSERT_NE(cs[i].enrol(i % 2 ? b.get() : a.get(), path, id), 0) << cs[i].history();
    }
    auto ps = participants(a.get(), path);
    ASSERT_EQ(ps.size(), 5u);
    std::set<std::string> uuids;
    int64_t prev_seq = -1, prev_token = 0;
    for (size_t i = 0; i < ps.size(); ++i) {
        SCOPED_TRACE(ps[i].node);
        EXPECT_EQ(ps[i].id, cs[i].id) << "queue order is the order of volunteering";
        int64_t seq = seq_of(ps[i].node);
        ASSERT_GE(seq, 0) << "not Curator's _c_<uuid>-latch-<10 digits>";
        EXPECT_GT(seq, prev_seq);
        EXPECT_GT(ps[i].token, prev_token);
        prev_seq = seq;
        prev_token = ps[i].token;
        uuids.insert(ps[i].node.substr(3, 36));
    }
    EXPECT_EQ(uuids.size(), 5u) << "a uuid per node";
    char buf[ZKELECT_ID_MAX + 1];
    ASSERT_EQ(zkelect_leader_id(cs[3].e.get(), buf, sizeof buf), 0);
    EXPECT_EQ(std::string(buf), cs[0].id);
    // Exactly id + NUL fits.
    std::vector<char> exact(cs[0].id.size() + 1);
    EXPECT_EQ(zkelect_leader_id(cs[1].e.get(), exact.data(), exact.size()), 0);
    EXPECT_EQ(zkelect_leader_id(cs[1].e.get(), exact.data(), exact.size() - 1), ZKELECT_ERANGE);

    int64_t tok = 0;
    ASSERT_EQ(zkelect_fencing_token(cs[0].e.get(), &tok), 0);
    EXPECT_EQ(tok, ps[0].token);
    // Every handle, on either client, names the same leader.
    for (auto &cd : cs) {
        ASSERT_EQ(zkelect_leader_id(cd.e.get(), buf, sizeof buf), 0);
        EXPECT_EQ(std::string(buf), cs[0].id);
    }
    EXPECT_EQ(ids_of(participants(b.get(), path)), ids_of(ps));

    // Resign and volunteer again: a new node (new uuid, higher sequence) at the back.
    ASSERT_EQ(zkelect_resign(cs[0].e.get()), 0);
    ASSERT_TRUE(cs[0].wait(ZKELECT_EV_RESIGNED, 5000)) << cs[0].history();
    ASSERT_EQ(zkelect_volunteer(cs[0].e.get()), 0);
    ASSERT_EQ(cs[0].wait_enrolled(5000), ZKELECT_EV_FOLLOWING) << cs[0].history();
    ASSERT_TRUE(cs[1].wait(ZKELECT_EV_ELECTED, 5000)) << cs[1].history();
    auto after = participants(b.get(), path);
    ASSERT_EQ(after.size(), 5u);
    EXPECT_EQ(after.back().id, cs[0].id);
    EXPECT_GT(seq_of(after.back().node), prev_seq);
    EXPECT_EQ(uuids.count(after.back().node.substr(3, 36)), 0u) << "uuid reused";
    ASSERT_EQ(zkelect_leader_id(cs[0].e.get(), buf, sizeof buf), 0);
    EXPECT_EQ(std::string(buf), cs[1].id);
}

TEST(Election, FollowingNamesThePredecessor) {
    std::string path = fresh_path();
    Client c = new_client(single_host());
    ASSERT_TRUE(c);
    std::vector<Cand> cs(4);
    for (int i = 0; i < 4; ++i) {
        cs[i].id = "f" + std::to_string(i);
        cs[i].e = new_election(c.get(), path, cs[i].id);
        ASSERT_TRUE(cs[i].e);
        ASSERT_EQ(zkelect_volunteer(cs[i].e.get()), 0);
        Event ev = i == 0 ? cs[i].wait(ZKELECT_EV_ELECTED, 10000)
                          : cs[i].wait(ZKELECT_EV_FOLLOWING, 10000);
        ASSERT_TRUE(ev) << cs[i].history();
        auto ps = participants(c.get(), path);
        ASSERT_EQ(ps.size(), size_t(i + 1));
        if (i == 0) {
            EXPECT_EQ(zkelect_event_node(ev.get()), ps[0].node);
        } else {
            EXPECT_EQ(zkelect_event_node(ev.get()), ps[i - 1].node);
            EXPECT_EQ(zkelect_event_id(ev.get()), ps[i - 1].id);
        }
    }
    // Remove f1 from the middle: f2 now follows f0, and says so.
    cs[1].e.reset();
    Event ev = cs[2].wait(ZKELECT_EV_FOLLOWING, 5000);
    ASSERT_TRUE(ev) << cs[2].history();
    EXPECT_STREQ(zkelect_event_id(ev.get()), "f0");
    EXPECT_TRUE(cs[3].drain().empty()) << "f3's predecessor did not change: " << cs[3].history();
}

TEST(Election, FencingTokenStrictlyIncreases) {
    std::string path = fresh_path();
    Client a = new_client(), b = new_client();
    ASSERT_TRUE(a && b);
    Cand cs[2];
    cs[0].id = "a";
    cs[1].id = "b";
    cs[0].e = new_election(a.get(), path, "a");
    cs[1].e = new_election(b.get(), path, "b");
    ASSERT_TRUE(cs[0].e && cs[1].e);
    ASSERT_EQ(zkelect_volunteer(cs[0].e.get()), 0);
    ASSERT_EQ(cs[0].wait_enrolled(10000), ZKELECT_EV_ELECTED);
    int64_t last = 0;
    {
        int64_t t = 0;
        ASSERT_EQ(zkelect_fencing_token(cs[0].e.get(), &t), 0);
        last = t;
    }
    ASSERT_EQ(zkelect_volunteer(cs[1].e.get()), 0);
    ASSERT_EQ(cs[1].wait_enrolled(10000), ZKELECT_EV_FOLLOWING);
    std::vector<int64_t> tokens{last};
    int leader = 0;
    for (int term = 0; term < 12; ++term) {
        Cand &old = cs[leader];
        Cand &next = cs[1 - leader];
        ASSERT_EQ(zkelect_resign(old.e.get()), 0);
        Event el = next.wait(ZKELECT_EV_ELECTED, 5000);
        ASSERT_TRUE(el) << next.history();
        int64_t t = zkelect_event_token(el.get()), ft = 0;
        ASSERT_EQ(zkelect_fencing_token(next.e.get(), &ft), 0);
        EXPECT_EQ(ft, t);
        EXPECT_GT(t, tokens.back()) << "term " << term;
        int64_t old_tok = 0;
        EXPECT_EQ(zkelect_fencing_token(old.e.get(), &old_tok), ZKELECT_ENOTLEADER);
        tokens.push_back(t);
        ASSERT_TRUE(old.wait(ZKELECT_EV_RESIGNED, 5000)) << old.history();
        ASSERT_EQ(zkelect_volunteer(old.e.get()), 0);
        ASSERT_EQ(old.wait_enrolled(5000), ZKELECT_EV_FOLLOWING) << old.history();
        leader = 1 - leader;
    }
    std::string s;
    for (auto t : tokens) s += std::to_string(t) + " ";
    RecordProperty("tokens", s);
    std::printf("fencing tokens over %zu terms: %s\n", tokens.size(), s.c_str());
}

// zkelect_election_stats / zkelect_client_stats (1.2) from another thread,
// without pause, while the candidacies volunteer, lead, resign and are made
// and destroyed: every snapshot is one whole JSON object, and the TSan and
// ASan builds of this program find no race or bad access in taking one.
TEST(Election, StatsSnapshotsWhileElectionsChange) {
    Client c = new_client();
    ASSERT_TRUE(c);
    std::string path = fresh_path();
    Election a = new_election(c.get(), path, "a");
    Election b = new_election(c.get(), path, "b");
    ASSERT_TRUE(a && b);
    std::atomic<bool> stop{false};
    std::atomic<long> taken{0}, bad{0};
    std::thread snap([&] {
        for (long i = 0; i < 1000000 && !stop.load(); ++i) {
            zkelect_stats_t *cs = zkelect_client_stats(c.get(), nullptr, 0);
            zkelect_stats_t *as = zkelect_election_stats(a.get(), nullptr, 0);
            for (zkelect_stats_t *s : {cs, as}) {
                std::string j = s ? zkelect_stats_json(s) : "";
                if (j.size() < 2 || j.front() != '{' || j.back() != '}' ||
                    j.find("\"version\":1") == std::string::npos)
                    ++bad;
                zkelect_stats_destroy(s);
            }
            ++taken;
        }
    });
    // A failed ASSERT below returns: the thread must still be joined.
    struct Joiner {
        std::atomic<bool> &stop;
        std::thread &t;
        ~Joiner() {
            stop.store(true);
            if (t.joinable()) t.join();
        }
    } joiner{stop, snap};
    constexpr int kRounds = 10;
    for (int round = 0; round < kRounds; ++round) {
        zkelect_election_t *x = zkelect_election_new(c.get(), path.c_str(), "x", nullptr, 0);
        ASSERT_NE(x, nullptr);
        ASSERT_EQ(zkelect_volunteer(x), 0);
        ASSERT_EQ(zkelect_volunteer(a.get()), 0);
        ASSERT_EQ(zkelect_volunteer(b.get()), 0);
        ASSERT_TRUE(wait_event(x, ZKELECT_EV_ELECTED, 10000));
        EXPECT_EQ(zkelect_election_destroy(x), 0);  // a failover to a, under the snapshots
        ASSERT_TRUE(wait_event(a.get(), ZKELECT_EV_ELECTED, 10000));
        ASSERT_EQ(zkelect_resign(a.get()), 0);
        ASSERT_TRUE(wait_event(b.get(), ZKELECT_EV_ELECTED, 10000));
        ASSERT_TRUE(wait_event(a.get(), ZKELECT_EV_RESIGNED, 10000));
        ASSERT_EQ(zkelect_resign(b.get()), 0);
        ASSERT_TRUE(wait_event(b.get(), ZKELECT_EV_RESIGNED, 10000));
    }
    stop.store(true);
    snap.join();
    EXPECT_GT(taken.load(), 0);
    EXPECT_EQ(bad.load(), 0);
    zkelect_stats_t *st = zkelect_election_stats(a.get(), nullptr, 0);
    ASSERT_NE(st, nullptr);
    std::string j = zkelect_stats_json(st);
    zkelect_stats_destroy(st);
    EXPECT_NE(j.find("\"terms_won\":" + std::to_string(kRounds) + ","), std::string::npos) << j;
    EXPECT_NE(j.find("\"resigned\":" + std::to_string(kRounds) + ","), std::string::npos) << j;
    std::printf("stats snapshots taken meanwhile: %ld\n", taken.load());
}
