// Counts the threads inside a blocking call on a handle, so the handle's
// destroy can release them and only then free it: a Go or Java Close() from
// another goroutine or thread is the usual way to end a blocked reader.
#pragma once

#include <condition_variable>
#include <mutex>

namespace zkelect {

class Waiters {
public:
    // False once the handle is closing: the caller must not block.
    bool enter() {
        std::lock_guard<std::mutex> lock(mu_);
        if (closing_) return false;
        ++inside_;
        return true;
    }
    void leave() {
        std::lock_guard<std::mutex> lock(mu_);
        if (--inside_ == 0 && closing_) cv_.notify_all();
    }
    bool closing() const {
        std::lock_guard<std::mutex> lock(mu_);
        return closing_;
    }
    // Marks the handle closing, runs wake (which must make every blocked
    // call return soon), and waits until no thread is inside.
    template <class Wake>
    void close_and_drain(Wake &&wake) {
        std::unique_lock<std::mutex> lock(mu_);
        closing_ = true;
        lock.unlock();
        wake();
        lock.lock();
        cv_.wait(lock, [this] { return inside_ == 0; });
    }

private:
    mutable std::mutex mu_;
    std::condition_variable cv_;
    int inside_ = 0;
    bool closing_ = false;
};

// enter() in the constructor, leave() in the destructor.
class Inside {
public:
    explicit Inside(Waiters &w) : w_(w), in_(w.enter()) {}
    ~Inside() {
        if (in_) w_.leave();
    }
    Inside(const Inside &) = delete;
    Inside &operator=(const Inside &) = delete;
    explicit operator bool() const { return in_; }

private:
    Waiters &w_;
    bool in_;
};

}  // namespace zkelect
