#include "balancer.h"

#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "clock.h"
#include "names.h"

namespace zkelect::balance {

namespace {
constexpr const char *kTag = "zkelect-balance 1 ";
// Counts above this are no count: a member node anyone with WRITE on the
// group may have written cannot make the plan's sums overflow.
constexpr int64_t kCountMax = 100000000;
// A write of our counts waits this long for more changes (a join of E
// elections changes them E times); a plan, this long after a failed move.
constexpr int64_t kPublishDelayNs = 20 * kNsPerMs;
constexpr int64_t kRetryDelayNs = 200 * kNsPerMs;
constexpr int64_t kGivenNs = 1000 * kNsPerMs;

bool parse_count(const std::string &s, int64_t *out) {
    if (s.empty() || s.size() > 9) return false;
    int64_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + (c - '0');
    }
    if (v > kCountMax) return false;
    *out = v;
    return true;
}
}  // namespace

// zkelect-member- and ZooKeeper's sequence (%010d, maybe signed): any other
// child of the group is not a member.
bool member_name(const std::string &name) {
    size_t n = std::strlen(kMemberPrefix);
    if (name.size() < n + 10 || name.size() > n + 11 || name.compare(0, n, kMemberPrefix) != 0)
        return false;
    bool sign = name.size() == n + 11;
    if (sign && name[n] != '-') return false;
    for (size_t i = n + (sign ? 1 : 0); i < name.size(); ++i)
        if (name[i] < '0' || name[i] > '9') return false;
    return true;
}

bool parse_member_data(const std::string &data, int64_t *leading, int64_t *in_line) {
    std::string tag(kTag);
    if (data.size() > kMemberDataMax || data.compare(0, tag.size(), tag) != 0) return false;
    std::string rest = data.substr(tag.size());
    size_t sp = rest.find(' ');
    if (sp == std::string::npos) return false;
    int64_t a = 0, b = 0;
    if (!parse_count(rest.substr(0, sp), &a) || !parse_count(rest.substr(sp + 1), &b)) return false;
    *leading = a;
    *in_line = std::max(a, b);
    return true;
}

std::string member_data(int64_t leading, int64_t in_line) {
    return kTag + std::to_string(leading) + " " + std::to_string(in_line);
}

std::shared_ptr<Balancer> Balancer::open(Client &client) {
    auto b = std::make_shared<Balancer>(client);
    client.post([b] { b->start(); });
    return b;
}

Balancer::Balancer(Client &client) : client_(client), group_(client.settings().balance_group) {}

void Balancer::start() {
    id_ = client_.add_member(shared_from_this());
    std::weak_ptr<Balancer> weak = weak_from_this();
    client_.leaderships().listen([weak] {
        if (auto self = weak.lock()) {
            self->publish_soon();
            self->plan_soon(0);
        }
    });
    if (client_.connected()) on_connected(true);
}

ReplyFn Balancer::route(void (Balancer::*h)(uint64_t gen, Reply &&r)) {
    std::weak_ptr<Balancer> weak = weak_from_this();
    uint64_t gen = gen_;
    return client_.on_loop([weak, gen, h](Reply &&r) {
        if (auto self = weak.lock()) ((*self).*h)(gen, std::move(r));
    });
}

// --- joining ---------------------------------------------------------------

void Balancer::on_connected(bool new_session) {
    if (new_session || (node_.empty() && !joining_)) {
        ++gen_;
        node_.clear();
        members_.clear();
        published_.clear();
        publishing_ = false;
        joining_ = true;
        create_node();
        return;
    }
    // A reconnect: read the group again rather than trust the watches, and
    // say our counts again if a write of them was lost with the connection.
    list();
    publish_soon();
}

void Balancer::on_expired() {
    ++gen_;
    node_.clear();
    members_.clear();
    published_.clear();
    publishing_ = false;
    joining_ = false;
}

void Balancer::create_node() {
    std::string data = member_data(published_leading(), int64_t(client_.leaderships().in_line()));
    client_.session().create_candidate(group_ + "/" + kMemberPrefix, data, route(&Balancer::on_node_made));
}

