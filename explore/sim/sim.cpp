// zkelect-sim: the fault explorer's deterministic tier (issue 29). Each run
// is one seed: it draws a world (T, tickTime, processes, clients, elections)
// and a schedule of faults and user actions, runs the engine against the
// ensemble model of world.h on virtual time, and checks the history as the
// real-process explorer's checker does:
//   two-leaders    two handles answer is_leader 1 for one path at one instant
//                  (outside T/2 + 250 ms after an operator deleted a node of
//                  one of them);
//   token          a term's fencing token is not above the previous term's;
//   after-resign   is_leader 1 after resign returned, before a new volunteer;
//   resigned-node  RESIGNED while the committed tree still holds a node of
//                  the candidacy;
//   liveness       once the faults stop, within the bound, not exactly one
//                  leader among a path's candidacies, or a candidate node no
//                  live candidacy owns.
//   node-bytes     then, a client's reserved candidate-node bytes
//                  (zk.session.nodes.max.bytes) are not one node's per
//                  candidacy;
//   orphan-first   during the run, a node no live candidacy owns first in
//                  line past 4 T + 2 s after the latest fault ended;
//   transfer-bound a transfer unanswered past its timeout + 3 T;
//   transfer-estate ESTATE with no other transfer of the handle running;
//   flicker        is_leader 1, 0, 1 with no DEPOSED or ELECTED between;
//   events         ELECTED while leading, DEPOSED while not, or no DEPOSED
//                  100 ms after is_leader went 0.
//   fenced-order   a fenced write (step fwrite: every leader writes its
//                  token to its path's data node) committed after a later
//                  term's first fenced write on that node;
//   fenced-lost    a fenced write answered OK that never committed;
//   fenced-refused one answered EFENCED, EZK or ENOTLEADER that committed.
// Every violation prints its seed and schedule; --seed replays it, --shrink
// shortens it and --case writes/reads the shortened schedule (those kept:
// explore/sim/cases/, replayed by tests/sim/test_sim.py).
//
//   zkelect-sim [--seed S] [--runs N] [--minutes M] [--shrink SECONDS]
//               [--case FILE] [--write-case FILE] [--verbose]
//               [--without KIND]... [--ignore VIOLATION]... [--no-margin] [--no-balance]
#include <sys/time.h>
#include <zookeeper/zookeeper.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "balancer.h"
#include "client.h"
#include "election.h"
#include "names.h"
#include "world.h"

using namespace sim;
using zkelect::Client;
using zkelect::Election;
using zkelect::EventType;

namespace {

// One step of a schedule: what happens, when, to whom. The parameters are
// drawn when the schedule is made, so the list alone replays the run.
struct Step {
    int64_t at = 0;  // ns from the start
    std::string kind;
    int a = 0, b = 0;   // targets (process, client, hand, server, path...)
    int64_t d = 0;      // a duration or a delay
    int op = 0;         // drop: the request kind; others: a flag
};

struct World {
    int64_t t_ms = 0, tick_ms = 0;
    int procs = 0, clients = 0, hands = 0, paths = 0;
    int64_t min_session_ms = 0;  // 0: ZooKeeper's default, 2 x tickTime
    int margin_ms = -1;          // lease.margin.ms (-1: derived)
    bool balanced = false;       // every client in one balance.group (issue 56)
};

World draw_world(Rng &r) {
    World w;
    static const int64_t ts[] = {1000, 2000, 4000, 6000};
    w.t_ms = ts[r.next() % 4];
    static const int divs[] = {2, 3, 6, 10};
    w.tick_ms = std::max<int64_t>(50, w.t_ms / divs[r.next() % 4]);
    w.procs = int(r.range(2, 3));
    w.clients = int(r.range(1, 2));
    w.hands = int(r.range(1, 3));
    w.paths = int(r.range(1, 2));
    // One world in five lets servers grant less than two ticks: a tick of
    // 2/3, 4/3 or 3/2 T with minSessionTimeout at half a tick (ZooKeeper
    // takes any value; tests/integration/test_ticktime.py runs tick 2 s,
    // minimum 1 s). A tick above T is where a follower's report lag
    // (half a tick) exceeds the T/4 that the default allows for.
    if (r.chance(0.2)) {
        static const int num[] = {2, 4, 3}, den[] = {3, 3, 2};
        int i = int(r.next() % 3);
        w.tick_ms = w.t_ms * num[i] / den[i];
        w.min_session_ms = w.tick_ms / 2;
    }
    return w;
}

const char *kKinds[] = {"drop", "reset", "blackhole", "uphold", "delay", "pstop", "pkill", "sdown",
                        "sbehind", "shrink", "quorum", "slow", "odel", "opath", "foreign", "vol",
                        "res", "destroy", "newhand", "newclient", "xfer", "sstall", "acl", "ddis",
                        "xdis"};
const double kWeights[] = {14, 4, 4, 3, 2, 3, 1, 1, 3, 1.5, 0.5, 1, 6, 0.5, 1, 8, 8, 2, 2, 1, 5, 2, 3, 2, 3};
// Step kinds left out (--without): drawn as always, so the other steps keep
// their places, and then skipped.
std::set<std::string> &without() {
    static std::set<std::string> w;
    return w;
}
// Violation kinds not counted (--ignore): a rule whose finding is still open
// stays out of the short form (tests/sim/test_sim.py's KNOWN_OPEN) and in
// ./dev explore --sim.
std::set<std::string> &ignored() {
    static std::set<std::string> w;
    return w;
}
bool &no_margin() {  // --no-margin: no world configures lease.margin.ms
    static bool b = false;
    return b;
}
bool &no_balance() {  // --no-balance: no world is a balanced group
    static bool b = false;
    return b;
}

std::vector<Step> make_schedule(Rng &r, const World &w, int64_t duration) {
    std::vector<Step> out;
    double total = 0;
    for (double x : kWeights) total += x;
    int n = int(r.range(15, 40));
    for (int i = 0; i < n; ++i) {
        Step s;
        s.at = r.range(int64_t(w.t_ms) * kMs, duration);
        double x = double(r.next() % 1000000) / 1000000.0 * total;
        size_t k = 0;
        while (k + 1 < sizeof kWeights / sizeof kWeights[0] && x >= kWeights[k]) x -= kWeights[k++];
        s.kind = kKinds[k];
        s.a = int(r.next() % 64);
        s.b = int(r.next() % 64);
        s.d = r.range(w.t_ms * kMs / 10, 2 * w.t_ms * kMs);
        s.op = int(r.next() % 16);
        out.push_back(s);
    }
    // A server that throttles (0-2 a run), drawn after the rest so that
    // every seed's other steps stay what they were before this kind came.
    Rng extra(r.next() ^ 0x7468726f74746c65ULL);
    for (int i = int(extra.range(0, 2)); i > 0; --i) {
        Step s;
        s.at = extra.range(int64_t(w.t_ms) * kMs, duration);
        s.kind = "throttle";
        s.a = int(extra.next() % 64);
        s.d = extra.range(w.t_ms * kMs / 10, 2 * w.t_ms * kMs);
        out.push_back(s);
    }
    // Fenced writes (issue 54): at each, every handle that leads commits
    // 1-3 fenced writes of its token to its path's data node. From a
    // generator of their own, as above.
    Rng fw(extra.next() ^ 0x66656e636564ULL);
    for (int i = int(fw.range(10, 40)); i > 0; --i) {
        Step s;
        s.at = fw.range(int64_t(w.t_ms) * kMs, duration);
        s.kind = "fwrite";
        s.op = int(fw.next() % 3) + 1;
        out.push_back(s);
    }
    std::sort(out.begin(), out.end(), [](const Step &x, const Step &y) { return x.at < y.at; });
    return out;
}

std::string step_text(const Step &s) {
    char buf[160];
    snprintf(buf, sizeof buf, "%lld %s %d %d %lld %d", (long long)s.at, s.kind.c_str(), s.a, s.b,
             (long long)s.d, s.op);
    return buf;
}

struct Violation {
    std::string kind, what;
};

// One run.
class Run {
public:
    Run(uint64_t seed, const World &w, std::vector<Step> steps, bool verbose)
        : seed_(seed), w_(w), steps_(std::move(steps)), verbose_(verbose), rng_(seed ^ 0x5eed),
          ens_(sched_, rng_, 3, int(w.tick_ms)) {
        current_scheduler() = &sched_;
        current_rng() = &rng_;
        ens_.set_min_session_ms(w.min_session_ms);
        sched_.at(int64_t(1000) * kMs, [] {});  // time starts at 1 s
        sched_.step();
    }
    ~Run() {
        closing_ = true;
        for (auto &p : procs_) kill_process(*p, false);
        current_scheduler() = nullptr;
        current_rng() = nullptr;
    }

