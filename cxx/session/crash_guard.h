// The crash guard's owner side (issue 37): the process's zkelect-guard
// helpers, started with posix_spawn and fed over a pipe each client's
// session id, password, timeout and hosts, or the guard service it
// connects to (crash.guard.socket, issue 51), so that the next leader
// takes over within the drain delay when this process dies, rather than
// one session timeout later. The helper, the service and their protocol:
// guard/zkelect-guard.c and guard/service.c; the pipe or connection:
// guard_link.h.
//
// The engine keeps no process-wide mutable state, save here: the issue asks
// for one guard per process, not per client (a client count of helper
// processes, each watching the same pid, would cost without adding
// anything), so the clients of a process share it through this one
// registry. It is fork-safe: a child after fork() forgets the parent's
// guards (pthread_atfork), since the parent's sessions are not the child's
// to guard and the child's writes would reach the parent's guard.
#pragma once

#include <string.h>

#include <cstdint>
#include <functional>
#include <string>

namespace zkelect {

// How the guard authenticates to a server that requires SASL, as the owner
// did (zk.sasl.*); an empty mechanism: no SASL. For GSSAPI, the owner's
// Kerberos environment: the guard's own is empty.
struct GuardedSasl {
    std::string mechanism, service, host, user, password;
    std::string ccache, client_keytab, krb5_config;  // KRB5CCNAME, KRB5_CLIENT_KTNAME, KRB5_CONFIG
    GuardedSasl() = default;
    GuardedSasl(const GuardedSasl &) = default;
    GuardedSasl &operator=(const GuardedSasl &) = default;
    // A copy of the password does not outlive its holder.
    ~GuardedSasl() { explicit_bzero(password.data(), password.size()); }
};

struct GuardedSession {
    int64_t id = 0;
    std::string passwd;  // the session password's bytes
    int timeout_ms = 0;  // negotiated
    std::string hosts;   // the connect string
    std::string servers; // the addresses connected to, "1.2.3.4:2181,[::1]:2181": the guard resolves no name
    std::string tls;     // zk.tls.*'s "ca,cert,key[,password]"; empty: plain TCP
    GuardedSasl sasl;
    GuardedSession() = default;
    GuardedSession(const GuardedSession &) = default;
    GuardedSession &operator=(const GuardedSession &) = default;
    ~GuardedSession() { explicit_bzero(passwd.data(), passwd.size()); }
};

// The path of the helper: the environment's ZKELECT_GUARD when set (tests
// run the build tree's), else the installed one Meson compiled in.
std::string crash_guard_path();

namespace crash_guard {

// Told, on the registry's watcher thread, something the client's
// candidacies should hear as a WARNING (the guard died and was started
// again, or could not be). Must not call back into the registry.
using Listener = std::function<void(const std::string &warning)>;

// A client's place with the guard of delay_ms and service socket (""
// none: crash.guard.socket), which is started when none runs (unless one
// failed a moment ago and is being backed off): a connection to the
// service at socket, or when that cannot be had a private helper. With
// *why set when no guard runs now (the helper cannot be started, or it
// refused to start): 0 when required, else a place all the same, whose
// session the guard gets once one runs again. With *fallback set when a
// private helper guards because the service could not be had (why, for a
// WARNING).
uint64_t join(int delay_ms, const std::string &socket, Listener on_warning, bool required,
              std::string *why, std::string *fallback);
// Withdraws the client's session (DEL) and its place; the last to leave a
// guard lets it go (it exits without closing anything). Once it returns the
// listener is not called again.
void leave(uint64_t ticket);
// Guards s for the client in place of its previous session (ADD, and DEL of
// the old one). False when the guard is down for now: the watcher starts a
// new one, which gets every client's session. No call here waits on the
// helper: lines go to a queue that the registry's thread writes into the
// pipe without blocking; a helper that takes none of them for 2 s is
// declared lost and replaced.
bool add(uint64_t ticket, const GuardedSession &s);
// The client's session ended: withdrawn (DEL).
void remove(uint64_t ticket);
// Once this process is dead, the guard closes the client's session only
// after process pid has ended too (WAIT; 0: no longer). Kept for every later
// session of the client. The pidfd is the guard's, taken when it reads the
// record. False when the guard is down for now (the new one gets it).
bool wait_for(uint64_t ticket, int pid);
// The length of the SASL record that carries s (the guard takes lines of at
// most 4096 bytes).
size_t sasl_line_size(const GuardedSasl &s);
// True while the client's session is in a running guard (its lines are in
// the pipe, not waiting in the queue).
bool guarded(uint64_t ticket);

}  // namespace crash_guard

}  // namespace zkelect
