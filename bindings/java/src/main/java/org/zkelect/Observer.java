package org.zkelect;

/**
 * Watches who leads an election without taking part: LEADER_CHANGED first
 * with the current leader (or none), then on every change.
 */
public final class Observer extends Handle<NativeObserver> {
    /** Keeps the Client reachable while its Observer is: the Cleaner must
     *  not end a session under an open observer. */
    private final Client client;

    Observer(Client client, String path) {
        super(new State<>(client.use(c -> ZkelectNative.observer_new(c, path)), "observer " + path,
                client.st, false, ZkelectNative::observer_next_event, ZkelectNative::observer_wake,
                ZkelectNative::observer_destroy));
        this.client = client;
    }

    public Client client() {
        return client;
    }

    /** Readable while events wait (level-triggered); owned by the library. */
    public int eventFd() {
        return rc(ZkelectNative::observer_event_fd);
    }
}
