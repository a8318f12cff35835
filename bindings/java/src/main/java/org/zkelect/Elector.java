package org.zkelect;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * One candidacy of one participant on one election path.
 *
 * <pre>
 * try (Elector e = Elector.create(hosts, "/app/leader", "node-1")) {
 *     e.volunteer();
 *     if (e.awaitLeader(10_000)) { ... lead while e.isLeader() ... }
 * }
 * </pre>
 *
 * Thread-safe. Events come from {@link #nextEvent} or, after
 * {@link #setListener}, to a listener on a Java thread of the Elector's own.
 */
public final class Elector extends Handle<NativeElection> {
    private final Client client;
    private final boolean ownsClient;
    private final String path;
    private final String id;

    Elector(Client client, String path, String id, boolean ownsClient) {
        super(new State<>(client.use(c -> ZkelectNative.election_new(c, path, id)), "elector " + id,
                client.st, ownsClient, ZkelectNative::next_event, ZkelectNative::wake,
                ZkelectNative::election_destroy));
        this.client = client;
        this.ownsClient = ownsClient;
        this.path = path;
        this.id = id;
    }

    /** A candidacy on a session of its own (closed with it). */
    public static Elector create(String hosts, String path, String id) {
        if (hosts == null) {
            throw new ZkelectException(ZkelectException.EINVAL, "hosts is null");
        }
        return create(Map.of("zk.hosts", hosts), path, id);
    }

    /** As above, the session configured by libzkelect's keys. */
    public static Elector create(Map<String, String> settings, String path, String id) {
        Client c = Client.connect(settings);
        try {
            return new Elector(c, path, id, true);
        } catch (RuntimeException e) {
            c.close();
            throw e;
        }
    }

    public String path() {
        return path;
    }

    public String id() {
        return id;
    }

    public Client client() {
        return client;
    }

    /** Enter the election (non-blocking); ESTATE when already a candidate. */
    public void volunteer() {
        rc(ZkelectNative::volunteer);
    }

    /** Leave the election: not leader when this returns; ESTATE when not a candidate. */
    public void resign() {
        rc(ZkelectNative::resign);
    }

    /**
     * Step back to the back of the line in one call (resign, then volunteer,
     * nothing between): not leader when this returns; DEPOSED (a leader),
     * RESIGNED, then FOLLOWING or ELECTED follow. ESTATE when not a candidate.
     */
    public void requeue() {
        rc(ZkelectNative::requeue);
    }

    /** Leads now (and its lease runs). Never blocks. */
    public boolean isLeader() {
        try {
            return rc(ZkelectNative::is_leader) == 1;
        } catch (ZkelectException e) {
            return false; // closed
        }
    }

    /**
     * The lease time left in ms while leading (rounded down), else 0 (also
     * once closed): how much longer isLeader() stays true unless a renewal
     * pushes the deadline later. To decide whether work fits in the term,
     * use isLeaderFor(), which answers from one reading. Never blocks.
     */
    public long leaseLeftMillis() {
        try {
            return use(ZkelectNative::lease_left_ms);
        } catch (ZkelectException e) {
            return 0; // closed
        }
    }

    /**
     * Leads now and its lease runs at least minMillis more, from one reading
     * of the deadline and the clock: no other candidate can be elected within
     * minMillis plus the lease margin unless this one resigns. 0 or less asks
     * the same as isLeader(). Never blocks.
     */
    public boolean isLeaderFor(long minMillis) {
        int ms = (int) Math.max(Math.min(minMillis, Integer.MAX_VALUE), 0);
        try {
            return rc(x -> ZkelectNative.is_leader_for(x, ms)) == 1;
        } catch (ZkelectException e) {
            return false; // closed
        }
    }

    /**
     * True once leading, false when timeoutMs ran out (negative: no limit;
     * any positive value is honoured, however long). Waits in slices of
     * 200 ms so that close() from another thread is held up at most that
     * long (this call then throws ECLOSED).
     */
    public boolean awaitLeader(long timeoutMs) throws InterruptedException {
        long start = System.nanoTime();
        long limit = limitNanos(timeoutMs);
        while (true) {
            if (Thread.interrupted()) {
                throw new InterruptedException();
            }
            int slice = sliceMs(start, limit);
            try {
                rc(x -> ZkelectNative.await_leader(x, slice));
                return true;
            } catch (ZkelectException e) {
                if (e.code() != ZkelectException.ETIMEDOUT) {
                    throw e;
                }
            }
            if (ranOut(start, limit)) {
                return false;
            }
        }
    }

    /**
     * Hands this leader's leadership to the candidate of the same path whose
     * id is targetId, waiting at most timeoutMs (> 0) for it to be next in
     * line (docs/semantics.md, "Transferring leadership"). Returns once the
     * target is first. ZkelectException ENOCANDIDATE, ENOTLEADER or ENOTSUP
     * (a candidate ahead of the target cannot step back): nothing
     * changed; ETIMEDOUT or ETARGET_LOST: the leadership went to the next in
     * line, as after a resign. This candidacy stays a candidate, at the back
     * of the line. Blocks.
     */
    public void transfer(String targetId, long timeoutMs) {
        int ms = (int) Math.max(Math.min(timeoutMs, Integer.MAX_VALUE), Integer.MIN_VALUE);
        rc(x -> ZkelectNative.transfer(x, targetId, ms));
    }

    /**
     * A fenced write (docs/fencing.md, "Fenced ZooKeeper writes"): ops in one
     * ZooKeeper multi behind a check of this candidacy's node, committed
     * whole and only while it leads its term; waits at most timeoutMs (> 0).
     * ZkelectException: ENOTLEADER (nothing sent), EFENCED (the term is over,
     * nothing committed), EZK or EAUTH (an operation refused, its 0-based
     * index in the message; nothing committed), ECONNLOSS, ESESSION_EXPIRED
     * or ETIMEDOUT (the outcome is unknown: read what it wrote). Blocks.
     */
    public void fencedCommit(long timeoutMs, FencedOp... ops) {
        int ms = (int) Math.max(Math.min(timeoutMs, Integer.MAX_VALUE), Integer.MIN_VALUE);
        use(h -> {
            NativeFencedOps batch = ZkelectNative.fenced_ops_new();
            try {
                for (FencedOp op : ops) {
                    op.addTo(batch);
                }
                ZkelectNative.fenced_commit(h, batch, ms);
                return null;
            } finally {
                batch.delete();
            }
        });
    }

    /** The fencing token of this term; ZkelectException(ENOTLEADER) when not leading. */
    public long fencingToken() {
        return use(ZkelectNative::fencing_token);
    }

    /** Asks ZooKeeper who leads; empty when nobody is a candidate. */
    public Optional<String> leaderId() {
        try {
            return Optional.of(use(ZkelectNative::leader_id));
        } catch (ZkelectException e) {
            if (e.code() == ZkelectException.ENOLEADER) {
                return Optional.empty();
            }
            throw e;
        }
    }

    /**
     * This elector's figures as one JSON object: state, term, queue
     * position, losses by reason, keepalive and failover histograms
     * (docs/monitoring.md). Asks nothing of ZooKeeper. Since 1.2.
     */
    public String stats() {
        return Client.statsJson(use(ZkelectNative::election_stats));
    }

    /** Asks ZooKeeper for the candidates, leader first. */
    public List<Participant> participants() {
        return Participant.take(use(ZkelectNative::participants));
    }

    /** Readable while events wait (level-triggered); owned by the library. */
    public int eventFd() {
        return rc(ZkelectNative::event_fd);
    }

    /**
     * Leaves the election (the node is deleted before this returns, within
     * the session timeout), stops the listener thread, frees the handle,
     * and closes the session if {@link #create} made it. An Elector nobody
     * closes is closed the same way by a Cleaner once unreachable (but not
     * while a listener runs: its thread references the Elector); that may
     * be late, so close what you open.
     */
    @Override
    public void close() {
        super.close();
    }
}
