#include "plan.h"

#include <algorithm>
#include <numeric>

namespace zkelect::balance {

std::vector<int64_t> shares(const std::vector<GroupMember> &m, int64_t at_least) {
    size_t n = m.size();
    std::vector<int64_t> share(n, 0);
    if (n == 0) return share;
    int64_t total = 0;
    for (const GroupMember &x : m) total += std::max<int64_t>(0, x.leading);
    total = std::max(total, at_least);
    // Capped first: a member that cannot lead its fair part leads all it
    // can, and the rest is shared by the others (which may cap more).
    std::vector<bool> capped(n, false);
    int64_t left = total;
    size_t open = n;
    for (bool more = true; more && open > 0;) {
        more = false;
        int64_t fair = (left + int64_t(open) - 1) / int64_t(open);  // ceil
        for (size_t i = 0; i < n; ++i) {
            int64_t cap = std::max<int64_t>(0, m[i].in_line);
            if (capped[i] || cap >= fair) continue;
            capped[i] = true;
            share[i] = cap;
            left -= cap;
            --open;
            more = true;
        }
    }
    if (open == 0) return share;
    int64_t base = left / int64_t(open), extra = left % int64_t(open);
    std::vector<size_t> rest;
    for (size_t i = 0; i < n; ++i)
        if (!capped[i]) {
            share[i] = base;
            rest.push_back(i);
        }
    // The ceil shares to those leading most now: the fewest moves.
    std::sort(rest.begin(), rest.end(), [&](size_t a, size_t b) {
        if (m[a].leading != m[b].leading) return m[a].leading > m[b].leading;
        return m[a].node < m[b].node;
    });
    for (size_t k = 0; k < rest.size() && extra > 0; ++k)
        if (std::max<int64_t>(0, m[rest[k]].in_line) > base) {
            ++share[rest[k]];
            --extra;
        }
    return share;
}

std::vector<Give> gives_of(const std::vector<GroupMember> &m, int64_t self, int64_t total) {
    std::vector<int64_t> share = shares(m, total);
    std::vector<size_t> order(m.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return m[a].node < m[b].node; });
    std::vector<size_t> givers, takers;
    for (size_t i : order) {
        if (m[i].leading > share[i]) givers.push_back(i);
        else if (m[i].leading < share[i]) takers.push_back(i);
    }
    std::vector<Give> out;
    size_t t = 0;
    int64_t room = takers.empty() ? 0 : share[takers[0]] - m[takers[0]].leading;
    for (size_t g : givers) {
        int64_t surplus = m[g].leading - share[g];
        while (surplus > 0 && t < takers.size()) {
            int64_t n = std::min(surplus, room);
            if (m[g].owner == self && n > 0) {
                if (!out.empty() && out.back().owner == m[takers[t]].owner) out.back().count += n;
                else out.push_back({m[takers[t]].owner, n});
            }
            surplus -= n;
            room -= n;
            if (room == 0 && ++t < takers.size()) room = share[takers[t]] - m[takers[t]].leading;
        }
        if (m[g].owner == self) break;
    }
    return out;
}

}  // namespace zkelect::balance
