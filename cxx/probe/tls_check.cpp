#include "tls_check.h"

#include "deadline_io.h"
#include "errors.h"
#include "no_sigpipe.h"

#ifdef ZKELECT_HAVE_ZK_TLS
#include <fcntl.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <arpa/inet.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <vector>
#endif

namespace zkelect {

#ifndef ZKELECT_HAVE_ZK_TLS

TlsCheck tls_check(const Settings &, int) { return {}; }

#else

namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> split(const std::string &s, char sep) {
    std::vector<std::string> out;
    size_t start = 0;
    for (;;) {
        size_t at = s.find(sep, start);
        out.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
        if (at == std::string::npos) return out;
        start = at + 1;
    }
}

std::string ssl_reason() {
    unsigned long e = ERR_peek_last_error();
    ERR_clear_error();
    if (!e) return "no reason given";
    const char *r = ERR_reason_error_string(e);
    return r ? r : "error " + std::to_string(e);
}

using deadline_io::ms_left;
using deadline_io::wait_fd;

struct Fd {
    int fd = -1;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

// A TCP connection to host:port by the deadline, or -1.
int dial(const std::string &host, const std::string &port, Clock::time_point until) {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo *res = nullptr;
    if (getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0 || !res) return -1;
    std::unique_ptr<addrinfo, void (*)(addrinfo *)> own(res, freeaddrinfo);
    for (addrinfo *a = res; a && ms_left(until) > 0; a = a->ai_next) {
        int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                          a->ai_protocol);
        if (fd < 0) continue;
        if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) return fd;
        int err = 0;
        socklen_t len = sizeof err;
        if (errno == EINPROGRESS && wait_fd(fd, POLLOUT, until) &&
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0)
            return fd;
        ::close(fd);
    }
    return -1;
}

enum class Step { kDone, kFailed, kTimedOut };

// Drives a non-blocking SSL call to its end.
template <class F>
Step drive(SSL *ssl, int fd, Clock::time_point until, F &&call, int *ret) {
    for (;;) {
        *ret = call();
        if (*ret > 0) return Step::kDone;
        int e = SSL_get_error(ssl, *ret);
        short ev = e == SSL_ERROR_WANT_READ ? POLLIN : e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
        if (!ev) return Step::kFailed;
        if (!wait_fd(fd, ev, until)) return Step::kTimedOut;
    }
}

