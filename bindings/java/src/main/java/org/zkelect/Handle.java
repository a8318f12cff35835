package org.zkelect;

import java.lang.ref.Cleaner;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.BiConsumer;
import java.util.function.BiFunction;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.ToIntFunction;

/**
 * What Elector and Observer share: a native handle guarded so that close()
 * never frees it under a running call, waits that never hold close() up for
 * long, a Cleaner for handles nobody closed, and the Java thread that drains
 * events into a listener.
 */
abstract class Handle<H> implements AutoCloseable {
    /**
     * The longest single wait inside the C library. Every blocking call
     * (nextEvent, awaitLeader, awaitConnected, the listener thread) waits in
     * slices of at most this long and lets go of the handle between two, so
     * close() waits for each blocked caller at most one slice.
     */
    static final int SLICE_MS = 200;

    /** One daemon thread for the whole library, running the frees of
     *  handles that became unreachable without close(). */
    static final Cleaner CLEANER = Cleaner.create();

    /**
     * The native side of a handle. It never references the Handle (only
     * static functions and the client's native side), which is what lets
     * the Cleaner run it once the Handle is unreachable.
     */
    static final class State<H> implements Runnable {
        final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
        final String what;
        final Client.State client;
        final boolean ownsClient;
        final BiFunction<H, Integer, NativeEvent> pull;
        final Consumer<H> wake;
        final Consumer<H> destroy;
        /** Set when close begins: later calls fail at once instead of
         *  queueing behind close for the write lock. */
        volatile boolean closing;
        /** wake() calls not yet answered by a nextEvent. */
        final AtomicLong wakes = new AtomicLong();
        private H h;

        State(H h, String what, Client.State client, boolean ownsClient,
                BiFunction<H, Integer, NativeEvent> pull, Consumer<H> wake, Consumer<H> destroy) {
            this.h = h;
            this.what = what;
            this.client = client;
            this.ownsClient = ownsClient;
            this.pull = pull;
            this.wake = wake;
            this.destroy = destroy;
        }

        <T> T use(Function<H, T> f) {
            if (closing) {
                throw new ZkelectException(ZkelectException.ECLOSED, what + " is closed");
            }
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

        boolean takeWake() {
            return wakes.getAndUpdate(n -> n > 0 ? n - 1 : 0) > 0;
        }

        /** Wake a native wait, also while closing. */
        void wakeNative() {
            lock.readLock().lock();
            try {
                if (h != null) {
                    wake.accept(h);
                }
            } catch (ZkelectException e) {
                // nothing to wake
            } finally {
                lock.readLock().unlock();
            }
        }

        /** Free the handle (once), then the client if this handle made it
         *  or its Client was collected while this handle was still open. */
        void close() {
            closing = true;
            wakeNative();
            lock.writeLock().lock();
            try {
                if (h != null) {
                    destroy.accept(h);
                    h = null;
                }
            } finally {
                lock.writeLock().unlock();
            }
            if (ownsClient) {
                client.close(false);
            } else {
                client.childClosed();
            }
        }

        /** The Cleaner's entry: nobody is left to hear an error. */
        @Override
        public void run() {
            try {
                close();
            } catch (RuntimeException e) {
                // e.g. the owned client still has handles: Client.State retries
            }
        }
    }

    final State<H> st;
    private Thread thread;
    private volatile boolean stopping;

    Handle(State<H> st) {
        this.st = st;
        CLEANER.register(this, st);
    }

    <T> T use(Function<H, T> f) {
        return st.use(f);
    }

    int rc(ToIntFunction<H> f) {
        return use(x -> f.applyAsInt(x));
    }

    /** timeoutMs as ns, saturated; -1 (no limit) for a negative value. */
    static long limitNanos(long timeoutMs) {
        if (timeoutMs < 0) {
            return -1;
        }
        return timeoutMs >= Long.MAX_VALUE / 1_000_000L ? Long.MAX_VALUE : timeoutMs * 1_000_000L;
    }

