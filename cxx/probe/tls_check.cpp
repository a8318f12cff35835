#include "tls_check.h"

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

int ms_left(Clock::time_point until) {
    auto d = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    return d < 0 ? 0 : static_cast<int>(d);
}

bool wait_fd(int fd, short events, Clock::time_point until) {
    pollfd p{fd, events, 0};
    for (;;) {
        int rc = ::poll(&p, 1, ms_left(until));
        if (rc > 0) return true;
        if (rc == 0 || errno != EINTR) return false;
    }
}

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

}  // namespace

TlsCheck tls_check(const Settings &settings, int budget_ms) {
    TlsCheck out;
    if (settings.tls.empty()) return out;
    NoSigpipe no_sigpipe;  // a refusing server closes while we write
    // conf.cpp joined "ca,cert,key[,password]" for zookeeper_init_ssl; no
    // value may hold a comma.
    std::vector<std::string> parts = split(settings.tls, ',');
    const std::string ca = parts[0], cert = parts.size() > 1 ? parts[1] : "",
                      key = parts.size() > 2 ? parts[2] : "";
    std::string password = parts.size() > 3 ? parts[3] : "";

    ERR_clear_error();
    std::unique_ptr<SSL_CTX, void (*)(SSL_CTX *)> ctx(SSL_CTX_new(TLS_client_method()), SSL_CTX_free);
    if (!ctx) return {kEInval, "cannot set up TLS: " + ssl_reason()};
    // What libzookeeper's own handshake demands (zookeeper.c,
    // init_ssl_for_socket): the peer verified against zk.tls.ca and the
    // system's default CAs, this client's certificate and key presented
    // when it has them (none: zkclient/patches/).
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
    if (SSL_CTX_load_verify_locations(ctx.get(), ca.c_str(), nullptr) != 1)
        return {kEInval, "zk.tls.ca: cannot load CA certificates from " + ca + ": " + ssl_reason()};
    SSL_CTX_set_default_verify_paths(ctx.get());
    ERR_clear_error();
    // Refused with no certificate presented: the server wants one.
    const std::string refused_why =
        cert.empty() ? "): it requires a client certificate (ssl.clientAuth=need): "
                       "set zk.tls.cert and zk.tls.key"
                     : "): does it trust this client certificate (zk.tls.cert " + cert + ")?";
    if (!cert.empty() && SSL_CTX_use_certificate_chain_file(ctx.get(), cert.c_str()) != 1)
        return {kEInval, "zk.tls.cert: cannot load a certificate from " + cert + ": " + ssl_reason()};
    SSL_CTX_set_default_passwd_cb_userdata(ctx.get(), password.empty() ? nullptr : &password[0]);
    if (!cert.empty() && SSL_CTX_use_PrivateKey_file(ctx.get(), key.c_str(), SSL_FILETYPE_PEM) != 1)
        return {kEInval, "zk.tls.key: cannot load a private key from " + key +
                             (password.empty() ? "" : " (is zk.tls.key.password right?)") + ": " +
                             ssl_reason()};
    if (!cert.empty() && SSL_CTX_check_private_key(ctx.get()) != 1)
        return {kEInval, "zk.tls.key: the key in " + key + " is not the key of the certificate in " +
                             cert + " (zk.tls.cert)"};
    SSL_CTX_set_default_passwd_cb_userdata(ctx.get(), nullptr);

    const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(budget_ms);
    std::string hosts = settings.hosts.substr(0, settings.hosts.find('/'));
    std::vector<std::string> servers = split(hosts, ',');
    for (size_t i = 0; i < servers.size() && ms_left(deadline) > 0; ++i) {
        const std::string &server = servers[i];
        size_t colon = server.rfind(':');
        if (colon == std::string::npos) continue;
        std::string host = server.substr(0, colon), port = server.substr(colon + 1);
        if (host.size() > 1 && host.front() == '[' && host.back() == ']')
            host = host.substr(1, host.size() - 2);
        // Each server gets an equal share of what is left, so a silent one
        // does not use up the others' turn.
        auto until = Clock::now() + std::chrono::milliseconds(
                                        ms_left(deadline) / int(servers.size() - i));
        Fd sock;
        sock.fd = dial(host, port, until);
        if (sock.fd < 0) continue;
        std::unique_ptr<SSL, void (*)(SSL *)> ssl(SSL_new(ctx.get()), SSL_free);
        if (!ssl) continue;
        SSL_set_fd(ssl.get(), sock.fd);
        // The server's name as the connect string gives it, against the
        // certificate: libzookeeper 3.8's own handshake checks the chain
        // but no name, so any certificate of the CA would do for any
        // server; this first handshake is where a wrong one is caught, as
        // ZooKeeper's Java client does (zookeeper.ssl.hostnameVerification).
        // zk.tls.hostname.verify=false: the chain only.
        X509_VERIFY_PARAM *param = SSL_get0_param(ssl.get());
        X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        if (settings.tls_hostname_verify &&
            (ip_literal(host) ? X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str()) != 1
                              : SSL_set1_host(ssl.get(), host.c_str()) != 1))
            return {kEInval, "cannot check the name of the ZooKeeper server at " + server +
                                 " against its certificate: " + ssl_reason()};
        ERR_clear_error();
        int ret = 0;
        Step hs = drive(ssl.get(), sock.fd, until, [&] { return SSL_connect(ssl.get()); }, &ret);
        if (hs == Step::kTimedOut) continue;
        if (hs == Step::kFailed) {
            long verify = SSL_get_verify_result(ssl.get());
            if (verify == X509_V_ERR_HOSTNAME_MISMATCH || verify == X509_V_ERR_IP_ADDRESS_MISMATCH) {
                ERR_clear_error();
                return {kEAuth, "the certificate of the ZooKeeper server at " + server +
                                    " is not for " + (ip_literal(host) ? "the address " : "the name ") +
                                    host + " (" + X509_verify_cert_error_string(verify) +
                                    "): connect by a name or address its certificate names, "
                                    "or set zk.tls.hostname.verify=false"};
            }
            if (verify != X509_V_OK) {
                ERR_clear_error();
                return {kEAuth, "the certificate of the ZooKeeper server at " + server +
                                    " is not trusted by zk.tls.ca (" + ca + "): " +
                                    X509_verify_cert_error_string(verify)};
            }
            std::string reason = ssl_reason();
            if (reason.find("alert") != std::string::npos)
                return {kEAuth, "the ZooKeeper server at " + server +
                                    " refused the TLS handshake (" + reason + refused_why};
            continue;  // not TLS there, or the connection dropped: no verdict
        }
        // In TLS 1.3 a server judges the client certificate after the
        // handshake: its refusal arrives as an alert on the first read.
        // A four-letter word gets any server to answer or to close.
        static const char kAsk[] = "isro";
        if (drive(ssl.get(), sock.fd, until,
                  [&] { return SSL_write(ssl.get(), kAsk, sizeof kAsk - 1); }, &ret) != Step::kDone)
            ret = 0;
        char buf[64];
        ERR_clear_error();
        Step rd = drive(ssl.get(), sock.fd, until,
                        [&] { return SSL_read(ssl.get(), buf, sizeof buf); }, &ret);
        if (rd == Step::kFailed && SSL_get_error(ssl.get(), ret) == SSL_ERROR_SSL) {
            std::string reason = ssl_reason();
            if (reason.find("alert") != std::string::npos)
                return {kEAuth, "the ZooKeeper server at " + server +
                                    (cert.empty() ? " refused a client without a certificate (" +
                                                        reason + refused_why
                                                  : " refused this client certificate (zk.tls.cert " +
                                                        cert + "): " + reason)};
        }
        ERR_clear_error();
        return out;  // a handshake went through: libzookeeper's will too
    }
    ERR_clear_error();
    return out;
}

#endif

}  // namespace zkelect
