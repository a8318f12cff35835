// Does a server port speak TLS? Asked when a client without zk.tls.* got no
// session within its connect timeout: a TLS-only port (secureClientPort)
// closes a plain ZooKeeper handshake without a word, and the client retries
// until the timeout with nothing to say why. One TLS ClientHello to the
// connect string's servers tells: a TLS port answers with a handshake
// record or an alert, a plain ZooKeeper port with nothing (it reads the
// hello's first bytes as an absurd length and closes).
#pragma once

#include <string>

namespace zkelect {

// The first "host:port" of hosts (a connect string, a chroot allowed)
// whose port answers a ClientHello in TLS, or "" for none or no answer.
// At most three servers, budget_ms in all; names resolved here.
std::string first_tls_server(const std::string &hosts, int budget_ms);

}  // namespace zkelect
