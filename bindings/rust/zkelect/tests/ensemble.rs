//! Tests against a real ZooKeeper ensemble, whose connect string comes in
//! ZKELECT_TEST_HOSTS (tests/bindings/test_rust.py starts one and sets it).
//! Every test uses its own election path; waits are on events or blocking
//! calls with deadlines, never fixed sleeps.

use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use zkelect::{Client, Conf, Counter, Election, ErrorKind, Event, EventKind, FencedOp, Reason};

const WAIT: Duration = Duration::from_secs(20);
/// Every client's zk.session.timeout.ms (a lease is at most half of it).
const SESSION: Duration = Duration::from_secs(6);

fn hosts() -> String {
    match std::env::var("ZKELECT_TEST_HOSTS") {
        Ok(h) if !h.is_empty() => h,
        _ => panic!(
            "ZKELECT_TEST_HOSTS is not set: these tests need a running ZooKeeper ensemble. \
             Run them with `pytest tests/bindings/test_rust.py` (which starts one), or export \
             ZKELECT_TEST_HOSTS=host:port[,host:port...]"
        ),
    }
}

fn unique_path(test: &str) -> String {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos();
    format!("/zkelect-rust/{test}-{}-{nanos}", std::process::id())
}

fn client() -> Client {
    let mut conf = Conf::new();
    conf.set("zk.hosts", &hosts()).unwrap();
    conf.set("zk.session.timeout.ms", &SESSION.as_millis().to_string()).unwrap();
    let client = Client::new(&conf).expect("client_new");
    client.await_connected(Some(WAIT)).expect("connect to the test ensemble");
    client
}

/// Read events until `want` has come out in this order as the next events,
/// or fail, listing what came, at the deadline.
fn expect_events(e: &Election, want: &[EventKind]) -> Vec<Event> {
    let deadline = Instant::now() + WAIT;
    let mut got: Vec<Event> = Vec::new();
    while got.len() < want.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        match e.next_event(left) {
            Some(ev) => got.push(ev),
            None => break,
        }
    }
    let kinds: Vec<EventKind> = got.iter().map(Event::kind).collect();
    assert_eq!(kinds, want, "events of {}: {got:?}", e.id());
    got
}

fn ids(list: &[zkelect::Participant]) -> Vec<&str> {
    list.iter().map(|p| p.id.as_str()).collect()
}

/// Candidates a, b, c in this queue order, each on its own session: each
/// joins only once the previous one is enrolled, so the order is known.
fn queue_of_three(path: &str) -> Vec<Election> {
    let mut out = Vec::new();
    for id in ["a", "b", "c"] {
        let e = client().election(path, id).unwrap();
        e.volunteer().unwrap();
        let first = if out.is_empty() { EventKind::Elected } else { EventKind::Following };
        let ev = expect_events(&e, &[first]);
        if let Some(prev) = out.last() {
            let prev: &Election = prev;
            assert_eq!(ev[0].id(), prev.id(), "follows its predecessor");
        }
        out.push(e);
    }
    out
}

