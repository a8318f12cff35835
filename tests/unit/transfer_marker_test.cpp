// The transfer marker (cxx/base/transfer_marker.h): what a leader
// writes is what its heirs read back, and data of any other shape, which
// anyone with WRITE on the election path may leave there, is no marker.
#include <gtest/gtest.h>

#include "transfer_marker.h"

using namespace zkelect;

namespace {
const std::string kLeader = "_c_0f8e8f52-1b1e-4a8b-9c33-1e2d3c4b5a69-latch-0000000007";
const std::string kTarget = "_c_1f8e8f52-1b1e-4a8b-9c33-1e2d3c4b5a69-latch-0000000009";
}  // namespace

TEST(TransferMarker, WhatIsWrittenIsReadBack) {
    for (const char *state : {"asked", "ready", "gone"}) {
        auto m = parse_transfer_marker(transfer_marker_text(kLeader, kTarget, state, "worker b 2"));
        ASSERT_TRUE(m) << state;
        EXPECT_EQ(m->from, kLeader);
        EXPECT_EQ(m->to, kTarget);
        EXPECT_EQ(m->state, state);
        EXPECT_EQ(m->id, "worker b 2");  // the id last: it may hold spaces
    }
}

TEST(TransferMarker, AnythingElseIsNoMarker) {
    const std::string good = transfer_marker_text(kLeader, kTarget, "asked", "b");
    EXPECT_TRUE(parse_transfer_marker(good));
    EXPECT_FALSE(parse_transfer_marker(""));
    EXPECT_FALSE(parse_transfer_marker("zkelect-transfer 1 " + kLeader));
    EXPECT_FALSE(parse_transfer_marker("zkelect-transfer 2 " + kLeader + " " + kTarget + " asked b"));
    EXPECT_FALSE(parse_transfer_marker("zkelect-transfur 1 " + kLeader + " " + kTarget + " asked b"));
    EXPECT_FALSE(parse_transfer_marker(transfer_marker_text(kLeader, kTarget, "taken", "b")));
    // Names are candidates' names, never paths elsewhere.
    EXPECT_FALSE(parse_transfer_marker(transfer_marker_text("../x-latch-0000000001", kTarget, "asked", "b")));
    EXPECT_FALSE(parse_transfer_marker(transfer_marker_text(kLeader, "not-a-candidate", "asked", "b")));
    // The id must be one a participant may have (no control characters).
    EXPECT_FALSE(parse_transfer_marker(transfer_marker_text(kLeader, kTarget, "asked", "b\nc")));
    // At most 512 bytes.
    EXPECT_FALSE(parse_transfer_marker(transfer_marker_text(kLeader, kTarget, "asked", std::string(600, 'b'))));
}

TEST(TransferMarker, NamesTheLeaderItHandsOverFrom) {
    EXPECT_TRUE(names_transfer_from(transfer_marker_text(kLeader, kTarget, "ready", "b"), kLeader));
    EXPECT_FALSE(names_transfer_from(transfer_marker_text(kTarget, kLeader, "ready", "b"), kLeader));
    // A name that only begins like the leader's is another node.
    EXPECT_FALSE(names_transfer_from(transfer_marker_text(kLeader + "1", kTarget, "ready", "b"), kLeader));
    EXPECT_FALSE(names_transfer_from("", kLeader));
}
