package org.zkelect;

/**
 * Watches who leads an election without taking part: LEADER_CHANGED first
 * with the current leader (or none), then on every change.
 */
public final class Observer extends Handle<NativeObserver> {
    Observer(Client client, String path) {
        super(client.use(c -> ZkelectNative.observer_new(c, path)), "observer " + path);
    }

    /** Readable while events wait (level-triggered); owned by the library. */
    public int eventFd() {
        return rc(ZkelectNative::observer_event_fd);
    }

    @Override
    NativeEvent pull(NativeObserver h, int timeoutMs) {
        return ZkelectNative.observer_next_event(h, timeoutMs);
    }

    @Override
    void wake(NativeObserver h) {
        ZkelectNative.observer_wake(h);
    }

    @Override
    void destroy(NativeObserver h) {
        ZkelectNative.observer_destroy(h);
    }
}
