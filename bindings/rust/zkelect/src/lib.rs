//! Leader election on Apache ZooKeeper, through libzkelect.
//!
//! ```no_run
//! use std::time::Duration;
//! let client = zkelect::Client::connect("127.0.0.1:2181")?;
//! let election = client.election("/services/scheduler", "host-a")?;
//! election.volunteer()?;
//! election.await_leader(Duration::from_secs(30))?;
//! println!("leading with token {}", election.fencing_token()?);
//! # Ok::<(), zkelect::Error>(())
//! ```
//!
//! Ownership follows the C API: each handle frees itself in `Drop` (the only
//! place its `destroy` is called, so destroy is always the last call on it),
//! and every `Election` or `Observer` keeps its `Client` alive, so a client
//! is never destroyed before the candidacies on it. Every other call of the
//! C API is thread-safe, hence every handle here is `Send + Sync` and its
//! methods take `&self`; share an `Election` between threads with `Arc`.
//!
//! Events are pulled (`next_event`, `events()`) or waited for on the event
//! file descriptor (`event_fd()`); no library thread ever calls into Rust.

use std::borrow::Cow;
use std::ffi::{CStr, CString};
use std::fmt;
use std::os::raw::{c_char, c_int};
use std::os::unix::io::BorrowedFd;
use std::ptr::NonNull;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use zkelect_sys as sys;

/// Result of every fallible call.
pub type Result<T> = std::result::Result<T, Error>;

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// A libzkelect error: the C code (`ZKELECT_E*`, negative) and a message,
/// either the library's own detail or `zkelect_strerror(code)`.
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    pub code: i32,
    pub message: String,
}

/// What went wrong, by error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    // BEGIN gen/vocab.py error kind variants
    InvalidArgument,
    NoMemory,
    /// The call does not fit the handle's state (e.g. resign when not a candidate).
    State,
    Closed,
    TimedOut,
    ConnectionLoss,
    SessionExpired,
    Auth,
    NotSupported,
    Deadlock,
    ZooKeeper,
    Internal,
    NoLeader,
    Range,
    NotLeader,
    NoCandidate,
    TargetLost,
    LimitExceeded,
    Fenced,
    // END gen/vocab.py error kind variants
    /// A code this version of the crate does not know (the enum is append-only).
    Other,
}

impl Error {
    /// The error of a C call that just returned `code`: this thread's
    /// `zkelect_last_error` detail ("no candidate under /x") when it names
    /// this code, else `zkelect_strerror(code)`. The last error is left as
    /// it was by calls that succeed, hence the check of its name.
    fn from_code(code: c_int) -> Error {
        let last = unsafe { sys::zkelect_last_error() };
        if !last.is_null() {
            let last = unsafe { CStr::from_ptr(last) }.to_string_lossy();
            let name = static_str(unsafe { sys::zkelect_err_name(code) });
            if let Some(detail) = last.strip_prefix(name).and_then(|r| r.strip_prefix(": ")) {
                if !detail.is_empty() {
                    return Error { code, message: detail.to_string() };
                }
            }
        }
        Error { code, message: strerror(code).to_string() }
    }

    fn with_message(code: c_int, message: impl Into<String>) -> Error {
        let message = message.into();
        if message.is_empty() {
            Error::from_code(code)
        } else {
            Error { code, message }
        }
    }

    /// The kind of error, from `code`.
    pub fn kind(&self) -> ErrorKind {
        use sys::*;
        match self.code {
            // BEGIN gen/vocab.py error kinds
            ZKELECT_EINVAL => ErrorKind::InvalidArgument,
            ZKELECT_ENOMEM => ErrorKind::NoMemory,
            ZKELECT_ESTATE => ErrorKind::State,
            ZKELECT_ECLOSED => ErrorKind::Closed,
            ZKELECT_ETIMEDOUT => ErrorKind::TimedOut,
            ZKELECT_ECONNLOSS => ErrorKind::ConnectionLoss,
            ZKELECT_ESESSION_EXPIRED => ErrorKind::SessionExpired,
            ZKELECT_EAUTH => ErrorKind::Auth,
            ZKELECT_ENOTSUP => ErrorKind::NotSupported,
            ZKELECT_EDEADLK => ErrorKind::Deadlock,
            ZKELECT_EZK => ErrorKind::ZooKeeper,
            ZKELECT_EINTERNAL => ErrorKind::Internal,
            ZKELECT_ENOLEADER => ErrorKind::NoLeader,
            ZKELECT_ERANGE => ErrorKind::Range,
            ZKELECT_ENOTLEADER => ErrorKind::NotLeader,
            ZKELECT_ENOCANDIDATE => ErrorKind::NoCandidate,
            ZKELECT_ETARGET_LOST => ErrorKind::TargetLost,
            ZKELECT_ELIMIT => ErrorKind::LimitExceeded,
            ZKELECT_EFENCED => ErrorKind::Fenced,
            // END gen/vocab.py error kinds
            _ => ErrorKind::Other,
        }
    }

    /// The symbolic name of the code, e.g. `"ZKELECT_EINVAL"`.
    pub fn name(&self) -> &'static str {
        static_str(unsafe { sys::zkelect_err_name(self.code) })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.name())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("code", &self.code)
            .field("name", &self.name())
            .field("message", &self.message)
            .finish()
    }
}

impl std::error::Error for Error {}

/// `zkelect_strerror(code)`.
pub fn strerror(code: i32) -> &'static str {
    static_str(unsafe { sys::zkelect_strerror(code) })
}

/// The runtime library's version as (major, minor, patch).
pub fn version() -> (u32, u32, u32) {
    let v = unsafe { sys::zkelect_version() };
    (v >> 16, (v >> 8) & 0xff, v & 0xff)
}

/// The runtime library's version as "major.minor.patch".
pub fn version_string() -> &'static str {
    static_str(unsafe { sys::zkelect_version_string() })
}

fn check(rc: c_int) -> Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(Error::from_code(rc))
    }
}

// The library's static strings live as long as the (nodelete) library.
fn static_str(p: *const c_char) -> &'static str {
    if p.is_null() {
        return "";
    }
    unsafe { CStr::from_ptr(p) }.to_str().unwrap_or("")
}

fn borrowed_str<'a>(p: *const c_char) -> Cow<'a, str> {
    if p.is_null() {
        return Cow::Borrowed("");
    }
    unsafe { CStr::from_ptr(p) }.to_string_lossy()
}

