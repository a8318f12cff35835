// A client's side of the crash guard (crash_guard.h): its place in the
// process's guard at construction (or the WARNING why it has none), each
// session granted handed over with what the guard needs to close it as
// this client would (the servers, TLS files, SASL), the guard's later
// WARNINGs told to every member, and zkelect_client_crash_guard_wait().
#include <signal.h>

#include <cerrno>
#include <stdexcept>

#include "client.h"
#include "crash_guard.h"

namespace zkelect {

// The guard's lines carry the connect string and, over TLS, the zk.tls.*
// files' names (the guard takes lines of at most 4096 bytes).
constexpr size_t kGuardHostsMax = 3900;
constexpr size_t kGuardLineMax = 4096;

// How the guard authenticates, as this client does (zk.sasl.*): a server
// that requires SASL refuses an unauthenticated connection's closeSession
// (-124). With GSSAPI, the Kerberos environment this process finds its
// credentials through: the guard's own environment is empty.
GuardedSasl Client::guard_sasl() const {
    GuardedSasl a;
    const Settings::Sasl &s = settings_.sasl;
    if (s.mechanism.empty()) return a;
    a.mechanism = s.mechanism;
    a.service = s.service;
    a.host = s.host;
    a.user = s.user;
    a.password = s.password;
    auto env = [](const char *name) {
        const char *v = secure_getenv(name);
        return std::string(v ? v : "");
    };
    a.ccache = env("KRB5CCNAME");
    a.client_keytab = env("KRB5_CLIENT_KTNAME");
    a.krb5_config = env("KRB5_CONFIG");
    return a;
}

void Client::join_crash_guard() {
    if (settings_.guard == GuardMode::kOff) return;
    std::string why;
    if (crash_guard::sasl_line_size(guard_sasl()) > kGuardLineMax) {
        why = "the zk.sasl.* values (and the Kerberos environment) are longer than the crash "
              "guard takes (" + std::to_string(kGuardLineMax) + " bytes, hex-encoded)";
    } else if (settings_.hosts.size() + settings_.tls.size() > kGuardHostsMax) {
        why = std::string(settings_.tls.empty() ? "zk.hosts is"
                                                : "zk.hosts and the zk.tls.* files' names are") +
              " longer than the crash guard takes (" + std::to_string(kGuardHostsMax) + " bytes)";
    } else {
        std::string fallback;
        guard_ticket_ = crash_guard::join(
            settings_.guard_delay_ms, settings_.guard_socket,
            [this](const std::string &what) { post([this, what] { warn_about_guard(what); }); },
            settings_.guard == GuardMode::kOn, &why, &fallback);
        // A private guard in place of the service: guarded, and told why
        // not by the service.
        if (guard_ticket_ && why.empty() && !fallback.empty()) {
            bump(kCrashGuardWarnings);
            guard_warning_ = fallback;
        }
        // With a place but no guard running (auto): the session goes to the
        // guard once one runs again.
        if (guard_ticket_ && why.empty()) return;
    }
    if (settings_.guard == GuardMode::kOn) throw std::runtime_error("crash.guard is \"on\": " + why);
    bump(kCrashGuardWarnings);
    guard_warning_ = "crash.guard: " + why +
                     "; this client runs without the guard: if this process dies, the next "
                     "leader takes over only after the session timeout";
}

void Client::warn_about_guard(const std::string &what) {
    bump(kCrashGuardWarnings);
    const std::string about = "crash guard " + std::to_string(++guard_warnings_);
    std::vector<std::shared_ptr<Member>> told;
    for (auto &[id, m] : members_) told.push_back(m);
    for (auto &m : told) m->on_warning(about, what);
}

// A session once granted goes to the guard (replacing the client's last).
void Client::guard_session() {
    if (!guard_ticket_) return;
    GuardedSession g;
    if (!session_->credentials(&g.id, &g.passwd)) return;
    g.timeout_ms = session_->negotiated_timeout_ms();
    // The servers in use: after a reconfiguration zk.hosts may name none.
    g.hosts = hosts();
    // The server connected to, as an address: the guard resolves no name
    // (its drain leaves this process's connections to it out).
    g.servers = last_peer_.text();
    // Over TLS the guard connects as this client does (its CA, certificate
    // and key), so that a TLS-only ensemble takes its close.
    g.tls = settings_.tls;
    g.sasl = guard_sasl();
    if (g.hosts.size() + g.tls.size() <= kGuardHostsMax &&
        crash_guard::sasl_line_size(g.sasl) <= kGuardLineMax)
        crash_guard::add(guard_ticket_, g);
}

bool Client::guarded() const { return guard_ticket_ && crash_guard::guarded(guard_ticket_); }

int Client::crash_guard_wait(int pid) {
    if (pid < 0) return kEInval;
    // The process must exist now: the guard takes a pidfd on it, and a
    // number already free would name whatever comes to reuse it.
    if (pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH) return kEInval;
    if (!guard_ticket_) return kOk;  // no guard: the session outlives us by T anyway
    crash_guard::wait_for(guard_ticket_, pid);
    return kOk;
}

}  // namespace zkelect
