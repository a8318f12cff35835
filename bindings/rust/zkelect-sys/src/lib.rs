//! Raw declarations of libzkelect's C API (`zkelect/zkelect.h`), written by
//! hand to match the header one for one. Every function here is `unsafe`;
//! the `zkelect` crate is the safe layer on top.
//!
//! The library is found by `build.rs` through pkg-config (`libzkelect`).
//! `tests/header.rs` compiles the header against these declarations, so a
//! drift between the two fails the tests rather than corrupting memory.
#![allow(non_camel_case_types)]
// std::os::raw rather than core::ffi (no_std) keeps Debian 12's rustc 1.63 able to build this.
use std::marker::{PhantomData, PhantomPinned};
use std::os::raw::{c_char, c_int, c_uint, c_void};

/// C `size_t`.
pub type size_t = usize;

// Opaque handles: zero-sized, unconstructible, neither Send, Sync nor Unpin,
// so that only pointers to them can exist (the pattern the Rustonomicon
// recommends for foreign opaque types).
macro_rules! opaque {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[repr(C)]
        pub struct $name {
            _data: [u8; 0],
            _marker: PhantomData<(*mut u8, PhantomPinned)>,
        }
    )*};
}

opaque! {
    /// Configuration: string keys and values.
    zkelect_conf_t;
    /// One ZooKeeper session.
    zkelect_client_t;
    /// One candidacy of one participant on one election path.
    zkelect_election_t;
    /// A read-only watcher of an election's leader.
    zkelect_observer_t;
    /// One event taken from a handle's queue.
    zkelect_event_t;
    /// A snapshot of an election's candidates, in queue order.
    zkelect_participants_t;
    /// A snapshot of a client's or an election's figures, as JSON. Since 1.2.
    zkelect_stats_t;
    /// A batch of ZooKeeper changes for a fenced write. Since 1.2.
    zkelect_fenced_ops_t;
}

/// `zkelect_fenced_ops_create` flag: the node is ephemeral.
pub const ZKELECT_FENCED_EPHEMERAL: c_int = 1;

/// `typedef void (*zkelect_event_cb)(zkelect_election_t *, const zkelect_event_t *, void *)`;
/// `None` is the C NULL.
pub type zkelect_event_cb = Option<
    unsafe extern "C" fn(
        election: *mut zkelect_election_t,
        event: *const zkelect_event_t,
        opaque: *mut c_void,
    ),
>;

/// `typedef void (*zkelect_log_cb)(int level, const char *message, void *opaque)`;
/// `None` is the C NULL. Since 1.1.
pub type zkelect_log_cb = Option<
    unsafe extern "C" fn(level: c_int, message: *const c_char, opaque: *mut c_void),
>;

// enum zkelect_err
// BEGIN gen/vocab.py errors
pub const ZKELECT_OK: c_int = 0;
pub const ZKELECT_EINVAL: c_int = -1;
pub const ZKELECT_ENOMEM: c_int = -2;
pub const ZKELECT_ESTATE: c_int = -3;
pub const ZKELECT_ECLOSED: c_int = -4;
pub const ZKELECT_ETIMEDOUT: c_int = -5;
pub const ZKELECT_ECONNLOSS: c_int = -6;
pub const ZKELECT_ESESSION_EXPIRED: c_int = -7;
pub const ZKELECT_EAUTH: c_int = -8;
pub const ZKELECT_ENOTSUP: c_int = -9;
pub const ZKELECT_EDEADLK: c_int = -10;
pub const ZKELECT_EZK: c_int = -11;
pub const ZKELECT_EINTERNAL: c_int = -12;
pub const ZKELECT_ENOLEADER: c_int = -13;
pub const ZKELECT_ERANGE: c_int = -14;
pub const ZKELECT_ENOTLEADER: c_int = -15;
pub const ZKELECT_ENOCANDIDATE: c_int = -16;
pub const ZKELECT_ETARGET_LOST: c_int = -17;
pub const ZKELECT_ELIMIT: c_int = -18;
pub const ZKELECT_EFENCED: c_int = -19;
// END gen/vocab.py errors

/// `#define ZKELECT_ID_MAX`: longest participant id in bytes, without the NUL.
pub const ZKELECT_ID_MAX: usize = 1024;
/// `#define ZKELECT_EVENT_QUEUE_MAX`: most events a handle's queue holds.
pub const ZKELECT_EVENT_QUEUE_MAX: usize = 1024;

