/*
 * zkelect.h - leader election on Apache ZooKeeper, as a stable C ABI.
 *
 * This is the only public header of libzkelect. It is plain C99, includes no
 * ZooKeeper or C++ header, and exposes no struct: every object is an opaque
 * handle reached through functions, so the ABI can stay fixed while the
 * implementation changes.
 *
 * Conventions that hold for every function below unless its comment says
 * otherwise:
 *
 *  - Errors. A fallible function returns int: 0 (ZKELECT_OK) on success or a
 *    negative ZKELECT_E* code. zkelect_strerror() and zkelect_err_name() turn
 *    a code into text. Constructors return NULL on failure and write a
 *    NUL-terminated message into the caller's errbuf (when errbuf is not NULL
 *    and errlen > 0; the message is truncated to fit). Failures that happen
 *    later, on the library's own threads, arrive as ZKELECT_EV_ERROR events.
 *
 *  - Ownership. A *_new function returns an object the caller owns and frees
 *    with the matching *_destroy. A `const char *` returned by an accessor is
 *    borrowed: it stays valid until the object it came from is destroyed. The
 *    library never frees memory the caller allocated, and the caller never
 *    free()s memory the library allocated.
 *
 *  - Threads. Every function may be called from any thread, concurrently with
 *    any other, except a *_destroy, which must be the last call on its handle
 *    (no other call on that handle may run during or after it). No function
 *    calls back into user code except zkelect_dispatch() (on the calling
 *    thread), the opt-in background callback and the log callback (each on a
 *    thread of the library's own, never one of ZooKeeper's). A handle made
 *    before fork() is unusable in the child: there, calls on it fail with
 *    ZKELECT_ESTATE and zkelect_is_leader() answers 0. See docs/threading.md.
 *
 *  - Strings are NUL-terminated UTF-8.
 */
#ifndef ZKELECT_H
#define ZKELECT_H

#include <stddef.h>
#include <stdint.h>

#include <zkelect/version.h>

#if defined(_WIN32) && defined(ZKELECT_BUILDING)
#define ZKELECT_API __declspec(dllexport)
#elif defined(_WIN32) && !defined(ZKELECT_STATIC)
#define ZKELECT_API __declspec(dllimport)
#elif defined(__GNUC__) && defined(ZKELECT_BUILDING)
#define ZKELECT_API __attribute__((visibility("default")))
#else
#define ZKELECT_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Error codes. Append-only: a code never changes its number or meaning.   */
/* ------------------------------------------------------------------------ */

enum zkelect_err {
    ZKELECT_OK = 0,
    /** An argument is invalid (NULL handle, bad path, bad option value...). */
    ZKELECT_EINVAL = -1,
    /** Memory could not be allocated. */
    ZKELECT_ENOMEM = -2,
    /** The call does not fit the handle's state (resign when not a
     *  candidate, volunteer when already one, await on an idle candidacy). */
    ZKELECT_ESTATE = -3,
    /** The handle or its client is closing. */
    ZKELECT_ECLOSED = -4,
    /** The timeout given to the call ran out. */
    ZKELECT_ETIMEDOUT = -5,
    /** The ZooKeeper connection was lost while the call needed it. */
    ZKELECT_ECONNLOSS = -6,
    /** The ZooKeeper session expired. */
    ZKELECT_ESESSION_EXPIRED = -7,
    /** Authentication failed or an ACL denied an operation. */
    ZKELECT_EAUTH = -8,
    /** This build (or its libzookeeper) does not support the request. */
    ZKELECT_ENOTSUP = -9,
    /** destroy was called from inside a callback of the same handle. */
    ZKELECT_EDEADLK = -10,
    /** ZooKeeper returned an error without a closer match (see the event's
     *  zk_rc for ZooKeeper's own code). */
    ZKELECT_EZK = -11,
    /** An internal error (a bug): the message says where. */
    ZKELECT_EINTERNAL = -12,
    /** The election has no candidate, hence no leader. */
    ZKELECT_ENOLEADER = -13,
    /** The caller's buffer is too small for the answer. */
    ZKELECT_ERANGE = -14,
    /** The handle is not the leader (e.g. zkelect_fencing_token). */
    ZKELECT_ENOTLEADER = -15,
    /** No candidate of the election has the id given (zkelect_transfer):
     *  nothing was changed. Since 1.2. */
    ZKELECT_ENOCANDIDATE = -16,
    /** The candidate a transfer was handing leadership to left the
     *  election (or was not first in line when the leader stepped back): the
     *  leadership went to the next candidate in line, as after a resign
     *  (zkelect_transfer). Since 1.2. */
    ZKELECT_ETARGET_LOST = -17,
    /** A configured limit of the client would be exceeded: a new candidate
     *  node would bring the client's candidate nodes above
     *  zk.session.nodes.max.bytes (zkelect_volunteer, zkelect_requeue). Nothing
     *  was done. Since 1.2. */
    ZKELECT_ELIMIT = -18,
    /** A fenced write (zkelect_fenced_commit) was refused by ZooKeeper: this
     *  candidacy's node is gone or changed, so the term it led is over (a
     *  successor may lead). Nothing of the write was committed. Since 1.2. */
    ZKELECT_EFENCED = -19
};

/** A static description of code ("unknown error" for an unknown code).
 *  Never NULL; never freed. Any thread. */
ZKELECT_API const char *zkelect_strerror(int code);

/** The symbolic name of code ("ZKELECT_EINVAL"), "ZKELECT_EUNKNOWN" for an
 *  unknown code. Never NULL; never freed. Any thread. */
ZKELECT_API const char *zkelect_err_name(int code);

/**
 * Why the last call of this thread that failed, failed: a message that
 * names the problem, beginning with the code's name ("ZKELECT_EINVAL: ...").
 * Every function that returns a negative code or NULL on failure sets it;
 * a call that succeeds leaves it as it was (like errno), so read it right
 * after the failure. Functions with an errbuf write the same message there.
 * The string belongs to the calling thread and stays valid until its next
 * failing call; never NULL ("" before any failure). Since 1.1.
 */
ZKELECT_API const char *zkelect_last_error(void);

/**
 * The code of the same failure as zkelect_last_error()'s message (a
 * negative ZKELECT_E* code), for a caller that branches on it without
 * parsing the text: after a NULL from a function that returns a handle
 * (zkelect_client_new(), zkelect_election_new(), ...) it is the only way
 * to the code. 0 before this thread's first failure; a call that
 * succeeds leaves it as it was. Any thread (per thread, as the message).
 * Since 1.2.
 */
ZKELECT_API int zkelect_last_error_code(void);

/* ------------------------------------------------------------------------ */
/* Log                                                                      */
/* ------------------------------------------------------------------------ */

/** Levels of the log, most severe first. */
enum zkelect_log_level {
    ZKELECT_LOG_NONE = 0,
    ZKELECT_LOG_ERROR = 1,
    ZKELECT_LOG_WARN = 2,
    ZKELECT_LOG_INFO = 3,
    ZKELECT_LOG_DEBUG = 4
};

/**
 * Receives one log line (without a trailing newline; valid during the call
 * only) of the given ZKELECT_LOG_* level. Called on a thread of the
 * library's own (never one of ZooKeeper's, never a client's loop), one call
 * at a time, concurrently with the host's code. It may call any zkelect
 * function, zkelect_set_log_cb and zkelect_client_new included. A slow
 * callback delays only the log: lines wait in a queue of 1024, and past
 * that they are dropped and counted; the count arrives, where the gap is, as
 * a line of its own ("libzkelect: N log records dropped: ...", at level
 * WARN, or ERROR when only errors are asked for).
 */
typedef void (*zkelect_log_cb)(int level, const char *message, void *opaque);

/**
 * Where the log of every client of this process goes. By default nowhere:
 * the library never writes to its host's stderr. cb receives the lines of
 * `level` and more severe; level ZKELECT_LOG_NONE or cb NULL turns the log
 * off. Today the log is the ZooKeeper client's own (connection attempts,
 * server errors); its level is process-wide in libzookeeper, so this call is
 * too (the "zk.log.level" key, from 1.0, sets the same level when a client
 * is made). Any thread, the log callback's included; takes effect at once
 * for every client. Lines still queued when the log is turned off are
 * dropped. Once it returns (called from anywhere but the log callback
 * itself), the previous callback is not running and will not be called
 * again: its opaque may be freed. Returns 0, or ZKELECT_EINVAL for a level
 * outside ZKELECT_LOG_NONE..ZKELECT_LOG_DEBUG.
 * Since 1.1.
 */
ZKELECT_API int zkelect_set_log_cb(int level, zkelect_log_cb cb, void *opaque);

/* ------------------------------------------------------------------------ */
/* Version                                                                  */
/* ------------------------------------------------------------------------ */

/** The runtime library's version as ZKELECT_VERSION_NUMBER encodes it
 *  ((major << 16) | (minor << 8) | patch). Compare with the compile-time
 *  ZKELECT_VERSION_NUMBER to detect a mismatched install. */
ZKELECT_API unsigned zkelect_version(void);

/** The runtime library's version as "major.minor.patch". Static string. */
ZKELECT_API const char *zkelect_version_string(void);

/* ------------------------------------------------------------------------ */
/* Handles                                                                  */
/* ------------------------------------------------------------------------ */

/** Configuration: string keys and values. */
typedef struct zkelect_conf zkelect_conf_t;
/** One ZooKeeper session, shared by any number of elections and observers. */
typedef struct zkelect_client zkelect_client_t;
/** One candidacy of one participant on one election path. */
typedef struct zkelect_election zkelect_election_t;
/** A read-only watcher of an election's leader. */
typedef struct zkelect_observer zkelect_observer_t;
/** One event taken from a handle's queue. */
typedef struct zkelect_event zkelect_event_t;
/** A snapshot of an election's candidates, in queue order. */
typedef struct zkelect_participants zkelect_participants_t;

/* ------------------------------------------------------------------------ */
/* Configuration                                                            */
/* ------------------------------------------------------------------------ */

/** Longest participant id, in bytes (excluding the terminating NUL). */
#define ZKELECT_ID_MAX 1024