    std::vector<Violation> go(int64_t duration);
    uint64_t steps() const { return sched_.steps(); }

private:
    struct Hand {
        std::unique_ptr<Election> e;
        int path = 0;
        std::string id;
        bool candidate = false;     // volunteered and not resigned since
        bool resigned = false;      // resign returned, no volunteer since
        uint64_t volunteers = 0, resign_volunteers = 0;
        bool leading = false;       // as last sampled
        int64_t lead_since = 0;
        bool told_leading = false;  // the last of ELECTED/DEPOSED was ELECTED
        int64_t lost_at = 0;        // when is_leader() was first seen 0 after 1
        // is_leader() went 1 -> 0 and neither DEPOSED nor ELECTED came since:
        // a 1 now is a lead that came back unannounced.
        bool fell = false;
        struct Xfer {
            int64_t deadline;  // timeout + 3 T (docs/api.md), plus stops
            bool done = false;
        };
        std::vector<std::shared_ptr<Xfer>> xfers;  // begun, not answered
    };
    struct Cl {
        std::unique_ptr<Client> c;
        std::vector<std::unique_ptr<Hand>> hands;
        std::shared_ptr<zkelect::balance::Balancer> balancer;  // w.balanced
        int64_t turn_at = INT64_MAX;
    };
    struct Proc {
        int n = 0;
        bool paused = false, dead = false;
        int64_t paused_at = 0;
        std::vector<std::unique_ptr<Cl>> clients;
        std::vector<std::weak_ptr<SimPort>> ports;
    };

    std::string path(int i) const { return "/e" + std::to_string(i); }
    // The data node that path i's leaders write to with fenced writes.
    std::string fdata(int i) const { return "/f" + std::to_string(i); }
    // Issue 54: fenced writes and what the checker knows of them.
    void fenced_write(Hand &h);
    void fenced_answer(const std::string &data, int code, const std::string &why);
    void check_fenced();
    struct FencedTop {
        int64_t token = 0;
        std::string first;  // the data of that term's first committed write
        int64_t zxid = 0;
    };
    std::map<std::string, FencedTop> fenced_top_;  // data node -> latest term
    std::set<std::string> committed_, refused_;    // writes, by their data
    uint64_t next_txn_ = 0, fenced_serial_ = 0;
    std::map<int, uint64_t> fenced_codes_;
    bool closing_ = false;
    void start_process(Proc &p);
    std::unique_ptr<Cl> new_client(Proc &p);
    void new_hand(Proc &p, Cl &c, int path, bool volunteer);
    void kill_process(Proc &p, bool restart);
    void destroy_hand(Cl &c, size_t i);
    void destroy_client(Proc &p, size_t i);
    Proc *target(const Step &s);
    // now_or_never: a user call held for a racy moment is made now.
    void apply(const Step &s, bool now_or_never = false);
    std::vector<std::pair<Step, int64_t>> racy_;
    uint64_t transfers_ = 0;
    void after_step();
    void sample();
    void drain(Cl &c);
    bool excused(int path, const Hand &h, int64_t now) const;
    void violate(const std::string &kind, const std::string &what) {
        if (ignored().count(kind)) return;
        if (viol_.size() < 20) viol_.push_back({kind, what});
    }
    void heal();
    void resume(Proc &p);
    void check_end();
    // Issue 50's checks made as the run goes.
    void check_transfers();
    void check_first_in_line();
    Hand *find_hand(const std::string &id, Cl **cl = nullptr, size_t *index = nullptr);
    void requeue(Hand &h);
    void begin_transfer(Hand &from, const std::string &to, int64_t ms);
    int64_t quiet_since_ = 0;    // the end of the latest fault applied
    int64_t next_line_check_ = 0;
    std::map<int, std::pair<std::string, int64_t>> orphan_first_;  // path -> node, since
    std::string hname(const Hand &h) const { return h.id; }

