// zkelect_participants_t: a listing of an election's candidates in queue
// order, read from ZooKeeper when asked for, then held by the caller.
#include <zkelect/zkelect.h>

#include <memory>
#include <string>


#include "boundary.h"
#include "names.h"
#include "handles.h"

using namespace zkelect;
using namespace zkelect::boundary;
using namespace zkelect::capi;

extern "C" {

zkelect_participants_t *zkelect_client_participants(zkelect_client_t *client, const char *path,
                                                    char *errbuf, size_t errlen) {
    return guarded_new<zkelect_participants_t>(errbuf, errlen, [&]() -> zkelect_participants_t * {
        if (!usable_client_and_path(client, path, errbuf, errlen)) return nullptr;
        auto p = std::make_unique<struct zkelect_participants>();
        std::string why;
        int rc = query(client, path, &p->list, &why);
        if (rc != ZKELECT_OK) {
            write_err(errbuf, errlen, std::string(zkelect_err_name(rc)) + ": " + why);
            return nullptr;
        }
        return p.release();
    });
}

zkelect_participants_t *zkelect_participants(zkelect_election_t *e, char *errbuf, size_t errlen) {
    if (!e) {
        write_err(errbuf, errlen, "election is NULL");
        return nullptr;
    }
    return zkelect_client_participants(e->owner, e->shared->path.c_str(), errbuf, errlen);
}

size_t zkelect_participants_count(const zkelect_participants_t *p) { return p ? p->list.size() : 0; }
const char *zkelect_participants_id(const zkelect_participants_t *p, size_t i) {
    return p && i < p->list.size() ? p->list[i].id.c_str() : nullptr;
}
const char *zkelect_participants_node(const zkelect_participants_t *p, size_t i) {
    return p && i < p->list.size() ? p->list[i].node.c_str() : nullptr;
}
int64_t zkelect_participants_token(const zkelect_participants_t *p, size_t i) {
    return p && i < p->list.size() ? p->list[i].czxid : 0;
}
int64_t zkelect_participants_ctime_ms(const zkelect_participants_t *p, size_t i) {
    return p && i < p->list.size() ? p->list[i].ctime_ms : 0;
}
int zkelect_participants_priority(const zkelect_participants_t *p, size_t i) {
    return p && i < p->list.size() ? node_priority(p->list[i].node) : 0;
}
void zkelect_participants_destroy(zkelect_participants_t *p) { delete p; }

}  // extern "C"