/**
 * A new, empty configuration with every default in place.
 * Returns NULL only when memory is exhausted. The caller owns the result
 * and frees it with zkelect_conf_destroy(); zkelect_client_new() copies it,
 * so it may be destroyed right after.
 *
 * Keys (all values are strings):
 *  - "zk.hosts"              required. ZooKeeper connect string
 *                            "host:port[,host:port...][/chroot]".
 *  - "zk.session.timeout.ms" requested session timeout, 1000..3600000
 *                            (default 10000). The server may negotiate it
 *                            into its own [2, 20] x tickTime window.
 *  - "zk.connect.timeout.ms" how long zkelect_client_await_connected() waits
 *                            by default (timeout_ms < 0), 1..3600000
 *                            (default 15000).
 *  - "zk.auth"               "scheme:credentials", e.g. "digest:user:pass";
 *                            added to the session on every connect.
 *  - "election.acl"          ACL of the nodes the library creates: "open"
 *                            (default, world:anyone all) or "creator" (only
 *                            the authenticated identity of zk.auth or of
 *                            zk.sasl.*, e.g. sasl:alice; needs one of them).
 *  - "election.priority"     0..255 (default 0: no preference): how much
 *                            this client's candidacies want to lead. A
 *                            candidate whose priority is above the leader's,
 *                            after following for
 *                            election.priority.holddown.ms, asks the leader to
 *                            transfer to it (docs/semantics.md, "Preferred
 *                            leaders"). Equal priorities keep the queue order.
 *  - "election.priority.holddown.ms" 100..3600000 (default 30000): how long a
 *                            candidate of higher priority than the leader's
 *                            follows before it asks for the lead, and at
 *                            least how long between two of its requests (a
 *                            restarting host does not make leadership flap).
 *  - "transfer.drain.ms"     0..86400000 (default 0: no drain): how long a
 *                            leader deposed by a transfer (its own, one asked
 *                            from outside, or a priority takeover) may keep
 *                            its node after its DEPOSED event while it stops
 *                            its work: the target leads only once the holder
 *                            calls zkelect_release() or this bound passes
 *                            (plus the lease margin). zkelect_is_draining()
 *                            says while the node surely stands. 0: the node
 *                            is deleted at once (docs/semantics.md, "Draining
 *                            before the hand-over").
 *  - "lease.warn.percent"    0..99 (default 0: never): a leader whose lease
 *                            has less than this share of its length (session
 *                            timeout / 2 less the margin) left, because the
 *                            keepalive that renews it is late, gets a
 *                            LEASE_LOW event, once per term until a renewal
 *                            clears it. At rest a renewal comes every T/6
 *                            and the lowest left is about 60% of the length
 *                            (less the round trip): 50 warns when a reply is
 *                            about T/17 late, 30 when about T/7 late.
 *  - "leadership"            "lease" (default) or "strict"; see
 *                            docs/semantics.md. Strict deposes at the first
 *                            disconnect; lease keeps leading while the lease
 *                            earned by the last write still runs.
 *  - "lease.margin.ms"       safety margin subtracted from the lease,
 *                            1..60000 (default: 1/20 of the session timeout,
 *                            at least 10; zkelect_client_lease_margin_ms()
 *                            reads the one in force). It must be below half
 *                            the session timeout: zkelect_client_new refuses one that is
 *                            not below half of zk.session.timeout.ms, and a
 *                            candidacy whose server negotiates a timeout for
 *                            which it is too large stops with an ERROR event
 *                            (ZKELECT_EINVAL) instead of waiting for ever.
 *  - "zk.session.nodes.max.bytes" 0..2147483647 (default 1000000; 0: no
 *                            bound): the most bytes this client's candidate
 *                            nodes may add up to in its session's closing
 *                            transaction. ZooKeeper ends a session (close or
 *                            expiry) with ONE transaction that lists every
 *                            ephemeral node of the session; one larger than
 *                            the servers' jute.maxbuffer (1 MB by default,
 *                            0xfffff bytes) cannot be written or read back:
 *                            the ensemble loses its quorum (docs/limits.md,
 *                            "Many elections on one client"). Each candidacy
 *                            counts from its volunteer until its resign or
 *                            destroy has settled (its node gone) the length
 *                            of its node's longest full path as the servers
 *                            see it (the chroot of zk.hosts, the election
 *                            path, "/", the 57-byte longest node name) plus 4
 *                            (the string's length prefix); a volunteer while
 *                            its resign is under way counts both nodes until
 *                            the old one is gone. zkelect_volunteer() and
 *                            zkelect_requeue() return ZKELECT_ELIMIT, doing
 *                            nothing, when the candidacy's node would bring the
 *                            total above the bound. A transfer's step backs are
 *                            not refused: they count both nodes for the round
 *                            trip of the old one's delete, above the bound if
 *                            need be. 0 only for servers whose jute.maxbuffer
 *                            is raised to match.
 *  - "events.queue.max"      0 or 2..1024 (default 1024,
 *                            ZKELECT_EVENT_QUEUE_MAX): the most events each
 *                            election and observer handle of this client keeps
 *                            unread. When an event arrives at a full queue the
 *                            oldest go and one ZKELECT_EV_OVERFLOW event stands
 *                            for them, as with the default. 0: no events are
 *                            kept at all (zkelect_next_event() finds none, the
 *                            event fd never becomes readable, callbacks are
 *                            never called), for a program that only asks
 *                            zkelect_is_leader(): a handle's unread events cost
 *                            some 200 bytes each, and every reconnect adds two
 *                            to each election of the session (docs/limits.md,
 *                            "Event queues are bounded").
 *  - "zk.log.level"          "keep" (default: leave it as it is), "none",
 *                            "error", "warn", "info", "debug": libzookeeper's
 *                            log level, which is process-global (the last
 *                            client created sets it). The log itself goes to
 *                            the callback of zkelect_set_log_cb, or nowhere;
 *                            never to stderr. Prefer zkelect_set_log_cb.
 *  - "zk.probe.ticktime"     "true" (default) or "false". After each new
 *                            connection, ask the connected server for its
 *                            tickTime with the conf four-letter word (one
 *                            short extra connection to the same address,
 *                            at most 1 s, 16 KiB read). A server that grants
 *                            a session timeout below 2 x tickTime reports
 *                            touches too seldom for the full lease: it is
 *                            shortened, or not taken (a WARNING says so);
 *                            docs/semantics.md. A server that does not
 *                            whitelist conf (4lw.commands.whitelist) costs
 *                            nothing. "false" for a site that forbids the
 *                            extra connection or hides conf; the client
 *                            then assumes T >= 2 x tickTime, as before 1.2.
 *                            Not made over TLS (zk.tls.*): assumed there.
 *  - "zk.tls.ca"             TLS to ZooKeeper's secureClientPort: PEM file
 *                            of the CA that signed the servers'
 *                            certificates. Alone, TLS without a client
 *                            certificate (servers with ssl.clientAuth=none;
 *                            the bundled client only); with zk.tls.cert and
 *                            zk.tls.key, which go together, TLS that
 *                            presents one (no ',' in them). Needs a
 *                            ZooKeeper C client with TLS: a default build
 *                            and the Debian packages bundle one
 *                            (-Dzookeeper=bundled or auto); Debian 12's
 *                            libzookeeper-mt 3.8.0 (-Dzookeeper=system) has
 *                            none, and there a non-empty value of any
 *                            zk.tls.* key fails with ZKELECT_ENOTSUP (a local
 *                            TLS tunnel does the job: docs/tls.md). With TLS,
 *                            zkelect_client_new() tries one handshake first: a
 *                            certificate refused either way fails it with
 *                            ZKELECT_EAUTH and the cause.
 *  - "zk.tls.cert"           PEM file of this client's certificate, for
 *                            servers that ask for one (ssl.clientAuth=need,
 *                            ZooKeeper's default); with zk.tls.key.
 *  - "zk.tls.key"            PEM file of this client's key.
 *  - "zk.tls.key.password"   the key's password, if it has one.
 *  - "zk.tls.hostname.verify" "true" (default) or "false". With TLS, the
 *                            first handshake checks that the server's
 *                            certificate is for the host name or IP address
 *                            zk.hosts gives it (ZooKeeper's Java client's
 *                            zookeeper.ssl.hostnameVerification); a mismatch
 *                            fails zkelect_client_new() with ZKELECT_EAUTH.
 *                            "false" checks the chain only. ZooKeeper's C
 *                            client checks no name on the session's own
 *                            connections either way (docs/tls.md).
 *  - "zk.hosts.follow"       "true" (default) or "false". Follow the
 *                            ensemble's membership: after each connection the
 *                            client reads /zookeeper/config (ZooKeeper 3.5+
 *                            publishes the servers there, and dynamic
 *                            reconfiguration changes it) and connects from
 *                            then on to the servers it names, so an ensemble
 *                            replaced one host at a time keeps every session.
 *                            A server older than 3.5, a config without client
 *                            addresses, or one that cannot be read changes
 *                            nothing. "false" keeps the zk.hosts list as given.
 *  - "crash.guard"           "auto" (default), "on" or "off": the crash
 *                            guard, one small helper process per process
 *                            (zkelect-guard) that closes this client's
 *                            sessions as soon as the process dies (killed,
 *                            crashed, exited without closing), so that the
 *                            next leader takes over within
 *                            crash.guard.delay.ms instead of one session
 *                            timeout (docs/semantics.md). "auto": when the
 *                            guard cannot run (no helper binary, a PID
 *                            limit), the client works without it and its
 *                            candidacies get a WARNING event; "on":
 *                            zkelect_client_new fails instead; "off": no
 *                            guard. With zk.sasl.* the guard authenticates as
 *                            the client does.
 *  - "crash.guard.delay.ms"  0..150 (default 100): the longest the crash
 *                            guard waits, after the process died, for what the
 *                            dead process sent over TCP to be acknowledged by
 *                            its receivers before it closes the sessions; with
 *                            nothing unacknowledged it closes at once
 *                            (docs/semantics.md).
 *  - "zk.sasl.mechanism"     SASL authentication to ZooKeeper (servers with
 *                            authProvider.sasl, often enforce.auth.schemes=sasl):
 *                            the Cyrus SASL mechanism, e.g. "DIGEST-MD5"
 *                            (zk.sasl.user and zk.sasl.password.file) or
 *                            "GSSAPI" (Kerberos: credentials from the ticket
 *                            cache, or a keytab named by KRB5_CLIENT_KTNAME);
 *                            empty (default): no SASL. Works with zk.tls.* too.
 *                            Needs a ZooKeeper C client with SASL: a default
 *                            build bundles one; -Dzookeeper=system on Debian 12
 *                            has none, and there a non-empty value of any
 *                            zk.sasl.* key fails with ZKELECT_ENOTSUP.
 *                            Credentials the server refuses, an unknown
 *                            mechanism, missing Kerberos credentials, or a
 *                            server that requires SASL of a client without it:
 *                            ZKELECT_EAUTH with the cause (docs/security.md).
 *  - "zk.sasl.user"          the SASL user name (DIGEST-MD5: the name in
 *                            the server's JAAS file; GSSAPI: leave empty).
 *  - "zk.sasl.password.file" a file whose first line is the SASL password
 *                            (DIGEST-MD5). Read when the client is created;
 *                            the password itself is never shown, logged or
 *                            put in a message.
 *  - "zk.sasl.service"       the service name of the servers' principal
 *                            (default "zookeeper", as the servers' own
 *                            zookeeper.sasl.client.username).
 *  - "zk.sasl.host"          the host part of the servers' principal.
 *                            Default as ZooKeeper's own clients choose:
 *                            "zk-sasl-md5" for DIGEST-MD5, else the host of
 *                            zk.hosts' first address (GSSAPI asks for
 *                            zookeeper/<host>@REALM).
 *  - "crash.guard.socket"    the Unix socket of a crash guard service
 *                            (zkelect-guard --serve; docs/design.md, "The
 *                            guard service"), e.g. /run/zkelect/guard.sock;
 *                            empty (default): none. Set, the process's
 *                            sessions are guarded by that service, which
 *                            lives outside the process's PID namespace and
 *                            control group and so outlives their deaths
 *                            (a container whose init exits with the app, a
 *                            unit killed as one). If the socket is missing or
 *                            refuses, the process starts its own guard as
 *                            without it, and its candidacies get a WARNING
 *                            that names the cause; it asks the service again
 *                            after 1 s, then at a pause doubling up to a
 *                            minute, and hands its sessions over once the
 *                            service answers (one more WARNING).
 *  - "balance.group"         the ZooKeeper path of a balanced group;
 *                            empty (default): none. Set, the leaderships of
 *                            this client's elections are spread evenly over
 *                            the live clients of the group: each keeps an
 *                            ephemeral member node under the path (made with
 *                            its parents) saying how many of its candidacies
 *                            lead, and one that leads more than its share
 *                            hands the surplus, one transfer each, to those
 *                            below theirs (docs/design.md, "Balanced
 *                            groups"). Every client of a group should hold
 *                            the same elections.
 *  - "balance.moves.max"     1..1024 (default 128): at most this many of a
 *                            balanced client's transfers run at once (each
 *                            waits on a few round trips of its session).
 */
