// The ensemble's membership as ZooKeeper 3.5+ publishes it in
// /zookeeper/config (dynamic reconfiguration), read so that a client whose
// connect string names only servers since retired keeps its session: an
// ensemble replaced one host at a time stays reachable.
#pragma once

#include <string>
#include <vector>

namespace zkelect {

// The client addresses ("host:port", IPv6 hosts in brackets) of every
// server the config names, in its order, or empty when it names none
// usable. The data is untrusted: a line that does not parse, a server
// without a client address (a config written without ";clientPort"), a
// host or port out of shape, more than kMaxServers servers or data over
// kMaxBytes give an empty list (the caller keeps what it has), never a
// partial one: a partial list could drop the only servers still reachable.
std::vector<std::string> ensemble_client_hosts(const std::string &config_data);

// "host:port,..." plus the chroot of `configured` (zk.hosts), the string a
// new session is opened with.
std::string with_chroot(const std::vector<std::string> &hosts, const std::string &configured);

// The chroot suffix of a connect string ("/app" of "h:1,h:2/app"), or "".
std::string chroot_of(const std::string &connect_string);

}  // namespace zkelect
