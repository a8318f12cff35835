package org.zkelect;

/**
 * One operation of a fenced write ({@link Elector#fencedCommit}): a set of
 * a node's data, a create or a delete. Immutable; the data is copied.
 */
public final class FencedOp {
    private final int kind; // 0 set, 1 create, 2 delete
    private final String path;
    private final byte[] data;
    private final int version;
    private final boolean ephemeral;

    private FencedOp(int kind, String path, byte[] data, int version, boolean ephemeral) {
        this.kind = kind;
        this.path = path;
        this.data = data == null ? new byte[0] : data.clone();
        this.version = version;
        this.ephemeral = ephemeral;
    }

    /** Set path's data, only at data version (-1: any version). */
    public static FencedOp set(String path, byte[] data, int version) {
        return new FencedOp(0, path, data, version, false);
    }

    /** Create path holding data: persistent, or ephemeral (it goes with the
     *  client's session). Its parent must exist or be created earlier in
     *  the batch. */
    public static FencedOp create(String path, byte[] data, boolean ephemeral) {
        return new FencedOp(1, path, data, -1, ephemeral);
    }

    /** Delete path, only at data version (-1: any version). */
    public static FencedOp delete(String path, int version) {
        return new FencedOp(2, path, null, version, false);
    }

    void addTo(NativeFencedOps batch) {
        switch (kind) {
        case 0:
            ZkelectNative.fenced_ops_set(batch, path, data, version);
            break;
        case 1:
            ZkelectNative.fenced_ops_create(batch, path, data, ephemeral ? 1 : 0);
            break;
        default:
            ZkelectNative.fenced_ops_delete(batch, path, version);
        }
    }
}
