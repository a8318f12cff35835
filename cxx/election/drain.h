// A transfer's drain (transfer.drain.ms; docs/semantics.md, "Draining
// before the hand-over"). A leader deposed by a transfer stops leading at
// once (is_leader() 0, DEPOSED with reason TRANSFERRED), but its node, which
// the target waits to see deleted, stays until the holder says it has
// stopped its work (zkelect_release) or the bound passes: the old leader's
// work and the new one's never overlap, however long the old one takes to
// stop, within the bound.
//
// While the node stands, is_draining() answers 1 on the rules of the lease
// (lease.h): the session's keepalives go on, and each acknowledgement
// extends the drain's deadline, never past the bound. No one can lead
// before that deadline plus the margin: the node goes only by our delete
// (at the release, or at the bound plus the margin) or with the session,
// which the lease says cannot end before then. The Candidacy's side is in
// Transfers (transfer.cpp); these are the two numbers, pure arithmetic.
//
// All times are CLOCK_BOOTTIME nanoseconds.
#pragma once

#include <algorithm>
#include <cstdint>

namespace zkelect::drain {

// The drain's deadline for a lease deadline earned by the session.
inline int64_t until(int64_t lease_until, int64_t bound) {
    return lease_until > 0 ? std::min(lease_until, bound) : 0;
}

// When the library deletes a node not released: the bound plus the margin,
// so that a holder that saw is_draining() 1 just before the bound still has
// the margin to stop its work, as after is_leader().
inline int64_t delete_at(int64_t bound, int64_t margin_ns) { return bound + margin_ns; }

}  // namespace zkelect::drain
