#include "sasl_probe.h"

#include "deadline_io.h"
#include "no_sigpipe.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#ifdef ZKELECT_HAVE_ZK_TLS
#include <openssl/err.h>
#include <openssl/ssl.h>
#endif

namespace zkelect {

namespace {

using Clock = std::chrono::steady_clock;

// ZSESSIONCLOSEDREQUIRESASLAUTH (zookeeper.h; not included here, as the
// probe needs nothing else of it).
constexpr int32_t kSaslRequired = -124;

using deadline_io::ms_left;
using deadline_io::wait_fd;

void put32(std::vector<unsigned char> *b, uint32_t v) {
    v = htonl(v);
    const auto *p = reinterpret_cast<const unsigned char *>(&v);
    b->insert(b->end(), p, p + 4);
}
void put64(std::vector<unsigned char> *b, uint64_t v) {
    put32(b, uint32_t(v >> 32));
    put32(b, uint32_t(v));
}
int32_t get32(const unsigned char *p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return static_cast<int32_t>(ntohl(v));
}

// One byte stream, plain or TLS, each call bounded by `until`.
class Conn {
public:
    ~Conn() {
#ifdef ZKELECT_HAVE_ZK_TLS
        if (ssl_) SSL_free(ssl_);
        if (ctx_) SSL_CTX_free(ctx_);
#endif
        if (fd_ >= 0) ::close(fd_);
    }

    bool open(const PeerAddr &peer, const std::string &tls, Clock::time_point until) {
        fd_ = ::socket(peer.ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd_ < 0) return false;
        if (::connect(fd_, reinterpret_cast<const sockaddr *>(&peer.ss), peer.len) != 0) {
            int err = 0;
            socklen_t len = sizeof err;
            if (errno != EINPROGRESS || !wait_fd(fd_, POLLOUT, until) ||
                getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0)
                return false;
        }
        if (tls.empty()) return true;
#ifdef ZKELECT_HAVE_ZK_TLS
        // As libzookeeper's own handshake: the server verified against the
        // CA, this client's certificate presented (tls_check.cpp checked
        // them before the first session).
        std::string s = tls;
        std::vector<std::string> f;
        for (size_t at = 0;;) {
            size_t c = s.find(',', at);
            f.push_back(s.substr(at, c == std::string::npos ? std::string::npos : c - at));
            if (c == std::string::npos) break;
            at = c + 1;
        }
        f.resize(4);
        ERR_clear_error();
        ctx_ = SSL_CTX_new(TLS_client_method());
        if (!ctx_) return false;
        SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
        if (SSL_CTX_load_verify_locations(ctx_, f[0].c_str(), nullptr) != 1) return false;
        SSL_CTX_set_default_passwd_cb_userdata(ctx_, f[3].empty() ? nullptr : &f[3][0]);
        if (SSL_CTX_use_certificate_chain_file(ctx_, f[1].c_str()) != 1 ||
            SSL_CTX_use_PrivateKey_file(ctx_, f[2].c_str(), SSL_FILETYPE_PEM) != 1)
            return false;
        SSL_CTX_set_default_passwd_cb_userdata(ctx_, nullptr);
        ssl_ = SSL_new(ctx_);
        if (!ssl_) return false;
        SSL_set_fd(ssl_, fd_);
        bool ok = drive(until, [&] { return SSL_connect(ssl_); }) > 0;
        ERR_clear_error();
        return ok;
#else
        return false;
#endif
    }

    bool write_all(const std::vector<unsigned char> &b, Clock::time_point until) {
        size_t done = 0;
        while (done < b.size()) {
            long n = send_some(b.data() + done, b.size() - done, until);
            if (n <= 0) return false;
            done += size_t(n);
        }
        return true;
    }

    bool read_exact(unsigned char *p, size_t n, Clock::time_point until) {
        size_t done = 0;
        while (done < n) {
            long r = recv_some(p + done, n - done, until);
            if (r <= 0) return false;
            done += size_t(r);
        }
        return true;
    }

private:
#ifdef ZKELECT_HAVE_ZK_TLS
    template <class F>
    int drive(Clock::time_point until, F &&call) {
        for (;;) {
            int ret = call();
            if (ret > 0) return ret;
            int e = SSL_get_error(ssl_, ret);
            short ev = e == SSL_ERROR_WANT_READ ? POLLIN : e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
            if (!ev || !wait_fd(fd_, ev, until)) return -1;
        }
    }
#endif