    uint64_t seed_;
    World w_;
    std::vector<Step> steps_;
    bool verbose_;
    Scheduler sched_;
    Rng rng_;
    Ensemble ens_;
    std::vector<std::unique_ptr<Proc>> procs_;
    std::vector<Violation> viol_;
    int next_proc_ = 0, next_hand_ = 0;
    bool faults_on_ = true;
    // path -> (token, hand id) of the last term begun
    std::map<int, std::pair<int64_t, std::string>> last_term_;
    // Operator deletions: time, path, ids of the hands whose nodes went.
    struct Deletion {
        int64_t at;
        int path;
        std::set<std::string> ids;
    };
    std::vector<Deletion> deletions_;
};

void Run::start_process(Proc &p) {
    p.n = next_proc_++;
    for (int c = 0; c < w_.clients; ++c) {
        auto cl = new_client(p);
        Cl &ref = *cl;
        p.clients.push_back(std::move(cl));
        for (int h = 0; h < w_.hands; ++h) new_hand(p, ref, int(rng_.next() % uint64_t(w_.paths)), true);
    }
}

std::unique_ptr<Run::Cl> Run::new_client(Proc &p) {
    zkelect::Settings s;
    s.hosts = "sim:2181";
    s.session_timeout_ms = int(w_.t_ms);
    s.probe_ticktime = true;  // the model answers `conf` (SimPort::ask_conf)
    s.follow_hosts = false;
    s.guard = zkelect::GuardMode::kOff;
    s.lease_margin_ms = w_.margin_ms;
    if (w_.balanced) s.balance_group = "/balance/group";
    Proc *pp = &p;
    Ensemble *ens = &ens_;
    auto cl = std::make_unique<Cl>();
    cl->c = std::make_unique<Client>(
        s, [pp, ens](const zkelect::Settings &st, zkelect::WatchFn on_watch,
                     std::atomic<uint64_t> *counter, bool connect) {
            auto port = std::make_shared<SimPort>(*ens, pp->n, st.session_timeout_ms,
                                                  std::move(on_watch), counter);
            pp->ports.push_back(port);
            if (connect) port->start();
            else port->hold_place();
            return std::static_pointer_cast<zkelect::ZkPort>(port);
        });
    if (w_.balanced) cl->balancer = zkelect::balance::Balancer::open(*cl->c);
    return cl;
}

void Run::new_hand(Proc &p, Cl &c, int pth, bool volunteer) {
    auto h = std::make_unique<Hand>();
    h->path = pth;
    h->id = "p" + std::to_string(p.n) + ".h" + std::to_string(next_hand_++);
    h->e = std::make_unique<Election>(*c.c, path(pth), h->id);
    if (volunteer && h->e->volunteer() == zkelect::kOk) {
        h->candidate = true;
        h->volunteers++;
    }
    c.hands.push_back(std::move(h));
}

void Run::destroy_hand(Cl &c, size_t i) {
    auto &h = c.hands[i];
    h->e->leave();
    h->e.reset();
    c.hands.erase(c.hands.begin() + long(i));
}

void Run::destroy_client(Proc &p, size_t i) {
    auto &cl = p.clients[i];
    for (auto &h : cl->hands) {
        h->e->leave();
        h->e.reset();
    }
    cl->hands.clear();
    cl->c.reset();  // closes the session
    p.clients.erase(p.clients.begin() + long(i));
}

void Run::kill_process(Proc &p, bool restart) {
    if (p.dead) return;
    for (auto &w : p.ports)
        if (auto port = w.lock()) port->kill();
    for (auto &cl : p.clients) {
        for (auto &h : cl->hands) {
            h->e->leave();
            h->e.reset();
        }
        cl->hands.clear();
        cl->c.reset();
    }
    p.clients.clear();
    p.dead = true;
    if (restart) {
        auto np = std::make_unique<Proc>();
        start_process(*np);
        procs_.push_back(std::move(np));
    }
}

bool Run::excused(int pth, const Hand &h, int64_t now) const {
    for (const auto &d : deletions_)
        if (d.path == pth && d.ids.count(h.id) && now >= d.at &&
            now <= d.at + w_.t_ms * kMs / 2 + 250 * kMs)
            return true;
    return false;
}

void Run::sample() {
    int64_t now = sched_.now();
    std::map<int, std::vector<Hand *>> leaders;
    for (auto &p : procs_) {
        if (p->dead || p->paused) continue;
        for (auto &cl : p->clients)
            for (auto &h : cl->hands) {
                bool l = h->e->is_leader();
                if (l && h->resigned)
                    violate("after-resign", h->id + ": is_leader 1 after resign returned, at " +
                                                std::to_string(now / kMs) + " ms");
                if (l && !h->leading) {
                    int64_t tok = 0;
                    h->e->fencing_token(&tok);
                    auto it = last_term_.find(h->path);
                    if (it != last_term_.end()) {
                        auto [lt, lid] = it->second;
                        if ((tok < lt || (tok == lt && lid != h->id)) && !excused(h->path, *h, now))
                            violate("token", h->id + ": token " + std::to_string(tok) + " after " +
                                                 std::to_string(lt) + " of " + lid + " at " +
                                                 std::to_string(now / kMs) + " ms");
                    }
                    last_term_[h->path] = {tok, h->id};
                    h->lead_since = now;
                    if (h->fell)
                        violate("flicker", h->id + ": is_leader 1 again at " + std::to_string(now / kMs) +
                                               " ms after a 0 since " + std::to_string(h->lost_at / kMs) +
                                               " ms with no DEPOSED or ELECTED between");
                    h->fell = false;
                }
                if (!l && h->leading) {
                    h->lost_at = now;
                    h->fell = true;
                }
                // DEPOSED is queued at the lease's deadline: the loop's
                // timer, which runs soon after (the loop may be late by
                // 20 ms now and then), not the next thing that happens.
                if (!l && h->told_leading && h->lost_at && now - h->lost_at > 100 * kMs) {
                    violate("events", h->id + ": is_leader 0 since " + std::to_string(h->lost_at / kMs) +
                                          " ms and no DEPOSED at " + std::to_string(now / kMs) + " ms");
                    h->lost_at = 0;
                }
                h->leading = l;
                if (l) leaders[h->path].push_back(h.get());
            }
    }
    for (auto &[pth, ls] : leaders) {
        if (ls.size() < 2) continue;
        bool ok = true;
        for (Hand *h : ls)
            if (excused(pth, *h, now)) ok = false;
        if (!ok) continue;
        std::string who;
        for (Hand *h : ls) who += " " + h->id;
        violate("two-leaders", path(pth) + ":" + who + " answered 1 at " +
                                   std::to_string(now / kMs) + " ms");
    }
}

void Run::drain(Cl &c) {
    for (auto &h : c.hands) {
        for (int i = 0; i < 1000; ++i) {
            auto ev = h->e->shared().queue.pop(0);
            if (!ev) break;
            if (verbose_)
                fprintf(stderr, "%10.3f  %s event %d reason %d\n", double(sched_.now()) / 1e9,
                        h->id.c_str(), int(ev->type), int(ev->reason));
            if (ev->type == EventType::kElected) {
                if (h->told_leading) violate("events", h->id + ": ELECTED while leading");
                h->told_leading = true;
                h->lost_at = 0;
                h->fell = false;
            }
            if (ev->type == EventType::kDeposed) {
                if (!h->told_leading) violate("events", h->id + ": DEPOSED while not leading");
                h->told_leading = false;
                h->fell = false;
            }
            if (ev->type == EventType::kError) {
                // An error ends the candidacy (docs/semantics.md): the
                // RESIGNED after it must wait for its nodes as a resign's
                // does. The heal volunteers it again, as a user would.
                h->resign_volunteers = h->volunteers;
            }
            if (ev->type != EventType::kResigned) continue;
            // A volunteer issued after the resign queues its own node.
            if (h->volunteers > h->resign_volunteers) continue;
            std::string p = path(h->path);
            for (auto &name : ens_.children(ens_.truth(), p)) {
                auto n = ens_.truth().find(p + "/" + name);
                if (n != ens_.truth().end() && n->second.data == h->id)
                    violate("resigned-node", h->id + ": RESIGNED while its node " + name +
                                                 " remained, at " +
                                                 std::to_string(sched_.now() / kMs) + " ms");
            }
        }
    }
}

// Turns each client's loop when it has mail (a little later: the loop
// thread is scheduled) or a timer due.
void Run::after_step() {
    int64_t now = sched_.now();
    // User calls waiting for the worst moment: the client's loop has a
    // reply or an event in its mailbox that it has not acted on yet.
    for (size_t i = 0; i < racy_.size();) {
        auto [st, deadline] = racy_[i];
        Cl *cl = nullptr;
        if (Proc *p = target(st)) cl = p->clients.empty() ? nullptr : p->clients[size_t(st.b) % p->clients.size()].get();
        if (now >= deadline || (cl && !target(st)->paused && cl->c->sim_has_mail())) {
            racy_.erase(racy_.begin() + long(i));
            apply(st, true);
        } else {
            ++i;
        }
    }
    for (auto &p : procs_) {
        if (p->dead || p->paused) continue;
        for (auto &cl : p->clients) {
            // The loop thread gets to its mail soon, and now and then late
            // (a busy machine).
            int64_t want = cl->c->sim_has_mail()
                               ? now + (rng_.chance(0.05) ? rng_.range(0, 20000) : rng_.range(0, 300)) * 1000
                               : cl->c->sim_next_timer();
            if (want >= cl->turn_at) continue;
            cl->turn_at = want;
            Cl *c = cl.get();
            Proc *pp = p.get();
            sched_.at(want, [this, c, pp, want] {
                // The client may be gone: look for it among the live ones.
                bool live = false;
                for (auto &x : pp->clients) live |= x.get() == c;
                if (!live || pp->dead || pp->paused || c->turn_at != want) return;
                c->turn_at = INT64_MAX;
                c->c->sim_turn();
                drain(*c);
            });
        }
    }
    sample();
    check_fenced();
    check_transfers();
    if (now >= next_line_check_) {
        next_line_check_ = now + 10 * kMs;
        check_first_in_line();
    }
}

Run::Hand *Run::find_hand(const std::string &id, Cl **cl, size_t *index) {
    for (auto &p : procs_) {
        if (p->dead) continue;
        for (auto &c : p->clients)
            for (size_t i = 0; i < c->hands.size(); ++i)
                if (c->hands[i]->id == id) {
                    if (cl) *cl = c.get();
                    if (index) *index = i;
                    return c->hands[i].get();
                }
    }
    return nullptr;
}

// Starts a transfer and checks its outcome: ESTATE only while another
// transfer of the handle runs (issue 50, finding 3: a transfer state left
// stuck answers ESTATE for good), and within the bound (check_transfers).
void Run::begin_transfer(Hand &from, const std::string &to, int64_t ms) {
    int64_t now = sched_.now();
    auto x = std::make_shared<Hand::Xfer>();
    x->deadline = now + ms * kMs + 3 * w_.t_ms * kMs;
    size_t running = 0;
    for (auto &o : from.xfers) running += !o->done;
    std::string who = from.id;
    bool verbose = verbose_;
    Scheduler *sch = &sched_;
    Hand *hp = &from;
    std::weak_ptr<Hand::Xfer> wx = x;
    from.xfers.push_back(x);
    int rc = from.e->begin_transfer(to, int(ms), [this, who, to, verbose, sch, hp, wx](int rc) {
        if (verbose)
            fprintf(stderr, "%10.3f  %s transfer to %s: %d\n", double(sch->now()) / 1e9, who.c_str(),
                    to.c_str(), rc);
        // The handle may be gone (its xfers with it): then so is x.
        auto x = wx.lock();
        if (!x) return;
        x->done = true;
        size_t others = 0;
        for (auto &o : hp->xfers) others += !o->done;
        if (rc == zkelect::kEState && others == 0)
            violate("transfer-estate", who + ": a transfer to " + to + " answered ESTATE at " +
                                           std::to_string(sch->now() / kMs) +
                                           " ms with no other transfer of the handle running");
        for (size_t i = 0; i < hp->xfers.size();)
            if (hp->xfers[i]->done) hp->xfers.erase(hp->xfers.begin() + long(i));
            else ++i;
    });
    if (rc != zkelect::kOk) {
        x->done = true;
        from.xfers.pop_back();
        if (rc == zkelect::kEState && running == 0)
            violate("transfer-estate", who + ": a transfer to " + to + " answered ESTATE at " +
                                           std::to_string(now / kMs) +
                                           " ms with no other transfer of the handle running");
    }
    ++transfers_;
    if (verbose_)
        fprintf(stderr, "%10.3f  %s transfer to %s begins: %d\n", double(now) / 1e9, who.c_str(), to.c_str(), rc);
}

// A resign and a volunteer at once: the candidacy goes to the back.
void Run::requeue(Hand &h) {
    if (h.e->resign() == zkelect::kOk) {
        h.candidate = false;
        h.resigned = true;
        h.resign_volunteers = h.volunteers;
    }
    if (h.e->volunteer() == zkelect::kOk) {
        h.candidate = true;
        h.resigned = false;
        h.volunteers++;
    }
}

// docs/api.md: a transfer's outcome comes within its timeout plus 3 T
// (stops of its process added: a stopped loop answers nothing). The
// hand-over's own delete and listing wait for a connection, so a fault
// that lasts past the deadline moves it: 3 T after the latest fault ended.
void Run::check_transfers() {
    int64_t now = sched_.now();
    for (auto &p : procs_) {
        if (p->dead || p->paused) continue;
        for (auto &c : p->clients)
            for (auto &h : c->hands)
                for (auto &x : h->xfers)
                    if (!x->done && now > x->deadline && now > quiet_since_ + 3 * w_.t_ms * kMs) {
                        x->done = true;
                        violate("transfer-bound", h->id + ": a transfer unanswered at " +
                                                      std::to_string(now / kMs) + " ms, past its bound of " +
                                                      std::to_string(x->deadline / kMs) + " ms");
                    }
    }
}

// Today's end-of-run liveness check, made continuous (issue 50): a
// candidate node that no live candidacy owns must not stay first in line
// for longer than the end-of-run bound once the faults have stopped; the
// clock starts at the later of its being seen so and the end of the latest
// fault.
void Run::check_first_in_line() {
    int64_t now = sched_.now();
    for (int pth = 0; pth < w_.paths; ++pth) {
        std::string base = path(pth), first;
        uint64_t best = UINT64_MAX;
        for (auto &name : ens_.children(ens_.truth(), base)) {
            auto seq = zkelect::parse_sequence(name);
            if (seq && uint64_t(*seq) < best) {
                best = uint64_t(*seq);
                first = name;
            }
        }
        bool orphan = false;
        if (!first.empty()) {
            const auto &n = ens_.truth().at(base + "/" + first);
            Cl *cl = nullptr;
            Hand *h = find_hand(n.data, &cl);
            // A candidacy that an error ended (phase idle) owns nothing.
            orphan = !h || !h->candidate || cl->c->session_id() != n.owner ||
                     h->e->shared().phase.load() == zkelect::Phase::kIdle;
        }
        if (!orphan) {
            orphan_first_.erase(pth);
            continue;
        }
        auto it = orphan_first_.find(pth);
        if (it == orphan_first_.end() || it->second.first != first) {
            orphan_first_[pth] = {first, now};
            continue;
        }
        int64_t from = std::max(it->second.second, quiet_since_);
        if (now - from > 4 * w_.t_ms * kMs + 2000 * kMs) {
            violate("orphan-first", base + "/" + first + " (data " + ens_.truth().at(base + "/" + first).data +
                                        ") is first in line and owned by no live candidacy since " +
                                        std::to_string(it->second.second / kMs) + " ms, at " +
                                        std::to_string(now / kMs) + " ms");
            it->second.second = INT64_MAX / 2;  // once
        }
    }
}

Run::Proc *Run::target(const Step &s) {
    std::vector<Proc *> live;
    for (auto &p : procs_)
        if (!p->dead) live.push_back(p.get());
    if (live.empty()) return nullptr;
    return live[size_t(s.a) % live.size()];
}

void Run::apply(const Step &s, bool now_or_never) {
    Proc *pt = target(s);
    if (!pt) return;
    Proc &p = *pt;
    const bool user = s.kind == "vol" || s.kind == "res" || s.kind == "destroy" || s.kind == "xfer";
    if (user && s.op >= 8 && !now_or_never) {
        racy_.push_back({s, sched_.now() + 2 * w_.t_ms * kMs});
        return;
    }
    Cl *cl = p.clients.empty() ? nullptr : p.clients[size_t(s.b) % p.clients.size()].get();
    std::shared_ptr<SimPort> port;
    if (cl) {
        // The client's current session: the newest port of the process
        // that is the client's (ports are made in order).
        for (auto it = p.ports.rbegin(); it != p.ports.rend(); ++it)
            if (auto sp = it->lock(); sp && !sp->dead() &&
                                      sp->session_id() == cl->c->session_id()) {
                port = sp;
                break;
            }
    }
    int64_t now = sched_.now();
    const std::string &k = s.kind;
    if (verbose_) fprintf(stderr, "%10.3f  STEP %s\n", double(now) / 1e9, step_text(s).c_str());
    static const std::set<std::string> lasting = {"blackhole", "uphold", "delay", "pstop", "sdown",
                                                  "sstall", "sbehind", "shrink", "quorum", "slow",
                                                  "acl", "ddis", "throttle"};
    if (lasting.count(k)) quiet_since_ = std::max(quiet_since_, now + s.d);
    else if (k == "xdis") quiet_since_ = std::max(quiet_since_, now + s.d / 4 + s.d);
    else if (k != "vol" && k != "res" && k != "destroy" && k != "xfer" && k != "newhand" &&
             k != "fwrite")
        quiet_since_ = std::max(quiet_since_, now);
    if (k == "drop" && port) {
        static const int ops[] = {kCreate, kGetChildren, kGet, kExists, kCheck, kDelete, kSync};
        port->fault().drop_reply_op = ops[s.op % 7];
        port->fault().drop_then_reset = s.op >= 7;
    } else if (k == "reset" && port) {
        port->lose_connection();
    } else if (k == "blackhole" && port) {
        port->fault().hole_until = now + s.d;
    } else if (k == "uphold" && port) {
        port->fault().up_hold_until = now + s.d;
    } else if (k == "delay" && port) {
        port->fault().delay_ns = s.d / 10;
        port->fault().delay_until = now + s.d;
    } else if (k == "pstop" && !p.paused) {
        p.paused = true;
        p.paused_at = now;
        for (auto &w : p.ports)
            if (auto sp = w.lock()) sp->set_paused(true);
        Proc *pp = &p;
        sched_.at(now + s.d, [this, pp] { resume(*pp); });
    } else if (k == "pkill") {
        kill_process(p, true);
    } else if (k == "sdown") {
        // A follower: the leader's loss is the "quorum" fault.
        ens_.server_down(1 + s.a % 2, s.d);
    } else if (k == "throttle") {
        ens_.server_throttle(s.a % 3, s.d);
    } else if (k == "sstall") {
        ens_.server_stall(1 + s.a % 2, s.d);
    } else if (k == "sbehind") {
        ens_.server_behind(1 + s.a % 2, s.d / 2, s.d);
    } else if (k == "shrink") {
        // Every server, for a while: the next reconnect gets T/2, or the
        // least a server may grant (two ticks). Where servers grant below
        // two ticks, never below one: a T of less than 2 x (tickTime/2)
        // leaves no lease, and the engine then leads on no connection by
        // design (docs/semantics.md), which the liveness check would count.
        int64_t most = s.op % 2 ? w_.t_ms * kMs / 2 : 2 * w_.tick_ms * kMs;
        if (w_.min_session_ms) most = std::max(most, w_.tick_ms * kMs);
        for (int i = 0; i < 3; ++i) ens_.server_shrinks(i, most, s.d);
        // A quarter of the time the client reconnects into it and is cut
        // off as soon as its handshake went by: its session then expires
        // under the shorter timeout while a lease earned under the longer
        // one may still run (the real tier's shrink with a cut).
        if (port && (s.op & 12) == 12) {
            port->fault().hole_after_handshake_ns = s.d;
            port->lose_connection();
        }
    } else if (k == "quorum") {
        ens_.quorum_loss(std::min<int64_t>(s.d, w_.t_ms * kMs));
    } else if (k == "slow") {
        ens_.slow_commits(s.d / 4, s.d);
    } else if (k == "odel" || k == "opath") {
        int pth = s.b % w_.paths;
        std::string base = path(pth);
        auto kids = ens_.children(ens_.truth(), base);
        Deletion d{now, pth, {}};
        if (k == "opath") {
            for (auto &name : kids) d.ids.insert(ens_.truth().at(base + "/" + name).data);
            ens_.operator_delete(base, true);
        } else if (!kids.empty()) {
            std::string name = kids[size_t(s.op) % kids.size()];
            d.ids.insert(ens_.truth().at(base + "/" + name).data);
            ens_.operator_delete(base + "/" + name, false);
        }
        deletions_.push_back(d);
    } else if (k == "foreign") {
        ens_.operator_create(path(s.b % w_.paths) + "/foreign-" + std::to_string(s.op));
    } else if (k == "vol" && cl && !p.paused && !cl->hands.empty()) {
        Hand &h = *cl->hands[size_t(s.op) % cl->hands.size()];
        if (h.e->volunteer() == zkelect::kOk) {
            h.candidate = true;
            h.resigned = false;
            h.volunteers++;
        }
    } else if (k == "res" && cl && !p.paused && !cl->hands.empty()) {
        Hand &h = *cl->hands[size_t(s.op) % cl->hands.size()];
        if (h.e->resign() == zkelect::kOk) {
            h.candidate = false;
            h.resigned = true;
            h.resign_volunteers = h.volunteers;
        }
    } else if (k == "destroy" && cl && !p.paused && !cl->hands.empty()) {
        destroy_hand(*cl, size_t(s.op) % cl->hands.size());
    } else if (k == "xfer" && cl && !p.paused && !cl->hands.empty()) {
        // A leader of the client (if any) hands over to another handle of
        // its path, or, now and then, to an id nobody has.
        Hand *from = nullptr;
        for (auto &h : cl->hands)
            if (h->e->is_leader()) from = h.get();
        if (!from) return;
        std::vector<std::string> ids;
        for (auto &q : procs_)
            if (!q->dead)
                for (auto &c : q->clients)
                    for (auto &h : c->hands)
                        if (h->path == from->path && h.get() != from) ids.push_back(h->id);
        std::string to = ids.empty() || s.op % 8 == 7 ? "nobody" : ids[size_t(s.b) % ids.size()];
        int64_t ms = std::max<int64_t>(1, s.d / kMs / 2);
        begin_transfer(*from, to, ms);
    } else if (k == "acl") {
        // An operator takes one permission off the election path (READ,
        // DELETE or CREATE) or READ off its first node, and gives it back
        // d later (issue 50, finding 2: a recovery listing refused).
        int pth = s.b % w_.paths;
        std::string target = path(pth);
        static const int perms[] = {ZOO_PERM_READ, ZOO_PERM_DELETE, ZOO_PERM_CREATE, ZOO_PERM_READ};
        if (s.op % 4 == 3) {
            auto kids = ens_.children(ens_.truth(), target);
            if (kids.empty()) return;
            target += "/" + kids.front();
        }
        ens_.operator_set_acl(target, perms[s.op % 4]);
        sched_.at(now + s.d, [this, target] { ens_.operator_set_acl(target, 0); });
    } else if (k == "ddis" && cl && port && !p.paused && !cl->hands.empty()) {
        // While the client is cut off (a black hole of d), one of its
        // candidacies is destroyed, or goes to the back (a resign and a
        // volunteer), a moment into the cut.
        port->fault().hole_until = now + s.d;
        std::string id = cl->hands[size_t(s.op) % cl->hands.size()]->id;
        bool destroy = s.op % 2 == 0;
        sched_.at(now + s.d * (1 + s.op % 4) / 8, [this, id, destroy] {
            if (!faults_on_) return;
            Cl *c = nullptr;
            size_t i = 0;
            Hand *h = find_hand(id, &c, &i);
            if (!h) return;
            for (auto &pp : procs_)
                for (auto &x : pp->clients)
                    if (x.get() == c && pp->paused) return;
            if (verbose_) fprintf(stderr, "%10.3f  %s %s while cut off\n", double(sched_.now()) / 1e9, id.c_str(), destroy ? "destroyed" : "requeued");
            if (destroy) destroy_hand(*c, i);
            else requeue(*h);
        });
    } else if (k == "xdis" && cl && port && !p.paused) {
        // The client's leader begins a transfer with a timeout of d/4; the
        // link goes dark at once for d past the deadline, so the deadline's
        // hand-over meets the cut; just after the deadline (0-30 ms) the
        // leader is destroyed, or goes to the back (issue 50, finding 1).
        Hand *from = nullptr;
        for (auto &h : cl->hands)
            if (h->e->is_leader()) from = h.get();
        if (!from) return;
        std::vector<std::string> ids;
        for (auto &q : procs_)
            if (!q->dead)
                for (auto &c : q->clients)
                    for (auto &h : c->hands)
                        if (h->path == from->path && h.get() != from) ids.push_back(h->id);
        if (ids.empty()) return;
        int64_t ms = std::max<int64_t>(1, s.d / kMs / 4);
        begin_transfer(*from, ids[size_t(s.b) % ids.size()], ms);
        port->fault().hole_until = now + ms * kMs + s.d;
        std::string id = from->id;
        bool destroy = s.op % 2 == 0;
        sched_.at(now + ms * kMs + (s.op % 4) * 10 * kMs, [this, id, destroy] {
            if (!faults_on_) return;
            Cl *c = nullptr;
            size_t i = 0;
            Hand *h = find_hand(id, &c, &i);
            if (!h) return;
            for (auto &pp : procs_)
                for (auto &x : pp->clients)
                    if (x.get() == c && pp->paused) return;
            if (verbose_) fprintf(stderr, "%10.3f  %s %s after its transfer's deadline\n", double(sched_.now()) / 1e9, id.c_str(), destroy ? "destroyed" : "requeued");
            if (destroy) destroy_hand(*c, i);
            else requeue(*h);
        });
    } else if (k == "fwrite") {
        for (auto &q : procs_)
            if (!q->dead && !q->paused)
                for (auto &c : q->clients)
                    for (auto &h : c->hands)
                        if (h->e->is_leader())
                            for (int i = 0; i < s.op; ++i) fenced_write(*h);
    } else if (k == "newhand" && cl && !p.paused) {
        new_hand(p, *cl, s.op % w_.paths, true);
    } else if (k == "newclient" && !p.paused && !p.clients.empty()) {
        destroy_client(p, size_t(s.b) % p.clients.size());
        auto c = new_client(p);
        Cl &ref = *c;
        p.clients.push_back(std::move(c));
        new_hand(p, ref, s.op % w_.paths, true);
    }
}

// A fenced write of h's token to its path's data node, its data unique:
// "token id serial". The answer comes on the client's loop.
void Run::fenced_write(Hand &h) {
    int64_t tok = 0;
    if (h.e->fencing_token(&tok) != zkelect::kOk) return;
    std::string data = std::to_string(tok) + " " + h.id + " " + std::to_string(++fenced_serial_);
    zkelect::ZkOp op;
    op.kind = zkelect::ZkOp::kSet;
    op.path = fdata(h.path);
    op.data = data;
    int rc = h.e->begin_fenced_commit(
        {op}, [this, data](int code, int, int, const std::string &why) {
            if (!closing_) fenced_answer(data, code, why);
        });
    if (rc != zkelect::kOk) fenced_codes_[rc]++;
    if (verbose_)
        fprintf(stderr, "%10.3f  %s fenced write '%s' begins: %d\n", double(sched_.now()) / 1e9,
                h.id.c_str(), data.c_str(), rc);
}

// What the answer says against what committed: OK only for a write that
// committed, a refusal only for one that did not (and never will).
void Run::fenced_answer(const std::string &data, int code, const std::string &why) {
    check_fenced();
    fenced_codes_[code]++;
    if (verbose_)
        fprintf(stderr, "%10.3f  fenced write '%s': %d %s\n", double(sched_.now()) / 1e9,
                data.c_str(), code, why.c_str());
    std::string at = " at " + std::to_string(sched_.now() / kMs) + " ms";
    if (code == zkelect::kOk && !committed_.count(data))
        violate("fenced-lost", "'" + data + "' answered OK and never committed" + at);
    bool refused = code == zkelect::kEFenced || code == zkelect::kEZk ||
                   code == zkelect::kENotLeader || code == zkelect::kEAuth;
    if (refused && committed_.count(data))
        violate("fenced-refused", "'" + data + "' answered " + std::to_string(code) +
                                      " (" + why + ") and committed" + at);
    if (refused) refused_.insert(data);
}

// The committed log's new data writes to the fenced data nodes: none may
// carry a token below one of a term that already wrote there (a term's
// token is its node's czxid: a later term's is larger).
void Run::check_fenced() {
    next_txn_ = ens_.data_writes(next_txn_, [this](int64_t zxid, const std::string &node,
                                                   const std::string &data) {
        if (node.compare(0, 2, "/f") != 0) return;
        committed_.insert(data);
        if (refused_.count(data))
            violate("fenced-refused", "'" + data + "' committed at zxid " + std::to_string(zxid) +
                                          " after it was answered as refused");
        int64_t tok = std::strtoll(data.c_str(), nullptr, 10);
        FencedTop &top = fenced_top_[node];
        if (tok < top.token)
            violate("fenced-order", node + ": '" + data + "' committed at zxid " +
                                        std::to_string(zxid) + ", after '" + top.first +
                                        "', a later term's first write, at zxid " +
                                        std::to_string(top.zxid) + " (" +
                                        std::to_string(sched_.now() / kMs) + " ms)");
        else if (tok > top.token)
            top = {tok, data, zxid};
    });
}

void Run::resume(Proc &p) {
    if (!p.paused) return;
    p.paused = false;
    for (auto &c : p.clients)
        for (auto &h : c->hands)
            for (auto &x : h->xfers) x->deadline += sched_.now() - p.paused_at;
    for (auto &w : p.ports)
        if (auto sp = w.lock()) sp->set_paused(false);
    for (auto &c : p.clients) {
        c->turn_at = INT64_MAX;
        // The loop could not act while stopped: its time to do so starts now.
        for (auto &h : c->hands)
            if (h->lost_at) h->lost_at = sched_.now();
    }
}

void Run::heal() {
    faults_on_ = false;
    ens_.heal();
    for (auto &p : procs_) {
        if (p->dead) continue;
        for (auto &w : p->ports)
            if (auto sp = w.lock()) {
                sp->fault() = LinkFault{};
            }
        resume(*p);
    }
    // As the real tier's calm does: every candidacy volunteers again (one
    // that an error ended starts anew; any other answers ESTATE).
    for (auto &p : procs_) {
        if (p->dead) continue;
        for (auto &cl : p->clients)
            for (auto &h : cl->hands)
                if (h->candidate && h->e->volunteer() == zkelect::kOk) h->volunteers++;
    }
}

void Run::check_end() {
    for (int pth = 0; pth < w_.paths; ++pth) {
        std::vector<Hand *> cands, leaders;
        std::map<std::string, std::pair<Hand *, int64_t>> owners;  // id -> hand, session
        for (auto &p : procs_) {
            if (p->dead) continue;
            for (auto &cl : p->clients)
                for (auto &h : cl->hands) {
                    if (h->path != pth) continue;
                    // One that an error ended again after the heal (a
                    // margin too large for the timeout its session keeps)
                    // is no candidate: its user was told.
                    if (h->candidate && h->e->shared().phase.load() == zkelect::Phase::kIdle)
                        h->candidate = false;
                    if (h->candidate) cands.push_back(h.get());
                    if (h->e->is_leader()) leaders.push_back(h.get());
                    owners[h->id] = {h.get(), cl->c->session_id()};
                }
        }
        std::string base = path(pth);
        if (!cands.empty() && leaders.size() != 1) {
            std::string who;
            for (Hand *h : leaders) who += " " + h->id;
            violate("liveness", base + ": " + std::to_string(leaders.size()) + " leaders (" + who +
                                    " ) among " + std::to_string(cands.size()) +
                                    " candidacies after the heal");
        }
        std::map<std::string, int> count;
        for (auto &name : ens_.children(ens_.truth(), base)) {
            if (!zkelect::parse_sequence(name)) continue;
            const auto &n = ens_.truth().at(base + "/" + name);
            auto o = owners.find(n.data);
            bool ok = o != owners.end() && o->second.first->candidate && o->second.second == n.owner;
            if (!ok) {
                std::string why = o == owners.end() ? "no such live handle"
                                  : !o->second.first->candidate
                                      ? "its handle is not a candidate"
                                      : "owned by session " + std::to_string(n.owner) +
                                            ", the client's is " + std::to_string(o->second.second);
                violate("liveness", base + "/" + name + " (data " + n.data +
                                        ") is owned by no live candidacy after the heal: " + why);
            }
            count[n.data]++;
        }
        for (Hand *h : cands)
            if (count[h->id] != 1)
                violate("liveness", h->id + " has " + std::to_string(count[h->id]) +
                                        " nodes after the heal (phase " +
                                        std::to_string(int(h->e->shared().phase.load())) + ")");
    }
    // zk.session.nodes.max.bytes: once every node no candidacy wants is
    // gone, each client holds one node's bytes per candidate, no more, no
    // less (a leak would refuse volunteers for good).
    for (auto &p : procs_) {
        if (p->dead) continue;
        for (auto &cl : p->clients) {
            int64_t want = 0, n = 0;
            for (auto &h : cl->hands)
                if (h->candidate) {
                    want += cl->c->candidate_node_bytes(path(h->path));
                    ++n;
                }
            if (cl->c->node_bytes() != want)
                violate("node-bytes", "a client of " + std::to_string(n) +
                                          " candidacies holds " +
                                          std::to_string(cl->c->node_bytes()) +
                                          " bytes of candidate nodes, not " + std::to_string(want));
        }
    }
}

std::vector<Violation> Run::go(int64_t duration) {
    int64_t start = sched_.now();
    for (int i = 0; i < w_.paths; ++i) ens_.preset(fdata(i));
    for (int i = 0; i < w_.procs; ++i) {
        auto p = std::make_unique<Proc>();
        start_process(*p);
        procs_.push_back(std::move(p));
    }
    for (const Step &s : steps_) sched_.at(start + s.at, [this, s] {
        if (faults_on_ && !without().count(s.kind)) apply(s);
    });
    sched_.at(start + duration, [this] { heal(); });
    // The bound after the heal: a session timeout for sessions that must
    // expire, another to reconnect and elect, and the garbage's deletion.
    int64_t end = start + duration + 4 * w_.t_ms * kMs + 2000 * kMs;
    after_step();
    for (uint64_t n = 0; n < 20000000 && sched_.next_time() <= end; ++n) {
        sched_.step();
        after_step();
        if (!viol_.empty() && viol_.front().kind != "liveness") break;
    }
    if (viol_.empty()) check_end();
    if (verbose_) {
        std::string codes;
        for (auto &[code, n] : fenced_codes_) codes += " " + std::to_string(code) + ":" + std::to_string(n);
        fprintf(stderr, "fenced writes by code:%s\n", codes.c_str());
    }
    return viol_;
}

struct Outcome {
    std::vector<Violation> v;
    uint64_t steps = 0;
};

Outcome run_one(uint64_t seed, const std::vector<Step> *given, bool verbose,
                std::vector<Step> *schedule_out) {
    Rng r(seed);
    World w = draw_world(r);
    // One world in four configures lease.margin.ms at 0.3 T: it fits T but
    // not the T/2 that a shrink step's reconnect may negotiate (issue 50,
    // finding 2's route through check_margin). Drawn from a generator of its
    // own so that a seed's world and schedule are what they were before.
    // Not where servers grant below two ticks: a report lag of half a tick
    // there leaves no lease beside such a margin, by design.
    Rng extra(seed ^ 0x6d617267696eULL);
    if (!w.min_session_ms && extra.chance(0.25) && !no_margin()) w.margin_ms = int(w.t_ms * 3 / 10);
    // One world in three is a balanced group (issue 56): its clients' moves
    // are transfers, run under every fault the schedule draws.
    Rng group(seed ^ 0x62616c616e6365ULL);
    w.balanced = group.chance(1.0 / 3) && !no_balance();
    int64_t duration = 20 * w.t_ms * kMs;
    std::vector<Step> steps = given ? *given : make_schedule(r, w, duration);
    if (schedule_out) *schedule_out = steps;
    if (verbose)
        fprintf(stderr, "seed %llu: T %lld ms, tick %lld ms (min session %lld ms, margin %d ms), %d processes x %d clients x %d hands, %d paths%s\n",
                (unsigned long long)seed, (long long)w.t_ms, (long long)w.tick_ms, (long long)w.min_session_ms, w.margin_ms, w.procs,
                w.clients, w.hands, w.paths, w.balanced ? ", one balanced group" : "");
    trace() = verbose;
    Run run(seed, w, steps, verbose);
    Outcome o;
    o.v = run.go(duration);
    o.steps = run.steps();
    return o;
}

std::vector<Step> read_case(const std::string &file, uint64_t *seed) {
    std::ifstream in(file);
    std::vector<Step> out;
    std::string line;
    bool have_seed = false;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream ls(line);
        if (!have_seed) {
            ls >> *seed;
            have_seed = true;
            continue;
        }
        Step s;
        long long at, d;
        ls >> at >> s.kind >> s.a >> s.b >> d >> s.op;
        s.at = at;
        s.d = d;
        out.push_back(s);
    }
    return out;
}

