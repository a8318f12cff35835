package org.zkelect;

import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Function;
import java.util.function.ToIntFunction;

/**
 * What Elector and Observer share: a native handle guarded so that close()
 * never frees it under a running call, and the Java thread that drains its
 * events into a listener.
 */
abstract class Handle<H> implements AutoCloseable {
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    private final String what;
    private H h;
    private Thread thread;
    private volatile boolean stopping;

    Handle(H h, String what) {
        this.h = h;
        this.what = what;
    }

    abstract NativeEvent pull(H h, int timeoutMs);

    abstract void wake(H h);

    abstract void destroy(H h);

    <T> T use(Function<H, T> f) {
        lock.readLock().lock();
        try {
            if (h == null) {
                throw new ZkelectException(ZkelectException.ECLOSED, what + " is closed");
            }
            return f.apply(h);
        } finally {
            lock.readLock().unlock();
        }
    }

    int rc(ToIntFunction<H> f) {
        return use(x -> f.applyAsInt(x));
    }

    /**
     * The next event, waiting up to timeoutMs (0: do not wait, negative: no
     * limit), or null. Not for use while a listener is set.
     */
    public Event nextEvent(int timeoutMs) {
        NativeEvent ev = use(x -> pull(x, timeoutMs));
        return ev == null ? null : new Event(ev);
    }

    /** Make a waiting (or the next) nextEvent return at once. */
    public void wake() {
        use(x -> {
            wake(x);
            return null;
        });
    }

    /**
     * Serve every later event to listener on a Java thread of this object's
     * own, until close. Once only.
     */
    public synchronized void setListener(ElectionListener listener) {
        if (thread != null) {
            throw new ZkelectException(ZkelectException.ESTATE, "a listener is already set");
        }
        use(x -> null); // closed: throw now rather than start a thread
        thread = new Thread(() -> {
            while (!stopping) {
                Event ev;
                try {
                    // Bounded, so a wake lost to a race cannot hang close.
                    ev = nextEvent(500);
                } catch (ZkelectException e) {
                    return; // closed under us
                }
                if (ev != null && !stopping) {
                    listener.onEvent(ev);
                }
            }
        }, "zkelect-events-" + what);
        thread.setDaemon(true);
        thread.start();
    }

    /**
     * Stops the listener thread (waiting for it unless called from it) and
     * frees the handle. A second close does nothing.
     */
    @Override
    public void close() {
        Thread t;
        synchronized (this) {
            stopping = true;
            t = thread;
        }
        if (t != null && t != Thread.currentThread()) {
            try {
                wake();
            } catch (ZkelectException e) {
                // already closed
            }
            boolean interrupted = false;
            while (t.isAlive()) {
                try {
                    t.join();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
        lock.writeLock().lock();
        try {
            if (h != null) {
                destroy(h);
                h = null;
            }
        } finally {
            lock.writeLock().unlock();
        }
    }
}
