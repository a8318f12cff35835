// The input side of `zkelect candidate`'s line protocol (tools/lines.c):
// stdin cut into lines as read(2) may deliver it, and each line into a
// command. The first byte seeds the sizes of the reads; the rest is what
// the driver wrote. Checked against a model written here from the rules in
// docs/design.md: the lines do not depend on how the reads were cut; a line
// of at most ZT_LINE_MAX bytes arrives whole, a longer one is dropped whole
// (reported once, no part of it a command); a last line without '\n' still
// counts; nothing after `quit` is handed over.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_check.h"

extern "C" {
#include "lines.h"
}

namespace {

const std::string kDropped("\x01<dropped>", 10);

struct Seen {
    std::vector<std::string> lines;
};

bool is_sep(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// What zt_command_parse must make of a line, from its words.
int model_verb(const std::string &line, std::string *word, std::string *arg) {
    std::vector<std::string> words;
    std::string cur;
    for (char c : line) {
        if (is_sep(c)) {
            if (!cur.empty()) words.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    if (!cur.empty()) words.push_back(cur);
    *word = words.size() > 0 ? words[0] : "";
    *arg = words.size() > 1 ? words[1] : "";
    if (words.empty()) return ZT_VERB_NONE;
    if (words[0] == "join") return ZT_VERB_JOIN;
    if (words[0] == "resign") return ZT_VERB_RESIGN;
    if (words[0] == "status") return ZT_VERB_STATUS;
    if (words[0] == "quit") return ZT_VERB_QUIT;
    return ZT_VERB_UNKNOWN;
}

int on_line(void *ctx, char *line) {
    auto *seen = static_cast<Seen *>(ctx);
    if (!line) {
        seen->lines.push_back(kDropped);
        return 0;
    }
    std::string copy(line);
    FUZZ_CHECK(copy.size() <= ZT_LINE_MAX);
    FUZZ_CHECK(copy.find('\n') == std::string::npos);
    seen->lines.push_back(copy);
    std::string word, arg;
    int want = model_verb(copy, &word, &arg);
    zt_command c;
    zt_command_parse(line, &c);
    FUZZ_CHECK(c.verb == want);
    FUZZ_CHECK((c.word == nullptr) == (want == ZT_VERB_NONE));
    if (c.word) FUZZ_CHECK(word == c.word);
    FUZZ_CHECK((c.arg == nullptr) == arg.empty());
    if (c.arg) FUZZ_CHECK(arg == c.arg);
    return c.verb == ZT_VERB_QUIT;
}

// The lines, cut from the whole stream at once.
std::vector<std::string> model(const std::string &in) {
    std::vector<std::string> out;
    size_t pos = 0;
    while (pos < in.size()) {
        size_t nl = in.find('\n', pos);
        bool ended = nl != std::string::npos;
        std::string seg = in.substr(pos, ended ? nl - pos : std::string::npos);
        pos = ended ? nl + 1 : in.size();
        if (seg.size() > ZT_LINE_MAX) {
            out.push_back(kDropped);
            continue;
        }
        if (!ended && seg.empty()) break;
        std::string line(seg.c_str()); // the callee sees a C string
        out.push_back(line);
        std::string w, a;
        if (model_verb(line, &w, &a) == ZT_VERB_QUIT) break;
    }
    return out;
}

// Feeds `in` in reads whose sizes come from seed (0: as much as fits).
std::vector<std::string> feed(const std::string &in, uint32_t seed) {
    zt_lines l{};
    Seen seen;
    size_t pos = 0;
    int quit = 0;
    // Bounded: every pass consumes at least one byte.
    while (!quit && pos < in.size()) {
        size_t room;
        char *space = zt_lines_space(&l, &room);
        FUZZ_CHECK(room >= 1 && room <= ZT_LINE_MAX + 1);
        size_t want = room;
        if (seed) {
            seed = seed * 1103515245u + 12345u;
            want = 1 + (seed >> 8) % (seed & 1 ? 7 : room);
            if (want > room) want = room;
        }
        size_t n = std::min(want, in.size() - pos);
        std::memcpy(space, in.data() + pos, n);
        pos += n;
        quit = zt_lines_commit(&l, n, on_line, &seen);
    }
    if (!quit) zt_lines_finish(&l, on_line, &seen);
    return seen.lines;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    uint32_t seed = data[0] | 0x100u;
    std::string in(reinterpret_cast<const char *>(data) + 1, size - 1);
    std::vector<std::string> want = model(in);
    FUZZ_CHECK(feed(in, 0) == want);
    FUZZ_CHECK(feed(in, seed) == want);
    return 0;
}
