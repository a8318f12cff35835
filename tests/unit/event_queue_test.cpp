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
            for (int i = 1; i <= kPerProducer; ++i) {
                // Stay below the bound (each producer adds at most one after
                // its check), so nothing may be dropped.
                while (q.size() + kProducers >= EventQueue::kMaxEvents) std::this_thread::yield();
                q.push(make(i));
            }
        });
    for (auto &t : producers) t.join();
    for (auto &t : consumers) t.join();
    EXPECT_EQ(q.dropped(), 0u);
    EXPECT_EQ(count.load(), kPerProducer * kProducers);
    EXPECT_EQ(sum.load(), long(kProducers) * kPerProducer * (kPerProducer + 1) / 2);
    EXPECT_FALSE(readable(q.fd()));
}

// Nobody reads: a million pushes leave at most kMaxEvents events, the oldest
// of which is one OVERFLOW marker counting exactly the events discarded, and
// the rest the newest events in the order they were pushed.
TEST(EventQueue, UnreadQueueStaysBoundedWithAMarkerCountingWhatWasDropped) {
    EventQueue q;
    const int kPushes = 1000000;
    for (int i = 0; i < kPushes; ++i) {
        q.push(make(i));
        ASSERT_LE(q.size(), EventQueue::kMaxEvents) << "after push " << i;
    }
    EXPECT_EQ(q.size(), EventQueue::kMaxEvents);
    EXPECT_EQ(q.dropped(), uint64_t(kPushes) - (EventQueue::kMaxEvents - 1));
    auto marker = q.pop(0);
    ASSERT_TRUE(marker);
    ASSERT_EQ(marker->type, EventType::kOverflow);
    EXPECT_EQ(marker->token, int64_t(q.dropped()));
    EXPECT_NE(marker->message.find(std::to_string(q.dropped())), std::string::npos)
        << marker->message;
    int64_t expect = kPushes - int64_t(EventQueue::kMaxEvents - 1);
    size_t kept = 0;
    while (auto ev = q.pop(0)) {
        ASSERT_EQ(ev->type, EventType::kFollowing);
        ASSERT_EQ(ev->token, expect++);
        ++kept;
    }
    EXPECT_EQ(kept, EventQueue::kMaxEvents - 1);
    EXPECT_EQ(expect, kPushes);
}

// A reader that comes back and drains makes room: later events queue after
// the marker and no more are dropped; a second flood gets a second marker.
TEST(EventQueue, DrainingMakesRoomAndAFreshFloodGetsAFreshMarker) {
    EventQueue q;
    for (size_t i = 0; i < EventQueue::kMaxEvents + 10; ++i) q.push(make(int(i)));
    EXPECT_EQ(q.dropped(), 11u);
    EXPECT_EQ(q.pop(0)->type, EventType::kOverflow);
    EXPECT_EQ(q.pop(0)->token, 11);
    q.push(make(-1));
    EXPECT_EQ(q.size(), EventQueue::kMaxEvents - 1);
    EXPECT_EQ(q.dropped(), 11u);
    while (q.pop(0)) {
    }
    for (size_t i = 0; i < EventQueue::kMaxEvents + 1; ++i) q.push(make(int(i)));
    EXPECT_EQ(q.dropped(), 13u);
    auto m = q.pop(0);
    ASSERT_EQ(m->type, EventType::kOverflow);
    EXPECT_EQ(m->token, 2) << "a marker counts the events it stands for, not the total";
    EXPECT_EQ(q.pop(0)->token, 2);
}

// events.queue.max: a smaller bound works as the default one does, down to
// 2 (the marker and the newest event).
TEST(EventQueue, ASmallerBoundKeepsTheMarkerAndTheNewest) {
    for (size_t max : {size_t(2), size_t(3), size_t(16)}) {
        EventQueue q(max);
        const int kPushes = 100;
        for (int i = 0; i < kPushes; ++i) {
            q.push(make(i));
            ASSERT_LE(q.size(), max) << "max " << max << ", after push " << i;
        }
        EXPECT_EQ(q.size(), max);
        EXPECT_EQ(q.dropped(), uint64_t(kPushes) - (max - 1));
        auto marker = q.pop(0);
        ASSERT_EQ(marker->type, EventType::kOverflow);
        EXPECT_EQ(marker->token, int64_t(q.dropped()));
        int64_t expect = kPushes - int64_t(max - 1);
        while (auto ev = q.pop(0)) EXPECT_EQ(ev->token, expect++);
        EXPECT_EQ(expect, kPushes);
    }
}

// events.queue.max=0: nothing is kept, nothing is signalled, all is counted.
TEST(EventQueue, ABoundOfZeroKeepsNoEventAndNeverSignals) {
    EventQueue q(0);
    int fd = q.fd();
    for (int i = 0; i < 1000; ++i) q.push(make(i));
    EXPECT_EQ(q.size(), 0u);
    EXPECT_EQ(q.dropped(), 1000u);
    EXPECT_FALSE(readable(fd));
    EXPECT_EQ(q.pop(0), nullptr);
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(q.pop(50), nullptr) << "a wait ends at its timeout, not at a push";
    EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(50));
}

// The fd stays readable exactly while events wait, through overflow.
TEST(EventQueue, FdStaysLevelTriggeredThroughOverflow) {
    EventQueue q;
    int fd = q.fd();
    for (size_t i = 0; i < 3 * EventQueue::kMaxEvents; ++i) q.push(make(int(i)));
    EXPECT_TRUE(readable(fd));
    size_t n = 0;
    while (q.pop(0)) ++n;
    EXPECT_EQ(n, EventQueue::kMaxEvents);
    EXPECT_FALSE(readable(fd));
}

// Readers racing a flood: every event is delivered or counted by a marker.
TEST(EventQueue, ConcurrentFloodDeliversOrCountsEveryEvent) {
    EventQueue q;
    constexpr long kPerProducer = 50000, kProducers = 3;
    std::atomic<long> accounted{0};
    std::atomic<bool> done{false};
    std::vector<std::thread> consumers;
    for (int c = 0; c < 2; ++c)
        consumers.emplace_back([&] {
            for (;;) {
                auto e = q.pop(5);
                if (e) accounted += e->type == EventType::kOverflow ? e->token : 1;
                else if (done.load()) return;
            }
        });
    std::vector<std::thread> producers;
    for (int p = 0; p < kProducers; ++p)
        producers.emplace_back([&] {
            for (long i = 0; i < kPerProducer; ++i) q.push(make(int(i)));
        });
    for (auto &t : producers) t.join();
    done = true;
    for (auto &t : consumers) t.join();
    EXPECT_EQ(accounted.load(), kPerProducer * kProducers);
    EXPECT_EQ(q.size(), 0u);
}
