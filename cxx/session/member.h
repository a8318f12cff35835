// What the loop of a session drives: a candidacy, an observer, a thread
// waiting for a change from outside. Its own header, so that a member
// needs no more of the Client than the calls it receives.
#pragma once

#include <cstdint>
#include <string>

namespace zkelect {

// A candidacy or an observer: something the loop drives. Called on the loop
// thread only.
class Member {
public:
    virtual ~Member() = default;
    virtual void on_connected(bool new_session) = 0;
    virtual void on_suspended() = 0;
    // The session ended: ZooKeeper said it expired, or the client gave it
    // up (no server took it for T, or a live session was answered with
    // timeout 0). Either way its nodes may still be listed: the quorum
    // deletes them when it commits the session's close, and a server says
    // "expired" as soon as the session is marked closing, before that
    // commit (the explorer's seed 573123428). Nothing of it carries over.
    virtual void on_expired() = 0;
    virtual void on_auth_failed() = 0;
    virtual void on_node_event(int type, const std::string &path) = 0;
    // The session's lease now runs until `until` (a write was acknowledged;
    // a keepalive's round trip in rtt_us, -1 for another write).
    // ZooKeeper refused to let this session check the member's node at
    // path (ZNOAUTH: its ACL was changed).
    virtual void on_node_refused(const std::string &path) { (void)path; }
    virtual void on_lease(int64_t until, int64_t rtt_us) {
        (void)until;
        (void)rtt_us;
    }
    // Something an operator should act on (a WARNING) about the client's
    // session rather than this member's election; `about` names what it is
    // about (a server), so that a member says it once however often told.
    virtual void on_warning(const std::string &about, const std::string &message) {
        (void)about;
        (void)message;
    }
    // A turn to join is this member's (JoinLine, ticket: the place it
    // waited at). True: it creates now and holds the turn; false: it no
    // longer waits with that ticket.
    virtual bool on_join_turn(uint64_t ticket) {
        (void)ticket;
        return false;
    }
};

}  // namespace zkelect
