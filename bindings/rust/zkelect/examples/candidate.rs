//! A candidate driven over stdin/stdout, used by the cross-language test
//! (tests/bindings/test_crosslang.py), where programs in every binding
//! stand in one election.
//!
//!   candidate HOSTS PATH ID
//!
//! Commands on stdin: `join`, `resign`, `who`, `quit` (or end of input).
//! Lines on stdout: `READY id`, `LEADER id token`, `FOLLOWER id`,
//! `DEPOSED id reason`, `RESIGNED id`, `LEADS id leader`, `ERROR id text`,
//! `BYE id`.

use std::io::BufRead;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use zkelect::{Client, Conf, EventKind};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        eprintln!("usage: candidate HOSTS PATH ID");
        std::process::exit(2);
    }
    let (hosts, path, id) = (&args[1], &args[2], args[3].clone());
    let mut conf = Conf::new();
    conf.set("zk.hosts", hosts).and_then(|c| c.set("zk.session.timeout.ms", "6000")).unwrap();
    let client = Client::new(&conf).unwrap();
    client.await_connected(Some(Duration::from_secs(30))).unwrap();
    let election = Arc::new(client.election(path, &id).unwrap());

    let reader = {
        let e = Arc::clone(&election);
        let id = id.clone();
        thread::spawn(move || {
            for ev in e.events() {
                match ev.kind() {
                    EventKind::Elected => println!("LEADER {id} {}", ev.token()),
                    EventKind::Following => println!("FOLLOWER {id}"),
                    EventKind::Deposed => println!("DEPOSED {id} {}", ev.reason_name()),
                    EventKind::Resigned => println!("RESIGNED {id}"),
                    EventKind::Error => println!("ERROR {id} {}", ev.message()),
                    _ => {}
                }
            }
        })
    };
    println!("READY {id}");

    for line in std::io::stdin().lock().lines() {
        let line = line.unwrap_or_default();
        let result = match line.trim() {
            "join" => election.volunteer(),
            "resign" => election.resign(),
            "who" => election.leader_id().map(|l| println!("LEADS {id} {l}")),
            "quit" => break,
            "" => Ok(()),
            other => {
                println!("ERROR {id} unknown command {other}");
                Ok(())
            }
        };
        if let Err(e) = result {
            println!("ERROR {id} {e}");
        }
    }
    election.wake();
    reader.join().unwrap();
    drop(election);
    drop(client);
    println!("BYE {id}");
}
