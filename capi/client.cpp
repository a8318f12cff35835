// zkelect_client_t: one ZooKeeper session, and the elections and observers
// made on it, which must be gone before it is.
#include <zkelect/zkelect.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "boundary.h"
#include "client_shutdown.h"
#include "names.h"
#include "tls_sniff.h"
#include "handles.h"
#include "sasl.h"
#include "tls_check.h"

using namespace zkelect;
using namespace zkelect::boundary;
using namespace zkelect::capi;

extern "C" {

zkelect_client_t *zkelect_client_new(const zkelect_conf_t *conf, char *errbuf, size_t errlen) {
    return guarded_new<zkelect_client_t>(errbuf, errlen, [&]() -> zkelect_client_t * {
        if (!conf) {
            write_err(errbuf, errlen, "conf is NULL");
            return nullptr;
        }
        Settings s;
        std::string why;
        if (!conf->conf.settings(&s, &why)) {
            write_err(errbuf, errlen, why);
            return nullptr;
        }
        // With zk.tls.*, a certificate problem fails here, with its cause,
        // rather than as libzookeeper's endless reconnects (tls_check.h).
        // Bounded by the connect timeout, and 3 s: servers that do not
        // answer are left to the session's own retries.
        // With zk.sasl.*, what can be known before a server is asked: the
        // password file, the mechanism, Kerberos credentials (sasl.h).
        if (SaslCheck c = sasl_check(&s); c.code != 0) {
            write_err(errbuf, errlen, c.why, c.code);
            return nullptr;
        }
        if (TlsCheck t = tls_check(s, std::min(s.connect_timeout_ms, 3000)); t.code != 0) {
            write_err(errbuf, errlen, t.why, t.code);
            return nullptr;
        }
        auto c = std::make_unique<zkelect_client>();
        c->client = std::make_unique<Client>(s);
        if (!s.balance_group.empty()) c->balancer = balance::Balancer::open(*c->client);
        return c.release();
    });
}

int zkelect_client_destroy(zkelect_client_t *client) {
    return guarded_code([&]() -> int {
        if (!client) return ZKELECT_EINVAL;
        if (inherited(client)) return refuse_inherited_destroy("the client");
        {
            std::lock_guard<std::mutex> lock(client->mu);
            for (auto *e : client->elections)
                if (e->election->events().in_own_callback()) return ZKELECT_EDEADLK;
            if (!client->elections.empty() || !client->observers.empty()) return ZKELECT_ESTATE;
        }
        delete client;
        return ZKELECT_OK;
    });
}

int zkelect_client_shutdown(zkelect_client_t *client, int timeout_ms) {
    return guarded_code([&]() -> int {
        if (!client) return fail(ZKELECT_EINVAL, "client is NULL");
        if (inherited(client)) return refuse_inherited("the client");
        if (timeout_ms > kRequestTimeoutMaxMs)
            return fail(ZKELECT_EINVAL, "timeout_ms must be at most 600000");
        if (timeout_ms < 0) timeout_ms = client->client->effective_timeout_ms();
        std::vector<ClientShutdown::Step> steps;
        {
            // Every handle's leadership ends here, before any step is
            // posted; the lock keeps each handle alive until then.
            std::lock_guard<std::mutex> lock(client->mu);
            if (client->shut) return fail(ZKELECT_ECLOSED, "the client was shut down already");
            client->shut = true;
            // No move starts while the elections end.
            if (client->balancer) client->balancer->stop();
            steps.reserve(client->elections.size() + client->observers.size());
            for (auto *e : client->elections)
                if (auto step = e->election->begin_shutdown()) steps.push_back(std::move(step));
            for (auto *o : client->observers) steps.push_back(o->observer->shutdown_step());
        }
        ClientShutdown::Outcome out =
            ClientShutdown::run(*client->client, std::move(steps), timeout_ms);
        if (out.code != ZKELECT_OK) return fail(out.code, out.why);
        return ZKELECT_OK;
    });
}

int zkelect_client_await_connected(zkelect_client_t *client, int timeout_ms) {
    return guarded_code([&]() -> int {
        if (!client) return ZKELECT_EINVAL;
        if (inherited(client)) return refuse_inherited("the client");
        if (client->client->stopped()) return fail(ZKELECT_ECLOSED, kShutDown);
        int rc = client->client->await_connected(timeout_ms);
        if (rc == ZKELECT_EAUTH) return fail(rc, client->client->auth_failure());
        if (rc == ZKELECT_ETIMEDOUT && client->client->settings().tls.empty() &&
            client->client->session_id() == 0) {
            // A TLS-only port closes a plain handshake without a word: the
            // one thing that says why nothing connected (tls_sniff.h).
            std::string tls = zkelect::first_tls_server(client->client->settings().hosts, 1000);
            if (!tls.empty())
                return fail(rc, "ZKELECT_ETIMEDOUT: no session: " + tls +
                                    " answers in TLS, not in plain ZooKeeper: set zk.tls.ca "
                                    "(docs/tls.md)");
        }
        return rc;
    });
}

int zkelect_client_is_connected(const zkelect_client_t *client) {
    return client && !inherited(client) && client->client->connected() ? 1 : 0;
}

int zkelect_client_session_timeout_ms(const zkelect_client_t *client) {
    return client && !inherited(client) ? client->client->negotiated_timeout_ms() : 0;
}

int zkelect_client_lease_margin_ms(const zkelect_client_t *client) {
    return client && !inherited(client) ? client->client->lease_margin_ms() : 0;
}

int zkelect_client_crash_guard_wait(zkelect_client_t *client, int pid) {
    return guarded_code([&]() -> int {
        if (!client) return ZKELECT_EINVAL;
        if (inherited(client)) return refuse_inherited("the client");
        return client->client->crash_guard_wait(pid);
    });
}

int64_t zkelect_client_session_id(const zkelect_client_t *client) {
    return client && !inherited(client) ? client->client->session_id() : 0;
}

int zkelect_client_counter(const zkelect_client_t *client, int counter, uint64_t *value) {
    return guarded_code([&]() -> int {
        if (!client || !value) return fail(ZKELECT_EINVAL, !client ? "client is NULL" : "value is NULL");
        if (counter < 0 || counter >= ZKELECT_COUNTER__COUNT)
            return fail(ZKELECT_EINVAL, "no counter " + std::to_string(counter));
        if (inherited(client)) return refuse_inherited("the client");
        *value = client->client->counter(counter);
        return ZKELECT_OK;
    });
}

}  // extern "C"