fn cstring(what: &str, s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| {
        Error::with_message(sys::ZKELECT_EINVAL, format!("{what} contains a NUL byte"))
    })
}

const ERRBUF: usize = 512;

fn errbuf_message(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The error of a call that reports failure only by NULL and a message
/// (constructors, participants). The same rule as the SWIG bindings
/// (bindings/swig/zkelect.i, `zkelect_swig_code_of`): a message
/// "ZKELECT_<NAME>: text" carries its code (the prefix is dropped: Display
/// adds the name), "out of memory" is ENOMEM, "internal error" EINTERNAL,
/// anything else `fallback`, the code of the documented causes.
fn null_error(buf: &[c_char], fallback: c_int) -> Error {
    let msg = errbuf_message(buf);
    if let Some((name, rest)) = msg.split_once(": ") {
        if name.starts_with("ZKELECT_E") {
            let known = (1..=64)
                .map(|n| -n)
                .map(|code| (code, static_str(unsafe { sys::zkelect_err_name(code) })))
                .take_while(|&(_, n)| n != "ZKELECT_EUNKNOWN")
                .find(|&(_, n)| n == name);
            if let Some((code, _)) = known {
                return Error::with_message(code, rest);
            }
        }
    }
    match msg.as_str() {
        "out of memory" => Error::with_message(sys::ZKELECT_ENOMEM, msg),
        "internal error" => Error::with_message(sys::ZKELECT_EINTERNAL, msg),
        _ => Error::with_message(fallback, msg),
    }
}

/// The descriptor `zkelect_event_fd` (or the observer's) returned, or its
/// error: a negative code is never handed out as a descriptor.
fn event_fd_result<'a>(rc: c_int) -> Result<BorrowedFd<'a>> {
    if rc < 0 {
        return Err(Error::from_code(rc));
    }
    // Valid for as long as the handle, which the caller's borrow ties it to.
    Ok(unsafe { BorrowedFd::borrow_raw(rc) })
}

/// Milliseconds for the C API: rounded up (a 0.5 ms wait must not become
/// "do not wait"), and anything past i32::MAX ms (24.8 days) means no limit.
fn timeout_ms(d: Duration) -> c_int {
    let ms = (d.as_nanos() + 999_999) / 1_000_000;
    if ms > i32::MAX as u128 {
        -1
    } else {
        ms as c_int
    }
}

// ---------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------

/// Configuration: string keys and values (see `zkelect_conf_new` in the C
/// header for the keys). Copied by `Client::new`, so it may be dropped after.
pub struct Conf {
    raw: NonNull<sys::zkelect_conf_t>,
}

// set() takes &mut self, the one call the header says is unsafe concurrently.
unsafe impl Send for Conf {}
unsafe impl Sync for Conf {}

impl Conf {
    /// A configuration with every default in place.
    pub fn new() -> Conf {
        let raw = NonNull::new(unsafe { sys::zkelect_conf_new() })
            .expect("zkelect_conf_new: out of memory");
        Conf { raw }
    }

    /// Set `key` to `value`; an unknown key or a bad value is an error that
    /// names it, and leaves the configuration unchanged.
    pub fn set(&mut self, key: &str, value: &str) -> Result<&mut Conf> {
        let k = cstring("key", key)?;
        let v = cstring("value", value)?;
        let mut buf = [0 as c_char; ERRBUF];
        let rc = unsafe {
            sys::zkelect_conf_set(self.raw.as_ptr(), k.as_ptr(), v.as_ptr(), buf.as_mut_ptr(), buf.len())
        };
        if rc != 0 {
            return Err(Error::with_message(rc, errbuf_message(&buf)));
        }
        Ok(self)
    }

    /// The current value of `key`.
    pub fn get(&self, key: &str) -> Result<String> {
        let k = cstring("key", key)?;
        let mut buf = vec![0 as c_char; 256];
        // Bounded: the second round gets the size the library asked for.
        for _ in 0..3 {
            let mut len = buf.len();
            let rc = unsafe { sys::zkelect_conf_get(self.raw.as_ptr(), k.as_ptr(), buf.as_mut_ptr(), &mut len) };
            match rc {
                0 => return Ok(errbuf_message(&buf)),
                sys::ZKELECT_ERANGE => buf = vec![0 as c_char; len.max(buf.len() * 2)],
                rc => return Err(Error::from_code(rc)),
            }
        }
        Err(Error::from_code(sys::ZKELECT_ERANGE))
    }

    /// Every configuration key the library knows, in a fixed order (with
    /// `get`, a listing of the values in force).
    pub fn keys() -> Vec<String> {
        let mut out = Vec::new();
        // Bounded: the library knows a handful of keys.
        for i in 0..1024 {
            let p = unsafe { sys::zkelect_conf_key(i) };
            if p.is_null() {
                break;
            }
            out.push(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned());
        }
        out
    }
}

impl Default for Conf {
    fn default() -> Conf {
        Conf::new()
    }
}

impl Drop for Conf {
    fn drop(&mut self) {
        unsafe { sys::zkelect_conf_destroy(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Conf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Conf").field("zk.hosts", &self.get("zk.hosts").ok()).finish()
    }
}

// ---------------------------------------------------------------------------
// Client
// ---------------------------------------------------------------------------

struct ClientInner {
    raw: NonNull<sys::zkelect_client_t>,
}

unsafe impl Send for ClientInner {}
unsafe impl Sync for ClientInner {}

impl Drop for ClientInner {
    fn drop(&mut self) {
        // Every Election and Observer holds an Arc to this, so none is left:
        // the ESTATE case of zkelect_client_destroy cannot happen here. The
        // session ends through the one shutdown call (a no-op's ECLOSED when
        // Client::shutdown ran already), bounded by one session timeout.
        unsafe {
            sys::zkelect_client_shutdown(self.raw.as_ptr(), -1);
            sys::zkelect_client_destroy(self.raw.as_ptr())
        };
    }
}

/// One ZooKeeper session, shared by any number of elections and observers.
/// Cloning is cheap and shares the session; it closes when the last clone,
/// election and observer on it are dropped.
#[derive(Clone)]
pub struct Client {
    inner: Arc<ClientInner>,
}

/// Monitoring counters of a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Counter {
    // BEGIN gen/vocab.py counter variants
    /// ELECTED events.
    TermsWon,
    /// DEPOSED events of reason RESIGNED.
    DeposedResigned,
    /// DEPOSED events of reason SUSPENDED.
    DeposedSuspended,
    /// DEPOSED events of reason LEASE_ENDED.
    DeposedLeaseEnded,
    /// DEPOSED events of reason EXPIRED.
    DeposedExpired,
    /// DEPOSED events of reason NODE_DELETED.
    DeposedNodeDeleted,
    /// DEPOSED events of reason CLOSED.
    DeposedClosed,
    /// Reconnects within a session.
    Reconnects,
    /// Sessions expired.
    Expiries,
    /// Requests sent to ZooKeeper.
    ZkRequests,
    /// Lease keepalives acknowledged.
    Keepalives,
    /// WARNING events: the path's sequence numbers near their wrap (since 1.1).
    SequenceNearWrap,
    /// WARNING events: a server granted a timeout below 2 x its tickTime (since 1.2).
    SessionTimeoutBelowTwoTicks,
    /// WARNING events: the crash guard could not start, died or was lost (since 1.2).
    CrashGuardWarnings,
    /// LEASE_LOW events: a leader's lease ran low, its renewal late (since 1.2).
    LeaseLow,
    /// Transfers that evened out a balanced group's leaderships (since 1.2).
    BalanceMoves,
    // END gen/vocab.py counter variants
}

impl Counter {
    // BEGIN gen/vocab.py counters
    pub const ALL: [Counter; 16] = [
        Counter::TermsWon,
        Counter::DeposedResigned,
        Counter::DeposedSuspended,
        Counter::DeposedLeaseEnded,
        Counter::DeposedExpired,
        Counter::DeposedNodeDeleted,
        Counter::DeposedClosed,
        Counter::Reconnects,
        Counter::Expiries,
        Counter::ZkRequests,
        Counter::Keepalives,
        Counter::SequenceNearWrap,
        Counter::SessionTimeoutBelowTwoTicks,
        Counter::CrashGuardWarnings,
        Counter::LeaseLow,
        Counter::BalanceMoves,
    ];
    // END gen/vocab.py counters

    fn code(self) -> c_int {
        use sys::*;
        match self {
            // BEGIN gen/vocab.py counter codes
            Counter::TermsWon => ZKELECT_COUNTER_TERMS_WON,
            Counter::DeposedResigned => ZKELECT_COUNTER_DEPOSED_RESIGNED,
            Counter::DeposedSuspended => ZKELECT_COUNTER_DEPOSED_SUSPENDED,
            Counter::DeposedLeaseEnded => ZKELECT_COUNTER_DEPOSED_LEASE_ENDED,
            Counter::DeposedExpired => ZKELECT_COUNTER_DEPOSED_EXPIRED,
            Counter::DeposedNodeDeleted => ZKELECT_COUNTER_DEPOSED_NODE_DELETED,
            Counter::DeposedClosed => ZKELECT_COUNTER_DEPOSED_CLOSED,
            Counter::Reconnects => ZKELECT_COUNTER_RECONNECTS,
            Counter::Expiries => ZKELECT_COUNTER_EXPIRIES,
            Counter::ZkRequests => ZKELECT_COUNTER_ZK_REQUESTS,
            Counter::Keepalives => ZKELECT_COUNTER_KEEPALIVES,
            Counter::SequenceNearWrap => ZKELECT_COUNTER_SEQUENCE_NEAR_WRAP,
            Counter::SessionTimeoutBelowTwoTicks => ZKELECT_COUNTER_SESSION_TIMEOUT_BELOW_TWO_TICKS,
            Counter::CrashGuardWarnings => ZKELECT_COUNTER_CRASH_GUARD_WARNINGS,
            Counter::LeaseLow => ZKELECT_COUNTER_LEASE_LOW,
            Counter::BalanceMoves => ZKELECT_COUNTER_BALANCE_MOVES,
            // END gen/vocab.py counter codes
        }
    }

    /// The library's name of the counter, e.g. `"terms_won"`.
    pub fn name(self) -> &'static str {
        static_str(unsafe { sys::zkelect_counter_name(self.code()) })
    }
}

impl Client {
    /// Start a session with the settings of `conf`. Does not wait for the
    /// connection (see `await_connected`).
    pub fn new(conf: &Conf) -> Result<Client> {
        let mut buf = [0 as c_char; ERRBUF];
        let raw = unsafe { sys::zkelect_client_new(conf.raw.as_ptr(), buf.as_mut_ptr(), buf.len()) };
        match NonNull::new(raw) {
            Some(raw) => Ok(Client { inner: Arc::new(ClientInner { raw }) }),
            None => Err(null_error(&buf, sys::ZKELECT_EINVAL)),
        }
    }

    /// A client with every default but the connect string.
    pub fn connect(hosts: &str) -> Result<Client> {
        let mut conf = Conf::new();
        conf.set("zk.hosts", hosts)?;
        Client::new(&conf)
    }

    fn raw(&self) -> *mut sys::zkelect_client_t {
        self.inner.raw.as_ptr()
    }

    /// Wait until the session is connected; `None` waits for the
    /// configured `zk.connect.timeout.ms`.
    pub fn await_connected(&self, timeout: Option<Duration>) -> Result<()> {
        // -1 asks for the configured default; an unlimited Duration gets the
        // longest wait the C int can say.
        let ms = match timeout {
            None => -1,
            Some(d) => match timeout_ms(d) {
                -1 => i32::MAX,
                ms => ms,
            },
        };
        check(unsafe { sys::zkelect_client_await_connected(self.raw(), ms) })
    }

    /// End every election and observer of this client at once (their
    /// deletes sent together), then its session, and wait until their nodes
    /// are gone; `None` waits at most one session timeout. Leadership ends
    /// on every handle before any delete is sent. Dropping the elections
    /// afterwards costs no round trip; their calls fail with `Closed`.
    /// `TimedOut` when nodes may be left (the servers remove them with the
    /// session), `Closed` when shut down already.
    pub fn shutdown(&self, timeout: Option<Duration>) -> Result<()> {
        let ms = match timeout {
            None => -1,
            Some(d) => match timeout_ms(d) {
                -1 => 600_000,
                ms => ms.min(600_000),
            },
        };
        check(unsafe { sys::zkelect_client_shutdown(self.raw(), ms) })
    }

    pub fn is_connected(&self) -> bool {
        unsafe { sys::zkelect_client_is_connected(self.raw()) == 1 }
    }

    /// The session timeout the server negotiated; `None` before the first
    /// connection.
    pub fn session_timeout(&self) -> Option<Duration> {
        match unsafe { sys::zkelect_client_session_timeout_ms(self.raw()) } {
            ms if ms > 0 => Some(Duration::from_millis(ms as u64)),
            _ => None,
        }
    }

    /// The current ZooKeeper session id; 0 before the first connection.
    pub fn session_id(&self) -> i64 {
        unsafe { sys::zkelect_client_session_id(self.raw()) }
    }

    pub fn counter(&self, counter: Counter) -> u64 {
        let mut v = 0u64;
        let rc = unsafe { sys::zkelect_client_counter(self.raw(), counter.code(), &mut v) };
        debug_assert_eq!(rc, 0, "every Counter is known to the library");
        v
    }

    /// Every counter with its value.
    pub fn counters(&self) -> Vec<(Counter, u64)> {
        Counter::ALL.iter().map(|&c| (c, self.counter(c))).collect()
    }

    /// The candidates of the election at `path`, in queue order (the leader
    /// first), without taking part. Asks ZooKeeper.
    pub fn participants(&self, path: &str) -> Result<Vec<Participant>> {
        let p = cstring("path", path)?;
        let mut buf = [0 as c_char; ERRBUF];
        let raw = unsafe { sys::zkelect_client_participants(self.raw(), p.as_ptr(), buf.as_mut_ptr(), buf.len()) };
        Participant::collect(raw, &buf)
    }

    /// Ask the current leader of the election at `path`, from outside it, to
    /// hand leadership to the candidate whose id is `target_id`, the leader
    /// waiting at most `timeout` for it to be next in line (docs/semantics.md,
    /// "A transfer asked from outside"). `Ok` once the target leads.
    /// `ErrorKind::NoLeader`, `NoCandidate`, `NotSupported` or `State`:
    /// nothing changed; `TimedOut` or `TargetLost`: the leadership went to
    /// the next in line. Blocks. Since libzkelect 1.2.
    pub fn transfer(&self, path: &str, target_id: &str, timeout: Duration) -> Result<()> {
        let p = cstring("path", path)?;
        let target = cstring("target id", target_id)?;
        check(unsafe {
            sys::zkelect_client_transfer(self.raw(), p.as_ptr(), target.as_ptr(), timeout_ms(timeout))
        })
    }

    /// A fenced write by a process that does not hold the candidacy
    /// (docs/fencing.md): `ops` committed in one ZooKeeper multi only while
    /// `node`, the leader's node (its full path: the election path, `/`,
    /// the `ELECTED` event's node), stands and is the node of the term whose
    /// fencing token is `token`, such as a command of `zkelect run`
    /// (`$ZKELECT_NODE`, `$ZKELECT_TOKEN`). Give it only what an `ELECTED`
    /// said: it checks that the node is that term's, not that it ever led.
    /// Waits at most `timeout`. `ErrorKind::Fenced`: the node is gone or is
    /// another term's, nothing committed; the other errors are
    /// `Election::fenced_commit`'s, never `NotLeader`. Blocks. Since
    /// libzkelect 1.2.
    pub fn fenced_commit(&self, node: &str, token: i64, ops: &[FencedOp<'_>], timeout: Duration) -> Result<()> {
        let node = cstring("node", node)?;
        let batch = FencedBatch::new(ops)?;
        check(unsafe {
            sys::zkelect_client_fenced_commit(self.raw(), node.as_ptr(), token, batch.0, timeout_ms(timeout))
        })
    }

    /// A snapshot of this client's figures as one JSON object: its session,
    /// its counters, and under `"elections"` the snapshot of each of its
    /// elections (docs/monitoring.md lists the keys; keys may be added, never
    /// removed). Asks nothing of ZooKeeper. Since libzkelect 1.2.
    pub fn stats_json(&self) -> Result<String> {
        let mut buf = [0 as c_char; ERRBUF];
        take_stats(unsafe { sys::zkelect_client_stats(self.raw(), buf.as_mut_ptr(), buf.len()) }, &buf)
    }

    /// Shorthand for `Election::new(self, path, participant_id)`.
    pub fn election(&self, path: &str, participant_id: &str) -> Result<Election> {
        Election::new(self, path, participant_id)
    }

    /// Shorthand for `Observer::new(self, path)`.
    pub fn observer(&self, path: &str) -> Result<Observer> {
        Observer::new(self, path)
    }
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("session_id", &format_args!("{:#x}", self.session_id()))
            .field("connected", &self.is_connected())
            .finish()
    }
}

/// One candidate of an election, as ZooKeeper listed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Participant {
    /// The participant id (the data of its node).
    pub id: String,
    /// The node name, without the election path.
    pub node: String,
    /// The czxid of its node: the fencing token it leads (or would lead) with.
    pub token: i64,
    /// Creation time of its node, ms since the epoch, server clock.
    pub ctime_ms: i64,
    /// `election.priority` as its node's name carries it, 0 to 255 (0: none;
    /// also for Curator's candidates). Since libzkelect 1.2.
    pub priority: i32,
}