#[test]
fn three_electors_elect_exactly_one() {
    let path = unique_path("three");
    let watcher = client();
    let es: Vec<Election> = ["a", "b", "c"].iter().map(|id| client().election(&path, id).unwrap()).collect();
    // All three race to enter at once.
    thread::scope(|s| {
        for e in &es {
            s.spawn(move || e.volunteer().unwrap());
        }
    });
    // Each reports how it enrolled: one leads, the others follow a predecessor.
    let first: Vec<Event> = es.iter().map(|e| e.next_event(WAIT).expect("enrolled in time")).collect();
    let elected: Vec<&str> = es.iter().zip(&first).filter(|(_, ev)| ev.kind() == EventKind::Elected).map(|(e, _)| e.id()).collect();
    assert_eq!(elected.len(), 1, "exactly one ELECTED among {first:?}");
    let leader = elected[0].to_string();
    let followed: Vec<String> = first.iter().filter(|ev| ev.kind() == EventKind::Following).map(|ev| ev.id().into_owned()).collect();
    assert_eq!(followed.len(), 2, "{first:?}");

    let l = es.iter().find(|e| e.id() == leader).unwrap();
    l.await_leader(WAIT).unwrap();
    let leaders: Vec<&str> = es.iter().filter(|e| e.is_leader()).map(|e| e.id()).collect();
    assert_eq!(leaders, vec![leader.as_str()]);
    let left = l.lease_left();
    assert!(left > Duration::ZERO && left <= SESSION / 2, "lease left {left:?}");
    assert!(l.is_leader_for(Duration::from_millis(50)) && l.is_leader_for(Duration::ZERO));
    assert!(!l.is_leader_for(SESSION * 2));
    // The leader's node was created first, so every elector's server, having
    // applied its own create, has applied the leader's: all must agree.
    for e in &es {
        assert_eq!(e.leader_id().unwrap(), leader, "{} agrees who leads", e.id());
        if e.id() != leader {
            assert_eq!(e.fencing_token().unwrap_err().kind(), ErrorKind::NotLeader);
            assert_eq!(e.lease_left(), Duration::ZERO);
            assert!(!e.is_leader_for(Duration::ZERO));
        }
    }
    let obs = watcher.observer(&path).unwrap();
    let seen = obs
        .events_timeout(WAIT)
        .find(|ev| ev.kind() == EventKind::LeaderChanged && !ev.id().is_empty())
        .expect("observer names a leader");
    assert_eq!(seen.id(), leader);
    assert_eq!(seen.token(), l.fencing_token().unwrap());

    // The last in the queue (followed by nobody) created its node last, so
    // its server lists all three.
    let last = es.iter().find(|e| !followed.iter().any(|f| f == e.id())).unwrap();
    let parts = last.participants().unwrap();
    assert_eq!(parts.len(), 3, "{parts:?}");
    assert_eq!(parts[0].id, leader);
    assert_eq!(parts[2].id, last.id());
    let mut sorted = ids(&parts);
    sorted.sort();
    assert_eq!(sorted, vec!["a", "b", "c"]);
    assert_eq!(parts[0].token, l.fencing_token().unwrap());
    assert!(parts[0].token > 0);
    assert!(parts[0].token < parts[1].token && parts[1].token < parts[2].token);

    // The snapshot (1.2): the leader's says so, with its token; a
    // follower's says where it queues.
    let st = l.stats_json().unwrap();
    let token = l.fencing_token().unwrap();
    for want in ["\"state\":\"leader\"", "\"is_leader\":true", "\"terms_won\":1,", "\"queue_position\":0,"] {
        assert!(st.contains(want), "{want} in {st}");
    }
    assert!(st.contains(&format!("\"token\":{token},")), "{st}");
    let fst = last.stats_json().unwrap();
    assert!(fst.contains("\"state\":\"follower\"") && fst.contains("\"queue_position\":2,"), "{fst}");
    let cst = watcher.stats_json().unwrap();
    assert!(cst.starts_with('{') && cst.contains("\"elections\":[]"), "{cst}");
}

