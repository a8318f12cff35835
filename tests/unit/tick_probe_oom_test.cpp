// Issue 50, 7(d): TickProbe's thread allocates the buffer for a server's
// answer outside any try, and nothing catches on that thread: out of memory
// there ended the process in std::terminate. Now the request is answered
// !ok, as one a server did not answer. The allocation is made to fail by
// replacing operator new in this program (so it is built only without
// sanitizers, which replace it themselves: tests/unit/meson.build).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <new>

#include "tick_probe.h"
#include "tick_time.h"

using namespace zkelect;

namespace {
// Armed: an allocation the size of the probe's reply buffer fails.
std::atomic<bool> g_fail_reply_buffer{false};
std::atomic<int> g_failed{0};
}  // namespace

void *operator new(std::size_t n) {
    if (g_fail_reply_buffer.load(std::memory_order_relaxed) && n > kMaxConfReply &&
        n <= kMaxConfReply + 64) {
        g_failed.fetch_add(1);
        throw std::bad_alloc();
    }
    if (void *p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }

TEST(TickProbe, OutOfMemoryForTheAnswerIsNoAnswerNotTerminate) {
    // A listening socket nobody accepts on: the connect and the 4 bytes
    // of "conf" complete in the kernel, then the probe makes its buffer.
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
    ASSERT_EQ(::listen(fd, 8), 0);
    PeerAddr peer;
    socklen_t len = sizeof peer.ss;
    ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr *>(&peer.ss), &len), 0);
    peer.len = len;

    std::mutex mu;
    std::condition_variable cv;
    int answers = 0;
    bool answered_ok = true;
    {
        TickProbe probe([&](uint64_t, bool ok, const ServerConf &) {
            std::lock_guard<std::mutex> lock(mu);
            ++answers;
            answered_ok = ok;
            cv.notify_all();
        });
        g_fail_reply_buffer = true;
        ASSERT_TRUE(probe.ask(1, peer, int64_t(300) * 1000000));
        std::unique_lock<std::mutex> lock(mu);
        EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return answers > 0; }));
        g_fail_reply_buffer = false;
        EXPECT_FALSE(answered_ok);
    }
    EXPECT_GE(g_failed.load(), 1) << "the reply buffer was never allocated: the test tests nothing";
    ::close(fd);
}
