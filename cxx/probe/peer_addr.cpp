#include "peer_addr.h"

#include <arpa/inet.h>
#include <netinet/in.h>

namespace zkelect {

std::string PeerAddr::text() const {
    char host[INET6_ADDRSTRLEN] = {0};
    int port = 0;
    if (len >= sizeof(sockaddr_in) && ss.ss_family == AF_INET) {
        const auto *a = reinterpret_cast<const sockaddr_in *>(&ss);
        if (!inet_ntop(AF_INET, &a->sin_addr, host, sizeof host)) return {};
        port = ntohs(a->sin_port);
        return std::string(host) + ":" + std::to_string(port);
    }
    if (len >= sizeof(sockaddr_in6) && ss.ss_family == AF_INET6) {
        const auto *a = reinterpret_cast<const sockaddr_in6 *>(&ss);
        if (!inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host)) return {};
        port = ntohs(a->sin6_port);
        return "[" + std::string(host) + "]:" + std::to_string(port);
    }
    return {};
}

}  // namespace zkelect