void write_case(const std::string &file, uint64_t seed, const std::vector<Step> &steps,
                const std::vector<Violation> &v) {
    std::ofstream out(file);
    out << "# zkelect-sim case: seed, then one step a line (ns kind a b d op)\n";
    if (!v.empty()) out << "# found: " << v[0].kind << ": " << v[0].what << "\n";
    out << seed << "\n";
    for (auto &s : steps) out << step_text(s) << "\n";
}

double wall() {
    timeval tv;
    gettimeofday(&tv, nullptr);
    return double(tv.tv_sec) + double(tv.tv_usec) / 1e6;
}

// Drops steps while the run still shows a violation of the same kind.
std::vector<Step> shrink(uint64_t seed, std::vector<Step> steps, const std::string &kind,
                         double budget_s) {
    double until = wall() + budget_s;
    bool changed = true;
    while (changed && wall() < until) {
        changed = false;
        for (size_t i = 0; i < steps.size() && wall() < until;) {
            auto fewer = steps;
            fewer.erase(fewer.begin() + long(i));
            Outcome o = run_one(seed, &fewer, false, nullptr);
            bool same = false;
            for (auto &v : o.v) same |= v.kind == kind;
            if (same) {
                steps = std::move(fewer);
                changed = true;
            } else {
                ++i;
            }
        }
    }
    return steps;
}

