//! The event fd when no descriptor can be made (issue 19, finding 8): an
//! error, never a negative number handed out as a file descriptor. A test
//! binary of its own, because it lowers the process's descriptor limit,
//! which would disturb tests running beside it.

use std::fs::File;
use std::os::raw::c_int;
use std::os::unix::io::AsRawFd;
use std::time::Duration;

use zkelect::{Client, Conf, ErrorKind};

#[repr(C)]
struct Rlimit {
    cur: u64,
    max: u64,
}

const RLIMIT_NOFILE: c_int = 7;

extern "C" {
    fn getrlimit(resource: c_int, rlim: *mut Rlimit) -> c_int;
    fn setrlimit(resource: c_int, rlim: *const Rlimit) -> c_int;
}

fn hosts() -> String {
    match std::env::var("ZKELECT_TEST_HOSTS") {
        Ok(h) if !h.is_empty() => h,
        _ => panic!("ZKELECT_TEST_HOSTS is not set: these tests need a running ZooKeeper ensemble"),
    }
}

#[test]
fn event_fd_is_an_error_when_no_descriptor_can_be_made() {
    let mut conf = Conf::new();
    conf.set("zk.hosts", &hosts()).unwrap();
    let client = Client::new(&conf).unwrap();
    client.await_connected(Some(Duration::from_secs(20))).unwrap();
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let path = format!("/zkelect-rust/event-fd-{}-{nanos}", std::process::id());
    let election = client.election(&path, "fdless").unwrap();
    let observer = client.observer(&path).unwrap();

    // Every descriptor below the limit in use: the library's eventfd fails
    // with EMFILE. The limit is the highest descriptor open now, plus one.
    let mut old = Rlimit { cur: 0, max: 0 };
    assert_eq!(unsafe { getrlimit(RLIMIT_NOFILE, &mut old) }, 0);
    let highest = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u64>().ok())
        .max()
        .unwrap();
    let low = Rlimit { cur: highest + 1, max: old.max };
    assert_eq!(unsafe { setrlimit(RLIMIT_NOFILE, &low) }, 0);
    let mut fillers = Vec::new();
    while let Ok(f) = File::open("/dev/null") {
        fillers.push(f);
        assert!(fillers.len() < 100_000, "the lowered limit is not enforced");
    }
    let from_election = election.event_fd().map(|fd| fd.as_raw_fd());
    let from_observer = observer.event_fd().map(|fd| fd.as_raw_fd());
    drop(fillers);
    assert_eq!(unsafe { setrlimit(RLIMIT_NOFILE, &old) }, 0);

    for (what, got) in [("election", from_election), ("observer", from_observer)] {
        let err = got.expect_err(&format!("{what}: event_fd gave a descriptor with none to make"));
        assert!(
            matches!(err.kind(), ErrorKind::Internal | ErrorKind::NoMemory),
            "{what}: {err}"
        );
    }
    // Once descriptors are free again, the fd can be made.
    assert!(election.event_fd().unwrap().as_raw_fd() >= 0);
    assert!(observer.event_fd().unwrap().as_raw_fd() >= 0);
}