// Whether host is an IPv4 or IPv6 literal: a certificate names those in
// its IP addresses, not its DNS names.
bool ip_literal(const std::string &host) {
    unsigned char buf[sizeof(in6_addr)];
    return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

// zk.tls.* as conf.cpp joined them for zookeeper_init_ssl
// ("ca,cert,key[,password]"; no value may hold a comma).
struct TlsFiles {
    std::string ca, cert, key, password;
};

TlsFiles tls_files(const std::string &joined) {
    std::vector<std::string> parts = split(joined, ',');
    TlsFiles f;
    f.ca = parts[0];
    f.cert = parts.size() > 1 ? parts[1] : "";
    f.key = parts.size() > 2 ? parts[2] : "";
    f.password = parts.size() > 3 ? parts[3] : "";
    return f;
}

using Ctx = std::unique_ptr<SSL_CTX, void (*)(SSL_CTX *)>;

// What libzookeeper's own handshake demands (zookeeper.c,
// init_ssl_for_socket): the peer verified against zk.tls.ca and the
// system's default CAs, this client's certificate and key presented when
// it has them (none: zkclient/patches/). Null, with *err, when a file is
// unusable.
Ctx client_context(TlsFiles &f, TlsCheck *err) {
    auto unusable = [err](std::string why) {
        *err = {kEInval, std::move(why)};
        return Ctx(nullptr, SSL_CTX_free);
    };
    ERR_clear_error();
    Ctx ctx(SSL_CTX_new(TLS_client_method()), SSL_CTX_free);
    if (!ctx) return unusable("cannot set up TLS: " + ssl_reason());
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
    if (SSL_CTX_load_verify_locations(ctx.get(), f.ca.c_str(), nullptr) != 1)
        return unusable("zk.tls.ca: cannot load CA certificates from " + f.ca + ": " + ssl_reason());
    SSL_CTX_set_default_verify_paths(ctx.get());
    ERR_clear_error();
    if (!f.cert.empty() && SSL_CTX_use_certificate_chain_file(ctx.get(), f.cert.c_str()) != 1)
        return unusable("zk.tls.cert: cannot load a certificate from " + f.cert + ": " +
                        ssl_reason());
    SSL_CTX_set_default_passwd_cb_userdata(ctx.get(), f.password.empty() ? nullptr : &f.password[0]);
    if (!f.cert.empty() && SSL_CTX_use_PrivateKey_file(ctx.get(), f.key.c_str(), SSL_FILETYPE_PEM) != 1)
        return unusable("zk.tls.key: cannot load a private key from " + f.key +
                        (f.password.empty() ? "" : " (is zk.tls.key.password right?)") + ": " +
                        ssl_reason());
    if (!f.cert.empty() && SSL_CTX_check_private_key(ctx.get()) != 1)
        return unusable("zk.tls.key: the key in " + f.key + " is not the key of the certificate in " +
                        f.cert + " (zk.tls.cert)");
    SSL_CTX_set_default_passwd_cb_userdata(ctx.get(), nullptr);
    return ctx;
}

// The end of a refusal's message: with no certificate presented, the
// server wants one.
std::string refused_why(const TlsFiles &f) {
    return f.cert.empty() ? "): it requires a client certificate (ssl.clientAuth=need): "
                            "set zk.tls.cert and zk.tls.key"
                          : "): does it trust this client certificate (zk.tls.cert " + f.cert + ")?";
}

// A handshake that failed: true with *out when that is a verdict (a name
// or chain the certificate fails, a refusal), false when it says nothing
// (not TLS there, or the connection dropped).
bool failed_handshake(SSL *ssl, const std::string &server, const std::string &host,
                      const TlsFiles &f, TlsCheck *out) {
    long verify = SSL_get_verify_result(ssl);
    if (verify == X509_V_ERR_HOSTNAME_MISMATCH || verify == X509_V_ERR_IP_ADDRESS_MISMATCH) {
        ERR_clear_error();
        *out = {kEAuth, "the certificate of the ZooKeeper server at " + server + " is not for " +
                            (ip_literal(host) ? "the address " : "the name ") + host + " (" +
                            X509_verify_cert_error_string(verify) +
                            "): connect by a name or address its certificate names, "
                            "or set zk.tls.hostname.verify=false"};
        return true;
    }
    if (verify != X509_V_OK) {
        ERR_clear_error();
        *out = {kEAuth, "the certificate of the ZooKeeper server at " + server +
                            " is not trusted by zk.tls.ca (" + f.ca + "): " +
                            X509_verify_cert_error_string(verify)};
        return true;
    }
    std::string reason = ssl_reason();
    if (reason.find("alert") == std::string::npos) return false;
    *out = {kEAuth, "the ZooKeeper server at " + server + " refused the TLS handshake (" + reason +
                        refused_why(f)};
    return true;
}

// In TLS 1.3 a server judges the client certificate after the handshake:
// its refusal arrives as an alert on the first read. A four-letter word
// gets any server to answer or to close. True with *out for a refusal.
bool refused_after_handshake(SSL *ssl, int fd, Clock::time_point until, const std::string &server,
                             const TlsFiles &f, TlsCheck *out) {
    static const char kAsk[] = "isro";
    int ret = 0;
    if (drive(ssl, fd, until, [&] { return SSL_write(ssl, kAsk, sizeof kAsk - 1); }, &ret) !=
        Step::kDone)
        ret = 0;
    char buf[64];
    ERR_clear_error();
    Step rd = drive(ssl, fd, until, [&] { return SSL_read(ssl, buf, sizeof buf); }, &ret);
    if (rd != Step::kFailed || SSL_get_error(ssl, ret) != SSL_ERROR_SSL) return false;
    std::string reason = ssl_reason();
    if (reason.find("alert") == std::string::npos) return false;
    *out = {kEAuth, "the ZooKeeper server at " + server +
                        (f.cert.empty() ? " refused a client without a certificate (" + reason +
                                              refused_why(f)
                                        : " refused this client certificate (zk.tls.cert " +
                                              f.cert + "): " + reason)};
    return true;
}

// One server of the connect string, until `until`: true with *out when it
// gave a verdict (a handshake through, kOk; or a refusal), false when none.
bool check_server(SSL_CTX *ctx, const Settings &settings, const std::string &server,
                  const TlsFiles &f, Clock::time_point until, TlsCheck *out) {
    size_t colon = server.rfind(':');
    if (colon == std::string::npos) return false;
    std::string host = server.substr(0, colon), port = server.substr(colon + 1);
    if (host.size() > 1 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);
    Fd sock;
    sock.fd = dial(host, port, until);
    if (sock.fd < 0) return false;
    std::unique_ptr<SSL, void (*)(SSL *)> ssl(SSL_new(ctx), SSL_free);
    if (!ssl) return false;
    SSL_set_fd(ssl.get(), sock.fd);
    // The server's name as the connect string gives it, against the
    // certificate: libzookeeper 3.8's own handshake checks the chain but no
    // name, so any certificate of the CA would do for any server; this
    // first handshake is where a wrong one is caught, as ZooKeeper's Java
    // client does (zookeeper.ssl.hostnameVerification).
    // zk.tls.hostname.verify=false: the chain only.
    X509_VERIFY_PARAM *param = SSL_get0_param(ssl.get());
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    if (settings.tls_hostname_verify &&
        (ip_literal(host) ? X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str()) != 1
                          : SSL_set1_host(ssl.get(), host.c_str()) != 1)) {
        *out = {kEInval, "cannot check the name of the ZooKeeper server at " + server +
                             " against its certificate: " + ssl_reason()};
        return true;
    }
    ERR_clear_error();
    int ret = 0;
    Step hs = drive(ssl.get(), sock.fd, until, [&] { return SSL_connect(ssl.get()); }, &ret);
    if (hs == Step::kTimedOut) return false;
    if (hs == Step::kFailed) return failed_handshake(ssl.get(), server, host, f, out);
    if (refused_after_handshake(ssl.get(), sock.fd, until, server, f, out)) return true;
    ERR_clear_error();
    *out = {};  // a handshake went through: libzookeeper's will too
    return true;
}

}  // namespace

TlsCheck tls_check(const Settings &settings, int budget_ms) {
    TlsCheck out;
    if (settings.tls.empty()) return out;
    NoSigpipe no_sigpipe;  // a refusing server closes while we write
    TlsFiles files = tls_files(settings.tls);
    Ctx ctx = client_context(files, &out);
    if (!ctx) return out;
    const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(budget_ms);
    std::string hosts = settings.hosts.substr(0, settings.hosts.find('/'));
    std::vector<std::string> servers = split(hosts, ',');
    for (size_t i = 0; i < servers.size() && ms_left(deadline) > 0; ++i) {
        // Each server gets an equal share of what is left, so a silent one
        // does not use up the others' turn.
        auto until = Clock::now() + std::chrono::milliseconds(
                                        ms_left(deadline) / int(servers.size() - i));
        if (check_server(ctx.get(), settings, servers[i], files, until, &out)) return out;
    }
    ERR_clear_error();
    return out;
}

#endif

}  // namespace zkelect
