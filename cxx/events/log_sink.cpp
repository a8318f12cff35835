#include "log_sink.h"

#include <pthread.h>
#include <zookeeper/zookeeper.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <new>
#include <string>
#include <thread>

// libzookeeper's level (zookeeper_log.h declares it, but includes
// "zookeeper.h" by a path only its own build has).
extern "C" ZOOAPI ZooLogLevel logLevel;

namespace zkelect {

namespace {

// libzookeeper calls zk_log_message on its I/O and completion threads, and
// on whichever thread calls into it (the loop, zkelect_client_new). None of
// them may run the host's callback: a slow one would stall the I/O of every
// client in the process, and one that calls back into the library would
// wait on itself. So a record is only copied into a bounded queue there,
// and a thread of the sink's own hands it to the callback.
struct Sink {
    std::mutex mu;
    std::condition_variable more;  // a record, a drop, or stop
    std::condition_variable idle;  // a delivery ended
    LogFn fn = nullptr;
    void *opaque = nullptr;
    int level = 0;
    // Bumped by every set_log_sink; the delivery in progress, if any, runs
    // the callback of generation `delivering` (0: none).
    uint64_t generation = 1;
    uint64_t delivering = 0;
    // A record, or (dropped > 0) how many records were dropped at that
    // point, so the count arrives where the gap is.
    struct Entry {
        std::string message;
        uint64_t dropped = 0;
    };
    std::deque<Entry> queue;
    std::thread thread;
    std::thread::id thread_id;
    bool running = false;
    bool stop = false;
};

// Never destroyed: ZooKeeper's threads of a client the host never destroyed
// may still log while the process's statics are torn down.
Sink &sink() {
    static Sink *s = new Sink;
    return *s;
}

// libzookeeper formats "<time>:<pid>(<thread>):ZOO_<LEVEL>@<function>@<line>: ".
int level_of(const std::string &message) {
    static constexpr struct {
        const char *tag;
        int level;
    } kTags[] = {{"ZOO_ERROR@", 1}, {"ZOO_WARN@", 2}, {"ZOO_INFO@", 3}, {"ZOO_DEBUG@", 4}};
    for (const auto &t : kTags)
        if (message.find(t.tag) != std::string::npos) return t.level;
    return 1;
}

void deliver_loop() {
    Sink &s = sink();
    std::unique_lock<std::mutex> lock(s.mu);
    for (;;) {
        s.more.wait(lock, [&] { return s.stop || !s.queue.empty(); });
        if (s.stop) return;
        Sink::Entry e = std::move(s.queue.front());
        s.queue.pop_front();
        if (s.queue.empty()) s.idle.notify_all();
        std::string message;
        int level;
        if (e.dropped > 0) {
            // At a level the host asked for, whatever it is.
            message = "libzkelect: " + std::to_string(e.dropped) +
                      " log records dropped: the log callback did not keep up (the queue holds " +
                      std::to_string(kLogQueueMax) + ")";
            level = s.level < 2 ? s.level : 2;
        } else {
            message = std::move(e.message);
            level = level_of(message);
        }
        LogFn fn = s.fn;
        void *opaque = s.opaque;
        if (!fn || level <= 0 || level > s.level) continue;
        s.delivering = s.generation;
        lock.unlock();
        try {
            fn(level, message.c_str(), opaque);
        } catch (...) {
        }
        lock.lock();
        s.delivering = 0;
        s.idle.notify_all();
    }
}

// Under s.mu. Started on the first callback (and again in a child of
// fork(), whose copy of the sink has no thread).
void ensure_thread(Sink &s) {
    if (s.running || s.stop) return;  // stop: reaped, the process is ending
    s.thread = std::thread(deliver_loop);
    s.thread_id = s.thread.get_id();
    s.running = true;
}

// The sink's lock is held across fork(), so the child's copy is consistent;
// the child has no delivery thread and none of the parent's records.
void before_fork() { sink().mu.lock(); }
void after_fork_parent() { sink().mu.unlock(); }
void after_fork_child() {
    Sink &s = sink();
    s.mu.unlock();
    // The parent's thread is not here: forget it without joining, and make
    // the condition variables fresh (waiters of the parent's are gone).
    new (&s.thread) std::thread();
    new (&s.more) std::condition_variable();
    new (&s.idle) std::condition_variable();
    s.running = false;
    s.thread_id = std::thread::id();
    s.delivering = 0;
    s.queue.clear();
}

// At exit (or when the library is unloaded) the thread is stopped: what is
// queued gets up to a second to reach the callback (a tool's last lines
// about why it could not connect), then the thread is joined, or left to
// the process's end when the callback is stuck in a call.
struct Reaper {
    Reaper() { pthread_atfork(before_fork, after_fork_parent, after_fork_child); }
    ~Reaper() {
        Sink &s = sink();
        std::unique_lock<std::mutex> lock(s.mu);
        if (!s.running) return;
        bool self = std::this_thread::get_id() == s.thread_id;
        if (!self)
            s.idle.wait_for(lock, std::chrono::seconds(1),
                            [&] { return s.queue.empty() && s.delivering == 0; });
        s.stop = true;
        s.running = false;
        bool busy = s.delivering != 0;
        std::thread t = std::move(s.thread);
        lock.unlock();
        s.more.notify_all();
        if (self || busy) t.detach();
        else t.join();
    }
} reaper;

}  // namespace

void set_log_sink(int level, LogFn fn, void *opaque) {
    static constexpr ZooLogLevel kLevels[] = {(ZooLogLevel)0, ZOO_LOG_LEVEL_ERROR,
                                              ZOO_LOG_LEVEL_WARN, ZOO_LOG_LEVEL_INFO,
                                              ZOO_LOG_LEVEL_DEBUG};
    level = level < 0 ? 0 : level > 4 ? 4 : level;
    Sink &s = sink();
    std::unique_lock<std::mutex> lock(s.mu);
    s.fn = level > 0 ? fn : nullptr;
    s.opaque = opaque;
    s.level = level;
    uint64_t mine = ++s.generation;
    if (!s.fn) {
        s.queue.clear();
    } else {
        ensure_thread(s);
    }
    // libzookeeper reads its level unsynchronized on every thread that logs:
    // write it only when it changes (a callback that sets the same level
    // again, as a tool's does on every client, races nothing).
    if (logLevel != kLevels[level]) zoo_set_debug_level(kLevels[level]);
    // Once this returns, the previous callback neither runs nor will: the
    // host may free what its opaque pointed to. From inside the callback
    // that wait would be on itself; the callback returns on its own.
    if (std::this_thread::get_id() == s.thread_id) return;
    s.idle.wait(lock, [&] { return s.delivering == 0 || s.delivering >= mine; });
}

void zk_log_message(const char *message) {
    if (!message) return;
    try {
        Sink &s = sink();
        std::lock_guard<std::mutex> lock(s.mu);
        if (!s.fn) return;
        if (s.queue.size() < kLogQueueMax) {
            s.queue.push_back({message, 0});
        } else if (s.queue.back().dropped > 0) {
            ++s.queue.back().dropped;
        } else {
            s.queue.push_back({std::string(), 1});  // one over the bound, once
        }
        ensure_thread(s);
        s.more.notify_one();
    } catch (...) {
        // Out of memory or threads: the record is lost, as the log is.
    }
}

}  // namespace zkelect