ZKELECT_API zkelect_conf_t *zkelect_conf_new(void);

/**
 * Set key to value (both copied). Returns 0, or ZKELECT_EINVAL with a
 * message in errbuf naming the key when the key is unknown, the value does
 * not parse, or conf/key/value is NULL; ZKELECT_ENOTSUP with a message
 * naming the alternative when this build cannot use the key (zk.tls.*
 * without TLS in libzookeeper). On error conf is unchanged.
 * Not safe concurrently with another call on the same conf.
 */
ZKELECT_API int zkelect_conf_set(zkelect_conf_t *conf, const char *key, const char *value,
                                 char *errbuf, size_t errlen);

/**
 * Copy the current value of key into buf (NUL-terminated). *len is the size
 * of buf on input and the length the value needs (including the NUL) on
 * output. Returns 0, ZKELECT_ERANGE when buf is too small (buf is left
 * untouched, *len says how much is needed), ZKELECT_EINVAL for an unknown key
 * or NULL argument.
 */
ZKELECT_API int zkelect_conf_get(const zkelect_conf_t *conf, const char *key, char *buf,
                                 size_t *len);

/** Free conf. NULL is a no-op. */
ZKELECT_API void zkelect_conf_destroy(zkelect_conf_t *conf);

/**
 * The name of configuration key number index (0, 1, ... in a fixed order),
 * or NULL past the last: with zkelect_conf_get() on a new configuration it
 * lists every key and its default, on a configured one every value in
 * force. The string is static; never freed. Any thread. Since 1.2.
 */
ZKELECT_API const char *zkelect_conf_key(size_t index);

/* ------------------------------------------------------------------------ */
/* Client: one ZooKeeper session                                            */
/* ------------------------------------------------------------------------ */

/**
 * Start a ZooKeeper session with the settings of conf (copied; the caller
 * keeps ownership of conf). Does not wait for the connection: elections made
 * on the client before it connects start once it does. When the session
 * expires, the client opens a new one by itself and every candidacy on it
 * volunteers again.
 *
 * Returns NULL with a message in errbuf when conf is NULL, lacks zk.hosts, has
 * a malformed connect string, or ZooKeeper's client cannot be started.
 * The caller owns the result and frees it with zkelect_client_destroy().
 *
 * With zk.tls.*, it first makes one TLS handshake with the servers, in
 * turn, within zk.connect.timeout.ms and at most 3 s (servers that do not
 * answer are left to the session's own retries). A server certificate that
 * zk.tls.ca does not vouch for, or a client certificate a server refuses,
 * returns NULL, zkelect_last_error() beginning with ZKELECT_EAUTH, and the
 * cause in errbuf; a zk.tls.* file that cannot be used, ZKELECT_EINVAL.
 * Without this, ZooKeeper's client would retry the failing handshake
 * several times a second for ever.
 */
ZKELECT_API zkelect_client_t *zkelect_client_new(const zkelect_conf_t *conf, char *errbuf,
                                                 size_t errlen);

/**
 * Close the session and free the client. Every election and observer made on
 * it must have been destroyed first (ZKELECT_ESTATE otherwise, and nothing is
 * freed). Closing the session makes ZooKeeper remove the client's nodes at
 * once. Blocks until ZooKeeper's and the library's threads are joined; from
 * inside a callback of one of its elections returns ZKELECT_EDEADLK.
 * NULL returns ZKELECT_EINVAL. In a child of fork(), for a client made
 * before it, returns ZKELECT_ESTATE and frees nothing, on purpose: closing
 * would close the parent's session (the socket is shared) and join threads
 * that are not in the child.
 */
ZKELECT_API int zkelect_client_destroy(zkelect_client_t *client);

/**
 * End every election and observer of the client at once, then its session:
 * the one call a program that holds many elections makes on its way out.
 * Destroying E elections one by one costs E round trips (each destroy
 * waits for its own delete); this costs about one, plus the servers' work
 * on E deletes sent back to back.
 *
 * In order: every election of the client stops leading
 * (zkelect_is_leader() answers 0 on each before any delete is sent, so
 * nowhere can a successor lead beside it); each candidacy's node is
 * deleted, all the deletes sent without waiting for one another; every
 * observer stops; once the deletes are answered (or timeout_ms has
 * passed) the session is closed, which makes ZooKeeper remove whatever of
 * the client's is left. Each election emits what zkelect_resign() would:
 * DEPOSED (reason RESIGNED) for a leader at once, then RESIGNED once its
 * node is gone, before this returns; one that was not taking part emits
 * nothing. Those events can still be read (zkelect_next_event(), a
 * callback) until the handle is destroyed.
 *
 * Returns 0 when every node of the client's elections is gone (each delete
 * answered, or found gone; a node ZooKeeper refused to delete, for lack of
 * DELETE permission on its path, goes with the session's close).
 * ZKELECT_ETIMEDOUT when timeout_ms passed
 * first (zkelect_last_error() says how many were left and why): leadership
 * ended on every handle all the same, and the session's close was sent if
 * there was a connection to send it on; the nodes left go when the
 * servers end the session, at once if they took the close, else at most
 * one session timeout after they last heard from this client (when
 * another candidate may lead). The call returns within timeout_ms plus
 * the time to stop the client's loop (short: it never waits on the
 * network). timeout_ms is at most 600000; 0 sends everything, closes and
 * waits for nothing; below 0 waits up to one session timeout (the
 * negotiated one, else zk.session.timeout.ms), the bound
 * zkelect_election_destroy() waits for one delete, which a binding's close
 * passes. ZKELECT_EINVAL for NULL or a timeout above 600000;
 * ZKELECT_ECLOSED when the client was shut down already (nothing done);
 * ZKELECT_ESTATE in a child of fork() for a client made before it.
 *
 * Afterwards the handles stay valid and are the caller's to destroy, as
 * before: zkelect_election_destroy(), zkelect_observer_destroy() and then
 * zkelect_client_destroy() free them without a round trip (the client's
 * destroy still joins a session close under way, at most some 4.5 s after
 * a timeout). Until then calls on them fail cleanly: on an election
 * zkelect_volunteer(), zkelect_resign(), zkelect_requeue(),
 * zkelect_await_leader(), zkelect_transfer(), zkelect_release(),
 * zkelect_leader_id() and zkelect_fenced_commit() return ZKELECT_ECLOSED,
 * zkelect_fencing_token() ZKELECT_ENOTLEADER, zkelect_is_leader() 0; on
 * the client zkelect_client_await_connected(), zkelect_client_transfer()
 * and zkelect_client_fenced_commit() return ZKELECT_ECLOSED;
 * zkelect_election_new(), zkelect_observer_new(), zkelect_participants()
 * and zkelect_client_participants() return NULL, their message beginning
 * with ZKELECT_ECLOSED; zkelect_client_is_connected() answers 0. The
 * stats and the counters still answer.
 *
 * Any thread, an event callback's included (it never waits on one);
 * blocks. The caller keeps ownership of every handle. Calls on the
 * client's handles from other threads meanwhile either complete as before
 * or return ZKELECT_ECLOSED; a handle destroyed meanwhile returns at once
 * and its node is still waited for here. Since 1.2.
 */
ZKELECT_API int zkelect_client_shutdown(zkelect_client_t *client, int timeout_ms);

/**
 * Wait until the session is connected. timeout_ms < 0 waits for
 * zk.connect.timeout.ms. Returns 0 when connected, ZKELECT_ETIMEDOUT,
 * ZKELECT_EAUTH when authentication failed, ZKELECT_EINVAL for NULL.
 * A client without zk.tls.* that never had a session asks, on
 * ZKELECT_ETIMEDOUT, whether the servers speak TLS (one TLS hello to at
 * most three of them, at most 1 s more): a TLS-only port closes a plain
 * handshake without a word, so zkelect_last_error() then names the server
 * that answered in TLS and zk.tls.ca. Any thread; blocks.
 */
ZKELECT_API int zkelect_client_await_connected(zkelect_client_t *client, int timeout_ms);

/** 1 while the session is connected, else 0 (also for NULL). Never blocks. */
ZKELECT_API int zkelect_client_is_connected(const zkelect_client_t *client);

/** The session timeout the server negotiated, in ms; 0 before the first
 *  connection (or for NULL). */
ZKELECT_API int zkelect_client_session_timeout_ms(const zkelect_client_t *client);

/** The lease margin in force, in ms: lease.margin.ms when set, else the
 *  library's rule for the negotiated session timeout (1/20 of it, at least
 *  10). Every lease ends this much before the session's own bound
 *  (docs/semantics.md); a program that acts on leadership by the clock
 *  (zkelect run) reads it here rather than derive it. 0 before the first
 *  connection (or for NULL). Never blocks; any thread. Since 1.2. */
ZKELECT_API int zkelect_client_lease_margin_ms(const zkelect_client_t *client);

