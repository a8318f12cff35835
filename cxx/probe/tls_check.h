// One TLS handshake with the servers before a client's first session, so
// that a certificate problem is an error with its cause instead of
// libzookeeper's endless reconnects (it retries a failed handshake several
// times a second and says why only in its log).
#pragma once

#include <string>

#include "conf.h"

namespace zkelect {

struct TlsCheck {
    int code = 0;     // kOk, kEAuth (a certificate refused), kEInval (a file unusable)
    std::string why;  // names the key, the file and the server; never the password
};

// Tries the servers of settings.hosts in turn, within budget_ms in all,
// until one completes a handshake (kOk) or refuses one for a reason of
// certificates (kEAuth). Servers that cannot be reached say nothing: the
// session's own retries are for them (kOk). kOk at once without zk.tls.*
// or in a build whose ZooKeeper client has no TLS.
TlsCheck tls_check(const Settings &settings, int budget_ms);

}  // namespace zkelect
