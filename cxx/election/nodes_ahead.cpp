#include "nodes_ahead.h"

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace zkelect {

namespace {
constexpr size_t kPacked = 20;    // 16 uuid bytes, then the sequence
constexpr size_t kPrefix = 46;    // "_c_" + 36-character uuid + "-latch-"
}  // namespace

// Kept packed only when unpacking gives back the very same text: anything
// else (another prefix, upper case, a sequence printed otherwise) stays text.
bool pack_node_name(const std::string &name, char out[20]) {
    if (name.size() <= kPrefix) return false;
    unsigned char uuid[16];
    auto seq = parse_sequence(name);
    if (!uuid_bytes(std::string_view(name).substr(3, 36), uuid) || !seq) return false;
    std::memcpy(out, uuid, 16);
    uint32_t u = static_cast<uint32_t>(*seq);
    for (int i = 0; i < 4; ++i) out[16 + i] = static_cast<char>(u >> (8 * i) & 0xff);
    return unpack_node_name(out) == name;
}

std::string unpack_node_name(const char in[20]) {
    uint32_t u = 0;
    for (int i = 0; i < 4; ++i) u |= uint32_t(static_cast<unsigned char>(in[16 + i])) << (8 * i);
    char seq[16];
    std::snprintf(seq, sizeof seq, "%010d", static_cast<int32_t>(u));  // ZooKeeper's format
    return node_prefix(uuid_text(reinterpret_cast<const unsigned char *>(in))) + seq;
}

// Packed as it goes; the first name that does not pack turns the list to text.
void NodesAhead::assign(const std::vector<Candidate> &order, size_t from, size_t count) {
    clear();
    if (count > from) count = from;
    packed_ = true;
    bytes_.reserve(count * kPacked);
    char one[kPacked];
    for (size_t k = 1; k <= count; ++k) {
        if (!pack_node_name(order[from - k].name, one)) {
            packed_ = false;
            break;
        }
        bytes_.append(one, kPacked);
    }
    if (packed_) return;
    size_t n = 0;
    for (size_t k = 1; k <= count; ++k) n += order[from - k].name.size() + 1;
    std::string().swap(bytes_);
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
