package delayq.compat;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Checks the packing of raw delayed-queue entries, independently of delayq: {@code Bc0Lc0}
 * (Redisson 3.21.1+) or {@code dLc0} (older), 8-byte little-endian lengths.
 */
final class Entries {
    private Entries() {}

    /** The value bytes of an entry, or an AssertionError saying what is wrong. */
    static byte[] value(byte[] entry, boolean legacy) {
        int head = legacy ? 16 : 17;
        if (entry.length < head) {
            throw new AssertionError((legacy ? "dLc0" : "Bc0Lc0") + " entry too short: "
                    + Case.HEX.formatHex(entry));
        }
        if (!legacy && entry[0] != 8) {
            throw new AssertionError("Bc0Lc0 entry id length is " + entry[0] + ", not 8: "
                    + Case.HEX.formatHex(entry));
        }
        long len = ByteBuffer.wrap(entry, head - 8, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
        if (len != entry.length - head) {
            throw new AssertionError((legacy ? "dLc0" : "Bc0Lc0") + " length field " + len
                    + " does not match entry of " + entry.length + " bytes: " + Case.HEX.formatHex(entry));
        }
        if (legacy) {
            double random = ByteBuffer.wrap(entry, 0, 8).order(ByteOrder.LITTLE_ENDIAN).getDouble();
            if (Double.isNaN(random) || random != Math.rint(random)) {
                throw new AssertionError("dLc0 entry does not start with an integral double: "
                        + Case.HEX.formatHex(entry));
            }
        }
        byte[] v = new byte[entry.length - head];
        System.arraycopy(entry, head, v, 0, v.length);
        return v;
    }
}