impl Participant {
    fn collect(raw: *mut sys::zkelect_participants_t, errbuf: &[c_char]) -> Result<Vec<Participant>> {
        if raw.is_null() {
            return Err(null_error(errbuf, sys::ZKELECT_EINVAL));
        }
        let n = unsafe { sys::zkelect_participants_count(raw) };
        let list = (0..n)
            .map(|i| unsafe {
                Participant {
                    id: borrowed_str(sys::zkelect_participants_id(raw, i)).into_owned(),
                    node: borrowed_str(sys::zkelect_participants_node(raw, i)).into_owned(),
                    token: sys::zkelect_participants_token(raw, i),
                    ctime_ms: sys::zkelect_participants_ctime_ms(raw, i),
                    priority: sys::zkelect_participants_priority(raw, i),
                }
            })
            .collect();
        unsafe { sys::zkelect_participants_destroy(raw) };
        Ok(list)
    }
}

/// The JSON of a snapshot, which is freed here.
fn take_stats(raw: *mut sys::zkelect_stats_t, errbuf: &[c_char]) -> Result<String> {
    if raw.is_null() {
        return Err(null_error(errbuf, sys::ZKELECT_EINVAL));
    }
    let json = borrowed_str(unsafe { sys::zkelect_stats_json(raw) }).into_owned();
    unsafe { sys::zkelect_stats_destroy(raw) };
    Ok(json)
}

