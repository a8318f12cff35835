// How a handle's events reach the user: pulled one at a time, dispatched to
// a callback on the caller's thread, or pushed to a callback from a thread of
// the library's own; and how all three end when the handle is destroyed.
// The callback is the boundary's to shape (it wraps the event for C); the
// engine only decides on which thread and when it runs.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "event_queue.h"
#include "waiters.h"

namespace zkelect {

class EventDelivery {
public:
    // Takes the event. What it throws ends dispatch() (the caller's thread
    // decides); on the background thread it is dropped with the event, as
    // there is no one to tell.
    using Callback = std::function<void(std::unique_ptr<Event>)>;

    // Events a dispatch() delivers at most: a callback that keeps producing
    // events cannot pin the caller.
    static constexpr int kMaxDispatch = 10000;

    explicit EventDelivery(EventQueue &queue) : queue_(queue) {}
    ~EventDelivery();
    EventDelivery(const EventDelivery &) = delete;
    EventDelivery &operator=(const EventDelivery &) = delete;

    // nullptr on timeout, on wake(), or once the handle is closing.
    std::unique_ptr<Event> next(int timeout_ms);

    // The callback dispatch() runs; an empty one unsets it. kEState while a
    // background callback runs (the two would race for the same events).
    int set_callback(Callback cb);
    // Runs the callback here for each queued event, waiting up to timeout_ms
    // for the first: how many ran, kEState (no callback) or kEClosed.
    int dispatch(int timeout_ms);
    // Replaces the background thread; an empty callback only stops it.
    // kEDeadlk when stopping the running thread would wait for this thread
    // (see close()); kEState when another thread started one meanwhile.
    int set_background(Callback cb);

    // Whether this thread is running one of this handle's callbacks, at any
    // depth (a callback may dispatch again, or dispatch another handle).
    bool in_own_callback() const;

    // The threads inside the handle's blocking calls, for calls other than
    // next() and dispatch() (await_leader).
    Waiters &waiters() { return waiters_; }

    // The handle's end: kEDeadlk when it would wait for this very thread:
    // from one of the handle's callbacks (however deeply nested), or when a
    // thread running one of them is itself waiting, through a chain of
    // close() and set_background() calls, for a callback this thread runs.
    // Else stops the background thread, marks the handle closing, runs wake
    // (which must end every blocking call soon) and waits until no thread
    // is inside.
    int close(const std::function<void()> &wake);

private:
    void stop_background();
    void deliver(const Callback &cb, std::unique_ptr<Event> ev);

    EventQueue &queue_;
    Waiters waiters_;
    std::mutex mu_;  // cb_, bg_
    std::shared_ptr<const Callback> cb_;
    std::thread bg_;
    // Each background thread's own stop flag: a thread started while an
    // older one is still being stopped must not see that one's flag (two
    // set_background calls at once: the new callback never ran).
    std::shared_ptr<std::atomic<bool>> bg_stop_;
    // Which threads run which handles' callbacks, and which of them wait in
    // a close(), is process-wide (event_delivery.cpp): one thread may be
    // in callbacks of several handles, and several threads in one handle's.
};

}  // namespace zkelect
