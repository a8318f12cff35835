//! A candidate driven over stdin/stdout, one reply per command, used by the
//! cross-language test (tests/bindings/test_crosslang.py) where programs on
//! every binding stand in one election. The protocol is request/response so
//! that a candidate needs no threads or poll loop in any language.
//!
//!   candidate HOSTS PATH ID [KEY=VALUE...]   prints READY once connected
//!                                            (the keys go to the Conf)
//!
//!   join         -> OK | ERR text
//!   resign       -> OK | ERR text
//!   await MS     -> LEADER token | TIMEOUT | ERR text
//!   leader?      -> IS 1 | IS 0
//!   who          -> LEADS id | ERR text
//!   events MS    -> EVENT TYPE detail... per event (waiting up to MS for the
//!                   first, then taking what is queued), then END
//!   counters     -> COUNTERS name=value ... (every counter, by name)
//!   quit         -> BYE (after the election and client are closed)

use std::io::{BufRead, Write};
use std::time::Duration;

use zkelect::{Client, Conf, ErrorKind, Event, EventKind};

fn describe(ev: &Event) -> String {
    match ev.kind() {
        EventKind::Elected => format!("EVENT ELECTED {}", ev.token()),
        EventKind::Deposed => format!("EVENT DEPOSED {}", ev.reason_name()),
        EventKind::Following => format!("EVENT FOLLOWING {}", ev.id()),
        EventKind::Warning => format!("EVENT WARNING {}", ev.message()),
        _ => format!("EVENT {}", ev.kind_name()),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: candidate HOSTS PATH ID [KEY=VALUE...]");
        std::process::exit(2);
    }
    let mut conf = Conf::new();
    conf.set("zk.hosts", &args[1]).unwrap();
    conf.set("zk.session.timeout.ms", "6000").unwrap();
    for kv in &args[4..] {
        let (key, value) = kv.split_once('=').unwrap_or((kv, ""));
        if let Err(e) = conf.set(key, value) {
            eprintln!("candidate: {e}");
            std::process::exit(1);
        }
    }
    let client = Client::new(&conf).unwrap();
    client.await_connected(Some(Duration::from_secs(30))).unwrap();
    let election = client.election(&args[2], &args[3]).unwrap();
    let mut out = std::io::stdout();
    writeln!(out, "READY").unwrap();

    for line in std::io::stdin().lock().lines() {
        let line = line.unwrap_or_default();
        let mut words = line.split_whitespace();
        let cmd = words.next().unwrap_or("");
        let ms = Duration::from_millis(words.next().and_then(|w| w.parse().ok()).unwrap_or(0));
        let reply = match cmd {
            "join" => election.volunteer().map(|_| "OK".to_string()),
            "resign" => election.resign().map(|_| "OK".to_string()),
            "await" => match election.await_leader(ms) {
                Ok(()) => election.fencing_token().map(|t| format!("LEADER {t}")),
                Err(e) if e.kind() == ErrorKind::TimedOut => Ok("TIMEOUT".to_string()),
                Err(e) => Err(e),
            },
            "leader?" => Ok(format!("IS {}", election.is_leader() as i32)),
            "who" => election.leader_id().map(|l| format!("LEADS {l}")),
            "events" => {
                let mut lines = Vec::new();
                let mut wait = ms;
                while let Some(ev) = election.next_event(wait) {
                    lines.push(describe(&ev));
                    wait = Duration::ZERO;
                }
                lines.push("END".to_string());
                Ok(lines.join("\n"))
            }
            "counters" => {
                let mut all: Vec<String> =
                    client.counters().iter().map(|(c, v)| format!("{}={v}", c.name())).collect();
                all.sort();
                Ok(format!("COUNTERS {}", all.join(" ")))
            }
            "quit" => break,
            other => Ok(format!("ERR unknown command {other:?}")),
        };
        match reply {
            Ok(text) => writeln!(out, "{text}").unwrap(),
            Err(e) => writeln!(out, "ERR {e}").unwrap(),
        }
    }
    drop(election);
    drop(client);
    writeln!(out, "BYE").unwrap();
}
