package org.zkelect;

/** One candidate of an election, in queue order (the leader first). */
public record Participant(String id, String node, long token, long createdMillis) {
    static java.util.List<Participant> take(NativeParticipants p) {
        try {
            int n = (int) ZkelectNative.participants_count(p);
            java.util.List<Participant> out = new java.util.ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                out.add(new Participant(ZkelectNative.participants_id(p, i),
                        ZkelectNative.participants_node(p, i),
                        ZkelectNative.participants_token(p, i),
                        ZkelectNative.participants_ctime_ms(p, i)));
            }
            return java.util.Collections.unmodifiableList(out);
        } finally {
            ZkelectNative.participants_destroy(p);
        }
    }
}
