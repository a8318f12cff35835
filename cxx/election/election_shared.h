// What a candidacy shares between the library's loop thread (the only one
// that runs the state machine) and the user's threads (commands, readers,
// the event queue).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>

#include "clock.h"
#include "event_queue.h"
#include "handshake_cap.h"
#include "lease.h"
#include "stats.h"

namespace zkelect {

// The phase the user sees: what volunteer/resign may do now. User commands
// move it forward (idle -> candidate -> resigning, any -> closed); the loop
// only brings it back to idle once it has carried out the latest command.
enum class Phase : int { kIdle, kCandidate, kResigning, kClosed };

struct ElectionShared {
    ElectionShared(std::string p, std::string i, size_t queue_max = EventQueue::kMaxEvents)
        : path(std::move(p)), id(std::move(i)), queue(queue_max) {}

    const std::string path;
    const std::string id;
    EventQueue queue;

    // The one record of leadership: a deadline, read lock-free.
    LeaseCell lease;
    std::atomic<int64_t> token{0};

    // The client's bound while a handshake is not yet applied (the client
    // outlives every election made on it).
    const HandshakeCap *handshake_cap = nullptr;

    bool is_leader() const {
        int64_t now = boottime_ns();
        return lease.held(now) && (!handshake_cap || handshake_cap->allows(now));
    }

    // The time is_leader() would still answer true for, in ns (0: not
    // leading), from one reading of the deadline, the cap and the clock, so
    // "leading, and for how long" cannot straddle the deadline.
    int64_t lease_left_ns() const {
        int64_t now = boottime_ns();
        int64_t until = lease.value();  // > 0 only while held (kFenced, 0)
        if (handshake_cap && handshake_cap->value() < until) until = handshake_cap->value();
        return until > 0 && now < until ? until - now : 0;
    }

    // A transfer's drain (drain.h): while a deposed leader keeps its node
    // for its holder to stop its work, the deadline until which that node
    // surely stands, on the same rules as the lease (is_draining()), and
    // the drain's number for zkelect_release() (0: none to release).
    LeaseCell drain;
    std::atomic<uint64_t> drain_seq{0};

    bool is_draining() const {
        int64_t now = boottime_ns();
        return drain.held(now) && (!handshake_cap || handshake_cap->allows(now));
    }

    // Figures for zkelect_election_stats(); the loop writes, anyone copies.
    StatsCell stats;

    // Written under mu; atomics so readers need no lock.
    std::atomic<Phase> phase{Phase::kIdle};
    std::atomic<int> last_error{0};  // set when the candidacy stopped on an error
    uint64_t commands = 0;           // under mu: user commands issued so far

    // The loop has carried out command number `applied` and the candidacy
    // has come to rest: the phase returns to idle, unless the user already
    // issued a newer command (it decides, when the loop gets to it).
    bool settle(uint64_t applied) {
        bool done;
        {
            std::lock_guard<std::mutex> lock(mu);
            done = applied == commands && phase.load() != Phase::kClosed;
            if (done) phase.store(Phase::kIdle);
        }
        cv.notify_all();
        return done;
    }
    void set_error(int code) {
        { std::lock_guard<std::mutex> lock(mu); last_error.store(code); }
        cv.notify_all();
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
