// What a candidacy shares between the library's loop thread (the only
// writer of its state) and the user's threads (readers, and the queue).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>

#include "clock.h"
#include "event_queue.h"

namespace zkelect {

enum class Phase : int { kIdle, kCandidate, kResigning, kClosed };

struct ElectionShared {
    ElectionShared(std::string p, std::string i) : path(std::move(p)), id(std::move(i)) {}

    const std::string path;
    const std::string id;
    EventQueue queue;

    // The lease: CLOCK_BOOTTIME ns until which this candidacy leads; 0 when
    // it does not. One atomic, so is_leader needs no lock and sees a
    // consistent answer.
    std::atomic<int64_t> leader_until{0};
    std::atomic<int64_t> token{0};
    std::atomic<Phase> phase{Phase::kIdle};
    std::atomic<int> last_error{0};  // set when the candidacy stopped on an error

    bool is_leader() const {
        int64_t until = leader_until.load(std::memory_order_acquire);
        return until != 0 && boottime_ns() < until;
    }

    // await_leader waits here; the loop calls changed() after every change
    // of phase or leadership.
    std::mutex mu;
    std::condition_variable cv;
    void changed() {
        { std::lock_guard<std::mutex> lock(mu); }
        cv.notify_all();
    }
};

}  // namespace zkelect
