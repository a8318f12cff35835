package org.zkelect;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

import org.junit.BeforeClass;
import org.junit.Test;

/**
 * Input from outside this binding's control: ids other programs wrote,
 * null arguments, codes newer than a switch, failures that carry only a
 * code. Runs against the ensemble named by ZKELECT_TEST_HOSTS.
 */
public class BoundaryTest {
    private static String hosts;

    @BeforeClass
    public static void needEnsemble() {
        hosts = TestEnv.hosts();
    }

    private static void expectInvalid(String what, Runnable r) {
        try {
            r.run();
            fail(what + " accepted");
        } catch (ZkelectException e) {
            assertEquals(what, ZkelectException.EINVAL, e.code());
        }
    }

    /**
     * ZkelectException's code constants are written from gen/vocabulary.toml;
     * the library it loaded is the judge: each constant is the code the
     * library calls by that name, and each code the library names (they run
     * down from -1) has its constant.
     */
    @Test
    public void everyCodeConstantIsTheLibrarysCode() throws IllegalAccessException {
        Map<Integer, String> ours = new TreeMap<>();
        for (Field f : ZkelectException.class.getFields()) {
            int m = f.getModifiers();
            if (f.getType() == int.class && Modifier.isStatic(m) && Modifier.isFinal(m)) {
                int code = f.getInt(null);
                assertEquals(f.getName(), "ZKELECT_" + f.getName(), ZkelectNative.err_name(code));
                ours.put(code, f.getName());
            }
        }
        int code = -1;
        for (; code > -1000 && !ZkelectNative.err_name(code).equals("ZKELECT_EUNKNOWN"); code--) {
            assertTrue(ZkelectNative.err_name(code) + " has no constant", ours.containsKey(code));
        }
        assertEquals("constants for codes the library does not name: " + ours, -1 - code, ours.size());
    }

    /**
     * A Curator participant may lead with an id longer than ZKELECT_ID_MAX;
     * tests/bindings/test_java.py writes one with kazoo and names its path
     * in ZKELECT_TEST_LONG_ID_PATH. Prints a line the driver looks for, so
     * a run without the variables cannot pass for one with them.
     */
    @Test
    public void leaderIdLongerThanIdMax() throws Exception {
        String path = System.getenv("ZKELECT_TEST_LONG_ID_PATH");
        String want = System.getenv("ZKELECT_TEST_LONG_ID");
        if (path == null || want == null || want.length() <= 1024) {
            return;
        }
        try (Elector e = Elector.create(Map.of("zk.hosts", hosts, "zk.session.timeout.ms", "4000"),
                path, "java-follower")) {
            e.volunteer();
            assertEquals(Optional.of(want), e.leaderId());
            assertEquals(want, e.participants().get(0).id());
        }
        System.out.println("ran leaderIdLongerThanIdMax with a " + want.length() + "-byte id");
    }

    @Test
    public void nullArgumentsAreInvalidNotNullPointerExceptions() {
        expectInvalid("Elector.create(null hosts)", () -> Elector.create((String) null, "/x", "a"));
        expectInvalid("Elector.create(null settings)",
                () -> Elector.create((Map<String, String>) null, "/x", "a"));
        expectInvalid("Client.connect(null hosts)", () -> Client.connect((String) null));
        expectInvalid("Client.connect(null settings)", () -> Client.connect((Map<String, String>) null));
        java.util.HashMap<String, String> nulls = new java.util.HashMap<>();
        nulls.put("zk.hosts", hosts);
        nulls.put(null, "1");
        expectInvalid("a null key", () -> Client.connect(nulls));
        nulls.remove(null);
        nulls.put("zk.session.timeout.ms", null);
        expectInvalid("a null value", () -> Client.connect(nulls));
        try (Client c = Client.connect(hosts)) {
            expectInvalid("a null path", () -> c.elector(null, "a"));
            expectInvalid("a null id", () -> c.elector("/t/java-null-id", null));
            expectInvalid("a null observer path", () -> c.observer(null));
        }
    }

    /** Every event type of zkelect.h has its own Event.Type, none is UNKNOWN. */
    @Test
    public void everyEventTypeOfTheHeaderIsKnown() {
        for (int code = 1; code < 64; code++) {
            String name = ZkelectNative.event_type_name(code);
            if (name.equals("UNKNOWN")) {
                assertEquals("a type past the header's last", Event.Type.UNKNOWN, Event.Type.of(code));
                continue;
            }
            assertEquals("type " + code, name, Event.Type.of(code).name());
        }
        assertEquals(Event.Type.WARNING, Event.Type.of(ZkelectNative.EV_WARNING));
    }

    /** A call that returns only a code reports the library's detail
     * (zkelect_last_error), not the code's generic description. */
    @Test
    public void codeOnlyFailuresCarryTheLibraryDetail() {
        try (Client c = Client.connect(hosts)) {
            try {
                c.use(h -> ZkelectNative.client_counter(h, 99));
                fail("counter 99 accepted");
            } catch (ZkelectException e) {
                assertEquals(ZkelectException.EINVAL, e.code());
                assertTrue(e.getMessage(), e.getMessage().contains("no counter 99"));
            }
            String path = "/t/java-no-candidate-" + System.nanoTime();
            try (Elector e = c.elector(path, "idle")) {
                e.use(ZkelectNative::leader_id);
                fail("a leader on an empty path");
            } catch (ZkelectException e) {
                assertEquals(ZkelectException.ENOLEADER, e.code());
                assertTrue(e.getMessage(), e.getMessage().contains("no candidate under " + path));
            }
        }
    }
}
