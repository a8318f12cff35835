// Of N candidates exactly one leads at every instant, while leadership is
// handed on again and again. A sampler thread reads every handle's lease
// continuously; the main thread forces resigns and collects every event.
#include "capi_util.h"

#include <map>
#include <mutex>
#include <thread>

using namespace capi;

namespace {

struct Seen {
    int handle;
    int type;
    int reason;
    int64_t token;
};

class Crowd {
  public:
    Crowd(int clients, int per_client, const std::string &path) {
        for (int c = 0; c < clients; ++c) {
            clients_.push_back(new_client());
            if (!clients_.back()) return;
            for (int k = 0; k < per_client; ++k) {
                std::string id = "c" + std::to_string(c) + "e" + std::to_string(k);
                ids_.push_back(id);
                hs_.push_back(new_election(clients_.back().get(), path, id));
                if (!hs_.back()) return;
            }
        }
        ok_ = true;
    }
    ~Crowd() {
        hs_.clear();  // elections before their clients
    }
    bool ok() const { return ok_; }
    size_t size() const { return hs_.size(); }
    zkelect_election_t *h(size_t i) { return hs_[i].get(); }
    const std::string &id(size_t i) const { return ids_[i]; }
    const std::vector<Seen> &log() const { return log_; }

    // Collect events from every handle (poll(2) on their fds) until pred
    // holds or timeout_ms passes. Returns pred's final value.
    template <class Pred>
    bool pump(int timeout_ms, Pred pred) {
        auto deadline = now_ms() + timeout_ms;
        std::vector<pollfd> fds(hs_.size());
        for (size_t i = 0; i < hs_.size(); ++i) fds[i] = {zkelect_event_fd(hs_[i].get()), POLLIN, 0};
        for (;;) {
            if (pred()) return true;
            int64_t left = deadline - now_ms();
            if (left <= 0) return false;
            int n = poll(fds.data(), fds.size(), static_cast<int>(left));
            if (n < 0) return false;
            for (size_t i = 0; i < fds.size(); ++i) {
                if (!(fds[i].revents & POLLIN)) continue;
                while (Event ev{zkelect_next_event(hs_[i].get(), 0)}) {
                    log_.push_back({static_cast<int>(i), zkelect_event_type(ev.get()),
                                    zkelect_event_reason(ev.get()), zkelect_event_token(ev.get())});
                }
            }
        }
    }
    int count(int type, int handle = -1, size_t from = 0) const {
        int n = 0;
        for (size_t k = from; k < log_.size(); ++k)
            if (log_[k].type == type && (handle < 0 || log_[k].handle == handle)) ++n;
        return n;
    }
    std::string tail(size_t n = 30) const {
        std::string s;
        for (size_t k = log_.size() > n ? log_.size() - n : 0; k < log_.size(); ++k)
            s += ids_[log_[k].handle] + ":" + zkelect_event_type_name(log_[k].type) + " ";
        return s;
    }

  private:
    bool ok_ = false;
    std::vector<Client> clients_;
    std::vector<Election> hs_;
    std::vector<std::string> ids_;
    std::vector<Seen> log_;
};

// Sandwich detection: sweep forward, then backward. If handle i was leader
// of the same term (same token) at both of its reads, it led throughout the
// window between them, and every read of another handle inside that window
// that saw a leader is a second leader at the same instant.
struct Sampler {
    explicit Sampler(Crowd &c) : crowd(c) {}
    Crowd &crowd;
    std::atomic<bool> stop{false};
    std::atomic<long> sweeps{0};
    std::atomic<long> with_leader{0};
    std::mutex mu;
    std::vector<std::string> violations;

