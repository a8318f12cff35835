// One queue of events per handle, drained by pull, by a level-triggered fd,
// or by callbacks. The fd is an eventfd that holds a non-zero count exactly
// while the queue is not empty, so poll/epoll see it readable until the last
// event is taken. It is made on first use: a process with thousands of
// candidacies that only pulls needs no descriptor per candidacy.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>

#include "errors.h"

namespace zkelect {

struct Event {
    EventType type;
    Reason reason = Reason::kNone;
    int64_t token = 0;
    int error = 0;
    int zk_rc = 0;
    std::string message;
    std::string node;
    std::string id;
    int64_t time_ns = 0;  // CLOCK_REALTIME when the library saw it
};

// Bounded: a queue nobody reads holds at most max events (kMaxEvents
// unless the client's events.queue.max says fewer). When a push finds it
// full, the oldest events go, replaced by one kOverflow marker at the front
// whose token counts the events it stands for; so a reader who comes back
// sees that it missed some, how many, and then the newest events in order
// (the newest say most about the state now). A max of 0 keeps no event: a
// push only counts it as dropped.
class EventQueue {
public:
    static constexpr size_t kMaxEvents = 1024;

    // max: 0, or 2 to kMaxEvents (the marker and at least one event).
    explicit EventQueue(size_t max = kMaxEvents) : max_(max) {}
    ~EventQueue();
    EventQueue(const EventQueue &) = delete;
    EventQueue &operator=(const EventQueue &) = delete;

    void push(std::unique_ptr<Event> ev);
    // Waits up to timeout_ms (< 0: no limit). nullptr on timeout, on wake(),
    // after close(), or once *stop is true (then recheck() ends the wait).
    std::unique_ptr<Event> pop(int timeout_ms, const std::atomic<bool> *stop = nullptr);
    // Ends one pending or the next wait without an event.
    void wake();
    // Has every waiter look at its stop flag again: a wait meant to end
    // cannot lose its wake-up to another waiter, as a wake() can.
    void recheck();
    // Ends every wait now and later; the queue stays readable for drains.
    void close();
    // The fd, made on first call (-1 with errno set when none can be made).
    int fd();
    size_t size() const;
    // Events discarded for lack of room since the queue was made.
    uint64_t dropped() const;

private:
    void set_readable(bool readable);  // called with mu_ held; no-op without fd

    mutable std::mutex mu_;
    std::condition_variable cv_;
    // A list, not a deque: libstdc++'s deque allocates over 500 bytes when
    // made, before any event, and a process may hold thousands of queues
    // that are empty or nearly so.
    std::list<std::unique_ptr<Event>> events_;
    uint64_t dropped_ = 0;
    const size_t max_;
    unsigned wakes_ = 0;
    bool closed_ = false;
    int fd_ = -1;
};

}  // namespace zkelect
