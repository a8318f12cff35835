// zkelect_conf_t: a set of keys and values, checked as they are set.
#include <zkelect/zkelect.h>

#include <cstring>
#include <string>

#include "boundary.h"
#include "handles.h"

using namespace zkelect;
using namespace zkelect::boundary;
using namespace zkelect::capi;

extern "C" {

zkelect_conf_t *zkelect_conf_new(void) {
    return guarded<zkelect_conf_t *>(nullptr, [] { return new zkelect_conf(); });
}

int zkelect_conf_set(zkelect_conf_t *conf, const char *key, const char *value, char *errbuf,
                     size_t errlen) {
    return guarded_code([&]() -> int {
        if (!conf || !key || !value) {
            write_err(errbuf, errlen,
                      !conf ? "conf is NULL" : !key ? "key is NULL" : "value is NULL");
            return ZKELECT_EINVAL;
        }
        std::string why = conf->conf.set(key, value);
        if (!why.empty()) {
            write_err(errbuf, errlen, why);
            return Conf::unsupported(key, value) ? ZKELECT_ENOTSUP : ZKELECT_EINVAL;
        }
        return ZKELECT_OK;
    });
}

int zkelect_conf_get(const zkelect_conf_t *conf, const char *key, char *buf, size_t *len) {
    return guarded_code([&]() -> int {
        if (!conf || !key || !len) return ZKELECT_EINVAL;
        std::string v;
        if (!conf->conf.get(key, &v)) return ZKELECT_EINVAL;
        size_t need = v.size() + 1;
        if (!buf || *len < need) {
            *len = need;
            return ZKELECT_ERANGE;
        }
        std::memcpy(buf, v.c_str(), need);
        *len = need;
        return ZKELECT_OK;
    });
}

void zkelect_conf_destroy(zkelect_conf_t *conf) { delete conf; }

const char *zkelect_conf_key(size_t index) { return Conf::key_name(index); }

}  // extern "C"
