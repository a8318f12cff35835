package org.zkelect;

/**
 * Receives the events of an {@link Elector} or {@link Observer}, one at a
 * time and in order, on that object's own Java event thread (never on a
 * library thread). It may call any method, close included.
 */
@FunctionalInterface
public interface ElectionListener {
    void onEvent(Event event);
}
