#include "names.h"

#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <random>

namespace zkelect {

namespace {

int hex_digit(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

// The code points ZooKeeper refuses in a path (PathUtils.validatePath).
bool forbidden_code_point(uint32_t cp) {
    return cp <= 0x1f || (cp >= 0x7f && cp <= 0x9f) ||
           (cp >= 0xd800 && cp <= 0xf8ff) || (cp >= 0xfff0 && cp <= 0xffff);
}

// Decodes UTF-8; returns false on a malformed sequence.
bool decode_utf8(std::string_view s, std::vector<uint32_t> *out) {
    for (size_t i = 0; i < s.size();) {
        auto b = static_cast<unsigned char>(s[i]);
        uint32_t cp;
        size_t n;
        if (b < 0x80) { cp = b; n = 1; }
        else if ((b & 0xe0) == 0xc0) { cp = b & 0x1f; n = 2; }
        else if ((b & 0xf0) == 0xe0) { cp = b & 0x0f; n = 3; }
        else if ((b & 0xf8) == 0xf0) { cp = b & 0x07; n = 4; }
        else return false;
        if (i + n > s.size()) return false;
        for (size_t k = 1; k < n; ++k) {
            auto c = static_cast<unsigned char>(s[i + k]);
            if ((c & 0xc0) != 0x80) return false;
            cp = (cp << 6) | (c & 0x3f);
        }
        static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
        if (out) out->push_back(cp);
        i += n;
    }
    return true;
}

}  // namespace

std::string check_election_path(std::string_view path) {
    if (path.empty()) return "path is empty";
    if (path.front() != '/') return "path must be absolute (start with '/')";
    if (path.size() == 1) return "path must not be the root '/'";
    if (path.back() == '/') return "path must not end with '/'";
    if (path.size() > 4096) return "path is longer than 4096 bytes";
    std::vector<uint32_t> cps;
    if (!decode_utf8(path, &cps)) return "path is not valid UTF-8";
    for (uint32_t cp : cps)
        if (forbidden_code_point(cp)) return "path contains a character ZooKeeper refuses";
    size_t start = 1;
    while (start <= path.size()) {
        size_t end = path.find('/', start);
        if (end == std::string_view::npos) end = path.size();
        std::string_view part = path.substr(start, end - start);
        if (part.empty()) return "path contains an empty component ('//')";
        if (part == "." || part == "..") return "path contains a '.' or '..' component";
        start = end + 1;
    }
    if (path == "/zookeeper" || path.substr(0, 11) == "/zookeeper/")
        return "path lies under /zookeeper, which ZooKeeper reserves";
    return {};
}

std::string check_hosts(std::string_view hosts) {
    if (hosts.empty()) return "zk.hosts is empty";
    std::string_view servers = hosts;
    size_t slash = hosts.find('/');
    if (slash != std::string_view::npos) {
        servers = hosts.substr(0, slash);
        std::string_view chroot = hosts.substr(slash);
        if (chroot != "/") {
            std::string why = check_election_path(chroot);
            if (!why.empty()) return "zk.hosts chroot: " + why;
        }
    }
    if (servers.empty()) return "zk.hosts names no server";
    size_t start = 0;
    while (start <= servers.size()) {
        size_t end = servers.find(',', start);
        if (end == std::string_view::npos) end = servers.size();
        std::string_view server = servers.substr(start, end - start);
        if (server.empty()) return "zk.hosts has an empty server entry";
        size_t colon = server.rfind(':');
        std::string_view host = server, port;
        if (colon != std::string_view::npos) {
            host = server.substr(0, colon);
            port = server.substr(colon + 1);
        }
        if (!host.empty() && host.front() == '[') {  // [::1]:2181
            if (host.back() != ']') return "zk.hosts: unbalanced '[' in \"" + std::string(server) + "\"";
        }
        if (host.empty()) return "zk.hosts: missing host in \"" + std::string(server) + "\"";
        for (char c : host)
            if (c == ' ' || c == '\t' || c == '\n' || static_cast<unsigned char>(c) < 0x20)
                return "zk.hosts: bad character in host \"" + std::string(server) + "\"";
        if (colon == std::string_view::npos)
            return "zk.hosts: missing port in \"" + std::string(server) + "\" (host:port)";
        if (port.empty() || port.size() > 5 ||
            !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
            return "zk.hosts: bad port in \"" + std::string(server) + "\"";
        int p = std::stoi(std::string(port));
        if (p < 1 || p > 65535) return "zk.hosts: port out of range in \"" + std::string(server) + "\"";
        start = end + 1;
    }
    return {};
}

std::string check_participant_id(std::string_view id) {
    // Ids end up in other programs' one-line-per-record outputs and logs; an
    // empty or control-character id could only confuse or forge those.
    if (id.empty()) return "participant id is empty";
    if (id.size() > 1024) return "participant id is longer than ZKELECT_ID_MAX (1024) bytes";
    std::vector<uint32_t> cps;
    if (!decode_utf8(id, &cps)) return "participant id is not valid UTF-8";
    for (uint32_t cp : cps)
        if (cp <= 0x1f || (cp >= 0x7f && cp <= 0x9f))
            return "participant id contains a control character (U+0000-U+001F, U+007F-U+009F)";
    return {};
}

#ifdef ZKELECT_SIM
// The simulation's seeded generator (explore/sim): node names, and so the
// order of a listing, follow from the seed.
void sim_random_bytes(unsigned char *b, size_t n);
#endif

std::string make_uuid(int priority) {
    // The kernel's generator per call: no shared generator state between
    // handles. One getrandom for all 16 bytes: a std::random_device made per
    // call (and read byte by byte) was 6% of a join of 10,000 elections.
    unsigned char b[16];
    size_t got = 0;
#ifdef ZKELECT_SIM
    sim_random_bytes(b, sizeof b);
    got = sizeof b;
#endif
    for (int i = 0; i < 8 && got < sizeof b; ++i) {
        ssize_t n = ::getrandom(b + got, sizeof b - got, 0);
        if (n > 0) got += static_cast<size_t>(n);
        else if (errno != EINTR) break;
    }
    if (got < sizeof b) {
        std::random_device rd;
        std::uniform_int_distribution<unsigned> byte(0, 255);
        for (auto &x : b) x = static_cast<unsigned char>(byte(rd));
    }
    b[0] = static_cast<unsigned char>(priority < 0 ? 0 : priority > 255 ? 255 : priority);
    b[6] = (b[6] & 0x0f) | 0x80;
    b[8] = (b[8] & 0x3f) | 0x80;
    return uuid_text(b);
}

std::string uuid_text(const unsigned char b[16]) {
    char out[37];
    std::snprintf(out, sizeof out,
                  "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                  b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                  b[14], b[15]);
    return out;
}

bool uuid_bytes(std::string_view text, unsigned char out[16]) {
    if (text.size() != 36) return false;
    size_t k = 0;
    for (size_t i = 0; i < text.size() && k < 16; ++i) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (text[i] != '-') return false;
            continue;
        }
        int hi = hex_digit(text[i]), lo = hex_digit(text[i + 1]);
        if (hi < 0 || lo < 0) return false;
        out[k++] = static_cast<unsigned char>(hi << 4 | lo);
        ++i;
    }
    return k == 16;
}

std::string node_prefix(const std::string &uuid) { return "_c_" + uuid + "-latch-"; }

std::optional<int32_t> parse_sequence(std::string_view name) {
    size_t at = name.rfind(kLatchMarker);
    if (at == std::string_view::npos) return std::nullopt;
    std::string_view digits = name.substr(at + kLatchMarker.size());
    bool neg = !digits.empty() && digits.front() == '-';
    if (neg) digits.remove_prefix(1);
    if (digits.empty() || digits.size() > 10) return std::nullopt;
    int64_t v = 0;
    for (char c : digits) {
        if (c < '0' || c > '9') return std::nullopt;
        v = v * 10 + (c - '0');
    }
    if (neg) v = -v;
    if (v < INT32_MIN || v > INT32_MAX) return std::nullopt;
    return static_cast<int32_t>(v);
}

bool has_uuid(std::string_view name, std::string_view uuid) {
    return name.size() > 3 + uuid.size() && name.substr(0, 3) == "_c_" &&
           name.substr(3, uuid.size()) == uuid;
}

bool steps_back(std::string_view name) {
    // "_c_" + 36 + "-latch-": the uuid's version digit is its 15th character.
    constexpr size_t kUuid = 36;
    return name.size() > 3 + kUuid + kLatchMarker.size() && name.substr(0, 3) == "_c_" &&
           name[3 + 14] == '8' && name[3 + kUuid] == '-' &&
           name.substr(3 + kUuid + 1, kLatchMarker.size()) == kLatchMarker &&
           parse_sequence(name.substr(3 + kUuid + 1)).has_value();
}

namespace {
constexpr std::string_view kRequestTag = "zkelect-transfer-request";
constexpr std::string_view kResultTag = "zkelect-transfer-result";
constexpr size_t kTransferLineMax = 1200;  // a 1024-byte id, the words, a node name

std::optional<TransferLine> parse_transfer_line(std::string_view data, std::string_view tag,
                                                int lo, int hi) {
    if (data.size() > kTransferLineMax) return std::nullopt;
    std::string_view w[4];
    size_t i = 0;
    for (auto &word : w) {
        size_t j = data.find(' ', i);
        if (j == std::string_view::npos) return std::nullopt;
        word = data.substr(i, j - i);
        i = j + 1;
    }
    std::string_view id = data.substr(i);
    if (w[0] != tag || w[1] != "1" || !check_participant_id(id).empty()) return std::nullopt;
    if (w[2].find('/') != std::string_view::npos || !parse_sequence(w[2])) return std::nullopt;
    // A plain decimal, no sign but a leading '-', at most 7 characters.
    std::string_view n = w[3];
    bool neg = !n.empty() && n[0] == '-';
    if (neg) n.remove_prefix(1);
    if (n.empty() || n.size() > 6 || (n.size() > 1 && n[0] == '0')) return std::nullopt;
    int v = 0;
    for (char c : n) {
        if (c < '0' || c > '9') return std::nullopt;
        v = v * 10 + (c - '0');
    }
    if (neg) v = -v;
    if (v < lo || v > hi) return std::nullopt;
    return TransferLine{std::string(w[2]), v, std::string(id)};
}
}  // namespace

std::string transfer_request_text(const std::string &leader, int timeout_ms, const std::string &id) {
    return std::string(kRequestTag) + " 1 " + leader + " " + std::to_string(timeout_ms) + " " + id;
}

std::string transfer_result_text(const std::string &leader, int code, const std::string &id) {
    return std::string(kResultTag) + " 1 " + leader + " " + std::to_string(code) + " " + id;
}

std::optional<TransferLine> parse_transfer_request(std::string_view data) {
    return parse_transfer_line(data, kRequestTag, 1, kRequestTimeoutMaxMs);
}

std::optional<TransferLine> parse_transfer_result(std::string_view data) {
    return parse_transfer_line(data, kResultTag, -99, 0);
}

int node_priority(std::string_view name) {
    if (!steps_back(name)) return 0;
    int hi = hex_digit(name[3]), lo = hex_digit(name[4]);
    return hi < 0 || lo < 0 ? 0 : hi * 16 + lo;
}

std::vector<Candidate> order_candidates(const std::vector<std::string> &children) {
    std::vector<Candidate> out;
    out.reserve(children.size());
    for (const auto &c : children)
        if (auto seq = parse_sequence(c)) out.push_back({c, *seq});
    if (out.empty()) return out;
    // Distances from any one member fit in int32 when the live span is below
    // 2^31, and then order by distance is order of creation.
    const uint32_t base = static_cast<uint32_t>(out.front().seq);
    auto offset = [base](int32_t s) {
        return static_cast<int32_t>(static_cast<uint32_t>(s) - base);
    };
    std::sort(out.begin(), out.end(), [&](const Candidate &a, const Candidate &b) {
        int32_t oa = offset(a.seq), ob = offset(b.seq);
        return oa != ob ? oa < ob : a.name < b.name;
    });
    return out;
}

std::vector<std::string> path_prefixes(const std::string &path) {
    std::vector<std::string> out;
    for (size_t i = 1; i <= path.size(); ++i)
        if (i == path.size() || path[i] == '/') out.push_back(path.substr(0, i));
    return out;
}

}  // namespace zkelect