// ---------------------------------------------------------------------------
// Election
// ---------------------------------------------------------------------------

/// One candidacy of one participant on one election path. It starts idle:
/// `volunteer` enters the election. Dropping it leaves the election (a
/// leader is deposed) and deletes its node, waiting for ZooKeeper's
/// acknowledgement for at most the session timeout.
/// The statement a fenced PostgreSQL transaction begins with, its
/// parameters the resource's name (text) and the leader's fencing token
/// (bigint): the check of `fencing.sql` (docs/fencing.md, "PostgreSQL").
pub const FENCE_SQL: &str = "SELECT zkelect.fence($1, $2)";

/// The SQLSTATE of `fencing.sql`'s refusal: the token is older than one
/// the resource has seen, so this process no longer leads; the transaction
/// is aborted and nothing of it is kept.
pub const DEPOSED_SQLSTATE: &str = "ZKE01";

/// A fenced write's batch of operations, freed when dropped.
struct FencedBatch(*mut sys::zkelect_fenced_ops_t);

impl Drop for FencedBatch {
    fn drop(&mut self) {
        unsafe { sys::zkelect_fenced_ops_destroy(self.0) }
    }
}

impl FencedBatch {
    fn new(ops: &[FencedOp<'_>]) -> Result<FencedBatch> {
        let raw = unsafe { sys::zkelect_fenced_ops_new() };
        if raw.is_null() {
            return Err(Error::with_message(sys::ZKELECT_ENOMEM, "out of memory"));
        }
        let batch = FencedBatch(raw);
        for op in ops {
            let rc = match *op {
                FencedOp::Set { path, data, version } => {
                    let p = cstring("path", path)?;
                    unsafe {
                        sys::zkelect_fenced_ops_set(batch.0, p.as_ptr(), data.as_ptr().cast(), data.len(), version)
                    }
                }
                FencedOp::Create { path, data, ephemeral } => {
                    let p = cstring("path", path)?;
                    let flags = if ephemeral { sys::ZKELECT_FENCED_EPHEMERAL } else { 0 };
                    unsafe {
                        sys::zkelect_fenced_ops_create(batch.0, p.as_ptr(), data.as_ptr().cast(), data.len(), flags)
                    }
                }
                FencedOp::Delete { path, version } => {
                    let p = cstring("path", path)?;
                    unsafe { sys::zkelect_fenced_ops_delete(batch.0, p.as_ptr(), version) }
                }
            };
            check(rc)?;
        }
        Ok(batch)
    }
}

/// One operation of a fenced write (`Election::fenced_commit`). A version
/// of -1 is any version.
#[derive(Clone, Copy, Debug)]
pub enum FencedOp<'a> {
    /// Set the node's data, only at `version`.
    Set { path: &'a str, data: &'a [u8], version: i32 },
    /// Create the node (its parent must exist or be created earlier in the
    /// batch); ephemeral nodes go with the client's session.
    Create { path: &'a str, data: &'a [u8], ephemeral: bool },
    /// Delete the node, only at `version`.
    Delete { path: &'a str, version: i32 },
}

pub struct Election {
    raw: NonNull<sys::zkelect_election_t>,
    client: Client,
    path: String,
    id: String,
}

// Every call but destroy is thread-safe in the C API, and destroy is only
// reachable through Drop, which needs ownership, so no call can race it.
unsafe impl Send for Election {}
unsafe impl Sync for Election {}

impl Election {
    /// A candidacy of `participant_id` on `path` (absolute, created with its
    /// parents when missing).
    pub fn new(client: &Client, path: &str, participant_id: &str) -> Result<Election> {
        let p = cstring("path", path)?;
        let id = cstring("participant id", participant_id)?;
        let mut buf = [0 as c_char; ERRBUF];
        let raw = unsafe {
            sys::zkelect_election_new(client.raw(), p.as_ptr(), id.as_ptr(), buf.as_mut_ptr(), buf.len())
        };
        match NonNull::new(raw) {
            Some(raw) => Ok(Election {
                raw,
                client: client.clone(),
                path: path.to_string(),
                id: participant_id.to_string(),
            }),
            None => Err(null_error(&buf, sys::ZKELECT_EINVAL)),
        }
    }

