package org.zkelect;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;

/**
 * A fenced PostgreSQL transaction over JDBC (docs/fencing.md,
 * "PostgreSQL"): the leader's statements run in one transaction that begins
 * with {@code zkelect.fence(resource, token)}, the check of fencing.sql, so
 * a deposed leader's transaction is refused and changes nothing. No driver
 * is named here: the connection is the caller's.
 */
public final class Fencing {
    /** The statement a fenced transaction begins with: the resource, the token. */
    public static final String FENCE_SQL = "SELECT zkelect.fence(?, ?)";
    /** The SQLSTATE of fencing.sql's refusal: the token is older than one seen. */
    public static final String DEPOSED_SQLSTATE = "ZKE01";

    private Fencing() {}

    /** The statements of a fenced transaction, on its connection. */
    @FunctionalInterface
    public interface Work<T> {
        T run(Connection conn) throws SQLException;
    }

    /**
     * Runs work in one transaction of conn that begins with
     * {@code zkelect.fence(resource, token)}, and commits it when work
     * returns; returns what work returned. token is the leader's fencing
     * token ({@link Elector#fencingToken()}, or $ZKELECT_TOKEN under
     * zkelect run); resource names what the election guards, one name per
     * election path.
     *
     * <p>Throws {@link DeposedException} when PostgreSQL refuses the token
     * (SQLSTATE ZKE01: a later term has written): the transaction is rolled
     * back, nothing of it is kept; stop writing. Any other exception of
     * work or of the database rolls the transaction back and is rethrown.
     * The connection's auto-commit mode is turned off for the transaction
     * and put back as it was; an open transaction of the connection is
     * committed or rolled back with it.
     */
    public static <T> T transaction(Connection conn, String resource, long token, Work<T> work)
            throws SQLException {
        if (token <= 0) {
            throw new IllegalArgumentException("token must be above 0 (a leader's fencing token)");
        }
        boolean autoCommit = conn.getAutoCommit();
        if (autoCommit) {
            conn.setAutoCommit(false);
        }
        boolean done = false;
        try {
            try (PreparedStatement fence = conn.prepareStatement(FENCE_SQL)) {
                fence.setString(1, resource);
                fence.setLong(2, token);
                fence.execute();
            }
            T result = work.run(conn);
            conn.commit();
            done = true;
            return result;
        } catch (SQLException e) {
            rollback(conn, e);
            done = true;
            if (isDeposed(e)) {
                throw new DeposedException(resource, token, e);
            }
            throw e;
        } finally {
            if (!done) {
                rollback(conn, null); // a RuntimeException or Error of work
            }
            if (autoCommit) {
                conn.setAutoCommit(true);
            }
        }
    }

    /** Whether e, or an exception it chains, is fencing.sql's refusal. */
    public static boolean isDeposed(SQLException e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SQLException s) {
                for (SQLException n = s; n != null; n = n.getNextException()) {
                    if (DEPOSED_SQLSTATE.equals(n.getSQLState())) {
                        return true;
                    }
                }
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return false;
    }

    private static void rollback(Connection conn, SQLException cause) {
        try {
            conn.rollback();
        } catch (SQLException r) {
            // The connection may be gone; the first failure is the one to tell.
            if (cause != null) {
                cause.addSuppressed(r);
            }
        }
    }
}
