// What a candidacy's neighbours (neighbours.h), transfers (transfer.h),
// priority (priority.h) and term (term.h) see of the candidacy they belong
// to: CandidacyHost, which Candidacy
// implements. Written down so that what they may read and change of the
// state machine stays narrow and cannot grow unnoticed, as LeaseHost does
// for the session's lease. They hold no state of the recipe themselves:
// the names of the nodes, the term and the state stay the candidacy's.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "errors.h"

namespace zkelect {

class Client;
class ZkPort;
struct ElectionShared;

// A candidacy's named states (candidacy.h draws how they follow each other).
enum class CandidacyState {
    kIdle,
    // Wants in, nothing sent: no session yet, or waiting in the client's
    // line for a turn to join (cxx/session/join_line.h).
    kAwaitingSession,
    kCreating,
    kRecovering,
    kListing,
    kFollowing,
    kHeir,
    kClaiming,
    kLeading,
    kResigning,
    kClosed,
    kTransferring,
    kDraining,
};

class CandidacyHost {
public:
    virtual CandidacyState state() const = 0;
    // A term began (ELECTED) and has not ended (DEPOSED).
    virtual bool leading() const = 0;
    // The user wants this candidacy in the election.
    virtual bool wanted() const = 0;
    // Our node's name ("" while unknown) and the predecessor followed.
    virtual const std::string &node() const = 0;
    virtual const std::string &pred() const = 0;
    // Bumped whenever replies in flight become stale.
    virtual uint64_t gen() const = 0;
    virtual uint64_t member_id() const = 0;
    virtual int64_t margin_ns() const = 0;
    // Expires with the candidacy, and with it the objects it holds: what a
    // reply or a timer of theirs checks before it touches them.
    virtual std::weak_ptr<void> life() = 0;
    virtual ElectionShared &shared() = 0;
    virtual Client &client() = 0;
    // The session, for a request counted in the election's stats.
    virtual ZkPort &zk() = 0;

    // The changes they may make: a leader's transfer states
    // (kTransferring, back to kLeading, kDraining), a term's (kLeading,
    // back to kClaiming), the end of a term (by a hand-over, or at the
    // lease's deadline), a new place at the back of the line, an event.
    virtual void set_state(CandidacyState s) = 0;
    virtual void depose(Reason why) = 0;
    virtual void requeue() = 0;
    // token: the term's (ELECTED, LEASE_LOW), 0 for any other event.
    virtual void announce(EventType t, Reason r, std::string message, std::string node,
                          std::string id, int64_t token) = 0;
    // A WARNING said once per `about` for this candidacy.
    virtual void on_warning(const std::string &about, const std::string &message) = 0;

    // What a follower's neighbours ask of it: the predecessor is gone (lead
    // if heir, else move up or list), the node before it was the lowest
    // (heir now), a listing is needed while it still follows, a request
    // was refused (ERROR, or a retry of `again` after a pause), and when
    // the failover it may lead after began (CLOCK_BOOTTIME; 0: none).
    virtual void claim_or_list() = 0;
    virtual void become_heir() = 0;
    virtual void list_again() = 0;
    virtual void refused(int rc, const std::string &what, std::function<void()> again) = 0;
    virtual void failover_from(int64_t at) = 0;

protected:
    ~CandidacyHost() = default;
};

// fn, called only while `life` has not expired (and holding it meanwhile):
// a reply or timer that outlives its candidacy does nothing.
template <class F>
auto while_alive(std::weak_ptr<void> life, F fn) {
    return [life = std::move(life), fn = std::move(fn)](auto &&...a) mutable {
        if (auto keep = life.lock()) fn(std::forward<decltype(a)>(a)...);
    };
}

}  // namespace zkelect