// enum zkelect_counter
// BEGIN gen/vocab.py counters
pub const ZKELECT_COUNTER_TERMS_WON: c_int = 0;
pub const ZKELECT_COUNTER_DEPOSED_RESIGNED: c_int = 1;
pub const ZKELECT_COUNTER_DEPOSED_SUSPENDED: c_int = 2;
pub const ZKELECT_COUNTER_DEPOSED_LEASE_ENDED: c_int = 3;
pub const ZKELECT_COUNTER_DEPOSED_EXPIRED: c_int = 4;
pub const ZKELECT_COUNTER_DEPOSED_NODE_DELETED: c_int = 5;
pub const ZKELECT_COUNTER_DEPOSED_CLOSED: c_int = 6;
pub const ZKELECT_COUNTER_RECONNECTS: c_int = 7;
pub const ZKELECT_COUNTER_EXPIRIES: c_int = 8;
pub const ZKELECT_COUNTER_ZK_REQUESTS: c_int = 9;
pub const ZKELECT_COUNTER_KEEPALIVES: c_int = 10;
/// Since 1.1.
pub const ZKELECT_COUNTER_SEQUENCE_NEAR_WRAP: c_int = 11;
/// Since 1.2.
pub const ZKELECT_COUNTER_SESSION_TIMEOUT_BELOW_TWO_TICKS: c_int = 12;
/// Since 1.2.
pub const ZKELECT_COUNTER_CRASH_GUARD_WARNINGS: c_int = 13;
/// Since 1.2.
pub const ZKELECT_COUNTER_LEASE_LOW: c_int = 14;
/// Since 1.2.
pub const ZKELECT_COUNTER_BALANCE_MOVES: c_int = 15;
pub const ZKELECT_COUNTER__COUNT: c_int = 16;
// END gen/vocab.py counters

// enum zkelect_event_type
// BEGIN gen/vocab.py events
pub const ZKELECT_EV_ELECTED: c_int = 1;
pub const ZKELECT_EV_DEPOSED: c_int = 2;
pub const ZKELECT_EV_FOLLOWING: c_int = 3;
pub const ZKELECT_EV_SUSPENDED: c_int = 4;
pub const ZKELECT_EV_RECONNECTED: c_int = 5;
pub const ZKELECT_EV_EXPIRED: c_int = 6;
pub const ZKELECT_EV_LEADER_CHANGED: c_int = 7;
pub const ZKELECT_EV_ERROR: c_int = 8;
pub const ZKELECT_EV_RESIGNED: c_int = 9;
/// Since 1.1.
pub const ZKELECT_EV_OVERFLOW: c_int = 10;
/// Since 1.1.
pub const ZKELECT_EV_WARNING: c_int = 11;
/// Since 1.2.
pub const ZKELECT_EV_STEPPED_BACK: c_int = 12;
/// Since 1.2.
pub const ZKELECT_EV_LEASE_LOW: c_int = 13;
// END gen/vocab.py events

// enum zkelect_reason
// BEGIN gen/vocab.py reasons
pub const ZKELECT_REASON_NONE: c_int = 0;
pub const ZKELECT_REASON_RESIGNED: c_int = 1;
pub const ZKELECT_REASON_SUSPENDED: c_int = 2;
pub const ZKELECT_REASON_LEASE_ENDED: c_int = 3;
pub const ZKELECT_REASON_EXPIRED: c_int = 4;
pub const ZKELECT_REASON_NODE_DELETED: c_int = 5;
pub const ZKELECT_REASON_CLOSED: c_int = 6;
pub const ZKELECT_REASON_TRANSFERRED: c_int = 7;
// END gen/vocab.py reasons

// enum zkelect_log_level (since 1.1)
pub const ZKELECT_LOG_NONE: c_int = 0;
pub const ZKELECT_LOG_ERROR: c_int = 1;
pub const ZKELECT_LOG_WARN: c_int = 2;
pub const ZKELECT_LOG_INFO: c_int = 3;
pub const ZKELECT_LOG_DEBUG: c_int = 4;

