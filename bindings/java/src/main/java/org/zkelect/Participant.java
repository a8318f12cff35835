package org.zkelect;

/**
 * One candidate of an election, in queue order (the leader first). priority
 * is election.priority as its node's name carries it, 0 to 255 (0: none;
 * also for Curator's candidates); since 1.2.
 */
public record Participant(String id, String node, long token, long createdMillis, int priority) {
    static java.util.List<Participant> take(NativeParticipants p) {
        try {
            int n = (int) ZkelectNative.participants_count(p);
            java.util.List<Participant> out = new java.util.ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                out.add(new Participant(ZkelectNative.participants_id(p, i),
                        ZkelectNative.participants_node(p, i),
                        ZkelectNative.participants_token(p, i),
                        ZkelectNative.participants_ctime_ms(p, i),
                        ZkelectNative.participants_priority(p, i)));
            }
            return java.util.Collections.unmodifiableList(out);
        } finally {
            ZkelectNative.participants_destroy(p);
        }
    }
}
