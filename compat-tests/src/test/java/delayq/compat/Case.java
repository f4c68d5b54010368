package delayq.compat;

import com.example.Order;
import com.example.OrderEvent;
import com.example.Payload;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.datatype.jsr310.JavaTimeModule;
import java.math.BigDecimal;
import org.msgpack.jackson.dataformat.MessagePackFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.redisson.client.codec.ByteArrayCodec;
import org.redisson.client.codec.Codec;
import org.redisson.client.codec.LongCodec;
import org.redisson.client.codec.StringCodec;
import org.redisson.codec.JsonJacksonCodec;
import org.redisson.codec.Kryo5Codec;
import org.redisson.codec.MsgPackJacksonCodec;
import org.redisson.codec.TypedJsonJacksonCodec;

/** One row of the matrix: a Redisson codec and the kind of value the queue carries. */
final class Case {
    /** Redisson codec name (as in the matrix) and the peer's codec name. */
    enum CodecId {
        STRING("StringCodec", "string"),
        LONG("LongCodec", "long"),
        BYTES("ByteArrayCodec", "bytes"),
        JSON("JsonJacksonCodec", "json"),
        TYPED_JSON("TypedJsonJacksonCodec", "typed_json"),
        MSGPACK("MsgPackJacksonCodec", "msgpack"),
        KRYO5("Kryo5Codec", "kryo5");

        final String javaName;
        final String peerName;

        CodecId(String javaName, String peerName) {
            this.javaName = javaName;
            this.peerName = peerName;
        }
    }

    static final HexFormat HEX = HexFormat.of();

    final CodecId codecId;
    final String kind;
    final Codec codec;

    Case(CodecId codecId, String kind) {
        this.codecId = codecId;
        this.kind = kind;
        this.codec = makeCodec(codecId, kind);
    }

    /** Every case of the matrix, in matrix order. */
    static List<Case> all() {
        List<Case> out = new ArrayList<>();
        out.add(new Case(CodecId.STRING, "string"));
        out.add(new Case(CodecId.LONG, "long"));
        out.add(new Case(CodecId.BYTES, "bytes"));
        for (CodecId id : List.of(CodecId.JSON, CodecId.TYPED_JSON, CodecId.MSGPACK)) {
            for (String k : List.of("string", "long", "map", "order", "list", "decimal", "event")) {
                out.add(new Case(id, k));
            }
        }
        for (String k : List.of("string", "long", "bytes", "map", "order", "list", "decimal", "event", "payload")) {
            out.add(new Case(CodecId.KRYO5, k));
        }
        return out;
    }

    /** One case per codec (its first kind), for the heavy scenario. */
    static List<Case> onePerCodec() {
        List<Case> out = new ArrayList<>();
        for (Case c : all()) {
            if (out.stream().noneMatch(o -> o.codecId == c.codecId)) {
                out.add(c);
            }
        }
        return out;
    }

    /** An ObjectMapper with JavaTimeModule, as a Java service carrying java.time values sets up. */
    static ObjectMapper timeMapper(JsonFactory factory) {
        ObjectMapper om = factory == null ? new ObjectMapper() : new ObjectMapper(factory);
        om.registerModule(new JavaTimeModule());
        return om;
    }

    private static Codec makeCodec(CodecId id, String kind) {
        if (kind.equals("event")) {
            // java.time needs JavaTimeModule, which Redisson's Jackson codecs do not register.
            switch (id) {
                case JSON: return new JsonJacksonCodec(timeMapper(null));
                case MSGPACK: return new JsonJacksonCodec(timeMapper(new MessagePackFactory()));
                case TYPED_JSON: return new TypedJsonJacksonCodec(OrderEvent.class, timeMapper(null));
                default: break;
            }
        }
        switch (id) {
            case STRING: return StringCodec.INSTANCE;
            case LONG: return LongCodec.INSTANCE;
            case BYTES: return ByteArrayCodec.INSTANCE;
            case JSON: return new JsonJacksonCodec();
            case MSGPACK: return new MsgPackJacksonCodec();
            case KRYO5: return new Kryo5Codec();
            case TYPED_JSON: return new TypedJsonJacksonCodec(javaClass(kind));
            default: throw new IllegalArgumentException(id.toString());
        }
    }

