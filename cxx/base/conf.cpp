#include "conf.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "names.h"

namespace zkelect {

namespace {

enum class Kind { kHosts, kInt, kChoice, kAuth, kTls, kSasl, kPath, kZkPath };

// One row of gen/vocabulary.toml's [[key]] table (gen/vocab.py writes kKeys).
struct Key {
    const char *name;
    const char *fallback;  // value when unset
    Kind kind;
    long min, max;        // kInt
    bool empty_ok;        // kInt: "" means "derived"
    const char *choices;  // kChoice: the values, '|' between them
    const char *message;  // what a refused value gets (kInt, kChoice, kAuth)
};

// BEGIN gen/vocab.py keys
constexpr Key kKeys[] = {
    {"zk.hosts", "", Kind::kHosts, 0, 0, false,
     nullptr,
     nullptr},
    {"zk.session.timeout.ms", "10000", Kind::kInt, 1000, 3600000, false,
     nullptr,
     "zk.session.timeout.ms must be an integer from 1000 to 3600000"},
    {"zk.connect.timeout.ms", "15000", Kind::kInt, 1, 3600000, false,
     nullptr,
     "zk.connect.timeout.ms must be an integer from 1 to 3600000"},
    {"zk.auth", "", Kind::kAuth, 0, 0, false,
     nullptr,
     "zk.auth must be \"scheme:credentials\", e.g. \"digest:user:password\""},
    {"election.acl", "open", Kind::kChoice, 0, 0, false,
     "open|creator",
     "election.acl must be \"open\" or \"creator\""},
    {"election.priority", "0", Kind::kInt, 0, 255, false,
     nullptr,
     "election.priority must be an integer from 0 to 255"},
    {"election.priority.holddown.ms", "30000", Kind::kInt, 100, 3600000, false,
     nullptr,
     "election.priority.holddown.ms must be an integer from 100 to 3600000"},
    {"transfer.drain.ms", "0", Kind::kInt, 0, 86400000, false,
     nullptr,
     "transfer.drain.ms must be an integer from 0 to 86400000"},
    {"lease.warn.percent", "0", Kind::kInt, 0, 99, false,
     nullptr,
     "lease.warn.percent must be an integer from 0 to 99"},
    {"leadership", "lease", Kind::kChoice, 0, 0, false,
     "lease|strict",
     "leadership must be \"lease\" or \"strict\""},
    {"lease.margin.ms", "", Kind::kInt, 1, 60000, true,
     nullptr,
     "lease.margin.ms must be an integer from 1 to 60000 (a lease without a margin is not safe against clock-rate differences)"},
    {"zk.session.nodes.max.bytes", "1000000", Kind::kInt, 0, 2147483647, false,
     nullptr,
     "zk.session.nodes.max.bytes must be an integer from 0 (no bound) to 2147483647"},
    {"events.queue.max", "1024", Kind::kInt, 0, 1024, false,
     nullptr,
     "events.queue.max must be 0 (keep no events) or an integer from 2 to 1024"},
    {"zk.log.level", "keep", Kind::kChoice, 0, 0, false,
     "keep|none|error|warn|info|debug",
     "zk.log.level must be keep, none, error, warn, info or debug"},
    {"zk.probe.ticktime", "true", Kind::kChoice, 0, 0, false,
     "true|false",
     "zk.probe.ticktime must be \"true\" or \"false\""},
    {"zk.tls.ca", "", Kind::kTls, 0, 0, false,
     nullptr,
     nullptr},
    {"zk.tls.cert", "", Kind::kTls, 0, 0, false,
     nullptr,
     nullptr},
    {"zk.tls.key", "", Kind::kTls, 0, 0, false,
     nullptr,
     nullptr},
    {"zk.tls.key.password", "", Kind::kTls, 0, 0, false,
     nullptr,
     nullptr},
    {"zk.tls.hostname.verify", "true", Kind::kChoice, 0, 0, false,
     "true|false",
     "zk.tls.hostname.verify must be \"true\" or \"false\""},
    {"zk.hosts.follow", "true", Kind::kChoice, 0, 0, false,
     "true|false",
     "zk.hosts.follow must be \"true\" or \"false\""},
    {"crash.guard", "auto", Kind::kChoice, 0, 0, false,
     "auto|on|off",
     "crash.guard must be \"auto\", \"on\" or \"off\""},
    {"crash.guard.delay.ms", "100", Kind::kInt, 0, 150, false,
     nullptr,
     "crash.guard.delay.ms must be an integer from 0 to 150"},
    {"zk.sasl.mechanism", "", Kind::kSasl, 0, 0, false,
     nullptr,
     nullptr},
    {"zk.sasl.user", "", Kind::kSasl, 0, 0, false,
     nullptr,
     nullptr},
    {"zk.sasl.password.file", "", Kind::kSasl, 0, 0, false,
     nullptr,
     nullptr},
    {"zk.sasl.service", "zookeeper", Kind::kSasl, 0, 0, false,
     nullptr,
     nullptr},
    {"zk.sasl.host", "", Kind::kSasl, 0, 0, false,
     nullptr,
     nullptr},
    {"crash.guard.socket", "", Kind::kPath, 0, 0, false,
     nullptr,
     "crash.guard.socket must be an absolute path of one line"},
    {"balance.group", "", Kind::kZkPath, 0, 0, false,
     nullptr,
     "balance.group must be a ZooKeeper path as an election path is (absolute, no trailing '/', no \"//\", \".\" or \"..\", not under /zookeeper)"},
    {"balance.moves.max", "128", Kind::kInt, 1, 1024, false,
     nullptr,
     "balance.moves.max must be an integer from 1 to 1024"},
};
// END gen/vocab.py keys

#ifdef ZKELECT_HAVE_ZK_TLS
constexpr bool kHaveTls = true;
#else
constexpr bool kHaveTls = false;
#endif
#ifdef ZKELECT_HAVE_ZK_SASL
constexpr bool kHaveSasl = true;
#else
constexpr bool kHaveSasl = false;
#endif
#ifdef ZKELECT_HAVE_ZK_TLS_SASL
constexpr bool kHaveTlsSasl = true;
#else
constexpr bool kHaveTlsSasl = false;
#endif
#ifdef ZKELECT_HAVE_ZK_TLS_CA_ONLY
constexpr bool kHaveTlsCaOnly = true;
#else
constexpr bool kHaveTlsCaOnly = false;
#endif

}  // namespace

const char *Conf::key_name(size_t i) {
    return i < sizeof kKeys / sizeof kKeys[0] ? kKeys[i].name : nullptr;
}

namespace {

bool is_tls_key(const std::string &key) { return key.compare(0, 7, "zk.tls.") == 0; }
bool is_sasl_key(const std::string &key) { return key.compare(0, 8, "zk.sasl.") == 0; }

const Key *find_key(const std::string &name) {
    for (const auto &k : kKeys)
        if (name == k.name) return &k;
    return nullptr;
}

bool parse_int(const std::string &s, long lo, long hi, int *out) {
    if (s.empty() || s.size() > 10) return false;
    errno = 0;
    char *end = nullptr;
    long v = std::strtol(s.c_str(), &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
    *out = static_cast<int>(v);
    return true;
}

int choice_index(const char *choices, const std::string &value) {
    int i = 0;
    for (const char *p = choices;; ++i) {
        const char *bar = std::strchr(p, '|');
        size_t n = bar ? size_t(bar - p) : std::strlen(p);
        if (value.size() == n && value.compare(0, n, p, n) == 0) return i;
        if (!bar) return -1;
        p = bar + 1;
    }
}

// Returns "" when value suits key k's row, else why; *n holds a kInt's
// number, *choice a kChoice's index.
std::string check_value(const Key &k, const std::string &value, int *n, int *choice) {
    const std::string key = k.name;
    switch (k.kind) {
    case Kind::kHosts:
        if (std::string why = check_hosts(value); !why.empty()) return why;
        break;
    case Kind::kInt:
        if (!(value.empty() && k.empty_ok) && !parse_int(value, k.min, k.max, n)) return k.message;
        break;
    case Kind::kChoice:
        *choice = choice_index(k.choices, value);
        if (*choice < 0) return k.message;
        break;
    case Kind::kAuth:
        if (!value.empty()) {
            size_t colon = value.find(':');
            if (colon == std::string::npos || colon == 0 || colon + 1 == value.size())
                return k.message;
        }
        break;
    case Kind::kTls:
        if (value.empty()) return {};
        if (!kHaveTls)
            return key + ": this build's ZooKeeper C client (libzookeeper-mt) has no TLS "
                         "(no zookeeper_init_ssl); connect through a local TLS tunnel such "
                         "as stunnel to the servers' secureClientPort instead (docs/tls.md)";
        // libzookeeper splits its TLS argument at commas.
        if (value.find(',') != std::string::npos) return key + " must not contain ','";
        return {};
    case Kind::kSasl:
        if (!value.empty() && !kHaveSasl)
            return key + ": this build's ZooKeeper C client (libzookeeper-mt) has no SASL "
                         "(no zookeeper_init_sasl); build libzkelect with -Dzookeeper=bundled "
                         "or auto, which bundles a client with Cyrus SASL (docs/security.md)";
        if (value.find_first_of(std::string("\0\n", 2)) != std::string::npos)
            return key + " must be one line";
        break;
    case Kind::kPath:
        if (!value.empty() &&
            (value[0] != '/' || value.find_first_of(std::string("\0\n", 2)) != std::string::npos))
            return k.message;
        break;
    case Kind::kZkPath:
        if (!value.empty() && !check_election_path(value).empty()) return k.message;
        break;
    }
    return {};
}

// The keys a row's field cannot place. zk.auth: scheme and credentials.
std::string place_auth(const Key &, const std::string &value, int, Settings *s) {
    size_t colon = value.find(':');
    s->auth_scheme = value.empty() ? std::string() : value.substr(0, colon);
    s->auth_credentials = value.empty() ? std::string() : value.substr(colon + 1);
    return {};
}

// events.queue.max: a queue of one would have room for the OVERFLOW
// marker alone.
std::string place_events_queue_max(const Key &k, const std::string &, int n, Settings *s) {
    if (n == 1) return k.message;
    s->events_queue_max = n;  // 0: keep none
    return {};
}

// What a checked value means for a client: its place in Settings, as its
// row in gen/vocabulary.toml says. Returns "" or why the value is refused.
// BEGIN gen/vocab.py place
std::string place(const Key &k, const std::string &value, int n, int choice, Settings *s) {
    switch (&k - kKeys) {
    case 0: s->hosts = value; break;  // zk.hosts
    case 1: s->session_timeout_ms = n; break;  // zk.session.timeout.ms
    case 2: s->connect_timeout_ms = n; break;  // zk.connect.timeout.ms
    case 3: return place_auth(k, value, n, s);  // zk.auth
    case 4: {  // election.acl
        static constexpr decltype(Settings::acl_creator_only) v[] = {false, true};
        s->acl_creator_only = v[choice];
        break;
    }
    case 5: s->priority = n; break;  // election.priority
    case 6: s->priority_holddown_ms = n; break;  // election.priority.holddown.ms
    case 7: s->transfer_drain_ms = n; break;  // transfer.drain.ms
    case 8: s->lease_warn_percent = n; break;  // lease.warn.percent
    case 9: {  // leadership
        static constexpr decltype(Settings::leadership) v[] = {Leadership::kLease, Leadership::kStrict};
        s->leadership = v[choice];
        break;
    }
    case 10: s->lease_margin_ms = n; break;  // lease.margin.ms
    case 11: s->session_nodes_max_bytes = n; break;  // zk.session.nodes.max.bytes
    case 12: return place_events_queue_max(k, value, n, s);  // events.queue.max
    case 13: {  // zk.log.level
        static constexpr decltype(Settings::log_level) v[] = {-1, 0, 1, 2, 3, 4};
        s->log_level = v[choice];
        break;
    }
    case 14: {  // zk.probe.ticktime
        static constexpr decltype(Settings::probe_ticktime) v[] = {true, false};
        s->probe_ticktime = v[choice];
        break;
    }
    case 15: break;  // zk.tls.ca: placed with the keys it goes with
    case 16: break;  // zk.tls.cert: placed with the keys it goes with
    case 17: break;  // zk.tls.key: placed with the keys it goes with
    case 18: break;  // zk.tls.key.password: placed with the keys it goes with
    case 19: {  // zk.tls.hostname.verify
        static constexpr decltype(Settings::tls_hostname_verify) v[] = {true, false};
        s->tls_hostname_verify = v[choice];
        break;
    }
    case 20: {  // zk.hosts.follow
        static constexpr decltype(Settings::follow_hosts) v[] = {true, false};
        s->follow_hosts = v[choice];
        break;
    }
    case 21: {  // crash.guard
        static constexpr decltype(Settings::guard) v[] = {GuardMode::kAuto, GuardMode::kOn, GuardMode::kOff};
        s->guard = v[choice];
        break;
    }
    case 22: s->guard_delay_ms = n; break;  // crash.guard.delay.ms
    case 23: s->sasl.mechanism = value; break;  // zk.sasl.mechanism
    case 24: s->sasl.user = value; break;  // zk.sasl.user
    case 25: s->sasl.password_file = value; break;  // zk.sasl.password.file
    case 26: s->sasl.service = value; break;  // zk.sasl.service
    case 27: s->sasl.host = value; break;  // zk.sasl.host
    case 28: s->guard_socket = value; break;  // crash.guard.socket
    case 29: s->balance_group = value; break;  // balance.group
    case 30: s->balance_moves_max = n; break;  // balance.moves.max
    }
    (void)choice;
    return {};
}
// END gen/vocab.py place

// Returns "" when value suits key k, else why; fills s when given. The
// checks come from k's row; what a value means for a client is place's.
std::string apply(const Key &k, const std::string &value, Settings *s) {
    Settings scratch;
    int n = -1, choice = -1;
    if (std::string why = check_value(k, value, &n, &choice); !why.empty()) return why;
    return place(k, value, n, choice, s ? s : &scratch);
}

// What ZooKeeper's Java client asks for: DIGEST-MD5 against the fixed
// server name its servers use, Kerberos against the host it connects to
// (here one name for all: the C client takes one).
std::string default_sasl_host(const std::string &mechanism, const std::string &hosts) {
    if (mechanism == "DIGEST-MD5") return "zk-sasl-md5";
    std::string first = hosts.substr(0, hosts.find_first_of(",/"));
    size_t colon = first.rfind(':');
    std::string host = colon == std::string::npos ? first : first.substr(0, colon);
    if (host.size() > 1 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);
    return host;
}

}  // namespace

bool Conf::unsupported(const std::string &key, const std::string &value) {
    return !value.empty() &&
           ((!kHaveTls && is_tls_key(key)) || (!kHaveSasl && is_sasl_key(key)));
}

std::string Conf::set(const std::string &key, const std::string &value) {
    const Key *k = find_key(key);
    if (!k) return "unknown configuration key \"" + key + "\"";
    if (std::string why = apply(*k, value, nullptr); !why.empty()) return why;
    values_[key] = value;
    return {};
}

bool Conf::get(const std::string &key, std::string *value) const {
    const Key *k = find_key(key);
    if (!k) return false;
    auto it = values_.find(key);
    *value = it != values_.end() ? it->second : k->fallback;
    return true;
}

namespace {

// The keys that must agree with each other, apart from TLS and SASL.
std::string check_together(const Settings &s) {
    if (s.hosts.empty())
        return "zk.hosts is not set (the ZooKeeper connect string, \"host:port,...\")";
    if (s.acl_creator_only && s.auth_scheme.empty() && s.sasl.mechanism.empty())
        return "election.acl \"creator\" needs zk.auth or zk.sasl.mechanism (an identity)";
    if (s.lease_margin_ms >= 0 && 2 * int64_t(s.lease_margin_ms) >= s.session_timeout_ms)
        return "lease.margin.ms (" + std::to_string(s.lease_margin_ms) +
               ") must be below half of zk.session.timeout.ms (" +
               std::to_string(s.session_timeout_ms) + "): no lease would be left";
    return {};
}

// zk.tls.*: checked together, then s->tls as libzookeeper takes it
// (untouched when no TLS key is set).
std::string place_tls(const std::string &ca, const std::string &cert, const std::string &key,
                      const std::string &password, Settings *s) {
    if (ca.empty() && cert.empty() && key.empty()) return {};
    if (ca.empty()) return "TLS needs zk.tls.ca (the CA that signed the servers' certificates)";
    if (cert.empty() != key.empty())
        return "zk.tls.cert and zk.tls.key go together (a client certificate and its key); "
               "leave both empty when the servers do not ask for one (ssl.clientAuth=none)";
    if (cert.empty() && !password.empty())
        return "zk.tls.key.password without zk.tls.key: there is no key to decrypt";
    // Upstream's client loads a client certificate unconditionally; only
    // the bundled copy is patched to go without one (zkclient/patches/).
    if (cert.empty() && !kHaveTlsCaOnly)
        return "zk.tls.ca without zk.tls.cert and zk.tls.key: this build's ZooKeeper C "
               "client always presents a client certificate; set both, or build with "
               "-Dzookeeper=bundled";
    // "ca" alone: both of the client's parsers leave cert and key NULL.
    s->tls = cert.empty() ? ca
                          : ca + "," + cert + "," + key + (password.empty() ? "" : "," + password);
    return {};
}

// zk.sasl.*: checked together (and with TLS), and the server name
// defaulted from the mechanism.
std::string place_sasl(Settings *s) {
    if (s->sasl.mechanism.empty()) {
        if (!s->sasl.user.empty() || !s->sasl.password_file.empty())
            return "zk.sasl.user and zk.sasl.password.file need zk.sasl.mechanism "
                   "(e.g. DIGEST-MD5)";
        return {};
    }
    if (s->sasl.service.empty())
        return "zk.sasl.service must not be empty (the servers' principal, by default "
               "\"zookeeper\")";
    if (!s->tls.empty() && !kHaveTlsSasl)
        return "zk.sasl.* with zk.tls.*: this build's ZooKeeper C client cannot do both "
               "on one connection; build with -Dzookeeper=bundled";
    if (s->sasl.host.empty()) s->sasl.host = default_sasl_host(s->sasl.mechanism, s->hosts);
    return {};
}

}  // namespace

bool Conf::settings(Settings *out, std::string *why) const {
    // Every row, set or not: a default, too, reaches Settings from its row
    // (Settings' own initializers are held to the rows by conf_test.cpp).
    // An unset key without a default keeps the member's empty value.
    Settings s;
    for (const auto &k : kKeys) {
        auto it = values_.find(k.name);
        if (it == values_.end() && !*k.fallback) continue;
        std::string e = apply(k, it != values_.end() ? it->second : k.fallback, &s);
        if (!e.empty()) {
            *why = e;
            return false;
        }
    }
    std::string ca, cert, key, password;
    get("zk.tls.ca", &ca);
    get("zk.tls.cert", &cert);
    get("zk.tls.key", &key);
    get("zk.tls.key.password", &password);
    std::string e = check_together(s);
    if (e.empty()) e = place_tls(ca, cert, key, password, &s);
    if (e.empty()) e = place_sasl(&s);
    if (!e.empty()) {
        *why = e;
        return false;
    }
    *out = s;
    return true;
}

}  // namespace zkelect
