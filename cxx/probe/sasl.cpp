#include "sasl.h"

#include "errors.h"

#ifdef ZKELECT_HAVE_ZK_SASL
#include <sasl/sasl.h>
#include <string.h>
#include <zookeeper/zookeeper.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>
#endif

namespace zkelect {

#ifndef ZKELECT_HAVE_ZK_SASL

SaslCheck sasl_check(Settings *) { return {}; }
struct SaslParams {};
std::shared_ptr<SaslParams> sasl_params(const Settings::Sasl &) { return nullptr; }
void *sasl_params_ptr(SaslParams *) { return nullptr; }

#else

namespace {

// Cyrus SASL needs one sasl_client_init per process before any
// sasl_client_new; libzookeeper leaves that to its caller.
int init_cyrus() {
    static std::once_flag once;
    static int rc = SASL_FAIL;
    std::call_once(once, [] { rc = sasl_client_init(nullptr); });
    return rc;
}

std::string cyrus_reason(sasl_conn_t *conn, int rc) {
    const char *d = conn ? sasl_errdetail(conn) : nullptr;
    return d && *d ? d : sasl_errstring(rc, nullptr, nullptr);
}

// The first line of the file, as libzookeeper's own password file is read.
bool read_password(const std::string &path, std::string *out, std::string *why) {
    FILE *f = std::fopen(path.c_str(), "re");
    if (!f) {
        *why = "zk.sasl.password.file: cannot read " + path + ": " + std::strerror(errno);
        return false;
    }
    std::string s;
    char buf[512];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0 && s.size() < 65536) s.append(buf, n);
    bool bad = std::ferror(f);
    std::fclose(f);
    explicit_bzero(buf, sizeof buf);
    if (bad) {
        *why = "zk.sasl.password.file: cannot read " + path;
        return false;
    }
    size_t eol = s.find_first_of("\r\n");
    out->assign(s, 0, eol);
    explicit_bzero(&s[0], s.size());
    if (out->empty()) {
        *why = "zk.sasl.password.file: " + path + " has no password on its first line";
        return false;
    }
    return true;
}

}  // namespace

struct SaslParams {
    std::string service, host, mechanism, user;
    std::vector<unsigned char> secret;  // a sasl_secret_t: length, then the bytes
    std::vector<sasl_callback_t> callbacks;
    zoo_sasl_params_t params{};

    ~SaslParams() {
        if (!secret.empty()) explicit_bzero(secret.data(), secret.size());
    }

    static int simple(void *ctx, int id, const char **result, unsigned *len) {
        auto *self = static_cast<SaslParams *>(ctx);
        if (id != SASL_CB_USER && id != SASL_CB_AUTHNAME) return SASL_BADPARAM;
        *result = self->user.c_str();
        if (len) *len = static_cast<unsigned>(self->user.size());
        return SASL_OK;
    }
    static int password(sasl_conn_t *, void *ctx, int id, sasl_secret_t **out) {
        auto *self = static_cast<SaslParams *>(ctx);
        if (id != SASL_CB_PASS || self->secret.empty()) return SASL_BADPARAM;
        *out = reinterpret_cast<sasl_secret_t *>(self->secret.data());
        return SASL_OK;
    }
    // DIGEST-MD5's server offers its realm (ZooKeeper's: "zk-sasl-md5"):
    // take the one offered.
    static int realm(void *, int id, const char **avail, const char **result) {
        if (id != SASL_CB_GETREALM) return SASL_BADPARAM;
        *result = avail && *avail ? *avail : "";
        return SASL_OK;
    }
};

