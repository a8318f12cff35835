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
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    private NativeClient h;

    private Client(NativeClient h) {
        this.h = h;
    }

    /** A session on the ZooKeeper ensemble at hosts ("host:port,..."). */
    public static Client connect(String hosts) {
        return connect(Map.of("zk.hosts", hosts));
    }

    /**
     * A session configured by libzkelect's keys ("zk.hosts" required;
     * "zk.session.timeout.ms", "leadership", ...). Does not wait for the
     * connection (see {@link #awaitConnected}).
     */
    public static Client connect(Map<String, String> settings) {
        NativeConf conf = ZkelectNative.conf_new();
        try {
            for (Map.Entry<String, String> kv : settings.entrySet()) {
                ZkelectNative.conf_set(conf, kv.getKey(), kv.getValue());
            }
            return new Client(ZkelectNative.client_new(conf));
        } finally {
            ZkelectNative.conf_destroy(conf);
        }
    }

    <T> T use(Function<NativeClient, T> f) {
        lock.readLock().lock();
        try {
            if (h == null) {
                throw new ZkelectException(ZkelectException.ECLOSED, "client is closed");
            }
            return f.apply(h);
        } finally {
            lock.readLock().unlock();
        }
    }

    /** True once connected, false when timeoutMs ran out. */
    public boolean awaitConnected(int timeoutMs) {
        try {
            use(c -> ZkelectNative.client_await_connected(c, timeoutMs));
            return true;
        } catch (ZkelectException e) {
            if (e.code() == ZkelectException.ETIMEDOUT) {
                return false;
            }
            throw e;
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

    /** The candidates of the election at path, leader first. */
    public List<Participant> participants(String path) {
        return Participant.take(use(c -> ZkelectNative.client_participants(c, path)));
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
     * Ends the session (ZooKeeper removes its nodes at once). Throws
     * ZkelectException(ESTATE), freeing nothing, while an Elector or
     * Observer of it is open. A second close does nothing.
     */
    @Override
    public void close() {
        lock.writeLock().lock();
        try {
            if (h != null) {
                ZkelectNative.client_destroy(h);
                h = null;
            }
        } finally {
            lock.writeLock().unlock();
        }
    }
}
