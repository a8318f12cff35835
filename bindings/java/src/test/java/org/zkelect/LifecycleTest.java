package org.zkelect;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.BeforeClass;
import org.junit.Test;

/**
 * Lifetime, threads, timeouts, strings and error codes of the Java binding
 * (issue 19), against the ensemble named by ZKELECT_TEST_HOSTS.
 */
public class LifecycleTest {
    private static final long WAIT_MS = 20_000;
    /** How long close() may take while other threads wait on the handle:
     *  one 200 ms slice of theirs plus the C destroy, far below this. A close
     *  that hangs fails here instead of hanging the suite. */
    private static final long CLOSE_LIMIT_MS = 10_000;
    private static final AtomicLong PATHS = new AtomicLong();
    private static String hosts;

    @BeforeClass
    public static void needEnsemble() {
        hosts = System.getenv("ZKELECT_TEST_HOSTS");
        if (hosts == null || hosts.isEmpty()) {
            throw new IllegalStateException(
                    "ZKELECT_TEST_HOSTS is not set: these tests need a ZooKeeper ensemble");
        }
    }

    private static String freshPath(String name) {
        return "/t/java-" + name + "-" + ProcessHandle.current().pid() + "-" + System.nanoTime() + "-"
                + PATHS.incrementAndGet();
    }

    private static Map<String, String> settings() {
        return Map.of("zk.hosts", hosts, "zk.session.timeout.ms", "4000");
    }

    private static Event next(Handle<?> h, Event.Type... want) {
        long deadline = System.nanoTime() + WAIT_MS * 1_000_000L;
        while (System.nanoTime() < deadline) {
            Event ev = h.nextEvent(200);
            if (ev == null) {
                continue;
            }
            for (Event.Type t : want) {
                if (ev.type == t) {
                    return ev;
                }
            }
        }
        fail("none of " + List.of(want) + " within " + WAIT_MS + " ms");
        return null;
    }

