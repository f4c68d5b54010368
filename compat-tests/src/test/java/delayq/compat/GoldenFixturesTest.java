package delayq.compat;

import static java.util.concurrent.TimeUnit.MILLISECONDS;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.example.Order;
import com.example.OrderEvent;
import com.example.Payload;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.redisson.api.RDelayedQueue;
import org.redisson.client.codec.ByteArrayCodec;

/**
 * Captures the exact bytes real Redisson writes, as hex fixtures under
 * {@code crates/delayq-codec/tests/fixtures/redisson/<version>/} for the Rust tests (the codec crate's golden_fixtures.rs, delayq's entry_fixtures.rs).
 *
 * <p>Codec files ({@code <Codec>.hex}) are rewritten when the bytes change, so a diff shows a
 * Redisson change. The entry file holds real offer-script output; it contains random ids, so it
 * is only written when missing.
 */
class GoldenFixturesTest {
    /** The fixture values, by the ids the Rust test also knows. */
    static Map<String, Object> values(Case.CodecId codec) {
        Map<String, Object> m = new LinkedHashMap<>();
        switch (codec) {
            case STRING:
                m.put("string:hello", "hello");
                m.put("string:utf8", "h\u00e9llo \u20ac \uD83D\uDE00");
                m.put("string:empty", "");
                return m;
            case LONG:
                m.put("long:42", 42L);
                m.put("long:-1", -1L);
                m.put("long:max", Long.MAX_VALUE);
                m.put("long:min", Long.MIN_VALUE);
                return m;
            case BYTES:
                m.put("bytes:010203", new byte[] {1, 2, 3});
                m.put("bytes:empty", new byte[0]);
                return m;
            default:
                m.put("string:hello", "hello");
                m.put("string:utf8", "h\u00e9llo");
                m.put("long:42", 42L);
                m.put("bytes:010203", new byte[] {1, 2, 3});
                HashMap<String, Object> kv = new HashMap<>();
                kv.put("k", "v");
                m.put("map:kv", kv);
                HashMap<String, Object> ab = new HashMap<>();
                ab.put("a", "x");
                ab.put("b", "y");
                m.put("map:ab", ab);
                m.put("order:1x", new Order(1, "x"));
                ArrayList<Object> a = new ArrayList<>();
                a.add("a");
                m.put("list:a", a);
                ArrayList<Object> abl = new ArrayList<>();
                abl.add("a");
                abl.add("b");
                m.put("list:ab", abl);
                // The Java types real payloads carry.
                m.put("decimal:3.25", new BigDecimal("3.25"));
                if (codec != Case.CodecId.MSGPACK) {
                    // msgpack-jackson refuses a BigDecimal no double holds.
                    m.put("decimal:big", new BigDecimal("-123456789012345678901234567890.123456789"));
                }
                m.put("event:1", OrderEvent.of(1));
                if (codec == Case.CodecId.KRYO5) {
                    m.put("payload:1", Payload.of(1));
                    m.put("payload:2", Payload.of(2));
                }
                return m;
        }
    }

    static String kindOf(String id) {
        return id.substring(0, id.indexOf(':'));
    }

    static Path versionDir() {
        return Path.of(System.getProperty("fixtures.dir")).resolve(Env.get().version);
    }

    static void writeIfChanged(Path file, String content) throws Exception {
        Files.createDirectories(file.getParent());
        if (!Files.exists(file) || !Files.readString(file, StandardCharsets.UTF_8).equals(content)) {
            Files.writeString(file, content, StandardCharsets.UTF_8);
        }
    }

    @Test
    void codecBytes() throws Exception {
        String version = Env.get().version;
        for (Case.CodecId id : Case.CodecId.values()) {
            StringBuilder sb = new StringBuilder();
            sb.append("# Bytes written by Redisson ").append(version).append(' ').append(id.javaName)
                    .append(" (value id <TAB> hex), captured by compat-tests/GoldenFixturesTest.\n");
            for (Map.Entry<String, Object> e : values(id).entrySet()) {
                Case c = new Case(id, kindOf(e.getKey()));
                byte[] bytes = c.encode(e.getValue());
                // The bytes must decode back to the value with the same codec (TypedJson reads
                // into the kind's class), or they are no use as a fixture.
                if (!(id == Case.CodecId.JSON && kindOf(e.getKey()).equals("bytes"))) {
                    Object back = c.decode(bytes);
                    assertTrue(Case.same(e.getValue(), back),
                            id.javaName + " " + e.getKey() + " decoded to " + Case.show(back));
                }
                sb.append(e.getKey()).append('\t').append(Case.HEX.formatHex(bytes)).append('\n');
            }
            writeIfChanged(versionDir().resolve(id.javaName + ".hex"), sb.toString());
        }
    }

    @Test
    void entryBytes() throws Exception {
        Env env = Env.get();
        Case c = new Case(Case.CodecId.STRING, "string");
        String name = "golden:" + env.version;
        Ctx x = new Ctx(c, 0);
        RDelayedQueue<Object> dq = env.javaA.getDelayedQueue(env.javaA.getBlockingQueue(name, c.codec));
        try {
            dq.offer("abc", 600_000, MILLISECONDS);
            dq.offer("h\u00e9llo", 600_000, MILLISECONDS);
            List<Object> entries = env.javaA.getList("redisson_delay_queue:{" + name + "}", ByteArrayCodec.INSTANCE)
                    .readAll();
            assertEquals(2, entries.size());
            StringBuilder sb = new StringBuilder();
            String format = env.legacy ? "legacy" : "current";
            sb.append("# Entries written by Redisson ").append(env.version)
                    .append("'s offer script with StringCodec (format <TAB> value hex <TAB> entry hex).\n");
            String[] vals = {"abc", "h\u00e9llo"};
            for (int i = 0; i < 2; i++) {
                byte[] entry = (byte[]) entries.get(i);
                byte[] value = Entries.value(entry, env.legacy);
                assertArrayEquals(vals[i].getBytes(StandardCharsets.UTF_8), value);
                sb.append(format).append('\t').append(Case.HEX.formatHex(value)).append('\t')
                        .append(Case.HEX.formatHex(entry)).append('\n');
            }
            Path file = versionDir().resolve("entries.hex");
            if (!Files.exists(file)) {
                writeIfChanged(file, sb.toString());
            }
        } finally {
            dq.destroy();
            env.javaA.getKeys().delete(name, "redisson_delay_queue:{" + name + "}",
                    "redisson_delay_queue_timeout:{" + name + "}");
            x.deleteAll();
        }
    }
}
