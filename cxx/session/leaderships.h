// The client's book of its candidacies' terms: how many of them lead and
// how many stand in line, and, while someone listens (a balanced group,
// cxx/balance/), each leading candidacy's way to hand its term to another
// client, oldest term first. Candidacies write it (their Term, their state
// changes); the balancer reads it. Here, in the session's room, so that a
// candidacy needs nothing above it to be counted. Loop thread only, but for
// leading() and in_line(), which a stats snapshot reads from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <unordered_map>
#include <utility>

namespace zkelect {

class Leaderships {
public:
    // Hand the term to the candidate of the same election whose node the
    // session `owner` holds, within the CLOCK_BOOTTIME deadline; done(code)
    // once, on the loop, with the transfer's outcome (Candidacy::transfer).
    using Give = std::function<void(int64_t owner, int64_t deadline, std::function<void(int)> done)>;

    // A term of member began; give is kept only while someone listens.
    void began(uint64_t member, Give give) {
        ++leading_;
        if (listener_) {
            uint64_t seq = ++seq_;
            by_age_[seq] = {member, std::move(give)};
            seq_of_[member] = seq;
        }
        tell();
    }
    // ... and ended (a no-op for a member not counted).
    void ended(uint64_t member) {
        if (leading_.load(std::memory_order_relaxed) > 0) --leading_;
        if (auto it = seq_of_.find(member); it != seq_of_.end()) {
            by_age_.erase(it->second);
            seq_of_.erase(it);
        }
        tell();
    }
    // A candidacy took a place in line (+1: it has a node and waits, leads
    // or hands over) or left it (-1).
    void line(int delta) {
        size_t now = in_line_.load(std::memory_order_relaxed);
        in_line_.store(delta < 0 && now == 0 ? 0 : now + delta, std::memory_order_relaxed);
        tell();
    }

    // Any thread (each a count of its own: the two may be a change apart).
    size_t leading() const { return leading_.load(std::memory_order_relaxed); }
    size_t in_line() const { return in_line_.load(std::memory_order_relaxed); }
    // Whether member's term is in the book (while someone listens).
    bool leads(uint64_t member) const { return seq_of_.count(member) != 0; }
    // fn(member, give) for each leading candidacy, oldest term first, while
    // it returns true.
    template <class F>
    void each_oldest(F fn) const {
        for (const auto &[seq, e] : by_age_)
            if (!fn(e.first, e.second)) return;
    }
    // Called on the loop after every change; set before the first candidacy.
    void listen(std::function<void()> fn) { listener_ = std::move(fn); }

private:
    void tell() {
        if (listener_) listener_();
    }

    // Written on the loop only; atomic for the readers on other threads.
    std::atomic<size_t> leading_{0};
    std::atomic<size_t> in_line_{0};
    uint64_t seq_ = 0;
    std::map<uint64_t, std::pair<uint64_t, Give>> by_age_;  // term's seq -> member, give
    std::unordered_map<uint64_t, uint64_t> seq_of_;           // member -> term's seq
    std::function<void()> listener_;
};

}  // namespace zkelect