#[test]
fn resign_fails_over_in_queue_order() {
    let path = unique_path("failover");
    let es = queue_of_three(&path);
    let (a, b, c) = (&es[0], &es[1], &es[2]);
    let token_a = a.fencing_token().unwrap();
    assert!(a.is_leader() && !b.is_leader() && !c.is_leader());

    a.resign().unwrap();
    assert!(!a.is_leader(), "is_leader is false as soon as resign returns");
    expect_events(a, &[EventKind::Deposed, EventKind::Resigned]);
    let ev = expect_events(b, &[EventKind::Elected]);
    b.await_leader(WAIT).unwrap();
    let token_b = b.fencing_token().unwrap();
    assert_eq!(ev[0].token(), token_b);
    assert!(token_b > token_a, "tokens grow: {token_a} then {token_b}");
    assert!(!c.is_leader());

    // A resigned candidacy may enter again, at the back of the queue.
    a.volunteer().unwrap();
    expect_events(a, &[EventKind::Following]);
    // Read through the session of the latest write: its server has them all.
    assert_eq!(ids(&a.participants().unwrap()), vec!["b", "c", "a"]);

    b.resign().unwrap();
    expect_events(c, &[EventKind::Elected]);
    c.await_leader(WAIT).unwrap();
    let token_c = c.fencing_token().unwrap();
    assert!(token_c > token_b);
    assert_eq!(ids(&c.participants().unwrap()), vec!["c", "a"]);
    assert_eq!(c.leader_id().unwrap(), "c");
    assert!(a.client().counter(Counter::TermsWon) >= 1);
    assert!(a.client().counter(Counter::DeposedResigned) >= 1);
    assert_eq!(Counter::TermsWon.name(), "terms_won");
}

#[test]
fn transfer_hands_over_to_the_named_candidate() {
    let path = unique_path("transfer");
    let es = queue_of_three(&path);
    let (a, b, c) = (&es[0], &es[1], &es[2]);
    let token_a = a.fencing_token().unwrap();
    assert_eq!(a.transfer("nobody", WAIT).unwrap_err().kind(), ErrorKind::NoCandidate);
    assert_eq!(b.transfer("c", WAIT).unwrap_err().kind(), ErrorKind::NotLeader);
    a.transfer("c", WAIT).unwrap();
    assert!(!a.is_leader());
    let ev = expect_events(b, &[EventKind::SteppedBack]);
    assert_eq!(ev[0].reason(), Reason::Transferred);
    assert_eq!(ev[0].id(), "c");
    c.await_leader(WAIT).unwrap();
    assert!(c.fencing_token().unwrap() > token_a);
    let ev = expect_events(a, &[EventKind::Deposed]);
    assert_eq!(ev[0].reason(), Reason::Transferred);
    // b and a are at the back, in no promised order.
    assert_eq!(ids(&c.participants().unwrap())[0], "c");
}

#[test]
fn fenced_commit_only_while_leading() {
    let path = unique_path("fenced");
    let es = queue_of_three(&path);
    let (a, b) = (&es[0], &es[1]);
    let data = format!("{path}-data");
    a.fenced_commit(
        &[
            FencedOp::Create { path: &data, data: b"a\0b", ephemeral: false },
            FencedOp::Set { path: &data, data: b"x", version: 0 },
        ],
        WAIT,
    )
    .unwrap();
    let err = a
        .fenced_commit(
            &[
                FencedOp::Set { path: &data, data: b"y", version: -1 },
                FencedOp::Create { path: &data, data: b"", ephemeral: false },
            ],
            WAIT,
        )
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ZooKeeper);
    let err = b.fenced_commit(&[FencedOp::Set { path: &data, data: b"b", version: -1 }], WAIT).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotLeader);
    a.fenced_commit(&[FencedOp::Delete { path: &data, version: 1 }], WAIT).unwrap();
}