    long send_some(const unsigned char *p, size_t n, Clock::time_point until) {
#ifdef ZKELECT_HAVE_ZK_TLS
        if (ssl_) return drive(until, [&] { return SSL_write(ssl_, p, int(n)); });
#endif
        for (;;) {
            ssize_t r = ::send(fd_, p, n, MSG_NOSIGNAL);
            if (r >= 0) return r;
            if (errno != EAGAIN && errno != EINTR) return -1;
            if (!wait_fd(fd_, POLLOUT, until)) return -1;
        }
    }

    long recv_some(unsigned char *p, size_t n, Clock::time_point until) {
#ifdef ZKELECT_HAVE_ZK_TLS
        if (ssl_) return drive(until, [&] { return SSL_read(ssl_, p, int(n)); });
#endif
        for (;;) {
            ssize_t r = ::recv(fd_, p, n, 0);
            if (r >= 0) return r;
            if (errno != EAGAIN && errno != EINTR) return -1;
            if (!wait_fd(fd_, POLLIN, until)) return -1;
        }
    }

    int fd_ = -1;
#ifdef ZKELECT_HAVE_ZK_TLS
    SSL_CTX *ctx_ = nullptr;
    SSL *ssl_ = nullptr;
#endif
};

bool send_frame(Conn &c, const std::vector<unsigned char> &body, Clock::time_point until) {
    std::vector<unsigned char> b;
    put32(&b, uint32_t(body.size()));
    b.insert(b.end(), body.begin(), body.end());
    return c.write_all(b, until);
}

// A frame's first `want` bytes (the rest is read and dropped, at most 1 MiB).
bool recv_frame(Conn &c, std::vector<unsigned char> *out, size_t want, Clock::time_point until) {
    unsigned char len4[4];
    if (!c.read_exact(len4, 4, until)) return false;
    int32_t len = get32(len4);
    if (len < int32_t(want) || len > (1 << 20)) return false;
    out->resize(size_t(len));
    return c.read_exact(out->data(), out->size(), until);
}

}  // namespace

SaslVerdict probe_sasl_required(const PeerAddr &peer, const std::string &tls, int budget_ms) {
    if (peer.len == 0) return SaslVerdict::kUnknown;
    const auto until = Clock::now() + std::chrono::milliseconds(budget_ms);
    NoSigpipe no_sigpipe;  // the server closes as it refuses; SSL_write
    Conn c;
    if (!c.open(peer, tls, until)) return SaslVerdict::kUnknown;
    // ConnectRequest: protocolVersion, lastZxidSeen, timeOut (the least:
    // the server raises it to its minimum, and the session it cannot close
    // expires soon), sessionId, passwd, readOnly.
    std::vector<unsigned char> b;
    put32(&b, 0);
    put64(&b, 0);
    put32(&b, 1);
    put64(&b, 0);
    put32(&b, 16);
    b.insert(b.end(), 16, 0);
    b.push_back(0);
    if (!send_frame(c, b, until)) return SaslVerdict::kUnknown;
    std::vector<unsigned char> r;
    if (!recv_frame(c, &r, 16, until)) return SaslVerdict::kUnknown;
    int64_t session = (int64_t(get32(&r[8])) << 32) | uint32_t(get32(&r[12]));
    if (session == 0) return SaslVerdict::kUnknown;
    // exists("/", no watch): xid 1, opcode 3.
    b.clear();
    put32(&b, 1);
    put32(&b, 3);
    put32(&b, 1);
    b.push_back('/');
    b.push_back(0);
    if (!send_frame(c, b, until)) return SaslVerdict::kUnknown;
    if (!recv_frame(c, &r, 16, until)) return SaslVerdict::kUnknown;
    int32_t xid = get32(&r[0]), err = get32(&r[12]);
    if (xid != 1) return SaslVerdict::kUnknown;
    if (err == kSaslRequired) return SaslVerdict::kRequired;
    // Answered: the session goes (closeSession, xid 2), unawaited.
    b.clear();
    put32(&b, 2);
    put32(&b, uint32_t(-11));
    send_frame(c, b, until);
    return SaslVerdict::kNotRequired;
}

}  // namespace zkelect
