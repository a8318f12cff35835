// What every harness uses to state an invariant: a violated one is a crash,
// so libFuzzer keeps the input and the replay fails.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define FUZZ_CHECK(cond)                                                             \
    do {                                                                             \
        if (!(cond)) {                                                               \
            std::fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, \
                         #cond);                                                     \
            std::abort();                                                            \
        }                                                                            \
    } while (0)

// The harnesses' own UTF-8 decoder (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF), written apart from the code under
// test so the two can be held against each other. False when s is not
// well-formed; else its code points are in *out.
inline bool decode_utf8(const std::string &s, std::vector<uint32_t> *out) {
    out->clear();
    size_t i = 0;
    while (i < s.size()) {
        unsigned char b = static_cast<unsigned char>(s[i]);
        uint32_t cp;
        size_t len;
        if (b <= 0x7f) { cp = b; len = 1; }
        else if (b >= 0xc2 && b <= 0xdf) { cp = b & 0x1f; len = 2; }
        else if (b >= 0xe0 && b <= 0xef) { cp = b & 0x0f; len = 3; }
        else if (b >= 0xf0 && b <= 0xf4) { cp = b & 0x07; len = 4; }
        else return false;
        if (s.size() - i < len) return false;
        for (size_t k = 1; k < len; ++k) {
            unsigned char c = static_cast<unsigned char>(s[i + k]);
            if ((c & 0xc0) != 0x80) return false;
            cp = (cp << 6) | (c & 0x3f);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        out->push_back(cp);
        i += len;
    }
    return true;
}

// C0, DEL and C1 controls.
inline bool is_control(uint32_t cp) { return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f); }