void Balancer::on_node_made(uint64_t gen, Reply &&r) {
    if (gen != gen_) return;
    if (r.rc == ZNONODE) {
        make_path(group_, 0);
        return;
    }
    if (r.rc != ZOK) {
        // Tried again with the next connection (on_connected), or now after
        // a pause for a refusal (no permission): the balancer is the only
        // one waiting for it.
        joining_ = false;
        // A lost connection's answer may come after the reconnect that
        // would have asked again: asked now if connected (a node the lost
        // create made is ours, deleted at the first listing).
        if (!connection_trouble(r.rc))
            later(boottime_ns() + int64_t(client_.effective_timeout_ms()) * kNsPerMs,
                  &Balancer::rejoin);
        else
            later(boottime_ns(), &Balancer::rejoin);
        return;
    }
    joining_ = false;
    node_ = r.value.substr(r.value.rfind('/') + 1);
    published_.clear();
    publish_soon();
    list();
}

// A join refused (no permission): asked again once a session timeout on,
// unless a new session or connection has joined meanwhile.
void Balancer::rejoin() {
    if (node_.empty() && !joining_ && client_.connected()) on_connected(true);
}

// The group's path and its parents, each made once; ZNODEEXISTS is as good.
void Balancer::make_path(const std::string &path, int depth) {
    std::weak_ptr<Balancer> weak = weak_from_this();
    uint64_t gen = gen_;
    client_.session().create_persistent(path, client_.on_loop([weak, gen, path, depth](Reply &&r) {
        auto self = weak.lock();
        if (!self || gen != self->gen_) return;
        size_t slash = path.rfind('/');
        if (r.rc == ZNONODE && slash > 0 && depth < 64) {
            self->make_path(path.substr(0, slash), depth + 1);
            return;
        }
        if (r.rc != ZOK && r.rc != ZNODEEXISTS) {
            Reply fail;
            fail.rc = r.rc;
            self->on_node_made(gen, std::move(fail));
            return;
        }
        if (depth == 0) self->create_node();
        else self->make_path(self->group_.substr(0, self->group_.find('/', path.size() + 1)), depth - 1);
    }));
}

// --- the snapshot ----------------------------------------------------------

void Balancer::list() {
    if (node_.empty()) return;
    client_.watch(group_, id_);
    client_.session().get_children(group_, true, route(&Balancer::on_children));
}

void Balancer::on_children(uint64_t gen, Reply &&r) {
    if (gen != gen_ || r.rc != ZOK) return;
    // Our member node deleted from outside (an operator, a cleanup): made
    // again, or this client would lead its share unseen by the group.
    if (std::find(r.children.begin(), r.children.end(), node_) == r.children.end()) {
        on_expired();  // forgotten as an expiry would, then made again
        later(boottime_ns(), &Balancer::rejoin);
        return;
    }
    std::vector<std::string> names;
    for (const std::string &c : r.children)
        if (member_name(c) && names.size() < kMembersMax)
            names.push_back(c);
    std::sort(names.begin(), names.end());
    bool changed = false;
    for (auto it = members_.begin(); it != members_.end();) {
        if (!std::binary_search(names.begin(), names.end(), it->first)) {
            it = members_.erase(it);
            changed = true;
        } else {
            ++it;
        }
    }
    for (const std::string &n : names)
        if (members_.find(n) == members_.end()) {
            members_[n];
            read(n);
            changed = true;
        }
    if (changed) {
        refused_.clear();
        plan_soon(0);
        publish_soon();  // a member gone takes its given moves out of our count
    }
}

