// The Java test of org.zkelect.Fencing against a real PostgreSQL and
// ZooKeeper, run by tests/fencing/test_helpers.py as a single-file program
// (java -cp zkelect.jar:postgresql.jar FencingCheck.java): exits 0 when
// every check passed, 1 with the failed check's message otherwise.
//
// ZKELECT_TEST_HOSTS: the ensemble; ZKELECT_TEST_PG_URL: a JDBC URL of a
// database where fencing.sql is installed, with a table items (label, token).

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

import org.zkelect.DeposedException;
import org.zkelect.Elector;
import org.zkelect.Fencing;
import org.zkelect.ZkelectException;

public class FencingCheck {
    static final String HOSTS = System.getenv("ZKELECT_TEST_HOSTS");
    static final String URL = System.getenv("ZKELECT_TEST_PG_URL");
    static final String BASE = "java-" + ProcessHandle.current().pid() + "-" + System.nanoTime();

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    static Elector leader(String path, String id) throws InterruptedException {
        Elector e = Elector.create(HOSTS, path, id);
        e.volunteer();
        check(e.awaitLeader(30_000), id + " did not lead within 30 s");
        return e;
    }

    static Fencing.Work<Void> insert(String label, long token) {
        return c -> {
            try (PreparedStatement s = c.prepareStatement("INSERT INTO items (label, token) VALUES (?, ?)")) {
                s.setString(1, label);
                s.setLong(2, token);
                s.executeUpdate();
            }
            return null;
        };
    }

    static List<String> labels(Connection c, String prefix) throws SQLException {
        List<String> got = new ArrayList<>();
        try (PreparedStatement s = c.prepareStatement("SELECT label FROM items WHERE label LIKE ? ORDER BY id")) {
            s.setString(1, prefix + "%");
            try (ResultSet r = s.executeQuery()) {
                while (r.next()) {
                    got.add(r.getString(1));
                }
            }
        }
        return got;
    }

    static void commits(Connection db) throws Exception {
        String res = BASE + "-commits";
        try (Elector a = leader("/t/" + res, "java-a")) {
            long t = a.fencingToken();
            Integer n = Fencing.transaction(db, res, t, c -> {
                insert(res + "-a1", t).run(c);
                return 7;
            });
            check(n == 7, "transaction() returned " + n + ", not what the work returned");
            check(labels(db, res).equals(List.of(res + "-a1")), "rows after the leader's commit: " + labels(db, res));
            check(db.getAutoCommit(), "auto-commit was not put back");
        }
    }

    static void rollsBack(Connection db) throws Exception {
        String res = BASE + "-rollback";
        try (Elector a = leader("/t/" + res, "java-a")) {
            long t = a.fencingToken();
            try {
                Fencing.transaction(db, res, t, c -> {
                    insert(res + "-lost", t).run(c);
                    throw new IllegalStateException("boom");
                });
                check(false, "transaction() returned after the work threw");
            } catch (IllegalStateException e) {
                check("boom".equals(e.getMessage()), "another exception: " + e);
            }
            try {
                Fencing.transaction(db, res, t, c -> {
                    insert(res + "-lost2", t).run(c);
                    c.createStatement().execute("SELECT 1/0");
                    return null;
                });
                check(false, "transaction() returned after a failing statement");
            } catch (DeposedException e) {
                check(false, "a division by zero was taken for a refusal: " + e);
            } catch (SQLException e) {
                check("22012".equals(e.getSQLState()), "another SQL error: " + e);
            }
            check(labels(db, res).isEmpty(), "rows of rolled-back transactions: " + labels(db, res));
        }
    }

    static void deposed(Connection db) throws Exception {
        String res = BASE + "-deposed";
        String path = "/t/" + res;
        try (Elector a = leader(path, "java-a")) {
            long ta = a.fencingToken();
            Fencing.transaction(db, res, ta, insert(res + "-a1", ta));
            a.resign(); // deposed: a paused A would not even know
            try (Elector b = leader(path, "java-b")) {
                long tb = b.fencingToken();
                check(tb > ta, "B's token " + tb + " is not above A's " + ta);
                Fencing.transaction(db, res, tb, insert(res + "-b1", tb));
                try {
                    Fencing.transaction(db, res, ta, insert(res + "-a2", ta));
                    check(false, "the deposed leader's transaction committed");
                } catch (DeposedException e) {
                    check(e.token() == ta && "ZKE01".equals(e.getSQLState()) && e.getMessage().contains("deposed"),
                          "the refusal: " + e);
                }
                check(labels(db, res).equals(List.of(res + "-a1", res + "-b1")),
                      "rows: " + labels(db, res) + ", want A's first and B's only");
                Fencing.transaction(db, res, tb, insert(res + "-b2", tb));
            }
        }
    }

    public static void main(String[] args) throws Exception {
        if (HOSTS == null || URL == null) {
            System.err.println("ZKELECT_TEST_HOSTS or ZKELECT_TEST_PG_URL is not set: run tests/fencing/test_helpers.py");
            System.exit(2);
        }
        try (Connection db = DriverManager.getConnection(URL)) {
            commits(db);
            System.out.println("PASS commits");
            rollsBack(db);
            System.out.println("PASS rollsBack");
            deposed(db);
            System.out.println("PASS deposed");
        } catch (AssertionError | ZkelectException e) {
            System.out.println("FAIL " + e.getMessage());
            System.exit(1);
        }
    }
}
