package org.zkelect;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Function;

/**
 * One ZooKeeper session, shared by any number of {@link Elector}s and
 * {@link Observer}s, which must be closed before it. Thread-safe.
 */
public final class Client implements AutoCloseable {
    /**
     * The native side of a Client, run by the Cleaner once the Client is
     * unreachable. Electors and Observers reference their Client, so it
     * becomes unreachable with or after them; when the Cleaner reaches the
     * client first, the destroy refuses (open handles), the client is marked
     * abandoned and the last of its handles to close destroys it.
     */
    static final class State implements Runnable {
        final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
        private NativeClient h;
        private volatile boolean abandoned;

        State(NativeClient h) {
            this.h = h;
        }

        /** endAll: the user's close; the Cleaner's leaves live handles be. */
        void close(boolean endAll) {
            lock.writeLock().lock();
            try {
                if (h != null) {
                    // Every Elector and Observer ends at once (their deletes
                    // sent together); ECLOSED after an earlier close that
                    // threw, ETIMEDOUT leaves nodes to the session's end.
                    if (endAll) {
                        try {
                            ZkelectNative.client_shutdown(h, -1);
                        } catch (ZkelectException e) {
                            // neither stops the destroy
                        }
                    }
                    ZkelectNative.client_destroy(h); // ESTATE: nothing freed, h kept
                    h = null;
                }
            } finally {
                lock.writeLock().unlock();
            }
        }

        @Override
        public void run() {
            try {
                close(false);
            } catch (ZkelectException e) {
                abandoned = true;
            }
        }

        void childClosed() {
            if (abandoned) {
                run();
            }
        }
    }

    final State st;
    private final int connectTimeoutMs;

    private Client(NativeClient h, int connectTimeoutMs) {
        this.st = new State(h);
        this.connectTimeoutMs = connectTimeoutMs;
        Handle.CLEANER.register(this, st);
    }

    /** Every configuration key the library knows, in a fixed order. */
    public static java.util.List<String> configKeys() {
        java.util.List<String> keys = new java.util.ArrayList<>();
        for (long i = 0; i < 1024; i++) { // bounded: the library knows a handful
            String k = ZkelectNative.conf_key(i);
            if (k == null) {
                break;
            }
            keys.add(k);
        }
        return keys;
    }

    /** A session on the ZooKeeper ensemble at hosts ("host:port,..."). */
    public static Client connect(String hosts) {
        if (hosts == null) {
            throw new ZkelectException(ZkelectException.EINVAL, "hosts is null");
        }
        return connect(Map.of("zk.hosts", hosts));
    }

    /**
     * A session configured by libzkelect's keys ("zk.hosts" required;
     * "zk.session.timeout.ms", "leadership", ...). Does not wait for the
     * connection (see {@link #awaitConnected}).
     */
    public static Client connect(Map<String, String> settings) {
        if (settings == null) {
            throw new ZkelectException(ZkelectException.EINVAL, "settings is null");
        }
        NativeConf conf = ZkelectNative.conf_new();
        try {
            for (Map.Entry<String, String> kv : settings.entrySet()) {
                ZkelectNative.conf_set(conf, kv.getKey(), kv.getValue());
            }
            int connectMs = Integer.parseInt(ZkelectNative.conf_get(conf, "zk.connect.timeout.ms"));
            return new Client(ZkelectNative.client_new(conf), connectMs);
        } finally {
            ZkelectNative.conf_destroy(conf);
        }
    }

    <T> T use(Function<NativeClient, T> f) {
        st.lock.readLock().lock();
        try {
            if (st.h == null) {
                throw new ZkelectException(ZkelectException.ECLOSED, "client is closed");
            }
            return f.apply(st.h);
        } finally {
            st.lock.readLock().unlock();
        }
    }

    /**
     * True once connected, false when timeoutMs ran out (negative: the
     * configured zk.connect.timeout.ms, as in C). Waits in 200 ms slices so
     * that close() is not held up.
     */
    public boolean awaitConnected(long timeoutMs) {
        long start = System.nanoTime();
        long limit = Handle.limitNanos(timeoutMs < 0 ? connectTimeoutMs : timeoutMs);
        while (true) {
            int slice = Handle.sliceMs(start, limit);
            try {
                use(c -> ZkelectNative.client_await_connected(c, slice));
                return true;
            } catch (ZkelectException e) {
                if (e.code() != ZkelectException.ETIMEDOUT) {
                    throw e;
                }
            }
            if (Handle.ranOut(start, limit)) {
                return false;
            }
        }
    }

