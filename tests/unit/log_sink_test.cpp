// The log sink (cxx/events/log_sink.*) without a server: libzookeeper's threads
// only queue a record; the host's callback runs on the sink's own thread,
// may call back into the sink, and a slow one costs the loggers nothing.
#include "../finishes_within.h"
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "log_sink.h"

using namespace zkelect;

namespace {

const char *kInfo = "2026-01-01 00:00:00,000:1(0x1):ZOO_INFO@test@1: a record";

struct Recorder {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::string> lines;
    std::vector<std::thread::id> threads;
    std::atomic<bool> hold{false};
    std::atomic<int> calls{0};

    static void cb(int, const char *message, void *opaque) {
        auto *r = static_cast<Recorder *>(opaque);
        ++r->calls;
        // Bounded: a test that forgets to release still ends.
        for (int i = 0; i < 2000 && r->hold.load(); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        std::lock_guard<std::mutex> lock(r->mu);
        r->lines.push_back(message);
        r->threads.push_back(std::this_thread::get_id());
        r->cv.notify_all();
    }
    bool wait_for(size_t n) {
        std::unique_lock<std::mutex> lock(mu);
        return cv.wait_for(lock, std::chrono::seconds(10), [&] { return lines.size() >= n; });
    }
};

}  // namespace

TEST(LogSink, TheCallbackRunsOnTheSinksThreadNotTheLoggers) {
    Recorder r;
    set_log_sink(3, &Recorder::cb, &r);
    zk_log_message(kInfo);
    ASSERT_TRUE(r.wait_for(1));
    set_log_sink(0, nullptr, nullptr);
    EXPECT_EQ(r.lines[0], kInfo);
    EXPECT_NE(r.threads[0], std::this_thread::get_id());
}

// Issue 27, finding 8: the callback ran under the sink's lock on the
// logging thread, so setting the callback from inside it waited for itself.
namespace {
struct Resetter {
    std::atomic<int> calls{0};
    std::promise<void> done;
    static void cb(int, const char *, void *opaque) {
        auto *r = static_cast<Resetter *>(opaque);
        if (++r->calls != 1) return;
        set_log_sink(4, &Resetter::cb, opaque);  // the level, from inside
        r->done.set_value();
    }
};
}  // namespace

TEST(LogSink, TheCallbackMaySetTheCallback) {
    Resetter r;
    auto done = r.done.get_future();
    finishes_within(10, "set_log_sink from inside the log callback", [&] {
        set_log_sink(3, &Resetter::cb, &r);
        zk_log_message(kInfo);
        EXPECT_EQ(done.wait_for(std::chrono::seconds(5)), std::future_status::ready);
        set_log_sink(0, nullptr, nullptr);
    });
}

TEST(LogSink, ASlowCallbackNeitherBlocksTheLoggersNorLosesTheCount) {
    Recorder r;
    r.hold = true;
    set_log_sink(3, &Recorder::cb, &r);
    const int total = int(kLogQueueMax) * 3;
    auto t0 = std::chrono::steady_clock::now();
    finishes_within(10, "logging while the callback is blocked", [&] {
        for (int i = 0; i < total; ++i) zk_log_message(kInfo);
    });
    auto took = std::chrono::steady_clock::now() - t0;
    EXPECT_LT(took, std::chrono::seconds(2)) << "the loggers waited for the callback";
    EXPECT_LE(r.calls.load(), 1);
    r.hold = false;
    // Every record either arrives or is counted in one notice, in order.
    size_t expect_lines = 0;
    for (int k = 0; k < 1000; ++k) {
        {
            std::lock_guard<std::mutex> lock(r.mu);
            expect_lines = r.lines.size();
            if (!r.lines.empty() && r.lines.back().find("dropped") != std::string::npos) break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    set_log_sink(0, nullptr, nullptr);
    std::lock_guard<std::mutex> lock(r.mu);
    ASSERT_FALSE(r.lines.empty());
    const std::string &notice = r.lines.back();
    ASSERT_NE(notice.find("log records dropped"), std::string::npos) << notice;
    long dropped = std::strtol(notice.c_str() + notice.find(": ") + 2, nullptr, 10);
    EXPECT_EQ(long(expect_lines - 1) + dropped, total) << notice;
    EXPECT_GE(expect_lines - 1, kLogQueueMax);
}

TEST(LogSink, SettingWaitsForARunningCallOfThePreviousCallback) {
    Recorder r;
    r.hold = true;
    set_log_sink(3, &Recorder::cb, &r);
    zk_log_message(kInfo);
    for (int i = 0; i < 1000 && r.calls.load() == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_EQ(r.calls.load(), 1);
    std::atomic<bool> returned{false};
    std::thread setter([&] {
        set_log_sink(0, nullptr, nullptr);
        returned = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_FALSE(returned.load()) << "set returned while the old callback still ran";
    r.hold = false;
    setter.join();
    std::lock_guard<std::mutex> lock(r.mu);
    EXPECT_EQ(r.lines.size(), 1u);
}
