// Shared by the GoogleTest programs (tests/unit, tests/capi): a call that
// may hang is run on a thread of its own and given a time limit.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <thread>

// Runs body on a thread of its own. A body still running after limit_s is a
// hang, and a thread waiting on itself can never be joined: the failure is
// recorded, named on stderr, and the program ends at once (tests/bed/gtestrun.py
// then reports the case as not run to completion) rather than a stuck suite.
template <class F>
void finishes_within(int limit_s, const char *what, F body) {
    auto done = std::make_shared<std::promise<void>>();
    auto finished = done->get_future();
    std::thread t([&body, done] {
        body();
        done->set_value();
    });
    if (finished.wait_for(std::chrono::seconds(limit_s)) != std::future_status::ready) {
        ADD_FAILURE() << what << ": still running after " << limit_s << " s (a hang)";
        std::fprintf(stderr, "FATAL: %s: still running after %d s (a hang)\n", what, limit_s);
        std::fflush(stdout);
        std::fflush(stderr);
        std::_Exit(1);
    }
    t.join();
}