    fn raw(&self) -> *mut sys::zkelect_election_t {
        self.raw.as_ptr()
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    /// This candidacy's participant id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Enter the election. Non-blocking: the outcome arrives as events.
    /// `ErrorKind::State` when already a candidate; `LimitExceeded`, doing
    /// nothing, when its node would bring the client's candidate nodes
    /// above `zk.session.nodes.max.bytes` (docs/limits.md).
    pub fn volunteer(&self) -> Result<()> {
        check(unsafe { sys::zkelect_volunteer(self.raw()) })
    }

    /// Leave the election: stops leading before it returns; the node is
    /// deleted in the background (a `Resigned` event says when).
    /// `ErrorKind::State` when not a candidate.
    pub fn resign(&self) -> Result<()> {
        check(unsafe { sys::zkelect_resign(self.raw()) })
    }

    /// Step back to the back of the line in one call (resign, then
    /// volunteer, nothing between): not leading when this returns; Deposed
    /// (a leader), Resigned, then Following or Elected follow. `State`
    /// when not a candidate; `LimitExceeded`, doing nothing, when the new
    /// node, counted beside the old one until that is gone, would bring the
    /// client's candidate nodes above `zk.session.nodes.max.bytes`.
    pub fn requeue(&self) -> Result<()> {
        check(unsafe { sys::zkelect_requeue(self.raw()) })
    }

    /// True while this candidacy leads and its lease runs. Never blocks.
    pub fn is_leader(&self) -> bool {
        unsafe { sys::zkelect_is_leader(self.raw()) == 1 }
    }

    /// The lease time left while this candidacy leads (whole ms), else
    /// zero: how much longer `is_leader` stays true unless a renewal pushes
    /// the deadline later. To decide whether work fits in the term, use
    /// `is_leader_for`, which answers from one reading. Never blocks.
    pub fn lease_left(&self) -> Duration {
        let ms = unsafe { sys::zkelect_lease_left_ms(self.raw()) };
        Duration::from_millis(ms.max(0) as u64)
    }

    /// True if this candidacy leads now and its lease runs at least `d` more
    /// (rounded up to whole ms), from one reading of the deadline and the
    /// clock: no other candidate can be elected within `d` plus the lease
    /// margin unless this one resigns. `Duration::ZERO` asks the same as
    /// `is_leader`. Never blocks.
    pub fn is_leader_for(&self, d: Duration) -> bool {
        let ms = timeout_ms(d);
        let ms = if ms < 0 { c_int::MAX } else { ms };
        unsafe { sys::zkelect_is_leader_for(self.raw(), ms) == 1 }
    }

    /// Block until this candidacy leads (`Ok`) or `timeout` passes
    /// (`ErrorKind::TimedOut`). Does not consume events.
    pub fn await_leader(&self, timeout: Duration) -> Result<()> {
        check(unsafe { sys::zkelect_await_leader(self.raw(), timeout_ms(timeout)) })
    }

    /// Hand this leader's leadership to the candidate of the same path whose
    /// id is `target_id`, waiting at most `timeout` for it to be next in line
    /// (docs/semantics.md, "Transferring leadership"). `Ok` once the target
    /// is first. `ErrorKind::NoCandidate`, `NotLeader` or `NotSupported` (a
    /// candidate ahead of the target cannot step back): nothing changed;
    /// `TimedOut` or `TargetLost`: the leadership went to the next in line,
    /// as after a resign. This candidacy stays a candidate, at the back.
    pub fn transfer(&self, target_id: &str, timeout: Duration) -> Result<()> {
        let target = cstring("target id", target_id)?;
        check(unsafe { sys::zkelect_transfer(self.raw(), target.as_ptr(), timeout_ms(timeout)) })
    }

    /// A fenced write (docs/fencing.md, "Fenced ZooKeeper writes"): `ops`
    /// in one ZooKeeper multi behind a check of this candidacy's node,
    /// committed whole and only while it leads its term; waits at most
    /// `timeout`. `ErrorKind::NotLeader`: nothing was sent. `Fenced`: the
    /// term is over, nothing committed. `ZooKeeper` or `Auth`: an operation
    /// was refused (its 0-based index in the message), nothing committed.
    /// `ConnectionLoss`, `SessionExpired`, `TimedOut`: the outcome is
    /// unknown (it committed whole, before any successor, or not at all:
    /// read what it wrote). Blocks. Since libzkelect 1.2.
    pub fn fenced_commit(&self, ops: &[FencedOp<'_>], timeout: Duration) -> Result<()> {
        let batch = FencedBatch::new(ops)?;
        check(unsafe { sys::zkelect_fenced_commit(self.raw(), batch.0, timeout_ms(timeout)) })
    }

    /// The fencing token of the current term; `ErrorKind::NotLeader` when
    /// not leading.
    pub fn fencing_token(&self) -> Result<i64> {
        let mut token = 0i64;
        check(unsafe { sys::zkelect_fencing_token(self.raw(), &mut token) })?;
        Ok(token)
    }

    /// Ask ZooKeeper who leads this election now. `ErrorKind::NoLeader`
    /// when there is no candidate.
    pub fn leader_id(&self) -> Result<String> {
        // Ids of other programs on the same path (Curator) may exceed our own
        // ZKELECT_ID_MAX, so grow on ERANGE, a bounded number of times.
        let mut len = sys::ZKELECT_ID_MAX + 1;
        for _ in 0..6 {
            let mut buf = vec![0 as c_char; len];
            match unsafe { sys::zkelect_leader_id(self.raw(), buf.as_mut_ptr(), buf.len()) } {
                0 => return Ok(errbuf_message(&buf)),
                sys::ZKELECT_ERANGE => len *= 8,
                rc => return Err(Error::from_code(rc)),
            }
        }
        Err(Error::from_code(sys::ZKELECT_ERANGE))
    }

    /// Ask ZooKeeper for the candidates, in queue order (the leader first).
    pub fn participants(&self) -> Result<Vec<Participant>> {
        let mut buf = [0 as c_char; ERRBUF];
        let raw = unsafe { sys::zkelect_participants(self.raw(), buf.as_mut_ptr(), buf.len()) };
        Participant::collect(raw, &buf)
    }

    /// A snapshot of this candidacy's figures as one JSON object: state,
    /// term, queue position, losses by reason, keepalive round trips and
    /// failover latency (docs/monitoring.md). Asks nothing of ZooKeeper.
    /// Since libzkelect 1.2.
    pub fn stats_json(&self) -> Result<String> {
        let mut buf = [0 as c_char; ERRBUF];
        take_stats(unsafe { sys::zkelect_election_stats(self.raw(), buf.as_mut_ptr(), buf.len()) }, &buf)
    }

    /// The next event, waiting up to `timeout`; `None` on timeout or after
    /// `wake`.
    pub fn next_event(&self, timeout: Duration) -> Option<Event> {
        Event::wrap(unsafe { sys::zkelect_next_event(self.raw(), timeout_ms(timeout)) })
    }

    /// A blocking iterator of events, in the order they happened. It ends
    /// only when `wake` is called (from another thread).
    pub fn events(&self) -> Events<'_> {
        Events { source: Source::Election(self), timeout: -1 }
    }

    /// An iterator of events that ends at the first wait longer than
    /// `timeout` (or at `wake`).
    pub fn events_timeout(&self, timeout: Duration) -> Events<'_> {
        Events { source: Source::Election(self), timeout: timeout_ms(timeout) }
    }

