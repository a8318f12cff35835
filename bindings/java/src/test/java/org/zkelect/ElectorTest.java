package org.zkelect;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;

import org.junit.BeforeClass;
import org.junit.Test;

/**
 * The Java binding against a real ZooKeeper ensemble named by
 * ZKELECT_TEST_HOSTS (tests/bindings/test_java.py starts one and runs this).
 */
public class ElectorTest {
    private static final long WAIT_MS = 20_000;
    private static final AtomicLong PATHS = new AtomicLong();
    private static String hosts;

    @BeforeClass
    public static void needEnsemble() {
        hosts = TestEnv.hosts();
    }

    private static String freshPath(String name) {
        return "/t/java-" + name + "-" + ProcessHandle.current().pid() + "-" + System.nanoTime() + "-"
                + PATHS.incrementAndGet();
    }

    private static Map<String, String> settings() {
        return Map.of("zk.hosts", hosts, "zk.session.timeout.ms", "4000");
    }

    private static Elector elector(String path, String id) {
        return Elector.create(settings(), path, id);
    }

    /** The next event of one of the wanted types, others passed over. */
    private static Event next(Elector e, Event.Type... want) {
        long deadline = System.nanoTime() + WAIT_MS * 1_000_000L;
        while (System.nanoTime() < deadline) {
            Event ev = e.nextEvent(200);
            if (ev == null) {
                continue;
            }
            for (Event.Type t : want) {
                if (ev.type == t) {
                    return ev;
                }
            }
        }
        fail(e.id() + ": none of " + List.of(want) + " within " + WAIT_MS + " ms");
        return null;
    }

    private static void enroll(Elector e) {
        e.volunteer();
        next(e, Event.Type.ELECTED, Event.Type.FOLLOWING);
    }

    private static String ids(List<Participant> ps) {
        return ps.stream().map(Participant::id).collect(Collectors.joining(","));
    }

    @Test
    public void errorsCarryTheCodeAndMessage() {
        try {
            Client.connect(Map.of("zk.hosts", hosts, "no.such.key", "1")).close();
            fail("unknown key accepted");
        } catch (ZkelectException e) {
            assertEquals(ZkelectException.EINVAL, e.code());
            assertEquals("ZKELECT_EINVAL", e.errName());
            assertTrue(e.getMessage(), e.getMessage().contains("no.such.key"));
        }
        try (Client c = Client.connect(hosts)) {
            try {
                c.elector("relative/path", "x");
                fail("relative path accepted");
            } catch (ZkelectException e) {
                assertEquals(ZkelectException.EINVAL, e.code());
            }
            Elector e = c.elector(freshPath("errors"), "idle");
            try {
                e.resign();
                fail("resign of an idle candidacy");
            } catch (ZkelectException ex) {
                assertEquals(ZkelectException.ESTATE, ex.code());
            }
            try {
                c.close();
                fail("client closed under a live elector");
            } catch (ZkelectException ex) {
                assertEquals(ZkelectException.ESTATE, ex.code());
            }
            e.close();
            try {
                e.volunteer();
                fail("volunteer after close");
            } catch (ZkelectException ex) {
                assertEquals(ZkelectException.ECLOSED, ex.code());
            }
        }
        assertTrue(ZkelectNative.version_string().matches("\\d+\\.\\d+\\.\\d+"));
        assertEquals("zk.hosts", Client.configKeys().get(0));
        assertTrue(Client.configKeys().contains("lease.margin.ms"));
    }