    static Class<?> javaClass(String kind) {
        switch (kind) {
            case "string": return String.class;
            case "long": return Long.class;
            case "bytes": return byte[].class;
            case "map": return HashMap.class;
            case "order": return Order.class;
            case "list": return ArrayList.class;
            case "decimal": return BigDecimal.class;
            case "event": return OrderEvent.class;
            case "payload": return Payload.class;
            default: throw new IllegalArgumentException(kind);
        }
    }

    String label() {
        return codecId.javaName + " / " + kind;
    }

    /** A short id for queue names. */
    String slug() {
        return codecId.peerName + "-" + kind;
    }

    /** The i-th test value (distinct for distinct i). */
    Object value(int i) {
        switch (kind) {
            case "string": return "v" + i + "-\u00e9";
            case "long": return i * 1_000_003L - 7;
            case "bytes": return new byte[] {(byte) i, 0, (byte) 0xff, (byte) (i >> 8), 0x7f};
            case "map": {
                // Java iterates these keys a, b, Z (buckets 1, 2, 10), not in sorted order Z, a, b:
                // delayq's side has to produce Java's order itself (JavaHashMap, or Kryo's
                // java_hash_order; the peer hands Kryo the entries sorted).
                HashMap<String, Object> m = new HashMap<>();
                m.put("a", "x" + i);
                m.put("b", "y" + i);
                m.put("Z", "z" + i);
                return m;
            }
            case "order": return new Order(i, "sku-" + i);
            case "list": {
                ArrayList<Object> l = new ArrayList<>();
                l.add("p" + i);
                l.add("q" + i);
                return l;
            }
            // A double holds i.25 exactly, so MsgPackJacksonCodec (which writes a BigDecimal as a
            // double) keeps it too.
            case "decimal": return BigDecimal.valueOf(i * 100L + 25, 2);
            case "event": return OrderEvent.of(i);
            case "payload": return Payload.of(i);
            default: throw new IllegalArgumentException(kind);
        }
    }

    /** The neutral JSON form the peer understands. */
    static ObjectNode neutral(Object v) {
        ObjectNode n = Peer.JSON.createObjectNode();
        if (v instanceof String s) {
            n.put("kind", "string").put("v", s);
        } else if (v instanceof Long l) {
            n.put("kind", "long").put("v", l);
        } else if (v instanceof byte[] b) {
            n.put("kind", "bytes").put("hex", HEX.formatHex(b));
        } else if (v instanceof Map<?, ?> m) {
            n.put("kind", "map").set("v", Peer.JSON.valueToTree(m));
        } else if (v instanceof List<?> l) {
            n.put("kind", "list").set("v", Peer.JSON.valueToTree(l));
        } else if (v instanceof Order o) {
            n.put("kind", "order").put("id", o.getId()).put("sku", o.getSku());
        } else if (v instanceof BigDecimal d) {
            n.put("kind", "decimal").put("v", d.toString());
        } else if (v instanceof OrderEvent e) {
            // The peer builds OrderEvent.of(i) itself, and reports i only for an equal value.
            n.put("kind", "event").put("i", e.getOrderId() - 1000);
        } else if (v instanceof Payload p) {
            n.put("kind", "payload").put("i", p.index());
        } else {
            throw new IllegalArgumentException("no neutral form for " + v);
        }
        return n;
    }

    /** The bytes Redisson's codec writes for {@code v}. */
    byte[] encode(Object v) {
        try {
            ByteBuf buf = codec.getValueEncoder().encode(v);
            try {
                return ByteBufUtil.getBytes(buf);
            } finally {
                buf.release();
            }
        } catch (Exception e) {
            throw new IllegalStateException(label() + " cannot encode " + v, e);
        }
    }

    String hex(Object v) {
        return HEX.formatHex(encode(v));
    }

    /** Decodes bytes with Redisson's codec. */
    Object decode(byte[] bytes) {
        ByteBuf buf = Unpooled.wrappedBuffer(bytes);
        try {
            return codec.getValueDecoder().decode(buf, null);
        } catch (Exception e) {
            throw new IllegalStateException(label() + " cannot decode " + HEX.formatHex(bytes), e);
        } finally {
            buf.release();
        }
    }

    /** Same value and same Java class. */
    static boolean same(Object expected, Object actual) {
        return expected != null && actual != null && expected.getClass() == actual.getClass()
                && Objects.deepEquals(expected, actual);
    }

    static String show(Object v) {
        if (v == null) {
            return "null";
        }
        String s = v instanceof byte[] b ? "0x" + HEX.formatHex(b) : v.toString();
        return s + " (" + v.getClass().getName() + ")";
    }
}
