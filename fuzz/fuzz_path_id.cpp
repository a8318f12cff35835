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
    int control = 0;
    size_t i = 0;
    while (i < s.size()) {
        unsigned char b = static_cast<unsigned char>(s[i]);
        uint32_t cp;
        size_t len;
        if (b <= 0x7f) { cp = b; len = 1; }
        else if (b >= 0xc2 && b <= 0xdf) { cp = b & 0x1f; len = 2; }
        else if (b >= 0xe0 && b <= 0xef) { cp = b & 0x0f; len = 3; }
        else if (b >= 0xf0 && b <= 0xf4) { cp = b & 0x07; len = 4; }
        else return -1;
        if (s.size() - i < len) return -1;
        for (size_t k = 1; k < len; ++k) {
            unsigned char c = static_cast<unsigned char>(s[i + k]);
            if (c < 0x80 || c > 0xbf) return -1;
            cp = (cp << 6) | (c & 0x3f);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return -1;
        if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) control = 1;
        i += len;
    }
    return control;
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
