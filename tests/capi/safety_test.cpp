// Of N candidates exactly one leads at every instant, while leadership is
// handed on again and again. A sampler thread reads every handle's lease
// continuously; the main thread forces resigns and collects every event.
#include "capi_util.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdarg>
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

// --- issue 27, finding 11: a forked child of a leader must not answer 1.
namespace {

// The child's side: every check writes one line to fd at once (a later
// hang then still shows how far it got), and the exit status says whether
// all held. No GoogleTest in the child: its state is the parent's copy.
[[noreturn]] void forked_child(int fd, zkelect_client_t *c, zkelect_election_t *e,
                               const std::string &path) {
    int bad = 0;
    auto check = [&](bool ok, const char *fmt, ...) {
        char line[512];
        int n = std::snprintf(line, sizeof line, "%s ", ok ? "ok " : "BAD");
        va_list ap;
        va_start(ap, fmt);
        n += std::vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
        va_end(ap);
        if (n > int(sizeof line) - 2) n = int(sizeof line) - 2;
        line[n++] = '\n';
        if (write(fd, line, n) < 0) {
        }
        if (!ok) ++bad;
    };
    // The parent resigns right after the fork; its copy of the lease says
    // nothing about the parent's leadership now.
    int ones = 0, samples = 0;
    for (auto end = now_ms() + 500; now_ms() < end; ++samples) ones += zkelect_is_leader(e);
    check(ones == 0, "is_leader() answered 1 in %d of %d samples in the child", ones, samples);
    int64_t token = 0;
    check(zkelect_fencing_token(e, &token) != 0, "fencing_token: %s", zkelect_err_name(zkelect_fencing_token(e, &token)));
    int rc = zkelect_volunteer(e);
    check(rc == ZKELECT_ESTATE && std::strstr(zkelect_last_error(), "fork()"),
          "volunteer: %s, last error: %s", zkelect_err_name(rc), zkelect_last_error());
    rc = zkelect_resign(e);
    check(rc == ZKELECT_ESTATE, "resign: %s", zkelect_err_name(rc));
    rc = zkelect_await_leader(e, 100);
    check(rc == ZKELECT_ESTATE, "await_leader: %s", zkelect_err_name(rc));
    zkelect_event_t *ev = zkelect_next_event(e, 100);
    check(ev == nullptr && std::strstr(zkelect_last_error(), "fork()"), "next_event: %s, %s",
          ev ? zkelect_event_type_name(zkelect_event_type(ev)) : "NULL", zkelect_last_error());
    rc = zkelect_set_event_cb(e, nullptr, nullptr);
    check(rc == ZKELECT_ESTATE, "set_event_cb: %s", zkelect_err_name(rc));
    rc = zkelect_dispatch(e, 0);
    check(rc == ZKELECT_ESTATE, "dispatch: %s", zkelect_err_name(rc));
    rc = zkelect_set_background_event_cb(e, nullptr, nullptr);
    check(rc == ZKELECT_ESTATE, "set_background_event_cb: %s", zkelect_err_name(rc));
    rc = zkelect_event_fd(e);
    check(rc == ZKELECT_ESTATE, "event_fd: %d", rc);
    rc = zkelect_wake(e);
    check(rc == ZKELECT_ESTATE, "wake: %s", zkelect_err_name(rc));
    char buf[128];
    rc = zkelect_leader_id(e, buf, sizeof buf);
    check(rc == ZKELECT_ESTATE, "leader_id: %s", zkelect_err_name(rc));
    check(zkelect_participants(e, buf, sizeof buf) == nullptr, "participants refused: %s", buf);
    check(zkelect_election_stats(e, buf, sizeof buf) == nullptr, "election_stats refused");
    check(zkelect_client_stats(c, buf, sizeof buf) == nullptr, "client_stats refused");
    rc = zkelect_client_await_connected(c, 100);
    check(rc == ZKELECT_ESTATE, "client_await_connected: %s", zkelect_err_name(rc));
    check(zkelect_client_is_connected(c) == 0, "client_is_connected answered 0");
    check(zkelect_client_session_id(c) == 0, "client_session_id answered 0");
    check(zkelect_election_new(c, (path + "-child").c_str(), "child", buf, sizeof buf) == nullptr,
          "election_new on the inherited client refused: %s", buf);
    check(zkelect_observer_new(c, path.c_str(), buf, sizeof buf) == nullptr,
          "observer_new on the inherited client refused: %s", buf);
    // Last, as they would hang or close the parent's session if they acted.
    rc = zkelect_election_destroy(e);
    check(rc == ZKELECT_ESTATE, "election_destroy: %s", zkelect_err_name(rc));
    rc = zkelect_client_destroy(c);
    check(rc == ZKELECT_ESTATE, "client_destroy: %s", zkelect_err_name(rc));
#if !defined(__SANITIZE_THREAD__)  // TSan forbids threads in a child of a threaded parent
    // What the child makes is its own, and works.
    zkelect_conf_t *conf = zkelect_conf_new();
    zkelect_conf_set(conf, "zk.hosts", hosts().c_str(), buf, sizeof buf);
    zkelect_client_t *mine = zkelect_client_new(conf, buf, sizeof buf);
    zkelect_conf_destroy(conf);
    check(mine != nullptr, "client_new in the child: %s", mine ? "made" : buf);
    if (mine) {
        rc = zkelect_client_await_connected(mine, 10000);
        check(rc == 0, "the child's own client connects: %s", zkelect_err_name(rc));
        zkelect_election_t *own = zkelect_election_new(mine, (path + "-child").c_str(), "child",
                                                       buf, sizeof buf);
        check(own != nullptr, "election_new on the child's own client: %s", own ? "made" : buf);
        if (own) {
            static std::atomic<int> elected{0};
            rc = zkelect_set_background_event_cb(
                own,
                [](zkelect_election_t *, const zkelect_event_t *ev, void *) {
                    if (zkelect_event_type(ev) == ZKELECT_EV_ELECTED) elected = 1;
                },
                nullptr);
            check(rc == 0, "the child's own background callback: %s", zkelect_err_name(rc));
            check(zkelect_volunteer(own) == 0, "the child's own election: volunteer");
            for (auto end = now_ms() + 10000; !elected.load() && now_ms() < end;)
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            check(elected.load() == 1 && zkelect_is_leader(own) == 1,
                  "the child's own election leads, told by its own callback");
            rc = zkelect_election_destroy(own);
            check(rc == 0, "the child's own election is destroyed: %s", zkelect_err_name(rc));
        }
        rc = zkelect_client_destroy(mine);
        check(rc == 0, "the child's own client is destroyed: %s", zkelect_err_name(rc));
    }
#endif
    _exit(bad ? 1 : 0);
}

}  // namespace