#[test]
fn client_fenced_commit_with_the_leaders_node_and_token() {
    let path = unique_path("client-fenced");
    let data = format!("{path}-data");
    let other = client();
    let node;
    let token;
    {
        let ca = client();
        let a = ca.election(&path, "a").unwrap();
        a.volunteer().unwrap();
        expect_events(&a, &[EventKind::Elected]);
        let ps = a.participants().unwrap();
        assert_eq!(ps.len(), 1);
        node = format!("{path}/{}", ps[0].node);
        token = ps[0].token;
        assert_eq!(a.fencing_token().unwrap(), token);
        other.fenced_commit(&node, token, &[FencedOp::Create { path: &data, data: b"o", ephemeral: false }], WAIT).unwrap();
        let x = format!("{data}-x");
        let refused = [FencedOp::Create { path: &x, data: b"", ephemeral: false }];
        let err = other.fenced_commit(&node, token - 1, &refused, WAIT).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Fenced, "{err}");
        assert!(err.to_string().contains("another term's node"), "{err}");
        a.resign().unwrap();
        // The node is gone once Resigned comes (resign only starts its delete).
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match a.next_event(left) {
                Some(ev) if ev.kind() == EventKind::Resigned => break,
                Some(_) => {}
                None => panic!("no Resigned within {WAIT:?}"),
            }
        }
        let err = other.fenced_commit(&node, token, &refused, WAIT).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Fenced, "{err}");
        assert!(err.to_string().contains("is gone"), "{err}");
        let err = other.fenced_commit("relative", token, &refused, WAIT).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    }
    // Nothing of the refused writes was committed: the next leader can
    // still create what they named; the first one's node stands.
    let cb = client();
    let b = cb.election(&path, "b").unwrap();
    b.volunteer().unwrap();
    expect_events(&b, &[EventKind::Elected]);
    let x = format!("{data}-x");
    b.fenced_commit(
        &[
            FencedOp::Create { path: &x, data: b"", ephemeral: false },
            FencedOp::Delete { path: &x, version: -1 },
            FencedOp::Delete { path: &data, version: 0 },
        ],
        WAIT,
    )
    .unwrap();
}

#[test]
fn requeue_steps_back_to_the_back_of_the_line() {
    let path = unique_path("requeue");
    let es = queue_of_three(&path);
    let (a, b) = (&es[0], &es[1]);
    a.requeue().unwrap();
    assert!(!a.is_leader());
    let ev = expect_events(a, &[EventKind::Deposed, EventKind::Resigned, EventKind::Following]);
    assert_eq!(ev[0].reason(), Reason::Resigned);
    b.await_leader(WAIT).unwrap();
    assert_eq!(ids(&b.participants().unwrap()), ["b", "c", "a"]);
}

#[test]
fn transfer_asked_from_outside() {
    let path = unique_path("xout");
    let asker = client();
    assert_eq!(asker.transfer(&path, "b", WAIT).unwrap_err().kind(), ErrorKind::NoLeader);
    let es = queue_of_three(&path);
    let (a, c) = (&es[0], &es[2]);
    let token_a = a.fencing_token().unwrap();
    assert_eq!(asker.transfer(&path, "nobody", WAIT).unwrap_err().kind(), ErrorKind::NoCandidate);
    let ps = asker.participants(&path).unwrap();
    assert_eq!(ps.iter().map(|p| p.priority).collect::<Vec<_>>(), vec![0, 0, 0]);
    asker.transfer(&path, "c", WAIT).unwrap();
    assert!(!a.is_leader());
    c.await_leader(WAIT).unwrap();
    assert!(c.fencing_token().unwrap() > token_a);
}

#[test]
fn events_come_in_order() {
    let path = unique_path("events");
    let a = client().election(&path, "a").unwrap();
    let b = client().election(&path, "b").unwrap();
    a.volunteer().unwrap();
    let ea = expect_events(&a, &[EventKind::Elected]);
    assert_eq!(ea[0].token(), a.fencing_token().unwrap());
    assert_eq!(ea[0].id(), "a");
    b.volunteer().unwrap();
    let eb = expect_events(&b, &[EventKind::Following]);
    assert_eq!(eb[0].id(), "a");
    assert_eq!(eb[0].node(), ea[0].node(), "b watches a's node");

    a.resign().unwrap();
    let ea2 = expect_events(&a, &[EventKind::Deposed, EventKind::Resigned]);
    assert_eq!(ea2[0].reason(), Reason::Resigned);
    assert_eq!(ea2[0].reason_name(), "resigned");
    let eb2 = expect_events(&b, &[EventKind::Elected]);
    assert!(eb2[0].token() > ea[0].token());

    let times: Vec<i64> = ea.iter().chain(&ea2).map(Event::time_ns).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "event times in order: {times:?}");
    assert!(!ea2[1].message().is_empty());
}

