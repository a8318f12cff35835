// zkelect_observer_t: watches who leads an election without taking part;
// its events are pulled or waited for on an fd.
#include <zkelect/zkelect.h>

#include <memory>
#include <mutex>
#include <string>


#include "boundary.h"
#include "handles.h"

using namespace zkelect;
using namespace zkelect::boundary;
using namespace zkelect::capi;

extern "C" {

zkelect_observer_t *zkelect_observer_new(zkelect_client_t *client, const char *path, char *errbuf,
                                         size_t errlen) {
    return guarded_new<zkelect_observer_t>(errbuf, errlen, [&]() -> zkelect_observer_t * {
        if (!usable_client_and_path(client, path, errbuf, errlen)) return nullptr;
        auto o = std::make_unique<zkelect_observer>();
        o->owner = client;
        o->shared = std::make_shared<ObserverShared>(
            path, size_t(client->client->settings().events_queue_max));
        o->events = std::make_unique<EventDelivery>(o->shared->queue);
        o->observer = Observer::open(*client->client, o->shared);
        std::lock_guard<std::mutex> lock(client->mu);
        if (client->shut) {
            // A shutdown began meanwhile: this one would outlive it.
            write_err(errbuf, errlen, std::string("ZKELECT_ECLOSED: ") + kShutDown);
            return nullptr;
        }
        client->observers.insert(o.get());
        return o.release();
    });
}

zkelect_event_t *zkelect_observer_next_event(zkelect_observer_t *o, int timeout_ms) {
    return guarded<zkelect_event_t *>(nullptr, [&]() -> zkelect_event_t * {
        if (!o) return nullptr;
        if (inherited(o)) {
            set_last_error(ZKELECT_ESTATE, std::string("the observer") + kInherited);
            return nullptr;
        }
        return wrap(o->events->next(timeout_ms)).release();
    });
}

int zkelect_observer_event_fd(zkelect_observer_t *o) {
    return guarded_code([&]() -> int {
        if (!o) return ZKELECT_EINVAL;
        if (inherited(o)) return refuse_inherited("the observer");
        return queue_fd(o->shared->queue);
    });
}

int zkelect_observer_wake(zkelect_observer_t *o) {
    return guarded_code([&]() -> int {
        if (!o) return ZKELECT_EINVAL;
        if (inherited(o)) return refuse_inherited("the observer");
        o->shared->queue.wake();
        return ZKELECT_OK;
    });
}

int zkelect_observer_destroy(zkelect_observer_t *o) {
    return guarded_code([&]() -> int {
        if (!o) return ZKELECT_EINVAL;
        if (inherited(o)) return refuse_inherited_destroy("the observer");
        o->events->close([o] { o->shared->queue.close(); });
        o->observer->stop_and_wait();
        {
            std::lock_guard<std::mutex> lock(o->owner->mu);
            o->owner->observers.erase(o);
        }
        delete o;
        return ZKELECT_OK;
    });
}

}  // extern "C"
