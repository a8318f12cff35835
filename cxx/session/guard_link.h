// The crash guard's transport (crash_guard.h is the registry that uses
// it): the link to one running guard, either the write end of the pipe to
// a private helper this process started (posix_spawn), or a connection to
// the guard service (crash.guard.socket; guard/service.c), which lives
// outside this process's PID namespace and control group. The protocol:
// guard/zkelect-guard.c. Nothing here blocks beyond a bounded start.
#pragma once

#include <string.h>
#include <sys/types.h>

#include <memory>
#include <string>

namespace zkelect {
namespace crash_guard {

// The protocol's version, in the hello line (guard/guard.h).
constexpr int kProtocolVersion = 3;
// A guard's start (a helper's verdict, a service's answer), at most.
constexpr int64_t kStartBoundMs = 2000;

// Memory that held a session's password is wiped before it is freed.
template <class T>
struct Wiping {
    using value_type = T;
    Wiping() = default;
    template <class U>
    Wiping(const Wiping<U> &) {}
    T *allocate(size_t n) { return std::allocator<T>().allocate(n); }
    void deallocate(T *p, size_t n) {
        explicit_bzero(p, n * sizeof(T));
        std::allocator<T>().deallocate(p, n);
    }
    template <class U>
    bool operator==(const Wiping<U> &) const { return true; }
    template <class U>
    bool operator!=(const Wiping<U> &) const { return false; }
};
using Secret = std::basic_string<char, std::char_traits<char>, Wiping<char>>;

inline void wipe(Secret &s) {
    explicit_bzero(s.data(), s.size());
    s.clear();
}

// One running guard's end, non-blocking. Closing it lets the guard go: it
// sees EOF with its owner alive and exits without closing anything.
// Shared: the registry's watcher writes outside the registry's lock, and
// the descriptor must not close (and be reused) under that write.
//
// The host may close the descriptor behind our back (a daemon closing
// every descriptor, say) and open something else at its number: each
// write and the close first check that the number is still our pipe or
// socket, so that no session's password goes into a host's file and no
// host's file is closed.
class GuardLink {
public:
    GuardLink(int fd, bool socket, std::string name);
    ~GuardLink();
    GuardLink(const GuardLink &) = delete;
    GuardLink &operator=(const GuardLink &) = delete;
    int fd() const { return fd_; }
    // A connection to the guard service (else a private helper's pipe).
    bool socket() const { return socket_; }
    // Who guards, for the clients' WARNINGs: "the crash guard of this
    // process (PATH)" or "the guard service at SOCKET".
    const std::string &name() const { return name_; }
    bool ours() const;
    // What the link takes now: bytes written, 0 when it is full, -1 when
    // the guard is gone or the number is no longer ours. The host never
    // sees a SIGPIPE. pass_fd >= 0 (a socket's only): a descriptor sent
    // with the first byte (SCM_RIGHTS): a WAIT's pidfd.
    ssize_t write_some(const char *p, size_t n, int pass_fd = -1);

private:
    int fd_;
    bool socket_;
    std::string name_;
    dev_t dev_ = 0;
    ino_t ino_ = 0;
};

// Starts a private helper of drain delay delay_ms: its link, or null with
// *why.
std::shared_ptr<GuardLink> spawn_guard(int delay_ms, std::string *why);
// Connects to the guard service at path and is taken on (its answer within
// kStartBoundMs): the link, or null with *why (no such socket, nothing
// listening, refused and why). The wait for the answer ends early, with
// null, once cancel_fd (-1: none) is readable.
std::shared_ptr<GuardLink> connect_guard(const std::string &path, int delay_ms, std::string *why,
                                         int cancel_fd = -1);

}  // namespace crash_guard
}  // namespace zkelect
