// Waiting on a socket until a deadline: what every probe of this room
// (the TLS check, the SASL probe) does around each non-blocking call, so
// no conversation with a server's port outlives its bound.
#pragma once

#include <poll.h>

#include <cerrno>
#include <chrono>

namespace zkelect {
namespace deadline_io {

using Clock = std::chrono::steady_clock;

// Milliseconds left until `until`, 0 once it has passed.
inline int ms_left(Clock::time_point until) {
    auto d = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    return d < 0 ? 0 : static_cast<int>(d);
}

// Whether fd is ready for `events` by `until` (one last look at the
// deadline itself); false on a poll error.
inline bool wait_fd(int fd, short events, Clock::time_point until) {
    pollfd p{fd, events, 0};
    for (int interrupted = 0; interrupted < 1000; ++interrupted) {
        int rc = ::poll(&p, 1, ms_left(until));
        if (rc > 0) return true;
        if (rc == 0 || errno != EINTR) return false;
    }
    return false;
}

}  // namespace deadline_io
}  // namespace zkelect
