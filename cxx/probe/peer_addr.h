// The address of the server a ZooKeeper connection is made with, as the
// session reports it with the handshake (zk_port.h) and the tickTime probe
// dials it (tick_probe.h).
#pragma once

#include <sys/socket.h>

#include <string>

namespace zkelect {

// A server's address as ZooKeeper's client is connected to it (getpeername
// of its socket): no name to resolve.
struct PeerAddr {
    sockaddr_storage ss{};
    socklen_t len = 0;  // 0: none known
    // "1.2.3.4:2181" or "[::1]:2181"; "" for none.
    std::string text() const;
};

}  // namespace zkelect