    /// Make one waiting (or the next) `next_event` return `None` at once.
    pub fn wake(&self) {
        unsafe { sys::zkelect_wake(self.raw()) };
    }
}

impl Election {
    /// A descriptor readable exactly while events wait (level-triggered),
    /// for poll/epoll/mio. Owned by the library: never read, write or close
    /// it. Made on the first call; an error (`ErrorKind::Internal` or
    /// `NoMemory`) when it cannot be, e.g. when the process is out of
    /// descriptors, in which case a later call tries again.
    pub fn event_fd(&self) -> Result<BorrowedFd<'_>> {
        event_fd_result(unsafe { sys::zkelect_event_fd(self.raw()) })
    }
}

impl Drop for Election {
    fn drop(&mut self) {
        unsafe { sys::zkelect_election_destroy(self.raw()) };
    }
}

impl fmt::Debug for Election {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Election")
            .field("path", &self.path)
            .field("id", &self.id)
            .field("is_leader", &self.is_leader())
            .finish()
    }
}

// ---------------------------------------------------------------------------
// Observer
// ---------------------------------------------------------------------------

/// Watches who leads the election at a path without taking part. Its first
/// event is `LeaderChanged` with the current leader (or none).
pub struct Observer {
    raw: NonNull<sys::zkelect_observer_t>,
    client: Client,
}

