#include "ensemble_config.h"

#include <cstdlib>

namespace zkelect {

namespace {

constexpr size_t kMaxBytes = 64 * 1024;
constexpr size_t kMaxServers = 255;  // ZooKeeper's own ids are 1..255 in practice
constexpr size_t kMaxHost = 253;     // a DNS name's longest

bool port_ok(const std::string &p) {
    if (p.empty() || p.size() > 5) return false;
    for (char c : p)
        if (c < '0' || c > '9') return false;
    long v = std::strtol(p.c_str(), nullptr, 10);
    return v >= 1 && v <= 65535;
}

bool host_ok(const std::string &h) {
    if (h.empty() || h.size() > kMaxHost + 2) return false;
    if (h.front() == '[') {
        if (h.back() != ']' || h.size() < 3) return false;
        for (size_t i = 1; i + 1 < h.size(); ++i) {
            char c = h[i];
            bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') ||
                      c == ':' || c == '.' || c == '%';
            if (!ok) return false;
        }
        return true;
    }
    for (char c : h) {
        bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  c == '.' || c == '-' || c == '_';
        if (!ok) return false;
    }
    return true;
}

// "addr:port" with addr a name, an IPv4 address or "[v6]"; false if not.
bool split_host_port(const std::string &s, std::string *host, std::string *port) {
    size_t colon = s.rfind(':');
    if (colon == std::string::npos) return false;
    *host = s.substr(0, colon);
    *port = s.substr(colon + 1);
    return host_ok(*host) && port_ok(*port);
}

bool wildcard(const std::string &host) {
    return host == "0.0.0.0" || host == "[::]" || host == "[0:0:0:0:0:0:0:0]";
}

// One "server.N=..." value: "addr:qport:eport[:role];[caddr:]cport". The
// server address comes first; a client address that is a wildcard (the
// server listens on all interfaces) or absent is reached at it.
bool client_host(const std::string &value, std::string *out) {
    size_t semi = value.find(';');
    if (semi == std::string::npos) return false;
    std::string server = value.substr(0, semi), client = value.substr(semi + 1);
    while (!client.empty() && (client.back() == ' ' || client.back() == '\r')) client.pop_back();
    std::string saddr;
    if (!server.empty() && server.front() == '[') {
        size_t close = server.find(']');
        if (close == std::string::npos) return false;
        saddr = server.substr(0, close + 1);
    } else {
        saddr = server.substr(0, server.find(':'));
    }
    if (!host_ok(saddr)) return false;
    std::string host, port;
    if (client.find(':') == std::string::npos) {
        if (!port_ok(client)) return false;
        host = saddr;
        port = client;
    } else {
        if (!split_host_port(client, &host, &port)) return false;
        if (wildcard(host)) host = saddr;
    }
    *out = host + ":" + port;
    return true;
}

}  // namespace

std::vector<std::string> ensemble_client_hosts(const std::string &data) {
    if (data.size() > kMaxBytes) return {};
    std::vector<std::string> hosts;
    size_t at = 0;
    while (at < data.size()) {
        size_t end = data.find('\n', at);
        if (end == std::string::npos) end = data.size();
        std::string line = data.substr(at, end - at);
        at = end + 1;
        if (line.empty() || line == "\r") continue;
        if (line.compare(0, 7, "server.") == 0) {
            size_t eq = line.find('=');
            if (eq == std::string::npos) return {};
            std::string host;
            if (!client_host(line.substr(eq + 1), &host)) return {};
            if (hosts.size() >= kMaxServers) return {};
            bool seen = false;
            for (const auto &h : hosts) seen = seen || h == host;
            if (!seen) hosts.push_back(host);
        }  // version=, group.N=, weight.N=: nothing a client connects to

    }
    return hosts;
}

std::string chroot_of(const std::string &connect_string) {
    size_t slash = connect_string.find('/');
    return slash == std::string::npos ? std::string() : connect_string.substr(slash);
}

std::string with_chroot(const std::vector<std::string> &hosts, const std::string &configured) {
    std::string s;
    for (const auto &h : hosts) {
        if (!s.empty()) s += ',';
        s += h;
    }
    return s + chroot_of(configured);
}

}  // namespace zkelect