TEST(Safety, AForkedChildOfTheLeaderNeverLeadsAndItsHandlesFailCleanly) {
    std::string path = fresh_path();
    Client c1 = new_client(), c2 = new_client();
    ASSERT_TRUE(c1 && c2);
    zkelect_election_t *e1 = zkelect_election_new(c1.get(), path.c_str(), "parent", nullptr, 0);
    ASSERT_NE(e1, nullptr);
    Election e2 = new_election(c2.get(), path, "next");
    ASSERT_EQ(zkelect_volunteer(e1), 0);
    ASSERT_TRUE(wait_event(e1, ZKELECT_EV_ELECTED, 10000));
    ASSERT_EQ(zkelect_volunteer(e2.get()), 0);
    ASSERT_TRUE(wait_event(e2.get(), ZKELECT_EV_FOLLOWING, 10000));
    int64_t session = zkelect_client_session_id(c1.get());

    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    std::fflush(stdout);
    std::fflush(stderr);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        forked_child(fds[1], c1.get(), e1, path);
    }
    close(fds[1]);
    EXPECT_EQ(zkelect_resign(e1), 0);
    EXPECT_TRUE(wait_event(e2.get(), ZKELECT_EV_ELECTED, 10000)) << "the next candidate was not elected";

    // The child gets 20 s (it needs about 1); a hang is killed and fails.
    int status = 0;
    bool exited = false;
    for (auto end = now_ms() + 20000; now_ms() < end;) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
            exited = true;
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!exited) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    std::string report;
    char buf[4096];
    for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) report.append(buf, size_t(n));
    close(fds[0]);
    std::printf("the forked child's report:\n%s", report.c_str());
    EXPECT_TRUE(exited) << "the child hung (killed after 20 s); it got as far as:\n" << report;
    EXPECT_TRUE(exited && WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "child status " << status << ":\n" << report;
    EXPECT_EQ(report.find("BAD"), std::string::npos) << report;

    // Nothing the child did reached the parent's session.
    EXPECT_EQ(zkelect_client_is_connected(c1.get()), 1);
    EXPECT_EQ(zkelect_client_session_id(c1.get()), session);
    ASSERT_TRUE(wait_event(e1, ZKELECT_EV_RESIGNED, 10000));
    ASSERT_EQ(zkelect_volunteer(e1), 0);
    EXPECT_TRUE(wait_event(e1, ZKELECT_EV_FOLLOWING, 10000)) << "the parent's session no longer works";
    EXPECT_EQ(join(ids_of(participants(c2.get(), path))), "next,parent");
    EXPECT_EQ(zkelect_election_destroy(e1), 0);
}