    int64_t read(size_t i) {
        if (!zkelect_is_leader(crowd.h(i))) return 0;
        int64_t tok = 0;
        return zkelect_fencing_token(crowd.h(i), &tok) == 0 ? tok : -1;
    }
    void run() {
        size_t n = crowd.size();
        std::vector<int64_t> v(n), w(n);
        while (!stop.load()) {
            for (size_t i = 0; i < n; ++i) v[i] = read(i);
            for (size_t i = n; i-- > 0;) w[i] = read(i);
            bool any = false;
            for (size_t i = 0; i < n; ++i) {
                any = any || v[i] || w[i];
                if (v[i] <= 0 || v[i] != w[i]) continue;
                for (size_t j = i + 1; j < n; ++j) {
                    if (v[j] || w[j]) {
                        std::lock_guard<std::mutex> l(mu);
                        if (violations.size() < 10)
                            violations.push_back(crowd.id(i) + " (token " + std::to_string(v[i]) +
                                                 ") and " + crowd.id(j) + " (token " +
                                                 std::to_string(v[j] ? v[j] : w[j]) + ")");
                    }
                }
            }
            if (any) ++with_leader;
            ++sweeps;
        }
    }
};

void run_scenario(int clients, int per_client, int rounds) {
    std::string path = fresh_path();
    Crowd crowd(clients, per_client, path);
    ASSERT_TRUE(crowd.ok());
    const size_t n = crowd.size();
    Sampler sampler(crowd);
    std::thread t([&] { sampler.run(); });
    struct Join {
        Sampler &s;
        std::thread &t;
        ~Join() {
            s.stop = true;
            if (t.joinable()) t.join();
        }
    } join_guard{sampler, t};

    for (size_t i = 0; i < n; ++i) ASSERT_EQ(zkelect_volunteer(crowd.h(i)), 0);
    // Everyone enrolled, one elected.
    ASSERT_TRUE(crowd.pump(20000, [&] {
        return crowd.count(ZKELECT_EV_ELECTED) + crowd.count(ZKELECT_EV_FOLLOWING) >= int(n) &&
               crowd.count(ZKELECT_EV_ELECTED) == 1;
    })) << crowd.tail();

    auto current_leader = [&] {
        for (size_t k = crowd.log().size(); k-- > 0;)
            if (crowd.log()[k].type == ZKELECT_EV_ELECTED) return crowd.log()[k].handle;
        return -1;
    };
    std::vector<int64_t> tokens;
    for (auto &s : crowd.log())
        if (s.type == ZKELECT_EV_ELECTED) tokens.push_back(s.token);
    for (int r = 0; r < rounds; ++r) {
        int leader = current_leader();
        ASSERT_GE(leader, 0);
        size_t mark = crowd.log().size();
        ASSERT_EQ(zkelect_resign(crowd.h(leader)), 0);
        ASSERT_TRUE(crowd.pump(10000, [&] {
            return crowd.count(ZKELECT_EV_RESIGNED, leader, mark) == 1 &&
                   crowd.count(ZKELECT_EV_ELECTED, -1, mark) >= 1;
        })) << "round " << r << ": " << crowd.tail();
        ASSERT_EQ(crowd.count(ZKELECT_EV_ELECTED, -1, mark), 1) << crowd.tail();
        for (size_t k = mark; k < crowd.log().size(); ++k)
            if (crowd.log()[k].type == ZKELECT_EV_ELECTED) {
                EXPECT_NE(crowd.log()[k].handle, leader);
                tokens.push_back(crowd.log()[k].token);
            }
        ASSERT_EQ(zkelect_volunteer(crowd.h(leader)), 0);
        size_t mark2 = crowd.log().size();
        ASSERT_TRUE(crowd.pump(10000, [&] {
            return crowd.count(ZKELECT_EV_FOLLOWING, leader, mark2) >= 1;
        })) << crowd.tail();
    }
    // Let anything still in flight arrive, then account for every term.
    crowd.pump(300, [] { return false; });
    sampler.stop = true;
    t.join();

    EXPECT_EQ(crowd.count(ZKELECT_EV_ELECTED), rounds + 1) << crowd.tail();
    EXPECT_EQ(crowd.count(ZKELECT_EV_DEPOSED), rounds);
    EXPECT_EQ(crowd.count(ZKELECT_EV_RESIGNED), rounds);
    for (auto &s : crowd.log()) {
        if (s.type == ZKELECT_EV_DEPOSED) {
            EXPECT_EQ(s.reason, ZKELECT_REASON_RESIGNED);
        }
        EXPECT_NE(s.type, ZKELECT_EV_ERROR);
    }
    for (size_t k = 1; k < tokens.size(); ++k) EXPECT_GT(tokens[k], tokens[k - 1]);
    int leaders_now = 0;
    for (size_t i = 0; i < n; ++i) leaders_now += zkelect_is_leader(crowd.h(i));
    EXPECT_EQ(leaders_now, 1);
    std::lock_guard<std::mutex> l(sampler.mu);
    EXPECT_TRUE(sampler.violations.empty()) << "two leaders at once: " << join(sampler.violations);
    EXPECT_GT(sampler.sweeps.load(), 100) << "sampler barely ran";
    std::printf("N=%zu: %d terms, %ld double sweeps (%ld saw a leader), 0 overlaps\n", n,
                rounds + 1, sampler.sweeps.load(), sampler.with_leader.load());
}

}  // namespace

TEST(Safety, FiveCandidatesOneLeaderAtEveryInstant) { run_scenario(5, 1, 12); }

TEST(Safety, FiftyCandidatesOneLeaderAtEveryInstant) { run_scenario(10, 5, 12); }