    /** Client.close ends every Elector of the client at once (issue 56). */
    @Test
    public void clientCloseEndsItsElectorsAtOnce() throws Exception {
        try (Client other = Client.connect(hosts)) {
            Client c = Client.connect(hosts);
            List<Elector> ours = new ArrayList<>();
            List<Elector> theirs = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                String path = freshPath("shutdown" + i);
                Elector e = c.elector(path, "java-ours");
                e.volunteer();
                assertTrue(e.awaitLeader(WAIT_MS));
                ours.add(e);
                Elector o = other.elector(path, "java-theirs");
                o.volunteer();
                theirs.add(o);
            }
            try {
                c.close();
                fail("client closed under live electors");
            } catch (ZkelectException ex) {
                assertEquals(ZkelectException.ESTATE, ex.code());
            }
            for (Elector e : ours) {
                assertFalse(e.isLeader());
                try {
                    e.volunteer();
                    fail("volunteer after the client's close");
                } catch (ZkelectException ex) {
                    assertEquals(ZkelectException.ECLOSED, ex.code());
                }
            }
            for (Elector o : theirs) {
                assertTrue("the other client did not take over", o.awaitLeader(WAIT_MS));
                o.close();
            }
            for (Elector e : ours) {
                e.close();
            }
            c.close();
        }
    }

    @Test
    public void threeElectorsElectExactlyOne() throws Exception {
        String path = freshPath("three");
        try (Elector a = elector(path, "java-a"); Elector b = elector(path, "java-b");
                Elector c = elector(path, "java-c")) {
            List<Elector> es = List.of(a, b, c);
            for (Elector e : es) {
                e.volunteer();
            }
            Elector leader = null;
            long deadline = System.nanoTime() + WAIT_MS * 1_000_000L;
            while (leader == null && System.nanoTime() < deadline) {
                for (Elector e : es) {
                    if (e.awaitLeader(50)) {
                        leader = e;
                    }
                }
            }
            assertNotNull("nobody was elected", leader);
            assertEquals(1, es.stream().filter(Elector::isLeader).count());
            // A session of 4 s: a lease is at most 2 s less the margin.
            long left = leader.leaseLeftMillis();
            assertTrue("lease left " + left, left > 0 && left <= 2000);
            assertTrue(leader.isLeaderFor(50) && leader.isLeaderFor(0));
            assertFalse(leader.isLeaderFor(8000));
            for (Elector e : es) {
                if (e != leader) {
                    assertEquals(0, e.leaseLeftMillis());
                    assertFalse(e.isLeaderFor(0));
                }
            }
            for (Elector e : es) {
                assertEquals(Optional.of(leader.id()), e.leaderId());
            }
            List<Participant> ps = a.participants();
            assertEquals(3, ps.size());
            assertEquals(leader.id(), ps.get(0).id());
            assertEquals(ps.get(0).token(), leader.fencingToken());
            assertEquals(Long.valueOf(1), leader.client().counters().get("terms_won"));
            String st = leader.stats();
            assertTrue(st, st.contains("\"state\":\"leader\"") && st.contains("\"is_leader\":true")
                    && st.contains("\"terms_won\":1,")
                    && st.contains("\"token\":" + leader.fencingToken() + ","));
            String cst = leader.client().stats();
            assertTrue(cst, cst.contains("\"counters\":{\"terms_won\":1,"));
        }
    }

    @Test
    public void resignFailsOverInQueueOrder() throws Exception {
        String path = freshPath("failover");
        try (Elector a = elector(path, "java-a"); Elector b = elector(path, "java-b");
                Elector c = elector(path, "java-c")) {
            enroll(a);
            enroll(b);
            enroll(c);
            assertTrue("first in the queue does not lead", a.isLeader());
            long prev = a.fencingToken();
            Elector[][] steps = {{a, b}, {b, c}};
            for (Elector[] step : steps) {
                step[0].resign();
                assertFalse(step[0].id() + " still leads after resign", step[0].isLeader());
                assertTrue(step[1].id() + " did not take over", step[1].awaitLeader(WAIT_MS));
                long token = step[1].fencingToken();
                assertTrue("token " + token + " not above " + prev, token > prev);
                prev = token;
            }
            assertTrue(c.isLeader() && !a.isLeader() && !b.isLeader());
        }
    }

    @Test
    public void fencedCommitOnlyWhileLeading() throws Exception {
        String path = freshPath("fenced");
        String data = path + "-data";
        try (Elector a = elector(path, "java-a"); Elector b = elector(path, "java-b")) {
            enroll(a);
            enroll(b);
            a.fencedCommit(WAIT_MS, FencedOp.create(data, new byte[] {'a', 0, 'b'}, false),
                    FencedOp.set(data, new byte[] {'x'}, 0));
            try {
                a.fencedCommit(WAIT_MS, FencedOp.set(data, new byte[] {'y'}, -1),
                        FencedOp.create(data, null, false));
                fail("a create of an existing node");
            } catch (ZkelectException e) {
                assertEquals(ZkelectException.EZK, e.code());
            }
            try {
                b.fencedCommit(WAIT_MS, FencedOp.set(data, new byte[] {'b'}, -1));
                fail("a follower's fenced set");
            } catch (ZkelectException e) {
                assertEquals(ZkelectException.ENOTLEADER, e.code());
            }
            a.fencedCommit(WAIT_MS, FencedOp.delete(data, 1));
        }
    }

    @Test
    public void clientFencedCommitWithTheLeadersNodeAndToken() throws Exception {
        String path = freshPath("client-fenced");
        String data = path + "-data";
        try (Client other = Client.connect(settings())) {
            try (Elector a = elector(path, "java-a")) {
                enroll(a);
                assertTrue(a.awaitLeader(WAIT_MS));
                List<Participant> ps = a.participants();
                assertEquals(1, ps.size());
                String node = path + "/" + ps.get(0).node();
                long token = ps.get(0).token();
                assertEquals(a.fencingToken(), token);
                other.fencedCommit(node, token, WAIT_MS, FencedOp.create(data, new byte[] {'o'}, false));
                try {
                    other.fencedCommit(node, token - 1, WAIT_MS, FencedOp.create(data + "-x", null, false));
                    fail("a fenced write with another term's token");
                } catch (ZkelectException e) {
                    assertEquals(ZkelectException.EFENCED, e.code());
                    assertTrue(e.getMessage(), e.getMessage().contains("another term's node"));
                }
                a.resign();
                next(a, Event.Type.RESIGNED); // the node is gone (resign only starts its delete)
                try {
                    other.fencedCommit(node, token, WAIT_MS, FencedOp.create(data + "-x", null, false));
                    fail("a fenced write once the node is gone");
                } catch (ZkelectException e) {
                    assertEquals(ZkelectException.EFENCED, e.code());
                    assertTrue(e.getMessage(), e.getMessage().contains("is gone"));
                }
            }
            // Nothing of the refused writes was committed: the next leader
            // can still create what they named; the first one's node stands.
            try (Elector b = elector(path, "java-b")) {
                enroll(b);
                assertTrue(b.awaitLeader(WAIT_MS));
                b.fencedCommit(WAIT_MS, FencedOp.create(data + "-x", null, false),
                        FencedOp.delete(data + "-x", -1), FencedOp.delete(data, 0));
            }
        }
    }

    @Test
    public void transferHandsOverToTheNamedCandidate() throws Exception {
        String path = freshPath("transfer");
        try (Elector a = elector(path, "java-a"); Elector b = elector(path, "java-b");
                Elector c = elector(path, "java-c")) {
            enroll(a);
            enroll(b);
            enroll(c);
            long prev = a.fencingToken();
            try {
                a.transfer("nobody", WAIT_MS);
                fail("transfer to an unknown id");
            } catch (ZkelectException e) {
                assertEquals(ZkelectException.ENOCANDIDATE, e.code());
            }
            try {
                b.transfer("java-c", WAIT_MS);
                fail("transfer by a follower");
            } catch (ZkelectException e) {
                assertEquals(ZkelectException.ENOTLEADER, e.code());
            }
            a.transfer("java-c", WAIT_MS);
            assertFalse(a.isLeader());
            assertTrue("java-c did not take over", c.awaitLeader(WAIT_MS));
            assertTrue(c.fencingToken() > prev);
            Event back = next(b, Event.Type.STEPPED_BACK);
            assertEquals(Event.Reason.TRANSFERRED, back.reason);
            assertEquals("java-c", back.id);
            assertEquals(Event.Reason.TRANSFERRED, next(a, Event.Type.DEPOSED).reason);
        }
    }

    @Test
    public void requeueStepsBackToTheBackOfTheLine() throws Exception {
        String path = freshPath("requeue");
        try (Elector a = elector(path, "java-a"); Elector b = elector(path, "java-b")) {
            enroll(a);
            enroll(b);
            a.requeue();
            assertFalse(a.isLeader());
            assertEquals(Event.Reason.RESIGNED, next(a, Event.Type.DEPOSED).reason);
            next(a, Event.Type.RESIGNED);
            next(a, Event.Type.FOLLOWING);
            assertTrue("java-b did not take over", b.awaitLeader(WAIT_MS));
        }
    }

    @Test
    public void transferAskedFromOutside() throws Exception {
        String path = freshPath("xout");
        try (Client asker = Client.connect(settings())) {
            try {
                asker.transfer(path, "java-b", WAIT_MS);
                fail("transfer with nobody there");
            } catch (ZkelectException e) {
                assertEquals(ZkelectException.ENOLEADER, e.code());
            }
            try (Elector a = elector(path, "java-a"); Elector b = elector(path, "java-b")) {
                enroll(a);
                enroll(b);
                long prev = a.fencingToken();
                try {
                    asker.transfer(path, "nobody", WAIT_MS);
                    fail("transfer to an unknown id");
                } catch (ZkelectException e) {
                    assertEquals(ZkelectException.ENOCANDIDATE, e.code());
                }
                assertEquals(0, asker.participants(path).get(1).priority());
                asker.transfer(path, "java-b", WAIT_MS);
                assertTrue("java-b did not take over", b.awaitLeader(WAIT_MS));
                assertFalse(a.isLeader());
                assertTrue(b.fencingToken() > prev);
            }
        }
    }

    @Test
    public void listenerGetsEventsInOrder() throws Exception {
        String path = freshPath("events");
        BlockingQueue<Event> seen = new LinkedBlockingQueue<>();
        List<String> threads = new ArrayList<>();
        try (Elector a = elector(path, "java-a"); Elector b = elector(path, "java-b")) {
            a.setListener(ev -> {
                synchronized (threads) {
                    threads.add(Thread.currentThread().getName());
                }
                seen.add(ev);
            });
            a.volunteer();
            Event el = poll(seen, Event.Type.ELECTED);
            assertEquals("java-a", el.id);
            assertTrue(el.token > 0);
            enroll(b);
            a.resign();
            Event dep = poll(seen, Event.Type.DEPOSED, Event.Type.RESIGNED);
            assertEquals(Event.Type.DEPOSED, dep.type);
            assertEquals(Event.Reason.RESIGNED, dep.reason);
            Event res = poll(seen, Event.Type.RESIGNED, Event.Type.ELECTED, Event.Type.DEPOSED);
            assertEquals(Event.Type.RESIGNED, res.type);
            assertTrue(res.timeNanos >= dep.timeNanos);
            Event el2 = next(b, Event.Type.ELECTED);
            assertTrue(el2.token > el.token);
            assertTrue(a.eventFd() >= 0);
        }
        synchronized (threads) {
            assertFalse(threads.isEmpty());
            for (String name : threads) {
                assertTrue(name, name.startsWith("zkelect-events-"));
            }
        }
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            assertFalse("event thread left running: " + t.getName(),
                    t.getName().startsWith("zkelect-events-elector java-a"));
        }
    }

    private static Event poll(BlockingQueue<Event> q, Event.Type... want) throws InterruptedException {
        long deadline = System.nanoTime() + WAIT_MS * 1_000_000L;
        while (true) {
            long left = deadline - System.nanoTime();
            Event ev = left > 0 ? q.poll(left, TimeUnit.NANOSECONDS) : null;
            if (ev == null) {
                fail("none of " + List.of(want) + " within " + WAIT_MS + " ms");
            }
            for (Event.Type t : want) {
                if (ev.type == t) {
                    return ev;
                }
            }
        }
    }

    @Test
    public void tryWithResourcesReleasesTheNode() throws Exception {
        String path = freshPath("close");
        try (Client watcher = Client.connect(settings())) {
            Elector kept;
            try (Elector e = elector(path, "java-closing")) {
                kept = e;
                enroll(e);
                assertEquals("java-closing", ids(watcher.participants(path)));
            }
            // close() waits for the deletion to be acknowledged.
            assertEquals("", ids(watcher.participants(path)));
            assertFalse(kept.isLeader());
            kept.close(); // a second close does nothing
        }
    }

    @Test
    public void observerReportsTheLeader() throws Exception {
        String path = freshPath("observer");
        try (Elector e = elector(path, "java-observed"); Client c = Client.connect(settings())) {
            enroll(e);
            try (Observer o = c.observer(path)) {
                Event ev = null;
                for (int i = 0; i < 100 && (ev == null || ev.type != Event.Type.LEADER_CHANGED); i++) {
                    ev = o.nextEvent(200);
                }
                assertNotNull(ev);
                assertEquals(Event.Type.LEADER_CHANGED, ev.type);
                assertEquals("java-observed", ev.id);
                assertTrue(o.eventFd() >= 0);
            }
        }
    }
}
