// A transfer asked from outside (docs/semantics.md, "A transfer asked from
// outside"): a thread of any client writes a request in the election path's
// data, and waits for the leader's answer there and for the target to come
// first. Not a candidacy's: the asking client need not take part in the
// election, so this runs on the asking thread, and its requests go through
// the client's session of the moment.
//
// It sees the client only as a TransferAskHost (declared here, implemented
// privately by Client), as SessionLease sees it as a LeaseHost: what it
// uses of the client is written down and cannot grow unnoticed.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "change_waiter.h"
#include "member.h"
#include "names.h"
#include "zk_port.h"

namespace zkelect {

struct ParticipantInfo {
    std::string node;
    std::string id;
    int64_t czxid = 0;
    int64_t ctime_ms = 0;
};

class TransferAskHost {
public:
    // --- any thread ---
    virtual bool on_loop_thread() const = 0;
    // The current session, or none once the client is closing.
    virtual std::shared_ptr<ZkPort> session_snapshot() = 0;
    virtual int effective_timeout_ms() const = 0;
    virtual bool connected() const = 0;
    // Candidates of path in queue order, asked of ZooKeeper now.
    virtual int participants(const std::string &path, int timeout_ms,
                             std::vector<ParticipantInfo> *out, std::string *why) = 0;
    virtual void post(std::function<void()> fn) = 0;
    // --- loop thread (inside a posted function) ---
    virtual uint64_t add_member(std::shared_ptr<Member> m) = 0;
    virtual void remove_member(uint64_t id) = 0;
    virtual void watch(const std::string &path, uint64_t member_id) = 0;
    virtual ZkPort &session() = 0;

protected:
    ~TransferAskHost() = default;
};

// One request, from its first listing to the target's confirmation. Used
// once, on one thread (not the loop's), by Client::request_transfer.
class TransferAsk {
public:
    TransferAsk(TransferAskHost &host, std::string path, std::string target, int timeout_ms);
    ~TransferAsk();
    TransferAsk(const TransferAsk &) = delete;
    TransferAsk &operator=(const TransferAsk &) = delete;

    // The transfer's code with *why, or kENoLeader, kENoCandidate, kENotSup,
    // kEState, kEAuth, kEConnLoss, kEZk with nothing changed; also
    // kESessionExpired, which the caller words.
    int run(std::string *why);

private:
    using Clock = std::chrono::steady_clock;
    // Transfers under way waited out before asking, at most (each ends
    // with a change of P's data or of its leader).
    static constexpr int kBusyRounds = 64;
    // Each step below: its code, kOk to go on.
    int find_target(std::string *why);
    int write_request(std::string *why);
    bool busy(const std::string &data) const;
    void ensure_waiter();
    bool await_other_transfer(Clock::time_point end);
    int await_outcome(std::string *why);
    int without_outcome(std::string *why);
    int confirm(std::string *why);
    // Reads of the path's data or the leader's node, and their helpers.
    bool watched(const std::string &node, bool data, Clock::time_point deadline, Reply *out);
    bool clear(int32_t version, Reply *out);
    std::shared_ptr<ZkPort> zk();
    Clock::time_point step() const;
    int step_ms() const;
    int no_answer(std::string *why) const;

    TransferAskHost &host_;
    const std::string path_;
    const std::string target_;
    const int timeout_ms_;
    std::shared_ptr<ZkPort> first_;  // the session when asked
    int t_ms_ = 0;                    // the session timeout T when asked
    Clock::duration t_{};
    Clock::time_point final_end_{};   // the bound of every wait
    std::vector<ParticipantInfo> line_;
    std::string leader_;              // the leader's node when asked
    std::string request_;             // what is written in the path's data
    int32_t mine_ = -1;               // the data's version the request made
    bool taken_ = false;              // someone wrote the data after the request
    // The member the loop routes this call's watches to, while it waits.
    std::shared_ptr<ChangeWaiter> waiter_;
    std::optional<TransferLine> result_;
    int32_t result_version_ = -1;
};

}  // namespace zkelect