    private static void closeWithin(AutoCloseable h) throws Exception {
        CompletableFuture<Void> done = CompletableFuture.runAsync(() -> {
            try {
                h.close();
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        try {
            done.get(CLOSE_LIMIT_MS, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            fail("close() has not returned after " + CLOSE_LIMIT_MS + " ms while other threads wait on " + h);
        }
    }

    @Test
    public void closeReturnsWhileOtherThreadsWait() throws Exception {
        String path = freshPath("blocked");
        try (Client c = Client.connect(settings())) {
            Elector e = c.elector(path, "java-idle");
            Observer o = c.observer(path);
            assertEquals(Event.Type.LEADER_CHANGED, next(o, Event.Type.LEADER_CHANGED).type);
            // A follower, to wait in awaitLeader without limit (on a path of
            // its own: the observer must stay quiet).
            Elector leader = c.elector(path + "-2", "java-leader");
            leader.volunteer();
            assertTrue(leader.awaitLeader(WAIT_MS));
            Elector follower = c.elector(path + "-2", "java-follower");
            follower.volunteer();
            List<CompletableFuture<Object>> waiting = new ArrayList<>();
            for (Handle<?> h : List.<Handle<?>>of(e, o, follower, e, o, follower)) {
                CompletableFuture<Object> f = new CompletableFuture<>();
                Thread t = new Thread(() -> {
                    try {
                        f.complete(h == follower ? follower.awaitLeader(-1) : h.nextEvent(-1));
                    } catch (Throwable x) {
                        f.complete(x);
                    }
                });
                t.setDaemon(true);
                t.start();
                waiting.add(f);
            }
            // Let the readers enter the native wait; one that has not yet
            // entered it only makes the test weaker, never wrong.
            Thread.sleep(100);
            closeWithin(e);
            closeWithin(o);
            closeWithin(follower);
            for (CompletableFuture<Object> f : waiting) {
                Object r = f.get(CLOSE_LIMIT_MS, TimeUnit.MILLISECONDS);
                assertTrue("a call waiting during close returned " + r, r instanceof ZkelectException);
                assertEquals(ZkelectException.ECLOSED, ((ZkelectException) r).code());
            }
            assertFalse(e.isLeader());
            leader.close();
        }
    }

    @Test
    public void aThrowingListenerIsReportedAndDeliveryGoesOn() throws Exception {
        String path = freshPath("listener");
        BlockingQueue<Event> seen = new LinkedBlockingQueue<>();
        BlockingQueue<Throwable> reported = new LinkedBlockingQueue<>();
        RuntimeException boom = new IllegalStateException("listener bug");
        try (Elector a = Elector.create(settings(), path, "java-throws")) {
            a.setListener(ev -> {
                seen.add(ev);
                if (ev.type == Event.Type.ELECTED) {
                    throw boom;
                }
            }, (ev, ex) -> reported.add(ex));
            a.volunteer();
            assertEquals(Event.Type.ELECTED, poll(seen).type);
            assertSame(boom, reported.poll(WAIT_MS, TimeUnit.MILLISECONDS));
            a.resign();
            Event dep = poll(seen);
            assertEquals("the event after the throw was not delivered", Event.Type.DEPOSED, dep.type);
            assertEquals(Event.Reason.RESIGNED, dep.reason);
        }
        // Without an error handler: the event thread's uncaught-exception
        // handler hears of it, and delivery goes on all the same.
        // A queue of its own: a's RESIGNED may still have come in after its
        // DEPOSED was taken above.
        BlockingQueue<Event> seenB = new LinkedBlockingQueue<>();
        Thread.UncaughtExceptionHandler before = Thread.getDefaultUncaughtExceptionHandler();
        Thread.setDefaultUncaughtExceptionHandler((t, ex) -> reported.add(ex));
        try (Elector b = Elector.create(settings(), freshPath("listener-default"), "java-throws-2")) {
            b.setListener(ev -> {
                seenB.add(ev);
                if (ev.type == Event.Type.ELECTED) {
                    throw boom;
                }
            });
            b.volunteer();
            assertEquals(Event.Type.ELECTED, poll(seenB).type);
            assertSame(boom, reported.poll(WAIT_MS, TimeUnit.MILLISECONDS));
            b.resign();
            assertEquals(Event.Type.DEPOSED, poll(seenB).type);
        } finally {
            Thread.setDefaultUncaughtExceptionHandler(before);
        }
    }

    private static Event poll(BlockingQueue<Event> q) throws InterruptedException {
        Event ev = q.poll(WAIT_MS, TimeUnit.MILLISECONDS);
        assertNotNull("no event within " + WAIT_MS + " ms", ev);
        return ev;
    }

    private static void leadAndForget(String path) throws InterruptedException {
        Elector e = Elector.create(settings(), path, "java-forgotten");
        e.volunteer();
        assertTrue(e.awaitLeader(WAIT_MS));
    }

    @Test
    public void aForgottenElectorIsFreed() throws Exception {
        String path = freshPath("forgotten");
        try (Client watcher = Client.connect(settings())) {
            leadAndForget(path);
            long deadline = System.nanoTime() + WAIT_MS * 1_000_000L;
            while (!watcher.participants(path).isEmpty()) {
                if (System.nanoTime() > deadline) {
                    fail("the forgotten elector still stands: " + watcher.participants(path));
                }
                System.gc();
                Thread.sleep(50); // polling ZooKeeper's view; bounded
            }
        }
    }

    /** Long.MAX_VALUE and negative timeouts wait (they returned false at once). */
    @Test
    public void awaitLeaderWaitsForHugeAndNegativeTimeouts() throws Exception {
        String path = freshPath("await");
        try (Elector a = Elector.create(settings(), path, "java-a");
                Elector b = Elector.create(settings(), path, "java-b");
                Elector c = Elector.create(settings(), path, "java-c")) {
            for (Elector e : List.of(a, b, c)) {
                e.volunteer();
                next(e, Event.Type.ELECTED, Event.Type.FOLLOWING);
            }
            long[] timeouts = {Long.MAX_VALUE, -1};
            Elector[][] steps = {{a, b}, {b, c}};
            for (int i = 0; i < 2; i++) {
                Elector from = steps[i][0];
                Elector to = steps[i][1];
                long timeout = timeouts[i];
                CompletableFuture<Boolean> led = CompletableFuture.supplyAsync(() -> {
                    try {
                        return to.awaitLeader(timeout);
                    } catch (InterruptedException e) {
                        throw new RuntimeException(e);
                    }
                });
                Thread.sleep(300); // the await must still be waiting when the leader resigns
                from.resign();
                assertTrue("awaitLeader(" + timeout + ") gave up", led.get(WAIT_MS, TimeUnit.MILLISECONDS));
            }
        }
    }

    /**
     * Ids with 4-byte UTF-8 (outside the BMP) and paths with non-ASCII
     * characters cross both ways. (ZooKeeper itself refuses characters
     * outside the BMP in paths: such a path must reach the server intact and
     * come back, intact, in the ERROR event's message.)
     */
    @Test
    public void stringsCrossAsUtf8() throws Exception {
        String id = "java-\uD83D\uDE00-\u00FC-\u6F22";
        String path = freshPath("utf8-\u00FC-\u6F22");
        try (Elector e = Elector.create(settings(), path, id)) {
            e.volunteer();
            Event el = next(e, Event.Type.ELECTED);
            assertEquals(id, el.id);
            assertEquals(Optional.of(id), e.leaderId());
            assertEquals(id, e.participants().get(0).id());
            assertEquals(id, e.client().participants(path).get(0).id());
        }
        String emojiPath = freshPath("utf8-\uD83C\uDF89");
        try (Elector e = Elector.create(settings(), emojiPath, id)) {
            e.volunteer();
            Event err = next(e, Event.Type.ERROR);
            assertTrue(err.message, err.message.contains(emojiPath));
        }
        try {
            Client.connect(settings()).elector(path, "bad\u0000id");
            fail("an id with a NUL character was accepted");
        } catch (ZkelectException e) {
            assertEquals(ZkelectException.EINVAL, e.code());
        }
        try {
            Client.connect(settings()).elector(path, "lone-\uD83D-surrogate");
            fail("an unpaired surrogate was accepted");
        } catch (ZkelectException e) {
            assertEquals(ZkelectException.EINVAL, e.code());
        }
    }

    @Test
    public void participantsOfABadPathIsInvalid() {
        try (Client c = Client.connect(settings())) {
            try {
                c.participants("relative/path");
                fail("participants of a relative path");
            } catch (ZkelectException e) {
                assertEquals(ZkelectException.EINVAL, e.code());
                assertFalse(e.getMessage(), e.getMessage().contains("ECONNLOSS"));
            }
        }
    }

    private static long rssKiB() throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        }
        throw new IllegalStateException("no VmRSS in /proc/self/status");
    }

    /** Each failing call with a string argument leaked its native copy. */
    @Test
    public void failingCallsDoNotLeakTheirStrings() throws Exception {
        String bad = "relative/" + "x".repeat(32 * 1024);
        int calls = 10_000; // 320 MiB of copies if each one leaked
        try (Client c = Client.connect(settings())) {
            // Warm up the JIT and let the heap grow to its steady size under
            // this garbage (the UTF-8 copies of the argument), so what grows
            // after is native memory.
            for (int i = 0; i < 2 * calls; i++) {
                try {
                    c.participants(bad);
                } catch (ZkelectException e) {
                    // expected
                }
            }
            System.gc();
            long before = rssKiB();
            for (int i = 0; i < calls; i++) {
                try {
                    c.participants(bad);
                    fail("accepted");
                } catch (ZkelectException e) {
                    assertEquals(ZkelectException.EINVAL, e.code());
                }
            }
            System.gc();
            long grown = rssKiB() - before;
            assertTrue("RSS grew by " + grown + " KiB over " + calls + " failing calls", grown < 96 * 1024);
        }
    }

    @Test
    public void nextEventAfterCloseThrowsClosed() {
        try (Client c = Client.connect(settings())) {
            Elector e = c.elector(freshPath("after-close"), "java-closed");
            assertNull(e.nextEvent(0));
            e.close();
            for (int t : new int[] {0, 1000, -1}) {
                try {
                    e.nextEvent(t);
                    fail("nextEvent(" + t + ") after close");
                } catch (ZkelectException ex) {
                    assertEquals(ZkelectException.ECLOSED, ex.code());
                }
            }
        }
    }
}
