#include "candidacy.h"

#include <zookeeper/zookeeper.h>

#include "names.h"

#include <algorithm>
#include <optional>

namespace zkelect {

namespace {
std::string basename_of(const std::string &path) {
    size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The garbage key of one of our nodes: the uuid its name carries, so a node
// found by its name and the same node found by its uuid are one entry.
std::string uuid_in(const std::string &name) {
    constexpr size_t kUuidLen = 36;
    if (name.size() > 3 + kUuidLen && name.compare(0, 3, "_c_") == 0)
        return name.substr(3, kUuidLen);
    return name;
}
}  // namespace

const char *Candidacy::state_name(State s) {
    switch (s) {
        case State::kIdle: return "idle";
        case State::kAwaitingSession: return "awaiting-session";
        case State::kCreating: return "creating";
        case State::kRecovering: return "recovering";
        case State::kListing: return "listing";
        case State::kFollowing: return "following";
        case State::kHeir: return "heir";
        case State::kClaiming: return "claiming";
        case State::kLeading: return "leading";
        case State::kResigning: return "resigning";
        case State::kClosed: return "closed";
        case State::kTransferring: return "transferring";
        case State::kDraining: return "draining";
    }
    return "?";
}

Candidacy::Candidacy(Client &client, std::shared_ptr<ElectionShared> shared)
    : client_(client), shared_(std::move(shared)) {
    int64_t now = realtime_ns();
    shared_->stats.update([now](ElectionCounts &st) {
        st.state_name = state_name(State::kIdle);
        st.state_since_ns = now;
    });
}

void Candidacy::account() {
    int64_t want = 0;
    if (state_ != State::kClosed) {
        want = want_ ? 1 : 0;
        for (const auto &g : garbage_) want += ended_session_.count(g.first) ? 0 : 1;
    }
    if (want == slots_) return;
    int64_t bytes = client_.candidate_node_bytes(shared_->path);
    // More than the user's calls reserved: a transfer's step back (the old
    // node is deleted as the new one is made), or a create that landed
    // after we stopped waiting for it. Held whatever the bound: the nodes
    // are there.
    if (want > slots_) client_.force_node_bytes((want - slots_) * bytes);
    else client_.release_node_bytes((slots_ - want) * bytes);
    slots_ = want;
}

// Between a create and the first place in line: what a turn to join covers
// (a claim, first in line already, may wait long for its lease).
static bool joining(Candidacy::State s) {
    return s == Candidacy::State::kCreating || s == Candidacy::State::kRecovering ||
           s == Candidacy::State::kListing;
}

namespace {
// A node of ours stands in line: counted in the client's book (a balanced
// group's share of a client is at most this many).
bool in_line(CandidacyState s) {
    switch (s) {
    case CandidacyState::kFollowing:
    case CandidacyState::kHeir:
    case CandidacyState::kClaiming:
    case CandidacyState::kLeading:
    case CandidacyState::kTransferring:
    case CandidacyState::kDraining:
        return true;
    default:
        return false;
    }
}
}  // namespace

void Candidacy::set_state(State s) {
    if (!joining(s)) client_.join_line().give_back(ticket_);
    if (s == State::kAwaitingSession && want_ && !in_join_line_) {
        in_join_line_ = true;  // a session lost before our first place keeps our place
        client_.join_line().wait(ticket_, weak_from_this());
    }
    if (state_ == State::kDraining && s != State::kDraining) transfers_.leave_drain();
    if (s != state_) {
        if (in_line(s) != in_line(state_)) client_.leaderships().line(in_line(s) ? 1 : -1);
        state_ = s;
        int64_t now = realtime_ns();
        shared_->stats.update([s, now](ElectionCounts &st) {
            st.state = static_cast<int>(s);
            st.state_name = state_name(s);
            st.state_since_ns = now;
        });
    }
    update_hold();
    account();
}

ZkPort &Candidacy::zk() {
    shared_->stats.update([](ElectionCounts &st) { ++st.requests; });
    return client_.session();
}

ReplyFn Candidacy::route(Handler h) {
    std::weak_ptr<Candidacy> weak = weak_from_this();
    uint64_t gen = gen_;
    return client_.on_loop([weak, gen, h](Reply &&r) {
        if (auto self = weak.lock()) ((*self).*h)(gen, std::move(r));
    });
}

ListingFn Candidacy::route(ListingHandler h) {
    std::weak_ptr<Candidacy> weak = weak_from_this();
    uint64_t gen = gen_;
    return [weak, gen, h](const Listing &l) {
        if (auto self = weak.lock()) ((*self).*h)(gen, l);
    };
}

void Candidacy::emit(EventType t, Reason r, std::string message, std::string node, std::string id,
                     int64_t token, int error, int zk_rc) {
    auto ev = std::make_unique<Event>();
    ev->type = t;
    ev->reason = r;
    ev->message = std::move(message);
    ev->node = std::move(node);
    ev->id = std::move(id);
    ev->token = token;
    ev->error = error;
    ev->zk_rc = zk_rc;
    ev->time_ns = realtime_ns();
    shared_->queue.push(std::move(ev));
}

void Candidacy::fail(int code, int zk_rc, const std::string &message) {
    // The candidacy cannot go on (no permission, a broken path): stop and
    // report rather than retry forever.
    depose(Reason::kNone);
    ++gen_;
    release_nodes();
    want_ = false;
    shared_->set_error(code);
    emit(EventType::kError, Reason::kNone, message, {}, {}, 0, code, zk_rc);
    set_state(State::kResigning);
    collect_garbage();
}

int64_t Candidacy::margin_ns() const {
    return lease::margin_ns(timeout_ns(), client_.settings().lease_margin_ms);
}

// Leaders, claimants and heirs need the session's lease kept fresh: an heir
// holds one before its predecessor goes, so it can lead without a round trip.
void Candidacy::update_hold() {
    bool want = !node_.empty() &&
                (state_ == State::kLeading || state_ == State::kTransferring ||
                 state_ == State::kClaiming || state_ == State::kHeir ||
                 state_ == State::kDraining);
    if (want) client_.lease().hold(member_id_, node_path(node_), state_ == State::kClaiming);
    else if (holding_) client_.lease().release(member_id_);
    holding_ = want;
}

// A margin of T/2 or more leaves no lease: such a candidacy would wait
// forever and never lead. Said once, when the timeout is known.
void Candidacy::check_margin() {
    if (margin_reported_ || lease::margin_fits(timeout_ns(), margin_ns())) return;
    margin_reported_ = true;
    fail(kEInval, 0,
         "lease.margin.ms (" + std::to_string(margin_ns() / kNsPerMs) +
             " ms) leaves no lease under the negotiated session timeout of " +
             std::to_string(timeout_ns() / kNsPerMs) + " ms: it must be below half of it");
}

// --- commands ---------------------------------------------------------------

void Candidacy::volunteer(uint64_t command, int reserved) {
    applied_ = command;
    slots_ += reserved;  // account() below gives back what is not needed
    if (closing_) {
        account();
        return;
    }
    lift_fence_if_latest();
    if (!want_) {
        // A place in the join line, behind a resign's delete too.
        ticket_ = client_.join_line().ticket();
        in_join_line_ = false;
    }
    want_ = true;
    margin_reported_ = false;
    if (state_ == State::kResigning) {
        account();
        return;  // enrolls once the old node is gone
    }
    begin_enrollment();
    account();
}

void Candidacy::resign(uint64_t command) {
    applied_ = command;
    if (state_ == State::kIdle && !want_) {
        // Already stopped (an error did it): nothing to remove, and the
        // RESIGNED of that stop was said.
        lift_fence_if_latest();
        shared_->settle(applied_);
        return;
    }
    stop_resigning();
    lift_fence_if_latest();
    collect_garbage();
    account();
}

// The fence a resign put on the lease lasts until the loop has carried out
// every command issued so far: a later resign's fence must not be lifted by
// an earlier command.
void Candidacy::lift_fence_if_latest() {
    std::lock_guard<std::mutex> lock(shared_->mu);
    if (applied_ == shared_->commands && shared_->phase.load() != Phase::kClosed)
        shared_->lease.lift_fence();
}

void Candidacy::stop_resigning() {
    want_ = false;
    ++gen_;
    depose(Reason::kResigned);
    neighbours_.forget();
    term_.failover_from(0);
    release_nodes();
    shared_->stats.update([](ElectionCounts &st) { st.queue_position = -1; });
    set_state(State::kResigning);
}

void Candidacy::close(uint64_t command, std::function<void()> done) {
    applied_ = command;
    closing_ = true;
    close_done_ = std::move(done);
    if (term_.leading()) {
        // DEPOSED comes on every loss of leadership, closing included.
        want_ = false;
        depose(Reason::kClosed);
    }
    // Waiting for a session or a turn to join may still leave old nodes to
    // delete (a hand-over's, a step back's): the same way out as any state.
    if (state_ != State::kResigning) stop_resigning();
    collect_garbage();
    account();
}

// --- enrollment -------------------------------------------------------------

void Candidacy::begin_enrollment() {
    // A node still held is deleted, never forgotten: forgetting it would
    // leave a ghost that blocks everyone behind it for the session's life.
    release_nodes();
    ++gen_;
    neighbours_.forget();
    own_armed_ = own_after_listing_ = false;
    update_hold();
    uuid_ = make_uuid(client_.settings().priority);
    parent_attempts_ = 0;
    account();
    if (!garbage_.empty()) collect_garbage();
    if (!client_.connected()) {
        set_state(State::kAwaitingSession);
        return;
    }
    check_margin();
    if (!want_) return;  // the margin check stopped it
    send_create();
}

void Candidacy::send_create() {
    // Nothing is sent until our turn: to ZooKeeper we are not there yet, as
    // while we wait for a session.
    if (!client_.join_line().take(ticket_)) {
        set_state(State::kAwaitingSession);
        return;
    }
    in_join_line_ = false;
    set_state(State::kCreating);
    if (!client_.path_known(shared_->path)) {
        // First candidate of this session here: make the path in the same
        // burst rather than learn of its absence from a failed create (each
        // is a write through the quorum, a refused one too, so an ancestor
        // that many elections share is asked for once per session). Errors
        // are for the create to tell.
        for (const auto &prefix : path_prefixes(shared_->path))
            if (client_.first_ask_for(prefix)) zk().create_persistent(prefix, ReplyFn([](Reply &&) {}));
    }
    create_sent_ = boottime_ns();
    create_until_ = client_.lease().earns(create_sent_);
    create_out_ = true;
    zk().create_candidate(node_path(node_prefix(uuid_)), shared_->id,
                                       route(&Candidacy::on_create));
    // Answered after the create (one session's requests are answered in
    // order): the listing is on its way when the node's name comes back.
    list();
}

void Candidacy::on_create(uint64_t gen, Reply &&r) {
    if (gen != gen_ || state_ != State::kCreating) {
        // A create we stopped waiting for (resign, a new enrollment): if it
        // landed, the node is ours and unwanted.
        if (r.rc == ZOK) {
            std::string name = basename_of(r.value);
            garbage_[uuid_in(name)] = name;
            collect_garbage();
        }
        return;
    }
    // Known from here on, but after connection trouble (kRecovering finds
    // it) or a session's end (on_expired).
    create_out_ = connection_trouble(r.rc) || r.rc == ZRUNTIMEINCONSISTENCY;
    if (r.rc == ZOK) created(r);
    else create_failed(r.rc);
}

void Candidacy::created(const Reply &r) {
    node_ = basename_of(r.value);
    term_.node_made(r.stat.czxid);
    if (r.stat.ephemeral_owner != client_.session_id()) {
        // Cannot happen for our own create; refuse to build on it.
        garbage_[uuid_] = node_;
        begin_enrollment();
        collect_garbage();
        return;
    }
    client_.set_path_known(shared_->path);
    // A write acknowledged through the quorum earns the session's lease
    // just as a keepalive does: if the listing finds us first, we lead with
    // no further round trip.
    client_.lease().acknowledged(create_sent_, create_until_);
    // The listing sent with the create follows, answered at once (one
    // session's requests are answered in order), and the own-node read goes
    // out after the reads it leads to: sent now, it went ahead of the
    // predecessor's read that FOLLOWING waits for, into the same server
    // queue, for every session of a burst of joins (issue 50 finding 9:
    // convergence at +10 ms each way took about one round trip more). The
    // watch is armed a moment later; until then an heir claims only after a
    // listing (claim_or_list) and the keepalive checks our node.
    own_after_listing_ = true;
    set_state(State::kListing);
}

// A create ZooKeeper refused, or whose outcome is unknown.
void Candidacy::create_failed(int rc) {
    switch (rc) {
        case ZNONODE:
            if (++parent_attempts_ > 5) {
                fail(kEZk, rc, "cannot create the election path " + shared_->path +
                                     " (it keeps vanishing)");
                return;
            }
            make_parents();
            return;
        case ZCONNECTIONLOSS:
        case ZOPERATIONTIMEOUT:
        case ZSESSIONMOVED:
        case ZRUNTIMEINCONSISTENCY:  // the client drops the connection after it
            // The create may or may not have happened: never create blindly.
            set_state(State::kRecovering);
            return;
        case ZNOAUTH:
            fail(kEAuth, rc, "not allowed to create a candidate under " + shared_->path);
            return;
        case ZTHROTTLEDOP:
            // Refused unexecuted (the server's throttledOpWaitTime): the
            // create never happened; again after a pause.
            refused(rc, "create a candidate", [this] {
                if (state_ == State::kCreating) send_create();
            });
            return;
        case ZNOCHILDRENFOREPHEMERALS:
            fail(kEInval, rc, "the election path " + shared_->path + " is an ephemeral node");
            return;
        case ZSESSIONEXPIRED:
        case ZINVALIDSTATE:
        case ZCLOSING:
            return;  // the session handler takes over
        default:
            fail(kEZk, rc, std::string("creating a candidate: ") + zerror(rc));
            return;
    }
}

void Candidacy::make_parents() {
    auto prefixes = path_prefixes(shared_->path);
    // One session's requests are handled in order, so when the last reply
    // comes every ancestor has been made.
    for (size_t i = 0; i < prefixes.size(); ++i) {
        bool last = i + 1 == prefixes.size();
        zk().create_persistent(
            prefixes[i], last ? route(&Candidacy::on_parent) : ReplyFn([](Reply &&) {}));
    }
}

void Candidacy::on_parent(uint64_t gen, Reply &&r) {
    if (gen != gen_ || state_ != State::kCreating) return;
    if (r.rc == ZOK || r.rc == ZNODEEXISTS) {
        send_create();
    } else if (r.rc == ZNOAUTH) {
        fail(kEAuth, r.rc, "not allowed to create the election path " + shared_->path);
    } else if (r.rc == ZCONNECTIONLOSS || r.rc == ZSESSIONEXPIRED || r.rc == ZCLOSING ||
               r.rc == ZOPERATIONTIMEOUT || r.rc == ZINVALIDSTATE) {
        // Retried on reconnect (still kCreating, nothing sent yet: create).
        set_state(State::kAwaitingSession);
    } else {
        fail(kEZk, r.rc, "creating " + shared_->path + ": " + zerror(r.rc));
    }
}

void Candidacy::on_recover_children(uint64_t gen, const Listing &r) {
    if (gen != gen_ || state_ != State::kRecovering) return;
    if (r.rc == ZNONODE) {
        // No election path, so no node of ours: start over, safely.
        abandoned_.insert(uuid_);
        create_out_ = false;
        begin_enrollment();
        return;
    }
    if (r.rc != ZOK) {
        refused(r.rc, "list the election path " + shared_->path, [this] { recover(); });
        return;
    }
    for (const auto &child : r.children) {
        if (has_uuid(child, uuid_)) {
            node_ = child;
            create_out_ = false;
            // Adopt only a node of this session (a lagging server may list
            // one whose session is ending). The read sets the own-node watch.
            ++own_seq_;
            client_.watch(node_path(node_), member_id_);
            zk().get(node_path(node_), true, route(&Candidacy::on_adopt));
            return;
        }
    }
    abandoned_.insert(uuid_);
    create_out_ = false;
    begin_enrollment();
}

// Finds a create whose outcome is unknown by the uuid in its name. Synced: a
// server that has not yet applied our create must not make us believe it
// never happened.
void Candidacy::recover() {
    shared_->stats.update([](ElectionCounts &st) { st.requests += 2; });
    client_.list(shared_->path, route(&Candidacy::on_recover_children), true);
}

// A request ZooKeeper answered with an error on a live connection: a lack
// of permission ends the candidacy with ERROR (no retry can fix it); any
// other refusal (a throttled server, ZTHROTTLEDOP) is retried after T/24,
// doubling up to T, unless something else happened to the candidacy
// meanwhile, and ends it with ERROR after kMaxThrottled in a row: a loop
// bounded in count, and a candidacy never left waiting without a word.
void Candidacy::refused(int rc, const std::string &what, std::function<void()> again) {
    if (connection_trouble(rc)) return;  // the reconnect sends it again
    if (rc == ZNOAUTH) {
        fail(kEAuth, rc, "not allowed to " + what);
        return;
    }
    // In a row: each within 2T of the one before (the longest pause is T),
    // whatever answers came between (a retry may be several requests).
    int64_t now = boottime_ns();
    if (now - throttled_at_ > 2 * timeout_ns()) throttled_ = 0;
    throttled_at_ = now;
    if (++throttled_ > kMaxThrottled) {
        throttled_ = 0;
        fail(kEZk, rc, "ZooKeeper refused " + std::to_string(kMaxThrottled + 1) +
                           " times in a row to " + what + ": " + zerror(rc));
        return;
    }
    int64_t pause = std::min(timeout_ns(), (timeout_ns() / 24) << std::min(throttled_ - 1, 5));
    std::weak_ptr<Candidacy> weak = weak_from_this();
    uint64_t gen = gen_;
    client_.at(now + pause, [weak, gen, again = std::move(again)] {
        auto self = weak.lock();
        if (self && gen == self->gen_ && self->client_.connected()) again();
    });
}

void Candidacy::on_adopt(uint64_t gen, Reply &&r) {
    if (gen != gen_ || state_ != State::kRecovering) return;
    if (r.rc == ZOK && r.stat.ephemeral_owner == client_.session_id()) {
        term_.node_made(r.stat.czxid);
        own_armed_ = true;
        list();
        return;
    }
    if (r.rc == ZOK || r.rc == ZNONODE) {
        if (r.rc == ZOK) garbage_[uuid_] = node_;
        node_.clear();
        begin_enrollment();
        collect_garbage();
        return;
    }
    // ZNOAUTH (READ taken off the path): ERROR, and the node found is
    // released; a throttled read is asked again from the listing on.
    refused(r.rc, "read our node " + node_path(node_) + " found after a lost reply",
            [this] {
                if (state_ == State::kRecovering) recover();
            });
}

// Own-node watch: someone else deleting our node must not go unnoticed
// while we lead or wait. Until a read of this connection armed it, an heir
// claims only after a listing (claim_or_list), and the keepalive, which
// checks every holder's node, is what finds a deletion.
void Candidacy::watch_own() {
    own_armed_ = false;
    own_after_listing_ = false;
    uint64_t seq = ++own_seq_;
    std::string node = node_;
    client_.watch(node_path(node), member_id_);
    std::weak_ptr<Candidacy> weak = weak_from_this();
    zk().get(node_path(node), true, client_.on_loop([weak, seq, node](Reply &&r) {
        auto self = weak.lock();
        if (self && seq == self->own_seq_ && node == self->node_) self->on_own(std::move(r));
    }));
}

void Candidacy::on_own(Reply &&r) {
    if (r.rc == ZOK) {
        own_armed_ = true;
        if (r.has_stat) term_.saw_own(r.stat.czxid, r.stat.version);
    } else if (r.rc == ZNONODE) {
        node_lost(Reason::kNodeDeleted);
        if (want_) begin_enrollment();
    } else {
        // ZNOAUTH: its ACL was changed, and a deletion would go unheard.
        refused(r.rc,
                "read our own node " + node_path(node_) +
                    " (its ACL was changed): cannot tell if it is deleted",
                [this] {
                    if (!node_.empty() && !own_armed_) watch_own();
                });
    }
}

// The heir's claim without a round trip rests on the own-node watch: on one
// connection ZooKeeper notifies in commit order, so our node's deletion,
// had it come first, would have been heard before our predecessor's. With
// no armed watch (its read's reply was lost, or a reconnect re-sent watches
// in no particular order) a listing must show that our node is still there.
void Candidacy::claim_or_list() {
#ifdef ZKELECT_MUTATION_LOST_OWN_WATCH
    own_armed_ = true;  // Mutation: trust a watch that may be gone.
#endif
    if (neighbours_.heir() && own_armed_) {
        claim();
        return;
    }
    // A follower whose predecessor is gone moves up in its last listing,
    // as far as that listing reaches (move_up): no listing of the path.
    if (state_ == State::kFollowing && neighbours_.move_up_if_known()) return;
    // We may be first now. Earn the lease while the listing is in flight:
    // if we are, the claim needs no further round trip.
    client_.lease().renew_for(member_id_, node_path(node_));
    list();
}

// --- position in the queue --------------------------------------------------

void Candidacy::list(bool still_following) {
    // A follower that only learns its new place stays one meanwhile: its
    // predecessor's deletion is still acted on.
    if (!still_following && state_ != State::kLeading && state_ != State::kTransferring &&
        state_ != State::kClaiming && state_ != State::kCreating)
        set_state(State::kListing);
    shared_->stats.update([](ElectionCounts &st) { ++st.requests; });
    client_.list(shared_->path, route(&Candidacy::on_children));
}

void Candidacy::on_children(uint64_t gen, const Listing &r) {
    bool current = gen == gen_;
    take_place(gen, r);
    // A new node's own-node read, behind the reads of its place in line.
    if (current && own_after_listing_ && !node_.empty()) watch_own();
}

void Candidacy::take_place(uint64_t gen, const Listing &r) {
    if (gen != gen_ || node_.empty()) return;
    if (r.rc == ZNONODE) {
        // The election path is gone, and our node with it.
        node_lost(Reason::kNodeDeleted);
        begin_enrollment();
        return;
    }
    if (r.rc != ZOK) {
        refused(r.rc, "list the election path " + shared_->path, [this] { list(); });
        return;
    }

    // Our own leftovers (lost creates) go first: they must not block anyone.
    for (const auto &child : r.children) {
        for (const auto &uuid : abandoned_) {
            if (has_uuid(child, uuid) && child != node_) garbage_[uuid] = child;
        }
    }
    if (!garbage_.empty()) collect_garbage();

    const auto &order = r.order;
    warn_near_wrap(order);
    auto found = r.position.find(node_);
    size_t me = found == r.position.end() ? order.size() : found->second;
    {
        int64_t pos = me == order.size() ? -1 : int64_t(me), len = int64_t(order.size());
        shared_->stats.update([pos, len](ElectionCounts &st) {
            st.queue_position = pos;
            st.queue_length = len;
        });
    }
    if (me == order.size()) {
        node_lost(Reason::kNodeDeleted);
        begin_enrollment();
        return;
    }
    if (me == 0) {
        neighbours_.clear_ahead();
        // Still first: keep leading.
        if (state_ == State::kLeading || state_ == State::kTransferring) return;
        claim();
        return;
    }
    if (term_.leading()) depose(Reason::kNodeDeleted);  // someone sorts before us now
    term_.failover_from(0);  // a deletion that did not make us first is no failover of ours
    bool heir = neighbours_.place(order, me);
    set_state(heir ? State::kHeir : State::kFollowing);
    priority_.arm();
    neighbours_.watch(order, me);
    if (heir) transfers_.watch_marker();
    // An heir holds a lease before it is needed (a keepalive now, unless the
    // session already has one on the way).
    if (heir) client_.lease().renew_now();
}

// ZooKeeper's sequence is a signed 32-bit counter per parent that wraps
// after 2^31 creates. Our order is right across the wrap; Curator's
// LeaderLatch sorts the suffix as text, so in a shared path a wrapped
// "-2147483648" would lead for Curator while an older node leads for us.
// 2^24 creates before the wrap leaves an operator time to move.
void Candidacy::warn_near_wrap(const std::vector<Candidate> &order) {
    constexpr int32_t kNear = INT32_MAX - (1 << 24) + 1;
    if (wrap_warned_) return;
    for (const auto &c : order) {
        if (c.seq >= kNear || c.seq < 0) {
            wrap_warned_ = true;
            client_.bump(kSequenceNearWrap);
            emit(EventType::kWarning, Reason::kNone,
                 "sequence numbers under " + shared_->path + " reached " + std::to_string(c.seq) +
                     " and wrap at 2147483647: Curator LeaderLatch participants in this path "
                     "will disagree about the order after the wrap; move the election to a "
                     "fresh path (or delete and re-create " + shared_->path + " while empty)",
                 c.name);
            return;
        }
    }
}

void Candidacy::become_heir() {
    shared_->stats.update([](ElectionCounts &st) { st.queue_position = 1; });
    set_state(State::kHeir);
    client_.lease().renew_now();
    transfers_.watch_marker();
}

void Candidacy::on_node_event(int type, const std::string &path) {
    shared_->stats.update([](ElectionCounts &st) { ++st.notifications; });
    if (path == shared_->path) {
        // The election path's data: the transfer marker (only a data watch
        // is ever set on it by a candidacy).
        transfers_.on_path_event();
        return;
    }
    if (neighbours_.on_node_event(type, path)) return;
    if (!node_.empty() && path == node_path(node_)) {
        if (type == ZOO_DELETED_EVENT) {
            node_lost(Reason::kNodeDeleted);
            if (want_) begin_enrollment();
        } else {
            watch_own();  // re-arms the one-shot watch
        }
        return;
    }
}

// --- leadership -------------------------------------------------------------

void Candidacy::claim() {
    set_state(State::kClaiming);
    neighbours_.forget();
    term_.claim();
}

void Candidacy::on_lease(int64_t until, int64_t rtt_us) {
    // The session's keepalive is this candidacy's too while it holds.
    if (rtt_us >= 0 && holding_)
        shared_->stats.add_keepalive(rtt_us);
    // The node stands as long as the session does: no longer than the
    // drain's bound, though (drain.h).
    if (state_ == State::kDraining) transfers_.on_lease_draining(until);
    else term_.on_lease(until);
}

// About the session (a server's timing): said once per candidacy and server.
void Candidacy::on_warning(const std::string &about, const std::string &message) {
    if (warned_about_.insert(about).second) emit(EventType::kWarning, Reason::kNone, message);
}

void Candidacy::on_node_refused(const std::string &path) {
    if (node_.empty() || path != node_path(node_)) return;
    fail(kEAuth, ZNOAUTH, "not allowed to check our own node " + path +
                              " (its ACL was changed): cannot prove our place in line");
}

void Candidacy::node_lost(Reason why) {
    depose(why);
    ++gen_;
    term_.failover_from(0);
    node_.clear();
    own_armed_ = own_after_listing_ = false;
    neighbours_.forget();
    update_hold();
}

void Candidacy::requeue() {
    term_.failover_from(0);
    begin_enrollment();  // the old node becomes garbage, deleted in this burst
}

// --- leaving: cxx/election/node_release.cpp ---------------------------------------------

}  // namespace zkelect