#[test]
fn drop_releases_the_node() {
    let path = unique_path("drop");
    let ca = client();
    let cb = client();
    let a = ca.election(&path, "a").unwrap();
    let b = cb.election(&path, "b").unwrap();
    let c = ca.election(&path, "c").unwrap();
    a.volunteer().unwrap();
    expect_events(&a, &[EventKind::Elected]);
    b.volunteer().unwrap();
    expect_events(&b, &[EventKind::Following]);
    c.volunteer().unwrap();
    expect_events(&c, &[EventKind::Following]);
    assert_eq!(ids(&cb.participants(&path).unwrap()), vec!["a", "b", "c"]);

    // A follower: its session is still open (ca lives on), yet its node goes.
    drop(c);
    // Same session as the deletion, so ZooKeeper's FIFO order makes the read see it.
    assert_eq!(ids(&ca.participants(&path).unwrap()), vec!["a", "b"]);

    // The leader: b takes over, and b's client no longer lists a.
    drop(a);
    expect_events(&b, &[EventKind::Elected]);
    assert!(ca.is_connected(), "the session outlives its elections");
    let left = cb.participants(&path).unwrap();
    assert_eq!(ids(&left), vec!["b"]);
    assert_eq!(left[0].token, b.fencing_token().unwrap());
}

#[test]
fn election_is_shared_across_threads() {
    let path = unique_path("threads");
    let e = Arc::new(client().election(&path, "t").unwrap());
    let (tx, rx) = mpsc::channel();
    let reader = {
        let e = Arc::clone(&e);
        thread::spawn(move || {
            // Blocks without limit; ends when the main thread wakes it.
            for ev in e.events() {
                tx.send(ev).unwrap();
            }
        })
    };
    e.volunteer().unwrap();
    e.await_leader(WAIT).unwrap();
    e.resign().unwrap();
    let mut kinds = Vec::new();
    while kinds.last() != Some(&EventKind::Resigned) {
        let ev = rx.recv_timeout(WAIT).unwrap_or_else(|_| panic!("events so far: {kinds:?}"));
        kinds.push(ev.kind());
    }
    assert_eq!(kinds, vec![EventKind::Elected, EventKind::Deposed, EventKind::Resigned]);
    e.wake();
    reader.join().unwrap();
    // The reader's clone is gone, so this is the last owner: drop destroys.
    assert_eq!(Arc::strong_count(&e), 1);
}

#[test]
fn observer_follows_the_leader() {
    let path = unique_path("observer");
    let a = client().election(&path, "a").unwrap();
    let b = client().election(&path, "b").unwrap();
    a.volunteer().unwrap();
    a.await_leader(WAIT).unwrap();
    let obs = client().observer(&path).unwrap();
    let first = obs.next_event(WAIT).expect("first observer event");
    assert_eq!(first.kind(), EventKind::LeaderChanged);
    assert_eq!(first.id(), "a");
    assert_eq!(first.token(), a.fencing_token().unwrap());
    b.volunteer().unwrap();
    expect_events(&b, &[EventKind::Following]);
    a.resign().unwrap();
    let next = obs
        .events_timeout(WAIT)
        .find(|ev| ev.kind() == EventKind::LeaderChanged)
        .expect("a LEADER_CHANGED after the resign");
    assert_eq!(next.id(), "b");
    b.await_leader(WAIT).unwrap();
    assert_eq!(next.token(), b.fencing_token().unwrap());
}