    public boolean isConnected() {
        return use(c -> ZkelectNative.client_is_connected(c)) == 1;
    }

    public long sessionId() {
        return use(ZkelectNative::client_session_id);
    }

    public int sessionTimeoutMs() {
        return use(ZkelectNative::client_session_timeout_ms);
    }

    /** The monitoring counters by name ("terms_won", ..., "keepalives"). */
    public Map<String, Long> counters() {
        return use(c -> {
            Map<String, Long> out = new LinkedHashMap<>();
            for (int i = 0; i < ZkelectNativeConstants.COUNTER__COUNT; i++) {
                out.put(ZkelectNative.counter_name(i), ZkelectNative.client_counter(c, i));
            }
            return out;
        });
    }

    /**
     * This client's figures as one JSON object: session, counters, and each
     * elector's snapshot under "elections" (docs/monitoring.md lists the
     * keys; keys may be added, never removed). Asks nothing of ZooKeeper.
     * Since 1.2.
     */
    public String stats() {
        return statsJson(use(ZkelectNative::client_stats));
    }

    /** The JSON of a snapshot, which is freed at once. */
    static String statsJson(NativeStats s) {
        try {
            return ZkelectNative.stats_json(s);
        } finally {
            ZkelectNative.stats_destroy(s);
        }
    }

    /** The candidates of the election at path, leader first. */
    public List<Participant> participants(String path) {
        return Participant.take(use(c -> ZkelectNative.client_participants(c, path)));
    }

    /**
     * Asks the current leader of the election at path, from outside it, to
     * hand leadership to the candidate whose id is targetId, the leader
     * waiting at most timeoutMs (1 to 600000) for it to be next in line
     * (docs/semantics.md, "A transfer asked from outside"). Returns once
     * the target leads. ZkelectException ENOLEADER, ENOCANDIDATE, ENOTSUP or
     * ESTATE: nothing changed; ETIMEDOUT or ETARGET_LOST: the leadership
     * went to the next in line. Blocks. Since 1.2.
     */
    public void transfer(String path, String targetId, long timeoutMs) {
        int ms = (int) Math.max(Math.min(timeoutMs, Integer.MAX_VALUE), Integer.MIN_VALUE);
        use(c -> ZkelectNative.client_transfer(c, path, targetId, ms));
    }

    /**
     * A fenced write by a process that does not hold the candidacy
     * (docs/fencing.md): ops committed in one ZooKeeper multi only while
     * node, the leader's node (its full path: the election path, "/", the
     * ELECTED event's node), stands and is the node of the term whose
     * fencing token is token, such as a command of zkelect run
     * ($ZKELECT_NODE, $ZKELECT_TOKEN). Give it only what an ELECTED said:
     * it checks that the node is that term's, not that it ever led. Waits
     * at most timeoutMs (> 0). ZkelectException: EFENCED (the node is gone
     * or is another term's; nothing committed), and the codes of
     * {@link Elector#fencedCommit}, never ENOTLEADER. Blocks. Since 1.2.
     */
    public void fencedCommit(String node, long token, long timeoutMs, FencedOp... ops) {
        int ms = (int) Math.max(Math.min(timeoutMs, Integer.MAX_VALUE), Integer.MIN_VALUE);
        use(c -> {
            NativeFencedOps batch = ZkelectNative.fenced_ops_new();
            try {
                for (FencedOp op : ops) {
                    op.addTo(batch);
                }
                ZkelectNative.client_fenced_commit(c, node, token, batch, ms);
                return null;
            } finally {
                batch.delete();
            }
        });
    }

    /** A candidacy of id on path, on this session. */
    public Elector elector(String path, String id) {
        return new Elector(this, path, id, false);
    }

    /** A watcher of the leader of path, on this session. */
    public Observer observer(String path) {
        return new Observer(this, path);
    }

    /**
     * Ends every Elector and Observer of the client at once (their deletes
     * sent together, waiting at most one session timeout), then the session
     * (ZooKeeper removes what is left at once). Throws
     * ZkelectException(ESTATE), freeing nothing, while an Elector or
     * Observer of it is open: they are ended (their calls throw ECLOSED),
     * closing them costs no round trip; close the client again after them. A second close does nothing. A Client nobody
     * closes is closed by a Cleaner once it and its handles are unreachable.
     */
    @Override
    public void close() {
        st.close(true);
    }
}
