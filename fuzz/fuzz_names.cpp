// Node names from ZooKeeper are foreign input: anyone who may write under an
// election path chooses them. parse_sequence must take any bytes, and
// order_candidates must give a consistent queue for any mix of names,
// including sequences that wrapped past INT32_MAX.
#include <cstdint>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "names.h"

using namespace zkelect;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    // Names are separated by '\n' (a byte ZooKeeper forbids in names, so it
    // cannot be part of one); a name of the form "#<int>" becomes one of our
    // own names with that sequence, to reach the ordering with valid input.
    std::vector<std::string> children;
    std::string cur;
    auto flush = [&] {
        if (!cur.empty() && cur[0] == '#') {
            long long v = std::strtoll(cur.c_str() + 1, nullptr, 10);
            char seq[16];
            std::snprintf(seq, sizeof seq, "%010d", static_cast<int32_t>(v));
            cur = node_prefix("5c0e0b4e-2e1c-4b43-8d0e-2c61b3a0e7a1") + seq;
        }
        children.push_back(cur);
        cur.clear();
    };
    for (size_t i = 0; i < size && children.size() < 4096; ++i) {
        if (data[i] == '\n') flush();
        else cur.push_back(static_cast<char>(data[i]));
    }
    flush();

    size_t parsed = 0;
    for (const auto &c : children) {
        auto seq = parse_sequence(c);
        if (seq) {
            ++parsed;
            // What parses is "latch-" and digits at the end of the name.
            FUZZ_CHECK(c.size() > kLatchMarker.size());
            FUZZ_CHECK(c.back() >= '0' && c.back() <= '9');
        }
        has_uuid(c, "5c0e0b4e-2e1c-4b43-8d0e-2c61b3a0e7a1");
        // P's data is as foreign as a name: what parses prints back the same.
        if (auto q = parse_transfer_request(c))
            FUZZ_CHECK(transfer_request_text(q->leader, q->number, q->id) == c);
        if (auto r = parse_transfer_result(c))
            FUZZ_CHECK(transfer_result_text(r->leader, r->number, r->id) == c);
    }
    auto order = order_candidates(children);
    FUZZ_CHECK(order.size() == parsed);
    std::multiset<std::string> in, out;
    for (const auto &c : children)
        if (parse_sequence(c)) in.insert(c);
    for (const auto &o : order) {
        out.insert(o.name);
        FUZZ_CHECK(parse_sequence(o.name) && *parse_sequence(o.name) == o.seq);
    }
    FUZZ_CHECK(in == out);
    // When the live sequences span less than 2^31 (ZooKeeper's guarantee for
    // live candidates), the order is by distance from the first, i.e.
    // creation order across the wrap.
    if (!order.empty()) {
        // All within the half circle after the first: a span below 2^31.
        const uint32_t base = static_cast<uint32_t>(order.front().seq);
        bool fits = true;
        for (const auto &o : order)
            if (static_cast<int32_t>(static_cast<uint32_t>(o.seq) - base) < 0) fits = false;
        if (fits)
            for (size_t i = 1; i < order.size(); ++i) {
                int64_t a = static_cast<int32_t>(static_cast<uint32_t>(order[i - 1].seq) - base);
                int64_t b = static_cast<int32_t>(static_cast<uint32_t>(order[i].seq) - base);
                FUZZ_CHECK(a < b || (a == b && order[i - 1].name <= order[i].name));
            }
    }
    return 0;
}
