// A participant of the line protocol (docs/design.md, "The participant line
// protocol") on Apache Curator's LeaderLatch: the Java side that ./dev bench
// and tests/integration compare libzkelect with.
//
// K participants, ids first..first+K-1, each on its own CuratorFramework and
// so its own ZooKeeper session. Built by bench/participants/curator/build.sh
// with javac against Debian's libcurator-recipes-java (5.4) or, with
// CURATOR_CLASSPATH, another release's jars (tests/bed/curatordist.py); the
// same source compiles against both.
//
// First line: "INFO - library curator=V curator_jar=J zookeeper=V
// zookeeper_jar=J", the release of each jar LeaderLatch and ZooKeeper's
// client were loaded from (its Maven pom.properties), so a run says which
// Curator it compared.
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorParticipant {
    /** One lock for stdout, so lines of different threads never interleave. */
    private static final Object STDOUT = new Object();

    static long epochNs() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000_000L + now.getNano();
    }

    static void line(String text) {
        synchronized (STDOUT) {
            System.out.println(text);
            System.out.flush();
        }
    }

    static void event(String kind, int id) {
        // Stamped before taking the lock: the moment our view changed, not
        // the moment another thread let us print.
        long ns = epochNs();
        line("EVENT " + kind + " " + id + " " + ns);
    }

    /** "name=version name_jar=path" of the jar `c` was loaded from;
     *  "?" for what its jar does not say. */
    static String library(String name, Class<?> c, String pomDir) {
        String jar = "?", version = "?";
        try {
            URL where = c.getProtectionDomain().getCodeSource().getLocation();
            jar = where.getPath();
            URL pom = new URL("jar:" + where + "!/META-INF/maven/" + pomDir + "/pom.properties");
            try (InputStream in = pom.openStream()) {
                Properties p = new Properties();
                p.load(in);
                version = p.getProperty("version", "?");
            }
        } catch (Exception unknown) {
            // Not from a Maven-built jar: the line says "?", the run goes on.
        }
        return name + "=" + version + " " + name + "_jar=" + jar;
    }

    enum Shown { IDLE, WAITING, FOLLOWER, LEADER }

    static final class Member {
        final int id;
        final String path;
        final CuratorFramework client;
        // Guards `shown` and `latch`. Curator calls the latch listener with
        // the latch's own monitor held, so nothing below calls a latch method
        // that takes that monitor while holding `this` (close() is called
        // outside; getOurPath() and hasLeadership() take no lock).
        private Shown shown = Shown.IDLE;
        private LeaderLatch latch;

        Member(int id, String hosts, String path, int sessionMs) {
            this.id = id;
            this.path = path;
            this.client = CuratorFrameworkFactory.builder()
                    .connectString(hosts)
                    .sessionTimeoutMs(sessionMs)
                    .connectionTimeoutMs(sessionMs)
                    .retryPolicy(new ExponentialBackoffRetry(100, 5))
                    // The ensemble tracker watches /zookeeper/config: a watch
                    // the herd counters would charge to the election.
                    .ensembleTracker(false)
                    .build();
        }

        synchronized boolean waiting() {
            return shown == Shown.WAITING;
        }

        void enter() throws Exception {
            LeaderLatch mine = new LeaderLatch(client, path, Integer.toString(id),
                                               LeaderLatch.CloseMode.SILENT);
            mine.addListener(new LeaderLatchListener() {
                @Override
                public void isLeader() {
                    synchronized (Member.this) {
                        if (latch == mine && shown != Shown.LEADER) {
                            shown = Shown.LEADER;
                            event("LEADER", id);
                        }
                    }
                }

                // Curator revokes leadership itself on SUSPENDED or LOST (our
                // own resign closes SILENTly and never comes here). The latch
                // stays started and enrols again once reconnected.
                @Override
                public void notLeader() {
                    synchronized (Member.this) {
                        if (latch == mine && shown == Shown.LEADER) {
                            shown = Shown.WAITING;
                            event("LOST", id);
                        }
                    }
                }
            });
            synchronized (this) {
                latch = mine;
                if (shown != Shown.LEADER)
                    shown = Shown.WAITING;
            }
            mine.start();
        }

        /** Announce, release (node deleted in the background), join again. */
        void resign() throws Exception {
            LeaderLatch old;
            synchronized (this) {
                if (shown != Shown.LEADER)
                    return;
                event("RESIGNED", id);
                shown = Shown.IDLE;
                old = latch;
                latch = null;
            }
            old.close();
            enter();
        }

        void leave() {
            LeaderLatch old;
            synchronized (this) {
                if (shown == Shown.LEADER)
                    event("RESIGNED", id);
                shown = Shown.IDLE;
                old = latch;
                latch = null;
            }
            if (old != null) {
                try {
                    old.close();
                } catch (Exception alreadyClosed) {
                    // closing twice is harmless here: we are leaving
                }
            }
        }

        /** "INFO id view leader=L has_leadership=0|1": who LeaderLatch
         *  itself takes for the leader (getLeader reads the first node of
         *  the line and its data, the way any Curator user asks) beside its
         *  own belief; a test compares them with the other participants'. */
        void view() {
            LeaderLatch mine;
            synchronized (this) {
                mine = latch;
            }
            if (mine == null) {
                line("INFO " + id + " view leader=- has_leadership=0");
                return;
            }
            String leader;
            try {
                String got = mine.getLeader().getId();
                leader = got.isEmpty() ? "-" : got;
            } catch (Exception e) {
                leader = "?";
            }
            line("INFO " + id + " view leader=" + leader + " has_leadership="
                 + (mine.hasLeadership() ? 1 : 0));
        }

        /** LeaderLatch tells us when we lead, never when we are merely
         *  enrolled: that is read from its local state (node known, not
         *  leading, connected), which costs no ZooKeeper request. */
        void checkEnrolled() {
            synchronized (this) {
                if (shown != Shown.WAITING || latch == null)
                    return;
                if (latch.getOurPath() == null || latch.hasLeadership()
                        || !client.getZookeeperClient().isConnected())
                    return;
                shown = Shown.FOLLOWER;
                event("FOLLOWER", id);
            }
        }
    }

    static int intArg(String name, String v) {
        try {
            return Integer.parseInt(v);
        } catch (NumberFormatException e) {
            System.err.println(name + ": not an integer: " + v);
            System.exit(2);
            return 0;
        }
    }

    public static void main(String[] args) throws Exception {
        String hosts = null, path = null;
        int first = 0, count = 1, sessionMs = 2000;
        if (args.length % 2 != 0) {
            System.err.println("options come as --name value pairs");
            System.exit(2);
        }
        for (int i = 0; i < args.length; i += 2) {
            String v = args[i + 1];
            switch (args[i]) {
                case "--connect": hosts = v; break;
                case "--path": path = v; break;
                case "--first-id": first = intArg("--first-id", v); break;
                case "--count": count = intArg("--count", v); break;
                case "--session-timeout-ms": sessionMs = intArg("--session-timeout-ms", v); break;
                default:
                    System.err.println("unknown option: " + args[i]);
                    System.exit(2);
            }
        }
        if (hosts == null || path == null || count < 1) {
            System.err.println("usage: CuratorParticipant --connect HOSTS --path P --first-id I"
                               + " --count K --session-timeout-ms T");
            System.exit(2);
        }

        line("INFO - library "
             + library("curator", LeaderLatch.class, "org.apache.curator/curator-recipes") + " "
             + library("zookeeper", org.apache.zookeeper.ZooKeeper.class,
                       "org.apache.zookeeper/zookeeper"));
        List<Member> members = new ArrayList<>();
        for (int k = 0; k < count; k++)
            members.add(new Member(first + k, hosts, path, sessionMs));
        // Start every session before waiting for any: they connect in parallel.
        for (Member m : members)
            m.client.start();
        for (Member m : members) {
            if (!m.client.blockUntilConnected(30, TimeUnit.SECONDS)) {
                System.err.println("participant " + m.id + ": no ZooKeeper connection within 30 s");
                System.exit(1);
            }
            event("CONNECTED", m.id);
            line("INFO " + m.id + " negotiated_session_timeout_ms="
                 + m.client.getZookeeperClient().getZooKeeper().getSessionTimeout());
        }

        // How often the enrolment check runs while someone waits for it: it
        // bounds how late FOLLOWER can be, so keep it well under a round trip.
        long periodNs = Long.getLong("poll.us", 500L) * 1000L;
        Thread watcher = new Thread(() -> {
            for (;;) {
                boolean anyWaiting = false;
                for (Member m : members) {
                    m.checkEnrolled();
                    anyWaiting |= m.waiting();
                }
                LockSupport.parkNanos(anyWaiting ? periodNs : 5_000_000L);
            }
        }, "enrolment-check");
        watcher.setDaemon(true);
        watcher.start();

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String cmd; (cmd = in.readLine()) != null; ) {
            String[] w = cmd.trim().split("\\s+");
            if (w[0].isEmpty())
                continue;
            if (w[0].equals("quit"))
                break;
            if (w[0].equals("join")) {
                for (Member m : members)
                    m.enter();
            } else if (w[0].equals("resign") && w.length == 2) {
                for (Member m : members)
                    if (Integer.toString(m.id).equals(w[1]))
                        m.resign();
            } else if (w[0].equals("view") && w.length == 2) {
                for (Member m : members)
                    if (Integer.toString(m.id).equals(w[1]))
                        m.view();
            } else {
                line("INFO - unknown_command " + w[0]);
            }
        }
        for (Member m : members)
            m.leave();
        for (Member m : members)
            m.client.close();
        System.exit(0);
    }
}
