// A bound on every lease of one client, in force from the moment ZooKeeper's
// completion thread delivers a handshake until the loop has applied that
// handshake to each lease (docs/semantics.md, "A shorter timeout after a
// reconnect").
//
// A reconnect that negotiates a shorter timeout T' lets the quorum expire
// the session at (handshake + T'). The loop lowers every lease when it
// handles the CONNECTED event, but a loop held back (a paused process
// resumed, a busy loop) would leave is_leader() comparing the clock with a
// deadline earned under the longer T meanwhile. So the completion thread,
// before it even posts the event, lowers this cap to (the touch floor + T'
// - margin), which is never later than the loop's own cap; the loop lifts it
// once it has capped the leases itself. A cap is never later than what the
// leases may claim, so it can only end leadership early, never extend it.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

namespace zkelect {

class HandshakeCap {
public:
    // Any thread, lock-free: no handshake the loop has not yet applied ends
    // leadership at or before `now`.
    bool allows(int64_t now) const { return now < v_.load(std::memory_order_acquire); }
    int64_t value() const { return v_.load(std::memory_order_acquire); }

    // ZooKeeper's completion thread, on a handshake: the cap in force until
    // settle(the number returned).
    uint64_t lower(int64_t cap) {
        std::lock_guard<std::mutex> lock(mu_);
        if (cap < v_.load(std::memory_order_relaxed)) v_.store(cap, std::memory_order_release);
        return ++seq_;
    }
    // Loop thread, after it applied handshake `seq` to every lease: lifted,
    // unless a later handshake came meanwhile (its own settle lifts it).
    void settle(uint64_t seq) {
        std::lock_guard<std::mutex> lock(mu_);
        if (seq == seq_) v_.store(INT64_MAX, std::memory_order_release);
    }

private:
    std::mutex mu_;
    std::atomic<int64_t> v_{INT64_MAX};
    uint64_t seq_ = 0;  // under mu_
};

}  // namespace zkelect
