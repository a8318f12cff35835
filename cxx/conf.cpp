#include "conf.h"

#include <cerrno>
#include <cstdlib>

#include "names.h"

namespace zkelect {

namespace {

struct Key {
    const char *name;
    const char *fallback;  // value when unset
};

constexpr Key kKeys[] = {
    {"zk.hosts", ""},
    {"zk.session.timeout.ms", "10000"},
    {"zk.connect.timeout.ms", "15000"},
    {"zk.auth", ""},
    {"election.acl", "open"},
    {"leadership", "lease"},
    {"lease.margin.ms", ""},
    {"zk.log.level", "keep"},
    {"zk.tls.ca", ""},
    {"zk.tls.cert", ""},
    {"zk.tls.key", ""},
    {"zk.tls.key.password", ""},
};

#ifdef ZKELECT_HAVE_ZK_TLS
constexpr bool kHaveTls = true;
#else
constexpr bool kHaveTls = false;
#endif

}  // namespace

const char *Conf::key_name(size_t i) {
    return i < sizeof kKeys / sizeof kKeys[0] ? kKeys[i].name : nullptr;
}

namespace {

bool is_tls_key(const std::string &key) { return key.compare(0, 7, "zk.tls.") == 0; }

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

// Returns "" when value suits key, else why; fills s when given.
std::string apply(const std::string &key, const std::string &value, Settings *s) {
    Settings scratch;
    if (!s) s = &scratch;
    if (key == "zk.hosts") {
        if (std::string why = check_hosts(value); !why.empty()) return why;
        s->hosts = value;
    } else if (key == "zk.session.timeout.ms") {
        if (!parse_int(value, 1000, 3600000, &s->session_timeout_ms))
            return "zk.session.timeout.ms must be an integer from 1000 to 3600000";
    } else if (key == "zk.connect.timeout.ms") {
        if (!parse_int(value, 1, 3600000, &s->connect_timeout_ms))
            return "zk.connect.timeout.ms must be an integer from 1 to 3600000";
    } else if (key == "zk.auth") {
        if (value.empty()) {
            s->auth_scheme.clear();
            s->auth_credentials.clear();
        } else {
            size_t colon = value.find(':');
            if (colon == std::string::npos || colon == 0 || colon + 1 == value.size())
                return "zk.auth must be \"scheme:credentials\", e.g. \"digest:user:password\"";
            s->auth_scheme = value.substr(0, colon);
            s->auth_credentials = value.substr(colon + 1);
        }
    } else if (key == "election.acl") {
        if (value == "open") s->acl_creator_only = false;
        else if (value == "creator") s->acl_creator_only = true;
        else return "election.acl must be \"open\" or \"creator\"";
    } else if (key == "leadership") {
        if (value == "lease") s->leadership = Leadership::kLease;
        else if (value == "strict") s->leadership = Leadership::kStrict;
        else return "leadership must be \"lease\" or \"strict\"";
    } else if (key == "lease.margin.ms") {
        if (value.empty()) s->lease_margin_ms = -1;
        else if (!parse_int(value, 1, 60000, &s->lease_margin_ms))
            return "lease.margin.ms must be an integer from 1 to 60000 (a lease without a "
                   "margin is not safe against clock-rate differences)";
    } else if (key == "zk.log.level") {
        static constexpr const char *kLevels[] = {"none", "error", "warn", "info", "debug"};
        int level = -2;
        for (int i = 0; i < 5; ++i)
            if (value == kLevels[i]) level = i;
        if (value == "keep") level = -1;
        if (level == -2) return "zk.log.level must be keep, none, error, warn, info or debug";
        s->log_level = level;
    } else if (is_tls_key(key)) {
        if (value.empty()) return {};
        if (!kHaveTls)
            return key + ": this build's ZooKeeper C client (libzookeeper-mt) has no TLS "
                         "(no zookeeper_init_ssl); connect through a local TLS tunnel such "
                         "as stunnel to the servers' secureClientPort instead (docs/tls.md)";
        // libzookeeper splits its TLS argument at commas.
        if (value.find(',') != std::string::npos) return key + " must not contain ','";
    }
    return {};
}

}  // namespace

bool Conf::unsupported(const std::string &key, const std::string &value) {
    return !kHaveTls && is_tls_key(key) && !value.empty();
}

std::string Conf::set(const std::string &key, const std::string &value) {
    if (!find_key(key)) return "unknown configuration key \"" + key + "\"";
    if (std::string why = apply(key, value, nullptr); !why.empty()) return why;
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

bool Conf::settings(Settings *out, std::string *why) const {
    Settings s;
    for (const auto &[key, value] : values_) {
        std::string e = apply(key, value, &s);
        if (!e.empty()) {
            *why = e;
            return false;
        }
    }
    if (s.hosts.empty()) {
        *why = "zk.hosts is not set (the ZooKeeper connect string, \"host:port,...\")";
        return false;
    }
    if (s.acl_creator_only && s.auth_scheme.empty()) {
        *why = "election.acl \"creator\" needs zk.auth";
        return false;
    }
    if (s.lease_margin_ms >= 0 && 2 * int64_t(s.lease_margin_ms) >= s.session_timeout_ms) {
        *why = "lease.margin.ms (" + std::to_string(s.lease_margin_ms) +
               ") must be below half of zk.session.timeout.ms (" +
               std::to_string(s.session_timeout_ms) + "): no lease would be left";
        return false;
    }
    std::string ca, cert, key, password;
    get("zk.tls.ca", &ca);
    get("zk.tls.cert", &cert);
    get("zk.tls.key", &key);
    get("zk.tls.key.password", &password);
    if (!ca.empty() || !cert.empty() || !key.empty()) {
        if (ca.empty() || cert.empty() || key.empty()) {
            *why = "TLS needs all of zk.tls.ca, zk.tls.cert and zk.tls.key";
            return false;
        }
        s.tls = ca + "," + cert + "," + key + (password.empty() ? "" : "," + password);
    }
    *out = s;
    return true;
}

}  // namespace zkelect
