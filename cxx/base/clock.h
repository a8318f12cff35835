// Clocks. The lease runs on CLOCK_BOOTTIME: it keeps counting while the
// machine is suspended, so a resumed laptop or VM does not believe a lease
// that ran out during the suspension. Event stamps use CLOCK_REALTIME so that
// processes can compare them.
#pragma once

#include <cstdint>
#include <ctime>

namespace zkelect {

inline int64_t clock_ns(clockid_t id) {
    timespec ts{};
    clock_gettime(id, &ts);
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}
#ifdef ZKELECT_SIM
// The deterministic simulation (explore/sim) compiles the engine a second time
// against its own virtual time: every reading of the engine's clocks comes
// from the simulator's scheduler, so a run is a function of its seed alone.
int64_t sim_boottime_ns();
int64_t sim_realtime_ns();
inline int64_t boottime_ns() { return sim_boottime_ns(); }
inline int64_t realtime_ns() { return sim_realtime_ns(); }
#else
inline int64_t boottime_ns() { return clock_ns(CLOCK_BOOTTIME); }
inline int64_t realtime_ns() { return clock_ns(CLOCK_REALTIME); }
#endif

constexpr int64_t kNsPerMs = 1000000;

}  // namespace zkelect
