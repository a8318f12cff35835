// Asks a ZooKeeper server for its tickTime (the `conf` four-letter word on
// its client port) on a thread of its own, so that neither the client's
// loop nor ZooKeeper's threads ever wait for it (docs/semantics.md, "Why
// that is safe"). Bounded in time (the timeout of each request), in bytes
// (kMaxConfReply) and in connections (one at a time per client: a newer
// request abandons the one in progress at once, and so does stop()).
//
// The answer is untrusted: parse_conf_reply (tick_time.h) reads it, and a
// refusal (the server does not whitelist conf), a reset, silence or
// garbage all come back as "no answer", which costs nothing.
#pragma once

#include <sys/socket.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "peer_addr.h"
#include "tick_time.h"

namespace zkelect {

class TickProbe {
public:
    // Runs on the probe's thread, once per request not abandoned: ok with
    // what the server said, or !ok. It must only hand the answer on.
    using Done = std::function<void(uint64_t ticket, bool ok, const ServerConf &conf)>;

    explicit TickProbe(Done done);
    ~TickProbe();  // stop()
    TickProbe(const TickProbe &) = delete;
    TickProbe &operator=(const TickProbe &) = delete;

    // Any thread. Ask `peer`, taking at most timeout_ns; a request not yet
    // answered is abandoned (its done never runs). The thread (and its
    // eventfd) start with the first request. False when nothing will be
    // asked (stopped, or no thread or eventfd to be had).
    bool ask(uint64_t ticket, const PeerAddr &peer, int64_t timeout_ns);
    // Abandon what is asked, wake the thread at once and join it.
    // Idempotent; ask() does nothing after it.
    void stop();

private:
    struct Request {
        uint64_t ticket = 0;
        PeerAddr peer;
        int64_t deadline = 0;  // CLOCK_BOOTTIME ns
    };
    enum class Wait { kReady, kTimedOut, kAbandoned };

    void run();
    // The answer's bytes, read until the server closes, kMaxConfReply or
    // the deadline; false when abandoned.
    bool query(const Request &r, std::string *reply, bool *complete);
    Wait wait_for(int fd, short events, int64_t deadline);
    bool abandoned();

    Done done_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool stopping_ = false;   // under mu_
    bool pending_ = false;    // under mu_: next_ is a request not yet taken
    Request next_;            // under mu_
    int wake_fd_ = -1;        // an eventfd: pending_ or stopping_ changed (set under mu_ once)
    std::thread worker_;
};

}  // namespace zkelect