/**
 * Make the crash guard (crash.guard, docs/semantics.md) hold back the close
 * of this client's session, once this process is dead, until process `pid`
 * has ended too. For a supervisor whose helper stops the supervised work
 * when the supervisor dies: the work is then gone before the session, and
 * with it the leadership, is. `zkelect run` names its keeper, which kills
 * the command's tree when run dies, so the next leader's command cannot
 * start beside it. The guard waits at most the session timeout (then
 * ZooKeeper has expired the session anyway); the client's other sessions
 * and other clients' are not held back. It holds for the client's later
 * sessions too, until called again; pid 0 withdraws it.
 *
 * Any thread; never blocks. Returns 0 (also when the client has no guard:
 * crash.guard=off, or it could not run; then the session outlives the
 * process by the session timeout in any case), ZKELECT_EINVAL for NULL, a
 * negative pid or no such process, ZKELECT_ESTATE in a child of fork() for
 * a client made before it. Since 1.2.
 */
ZKELECT_API int zkelect_client_crash_guard_wait(zkelect_client_t *client, int pid);

/** The current ZooKeeper session id; 0 before the first connection. */
ZKELECT_API int64_t zkelect_client_session_id(const zkelect_client_t *client);

/* Counters: monotonic totals since the client was created, summed over its
 * elections. Read with zkelect_client_counter(); names from
 * zkelect_counter_name(). New counters are appended. */
enum zkelect_counter {
    /** ELECTED events */
    ZKELECT_COUNTER_TERMS_WON = 0,
    /** DEPOSED events of reason RESIGNED */
    ZKELECT_COUNTER_DEPOSED_RESIGNED = 1,
    /** DEPOSED events of reason SUSPENDED */
    ZKELECT_COUNTER_DEPOSED_SUSPENDED = 2,
    /** DEPOSED events of reason LEASE_ENDED */
    ZKELECT_COUNTER_DEPOSED_LEASE_ENDED = 3,
    /** DEPOSED events of reason EXPIRED */
    ZKELECT_COUNTER_DEPOSED_EXPIRED = 4,
    /** DEPOSED events of reason NODE_DELETED */
    ZKELECT_COUNTER_DEPOSED_NODE_DELETED = 5,
    /** DEPOSED events of reason CLOSED */
    ZKELECT_COUNTER_DEPOSED_CLOSED = 6,
    /** reconnects within a session */
    ZKELECT_COUNTER_RECONNECTS = 7,
    /** sessions expired */
    ZKELECT_COUNTER_EXPIRIES = 8,
    /** requests sent to ZooKeeper */
    ZKELECT_COUNTER_ZK_REQUESTS = 9,
    /** lease keepalives acknowledged */
    ZKELECT_COUNTER_KEEPALIVES = 10,
    /** WARNING events: the path's sequence numbers near their wrap (since 1.1) */
    ZKELECT_COUNTER_SEQUENCE_NEAR_WRAP = 11,
    /** WARNING events: a server granted a timeout below 2 x its tickTime (since 1.2) */
    ZKELECT_COUNTER_SESSION_TIMEOUT_BELOW_TWO_TICKS = 12,
    /** WARNING events: the crash guard could not start, died or was lost (since 1.2) */
    ZKELECT_COUNTER_CRASH_GUARD_WARNINGS = 13,
    /** LEASE_LOW events: a leader's lease ran low, its renewal late (since 1.2) */
    ZKELECT_COUNTER_LEASE_LOW = 14,
    /** transfers that evened out a balanced group's leaderships (since 1.2) */
    ZKELECT_COUNTER_BALANCE_MOVES = 15,
    /** How many counters there are. */
    ZKELECT_COUNTER__COUNT = 16
};

/** Read counter into *value. Returns 0, or ZKELECT_EINVAL for NULL or an
 *  unknown counter. Never blocks; any thread. */
ZKELECT_API int zkelect_client_counter(const zkelect_client_t *client, int counter,
                                       uint64_t *value);

/** "terms_won", "deposed_resigned", ...; NULL for an unknown counter. */
ZKELECT_API const char *zkelect_counter_name(int counter);

/* ------------------------------------------------------------------------ */
/* Election: one candidacy                                                  */
/* ------------------------------------------------------------------------ */

/**
 * A candidacy of participant_id (copied; non-empty UTF-8, at most
 * ZKELECT_ID_MAX bytes, with no control character: U+0000-U+001F and
 * U+007F-U+009F are refused; stored as the data of the candidate's node, as
 * Curator's LeaderLatch does)
 * on the election path `path` (copied). The path must be absolute, must not
 * end in '/', contain "//", "." or ".." components, or lie under
 * /zookeeper. It is created with its parents when missing.
 *
 * The candidacy starts idle: call zkelect_volunteer() to enter the election.
 * Several candidacies, on one client or many, may use the same path.
 *
 * Returns NULL with a message in errbuf for a NULL client, a bad path or id.
 * The caller owns the result and frees it with zkelect_election_destroy()
 * before destroying the client.
 */
ZKELECT_API zkelect_election_t *zkelect_election_new(zkelect_client_t *client, const char *path,
                                                     const char *participant_id, char *errbuf,
                                                     size_t errlen);

/**
 * Leave the election and free the handle. A leader gets a last DEPOSED
 * (reason CLOSED) event, which nobody reads since the queue is freed. The
 * candidate's node is deleted: destroy waits for the deletion to be
 * acknowledged for at most the session timeout, and not at all while the
 * client is disconnected; the client keeps retrying in the background until
 * it succeeds or the session ends (which removes the node too), also when
 * ZooKeeper refuses the delete (no DELETE permission on the path): then once
 * every session timeout, so the node goes once an operator allows it. So
 * too for a node the handle no longer knows the name of (a create whose
 * reply the broken connection lost, an old node a transfer or step back
 * left while the client was disconnected): it is found by the uuid in its
 * name, listing the path (once every session timeout while ZooKeeper
 * refuses that for lack of READ permission), and deleted.
 * Threads blocked in zkelect_next_event(), zkelect_await_leader() or
 * zkelect_dispatch() on this handle are woken (NULL, ZKELECT_ECLOSED) and
 * destroy waits for them to return before it frees anything; no call may
 * start after destroy has begun.
 * Returns 0; ZKELECT_EINVAL for NULL; ZKELECT_EDEADLK (and does nothing)
 * when it would wait for its own thread: called from inside one of this
 * handle's callbacks, however nested (a callback that called
 * zkelect_dispatch() again, a background callback that dispatched), or
 * while a thread running one of this handle's callbacks is itself waiting,
 * in a destroy of another handle, for a callback this thread runs (two
 * callbacks destroying each other's elections: one of the two destroys
 * returns ZKELECT_EDEADLK, the other completes). ZKELECT_ESTATE in a child
 * of fork() for a handle made before it: nothing is freed, on purpose (its
 * threads are not in the child and its session is the parent's). Any
 * thread.
 */
ZKELECT_API int zkelect_election_destroy(zkelect_election_t *election);

/**
 * Enter the election: create this candidacy's node and take part until
 * resigned or destroyed. Non-blocking: the outcome arrives as events
 * (FOLLOWING, ELECTED, ERROR). If the client is not connected yet, the
 * candidacy starts when it is. Called while a resign is still being carried
 * out (before its RESIGNED), it is queued behind it (since 1.2): the new
 * node is made once the old one is gone, so the events come in order:
 * RESIGNED, then FOLLOWING or ELECTED; a resign before the new node is
 * made cancels it (one RESIGNED for both). At most 1,024 candidacies of a
 * client join at once (from the create of their node to their first place
 * in line; since 1.2): past that a volunteer waits its turn, sending
 * nothing meanwhile, first asked, first served (the place this call takes
 * is kept while a resign it is queued behind finishes, and through
 * disconnections and a new session). Returns 0, ZKELECT_ESTATE when
 * already a candidate, ZKELECT_ECLOSED while closing, ZKELECT_EINVAL for
 * NULL, ZKELECT_ELIMIT (since 1.2) when this candidacy's node would bring
 * the client's candidate nodes above zk.session.nodes.max.bytes (the
 * session's end deletes them all in one ZooKeeper transaction, which must
 * fit the servers' jute.maxbuffer): nothing is done, no node is made, no
 * event comes, and zkelect_last_error() gives the sizes. The node's bytes
 * count from a volunteer that returns 0 until the candidacy's node is gone
 * (its RESIGNED, or zkelect_election_destroy() returned); a volunteer
 * while a resign is still under way counts the old node too until it is
 * gone. Any thread; non-blocking.
 */
ZKELECT_API int zkelect_volunteer(zkelect_election_t *election);

/**
 * Leave the election: stop leading at once (is_leader answers 0 when this
 * returns), delete the node, stop watching. Non-blocking: a leader gets
 * DEPOSED (reason RESIGNED) at once and every candidate gets RESIGNED once
 * the node is gone; the candidacy may then volunteer again, at the back of
 * the queue. If ZooKeeper refuses the delete (deleting a child needs DELETE
 * permission on the election path), an ERROR event (ZKELECT_EAUTH) says so
 * once, the node stays and the delete is tried again once every session
 * timeout; RESIGNED comes only when the node is gone (the session's end
 * removes it), and a volunteer meanwhile waits behind it. The same after an
 * ERROR that stops a candidacy: its node goes this way, also one whose
 * create's reply was lost (found by the uuid in its name; without READ
 * permission on the path one more ERROR says so and the path is listed
 * again once every session timeout; one of a session the client gave up is
 * let go 1.5 session timeouts later, when the servers have expired that
 * session), and RESIGNED comes once it is gone. Returns 0,
 * ZKELECT_ESTATE when not a candidate (a second resign), ZKELECT_EINVAL for
 * NULL.
 */
ZKELECT_API int zkelect_resign(zkelect_election_t *election);

/**
 * Step back to the back of the line in one call: zkelect_resign() and then
 * zkelect_volunteer(), with nothing able to fall between them. A leader
 * stops leading at once (is_leader answers 0 when this returns; DEPOSED,
 * reason RESIGNED); the node is deleted and a new one is made once it is
 * gone, behind every candidate in line then. Events, in order: DEPOSED (a
 * leader), RESIGNED, then FOLLOWING, or ELECTED when no one else is in
 * line. The candidacy stays a candidate throughout (a second call queues
 * another step back). What Curator's LeaderSelector calls requeue. Returns
 * 0, ZKELECT_ESTATE when not a candidate (never volunteered, or resigned),
 * ZKELECT_ECLOSED while closing, ZKELECT_EINVAL for NULL, ZKELECT_ELIMIT
 * when the new node, counted beside the old one until that is gone, would
 * bring the client's candidate nodes above zk.session.nodes.max.bytes (as
 * zkelect_volunteer(); nothing is done: the candidacy keeps its place).
 * Any thread; non-blocking. Since 1.2.
 */
