#include "nodes_ahead.h"

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace zkelect {

namespace {
constexpr size_t kPacked = 20;        // 16 uuid bytes, then the sequence
constexpr size_t kUuidText = 36;      // 8-4-4-4-12 lowercase hex
constexpr size_t kSeqText = 10;       // "%010d"
constexpr const char kHex[] = "0123456789abcdef";

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}
}  // namespace

// The packed form is kept only when unpacking gives back the very same
// text: anything else (upper case, another length, a sequence printed
// otherwise) stays text.
bool pack_node_name(const std::string &name, char out[20]) {
    const size_t want = 3 + kUuidText + 1 + kLatchMarker.size();  // "_c_<uuid>-latch-"
    if (name.size() < want + 1 || name.size() > want + kSeqText + 1 ||
        name.compare(0, 3, "_c_") != 0)
        return false;
    unsigned char b[16];
    size_t k = 0;
    for (size_t i = 0; i < kUuidText; ++i) {
        char c = name[3 + i];
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (c != '-') return false;
            continue;
        }
        char d = name[3 + i + 1];
        int hi = hex_value(c), lo = hex_value(d);
        if (hi < 0 || lo < 0) return false;
        b[k++] = static_cast<unsigned char>(hi << 4 | lo);
        ++i;
    }
    if (k != 16 || name.compare(3 + kUuidText, kLatchMarker.size() + 1, "-latch-") != 0)
        return false;
    auto seq = parse_sequence(name);
    if (!seq) return false;
    std::memcpy(out, b, 16);
    uint32_t u = static_cast<uint32_t>(*seq);
    for (int i = 0; i < 4; ++i) out[16 + i] = static_cast<char>(u >> (8 * i) & 0xff);
    return unpack_node_name(out) == name;
}

std::string unpack_node_name(const char in[20]) {
    std::string s = "_c_";
    s.reserve(3 + kUuidText + kLatchMarker.size() + 1 + 11);
    for (int i = 0; i < 16; ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
        auto v = static_cast<unsigned char>(in[i]);
        s += kHex[v >> 4];
        s += kHex[v & 0xf];
    }
    s += "-latch-";
    uint32_t u = 0;
    for (int i = 0; i < 4; ++i) u |= uint32_t(static_cast<unsigned char>(in[16 + i])) << (8 * i);
    char seq[16];
    std::snprintf(seq, sizeof seq, "%010d", static_cast<int32_t>(u));
    s += seq;
    return s;
}

void NodesAhead::assign(const std::vector<Candidate> &order, size_t from, size_t count) {
    clear();
    if (count > from) count = from;
    packed_ = true;
    char one[kPacked];
    for (size_t k = 1; k <= count && packed_; ++k)
        packed_ = pack_node_name(order[from - k].name, one);
    if (packed_) {
        bytes_.reserve(count * kPacked);
        for (size_t k = 1; k <= count; ++k) {
            pack_node_name(order[from - k].name, one);
            bytes_.append(one, kPacked);
        }
        return;
    }
    size_t n = 0;
    for (size_t k = 1; k <= count; ++k) n += order[from - k].name.size() + 1;
    bytes_.reserve(n);
    for (size_t k = 1; k <= count; ++k) {
        if (k > 1) bytes_ += '/';
        bytes_ += order[from - k].name;
    }
}

std::string NodesAhead::pop_front() {
    if (packed_) {
        std::string name = unpack_node_name(bytes_.data());
        bytes_.erase(0, kPacked);
        return name;
    }
    size_t cut = bytes_.find('/');
    std::string name = bytes_.substr(0, cut);
    bytes_.erase(0, cut == std::string::npos ? bytes_.size() : cut + 1);
    return name;
}

}  // namespace zkelect
