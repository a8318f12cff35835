// Closes retired ZooKeeper handles on threads of their own.
//
// A handle that libzookeeper thinks connected closes by sending a close
// request and waiting for the server to end the connection: up to 1.5 s
// against a server that never does, and 3 s more if the socket will not take
// the request. A broken server's handshake (session 0, timeout 0) leaves the
// handle connected only between reconnects it makes without pause; waiting
// on the loop for a moment between two of them let the storm run on, so a
// refused handle is closed at once, here, off the loop.
//
// Owned by one client and used from its loop only; join_all() (and the
// destructor) waits for every close, so nothing of a retired handle outlives
// the client.
#pragma once

#include <atomic>
#include <memory>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace zkelect {

class SessionCloser {
public:
    SessionCloser() = default;
    SessionCloser(const SessionCloser &) = delete;
    SessionCloser &operator=(const SessionCloser &) = delete;
    ~SessionCloser() { join_all(); }

    // Drops this reference to the handle on a new thread (the close runs
    // there if it was the last one). Without a thread, it is dropped here.
    void retire(std::shared_ptr<void> handle) {
#ifdef ZKELECT_SIM
        // The simulation's ports belong to its one thread.
        handle.reset();
        return;
#endif
        reap_finished();
        auto done = std::make_shared<std::atomic<bool>>(false);
        try {
            std::thread t([h = handle, done]() mutable {
                h.reset();
                done->store(true, std::memory_order_release);
            });
            handle.reset();  // the thread holds it now
            closing_.push_back(Closing{std::move(t), std::move(done)});
        } catch (const std::system_error &) {
            handle.reset();
        } catch (const std::bad_alloc &) {
            handle.reset();
        }
    }

    void join_all() {
        for (auto &c : closing_) c.thread.join();
        closing_.clear();
    }

private:
    struct Closing {
        std::thread thread;
        std::shared_ptr<std::atomic<bool>> done;
    };

    // At most one refused handle a second comes here, so the list stays short.
    void reap_finished() {
        for (auto it = closing_.begin(); it != closing_.end();) {
            if (it->done->load(std::memory_order_acquire)) {
                it->thread.join();
                it = closing_.erase(it);
            } else {
                ++it;
            }
        }
    }

    std::vector<Closing> closing_;
};

}  // namespace zkelect
