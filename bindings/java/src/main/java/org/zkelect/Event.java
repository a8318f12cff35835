package org.zkelect;

/** One event, copied out of the library. */
public final class Event {
    /** What happened (ZKELECT_EV_* of zkelect.h). */
    public enum Type {
        // BEGIN gen/vocab.py event types
        UNKNOWN,
        ELECTED,
        DEPOSED,
        FOLLOWING,
        SUSPENDED,
        RECONNECTED,
        EXPIRED,
        LEADER_CHANGED,
        ERROR,
        RESIGNED,
        /** Since 1.1. */
        OVERFLOW,
        /** Since 1.1. */
        WARNING,
        /** Since 1.2. */
        STEPPED_BACK,
        /** Since 1.2. */
        LEASE_LOW;
        // END gen/vocab.py event types

        static Type of(int code) {
            Type[] all = values();
            return code > 0 && code < all.length ? all[code] : UNKNOWN;
        }
    }

    /** Why a DEPOSED event happened (ZKELECT_REASON_*). */
    public enum Reason {
        // BEGIN gen/vocab.py reasons
        NONE, RESIGNED, SUSPENDED, LEASE_ENDED, EXPIRED, NODE_DELETED, CLOSED, TRANSFERRED;
        // END gen/vocab.py reasons

        static Reason of(int code) {
            Reason[] all = values();
            return code >= 0 && code < all.length ? all[code] : NONE;
        }
    }

    public final Type type;
    public final Reason reason;
    /** Fencing token (ELECTED, LEADER_CHANGED), else 0. */
    public final long token;
    /** ERROR: the ZKELECT_E* code, else 0. */
    public final int error;
    /** ERROR: ZooKeeper's own code, 0 when none. */
    public final int zkRc;
    public final String message;
    public final String node;
    public final String id;
    /** When the library saw the change, ns since the epoch. */
    public final long timeNanos;

    Event(NativeEvent ev) {
        try {
            type = Type.of(ZkelectNative.event_type(ev));
            reason = Reason.of(ZkelectNative.event_reason(ev));
            token = ZkelectNative.event_token(ev);
            error = ZkelectNative.event_error(ev);
            zkRc = ZkelectNative.event_zk_rc(ev);
            message = ZkelectNative.event_message(ev);
            node = ZkelectNative.event_node(ev);
            id = ZkelectNative.event_id(ev);
            timeNanos = ZkelectNative.event_time_ns(ev);
        } finally {
            ZkelectNative.event_destroy(ev);
        }
    }

    @Override
    public String toString() {
        return type + (reason != Reason.NONE ? "(" + reason + ")" : "") + " id=" + id + " token=" + token
                + " " + message;
    }
}
