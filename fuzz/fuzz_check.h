// What every harness uses to state an invariant: a violated one is a crash,
// so libFuzzer keeps the input and the replay fails.
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond)                                                             \
    do {                                                                             \
        if (!(cond)) {                                                               \
            std::fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, \
                         #cond);                                                     \
            std::abort();                                                            \
        }                                                                            \
    } while (0)