#[test]
fn bad_input_is_an_error_not_a_crash() {
    let mut conf = Conf::new();
    let err = conf.set("no.such.key", "1").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.message.contains("no.such.key"), "{err}");
    assert_eq!(err.name(), "ZKELECT_EINVAL");
    assert_eq!(conf.set("zk.hosts", "a\0b").unwrap_err().kind(), ErrorKind::InvalidArgument);
    conf.set("leadership", "strict").unwrap();
    assert_eq!(conf.get("leadership").unwrap(), "strict");
    // Every listed key can be read; the list is the library's, in order.
    let keys = Conf::keys();
    assert_eq!(keys.first().map(String::as_str), Some("zk.hosts"));
    assert!(keys.iter().any(|k| k == "lease.margin.ms"), "{keys:?}");
    for k in &keys {
        conf.get(k).unwrap();
    }

    let c = client();
    for bad in ["relative/path", "/trailing/", "/double//slash", ""] {
        let err = c.election(bad, "x").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{bad:?}: {err}");
        assert!(!err.message.is_empty());
    }
    let too_long = "x".repeat(zkelect::sys::ZKELECT_ID_MAX + 1);
    assert_eq!(c.election("/ok", &too_long).unwrap_err().kind(), ErrorKind::InvalidArgument);

    let e = c.election(&unique_path("bad"), "x").unwrap();
    assert_eq!(e.resign().unwrap_err().kind(), ErrorKind::State);
    assert_eq!(e.fencing_token().unwrap_err().kind(), ErrorKind::NotLeader);
    assert!(!e.is_leader());
    e.volunteer().unwrap();
    assert_eq!(e.volunteer().unwrap_err().kind(), ErrorKind::State);
    e.await_leader(WAIT).unwrap();

    let (major, _, _) = zkelect::version();
    assert_eq!(major, 1);
    assert!(zkelect::version_string().starts_with("1."));
}

/// A call that returns only a code reports the library's detail
/// (zkelect_last_error), not the code's generic description.
#[test]
fn code_only_failures_carry_the_library_detail() {
    let c = client();
    let path = unique_path("nocandidate");
    let e = c.election(&path, "idle").unwrap();
    let err = e.leader_id().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NoLeader, "{err}");
    assert!(err.message.contains(&format!("no candidate under {path}")), "{err}");
}

/// A NULL from participants (or a constructor) carries its code in the
/// library's message: a bad path is an argument error, not "ZooKeeper";
/// the same rule as the SWIG bindings (bindings/README.md, Error codes).
#[test]
fn participants_errors_carry_their_code() {
    let c = client();
    for bad in ["relative/path", "/double//slash"] {
        let err = c.participants(bad).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{bad:?}: {err}");
    }
    // Nobody listens on port 1: asking ZooKeeper fails for lack of a
    // connection, and says so.
    let mut conf = Conf::new();
    conf.set("zk.hosts", "127.0.0.1:1").unwrap();
    conf.set("zk.session.timeout.ms", "1000").unwrap();
    let dead = Client::new(&conf).unwrap();
    let err = dead.participants("/some/path").unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::ConnectionLoss | ErrorKind::TimedOut),
        "participants without a server: {err}"
    );
    assert!(!err.message.starts_with("ZKELECT_"), "the code's name left in the message: {err}");
}

/// The crash guard's keys through the generic configuration: accepted,
/// refused with the library's message, and the client's stats say whether
/// its session is guarded (crash.guard "off": not).
#[test]
fn crash_guard_keys_are_accepted() {
    let mut conf = Conf::new();
    assert_eq!(conf.get("crash.guard").unwrap(), "auto");
    assert_eq!(conf.get("crash.guard.delay.ms").unwrap(), "100");
    conf.set("crash.guard", "on").unwrap();
    conf.set("crash.guard.delay.ms", "0").unwrap();
    let err = conf.set("crash.guard", "maybe").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.message.contains("crash.guard must be"), "{err}");
    let err = conf.set("crash.guard.delay.ms", "151").unwrap_err();
    assert!(err.message.contains("0 to 150"), "{err}");

    conf.set("crash.guard", "off").unwrap();
    conf.set("zk.hosts", &hosts()).unwrap();
    let c = Client::new(&conf).unwrap();
    c.await_connected(Some(WAIT)).unwrap();
    assert!(c.stats_json().unwrap().contains("\"crash_guarded\":false"));
}
