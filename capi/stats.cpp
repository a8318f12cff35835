// zkelect_stats_t: a JSON snapshot of an election's or a client's figures.
#include <zkelect/zkelect.h>

#include <memory>
#include <mutex>
#include <string>

#include "group_stats.h"
#include "stats_json.h"

#include "boundary.h"
#include "handles.h"

using namespace zkelect;
using namespace zkelect::boundary;
using namespace zkelect::capi;

extern "C" {

zkelect_stats_t *zkelect_election_stats(zkelect_election_t *e, char *errbuf, size_t errlen) {
    return guarded_new<zkelect_stats_t>(errbuf, errlen, [&]() -> zkelect_stats_t * {
        if (!e) {
            write_err(errbuf, errlen, "election is NULL");
            return nullptr;
        }
        if (inherited(e)) {
            write_err(errbuf, errlen, std::string("the election") + kInherited, ZKELECT_ESTATE);
            return nullptr;
        }
        auto out = std::make_unique<zkelect_stats>();
        out->json.reserve(2048);
        election_stats_json(out->json, *e->shared);
        return out.release();
    });
}

zkelect_stats_t *zkelect_client_stats(zkelect_client_t *client, char *errbuf, size_t errlen) {
    return guarded_new<zkelect_stats_t>(errbuf, errlen, [&]() -> zkelect_stats_t * {
        if (!client) {
            write_err(errbuf, errlen, "client is NULL");
            return nullptr;
        }
        if (inherited(client)) {
            write_err(errbuf, errlen, std::string("the client") + kInherited, ZKELECT_ESTATE);
            return nullptr;
        }
        auto out = std::make_unique<zkelect_stats>();
        out->json.reserve(4096);
        client_stats_json(out->json, *client->client, [client](const auto &render) {
            // client->mu keeps the set's elections alive (destroy takes it to
            // leave the set); each election's own lock is held for a copy.
            std::lock_guard<std::mutex> lock(client->mu);
            for (zkelect_election *e : client->elections) render(*e->shared);
        });
        return out.release();
    });
}

zkelect_stats_t *zkelect_client_group_stats(zkelect_client_t *client, const char *group,
                                            char *errbuf, size_t errlen) {
    return guarded_new<zkelect_stats_t>(errbuf, errlen, [&]() -> zkelect_stats_t * {
        if (!usable_client_and_path(client, group, errbuf, errlen)) return nullptr;
        Client &c = *client->client;
        auto out = std::make_unique<zkelect_stats>();
        std::string why;
        int rc = balance::group_stats_json(c, group, c.effective_timeout_ms(), &out->json, &why);
        if (rc != ZKELECT_OK) {
            write_err(errbuf, errlen, std::string(zkelect_err_name(rc)) + ": " + why);
            return nullptr;
        }
        return out.release();
    });
}

const char *zkelect_stats_json(const zkelect_stats_t *stats) { return stats ? stats->json.c_str() : nullptr; }

void zkelect_stats_destroy(zkelect_stats_t *stats) { delete stats; }

}  // extern "C"
