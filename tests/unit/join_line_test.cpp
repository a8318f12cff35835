// JoinLine (cxx/session/join_line.h): a client's turns to join, first asked first
// served, handed on only while connected, each held for at most its bound.
// The loop is simulated here: posted rounds and timers run when the test
// says so, at a clock it sets.
#include "join_line.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "client.h"

using namespace zkelect;

namespace {

struct Loop {
    std::vector<std::function<void()>> posted;
    std::multimap<int64_t, std::function<void()>> timers;
    bool connected = true;
    int64_t now = 1000;
    int64_t bound = 100;

    JoinLine::Hooks hooks() {
        return {[this](std::function<void()> fn) { posted.push_back(std::move(fn)); },
                [this](int64_t at, std::function<void()> fn) { timers.emplace(at, std::move(fn)); },
                [this] { return connected; }, [this] { return bound; }, [this] { return now; }};
    }
    void run_posted() {
        for (int i = 0; i < 100 && !posted.empty(); ++i) {
            auto fns = std::move(posted);
            posted.clear();
            for (auto &f : fns) f();
        }
    }
    void advance(int64_t to) {
        now = to;
        while (!timers.empty() && timers.begin()->first <= now) {
            auto f = std::move(timers.begin()->second);
            timers.erase(timers.begin());
            f();
        }
        run_posted();
    }
};

// A candidacy reduced to what the line sees: it takes a turn with its
// ticket and keeps it (creating) until told otherwise.
struct Joiner : Member {
    JoinLine &line;
    std::vector<std::string> &created;
    std::string name;
    JoinLine::Ticket ticket = 0;
    bool wants = true;
    Joiner(JoinLine &l, std::vector<std::string> &c, std::string n)
        : line(l), created(c), name(std::move(n)) {}
    void on_connected(bool) override {}
    void on_suspended() override {}
    void on_expired() override {}
    void on_auth_failed() override {}
    void on_node_event(int, const std::string &) override {}
    bool on_join_turn(uint64_t t) override {
        if (t != ticket || !wants) return false;
        created.push_back(name);
        return true;
    }
};

struct Fixture {
    Loop loop;
    JoinLine line;
    std::vector<std::string> created;
    std::vector<std::shared_ptr<Joiner>> js;
    explicit Fixture(size_t window) : line(window, loop.hooks()) {}
    std::shared_ptr<Joiner> ask(const std::string &name) {
        auto j = std::make_shared<Joiner>(line, created, name);
        j->ticket = line.ticket();
        js.push_back(j);
        return j;
    }
    // send_create: a turn now, or a place in line.
    void join(const std::shared_ptr<Joiner> &j) {
        if (line.take(j->ticket)) created.push_back(j->name);
        else line.wait(j->ticket, j);
    }
};

}  // namespace

TEST(JoinLine, NoTurnIsHandedOnWhileDisconnected) {
    Fixture f(1);
    auto a = f.ask("a"), b = f.ask("b"), c = f.ask("c");
    f.join(a);
    f.join(b);
    f.join(c);
    f.loop.connected = false;
    f.line.give_back(a->ticket);  // a resigns while disconnected
    f.loop.run_posted();
    EXPECT_EQ(f.created, (std::vector<std::string>{"a"}));
    EXPECT_EQ(f.line.waiting(), 2u);
    f.loop.connected = true;
    f.line.on_connected();
    f.loop.run_posted();
    EXPECT_EQ(f.created, (std::vector<std::string>{"a", "b"}));
}

TEST(JoinLine, AHolderThatLostItsSessionGoesBackToItsPlace) {
    Fixture f(1);
    auto a = f.ask("a"), b = f.ask("b");
    f.join(a);
    f.join(b);
    f.loop.connected = false;
    f.line.wait(a->ticket, a);  // its session ended before its place was known
    f.loop.connected = true;
    f.line.on_connected();
    f.loop.run_posted();
    EXPECT_EQ(f.created, (std::vector<std::string>{"a", "a"}));
    EXPECT_TRUE(f.line.holds(a->ticket));
}

TEST(JoinLine, AnEarlierTicketGoesAheadOfLaterOnes) {
    Fixture f(1);
    auto hold = f.ask("hold"), a = f.ask("a"), b = f.ask("b"), c = f.ask("c");
    f.join(hold);
    f.join(b);
    f.join(c);
    f.join(a);  // asked before b and c (its old node was still going)
    f.line.give_back(hold->ticket);
    f.loop.run_posted();
    f.line.give_back(a->ticket);
    f.loop.run_posted();
    f.line.give_back(b->ticket);
    f.loop.run_posted();
    EXPECT_EQ(f.created, (std::vector<std::string>{"hold", "a", "b", "c"}));
}

TEST(JoinLine, NobodyWaitingAheadIsJumped) {
    Fixture f(2);
    auto hold = f.ask("hold"), a = f.ask("a"), b = f.ask("b");
    f.join(hold);
    f.join(a);  // second turn
    f.join(b);  // waits
    f.line.give_back(a->ticket);
    auto late = f.ask("late");
    f.join(late);  // a turn is free, but b asked first
    f.loop.run_posted();
    EXPECT_EQ(f.created, (std::vector<std::string>{"hold", "a", "b"}));
    EXPECT_FALSE(f.line.holds(late->ticket));
}

TEST(JoinLine, APlaceGivenUpIsSkipped) {
    Fixture f(1);
    auto hold = f.ask("hold"), a = f.ask("a"), b = f.ask("b");
    f.join(hold);
    f.join(a);
    f.join(b);
    a->wants = false;  // resigned while in line
    f.line.give_back(hold->ticket);
    f.loop.run_posted();
    EXPECT_EQ(f.created, (std::vector<std::string>{"hold", "b"}));
    EXPECT_EQ(f.line.waiting(), 0u);
}

TEST(JoinLine, AStuckHolderLosesItsTurnAfterTheBound) {
    Fixture f(1);
    auto stuck = f.ask("stuck"), a = f.ask("a");
    f.join(stuck);
    f.join(a);
    f.loop.advance(f.loop.now + f.loop.bound - 1);
    EXPECT_EQ(f.created, (std::vector<std::string>{"stuck"}));
    f.loop.advance(f.loop.now + 1);
    EXPECT_EQ(f.created, (std::vector<std::string>{"stuck", "a"}));
    EXPECT_FALSE(f.line.holds(stuck->ticket));
    f.line.give_back(stuck->ticket);  // when it gets its place at last: nothing to give
    EXPECT_EQ(f.line.holding(), 1u);
}

TEST(JoinLine, TheBoundCountsConnectedTimeOnly) {
    Fixture f(1);
    auto stuck = f.ask("stuck"), a = f.ask("a");
    f.join(stuck);
    f.join(a);
    f.loop.connected = false;
    f.loop.advance(f.loop.now + 5 * f.loop.bound);
    EXPECT_TRUE(f.line.holds(stuck->ticket));
    f.loop.connected = true;
    f.line.on_connected();
    f.loop.advance(f.loop.now + f.loop.bound - 1);
    EXPECT_TRUE(f.line.holds(stuck->ticket));
    f.loop.advance(f.loop.now + 1);
    EXPECT_FALSE(f.line.holds(stuck->ticket));
    EXPECT_EQ(f.created, (std::vector<std::string>{"stuck", "a"}));
}
