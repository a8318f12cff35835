// The thread rules of event delivery (cxx/event_delivery.*), without a
// server: what the C API's zkelect_dispatch, zkelect_set_event_cb,
// zkelect_set_background_event_cb and the destroys rest on.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "errors.h"
#include "event_delivery.h"

using namespace zkelect;

namespace {
std::unique_ptr<Event> make(int n) {
    auto e = std::make_unique<Event>();
    e->type = EventType::kFollowing;
    e->token = n;
    return e;
}

template <class Pred>
bool eventually(Pred p) {
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!p()) {
        if (std::chrono::steady_clock::now() > end) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
}
}  // namespace

TEST(EventDelivery, DispatchRunsTheCallbackForWhatIsQueued) {
    EventQueue q;
    EventDelivery d(q);
    EXPECT_EQ(d.dispatch(0), kEState) << "no callback set";
    std::vector<int64_t> seen;
    ASSERT_EQ(d.set_callback([&](std::unique_ptr<Event> ev) {
        EXPECT_TRUE(d.in_own_callback());
        seen.push_back(ev->token);
    }), kOk);
    q.push(make(1));
    q.push(make(2));
    EXPECT_EQ(d.dispatch(0), 2);
    EXPECT_EQ(seen, (std::vector<int64_t>{1, 2}));
    EXPECT_FALSE(d.in_own_callback());
    EXPECT_EQ(d.dispatch(0), 0);
    ASSERT_EQ(d.set_callback({}), kOk);
    EXPECT_EQ(d.dispatch(0), kEState) << "an empty callback unsets it";
}

TEST(EventDelivery, DispatchIsBoundedWhenTheCallbackKeepsProducing) {
    EventQueue q;
    EventDelivery d(q);
    d.set_callback([&](std::unique_ptr<Event> ev) { q.push(make(int(ev->token) + 1)); });
    q.push(make(0));
    EXPECT_EQ(d.dispatch(0), EventDelivery::kMaxDispatch);
}

TEST(EventDelivery, DispatchPassesOnWhatTheCallbackThrows) {
    EventQueue q;
    EventDelivery d(q);
    d.set_callback([](std::unique_ptr<Event>) { throw std::runtime_error("user"); });
    q.push(make(1));
    EXPECT_THROW(d.dispatch(0), std::runtime_error);
    EXPECT_FALSE(d.in_own_callback()) << "the mark is cleared on the way out";
}

TEST(EventDelivery, ACallbackCannotEndItsOwnHandle) {
    EventQueue q;
    EventDelivery d(q);
    int close_rc = 0, bg_rc = 0;
    d.set_callback([&](std::unique_ptr<Event>) {
        close_rc = d.close([&] { q.close(); });
        bg_rc = d.set_background({});
    });
    q.push(make(1));
    EXPECT_EQ(d.dispatch(0), 1);
    EXPECT_EQ(close_rc, kEDeadlk);
    EXPECT_EQ(bg_rc, kEDeadlk);
    EXPECT_EQ(d.close([&] { q.close(); }), kOk);
}

TEST(EventDelivery, BackgroundThreadDeliversAndSurvivesThrows) {
    EventQueue q;
    EventDelivery d(q);
    std::atomic<int> seen{0};
    std::atomic<bool> on_own{false};
    ASSERT_EQ(d.set_background([&](std::unique_ptr<Event> ev) {
        on_own = d.in_own_callback();
        ++seen;
        if (ev->token == 1) throw std::runtime_error("dropped, not fatal");
    }), kOk);
    EXPECT_EQ(d.set_callback([](std::unique_ptr<Event>) {}), kEState)
        << "dispatch and the background thread would race for the events";
    q.push(make(1));
    q.push(make(2));
    EXPECT_TRUE(eventually([&] { return seen.load() == 2; }));
    EXPECT_TRUE(on_own.load());
    EXPECT_FALSE(d.in_own_callback());
    ASSERT_EQ(d.set_background({}), kOk);  // stops it
    q.push(make(3));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(seen.load(), 2);
    EXPECT_EQ(d.set_callback([](std::unique_ptr<Event>) {}), kOk);
    EXPECT_EQ(d.dispatch(0), 1);
}

TEST(EventDelivery, CloseReleasesBlockedCallersAndRefusesLaterOnes) {
    EventQueue q;
    EventDelivery d(q);
    d.set_callback([](std::unique_ptr<Event>) {});
    std::atomic<int> returned{0};
    std::thread puller([&] {
        EXPECT_EQ(d.next(-1), nullptr);
        ++returned;
    });
    std::thread dispatcher([&] {
        EXPECT_EQ(d.dispatch(-1), 0);
        ++returned;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(d.close([&] { q.close(); }), kOk);
    // close returns only once every thread inside has left.
    EXPECT_TRUE(eventually([&] { return returned.load() == 2; }));
    puller.join();
    dispatcher.join();
    EXPECT_EQ(d.next(0), nullptr);
    EXPECT_EQ(d.dispatch(0), kEClosed);
}

TEST(EventDelivery, CloseStopsTheBackgroundThread) {
    EventQueue q;
    EventDelivery d(q);
    std::atomic<int> seen{0};
    d.set_background([&](std::unique_ptr<Event>) { ++seen; });
    q.push(make(1));
    EXPECT_TRUE(eventually([&] { return seen.load() == 1; }));
    EXPECT_EQ(d.close([&] { q.close(); }), kOk);
    q.push(make(2));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(seen.load(), 1) << "no callback runs after close";
}

// A reader blocked in next() must not swallow the wake meant for the
// background thread: stopping it (set_background({}), or close) would then
// wait for the next event, which may never come.
TEST(EventDelivery, StoppingTheBackgroundThreadDoesNotDependOnOtherReaders) {
    EventQueue q;
    EventDelivery d(q);
    ASSERT_EQ(d.set_background([](std::unique_ptr<Event>) {}), kOk);
    std::atomic<bool> reader_done{false};
    std::thread reader([&] {
        d.next(-1);
        reader_done = true;
    });
    // Both threads are waiting in the queue now (or soon: either order must work).
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::atomic<bool> stopped{false};
    std::thread stopper([&] {
        d.set_background({});
        stopped = true;
    });
    EXPECT_TRUE(eventually([&] { return stopped.load(); }))
        << "set_background({}) hung while another thread was blocked in next()";
    if (!stopped) q.push(make(1));  // let it finish so the test can end
    stopper.join();
    EXPECT_FALSE(reader_done.load()) << "stopping the background thread woke an unrelated reader";
    q.close();
    reader.join();
}
