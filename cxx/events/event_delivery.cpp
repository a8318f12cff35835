#include "event_delivery.h"

#include <pthread.h>

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "errors.h"

namespace zkelect {

namespace {

// Who waits for whom. A thread running a callback of handle H keeps every
// close(H) (and the stop of H's background thread) waiting until it
// returns; a thread in close(H') waits on H'. A close that would wait, down
// that chain, for its own thread can never end, so it is refused with
// kEDeadlk instead. One mutex for the whole process: it is held for a few
// map operations, once per event delivered and twice per close.
class WaitGraph {
public:
    void enter_callback(const EventDelivery *h) {
        std::lock_guard<std::mutex> lock(mu_);
        threads_[std::this_thread::get_id()].in_cb.push_back(h);
    }
    void leave_callback(const EventDelivery *h) {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = threads_.find(std::this_thread::get_id());
        if (it == threads_.end()) return;
        auto &v = it->second.in_cb;
        auto pos = std::find(v.rbegin(), v.rend(), h);
        if (pos != v.rend()) v.erase(std::next(pos).base());
        forget_if_idle(it);
    }
    bool in_callback(const EventDelivery *h) const {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = threads_.find(std::this_thread::get_id());
        return it != threads_.end() && runs(it->second, h);
    }
    // Records that this thread is about to wait on h; false (and nothing
    // recorded) when that wait would close a cycle.
    bool begin_wait(const EventDelivery *h) {
        std::lock_guard<std::mutex> lock(mu_);
        auto me = std::this_thread::get_id();
        if (reaches(h, me)) return false;
        threads_[me].waiting_on = h;
        return true;
    }
    // Across fork(): the lock is held over it, so the child's copy is whole;
    // in the child only the forking thread exists, and only its own
    // entries mean anything.
    void lock_for_fork() { mu_.lock(); }
    void unlock_in_parent() { mu_.unlock(); }
    void unlock_in_child() {
        for (auto it = threads_.begin(); it != threads_.end();) {
            if (it->first != std::this_thread::get_id()) it = threads_.erase(it);
            else ++it;
        }
        mu_.unlock();
    }
    void end_wait() {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = threads_.find(std::this_thread::get_id());
        if (it == threads_.end()) return;
        it->second.waiting_on = nullptr;
        forget_if_idle(it);
    }

private:
    struct ThreadState {
        std::vector<const EventDelivery *> in_cb;  // innermost last
        const EventDelivery *waiting_on = nullptr;
    };
    using Map = std::unordered_map<std::thread::id, ThreadState>;

    static bool runs(const ThreadState &t, const EventDelivery *h) {
        return std::find(t.in_cb.begin(), t.in_cb.end(), h) != t.in_cb.end();
    }
    void forget_if_idle(Map::iterator it) {
        if (it->second.in_cb.empty() && !it->second.waiting_on) threads_.erase(it);
    }
    // Whether waiting on h waits, through the threads in h's callbacks and
    // the handles they wait on in turn, for `me`. Each handle is visited
    // once: the graph is finite and every step is under mu_.
    bool reaches(const EventDelivery *h, std::thread::id me) const {
        std::vector<const EventDelivery *> todo{h}, seen;
        while (!todo.empty()) {
            const EventDelivery *cur = todo.back();
            todo.pop_back();
            if (std::find(seen.begin(), seen.end(), cur) != seen.end()) continue;
            seen.push_back(cur);
            for (const auto &[id, t] : threads_) {
                if (!runs(t, cur)) continue;
                if (id == me) return true;
                if (t.waiting_on) todo.push_back(t.waiting_on);
            }
        }
        return false;
    }

    mutable std::mutex mu_;
    Map threads_;
};

// Never destroyed: a background thread of a handle the host never closed
// may still deliver while the process's statics are being torn down.
WaitGraph &graph() {
    static WaitGraph *g = new WaitGraph;
    return *g;
}

const int g_atfork_registered = pthread_atfork([] { graph().lock_for_fork(); },
                                               [] { graph().unlock_in_parent(); },
                                               [] { graph().unlock_in_child(); });

// The wait on h for the scope, when it is safe to wait at all.
class Waiting {
public:
    explicit Waiting(const EventDelivery *h) : ok_(graph().begin_wait(h)) {}
    ~Waiting() {
        if (ok_) graph().end_wait();
    }
    Waiting(const Waiting &) = delete;
    Waiting &operator=(const Waiting &) = delete;
    explicit operator bool() const { return ok_; }

private:
    bool ok_;
};

}  // namespace

bool EventDelivery::in_own_callback() const { return graph().in_callback(this); }

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
        const EventDelivery *h;
        explicit Mark(const EventDelivery *d) : h(d) { graph().enter_callback(h); }
        ~Mark() { graph().leave_callback(h); }
    } mark(this);
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
        bg_stop_->store(true);
        bg_stop_.reset();
    }
    queue_.recheck();
    bg.join();
}

int EventDelivery::set_background(Callback cb) {
    {
        Waiting waiting(this);
        if (!waiting) return kEDeadlk;
        stop_background();
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (bg_.joinable()) return kEState;  // another thread started one meanwhile
    if (!cb) return kOk;
    auto stop = std::make_shared<std::atomic<bool>>(false);
    bg_ = std::thread([this, stop, cb = std::move(cb)] {
        while (!stop->load()) {
            auto ev = queue_.pop(-1, stop.get());
            if (!ev) continue;
            try {
                deliver(cb, std::move(ev));
            } catch (...) {
            }
        }
    });
    bg_stop_ = std::move(stop);
    return kOk;
}

int EventDelivery::close(const std::function<void()> &wake) {
    Waiting waiting(this);
    if (!waiting) return kEDeadlk;
    stop_background();
    waiters_.close_and_drain(wake);
    return kOk;
}

}  // namespace zkelect