// As for Election: destroy only through Drop, everything else thread-safe.
unsafe impl Send for Observer {}
unsafe impl Sync for Observer {}

impl Observer {
    pub fn new(client: &Client, path: &str) -> Result<Observer> {
        let p = cstring("path", path)?;
        let mut buf = [0 as c_char; ERRBUF];
        let raw = unsafe { sys::zkelect_observer_new(client.raw(), p.as_ptr(), buf.as_mut_ptr(), buf.len()) };
        match NonNull::new(raw) {
            Some(raw) => Ok(Observer { raw, client: client.clone() }),
            None => Err(null_error(&buf, sys::ZKELECT_EINVAL)),
        }
    }

    fn raw(&self) -> *mut sys::zkelect_observer_t {
        self.raw.as_ptr()
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn next_event(&self, timeout: Duration) -> Option<Event> {
        Event::wrap(unsafe { sys::zkelect_observer_next_event(self.raw(), timeout_ms(timeout)) })
    }

    pub fn events(&self) -> Events<'_> {
        Events { source: Source::Observer(self), timeout: -1 }
    }

    pub fn events_timeout(&self, timeout: Duration) -> Events<'_> {
        Events { source: Source::Observer(self), timeout: timeout_ms(timeout) }
    }

    pub fn wake(&self) {
        unsafe { sys::zkelect_observer_wake(self.raw()) };
    }
}

impl Observer {
    /// As `Election::event_fd`, for the observer's events.
    pub fn event_fd(&self) -> Result<BorrowedFd<'_>> {
        event_fd_result(unsafe { sys::zkelect_observer_event_fd(self.raw()) })
    }
}

impl Drop for Observer {
    fn drop(&mut self) {
        unsafe { sys::zkelect_observer_destroy(self.raw()) };
    }
}

impl fmt::Debug for Observer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Observer").finish_non_exhaustive()
    }
}

// ---------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------

enum Source<'a> {
    Election(&'a Election),
    Observer(&'a Observer),
}

/// Iterator over a handle's events (see `Election::events`).
pub struct Events<'a> {
    source: Source<'a>,
    timeout: c_int,
}

impl Iterator for Events<'_> {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        let raw = match self.source {
            Source::Election(e) => unsafe { sys::zkelect_next_event(e.raw(), self.timeout) },
            Source::Observer(o) => unsafe { sys::zkelect_observer_next_event(o.raw(), self.timeout) },
        };
        Event::wrap(raw)
    }
}

/// The type of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    // BEGIN gen/vocab.py event kind variants
    /// This candidacy now leads; `token()` is the fencing token.
    Elected,
    /// This candidacy stopped leading; `reason()` says why.
    Deposed,
    /// Enrolled and not leading; `node()`/`id()` name the predecessor.
    Following,
    Suspended,
    Reconnected,
    Expired,
    /// (Observers) the leader changed; `id()`/`token()` name it, empty/0 for none.
    LeaderChanged,
    /// A failure: `error()`, `zk_rc()`, `message()`.
    Error,
    /// The resign finished: the node is gone.
    Resigned,
    /// The queue was full and older events were dropped; `token()` counts them.
    Overflow,
    /// Nothing failed, but an operator should act; `message()` says what
    /// (the path's sequence numbers near their wrap; since 1.2 also a session
    /// timeout below 2 x the server's tickTime).
    Warning,
    /// This candidate left its place in line and joined again at the back,
    /// still a candidate; `reason()` says why (`Transferred`), `node()`/`id()` name
    /// the candidate the leadership is being handed to.
    SteppedBack,
    /// This leader's lease has less than `lease.warn.percent` of its length
    /// left: the renewal it needs is late. `token()` is the term's, `message()` says
    /// how much is left. Once per term until a renewal clears it.
    LeaseLow,
    // END gen/vocab.py event kind variants
    /// A type newer than this crate.
    Unknown(i32),
}

impl EventKind {
    fn from_code(code: c_int) -> EventKind {
        use sys::*;
        match code {
            // BEGIN gen/vocab.py event kinds
            ZKELECT_EV_ELECTED => EventKind::Elected,
            ZKELECT_EV_DEPOSED => EventKind::Deposed,
            ZKELECT_EV_FOLLOWING => EventKind::Following,
            ZKELECT_EV_SUSPENDED => EventKind::Suspended,
            ZKELECT_EV_RECONNECTED => EventKind::Reconnected,
            ZKELECT_EV_EXPIRED => EventKind::Expired,
            ZKELECT_EV_LEADER_CHANGED => EventKind::LeaderChanged,
            ZKELECT_EV_ERROR => EventKind::Error,
            ZKELECT_EV_RESIGNED => EventKind::Resigned,
            ZKELECT_EV_OVERFLOW => EventKind::Overflow,
            ZKELECT_EV_WARNING => EventKind::Warning,
            ZKELECT_EV_STEPPED_BACK => EventKind::SteppedBack,
            ZKELECT_EV_LEASE_LOW => EventKind::LeaseLow,
            // END gen/vocab.py event kinds
            other => EventKind::Unknown(other),
        }
    }
}

/// Why a `Deposed` event happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    // BEGIN gen/vocab.py reason variants
    None,
    Resigned,
    Suspended,
    LeaseEnded,
    Expired,
    NodeDeleted,
    Closed,
    Transferred,
    // END gen/vocab.py reason variants
    Unknown(i32),
}

