// Asks a ZooKeeper server whether it requires SASL of this client.
//
// A server with enforce.auth.schemes=sasl grants an unauthenticated client
// its session, answers its first request with -124 and closes the
// connection. libzookeeper reads the answer and the close together, and
// drops the answer with the connection: its client sees only "connection
// loss", and connects again at once, for ever. So when connections keep
// breaking right after their handshakes, the client asks itself, with one
// connection of its own that speaks the protocol: handshake, one read of
// "/", and the answer's error code.
#pragma once

#include <string>

#include "peer_addr.h"

namespace zkelect {

enum class SaslVerdict { kRequired, kNotRequired, kUnknown };

// Plain TCP, or TLS when tls is zookeeper_init_ssl's "ca,cert,key[,pw]".
// At most budget_ms in all; kUnknown for silence, a reset, garbage.
SaslVerdict probe_sasl_required(const PeerAddr &peer, const std::string &tls, int budget_ms);

}  // namespace zkelect
