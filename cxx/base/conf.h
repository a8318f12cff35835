// Configuration: string keys, validated when set, copied into each client.
#pragma once

#include <map>
#include <string>

namespace zkelect {

enum class Leadership { kLease, kStrict };
enum class GuardMode { kAuto, kOn, kOff };

// The defaults of the numeric keys (gen/vocabulary.toml).
// BEGIN gen/vocab.py defaults
constexpr int kDefaultZkSessionTimeoutMs = 10000;
constexpr int kDefaultZkConnectTimeoutMs = 15000;
constexpr int kDefaultElectionPriority = 0;
constexpr int kDefaultElectionPriorityHolddownMs = 30000;
constexpr int kDefaultTransferDrainMs = 0;
constexpr int kDefaultLeaseWarnPercent = 0;
constexpr int kDefaultZkSessionNodesMaxBytes = 1000000;
constexpr int kDefaultEventsQueueMax = 1024;
constexpr int kDefaultCrashGuardDelayMs = 100;
constexpr int kDefaultBalanceMovesMax = 128;
// END gen/vocab.py defaults

// The typed view a client works from, parsed from the strings.
struct Settings {
    std::string hosts;
    int session_timeout_ms = kDefaultZkSessionTimeoutMs;
    int connect_timeout_ms = kDefaultZkConnectTimeoutMs;
    std::string auth_scheme, auth_credentials;  // empty scheme: none
    bool acl_creator_only = false;
    Leadership leadership = Leadership::kLease;
    int lease_margin_ms = -1;  // -1: derived from the negotiated timeout
    // The most bytes the client's candidate nodes may add up to in its
    // session's closing transaction (zk.session.nodes.max.bytes); 0: no bound.
    int session_nodes_max_bytes = kDefaultZkSessionNodesMaxBytes;
    // The most events each handle's queue keeps unread (events.queue.max);
    // 0: none.
    int events_queue_max = kDefaultEventsQueueMax;
    int log_level = -1;        // -1: leave libzookeeper's global level alone
    // Read the connected server's tickTime after each new connection
    // (zk.probe.ticktime; TickProbe).
    bool probe_ticktime = true;
    // Connect to the servers /zookeeper/config names (zk.hosts.follow).
    bool follow_hosts = true;
    // zookeeper_init_ssl's "ca,cert,key[,password]"; empty: plain TCP.
    std::string tls;
    // The first handshake checks the server's name (zk.tls.hostname.verify;
    // tls_check.cpp).
    bool tls_hostname_verify = true;
    // SASL (zk.sasl.*): empty mechanism, none. The password is read from
    // password_file by sasl_check (capi's client_new), never from a key.
    struct Sasl {
        std::string mechanism, user, password_file, service = "zookeeper", host, password;
    } sasl;
    // The crash guard (crash.guard, crash.guard.delay.ms; crash_guard.h),
    // and the guard service's socket (crash.guard.socket; empty: none).
    GuardMode guard = GuardMode::kAuto;
    int guard_delay_ms = kDefaultCrashGuardDelayMs;
    std::string guard_socket;
    // Preferred leaders (election.priority, election.priority.holddown.ms).
    int priority = kDefaultElectionPriority;
    int priority_holddown_ms = kDefaultElectionPriorityHolddownMs;
    // How long a leader deposed by a transfer keeps its node for its
    // holder to drain (transfer.drain.ms; drain.h). 0: no drain.
    int transfer_drain_ms = kDefaultTransferDrainMs;
    // LEASE_LOW below this share (%) of a full lease left (lease_warn.cpp);
    // 0: never.
    int lease_warn_percent = kDefaultLeaseWarnPercent;
    // The balanced group this client's elections take part in
    // (balance.group; cxx/balance/); empty: none. And how many of its
    // transfers run at once (balance.moves.max).
    std::string balance_group;
    int balance_moves_max = kDefaultBalanceMovesMax;
};

class Conf {
public:
    // Empty string on success, else why (the key is named).
    std::string set(const std::string &key, const std::string &value);
    // True when key is known but this build cannot honour a value for it
    // (zk.tls.* without TLS in libzookeeper, zk.sasl.* without SASL):
    // set() refused it for that.
    static bool unsupported(const std::string &key, const std::string &value);
    // False for an unknown key.
    bool get(const std::string &key, std::string *value) const;
    // Settings for a client, or a message in *why.
    bool settings(Settings *out, std::string *why) const;
    // The name of known key i (0-based, in a fixed order), nullptr past the
    // last: the one table of keys, for listings.
    static const char *key_name(size_t i);

private:
    std::map<std::string, std::string> values_;
};

}  // namespace zkelect