ZKELECT_API int zkelect_requeue(zkelect_election_t *election);

/**
 * 1 while this candidacy leads, else 0 (also for NULL). It leads from its
 * ELECTED event until it is deposed, and only while its lease runs: the
 * answer turns 0 at the lease deadline even if no word from ZooKeeper has
 * arrived (a paused process answers 0 on its first call after it resumes).
 * Always 0 in a child of fork() for a handle made before it: the lease is
 * the parent's, which may resign or lose it at any moment.
 * Lock-free and wait-free; any thread, including callbacks.
 */
ZKELECT_API int zkelect_is_leader(const zkelect_election_t *election);

/**
 * The lease time left of this candidacy, in ms, rounded down: how much
 * longer zkelect_is_leader() answers 1 unless a renewal pushes the deadline
 * later (keepalives normally do, well before it) or the candidacy is
 * deposed or resigns first. 0 when it does not lead, for NULL, in a child of
 * fork() for a handle made before it, and for a leader with less than 1 ms
 * left: never more than the lease holds. To ask "do I still lead for the
 * next D ms?" before starting work that must finish inside the term, use
 * zkelect_is_leader_for(), which answers from one reading: calling
 * zkelect_is_leader() and then this one may straddle the deadline.
 * Lock-free and wait-free; any thread, including callbacks. Since 1.2.
 */
ZKELECT_API int64_t zkelect_lease_left_ms(const zkelect_election_t *election);

/**
 * 1 if this candidacy leads now and its lease runs at least min_ms more
 * (as zkelect_lease_left_ms() would count it), else 0 (also for NULL). One
 * reading of the deadline and one of the clock decide both, so a 1 means
 * no other candidate can be elected within min_ms plus the lease margin
 * (zkelect_client_lease_margin_ms()) unless this one resigns. A min_ms of
 * 0 or less asks the same as zkelect_is_leader(). Lock-free and wait-free;
 * any thread, including callbacks. Since 1.2.
 */
ZKELECT_API int zkelect_is_leader_for(const zkelect_election_t *election, int min_ms);

/**
 * The answer of a leader endpoint, for a load balancer's health check or a
 * Kubernetes readiness probe to ask "does this process lead?", as `zkelect
 * run`'s GET /leader gives it (docs/systemd.md, "A leader endpoint"): a
 * program that serves HTTP itself mounts it on a path of its own.
 *
 * Writes one JSON object (UTF-8, NUL-terminated, no newline) into buf and
 * returns the HTTP status to answer with: 200 and
 * {"leader":true,"path":P,"id":ID,"token":T,"lease_left_ms":L} while this
 * candidacy leads, 503 and {"leader":false} otherwise ("leader" is always
 * the first key, so the text alone tells the status) (also in a child of
 * fork() for a handle made before it). One reading of the lease between two
 * readings of the token decides: a 200 never comes after
 * zkelect_is_leader() would answer 0, and its token and time left belong
 * to one term. Nothing may cache the answer (send "Cache-Control:
 * no-store"): it is of this moment.
 *
 * *len is the size of buf on input; on output the length of the JSON
 * including the NUL, written or needed. Returns 200 or 503,
 * ZKELECT_ERANGE when buf is too small (buf untouched; *len says how much;
 * 64 bytes plus the path and the id, escaped, always suffice), or
 * ZKELECT_EINVAL for a NULL argument. The caller owns buf. Takes no lock
 * and reads no stats (a probe may ask a thousand times a second); any
 * thread, including callbacks. Since 1.2.
 */
ZKELECT_API int zkelect_leader_answer(const zkelect_election_t *election, char *buf, size_t *len);

/**
 * Block until this candidacy leads or timeout_ms passes (timeout_ms < 0:
 * no limit). Returns 0 when leading, ZKELECT_ETIMEDOUT, ZKELECT_ESTATE when
 * the candidacy is not (or stops being) a candidate, ZKELECT_ECLOSED when the
 * handle is being destroyed, ZKELECT_EAUTH when the election cannot proceed
 * for lack of permission, ZKELECT_EINVAL for NULL. Does not consume events.
 */
ZKELECT_API int zkelect_await_leader(zkelect_election_t *election, int timeout_ms);

/**
 * Hand the leadership of this candidacy (which must lead) to the candidate
 * of the same path whose participant id is target_id (as
 * zkelect_participants() shows it; the first in line behind the leader
 * when several share it), and wait for the outcome at most timeout_ms
 * (> 0) plus the handover's own delete and listing.
 *
 * While the call runs this candidacy leads on; the candidates between it
 * and the target step back to the back of the line, each with a
 * STEPPED_BACK event (reason TRANSFERRED), still candidates. Once the target
 * is next in line this candidacy stops leading (is_leader() answers 0, a
 * DEPOSED event with reason TRANSFERRED), its node is deleted before the
 * target can be elected, and it joins again at the back of the line, still
 * a candidate (FOLLOWING follows). With transfer.drain.ms above 0 the node
 * is deleted only at zkelect_release() or that bound (a drain; the call's
 * wait grows by it). The target's fencing token is larger.
 * If the target leaves, or is not next within timeout_ms, this candidacy
 * stops leading all the same and whoever is next leads, as after
 * zkelect_resign(). Costs and guarantees: docs/semantics.md,
 * "Transferring leadership". Needs WRITE permission on the election path
 * (the request is written in its data). These step backs are never refused
 * for zk.session.nodes.max.bytes: each candidacy that steps back counts its
 * new node beside the old one until the old one is gone (a round trip),
 * above the bound if need be.
 *
 * Returns 0 when the target is first in line after the handover (it leads
 * once its lease allows, normally at once). After a handover:
 * ZKELECT_ETIMEDOUT (the target was not next within timeout_ms) or
 * ZKELECT_ETARGET_LOST (it left the election). With nothing changed (this
 * candidacy still leads, unless it lost the lead otherwise):
 * ZKELECT_ENOCANDIDATE (no candidate behind this one has that id),
 * ZKELECT_ENOTSUP (a candidate ahead of the target cannot step back: one
 * of Curator's LeaderLatch, or of a libzkelect before 1.2, which never read
 * the request; such a transfer would only wait out timeout_ms),
 * ZKELECT_ENOTLEADER (not leading, or the leadership ended otherwise during
 * the call), ZKELECT_EAUTH (no WRITE permission on the path), ZKELECT_ECONNLOSS
 * (when the connection is lost with the answer to the request's write,
 * the call goes on until the next connection shows whether the write
 * landed: ZKELECT_ECONNLOSS only when it did not), ZKELECT_EZK, ZKELECT_ESTATE (another transfer of this handle runs; a
 * balanced group's move (balance.group) is not one: this call ends it,
 * unless it has handed over already, which answers ZKELECT_ENOTLEADER).
 * ZKELECT_EINVAL for NULL, an invalid id, this candidacy's own id or
 * timeout_ms <= 0; ZKELECT_ECLOSED when the handle is being destroyed;
 * ZKELECT_EDEADLK when called on the client's loop thread. The message of
 * zkelect_last_error() says which. Any thread; blocks. Since 1.2.
 */
ZKELECT_API int zkelect_transfer(zkelect_election_t *election, const char *target_id,
                                 int timeout_ms);

/**
 * Ask the current leader of the election at path, from outside it (an
 * operator's tool, or code that is not a candidate), to hand leadership to
 * the candidate whose participant id is target_id, as zkelect_transfer()
 * would if the leader called it with timeout_ms (1 to 600000); wait for the
 * outcome at most timeout_ms plus three session timeouts of client.
 *
 * The request is written in the data of path (version-checked), the
 * leader reads it through a watch it holds while leading, runs the
 * transfer and writes the outcome back, which this call reads (and then
 * clears). Mechanism, guarantees and what a writer of path can do:
 * docs/semantics.md, "A transfer asked from outside". The client needs
 * READ and WRITE permission on path; client holds no candidacy for it.
 *
 * Returns 0 when the target leads (also when it led already: nothing is
 * written then). After a handover, as for zkelect_transfer():
 * ZKELECT_ETIMEDOUT, ZKELECT_ETARGET_LOST. ZKELECT_ETIMEDOUT also when the
 * leader did not take the request up in time (a leader that is not
 * connected, or a libzkelect 1.2 development build without outside
 * transfers): the request is withdrawn, nothing changed. With nothing
 * changed: ZKELECT_ENOLEADER (no candidate at path), ZKELECT_ENOCANDIDATE
 * (no candidate with that id; while a transfer of the leader runs, the
 * candidates ahead of its target are absent for a moment as they step
 * back, so that transfer is waited out first), ZKELECT_ENOTSUP (the leader or a candidate
 * ahead of the target cannot take part: Curator's LeaderLatch, libzkelect
 * before 1.2), ZKELECT_ESTATE (transfers of the leader, one after another,
 * kept the path busy for timeout_ms: a transfer already under way when
 * this is called, the leader's own, another asker's or a balanced group's
 * move, is waited out within timeout_ms, and the request then goes to
 * whoever leads), ZKELECT_EAUTH, ZKELECT_ECONNLOSS
 * (also when this client's session expired before the request was
 * written; once it is written, the call waits on with the client's next
 * session), ZKELECT_EZK; ZKELECT_ENOTLEADER when the leader stopped
 * leading during the transfer (a leader whose node went before it took
 * the request up is not: the request is withdrawn and whoever leads next
 * is asked, within timeout_ms). ZKELECT_EINVAL for NULL, an invalid path or id, or
 * timeout_ms out of range; ZKELECT_EDEADLK when called on the client's
 * loop thread (from an event callback). The message of
 * zkelect_last_error() says which. Any thread; blocks. Since 1.2.
 */
ZKELECT_API int zkelect_client_transfer(zkelect_client_t *client, const char *path,
                                        const char *target_id, int timeout_ms);

/**
 * End a transfer's drain: this candidacy, deposed by a transfer (its own
 * zkelect_transfer(), one asked from outside, or a priority takeover: the
 * DEPOSED event with reason TRANSFERRED) under a client whose
 * transfer.drain.ms is above 0, has stopped its work, and its node may go
 * now. Until this call (or the bound) the node stays, so the target, which
 * waits for that node's deletion, cannot be elected while the old leader
 * still works; zkelect_is_draining() says while that holds.
 *
 * The node is then deleted and the candidacy joins again at the back of
 * the line (FOLLOWING follows, as after any transfer). Without this call
 * the library deletes the node transfer.drain.ms plus the lease margin
 * after the DEPOSED event; a resign, a destroy, an expired session or a
 * deleted node end the drain too. docs/semantics.md, "Draining before the
 * hand-over".
 *
 * Returns 0 (zkelect_is_draining() answers 0 when this returns),
 * ZKELECT_ESTATE when no drain waits for a release (none began,
 * transfer.drain.ms is 0, it was released already, or it ended
 * otherwise), ZKELECT_ECLOSED while the handle is being destroyed,
 * ZKELECT_EINVAL for NULL. Any thread, including callbacks; non-blocking.
 * Since 1.2.
 */
