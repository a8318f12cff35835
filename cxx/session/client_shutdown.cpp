#include "client_shutdown.h"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>

#include "client.h"
#include "crash_guard.h"
#include "errors.h"

namespace zkelect {

namespace {

using Clock = std::chrono::steady_clock;

// What the loop tells the waiting caller.
struct Progress {
    std::mutex mu;
    std::condition_variable cv;
    size_t left = 0;    // steps that have not said gone
    bool ran = false;   // every step ran: every delete is on the wire
};

// The session's last reference, dropped on a closer thread: the close
// (libzookeeper sends closeSession and waits for the server to end the
// connection), then the crash guard forgets the session, then the caller
// hears of it. A crash while it closes is still covered by the guard.
struct Closing {
    std::shared_ptr<ZkPort> session;
    uint64_t guard_ticket = 0;
    std::shared_ptr<std::promise<void>> closed;
    ~Closing() {
        session.reset();
        if (guard_ticket) crash_guard::remove(guard_ticket);
        closed->set_value();
    }
};

std::string ms(int64_t ns) { return std::to_string(ns / kNsPerMs); }

}  // namespace

ClientShutdown::Outcome ClientShutdown::run(Client &client, std::vector<Step> steps,
                                            int timeout_ms) {
    Outcome out;
    if (client.on_loop_thread()) {
        out.code = kEDeadlk;
        out.why = "called on the client's loop thread";
        return out;
    }
    const int64_t start = boottime_ns();
    const int64_t deadline = start + int64_t(timeout_ms) * kNsPerMs;
    const auto until = Clock::now() + std::chrono::milliseconds(timeout_ms);
    const size_t total = steps.size();
    const bool was_connected = client.connected();
    auto p = std::make_shared<Progress>();
    p->left = total;
    Gone gone = [p] {
        std::lock_guard<std::mutex> lock(p->mu);
        if (p->left > 0 && --p->left == 0) p->cv.notify_all();
    };
    // One item of mail: the loop runs every step before it reads a reply,
    // so the deletes go out back to back.
    client.post([p, gone, steps = std::move(steps)] {
        for (const Step &s : steps) {
            try {
                s(gone);
            } catch (...) {
                // Its node is left to the session's close; the others go on.
            }
        }
        {
            std::lock_guard<std::mutex> lock(p->mu);
            p->ran = true;
        }
        p->cv.notify_all();
    });
    {
        std::unique_lock<std::mutex> lock(p->mu);
        p->cv.wait_until(lock, until, [&] { return p->ran && p->left == 0; });
        out.pending = p->left;
    }
    out.session_closed = end_session(client, deadline);
    if (out.pending == 0) return out;
    out.code = kETimedOut;
    const int64_t t = int64_t(client.effective_timeout_ms()) * kNsPerMs;
    out.why = std::to_string(out.pending) + " of " + std::to_string(total) +
              " elections and observers had not confirmed their nodes gone within " +
              std::to_string(timeout_ms) + " ms" +
              (was_connected ? "" : " (the client was not connected to ZooKeeper)") +
              "; leadership ended on every handle when the call began. " +
              (out.session_closed
                   ? "The session's close was sent or there was no connection to send it on: "
                   : "The session's close is still under way: ") +
              "what is left goes when the servers end the session, at once if they took its "
              "close, else at most one session timeout (" + ms(t) +
              " ms) after they last heard from this client";
    return out;
}

bool ClientShutdown::end_session(Client &c, int64_t deadline_ns) {
    {
        std::lock_guard<std::mutex> lock(c.mu_);
        c.stopping_ = true;
    }
    c.connected_cv_.notify_all();
    uint64_t one = 1;
    ssize_t n = ::write(c.wake_fd_, &one, sizeof one);
    (void)n;
    // A turn ends once its mail has run: the loop never waits on anything.
    if (c.loop_.joinable()) c.loop_.join();
    c.connected_.store(false, std::memory_order_release);
    // The probes' threads post to the mailbox, which nobody reads now.
    c.tick_probe_.stop();
    if (c.sasl_probe_.joinable()) c.sasl_probe_.join();  // at most 1 s, and rare
    auto closing = std::make_shared<Closing>();
    {
        std::lock_guard<std::mutex> lock(c.session_mu_);
        closing->session = std::move(c.session_);
    }
    closing->guard_ticket = c.guard_ticket_;
    closing->closed = std::make_shared<std::promise<void>>();
    std::future<void> closed = closing->closed->get_future();
    c.closer_.retire(std::move(closing));
    int64_t left_ns = deadline_ns - boottime_ns();
    if (left_ns < 0) left_ns = 0;
    return closed.wait_for(std::chrono::nanoseconds(left_ns)) == std::future_status::ready;
}

}  // namespace zkelect