    /** The next slice (ms, 0 once run out) of a wait of limitNs (-1: no
     *  limit) that began at startNs. */
    static int sliceMs(long startNs, long limitNs) {
        if (limitNs < 0) {
            return SLICE_MS;
        }
        long left = limitNs - (System.nanoTime() - startNs);
        if (left <= 0) {
            return 0;
        }
        return (int) Math.min(SLICE_MS, (left + 999_999L) / 1_000_000L);
    }

    static boolean ranOut(long startNs, long limitNs) {
        return limitNs >= 0 && System.nanoTime() - startNs >= limitNs;
    }

    /**
     * The next event, waiting up to timeoutMs (0: do not wait, negative: no
     * limit; any positive value is honoured, however long), or null when
     * none came in time or {@link #wake} was called. Throws
     * ZkelectException(ECLOSED) once closed, also in a thread that was
     * waiting when close began (within 200 ms of it). Not for use while a
     * listener is set.
     */
    public Event nextEvent(long timeoutMs) {
        long start = System.nanoTime();
        long limit = limitNanos(timeoutMs);
        while (true) {
            int ms = sliceMs(start, limit);
            NativeEvent ev = use(x -> st.pull.apply(x, ms));
            if (ev != null) {
                return new Event(ev);
            }
            if (st.takeWake() || ranOut(start, limit)) {
                return null;
            }
        }
    }

    /** Make one waiting (or the next) nextEvent return null at once. */
    public void wake() {
        st.wakes.incrementAndGet();
        use(x -> {
            st.wake.accept(x);
            return null;
        });
    }

    /**
     * Serve every later event to listener on a Java thread of this object's
     * own, until close. Once only. An exception thrown by the listener goes
     * to the event thread's uncaught-exception handler (by default printed
     * to System.err by the JVM) and delivery goes on with the next event.
     * While the thread runs it references this object, so a handle with a
     * listener is never freed by the Cleaner: close it.
     */
    public void setListener(ElectionListener listener) {
        setListener(listener, null);
    }

    /**
     * As {@link #setListener(ElectionListener)}, an exception thrown by the
     * listener going to onError (with the event it was handling) instead.
     */
    public synchronized void setListener(ElectionListener listener,
            BiConsumer<Event, Throwable> onError) {
        if (thread != null) {
            throw new ZkelectException(ZkelectException.ESTATE, "a listener is already set");
        }
        use(x -> null); // closed: throw now rather than start a thread
        thread = new Thread(() -> {
            while (!stopping) {
                NativeEvent raw;
                try {
                    raw = use(x -> st.pull.apply(x, SLICE_MS));
                } catch (ZkelectException e) {
                    return; // closed under us
                }
                if (raw == null) {
                    continue;
                }
                Event ev = new Event(raw);
                if (stopping) {
                    return;
                }
                try {
                    listener.onEvent(ev);
                } catch (Throwable t) {
                    report(onError, ev, t);
                }
            }
        }, "zkelect-events-" + st.what);
        thread.setDaemon(true);
        thread.start();
    }

    private static void report(BiConsumer<Event, Throwable> onError, Event ev, Throwable t) {
        Thread self = Thread.currentThread();
        try {
            if (onError != null) {
                onError.accept(ev, t);
                return;
            }
        } catch (Throwable t2) {
            t.addSuppressed(t2);
        }
        try {
            self.getUncaughtExceptionHandler().uncaughtException(self, t);
        } catch (Throwable ignored) {
            // the handler failed too: delivery goes on all the same
        }
    }

    /**
     * Stops the listener thread (waiting for it unless called from it) and
     * frees the handle. Threads waiting in nextEvent or awaitLeader get
     * ZkelectException(ECLOSED); close waits for them at most 200 ms. A
     * second close does nothing.
     */
    @Override
    public void close() {
        Thread t;
        synchronized (this) {
            stopping = true;
            t = thread;
        }
        st.closing = true;
        st.wakeNative();
        if (t != null && t != Thread.currentThread()) {
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
        st.close();
    }
}