ZKELECT_API int zkelect_release(zkelect_election_t *election);

/**
 * 1 while this candidacy, deposed by a transfer, keeps its node for a
 * drain (zkelect_release()) and that node surely stands, else 0 (also for
 * NULL). It is a lease, like zkelect_is_leader()'s: when it answers 1 at
 * time t, no other candidate can be elected before t plus the lease margin
 * (zkelect_client_lease_margin_ms()). It answers 0 once the drain ends, at
 * its bound, and as soon as the session's lease runs out (a lost
 * connection): then the node may go with the session, so stop the work
 * within the margin as after a lost lease. Always 0 with transfer.drain.ms
 * 0, and in a child of fork() for a handle made before it. Lock-free and
 * wait-free; any thread, including callbacks. Since 1.2.
 */
ZKELECT_API int zkelect_is_draining(const zkelect_election_t *election);

/**
 * The fencing token of the current leadership term: the creation zxid
 * (czxid) of this candidate's node, strictly larger for every later term on
 * the same path. Returns 0 with *token set while leading,
 * ZKELECT_ENOTLEADER otherwise, ZKELECT_EINVAL for NULL.
 */
ZKELECT_API int zkelect_fencing_token(const zkelect_election_t *election, int64_t *token);

/*
 * Fenced ZooKeeper writes (since 1.2; docs/fencing.md, "Fenced ZooKeeper
 * writes"). A batch of changes to ZooKeeper data (set, create, delete) that
 * the quorum commits only while this candidacy leads its current term: one
 * ZooKeeper multi of a version check of the candidacy's own node and the
 * batch, committed whole or not at all. No candidate is elected while that
 * node stands (a transfer's drain included), so a fenced write that commits
 * is ordered before the election of any successor and before every write
 * of its term; a deposed leader's write, however late it reaches the server
 * (a pause, a retransmission), is refused with ZKELECT_EFENCED and changes
 * nothing.
 *
 * Build the batch with zkelect_fenced_ops_new() and the _set, _create and
 * _delete calls, commit it with zkelect_fenced_commit(), free it with
 * zkelect_fenced_ops_destroy(). A batch holds copies of the paths and data
 * it was given; it can be committed again, by any election of any client.
 * One thread at a time per batch (the builder calls and a commit of the same
 * batch must not overlap); different batches are independent.
 *
 * Paths are absolute, like an election's path (within the client's chroot,
 * if zk.hosts has one). Nodes are created with the client's ACL
 * (zk.acl). The paths, data and operations are ZooKeeper's: the library
 * does not keep users away from the election's own nodes.
 */
typedef struct zkelect_fenced_ops zkelect_fenced_ops_t;

/** zkelect_fenced_ops_create flag: the node is ephemeral (it goes with
 *  the client's session). */
#define ZKELECT_FENCED_EPHEMERAL 1

/** A new, empty batch; NULL when out of memory. The caller owns it (free
 *  with zkelect_fenced_ops_destroy()). Any thread. Since 1.2. */
ZKELECT_API zkelect_fenced_ops_t *zkelect_fenced_ops_new(void);

/** Append a setData of path: len bytes of data (NULL allowed when len is
 *  0), only if the node's data version is version (-1: any version).
 *  Returns 0, ZKELECT_EINVAL (NULL ops or path, a malformed path, len
 *  above 1,000,000, version below -1), ZKELECT_ENOMEM. Since 1.2. */
ZKELECT_API int zkelect_fenced_ops_set(zkelect_fenced_ops_t *ops, const char *path,
                                       const void *data, size_t len, int32_t version);

/** Append a create of path with len bytes of data; flags 0 (persistent)
 *  or ZKELECT_FENCED_EPHEMERAL. The parent must exist (or be created by an
 *  earlier operation of the batch). Returns 0, ZKELECT_EINVAL (as
 *  zkelect_fenced_ops_set, or an unknown flag), ZKELECT_ENOMEM. Since 1.2. */
ZKELECT_API int zkelect_fenced_ops_create(zkelect_fenced_ops_t *ops, const char *path,
                                          const void *data, size_t len, int flags);

/** Append a delete of path, only if its data version is version (-1:
 *  any). Returns 0, ZKELECT_EINVAL, ZKELECT_ENOMEM. Since 1.2. */
ZKELECT_API int zkelect_fenced_ops_delete(zkelect_fenced_ops_t *ops, const char *path,
                                          int32_t version);

/** Number of operations in ops (0 for NULL). Since 1.2. */
ZKELECT_API size_t zkelect_fenced_ops_count(const zkelect_fenced_ops_t *ops);

/** After a zkelect_fenced_commit() of ops that ZooKeeper refused for one
 *  of the batch's own operations (ZKELECT_EZK or ZKELECT_EAUTH): that
 *  operation's index (0 = the first appended), and ZooKeeper's code for it
 *  in *zk_rc when zk_rc is not NULL (ZNONODE -101, ZNODEEXISTS -110,
 *  ZBADVERSION -103, ZNOTEMPTY -111, ...). -1 otherwise (also for NULL);
 *  *zk_rc then holds ZooKeeper's code behind the last commit's outcome (0
 *  when none). Since 1.2. */
ZKELECT_API int zkelect_fenced_ops_failed(const zkelect_fenced_ops_t *ops, int *zk_rc);

/** Free ops. NULL is a no-op. Not during a commit of it. Since 1.2. */
ZKELECT_API void zkelect_fenced_ops_destroy(zkelect_fenced_ops_t *ops);

/**
 * Commit ops (at least one operation) while this candidacy leads, and wait
 * at most timeout_ms (> 0) for ZooKeeper's answer: one round trip, as a
 * plain write. Blocks; any thread, callbacks included (the answer comes
 * through the client's loop thread, which never runs user code).
 * zkelect_last_error() says more on failure.
 *
 * Returns:
 *  - 0: committed, every operation of ops.
 *  - ZKELECT_ENOTLEADER: this candidacy does not lead now
 *    (zkelect_is_leader() would answer 0: a follower, a leader whose lease
 *    ran out, a drain). Nothing was sent.
 *  - ZKELECT_EFENCED: sent, and refused by ZooKeeper: this candidacy's node
 *    is gone (its term is over; a successor may already lead) or its data
 *    version changed (someone wrote to it). Nothing was committed.
 *  - ZKELECT_EZK / ZKELECT_EAUTH: ZooKeeper refused an operation of ops (a
 *    missing parent, a node that exists, a version that differs, an ACL);
 *    zkelect_fenced_ops_failed() says which and why. Nothing was committed.
 *  - ZKELECT_ECONNLOSS / ZKELECT_ESESSION_EXPIRED: the connection (or the
 *    session) failed while the write was on its way, and
 *    ZKELECT_ETIMEDOUT: no answer came within timeout_ms (the request may
 *    still be in flight). The outcome is UNKNOWN: the write may or may not
 *    have committed, but if it did, it did whole and while this candidacy's
 *    node stood (before any successor's election). To find out, read what
 *    it wrote once connected again: a set's data (make it recognisable,
 *    e.g. carrying the fencing token) or a create's node; never just send
 *    it again, which could apply it twice. A write that is still in flight
 *    after ZKELECT_ETIMEDOUT commits only while the node stands.
 *  - ZKELECT_ECLOSED: the handle or its client is closing (the write may
 *    have been sent: as for ZKELECT_ECONNLOSS).
 *  - ZKELECT_EINVAL: NULL election or ops, an empty batch, timeout_ms <= 0,
 *    a batch above 1,000,000 bytes of paths and data (ZooKeeper would close
 *    the connection on it). Nothing was sent.
 *  - ZKELECT_ENOTSUP: ZooKeeper does not know multi (before 3.4).
 *
 * Since 1.2.
 */
ZKELECT_API int zkelect_fenced_commit(zkelect_election_t *election, zkelect_fenced_ops_t *ops,
                                      int timeout_ms);

/**
 * Commit ops only while the leader's node `node` stands: the fenced write
 * of a process that does not hold the candidacy, with a client of its own
 * (a command that `zkelect run` started: `zkelect fenced` uses this, with
 * $ZKELECT_NODE and $ZKELECT_TOKEN). node is the full path of the node
 * that leads (within the client's chroot): the election's path, "/", and
 * the ELECTED event's zkelect_event_node(); token is that term's fencing
 * token (zkelect_event_token() of the same ELECTED, zkelect_fencing_token()).
 * The two must come from an ELECTED: the call checks that this node still
 * stands and is that term's, not that it ever led (a follower's node
 * stands too).
 *
 * Two round trips: a read of the node (its data version, and its czxid,
 * which must be token; a read that finds no node is asked again behind a
 * sync, so that a server behind the quorum does not end a term that is not
 * over), then the one multi of a check of the node (path and version) and
 * ops. No candidate is elected while that node stands, so a batch that
 * commits is ordered before any successor's election, as with
 * zkelect_fenced_commit(). Waits at most timeout_ms (> 0) in all. Blocks;
 * any thread but the library's own.
 *
 * Returns what zkelect_fenced_commit() returns, with these differences:
 *  - ZKELECT_EFENCED also when the read finds the node gone or created by
 *    another transaction than token (another term's node): nothing was
 *    sent; zkelect_last_error() says which.
 *  - ZKELECT_ENOTLEADER never (no candidacy is asked).
 *  - ZKELECT_ECONNLOSS, ZKELECT_ESESSION_EXPIRED and ZKELECT_ETIMEDOUT may
 *    also come from the read, before the write was sent; the outcome is
 *    then known (nothing committed) and zkelect_last_error() says
 *    "nothing was sent" or "nothing was committed". Otherwise it is
 *    unknown, as for zkelect_fenced_commit().
 *  - ZKELECT_EINVAL also for a NULL client or node, a malformed node path,
 *    a token <= 0.
 *
 * Since 1.2.
 */
ZKELECT_API int zkelect_client_fenced_commit(zkelect_client_t *client, const char *node,
                                             int64_t token, zkelect_fenced_ops_t *ops,
                                             int timeout_ms);

/**
 * Ask ZooKeeper which participant leads this election now and copy its id
 * into buf. The answer is current as of the call: the server is first
 * brought up to date with the quorum (a ZooKeeper sync), so a leader another
 * session elected just before is seen. Blocks for two or three round trips
 * (at most the session timeout). Returns 0, ZKELECT_ENOLEADER when there is no candidate,
 * ZKELECT_ERANGE when buf (len bytes) cannot hold the id and its NUL,
 * ZKELECT_ECONNLOSS / ZKELECT_ETIMEDOUT when ZooKeeper cannot be asked,
 * ZKELECT_EINVAL for NULL arguments.
 */
