// The tool's escaping of data read from ZooKeeper (tools/text.c), which
// keeps one record on one line and JSON valid whatever the bytes: ids and
// node names through zt_escape (one shell word), messages through
// zt_escape_text, both into buffers of any size, and zt_json_string. The
// first byte picks the buffer size; the rest, up to a NUL, is the string.
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "fuzz_check.h"

extern "C" {
#include "common.h"
}

namespace {

// Decodes s as UTF-8 (it must be valid) and returns false on a code point
// a line-oriented reader could take for a break or a field end: C0, DEL,
// C1, U+2028/2029; in a word also space and '"'.
bool one_line(const std::string &s, bool word) {
    std::vector<uint32_t> cps;
    if (!decode_utf8(s, &cps)) return false;
    for (uint32_t cp : cps) {
        if (is_control(cp) || cp == 0x2028 || cp == 0x2029) return false;
        if (word && (cp == ' ' || cp == '"')) return false;
    }
    return true;
}

// A JSON string literal: quotes at both ends, inside only escapes JSON
// knows and characters that need none (checked by one_line).
bool json_ok(const std::string &j) {
    if (j.size() < 2 || j.front() != '"' || j.back() != '"') return false;
    std::string inner = j.substr(1, j.size() - 2), plain;
    for (size_t i = 0; i < inner.size(); ++i) {
        char c = inner[i];
        if (c == '"') return false;
        if (c != '\\') {
            plain += c;
            continue;
        }
        if (++i >= inner.size()) return false;
        char e = inner[i];
        if (e == 'u') {
            if (inner.size() - i < 5) return false;
            for (int k = 1; k <= 4; ++k)
                if (!std::isxdigit(static_cast<unsigned char>(inner[i + k]))) return false;
            i += 4;
        } else if (!std::strchr("\"\\/bfnrt", e)) {
            return false;
        }
    }
    return one_line(plain, false);
}

// The inverse of the escape: \\ and \xNN; a word's "" is the empty string.
std::string unescape(const std::string &e, bool word) {
    if (word && e == "\"\"") return "";
    std::string out;
    for (size_t i = 0; i < e.size(); ++i) {
        if (e[i] != '\\') {
            out += e[i];
        } else if (i + 1 < e.size() && e[i + 1] == '\\') {
            out += '\\';
            ++i;
        } else if (i + 3 < e.size() && e[i + 1] == 'x') {
            out += static_cast<char>(std::strtol(e.substr(i + 2, 2).c_str(), nullptr, 16));
            i += 3;
        } else {
            return std::string("\0bad escape", 11);
        }
    }
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    size_t outlen = data[0] == 255 ? 4 * 1024 + 8 : data[0];
    std::string s(reinterpret_cast<const char *>(data) + 1, size - 1);
    s = s.c_str(); // the C functions see up to the first NUL

    for (int word = 0; word < 2; ++word) {
        // Exactly outlen bytes, so ASan sees a write past the end.
        char *out = static_cast<char *>(std::malloc(outlen ? outlen : 1));
        if (outlen) std::memset(out, 'Z', outlen);
        if (word)
            zt_escape(s.c_str(), out, outlen);
        else
            zt_escape_text(s.c_str(), out, outlen);
        if (outlen) {
            size_t n = strnlen(out, outlen);
            FUZZ_CHECK(n < outlen);
            std::string got(out, n);
            // A word's only quotes are those of the empty word: "".
            FUZZ_CHECK(one_line(word && got == "\"\"" ? "" : got, word));
            FUZZ_CHECK(!word || got != "\"\"" || s.empty());
            if (word && outlen >= 8) FUZZ_CHECK(!got.empty());
            // Room for every byte escaped: nothing is cut, and the escape
            // reads back as the very bytes.
            if (outlen >= 4 * s.size() + 8) FUZZ_CHECK(unescape(got, word) == s);
        }
        std::free(out);
    }

    char *buf = nullptr;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    FUZZ_CHECK(f);
    zt_json_string(f, s.c_str());
    std::fclose(f);
    FUZZ_CHECK(json_ok(std::string(buf, len)));
    std::free(buf);
    return 0;
}
