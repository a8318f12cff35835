package org.zkelect;

/**
 * A failure reported by libzkelect: {@link #code()} is one of the
 * ZKELECT_E* codes of zkelect.h (the constants below), the message is the
 * library's. Thrown by the generated layer from native code.
 */
public class ZkelectException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    // BEGIN gen/vocab.py codes
    public static final int EINVAL = -1;
    public static final int ENOMEM = -2;
    public static final int ESTATE = -3;
    public static final int ECLOSED = -4;
    public static final int ETIMEDOUT = -5;
    public static final int ECONNLOSS = -6;
    public static final int ESESSION_EXPIRED = -7;
    public static final int EAUTH = -8;
    public static final int ENOTSUP = -9;
    public static final int EDEADLK = -10;
    public static final int EZK = -11;
    public static final int EINTERNAL = -12;
    public static final int ENOLEADER = -13;
    public static final int ERANGE = -14;
    public static final int ENOTLEADER = -15;
    public static final int ENOCANDIDATE = -16;
    public static final int ETARGET_LOST = -17;
    public static final int ELIMIT = -18;
    public static final int EFENCED = -19;
    // END gen/vocab.py codes

    private final int code;

    public ZkelectException(int code, String message) {
        super(ZkelectNative.err_name(code) + ": " + message);
        this.code = code;
    }

    /** Thrown from native code: the message as the library's UTF-8 bytes. */
    ZkelectException(int code, byte[] utf8Message) {
        this(code, Utf8.decode(utf8Message));
    }

    /** The ZKELECT_E* code. */
    public int code() {
        return code;
    }

    /** The code's C name, e.g. "ZKELECT_ESTATE". */
    public String errName() {
        return ZkelectNative.err_name(code);
    }
}
