// The figures of an election and of a client as the JSON document of
// zkelect_election_stats() / zkelect_client_stats() (docs/monitoring.md
// lists the keys). Keys are only ever added: "version" stays 1 while they are.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace zkelect {

class Client;
struct ElectionShared;

// JSON's pieces, appended to o: a string (escaped, bytes >= 0x20 as they
// are: for text known to be UTF-8), a key (with the comma before it unless
// it opens an object), a key and an integer.
void json_str(std::string &o, const std::string &v);
void json_key(std::string &o, const char *k);
void json_int(std::string &o, const char *k, int64_t v);
void json_uint(std::string &o, const char *k, uint64_t v);

// Appends one election's document to out. Reads each figure once (the
// stats lock is held for a copy only), so it may run on any thread.
void election_stats_json(std::string &out, const ElectionShared &e);

// Appends a client's document to out: the session's figures and counters,
// then "elections": one document for each election `each` hands to the
// function it is given (the caller keeps them alive meanwhile).
using EachElection = std::function<void(const std::function<void(const ElectionShared &)> &)>;
void client_stats_json(std::string &out, const Client &c, const EachElection &each);

// Appends the leader endpoint's answer (zkelect_leader_answer; `zkelect
// run`'s GET /leader) and returns whether it says "leading": one reading of
// the lease between two readings of the token, so a term that ended and
// began again between them cannot lend its time left to the other's token.
// Lock-free: no stats are read.
bool leader_answer_json(std::string &out, const ElectionShared &e);

}  // namespace zkelect
