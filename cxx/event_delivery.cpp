#include "event_delivery.h"

#include "errors.h"

namespace zkelect {

EventDelivery::~EventDelivery() { stop_background(); }

std::unique_ptr<Event> EventDelivery::next(int timeout_ms) {
    Inside inside(waiters_);
    if (!inside) return nullptr;
    return queue_.pop(timeout_ms);
}

int EventDelivery::set_callback(Callback cb) {
    std::shared_ptr<const Callback> fresh;
    if (cb) fresh = std::make_shared<const Callback>(std::move(cb));
    std::lock_guard<std::mutex> lock(mu_);
    if (bg_.joinable()) return kEState;
    cb_.swap(fresh);
    return kOk;
}

void EventDelivery::deliver(const Callback &cb, std::unique_ptr<Event> ev) {
    struct Mark {
        std::atomic<std::thread::id> &t;
        explicit Mark(std::atomic<std::thread::id> &at) : t(at) { t.store(std::this_thread::get_id()); }
        ~Mark() { t.store(std::thread::id{}); }
    } mark(cb_thread_);
    cb(std::move(ev));
}

int EventDelivery::dispatch(int timeout_ms) {
    // A copy: the callback may replace itself (set_callback) while it runs.
    std::shared_ptr<const Callback> cb;
    {
        std::lock_guard<std::mutex> lock(mu_);
        cb = cb_;
    }
    if (!cb) return kEState;
    Inside inside(waiters_);
    if (!inside) return kEClosed;
    int n = 0;
    // What is queued now plus a bound, not "until empty".
    for (int wait = timeout_ms; n < kMaxDispatch; wait = 0) {
        auto ev = queue_.pop(wait);
        if (!ev) break;
        deliver(*cb, std::move(ev));
        ++n;
    }
    return n;
}

// Joins outside mu_: the thread's callback may call dispatch() or
// set_callback(), which take it.
void EventDelivery::stop_background() {
    std::thread bg;
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (!bg_.joinable()) return;
        bg = std::move(bg_);
        bg_stop_.store(true);
    }
    queue_.recheck();
    bg.join();
    std::lock_guard<std::mutex> lock(mu_);
    bg_stop_.store(false);
}

int EventDelivery::set_background(Callback cb) {
    if (in_own_callback()) return kEDeadlk;
    stop_background();
    std::lock_guard<std::mutex> lock(mu_);
    if (bg_.joinable()) return kEState;  // another thread started one meanwhile
    if (!cb) return kOk;
    bg_ = std::thread([this, cb = std::move(cb)] {
        while (!bg_stop_.load()) {
            auto ev = queue_.pop(-1, &bg_stop_);
            if (!ev) continue;
            try {
                deliver(cb, std::move(ev));
            } catch (...) {
            }
        }
    });
    return kOk;
}

int EventDelivery::close(const std::function<void()> &wake) {
    if (in_own_callback()) return kEDeadlk;
    stop_background();
    waiters_.close_and_drain(wake);
    return kOk;
}

}  // namespace zkelect