impl Reason {
    fn from_code(code: c_int) -> Reason {
        use sys::*;
        match code {
            // BEGIN gen/vocab.py reasons
            ZKELECT_REASON_NONE => Reason::None,
            ZKELECT_REASON_RESIGNED => Reason::Resigned,
            ZKELECT_REASON_SUSPENDED => Reason::Suspended,
            ZKELECT_REASON_LEASE_ENDED => Reason::LeaseEnded,
            ZKELECT_REASON_EXPIRED => Reason::Expired,
            ZKELECT_REASON_NODE_DELETED => Reason::NodeDeleted,
            ZKELECT_REASON_CLOSED => Reason::Closed,
            ZKELECT_REASON_TRANSFERRED => Reason::Transferred,
            // END gen/vocab.py reasons
            other => Reason::Unknown(other),
        }
    }
}

/// One event, owned; independent of the handle it came from.
pub struct Event {
    raw: NonNull<sys::zkelect_event_t>,
}

// Events are immutable after they are queued; their accessors are thread-safe.
unsafe impl Send for Event {}
unsafe impl Sync for Event {}

impl Event {
    fn wrap(raw: *mut sys::zkelect_event_t) -> Option<Event> {
        NonNull::new(raw).map(|raw| Event { raw })
    }

    fn raw(&self) -> *const sys::zkelect_event_t {
        self.raw.as_ptr()
    }

    pub fn kind(&self) -> EventKind {
        EventKind::from_code(unsafe { sys::zkelect_event_type(self.raw()) })
    }

    /// The library's name of the type: "ELECTED", "DEPOSED", ...
    pub fn kind_name(&self) -> &'static str {
        static_str(unsafe { sys::zkelect_event_type_name(sys::zkelect_event_type(self.raw())) })
    }

    /// For `Deposed`; `Reason::None` otherwise.
    pub fn reason(&self) -> Reason {
        Reason::from_code(unsafe { sys::zkelect_event_reason(self.raw()) })
    }

    /// "resigned", "lease_ended", ...; "none".
    pub fn reason_name(&self) -> &'static str {
        static_str(unsafe { sys::zkelect_reason_name(sys::zkelect_event_reason(self.raw())) })
    }

    /// The fencing token for `Elected` and `LeaderChanged`, else 0.
    pub fn token(&self) -> i64 {
        unsafe { sys::zkelect_event_token(self.raw()) }
    }

    /// For `Error` events: the error, with the event's message.
    pub fn error(&self) -> Option<Error> {
        match unsafe { sys::zkelect_event_error(self.raw()) } {
            0 => None,
            code => Some(Error::with_message(code, self.message().into_owned())),
        }
    }

    /// ZooKeeper's own return code for `Error` (0 when none).
    pub fn zk_rc(&self) -> i32 {
        unsafe { sys::zkelect_event_zk_rc(self.raw()) }
    }

    pub fn message(&self) -> Cow<'_, str> {
        borrowed_str(unsafe { sys::zkelect_event_message(self.raw()) })
    }

    /// `Elected`: our node; `Following`: the predecessor's; `LeaderChanged`:
    /// the leader's; "" otherwise.
    pub fn node(&self) -> Cow<'_, str> {
        borrowed_str(unsafe { sys::zkelect_event_node(self.raw()) })
    }

    /// `Following`: the predecessor's id; `LeaderChanged`: the leader's;
    /// `Elected`: ours; "" otherwise.
    pub fn id(&self) -> Cow<'_, str> {
        borrowed_str(unsafe { sys::zkelect_event_id(self.raw()) })
    }

    /// When the library saw the change, ns since the epoch (CLOCK_REALTIME).
    pub fn time_ns(&self) -> i64 {
        unsafe { sys::zkelect_event_time_ns(self.raw()) }
    }

    pub fn time(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_nanos(self.time_ns().max(0) as u64)
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        unsafe { sys::zkelect_event_destroy(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Event");
        d.field("kind", &self.kind());
        if self.kind() == EventKind::Deposed {
            d.field("reason", &self.reason());
        }
        if self.token() != 0 {
            d.field("token", &self.token());
        }
        if !self.id().is_empty() {
            d.field("id", &self.id());
        }
        if let Some(e) = self.error() {
            d.field("error", &e);
        }
        d.field("message", &self.message()).finish()
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind_name(), self.message())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_round_up_and_saturate() {
        assert_eq!(timeout_ms(Duration::ZERO), 0);
        assert_eq!(timeout_ms(Duration::from_micros(1)), 1);
        assert_eq!(timeout_ms(Duration::from_millis(1500)), 1500);
        assert_eq!(timeout_ms(Duration::from_millis(i32::MAX as u64)), i32::MAX);
        assert_eq!(timeout_ms(Duration::from_millis(i32::MAX as u64 + 1)), -1);
        assert_eq!(timeout_ms(Duration::MAX), -1);
    }

    /// Every event type, counter and error code the library names has its
    /// variant here (the C library answers "UNKNOWN"/NULL/"ZKELECT_EUNKNOWN"
    /// past its last).
    #[test]
    fn every_event_type_counter_and_code_of_the_library_is_known() {
        for code in 1..64 {
            let name = static_str(unsafe { sys::zkelect_event_type_name(code) });
            let kind = EventKind::from_code(code);
            if name == "UNKNOWN" {
                assert_eq!(kind, EventKind::Unknown(code));
            } else {
                assert_ne!(kind, EventKind::Unknown(code), "event type {code} ({name})");
            }
        }
        let names: Vec<&str> = Counter::ALL.iter().map(|c| c.name()).collect();
        for i in 0..sys::ZKELECT_COUNTER__COUNT {
            let name = static_str(unsafe { sys::zkelect_counter_name(i) });
            assert!(names.contains(&name), "Counter::ALL lacks counter {i} ({name})");
        }
        assert_eq!(names.len(), sys::ZKELECT_COUNTER__COUNT as usize);
        for code in -64..0 {
            let name = static_str(unsafe { sys::zkelect_err_name(code) });
            let kind = Error { code, message: String::new() }.kind();
            assert_eq!(kind == ErrorKind::Other, name == "ZKELECT_EUNKNOWN", "code {code} ({name})");
        }
    }

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn handles_are_send_and_sync() {
        assert_send_sync::<Conf>();
        assert_send_sync::<Client>();
        assert_send_sync::<Election>();
        assert_send_sync::<Observer>();
        assert_send_sync::<Event>();
        assert_send_sync::<Error>();
    }
}
