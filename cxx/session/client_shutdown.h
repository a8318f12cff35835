// A client's end in one call (zkelect_client_shutdown, docs/design.md
// "Shutting a client down"): every candidacy and observer of the client at
// once, then its session.
//
// Destroying E elections one by one costs E round trips: each destroy
// waits for its own delete. Here the members' ends run on the loop in one
// turn, so every delete leaves in one burst; ZooKeeper answers one
// session's requests in order, so the wait is about one round trip plus
// the servers' work on E deletes. Then the loop stops for good and the
// session closes, which removes whatever of the client is still on the
// servers (a node whose delete was lost with the connection, a create
// whose reply never came).
//
// The members' ends are given as steps their owners made on the caller's
// thread (Election::begin_shutdown, Observer::shutdown_step): leadership
// ended there, before any step was posted, so no delete leaves while any
// handle of the client still answers is_leader 1.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace zkelect {

class Client;

class ClientShutdown {
public:
    // Called once, on the loop, when the member has no node left.
    using Gone = std::function<void()>;
    // A member's end, run on the loop; calls gone once its nodes are gone
    // (maybe later, from a reply).
    using Step = std::function<void(Gone gone)>;

    struct Outcome {
        // kOk: every step said its nodes are gone; kETimedOut: the
        // deadline came first (`pending` steps had not); kEDeadlk: called
        // on the client's loop thread, nothing done.
        int code = 0;
        size_t pending = 0;
        // The session's close returned before the call did (the servers
        // took it, or it was not connected and sent none).
        bool session_closed = false;
        std::string why;  // for a code other than kOk
    };

    // Runs the steps on client's loop in one turn, waits until each said
    // gone or timeout_ms passed, then stops the loop and closes the
    // session, waiting for that close only within what is left of
    // timeout_ms (it finishes on a thread of its own; the client's
    // destructor joins it). Any thread but the loop's; once per client:
    // nothing posted to the client runs afterwards (Client::stopped()).
    static Outcome run(Client &client, std::vector<Step> steps, int timeout_ms);

private:
    // The loop stops, the session goes to a thread of its own to close;
    // true when that close ended by deadline_ns (CLOCK_BOOTTIME).
    static bool end_session(Client &client, int64_t deadline_ns);
};

}  // namespace zkelect
