// NeighbourCheck (cxx/session/neighbour_check.h): the session's re-check of
// the nodes its followers watch. What it sends per session timeout must
// not grow with the number of elections (issue 50, finding 8), and every
// node must still be checked, in turn. The session is a fake that records
// what was sent; the timer runs when the test says so.
#include "neighbour_check.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace zkelect;

namespace {

struct Port final : ZkPort {
    std::vector<std::vector<std::string>> checks;  // each multi's paths
    std::vector<std::string> reads;                // exists, one node each
    void create_candidate(const std::string &, const std::string &, ReplyFn) override {}
    void create_persistent(const std::string &, ReplyFn) override {}
    void get(const std::string &, bool, ReplyFn) override {}
    void get_children(const std::string &, bool, ReplyFn) override {}
    void exists(const std::string &path, bool, ReplyFn fn) override {
        reads.push_back(path);
        fn(Reply{});
    }
    void remove(const std::string &, ReplyFn) override {}
    void set(const std::string &, const std::string &, int, ReplyFn) override {}
    void check(const std::vector<std::string> &paths, ReplyFn fn) override {
        checks.push_back(paths);
        Reply r;
        r.results.assign(paths.size(), 0);
        fn(std::move(r));
    }
    void sync(const std::string &, ReplyFn) override {}
    std::deque<AckedWrite> answered() const override { return {}; }
    int64_t session_id() const override { return 1; }
    int negotiated_timeout_ms() const override { return 10000; }
    int state() const override { return 3; }
    void try_next_server() override {}
    void get_config(ReplyFn) override {}
    int set_servers(const std::string &) override { return 0; }
};

struct Host final : LeaseHost {
    Port port;
    std::multimap<int64_t, std::function<void()>> timers;
    int effective_timeout_ms() const override { return 10000; }
    int configured_margin_ms() const override { return -1; }
    SessionFacts session_facts() override { return {}; }
    int64_t touch_floor() const override { return 0; }
    bool connected() const override { return true; }
    ZkPort &session() override { return port; }
    ReplyFn on_loop(std::function<void(Reply &&)> fn) override { return fn; }
    void at(int64_t at_ns, std::function<void()> fn) override {
        timers.emplace(at_ns, std::move(fn));
    }
    void bump(Counter) override {}
    void deliver_lease(int64_t, int64_t) override {}
    void deliver_lease_to(uint64_t, int64_t) override {}
    void deliver_node_failed(uint64_t, const std::string &, bool) override {}

    // Runs the one pending tick (the check keeps one timer at a time).
    void tick() {
        ASSERT_EQ(timers.size(), 1u);
        auto fn = std::move(timers.begin()->second);
        timers.clear();
        fn();
    }
};

// `n` members, each watching one node, all enlisted.
void enlist(NeighbourCheck &nc, uint64_t first, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        std::string path = "/e" + std::to_string(first + i) + "/node";
        nc.enlist(first + i, [path](std::vector<NeighbourCheck::Target> &out) {
            out.push_back({path, [] {}});
            return true;
        });
    }
}

size_t checked(const Port &p) {
    size_t n = p.reads.size();
    for (const auto &c : p.checks) n += c.size();
    return n;
}

}  // namespace

TEST(NeighbourCheck, TwoThousandNodesAreCheckedEveryTimeout) {
    Host h;
    NeighbourCheck nc(h);
    enlist(nc, 1, 1500);
    h.tick();
    EXPECT_EQ(h.port.checks.size(), 2u);  // 1000 + 500
    EXPECT_EQ(checked(h.port), 1500u);
    h.tick();
    EXPECT_EQ(checked(h.port), 3000u);  // all of them again
}

TEST(NeighbourCheck, ManyElectionsCostNoMoreATimeoutAndEveryNodeComesInTurn) {
    Host h;
    NeighbourCheck nc(h);
    const size_t n = 100000;
    enlist(nc, 1, n);
    std::set<std::string> seen;
    const size_t ticks = (n + NeighbourCheck::kMaxPerTick - 1) / NeighbourCheck::kMaxPerTick;
    for (size_t t = 0; t < ticks; ++t) {
        size_t before = h.port.checks.size();
        h.tick();
        // Flat in the number of elections: two multis a session timeout.
        EXPECT_LE(h.port.checks.size() - before, 2u) << "tick " << t;
        for (size_t i = before; i < h.port.checks.size(); ++i)
            seen.insert(h.port.checks[i].begin(), h.port.checks[i].end());
    }
    // Within ceil(n / kMaxPerTick) timeouts, every node was checked.
    EXPECT_EQ(seen.size(), n);
    // The next round begins again with the first.
    size_t before = h.port.checks.size();
    h.tick();
    ASSERT_GT(h.port.checks.size(), before);
    EXPECT_EQ(h.port.checks[before].front(), "/e1/node");
}

TEST(NeighbourCheck, AMemberThatLeavesIsDroppedWhereverTheTurnIs) {
    Host h;
    NeighbourCheck nc(h);
    enlist(nc, 1, NeighbourCheck::kMaxPerTick);
    bool wants = true;
    nc.enlist(NeighbourCheck::kMaxPerTick + 1, [&wants](std::vector<NeighbourCheck::Target> &out) {
        if (!wants) return false;
        out.push_back({"/last/node", [] {}});
        return true;
    });
    h.tick();  // the first kMaxPerTick
    wants = false;
    h.tick();  // the last one's turn: it leaves, the turn goes round to the first
    size_t last_round = h.port.checks.size();
    h.tick();
    for (size_t i = last_round; i < h.port.checks.size(); ++i)
        for (const auto &p : h.port.checks[i]) EXPECT_NE(p, "/last/node");
}
