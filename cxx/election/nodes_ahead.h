// The names of the nodes ahead of a follower in its last listing, nearest
// first, which it moves up through without listing the path again
// (Candidacy::move_up; docs/semantics.md, "Moving up without a listing").
//
// Every follower of a long queue keeps up to 32 of them: as text, 1.9 KB
// each, which doubled the memory per candidacy of a queue of thousands
// (bench/memcand.c: 4.2 KB before the walk, 8.0 KB after; issue 35). A
// candidate name of our own shape, "_c_" + a lowercase uuid + "-latch-" +
// ZooKeeper's "%010d" sequence, is kept as its 16 uuid bytes and its
// sequence: 20 bytes. Names come from ZooKeeper and may have any shape; a
// list holding one that does not round-trip exactly is kept as text.
#pragma once

#include <string>
#include <vector>

#include "names.h"

namespace zkelect {

class NodesAhead {
public:
    // Replaces the list with order[from - 1], order[from - 2], ... (count
    // names, nearest first). The memory is sized to fit.
    void assign(const std::vector<Candidate> &order, size_t from, size_t count);
    bool empty() const { return bytes_.empty(); }
    // Takes the nearest name off the list. Not on an empty list.
    std::string pop_front();
    // Empties the list and gives its memory back.
    void clear() { std::string().swap(bytes_); }
    // Bytes held (tests/unit/nodes_ahead_test.cpp holds the packing to it).
    size_t memory() const { return bytes_.capacity(); }

private:
    // Packed: 20 bytes a name. Text: the names joined by '/' (no node name
    // holds one).
    bool packed_ = false;
    std::string bytes_;
};

// Exposed for the unit test: the 20 bytes of a name of our shape, or false.
bool pack_node_name(const std::string &name, char out[20]);
std::string unpack_node_name(const char in[20]);

}  // namespace zkelect