ZKELECT_API int zkelect_leader_id(zkelect_election_t *election, char *buf, size_t len);

/**
 * Ask ZooKeeper for the candidates of this election, in queue order (the
 * leader first), current as of the call (synced with the quorum first, as
 * zkelect_leader_id is). Blocks for a few round trips. Returns NULL with a message
 * in errbuf when ZooKeeper cannot be asked. The caller owns the result and
 * frees it with zkelect_participants_destroy().
 */
ZKELECT_API zkelect_participants_t *zkelect_participants(zkelect_election_t *election,
                                                         char *errbuf, size_t errlen);

/** Like zkelect_participants(), for any path, without a candidacy. */
ZKELECT_API zkelect_participants_t *zkelect_client_participants(zkelect_client_t *client,
                                                                const char *path, char *errbuf,
                                                                size_t errlen);

/*
 * Ids of other candidates are read from ZooKeeper, where any client allowed
 * to write under the path can put anything; this library does not check
 * them. An id returned by zkelect_participants_id(), zkelect_leader_id() or
 * zkelect_event_id() is the node's data as stored: any bytes, possibly not
 * valid UTF-8, possibly with control characters, possibly longer than
 * ZKELECT_ID_MAX (up to ZooKeeper's own limit on node data, about 1 MB), and
 * cut at its first NUL byte. Escape it before printing it where one line
 * must stay one record. Node names are likewise foreign, but always valid
 * for ZooKeeper (no NUL, no control character, valid UTF-8); only names
 * ending in "latch-<sequence>" count as candidates.
 */

/** Number of candidates in p (0 for NULL). */
ZKELECT_API size_t zkelect_participants_count(const zkelect_participants_t *p);
/** Participant id of candidate i (0 = leader); NULL when out of range. */
ZKELECT_API const char *zkelect_participants_id(const zkelect_participants_t *p, size_t i);
/** Node name (without the path) of candidate i; NULL when out of range. */
ZKELECT_API const char *zkelect_participants_node(const zkelect_participants_t *p, size_t i);
/** czxid of candidate i's node (the token it leads with); 0 out of range. */
ZKELECT_API int64_t zkelect_participants_token(const zkelect_participants_t *p, size_t i);
/** Creation time of candidate i's node, ms since the epoch (server clock). */
ZKELECT_API int64_t zkelect_participants_ctime_ms(const zkelect_participants_t *p, size_t i);
/** Priority of candidate i, 0 to 255, as its node's name carries it
 *  (election.priority; docs/semantics.md, "Preferred leaders"): 0 for no
 *  preference, for a candidate that has none (Curator's LeaderLatch,
 *  libzkelect before 1.2) and when out of range. Since 1.2. */
ZKELECT_API int zkelect_participants_priority(const zkelect_participants_t *p, size_t i);
/** Free p. NULL is a no-op. */
ZKELECT_API void zkelect_participants_destroy(zkelect_participants_t *p);

/* ------------------------------------------------------------------------ */
/* Statistics: a snapshot for monitoring (since 1.2)                        */
/* ------------------------------------------------------------------------ */

/** A snapshot of a client's or an election's figures, as a JSON document. */
typedef struct zkelect_stats zkelect_stats_t;

/**
 * A snapshot of this candidacy's figures, taken now: its state and since
 * when, whether it leads and with which token, its place in the queue at its
 * last listing, its current term, terms won and losses by reason, the lease
 * time left, the round trips of its keepalives and the latency of the
 * failovers it won (from the notification that its predecessor's node was
 * deleted to ELECTED), as histograms with fixed buckets, and the requests it
 * sent and watch notifications it received. Read it with
 * zkelect_stats_json(); docs/monitoring.md lists every key.
 *
 * Cheap enough to call every second or more often: it copies a few hundred
 * bytes under a lock that the library's loop thread takes only for a moment
 * at each change, asks nothing of ZooKeeper, never blocks on the network,
 * and leaves zkelect_is_leader() untouched. Any thread, including callbacks.
 *
 * Returns NULL with a message in errbuf for a NULL election, or when memory
 * is exhausted. The caller owns the result and frees it with
 * zkelect_stats_destroy(); it does not refer to the election, so it may
 * outlive it. Since 1.2.
 */
ZKELECT_API zkelect_stats_t *zkelect_election_stats(zkelect_election_t *election, char *errbuf,
                                                    size_t errlen);

/**
 * A snapshot of client's figures: whether it is connected, its session id
 * and negotiated timeout, every zkelect_client_counter() by its
 * zkelect_counter_name() (session expirations as "expiries", reconnects
 * within a session as "reconnects"), and under "elections" the snapshot of
 * each election that exists on the client, as zkelect_election_stats()
 * gives it. Same cost, threads and ownership as zkelect_election_stats();
 * NULL with a message in errbuf for a NULL client or exhausted memory.
 * Since 1.2.
 */
ZKELECT_API zkelect_stats_t *zkelect_client_stats(zkelect_client_t *client, char *errbuf,
                                                  size_t errlen);

/**
 * The members of the balanced group at path group (balance.group;
 * docs/design.md, "Balanced groups") as they are now, as a JSON document:
 *
 *   {"group":"/g","members":[{"node":"zkelect-member-0000000000",
 *    "session":"0x1000a2b3c0004","valid":true,"leading":3,"in_line":5},...],
 *    "leading":6,"unread":0}
 *
 * One entry per member node (named zkelect-member-<sequence>; other
 * children of the path are not members), in node order: the session that
 * holds it (hexadecimal, as ZooKeeper's own tools show session ids), and
 * how many of that client's candidacies lead and stand in line, as it last
 * wrote them. Member nodes are written by whoever may write under the
 * path: one whose data does not parse, or that no session holds, is listed
 * with "valid":false and no counts, and is left out of the total
 * "leading". At most 4096 member nodes are read (the first by name);
 * "unread" counts the others. A member's data longer than 64 bytes is not
 * kept (such a member is not valid), and at most 64 reads are in flight at
 * once, so whatever was written under the path, the query holds a few
 * hundred KiB of it and, for a moment, at most 64 nodes' data. A path that does not exist is a group
 * without members, not an error. Any client may ask, a member of the
 * group or not; nothing is written.
 *
 * Asked of ZooKeeper now, as zkelect_client_participants() is (a sync
 * first, so another session's latest member is seen): blocks for a few
 * round trips, at most the session timeout (docs/threading.md, rule 5).
 * Any thread. Read the document with
 * zkelect_stats_json(); the caller owns it and frees it with
 * zkelect_stats_destroy(); it does not refer to the client.
 *
 * Returns NULL with a message in errbuf (and zkelect_last_error_code()
 * set):
 *  - ZKELECT_EINVAL: client or group is NULL, or group is not a path an
 *    election path could be (absolute, no trailing '/', no "//", "." or
 *    "..", not under /zookeeper);
 *  - ZKELECT_ESTATE: the client was made before fork() in another process;
 *  - ZKELECT_ECLOSED: the client was shut down (zkelect_client_shutdown());
 *  - ZKELECT_ECONNLOSS, ZKELECT_ETIMEDOUT: ZooKeeper could not be asked
 *    within the session timeout;
 *  - ZKELECT_EAUTH: the servers refused the client's credentials, or the
 *    group's ACL refuses it reading (ZooKeeper's NOAUTH);
 *  - ZKELECT_ESESSION_EXPIRED, ZKELECT_EZK: ZooKeeper's other refusals;
 *  - ZKELECT_ENOMEM: memory ran out.
 *
 * Since 1.2.
 */
ZKELECT_API zkelect_stats_t *zkelect_client_group_stats(zkelect_client_t *client,
                                                        const char *group, char *errbuf,
                                                        size_t errlen);

/**
 * The snapshot as one JSON object (RFC 8259, UTF-8, no newline), borrowed:
 * valid until zkelect_stats_destroy(stats). Its "version" key is 1; later
 * versions of the library add keys and never remove, rename or retype one,
 * so a reader must ignore keys it does not know. Durations are integers in
 * microseconds (keys ending in "_us", -1 when nothing was measured yet),
 * times are integers in ms since the epoch, CLOCK_REALTIME (keys ending in
 * "_at_ms", 0 when none). NULL for NULL. Any thread. Since 1.2.
 */
ZKELECT_API const char *zkelect_stats_json(const zkelect_stats_t *stats);

/** Free stats. NULL is a no-op. Since 1.2. */
ZKELECT_API void zkelect_stats_destroy(zkelect_stats_t *stats);

/* ------------------------------------------------------------------------ */
/* Events                                                                   */
/* ------------------------------------------------------------------------ */

enum zkelect_event_type {
    /** This candidacy now leads; zkelect_event_token() is the fencing token. */
    ZKELECT_EV_ELECTED = 1,
    /** This candidacy stopped leading; zkelect_event_reason() says why. */
    ZKELECT_EV_DEPOSED = 2,
    /** Enrolled and not leading; zkelect_event_node()/_id() name the
     *  predecessor watched. Again whenever the predecessor changes. */
    ZKELECT_EV_FOLLOWING = 3,
    /** The connection to ZooKeeper was lost; the session may survive. */
    ZKELECT_EV_SUSPENDED = 4,
    /** Reconnected within the same session; the node is kept. */
    ZKELECT_EV_RECONNECTED = 5,
    /** The session expired (or the client gave it up: no server took it
     *  for the session timeout); the candidacy's node is gone or is deleted by the
     *  next session. A candidate volunteers again on the new session by itself. */
    ZKELECT_EV_EXPIRED = 6,
    /** (Observers) the leader changed; _id() and _token() name the new one,
     *  or both are empty/0 when no candidate is left. */
    ZKELECT_EV_LEADER_CHANGED = 7,
    /** A failure: zkelect_event_error(), _zk_rc(), _message(). */
    ZKELECT_EV_ERROR = 8,
    /** The resign finished: the node is gone; volunteer may be called. */
    ZKELECT_EV_RESIGNED = 9,
    /** Events were dropped because the queue was full (see
     *  ZKELECT_EVENT_QUEUE_MAX); zkelect_event_token() is how many. */
    ZKELECT_EV_OVERFLOW = 10,
    /** Nothing failed, but an operator should act; _message() says what.
     *  (1) The election path's sequence numbers are near the point where
     *  ZooKeeper wraps them (2^31 creates under the path). libzkelect orders
     *  across the wrap; Curator's LeaderLatch does not, so a path shared
     *  with Curator participants must be replaced (a fresh path, or the
     *  parent deleted and re-created while empty) before it gets there.
     *  Said once per candidacy. (2) Since 1.2: the connected server granted
     *  a session timeout below 2 x its tickTime (its minSessionTimeout is set
     *  below ZooKeeper's default); leases are shortened, or, when too little
     *  is left, the client does not lead while connected to that server.
     *  Said once per candidacy and server, also to a candidacy made while
     *  the client is connected to that server.
     *  Since 1.1; older consumers must ignore types they do not know. */
    ZKELECT_EV_WARNING = 11,
    /** This candidate left its place in line and joined again at the back,
     *  still a candidate (FOLLOWING follows); zkelect_event_reason() says why
     *  (ZKELECT_REASON_TRANSFERRED: the leader is handing leadership to a
     *  candidate behind this one), _node()/_id() name that candidate.
     *  Since 1.2; older consumers must ignore types they do not know. */
    ZKELECT_EV_STEPPED_BACK = 12,
    /** This leader's lease has less than lease.warn.percent of its
     *  length left: the keepalive that would renew it is late (a slow or lost
     *  connection, a paused process). Still leading; it may be DEPOSED
     *  (reason LEASE_ENDED) at the deadline. zkelect_event_token() is the
     *  term's, _message() says how many ms are left. Said at most once per
     *  term until a renewal brings the lease back above the mark. Only with
     *  lease.warn.percent above 0 (default 0: never).
     *  Since 1.2; older consumers must ignore types they do not know. */
    ZKELECT_EV_LEASE_LOW = 13
};