void Balancer::read(const std::string &name) {
    std::string path = group_ + "/" + name;
    client_.watch(path, id_);
    std::weak_ptr<Balancer> weak = weak_from_this();
    uint64_t gen = gen_;
    client_.session().get(path, true, client_.on_loop([weak, gen, name, path](Reply &&r) {
        auto self = weak.lock();
        if (!self || gen != self->gen_) return;
        auto it = self->members_.find(name);
        if (r.rc == ZNONODE) self->client_.unwatch(path, self->id_);
        if (it == self->members_.end()) return;
        if (r.rc != ZOK) {
            if (r.rc == ZNONODE) self->members_.erase(it);
            return;
        }
        Seen &s = it->second;
        int64_t leading = 0, in_line = 0;
        bool was = s.valid;
        int64_t before = s.in_line;
        s.valid = r.has_stat && r.stat.ephemeral_owner != 0 &&
                  parse_member_data(r.data, &leading, &in_line);
        s.owner = r.has_stat ? r.stat.ephemeral_owner : 0;
        if (s.owner == self->client_.session_id() && name != self->node_) {
            // Ours, from a create whose reply the connection lost: one
            // member per client, or the others would count us twice.
            self->client_.unwatch(path, self->id_);
            self->client_.session().remove(path, ReplyFn([](Reply &&) {}));
            self->members_.erase(it);
            return;
        }
        s.leading = leading;
        s.in_line = in_line;
        // Only a newer version can count moves answered since the one we
        // knew (a read that raced a move's answer counts it, or not).
        const int32_t version = r.has_stat ? r.stat.version : -1;
        const size_t had = s.given.size();
        s.given.erase(std::remove_if(s.given.begin(), s.given.end(),
                                     [version](const Seen::Given &g) { return version > g.after; }),
                      s.given.end());
        s.version = version;
        if (s.given.size() != had) self->publish_soon();
        // A taker with more candidates may take what it refused before.
        if (!was || in_line != before)
            for (auto p = self->refused_.begin(); p != self->refused_.end();)
                p = p->second == s.owner ? self->refused_.erase(p) : std::next(p);
        self->plan_soon(0);
    }));
}

void Balancer::on_node_event(int type, const std::string &path) {
    (void)type;
    if (node_.empty()) return;
    if (path == group_) {
        list();
        return;
    }
    std::string name = path.substr(path.rfind('/') + 1);
    if (members_.count(name)) read(name);
}

// --- our counts ------------------------------------------------------------

void Balancer::later(int64_t at, void (Balancer::*fn)()) {
    std::weak_ptr<Balancer> weak = weak_from_this();
    client_.at(at, [weak, fn] {
        if (auto self = weak.lock()) ((*self).*fn)();
    });
}

void Balancer::once(bool Balancer::*armed, int64_t delay_ns, void (Balancer::*fn)()) {
    if (this->*armed || node_.empty()) return;
    this->*armed = true;
    std::weak_ptr<Balancer> weak = weak_from_this();
    client_.at(boottime_ns() + delay_ns, [weak, armed, fn] {
        if (auto self = weak.lock()) {
            (*self).*armed = false;
            ((*self).*fn)();
        }
    });
}

void Balancer::publish_soon() { once(&Balancer::publish_armed_, kPublishDelayNs, &Balancer::publish); }

void Balancer::publish() {
    if (node_.empty() || publishing_) return;
    std::string text = member_data(published_leading(), int64_t(client_.leaderships().in_line()));
    if (text == published_) return;
    publishing_ = true;
    std::weak_ptr<Balancer> weak = weak_from_this();
    uint64_t gen = gen_;
    client_.session().set(group_ + "/" + node_, text, -1,
                          client_.on_loop([weak, gen, text](Reply &&r) {
                              auto self = weak.lock();
                              if (!self || gen != self->gen_) return;
                              self->publishing_ = false;
                              if (r.rc == ZOK) {
                                  self->published_ = text;
                                  self->publish_soon();  // counts changed in flight
                              } else if (r.rc == ZNONODE) {
                                  self->list();  // gone from outside: on_children makes it again
                              } else if (connection_trouble(r.rc)) {
                                  // Said again by the reconnect, or now if that came first.
                                  if (self->client_.connected()) self->publish_soon();
                              } else {
                                  // Refused (an ACL changed under us): asked again after T,
                                  // not every 20 ms.
                                  self->later(boottime_ns() + int64_t(self->client_.effective_timeout_ms()) *
                                                                   kNsPerMs,
                                              &Balancer::publish);
                              }
                          }));
}

// --- the plan and the moves ------------------------------------------------

void Balancer::plan_soon(int64_t delay_ns) { once(&Balancer::plan_armed_, delay_ns, &Balancer::plan); }

