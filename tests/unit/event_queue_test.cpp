#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "event_queue.h"

using namespace zkelect;

namespace {
bool readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}
std::unique_ptr<Event> make(int n) {
    auto e = std::make_unique<Event>();
    e->type = EventType::kFollowing;
    e->token = n;
    return e;
}
}  // namespace

TEST(EventQueue, FdIsReadableExactlyWhileEventsWait) {
    EventQueue q;
    EXPECT_FALSE(readable(q.fd()));
    q.push(make(1));
    q.push(make(2));
    EXPECT_TRUE(readable(q.fd()));
    EXPECT_TRUE(readable(q.fd())) << "level-triggered: still readable on a second poll";
    EXPECT_EQ(q.pop(0)->token, 1);
    EXPECT_TRUE(readable(q.fd()));
    EXPECT_EQ(q.pop(0)->token, 2);
    EXPECT_FALSE(readable(q.fd()));
    EXPECT_EQ(q.pop(0), nullptr);
}

TEST(EventQueue, FdMadeLateReflectsEventsAlreadyWaiting) {
    EventQueue q;
    q.push(make(1));
    EXPECT_TRUE(readable(q.fd()));
    EXPECT_EQ(q.pop(0)->token, 1);
    EXPECT_FALSE(readable(q.fd()));
}

TEST(EventQueue, WakeEndsOneWait) {
    EventQueue q;
    std::thread t([&] { EXPECT_EQ(q.pop(-1), nullptr); });
    q.wake();
    t.join();
    // The wake was used up: the next wait runs to its timeout. A leftover
    // wake would end it at once (both return nullptr, so the time tells).
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(q.pop(150), nullptr);
    EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(150));
}

TEST(EventQueue, WakeBeforeAnyWaitEndsTheNextWait) {
    EventQueue q;
    q.wake();
    std::thread t([&] { EXPECT_EQ(q.pop(-1), nullptr); });   // would hang if the wake was lost
    t.join();
    q.push(make(7));
    EXPECT_EQ(q.pop(0)->token, 7) << "a used-up wake must not swallow an event";
}

TEST(EventQueue, CloseEndsEveryWait) {
    EventQueue q;
    std::vector<std::thread> ts;
    for (int i = 0; i < 4; ++i) ts.emplace_back([&] { EXPECT_EQ(q.pop(-1), nullptr); });
    q.close();
    for (auto &t : ts) t.join();
}

TEST(EventQueue, ManyProducersManyConsumersLoseNothing) {
    EventQueue q;
    constexpr int kPerProducer = 2000, kProducers = 4;
    std::atomic<long> sum{0}, count{0};
    std::vector<std::thread> consumers;
    for (int c = 0; c < 3; ++c)
        consumers.emplace_back([&] {
            while (count.load() < kPerProducer * kProducers) {
                if (auto e = q.pop(10)) {
                    sum += e->token;
                    ++count;
                }
            }
        });
    std::vector<std::thread> producers;
    for (int p = 0; p < kProducers; ++p)
        producers.emplace_back([&] {
            for (int i = 1; i <= kPerProducer; ++i) q.push(make(i));
        });
    for (auto &t : producers) t.join();
    for (auto &t : consumers) t.join();
    EXPECT_EQ(count.load(), kPerProducer * kProducers);
    EXPECT_EQ(sum.load(), long(kProducers) * kPerProducer * (kPerProducer + 1) / 2);
    EXPECT_FALSE(readable(q.fd()));
}
