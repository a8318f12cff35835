// Election paths and participant ids, as users pass them: what the
// validators accept must be what ZooKeeper accepts for a path, and for an id
// non-empty UTF-8 of at most ZKELECT_ID_MAX bytes with no control character
// (checked here against a decoder of our own, written separately).
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "names.h"

using namespace zkelect;

namespace {

// -1 when s is not well-formed UTF-8 (RFC 3629), else the smallest code
// point class seen: 1 when any control character (C0, DEL, C1), else 0.
int classify(const std::string &s) {
    std::vector<uint32_t> cps;
    if (!decode_utf8(s, &cps)) return -1;
    for (uint32_t cp : cps)
        if (is_control(cp)) return 1;
    return 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    std::string s(reinterpret_cast<const char *>(data), size);

    std::string id_why = check_participant_id(s);
    int cls = classify(s);
    bool id_ok = !s.empty() && s.size() <= 1024 && cls == 0;
    FUZZ_CHECK(id_ok == id_why.empty());

    if (check_election_path(s).empty()) {
        FUZZ_CHECK(s.size() > 1 && s[0] == '/' && s.back() != '/');
        FUZZ_CHECK(cls == 0);
        FUZZ_CHECK(s.find("//") == std::string::npos);
        FUZZ_CHECK(s.find("/./") == std::string::npos && s.find("/../") == std::string::npos);
        FUZZ_CHECK(s.compare(0, 10, "/zookeeper") != 0 || (s.size() > 10 && s[10] != '/'));
        // Every ancestor the library creates is a valid path too.
        auto prefixes = path_prefixes(s);
        FUZZ_CHECK(!prefixes.empty() && prefixes.back() == s);
        for (const auto &p : prefixes)
            FUZZ_CHECK(p == "/zookeeper" || check_election_path(p).empty());
    }
    return 0;
}