void Balancer::plan() {
    if (node_.empty() || stopped_.load() || !client_.connected()) return;
    int64_t self = client_.session_id();
    int64_t now = boottime_ns();
    std::vector<GroupMember> snapshot;
    for (const auto &[name, s] : members_) {
        if (name == node_) {
            snapshot.push_back({name, self, own_leading(), int64_t(client_.leaderships().in_line())});
        } else if (s.valid && s.owner != self) {
            snapshot.push_back({name, s.owner, s.leading + given_now(s, now), s.in_line});
        }
    }
    int64_t sum = 0;
    for (const GroupMember &g : snapshot) sum += g.leading;
    if (sum >= high_total_ || now - high_total_at_ > kGivenNs) {
        high_total_ = sum;
        high_total_at_ = now;
    } else if (high_timer_at_ != high_total_at_) {
        // Shared as the larger total until it expires; then made again.
        high_timer_at_ = high_total_at_;
        later(high_total_at_ + kGivenNs + 1, &Balancer::replan);
    }
    int limit = client_.settings().balance_moves_max;
    for (const Give &g : gives_of(snapshot, self, high_total_)) {
        int64_t want = g.count - in_flight_to_[g.owner];
        while (want-- > 0 && in_flight_ < limit)
            if (!start_move(g.owner)) break;
    }
}

// The oldest term not on its way and not refused by this taker: a term
// just handed here by an explicit transfer is the last to move on.
bool Balancer::start_move(int64_t owner) {
    uint64_t pick = 0;
    Leaderships::Give give;
    client_.leaderships().each_oldest([&](uint64_t member, const Leaderships::Give &g) {
        if (moving_.count(member) || refused_.count({member, owner})) return true;
        pick = member;
        give = g;
        return false;
    });
    if (!pick) return false;
    moving_.insert(pick);
    ++in_flight_;
    ++in_flight_to_[owner];
    std::weak_ptr<Balancer> weak = weak_from_this();
    int64_t deadline = boottime_ns() + int64_t(std::max(1000, client_.effective_timeout_ms())) * kNsPerMs;
    give(owner, deadline, [weak, pick, owner](int code) {
        if (auto self = weak.lock()) self->on_moved(pick, owner, code);
    });
    return true;
}

int64_t Balancer::given_now(const Seen &s, int64_t now) {
    return std::count_if(s.given.begin(), s.given.end(),
                         [now](const Seen::Given &g) { return g.until > now; });
}

int64_t Balancer::published_leading() const {
    int64_t n = own_leading();
    const int64_t now = boottime_ns();
    for (const auto &[name, s] : members_)
        if (name != node_) n += given_now(s, now);
    return n;
}

int64_t Balancer::own_leading() const {
    int64_t n = int64_t(client_.leaderships().leading());
    for (uint64_t m : moving_)
        if (!client_.leaderships().leads(m)) ++n;
    return n;
}

void Balancer::on_moved(uint64_t member, int64_t owner, int code) {
    moving_.erase(member);
    publish_soon();
    --in_flight_;
    if (--in_flight_to_[owner] <= 0) in_flight_to_.erase(owner);
    if (code == kOk) {
        client_.bump(kBalanceMoves);
        // Counted until the taker says it, or T/2 at most (1 s at least):
        // a taker busy with its own joins publishes late, and a count
        // dropped before it says it is a dip the rest of the group sees.
        const int64_t now = boottime_ns();
        const int64_t until = now + std::max<int64_t>(kGivenNs, int64_t(client_.effective_timeout_ms()) * kNsPerMs / 2);
        for (auto &[name, s] : members_)
            if (s.owner == owner) {
                s.given.erase(std::remove_if(s.given.begin(), s.given.end(),
                                             [now](const Seen::Given &g) { return g.until <= now; }),
                              s.given.end());
                s.given.push_back({until, s.version});
            }
        // Once it expires, the plan is made again from what the taker said,
        // and our node stops counting it.
        later(until, &Balancer::replan_and_publish);
    } else if (code == kENoCandidate || code == kENotSup || code == kEState ||
               code == kETimedOut) {
        // kEState: another transfer of that leader runs (its own, one asked
        // from outside, a priority's): that election is left to it.
        // kETimedOut: the taker never said ready there (dead, cut off).
        refused_.insert({member, owner});
    }
    bool next_now = code == kOk || code == kENoCandidate || code == kENotSup || code == kEState ||
                    code == kETimedOut;
    plan_soon(next_now ? 0 : kRetryDelayNs);
}

}  // namespace zkelect::balance
