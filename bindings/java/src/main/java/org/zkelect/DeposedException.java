package org.zkelect;

import java.sql.SQLException;

/**
 * PostgreSQL refused a fenced transaction ({@link Fencing#transaction}):
 * SQLSTATE {@code ZKE01}, a later term has written to the resource, so the
 * process whose token this is no longer leads. Nothing the transaction did
 * was kept. {@link #getCause()} is the driver's exception.
 */
public class DeposedException extends SQLException {
    private static final long serialVersionUID = 1L;

    private final String resource;
    private final long token;

    public DeposedException(String resource, long token, SQLException cause) {
        super("zkelect: deposed: resource \"" + resource + "\" refused token " + token
                + " (a later leader has written): " + cause.getMessage(),
                Fencing.DEPOSED_SQLSTATE, cause);
        this.resource = resource;
        this.token = token;
    }

    /** The resource the refused transaction was fenced on. */
    public String resource() {
        return resource;
    }

    /** The token it carried. */
    public long token() {
        return token;
    }
}
