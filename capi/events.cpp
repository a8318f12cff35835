// An election's events, and zkelect_event_t: pulled, waited for on an fd,
// dispatched on the caller's thread, or pushed from a background thread.
#include <zkelect/zkelect.h>

#include <memory>
#include <string>

#include "boundary.h"
#include "names.h"
#include "handles.h"

using namespace zkelect;
using namespace zkelect::boundary;
using namespace zkelect::capi;

namespace {

// The engine's callback for a C one. The event is wrapped outside the try:
// running out of memory there fails zkelect_dispatch (ZKELECT_ENOMEM), while
// nothing the user's callback throws stops the delivery of the next events.
EventDelivery::Callback c_callback(zkelect_election *e, zkelect_event_cb cb, void *opaque) {
    if (!cb) return {};
    return [e, cb, opaque](std::unique_ptr<Event> ev) {
        auto event = wrap(std::move(ev));
        try {
            cb(e, event.get(), opaque);
        } catch (...) {
        }
    };
}

}  // namespace

extern "C" {

zkelect_event_t *zkelect_next_event(zkelect_election_t *e, int timeout_ms) {
    return guarded<zkelect_event_t *>(nullptr, [&]() -> zkelect_event_t * {
        if (!e) return nullptr;
        if (inherited(e)) {
            set_last_error(ZKELECT_ESTATE, std::string("the election") + kInherited);
            return nullptr;
        }
        return wrap(e->election->events().next(timeout_ms)).release();
    });
}

int zkelect_event_fd(zkelect_election_t *e) {
    return guarded_code([&]() -> int {
        if (!e) return ZKELECT_EINVAL;
        if (inherited(e)) return refuse_inherited("the election");
        return queue_fd(e->shared->queue);
    });
}

int zkelect_wake(zkelect_election_t *e) {
    return guarded_code([&]() -> int {
        if (!e) return ZKELECT_EINVAL;
        if (inherited(e)) return refuse_inherited("the election");
        e->shared->queue.wake();
        return ZKELECT_OK;
    });
}

int zkelect_set_event_cb(zkelect_election_t *e, zkelect_event_cb cb, void *opaque) {
    return guarded_code([&]() -> int {
        if (!e) return ZKELECT_EINVAL;
        if (inherited(e)) return refuse_inherited("the election");
        return e->election->events().set_callback(c_callback(e, cb, opaque));
    });
}

int zkelect_dispatch(zkelect_election_t *e, int timeout_ms) {
    return guarded_code([&]() -> int {
        if (!e) return ZKELECT_EINVAL;
        if (inherited(e)) return refuse_inherited("the election");
        return e->election->events().dispatch(timeout_ms);
    });
}

int zkelect_set_background_event_cb(zkelect_election_t *e, zkelect_event_cb cb, void *opaque) {
    return guarded_code([&]() -> int {
        if (!e) return ZKELECT_EINVAL;
        if (inherited(e)) return refuse_inherited("the election");
        return e->election->events().set_background(c_callback(e, cb, opaque));
    });
}

int zkelect_event_type(const zkelect_event_t *ev) { return ev ? int(ev->ev.type) : 0; }
int zkelect_event_reason(const zkelect_event_t *ev) { return ev ? int(ev->ev.reason) : 0; }
int64_t zkelect_event_token(const zkelect_event_t *ev) { return ev ? ev->ev.token : 0; }
int zkelect_event_error(const zkelect_event_t *ev) { return ev ? ev->ev.error : 0; }
int zkelect_event_zk_rc(const zkelect_event_t *ev) { return ev ? ev->ev.zk_rc : 0; }
const char *zkelect_event_message(const zkelect_event_t *ev) { return ev ? ev->ev.message.c_str() : nullptr; }
const char *zkelect_event_node(const zkelect_event_t *ev) { return ev ? ev->ev.node.c_str() : nullptr; }
int zkelect_event_priority(const zkelect_event_t *ev) { return ev ? node_priority(ev->ev.node) : 0; }
const char *zkelect_event_id(const zkelect_event_t *ev) { return ev ? ev->ev.id.c_str() : nullptr; }
int64_t zkelect_event_time_ns(const zkelect_event_t *ev) { return ev ? ev->ev.time_ns : 0; }
void zkelect_event_destroy(zkelect_event_t *ev) { delete ev; }

}  // extern "C"