int usage() {
    fprintf(stderr,
            "usage: zkelect-sim [--seed S] [--runs N] [--minutes M] [--shrink SECONDS]\n"
            "                   [--case FILE] [--write-case FILE] [--verbose] [--without KIND]...\n"
            "                   [--ignore VIOLATION]... [--no-margin] [--no-balance]\n");
    return 2;
}

}  // namespace

int main(int argc, char **argv) {
    uint64_t seed = 0;
    bool have_seed = false, verbose = false;
    long runs = -1;
    double minutes = 0, shrink_s = 0;
    std::string case_file, write_file;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto val = [&]() -> const char * { return i + 1 < argc ? argv[++i] : nullptr; };
        const char *v = nullptr;
        if (a == "--seed" && (v = val())) {
            seed = strtoull(v, nullptr, 10);
            have_seed = true;
        } else if (a == "--runs" && (v = val())) runs = strtol(v, nullptr, 10);
        else if (a == "--minutes" && (v = val())) minutes = strtod(v, nullptr);
        else if (a == "--shrink" && (v = val())) shrink_s = strtod(v, nullptr);
        else if (a == "--case" && (v = val())) case_file = v;
        else if (a == "--write-case" && (v = val())) write_file = v;
        else if (a == "--verbose") verbose = true;
        else if (a == "--without" && (v = val())) without().insert(v);
        else if (a == "--ignore" && (v = val())) ignored().insert(v);
        else if (a == "--no-margin") no_margin() = true;
        else if (a == "--no-balance") no_balance() = true;
        else return usage();
    }
    if (!case_file.empty()) {
        std::vector<Step> steps = read_case(case_file, &seed);
        Outcome o = run_one(seed, &steps, verbose, nullptr);
        for (auto &v : o.v) printf("VIOLATION seed=%llu %s: %s\n", (unsigned long long)seed, v.kind.c_str(), v.what.c_str());
        printf("case %s: seed %llu, %zu steps, %s\n", case_file.c_str(), (unsigned long long)seed,
               steps.size(), o.v.empty() ? "no violation" : "VIOLATION");
        return o.v.empty() ? 0 : 1;
    }
    if (!have_seed) seed = uint64_t(wall() * 1000) % 1000000000;
    if (runs < 0) runs = minutes > 0 ? 1L << 40 : 1;
    double t0 = wall(), until = minutes > 0 ? t0 + minutes * 60 : 1e300;
    long done = 0, failed = 0;
    uint64_t total_steps = 0;
    std::map<std::string, long> kinds;
    for (long i = 0; i < runs && wall() < until; ++i) {
        uint64_t s = seed + uint64_t(i);
        std::vector<Step> sched;
        Outcome o = run_one(s, nullptr, verbose, &sched);
        ++done;
        total_steps += o.steps;
        if (o.v.empty()) continue;
        ++failed;
        for (auto &v : o.v) kinds[v.kind]++;
        printf("VIOLATION seed=%llu after %ld runs, %.1f s: %s: %s\n", (unsigned long long)s, done,
               wall() - t0, o.v[0].kind.c_str(), o.v[0].what.c_str());
        for (size_t j = 1; j < o.v.size() && j < 5; ++j)
            printf("  also %s: %s\n", o.v[j].kind.c_str(), o.v[j].what.c_str());
        printf("  replay: zkelect-sim --seed %llu --verbose\n", (unsigned long long)s);
        if (shrink_s > 0) {
            auto shorter = shrink(s, sched, o.v[0].kind, shrink_s);
            printf("  shrunk from %zu to %zu steps:\n", sched.size(), shorter.size());
            for (auto &st : shorter) printf("    %s\n", step_text(st).c_str());
            if (!write_file.empty()) {
                Outcome again = run_one(s, &shorter, false, nullptr);
                write_case(write_file, s, shorter, again.v);
                printf("  written to %s\n", write_file.c_str());
            }
        }
        fflush(stdout);
        if (!write_file.empty() || runs == 1) break;
    }
    double el = wall() - t0;
    printf("zkelect-sim: %ld runs (seeds %llu-%llu), %llu scheduler steps, %.1f s, %.0f runs/min, "
           "%ld with violations\n",
           done, (unsigned long long)seed, (unsigned long long)(seed + uint64_t(done) - 1),
           (unsigned long long)total_steps, el, el > 0 ? double(done) / el * 60 : 0.0, failed);
    return failed ? 1 : 0;
}
