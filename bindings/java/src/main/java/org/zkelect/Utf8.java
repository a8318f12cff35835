package org.zkelect;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * How strings cross into and out of the native layer: as real UTF-8 bytes
 * (JNI's own string functions use "modified UTF-8", which writes a
 * character outside the BMP as two 3-byte surrogates that the library
 * rightly rejects, and reads 4-byte UTF-8 as garbage).
 */
final class Utf8 {
    private Utf8() {
    }

    /** s as UTF-8; EINVAL for an unpaired surrogate or a NUL character,
     *  which no C string can carry. */
    static byte[] encode(String s) {
        if (s == null) {
            return null;
        }
        if (s.indexOf('\0') >= 0) {
            throw new ZkelectException(ZkelectException.EINVAL, "a string holds a NUL character");
        }
        try {
            ByteBuffer b = StandardCharsets.UTF_8.newEncoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .encode(CharBuffer.wrap(s));
            byte[] out = new byte[b.remaining()];
            b.get(out);
            return out;
        } catch (CharacterCodingException e) {
            throw new ZkelectException(ZkelectException.EINVAL,
                    "a string is not valid UTF-16 (unpaired surrogate)");
        }
    }

    /** UTF-8 from the library (ids come from ZooKeeper, so any bytes):
     *  malformed sequences become U+FFFD rather than an error. */
    static String decode(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }
}
