// The transfer marker: the line a leader and its heirs write in the data
// of the election path P while a transfer runs (docs/semantics.md,
// "Transferring leadership"). Curator's LeaderLatch never reads P's data
// (it reads P's children and the lowest child's data), so nothing under P
// changes meaning for it. One line, at most kMarkerMax bytes:
//   zkelect-transfer 1 <leader's node> <target's node> <asked|ready|gone> <target's id>
// (the id last: it may hold spaces; only for the STEPPED_BACK event's words).
// The request from outside and its result line are names.h's. In the base
// room because both sides read it: the leader and its heirs (election/),
// and an asker from outside, who must not write a request over a transfer
// under way (session/transfer_ask.cpp).
#pragma once

#include <optional>
#include <string>

namespace zkelect {

struct TransferMarker {
    std::string from, to, state, id;
};

// The marker for `from` handing over to `to` (state: asked, ready or gone).
std::string transfer_marker_text(const std::string &from, const std::string &to,
                                 const char *state, const std::string &id);

// P's data is anyone's with WRITE on P: anything not exactly our shape,
// with candidate names in it, is no marker.
std::optional<TransferMarker> parse_transfer_marker(const std::string &data);

// Whether data is a marker of a transfer whose leader is node `from`, in
// whatever state: the shape is not checked (a transfer may be under way).
bool names_transfer_from(const std::string &data, const std::string &from);

}  // namespace zkelect
