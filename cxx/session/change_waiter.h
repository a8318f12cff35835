// A thread outside the loop that waits for a change in ZooKeeper (a
// transfer asked from outside waits for the leader's answer in the path's
// data) takes watches through this member rather than reading again and
// again: the loop routes the watch events to members only.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>

#include "member.h"

namespace zkelect {

class ChangeWaiter : public Member {
public:
    // Loop thread: set by whoever adds the member.
    uint64_t id = 0;

    // Any thread: the number of wake-ups so far. Read it before arming the
    // watches, then wait_past() it: a change between the two is not lost.
    uint64_t seen() const {
        std::lock_guard<std::mutex> lock(mu_);
        return wakes_;
    }
    // Blocks until a wake-up after `seen` or until deadline; false at the
    // deadline.
    bool wait_past(uint64_t seen, std::chrono::steady_clock::time_point deadline) {
        std::unique_lock<std::mutex> lock(mu_);
        return cv_.wait_until(lock, deadline, [&] { return wakes_ > seen; });
    }

    // A watch fired, or the session changed under the watches (a new
    // session holds none of them; after a reconnect the waiter reads again
    // rather than trust that they were set again).
    void on_node_event(int, const std::string &) override { wake(); }
    void on_connected(bool) override { wake(); }
    void on_suspended() override {}
    void on_expired() override { wake(); }
    void on_auth_failed() override { wake(); }

private:
    void wake() {
        std::lock_guard<std::mutex> lock(mu_);
        ++wakes_;
        cv_.notify_all();
    }
    mutable std::mutex mu_;
    std::condition_variable cv_;
    uint64_t wakes_ = 0;
};

}  // namespace zkelect