extern "C" {
    // Errors and version
    pub fn zkelect_strerror(code: c_int) -> *const c_char;
    pub fn zkelect_err_name(code: c_int) -> *const c_char;
    /// Since 1.1.
    pub fn zkelect_last_error() -> *const c_char;
    pub fn zkelect_last_error_code() -> c_int;
    /// Since 1.1.
    pub fn zkelect_set_log_cb(level: c_int, cb: zkelect_log_cb, opaque: *mut c_void) -> c_int;
    pub fn zkelect_version() -> c_uint;
    pub fn zkelect_version_string() -> *const c_char;

    // Configuration
    pub fn zkelect_conf_new() -> *mut zkelect_conf_t;
    pub fn zkelect_conf_set(conf: *mut zkelect_conf_t, key: *const c_char, value: *const c_char, errbuf: *mut c_char, errlen: size_t) -> c_int;
    pub fn zkelect_conf_get(conf: *const zkelect_conf_t, key: *const c_char, buf: *mut c_char, len: *mut size_t) -> c_int;
    pub fn zkelect_conf_destroy(conf: *mut zkelect_conf_t);
    pub fn zkelect_conf_key(index: size_t) -> *const c_char;

    // Client
    pub fn zkelect_client_new(conf: *const zkelect_conf_t, errbuf: *mut c_char, errlen: size_t) -> *mut zkelect_client_t;
    pub fn zkelect_client_destroy(client: *mut zkelect_client_t) -> c_int;
    /// Since 1.2.
    pub fn zkelect_client_shutdown(client: *mut zkelect_client_t, timeout_ms: c_int) -> c_int;
    pub fn zkelect_client_await_connected(client: *mut zkelect_client_t, timeout_ms: c_int) -> c_int;
    pub fn zkelect_client_is_connected(client: *const zkelect_client_t) -> c_int;
    pub fn zkelect_client_session_timeout_ms(client: *const zkelect_client_t) -> c_int;
    /// Since 1.2.
    pub fn zkelect_client_lease_margin_ms(client: *const zkelect_client_t) -> c_int;
    /// Since 1.2.
    pub fn zkelect_client_crash_guard_wait(client: *mut zkelect_client_t, pid: c_int) -> c_int;
    pub fn zkelect_client_session_id(client: *const zkelect_client_t) -> i64;
    pub fn zkelect_client_counter(client: *const zkelect_client_t, counter: c_int, value: *mut u64) -> c_int;
    pub fn zkelect_counter_name(counter: c_int) -> *const c_char;

    // Election
    pub fn zkelect_election_new(client: *mut zkelect_client_t, path: *const c_char, participant_id: *const c_char, errbuf: *mut c_char, errlen: size_t) -> *mut zkelect_election_t;
    pub fn zkelect_election_destroy(election: *mut zkelect_election_t) -> c_int;
    pub fn zkelect_volunteer(election: *mut zkelect_election_t) -> c_int;
    pub fn zkelect_resign(election: *mut zkelect_election_t) -> c_int;
    pub fn zkelect_requeue(election: *mut zkelect_election_t) -> c_int;
    pub fn zkelect_release(election: *mut zkelect_election_t) -> c_int;
    pub fn zkelect_is_draining(election: *const zkelect_election_t) -> c_int;
    pub fn zkelect_is_leader(election: *const zkelect_election_t) -> c_int;
    pub fn zkelect_lease_left_ms(election: *const zkelect_election_t) -> i64;
    pub fn zkelect_is_leader_for(election: *const zkelect_election_t, min_ms: c_int) -> c_int;
    pub fn zkelect_leader_answer(election: *const zkelect_election_t, buf: *mut c_char, len: *mut size_t) -> c_int;
    pub fn zkelect_await_leader(election: *mut zkelect_election_t, timeout_ms: c_int) -> c_int;
    pub fn zkelect_transfer(
        election: *mut zkelect_election_t,
        target_id: *const c_char,
        timeout_ms: c_int,
    ) -> c_int;
    pub fn zkelect_client_transfer(
        client: *mut zkelect_client_t,
        path: *const c_char,
        target_id: *const c_char,
        timeout_ms: c_int,
    ) -> c_int;
    pub fn zkelect_fencing_token(election: *const zkelect_election_t, token: *mut i64) -> c_int;
    pub fn zkelect_fenced_ops_new() -> *mut zkelect_fenced_ops_t;
    pub fn zkelect_fenced_ops_set(
        ops: *mut zkelect_fenced_ops_t,
        path: *const c_char,
        data: *const c_void,
        len: size_t,
        version: i32,
    ) -> c_int;
    pub fn zkelect_fenced_ops_create(
        ops: *mut zkelect_fenced_ops_t,
        path: *const c_char,
        data: *const c_void,
        len: size_t,
        flags: c_int,
    ) -> c_int;
    pub fn zkelect_fenced_ops_delete(ops: *mut zkelect_fenced_ops_t, path: *const c_char, version: i32) -> c_int;
    pub fn zkelect_fenced_ops_count(ops: *const zkelect_fenced_ops_t) -> size_t;
    pub fn zkelect_fenced_ops_failed(ops: *const zkelect_fenced_ops_t, zk_rc: *mut c_int) -> c_int;
    pub fn zkelect_fenced_ops_destroy(ops: *mut zkelect_fenced_ops_t);
    pub fn zkelect_fenced_commit(
        election: *mut zkelect_election_t,
        ops: *mut zkelect_fenced_ops_t,
        timeout_ms: c_int,
    ) -> c_int;
    pub fn zkelect_client_fenced_commit(
        client: *mut zkelect_client_t,
        node: *const c_char,
        token: i64,
        ops: *mut zkelect_fenced_ops_t,
        timeout_ms: c_int,
    ) -> c_int;
    pub fn zkelect_leader_id(election: *mut zkelect_election_t, buf: *mut c_char, len: size_t) -> c_int;
    pub fn zkelect_participants(election: *mut zkelect_election_t, errbuf: *mut c_char, errlen: size_t) -> *mut zkelect_participants_t;
    pub fn zkelect_client_participants(client: *mut zkelect_client_t, path: *const c_char, errbuf: *mut c_char, errlen: size_t) -> *mut zkelect_participants_t;
    pub fn zkelect_participants_count(p: *const zkelect_participants_t) -> size_t;
    pub fn zkelect_participants_id(p: *const zkelect_participants_t, i: size_t) -> *const c_char;
    pub fn zkelect_participants_node(p: *const zkelect_participants_t, i: size_t) -> *const c_char;
    pub fn zkelect_participants_token(p: *const zkelect_participants_t, i: size_t) -> i64;
    pub fn zkelect_participants_ctime_ms(p: *const zkelect_participants_t, i: size_t) -> i64;
    pub fn zkelect_participants_priority(p: *const zkelect_participants_t, i: size_t) -> c_int;
    pub fn zkelect_event_priority(event: *const zkelect_event_t) -> c_int;
    pub fn zkelect_participants_destroy(p: *mut zkelect_participants_t);

    // Since 1.2.
    pub fn zkelect_election_stats(election: *mut zkelect_election_t, errbuf: *mut c_char, errlen: size_t) -> *mut zkelect_stats_t;
    pub fn zkelect_client_stats(client: *mut zkelect_client_t, errbuf: *mut c_char, errlen: size_t) -> *mut zkelect_stats_t;
    pub fn zkelect_client_group_stats(client: *mut zkelect_client_t, group: *const c_char, errbuf: *mut c_char, errlen: size_t) -> *mut zkelect_stats_t;
    pub fn zkelect_stats_json(stats: *const zkelect_stats_t) -> *const c_char;
    pub fn zkelect_stats_destroy(stats: *mut zkelect_stats_t);

    // Events
    pub fn zkelect_next_event(election: *mut zkelect_election_t, timeout_ms: c_int) -> *mut zkelect_event_t;
    pub fn zkelect_event_fd(election: *mut zkelect_election_t) -> c_int;
    pub fn zkelect_wake(election: *mut zkelect_election_t) -> c_int;
    pub fn zkelect_set_event_cb(election: *mut zkelect_election_t, cb: zkelect_event_cb, opaque: *mut c_void) -> c_int;
    pub fn zkelect_dispatch(election: *mut zkelect_election_t, timeout_ms: c_int) -> c_int;
    pub fn zkelect_set_background_event_cb(election: *mut zkelect_election_t, cb: zkelect_event_cb, opaque: *mut c_void) -> c_int;
    pub fn zkelect_event_type(event: *const zkelect_event_t) -> c_int;
    pub fn zkelect_event_reason(event: *const zkelect_event_t) -> c_int;
    pub fn zkelect_event_token(event: *const zkelect_event_t) -> i64;
    pub fn zkelect_event_error(event: *const zkelect_event_t) -> c_int;
    pub fn zkelect_event_zk_rc(event: *const zkelect_event_t) -> c_int;
    pub fn zkelect_event_message(event: *const zkelect_event_t) -> *const c_char;
    pub fn zkelect_event_node(event: *const zkelect_event_t) -> *const c_char;
    pub fn zkelect_event_id(event: *const zkelect_event_t) -> *const c_char;
    pub fn zkelect_event_time_ns(event: *const zkelect_event_t) -> i64;
    pub fn zkelect_event_type_name(type_: c_int) -> *const c_char;
    pub fn zkelect_reason_name(reason: c_int) -> *const c_char;
    pub fn zkelect_event_destroy(event: *mut zkelect_event_t);

    // Observer
    pub fn zkelect_observer_new(client: *mut zkelect_client_t, path: *const c_char, errbuf: *mut c_char, errlen: size_t) -> *mut zkelect_observer_t;
    pub fn zkelect_observer_next_event(observer: *mut zkelect_observer_t, timeout_ms: c_int) -> *mut zkelect_event_t;
    pub fn zkelect_observer_event_fd(observer: *mut zkelect_observer_t) -> c_int;
    pub fn zkelect_observer_wake(observer: *mut zkelect_observer_t) -> c_int;
    pub fn zkelect_observer_destroy(observer: *mut zkelect_observer_t) -> c_int;
}