/**
 * Most events a handle's queue holds (a client's "events.queue.max" may set
 * fewer, or none at all). A queue that nobody reads does not
 * grow past it: when an event arrives at a full queue, the oldest events are
 * dropped and one ZKELECT_EV_OVERFLOW event at the front of the queue stands
 * for them, its zkelect_event_token() counting how many it replaces. A reader
 * that comes back thus gets OVERFLOW first, then the newest events in order;
 * zkelect_is_leader() is always current. Once the reader has taken the
 * OVERFLOW event, a later flood gets a new one with its own count.
 */
#define ZKELECT_EVENT_QUEUE_MAX 1024

/** Why a DEPOSED event happened. */
enum zkelect_reason {
    /** not DEPOSED; or an error ended the candidacy: the ERROR event after it says which */
    ZKELECT_REASON_NONE = 0,
    /** zkelect_resign() */
    ZKELECT_REASON_RESIGNED = 1,
    /** disconnect, leadership=strict */
    ZKELECT_REASON_SUSPENDED = 2,
    /** no acknowledged write within the lease */
    ZKELECT_REASON_LEASE_ENDED = 3,
    /** the session expired */
    ZKELECT_REASON_EXPIRED = 4,
    /** someone else deleted our node */
    ZKELECT_REASON_NODE_DELETED = 5,
    /** the handle is being destroyed */
    ZKELECT_REASON_CLOSED = 6,
    /** zkelect_transfer(): leadership handed to another candidate (DEPOSED), or stepped back for it (STEPPED_BACK); since 1.2 */
    ZKELECT_REASON_TRANSFERRED = 7
};

/**
 * Take the next event of election's queue, waiting up to timeout_ms
 * (0: do not wait; < 0: no limit). Returns NULL on timeout, after
 * zkelect_wake(), or for NULL. The caller owns the event and frees it with
 * zkelect_event_destroy(). Events of one handle come out in the order they
 * happened. Any thread; several threads may wait at once (each event goes to
 * one of them).
 */
ZKELECT_API zkelect_event_t *zkelect_next_event(zkelect_election_t *election, int timeout_ms);

/**
 * A file descriptor that is readable exactly while election's queue holds
 * events (level-triggered), for poll/epoll/libuv/Go netpoll. Owned by the
 * library: never read, write or close it; it closes with the handle. It is
 * made on the first call (a handle never asked for one holds no descriptor).
 * Returns the fd, ZKELECT_EINVAL for NULL, ZKELECT_ENOMEM or
 * ZKELECT_EINTERNAL when no descriptor can be made (e.g. EMFILE).
 */
ZKELECT_API int zkelect_event_fd(zkelect_election_t *election);

/** Make one waiting (or the next) zkelect_next_event() / zkelect_dispatch()
 *  on election return at once without an event. Returns 0 or
 *  ZKELECT_EINVAL. */
ZKELECT_API int zkelect_wake(zkelect_election_t *election);

/**
 * A callback receiving events. The event is borrowed for the call; copy what
 * you need. It may call any zkelect function, zkelect_dispatch() on the same
 * handle included (nested), except the destroy of its own handle (that
 * returns ZKELECT_EDEADLK, at any depth of nesting). It runs while the
 * library holds none of its locks.
 */
typedef void (*zkelect_event_cb)(zkelect_election_t *election, const zkelect_event_t *event,
                                 void *opaque);

/**
 * Set (or with cb NULL, clear) the callback that zkelect_dispatch() calls.
 * Returns 0 or ZKELECT_EINVAL; ZKELECT_ESTATE if a background callback is
 * set.
 */
ZKELECT_API int zkelect_set_event_cb(zkelect_election_t *election, zkelect_event_cb cb,
                                     void *opaque);

/**
 * Take the events waiting (waiting up to timeout_ms for the first; 0: do not
 * wait; < 0: no limit) and call the callback on each, on this thread.
 * Several threads may dispatch one handle at once (each event goes to one of
 * them), and a callback may dispatch again.
 * Returns the number of events dispatched (0 on timeout or wake),
 * ZKELECT_ESTATE when no callback is set, ZKELECT_EINVAL for NULL.
 */
ZKELECT_API int zkelect_dispatch(zkelect_election_t *election, int timeout_ms);

/**
 * Opt in to callbacks on a library thread: from now on a thread of the
 * library (never one of ZooKeeper's) takes every event and calls cb. Meant
 * for C and C++ programs; language bindings use the pull API. cb must not
 * block for long: it delays later events of this handle. Destroy from
 * inside cb returns ZKELECT_EDEADLK; from another thread it waits for a
 * running cb to return. cb NULL stops the thread. Stopping or replacing
 * the thread waits for its running cb, never for another event, whatever
 * other threads are blocked in zkelect_next_event() meanwhile.
 * Returns 0; ZKELECT_EINVAL for NULL election; ZKELECT_ENOMEM;
 * ZKELECT_EDEADLK when stopping the thread would wait for this one (called
 * from inside one of this handle's callbacks at any depth, or in the cycle
 * zkelect_election_destroy() describes); ZKELECT_ESTATE when another
 * thread started a background callback at the same moment.
 */
ZKELECT_API int zkelect_set_background_event_cb(zkelect_election_t *election,
                                                zkelect_event_cb cb, void *opaque);

/** ZKELECT_EV_* of event (0 for NULL). */
ZKELECT_API int zkelect_event_type(const zkelect_event_t *event);
/** ZKELECT_REASON_* for DEPOSED, else ZKELECT_REASON_NONE. */
ZKELECT_API int zkelect_event_reason(const zkelect_event_t *event);
/** Fencing token for ELECTED and LEADER_CHANGED; for OVERFLOW the number
 *  of events dropped; else 0. */
ZKELECT_API int64_t zkelect_event_token(const zkelect_event_t *event);
/** ZKELECT_E* code for ERROR, else 0. */
ZKELECT_API int zkelect_event_error(const zkelect_event_t *event);
/** ZooKeeper's own return code for ERROR (0 when none). */
ZKELECT_API int zkelect_event_zk_rc(const zkelect_event_t *event);
/** Human-readable text for every event (never NULL for a non-NULL event). */
ZKELECT_API const char *zkelect_event_message(const zkelect_event_t *event);
/** ELECTED: our node; FOLLOWING: the predecessor's node; LEADER_CHANGED: the
 *  leader's node. "" otherwise. Never NULL for a non-NULL event. */
ZKELECT_API const char *zkelect_event_node(const zkelect_event_t *event);
/** The priority zkelect_event_node()'s name carries, 0 to 255 (see
 *  zkelect_participants_priority): for LEADER_CHANGED the leader's. 0 when
 *  the event names no node or the node has none. Since 1.2. */
ZKELECT_API int zkelect_event_priority(const zkelect_event_t *event);
/** FOLLOWING: the predecessor's participant id; LEADER_CHANGED: the
 *  leader's id; ELECTED: our id. "" otherwise. */
ZKELECT_API const char *zkelect_event_id(const zkelect_event_t *event);
/** When the library saw the change: CLOCK_REALTIME, ns since the epoch. */
ZKELECT_API int64_t zkelect_event_time_ns(const zkelect_event_t *event);
/** "ELECTED", "DEPOSED", ...; "UNKNOWN" for an unknown type. Static. */
ZKELECT_API const char *zkelect_event_type_name(int type);
/** "resigned", "suspended", "lease_ended", ...; "none"; "unknown". Static. */
ZKELECT_API const char *zkelect_reason_name(int reason);
/** Free event. NULL is a no-op. */
ZKELECT_API void zkelect_event_destroy(zkelect_event_t *event);

/* ------------------------------------------------------------------------ */
/* Observer: who leads, without volunteering                                */
/* ------------------------------------------------------------------------ */

/**
 * Watch the leader of the election at path (validated like
 * zkelect_election_new, but never created) without taking part. Its queue
 * gets LEADER_CHANGED first with the current leader (or none), then on every
 * change; and SUSPENDED, RECONNECTED, EXPIRED, ERROR. When this client may
 * not list the election path or read the leader's node (its ACL), ERROR
 * (ZKELECT_EAUTH) comes instead of LEADER_CHANGED, once. Returns NULL with a
 * message in errbuf for NULL client or a bad path. The caller owns the
 * result; free it with zkelect_observer_destroy() before the client.
 */
ZKELECT_API zkelect_observer_t *zkelect_observer_new(zkelect_client_t *client, const char *path,
                                                     char *errbuf, size_t errlen);
/** As zkelect_next_event(), for an observer. */
ZKELECT_API zkelect_event_t *zkelect_observer_next_event(zkelect_observer_t *observer,
                                                         int timeout_ms);
/** As zkelect_event_fd(), for an observer. */
ZKELECT_API int zkelect_observer_event_fd(zkelect_observer_t *observer);
/** As zkelect_wake(), for an observer. */
ZKELECT_API int zkelect_observer_wake(zkelect_observer_t *observer);
/** Stop watching and free the observer. Threads blocked in
 *  zkelect_observer_next_event() are woken (NULL) and waited for.
 *  Returns 0 or ZKELECT_EINVAL. */
ZKELECT_API int zkelect_observer_destroy(zkelect_observer_t *observer);

#ifdef __cplusplus
}
#endif

#endif /* ZKELECT_H */