std::shared_ptr<SaslParams> sasl_params(const Settings::Sasl &sasl) {
    if (sasl.mechanism.empty()) return nullptr;
    auto p = std::make_shared<SaslParams>();
    p->service = sasl.service;
    p->host = sasl.host;
    p->mechanism = sasl.mechanism;
    p->user = sasl.user;
    if (!sasl.password.empty()) {
        // sasl_secret_t: an unsigned long length, then the bytes.
        p->secret.assign(sizeof(unsigned long) + sasl.password.size() + 1, 0);
        unsigned long n = sasl.password.size();
        std::memcpy(p->secret.data(), &n, sizeof n);
        std::memcpy(p->secret.data() + sizeof n, sasl.password.data(), n);
    }
    using Fn = int (*)(void);
    if (!p->user.empty()) {
        p->callbacks.push_back({SASL_CB_USER, reinterpret_cast<Fn>(&SaslParams::simple), p.get()});
        p->callbacks.push_back(
            {SASL_CB_AUTHNAME, reinterpret_cast<Fn>(&SaslParams::simple), p.get()});
    }
    if (!p->secret.empty())
        p->callbacks.push_back({SASL_CB_PASS, reinterpret_cast<Fn>(&SaslParams::password), p.get()});
    p->callbacks.push_back({SASL_CB_GETREALM, reinterpret_cast<Fn>(&SaslParams::realm), p.get()});
    p->callbacks.push_back({SASL_CB_LIST_END, nullptr, nullptr});
    p->params.service = p->service.c_str();
    p->params.host = p->host.c_str();
    p->params.mechlist = p->mechanism.c_str();
    p->params.callbacks = p->callbacks.data();
    return p;
}

void *sasl_params_ptr(SaslParams *p) { return p ? &p->params : nullptr; }

SaslCheck sasl_check(Settings *settings) {
    Settings::Sasl &sasl = settings->sasl;
    if (sasl.mechanism.empty()) return {};
    std::string why;
    if (!sasl.password_file.empty() && !read_password(sasl.password_file, &sasl.password, &why))
        return {kEInval, why};
    if (int rc = init_cyrus(); rc != SASL_OK)
        return {kENotSup, std::string("cannot start Cyrus SASL: ") +
                              sasl_errstring(rc, nullptr, nullptr)};
    const char *mechs = nullptr;
    auto params = sasl_params(sasl);
    sasl_conn_t *conn = nullptr;
    int rc = sasl_client_new(sasl.service.c_str(), sasl.host.c_str(), nullptr, nullptr,
                             params->callbacks.data(), 0, &conn);
    if (rc != SASL_OK) {
        SaslCheck out{kEInval, "zk.sasl: Cyrus SASL refused service \"" + sasl.service +
                                   "\" on host \"" + sasl.host + "\": " + cyrus_reason(conn, rc)};
        if (conn) sasl_dispose(&conn);
        return out;
    }
    const char *out = nullptr;
    unsigned outlen = 0;
    const char *chosen = nullptr;
    sasl_interact_t *ask = nullptr;
    rc = sasl_client_start(conn, sasl.mechanism.c_str(), &ask, &out, &outlen, &chosen);
    SaslCheck result;
    if (rc == SASL_NOMECH) {
        const char *const *have = sasl_global_listmech();
        std::string list;
        for (; have && *have; ++have) list += (list.empty() ? "" : " ") + std::string(*have);
        result = {kENotSup,
                  "zk.sasl.mechanism: Cyrus SASL has no mechanism \"" + sasl.mechanism +
                      "\" on this machine (it has: " + (list.empty() ? "none" : list) +
                      "; DIGEST-MD5 is in libsasl2-modules, GSSAPI in "
                      "libsasl2-modules-gssapi-mit)"};
    } else if (rc == SASL_INTERACT) {
        result = {kEInval, "zk.sasl.mechanism " + sasl.mechanism +
                               " wants more than zk.sasl.user and zk.sasl.password.file give"};
    } else if (rc != SASL_OK && rc != SASL_CONTINUE) {
        std::string reason = cyrus_reason(conn, rc);
        bool kerberos = sasl.mechanism == "GSSAPI";
        result = {kEAuth, "zk.sasl.mechanism " + sasl.mechanism + ": cannot start (" + reason +
                              ")" +
                              (kerberos ? "; GSSAPI needs Kerberos credentials for " +
                                              sasl.service + "/" + sasl.host +
                                              ": a ticket (kinit) or a keytab named by "
                                              "KRB5_CLIENT_KTNAME"
                                        : "")};
    }
    (void)mechs;
    sasl_dispose(&conn);
    return result;
}

#endif

}  // namespace zkelect
