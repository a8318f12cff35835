#include "event_queue.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <system_error>

namespace zkelect {

int EventQueue::fd() {
    std::lock_guard<std::mutex> lock(mu_);
    if (fd_ < 0) {
        fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (fd_ >= 0 && !events_.empty()) set_readable(true);
    }
    return fd_;
}

EventQueue::~EventQueue() {
    if (fd_ >= 0) ::close(fd_);
}

void EventQueue::set_readable(bool readable) {
    if (fd_ < 0) return;
    if (readable) {
        uint64_t one = 1;
        // Cannot fail short of the counter overflowing, which one write per
        // empty->non-empty transition never reaches.
        ssize_t n = ::write(fd_, &one, sizeof one);
        (void)n;
    } else {
        uint64_t drained;
        ssize_t n = ::read(fd_, &drained, sizeof drained);  // EAGAIN when already 0
        (void)n;
    }
}

void EventQueue::push(std::unique_ptr<Event> ev) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (max_ == 0) {
            dropped_ += 1;
            return;
        }
        if (events_.empty()) set_readable(true);
        if (events_.size() >= max_) {
            // Full: the marker holds the front slot and absorbs the oldest
            // real event behind it; a new marker takes the slot of the
            // oldest event, so it stands for two.
            if (events_.front()->type == EventType::kOverflow) {
                events_.erase(std::next(events_.begin()));
                events_.front()->token += 1;
                dropped_ += 1;
            } else {
                events_.pop_front();
                auto marker = std::make_unique<Event>();
                marker->type = EventType::kOverflow;
                marker->token = 2;
                events_.front() = std::move(marker);
                dropped_ += 2;
            }
            events_.front()->time_ns = ev->time_ns;
        }
        events_.push_back(std::move(ev));
    }
    cv_.notify_one();
}

std::unique_ptr<Event> EventQueue::pop(int timeout_ms, const std::atomic<bool> *stop) {
    std::unique_lock<std::mutex> lock(mu_);
    auto stopped = [stop] { return stop && stop->load(); };
    auto ready = [&] { return !events_.empty() || wakes_ > 0 || closed_ || stopped(); };
    if (timeout_ms < 0) {
        cv_.wait(lock, ready);
    } else if (timeout_ms > 0) {
        cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), ready);
    }
    if (stopped()) return nullptr;
    if (wakes_ > 0) {
        --wakes_;
        return nullptr;
    }
    if (events_.empty()) return nullptr;
    auto ev = std::move(events_.front());
    events_.pop_front();
    if (ev->type == EventType::kOverflow)
        ev->message = std::to_string(ev->token) +
                      " events dropped: the queue was full (nobody read it); the state now "
                      "is what is_leader and the events after this one say";
    if (events_.empty()) set_readable(false);
    return ev;
}

void EventQueue::recheck() {
    // Taking the lock orders this after the flag's store and before any
    // waiter's next look at it: none can miss it and sleep on.
    { std::lock_guard<std::mutex> lock(mu_); }
    cv_.notify_all();
}

void EventQueue::wake() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        ++wakes_;
    }
    cv_.notify_all();
}

void EventQueue::close() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        closed_ = true;
    }
    cv_.notify_all();
}

uint64_t EventQueue::dropped() const {
    std::lock_guard<std::mutex> lock(mu_);
    return dropped_;
}

size_t EventQueue::size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return events_.size();
}

}  // namespace zkelect
