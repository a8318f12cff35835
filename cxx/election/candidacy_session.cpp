// A candidacy's side of its client's session (Member's calls): a new
// connection or session, a turn to join, a suspension, an expiry, refused
// credentials. What each means for the node, the line and the term is the
// candidacy's; the term's part is Term::on_connected and Term::end.
#include <zookeeper/zookeeper.h>

#include "candidacy.h"

namespace zkelect {

void Candidacy::on_connected(bool new_session) {
    if (!new_session && (want_ || !garbage_.empty()))
        emit(EventType::kReconnected, Reason::kNone, "reconnected (same session)");
    ++gen_;
    neighbours_.on_connected();  // the reconnect's listing reads them again
    // A watch whose read lost its reply was never registered, and those the
    // client re-sends on reconnect may fire in any order: read our node
    // again, and until that read is answered the watch does not count.
    own_armed_ = false;
#ifndef ZKELECT_MUTATION_LOST_OWN_WATCH
    if (!node_.empty() && state_ != State::kResigning && state_ != State::kRecovering)
        watch_own();
#endif
    term_.on_connected();
    transfers_.on_connected();
    if (want_) {
        check_margin();
        if (!want_) return;
    }
    // Nodes of a session given up (on_expired) go first, ahead of our create;
    // after a reconnect of the same session, deletes and listings that the
    // broken connection lost are sent again.
    if (!garbage_.empty() && state_ != State::kResigning) collect_garbage();
    switch (state_) {
        case State::kAwaitingSession:
            if (want_) send_create();
            break;
        case State::kCreating:
        case State::kRecovering:
            set_state(State::kRecovering);
            recover();
            break;
        case State::kListing:
        case State::kFollowing:
        case State::kHeir:
        case State::kClaiming:
        case State::kLeading:
        case State::kTransferring:
            if (state_ == State::kLeading || state_ == State::kTransferring)
                client_.lease().renew_now();
            list();
            break;
        case State::kResigning: collect_garbage(); break;
        case State::kDraining: client_.lease().renew_now(); break;  // it holds on
        case State::kIdle:
        case State::kClosed: break;
    }
}

bool Candidacy::on_join_turn(uint64_t ticket) {
    if (ticket != ticket_) return false;  // a place given up
    in_join_line_ = false;
    if (state_ == State::kAwaitingSession && want_ && !closing_ && client_.connected()) {
        check_margin();
        if (want_) send_create();
    }
    return client_.join_line().holds(ticket_);
}

void Candidacy::on_suspended() {
    if (want_) emit(EventType::kSuspended, Reason::kNone, "connection to ZooKeeper lost");
    if (client_.settings().leadership == Leadership::kStrict) depose(Reason::kSuspended);
}

void Candidacy::on_expired() {
    bool involved = want_ || !node_.empty() || !garbage_.empty();
    if (involved) emit(EventType::kExpired, Reason::kNone, "ZooKeeper session expired");
    // Creates of an older session cannot land any more: its close is
    // committed behind them. Keeps the set to one session's worth.
    abandoned_.clear();
    if (!node_.empty() || create_out_) {
        // The node lives until the quorum commits the session's close, which
        // may come after the word "expired" (client.h), or, for a session
        // given up unconfirmed, after T. The next session deletes it (any
        // session may; NONODE is as good), and RESIGNED waits for that as
        // after any resign. A create in flight may have landed: found by its
        // uuid. The next create takes a new uuid, or it would be taken for
        // that garbage and deleted (the explorer's seed 780710230).
        release_nodes();
        uuid_ = make_uuid(client_.settings().priority);
    }
    node_lost(Reason::kExpired);
    refused_.clear();
    deleting_.clear();  // the old handle will not answer them
    // The nodes are gone or going with the session; a candidate keeps its
    // slot for the node it makes again.
    ended_session_.clear();
    ended_gone_at_ = 0;
    ended_timeout_ = timeout_ns();
    for (const auto &g : garbage_) ended_session_.insert(g.first);
    account();
    if (state_ == State::kResigning) {
        if (garbage_.empty()) finish_resign();  // else on_connected collects it
        return;
    }
    if (want_) set_state(State::kAwaitingSession);
}

void Candidacy::on_auth_failed() {
    if (!want_ && node_.empty() && garbage_.empty()) return;
    fail(kEAuth, ZAUTHFAILED, client_.auth_failure());
    // The client connects no more (Client::on_session_event): nothing is
    // left to delete with, and the servers' expiry of the session removes
    // whatever of ours is left. RESIGNED ends the candidacy now.
    garbage_.clear();
    deleting_.clear();
    account();
    if (state_ == State::kResigning) finish_resign();
}

}  // namespace zkelect
