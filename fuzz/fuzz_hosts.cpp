// Connect strings with their chroot: check_hosts must take any bytes and
// accept only what ZooKeeper's client can use: host:port entries with a
// port in 1..65535 and a chroot that is itself a valid path.
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "names.h"

using namespace zkelect;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    std::string hosts(reinterpret_cast<const char *>(data), size);
    std::string why = check_hosts(hosts);
    if (!why.empty()) return 0;
    FUZZ_CHECK(hosts.find('\0') == std::string::npos);
    size_t slash = hosts.find('/');
    std::string servers = hosts.substr(0, slash);
    if (slash != std::string::npos && hosts.size() - slash > 1)
        FUZZ_CHECK(check_election_path(hosts.substr(slash)).empty());
    FUZZ_CHECK(!servers.empty());
    size_t start = 0;
    while (start <= servers.size()) {
        size_t end = servers.find(',', start);
        if (end == std::string::npos) end = servers.size();
        std::string server = servers.substr(start, end - start);
        size_t colon = server.rfind(':');
        FUZZ_CHECK(colon != std::string::npos && colon > 0);
        std::string port = server.substr(colon + 1);
        FUZZ_CHECK(!port.empty() && port.size() <= 5);
        long p = std::strtol(port.c_str(), nullptr, 10);
        FUZZ_CHECK(p >= 1 && p <= 65535);
        for (char c : server.substr(0, colon))
            FUZZ_CHECK(static_cast<unsigned char>(c) > 0x20);
        start = end + 1;
    }
    return 0;
}
