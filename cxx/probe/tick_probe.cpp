#include "tick_probe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "clock.h"

namespace zkelect {

TickProbe::TickProbe(Done done) : done_(std::move(done)) {}

TickProbe::~TickProbe() {
    stop();
    if (wake_fd_ >= 0) ::close(wake_fd_);
}

bool TickProbe::ask(uint64_t ticket, const PeerAddr &peer, int64_t timeout_ns) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) return false;
        // The thread and its eventfd come with the first request: a client
        // that never asks holds neither.
        if (wake_fd_ < 0) {
            wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
            if (wake_fd_ < 0) return false;
        }
        if (!worker_.joinable()) {
            try {
                worker_ = std::thread([this] { run(); });
            } catch (const std::system_error &) {
                return false;
            }
        }
        next_ = Request{ticket, peer, boottime_ns() + timeout_ns};
        pending_ = true;
    }
    cv_.notify_one();
    uint64_t one = 1;
    ssize_t n = ::write(wake_fd_, &one, sizeof one);
    (void)n;
    return true;
}

void TickProbe::stop() {
    int fd;
    {
        std::lock_guard<std::mutex> lock(mu_);
        stopping_ = true;
        pending_ = false;
        fd = wake_fd_;
    }
    cv_.notify_one();
    if (fd >= 0) {
        uint64_t one = 1;
        ssize_t n = ::write(fd, &one, sizeof one);
        (void)n;
    }
    if (worker_.joinable()) worker_.join();
}

bool TickProbe::abandoned() {
    std::lock_guard<std::mutex> lock(mu_);
    return stopping_ || pending_;
}

void TickProbe::run() {
    for (;;) {
        Request r;
        {
            std::unique_lock<std::mutex> lock(mu_);
            cv_.wait(lock, [this] { return stopping_ || pending_; });
        }
        // Drained before the request is taken: a request asked after this
        // wakes the query below, one asked before is the one taken.
        uint64_t drained;
        ssize_t n = ::read(wake_fd_, &drained, sizeof drained);
        (void)n;
        {
            std::lock_guard<std::mutex> lock(mu_);
            if (stopping_) return;
            if (!pending_) continue;
            r = next_;
            pending_ = false;
        }
        ServerConf conf;
        bool ok = false;
        // The reply's buffer is the thread's allocation: out of memory there
        // answers !ok, as a server that did not answer, rather than end the
        // process in std::terminate (nothing catches on this thread).
        try {
            std::string reply;
            bool complete = false;
            if (!query(r, &reply, &complete)) continue;  // abandoned: no answer due
            ok = parse_conf_reply(reply.data(), reply.size(), complete, &conf);
        } catch (...) {
            ok = false;
            conf = ServerConf{};
        }
        if (abandoned()) continue;
        try {
            done_(r.ticket, ok, conf);
        } catch (...) {
        }
    }
}

TickProbe::Wait TickProbe::wait_for(int fd, short events, int64_t deadline) {
    for (;;) {
        int64_t left = deadline - boottime_ns();
        if (left <= 0) return Wait::kTimedOut;
        pollfd fds[2] = {{fd, events, 0}, {wake_fd_, POLLIN, 0}};
        int ms = static_cast<int>((left + kNsPerMs - 1) / kNsPerMs);
        int rc = ::poll(fds, 2, ms);
        if (rc < 0 && errno != EINTR) return Wait::kTimedOut;
        if (rc <= 0) continue;
        if (fds[1].revents & POLLIN) {
            uint64_t drained;
            ssize_t n = ::read(wake_fd_, &drained, sizeof drained);
            (void)n;
            if (abandoned()) return Wait::kAbandoned;
        }
        if (fds[0].revents) return Wait::kReady;  // readiness, or an error read() tells
    }
}

bool TickProbe::query(const Request &r, std::string *reply, bool *complete) {
    *complete = false;
    if (r.peer.len == 0) return !abandoned();
    int fd = ::socket(r.peer.ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return !abandoned();
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};
    if (::connect(fd, reinterpret_cast<const sockaddr *>(&r.peer.ss), r.peer.len) != 0) {
        if (errno != EINPROGRESS) return !abandoned();
        Wait w = wait_for(fd, POLLOUT, r.deadline);
        if (w != Wait::kReady) return w != Wait::kAbandoned;
        int err = 0;
        socklen_t len = sizeof err;
        if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) return true;
    }
    static const char kWord[] = "conf";
    size_t sent = 0;
    while (sent < 4) {
        ssize_t n = ::send(fd, kWord + sent, 4 - sent, MSG_NOSIGNAL);
        if (n > 0) {
            sent += size_t(n);
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            Wait w = wait_for(fd, POLLOUT, r.deadline);
            if (w != Wait::kReady) return w != Wait::kAbandoned;
            continue;
        }
        return true;  // reset or refused: no answer
    }
    reply->resize(kMaxConfReply);
    size_t got = 0;
    while (got < kMaxConfReply) {
        ssize_t n = ::recv(fd, &(*reply)[got], kMaxConfReply - got, 0);
        if (n > 0) {
            got += size_t(n);
            continue;
        }
        if (n == 0) {
            *complete = true;  // the server closed after its answer
            break;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
            Wait w = wait_for(fd, POLLIN, r.deadline);
            if (w == Wait::kAbandoned) return false;
            if (w == Wait::kTimedOut) break;
            continue;
        }
        break;  // reset: what came so far, incomplete
    }
    reply->resize(got);
    return true;
}

}  // namespace zkelect
