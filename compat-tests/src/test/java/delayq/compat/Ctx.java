package delayq.compat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.redisson.api.BatchOptions;
import org.redisson.api.RBatch;
import org.redisson.api.RBlockingQueue;
import org.redisson.api.RFuture;
import org.redisson.api.RDelayedQueue;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.ByteArrayCodec;
import org.redisson.client.protocol.ScoredEntry;

/** One scenario run on one case: its queue name, and helpers for both sides and raw Redis. */
final class Ctx {
    private static final AtomicInteger SEQ = new AtomicInteger();

    final Env env = Env.get();
    final Case c;
    final String name;
    /** True when delayq has no such codec: the peer then carries Java-encoded bytes. */
    final boolean raw;
    final Matrix.Lateness javaLate = new Matrix.Lateness();
    final Matrix.Lateness rustLate = new Matrix.Lateness();

    Ctx(Case c, int scenario) {
        this.c = c;
        this.name = "cq:" + env.version + ":s" + scenario + ":" + c.slug() + ":" + SEQ.incrementAndGet();
        this.raw = !env.peerHas(c);
    }

    String timeoutKey() {
        return "redisson_delay_queue_timeout:{" + name + "}";
    }

    String orderKey() {
        return "redisson_delay_queue:{" + name + "}";
    }

    // ---- peer side ----

    /** The value as the peer receives it. */
    ObjectNode pv(Object v) {
        if (raw) {
            ObjectNode n = Peer.JSON.createObjectNode();
            n.put("kind", "bytes").put("hex", c.hex(v));
            return n;
        }
        return Case.neutral(v);
    }

    /** Opens the queue in a peer. {@code sweepMs}: null = delayq's default, negative = off. */
    void open(Peer p, boolean transfer, Long sweepMs) {
        ObjectNode cmd = Peer.cmd("open", "h", name, "name", name,
                "codec", raw ? "raw" : c.codecId.peerName, "kind", c.kind,
                "legacy", env.legacy, "transfer", transfer);
        if (sweepMs != null) {
            if (sweepMs < 0) {
                cmd.putNull("sweep_ms");
            } else {
                cmd.put("sweep_ms", sweepMs);
            }
        }
        p.call(cmd);
    }

    void peerOffer(Peer p, Object v, long delayMs) {
        p.call("offer", "h", name, "value", pv(v), "delay_ms", delayMs);
    }

    void peerOfferAll(Peer p, List<Object> values, List<Long> delays) {
        List<ObjectNode> items = new ArrayList<>();
        for (int i = 0; i < values.size(); i++) {
            ObjectNode it = Peer.JSON.createObjectNode();
            it.set("value", pv(values.get(i)));
            it.put("delay_ms", delays.get(i));
            items.add(it);
        }
        p.call("offer_all", "h", name, "items", items);
    }

    JsonNode peer(Peer p, String op, Object... kv) {
        Object[] all = new Object[kv.length + 2];
        all[0] = "h";
        all[1] = name;
        System.arraycopy(kv, 0, all, 2, kv.length);
        return p.call(op, all);
    }

    /** Checks a value the peer reported: its bytes and (typed) its Rust-side value. */
    void checkItem(JsonNode item, Object expected, String what) {
        if (item == null || item.isNull() || item.isMissingNode()) {
            throw new AssertionError(what + ": peer returned nothing, expected " + Case.show(expected));
        }
        String rawHex = item.path("raw").asText();
        if (!rawHex.equals(c.hex(expected))) {
            throw new AssertionError(what + ": peer bytes " + rawHex + " != Java's " + c.hex(expected)
                    + " for " + Case.show(expected));
        }
        // Compare as text: Jackson's IntNode and LongNode for one number are not equal().
        if (!raw && !item.path("value").toString().equals(Case.neutral(expected).toString())) {
            throw new AssertionError(what + ": peer value " + item.path("value") + " != " + Case.neutral(expected));
        }
    }

    void checkItems(JsonNode items, List<Object> expected, String what) {
        List<String> got = new ArrayList<>();
        items.forEach(i -> got.add(i.path("raw").asText()));
        List<String> want = new ArrayList<>();
        expected.forEach(v -> want.add(c.hex(v)));
        if (!got.equals(want)) {
            throw new AssertionError(what + ": peer gave " + got + ", expected " + want);
        }
        for (int i = 0; i < expected.size(); i++) {
            checkItem(items.get(i), expected.get(i), what + "[" + i + "]");
        }
    }

    // ---- Java side ----

    RBlockingQueue<Object> bq(RedissonClient r) {
        return r.getBlockingQueue(name, c.codec);
    }

    RDelayedQueue<Object> dq(RedissonClient r) {
        return r.getDelayedQueue(bq(r));
    }

    // ---- raw Redis ----

    /**
     * The pending entries (value hex to score), after checking every member of the timeout set
     * and the order list is well packed in this run's format and that both hold the same entries.
     */
    Map<String, Double> pending() {
        // Both keys in one MULTI, so a running scheduler cannot move entries between the reads.
        RBatch batch = env.javaA.createBatch(BatchOptions.defaults().executionMode(BatchOptions.ExecutionMode.REDIS_READ_ATOMIC));
        RFuture<Collection<ScoredEntry<byte[]>>> zf =
                batch.<byte[]>getScoredSortedSet(timeoutKey(), ByteArrayCodec.INSTANCE).entryRangeAsync(0, -1);
        RFuture<List<Object>> lf = batch.getList(orderKey(), ByteArrayCodec.INSTANCE).readAllAsync();
        batch.execute();
        Map<String, Double> out = new HashMap<>();
        List<String> zMembers = new ArrayList<>();
        for (ScoredEntry<byte[]> e : zf.toCompletableFuture().join()) {
            byte[] v = Entries.value(e.getValue(), env.legacy);
            out.put(Case.HEX.formatHex(v), e.getScore());
            zMembers.add(Case.HEX.formatHex(e.getValue()));
        }
        List<String> lMembers = new ArrayList<>();
        for (Object o : lf.toCompletableFuture().join()) {
            byte[] entry = (byte[]) o;
            Entries.value(entry, env.legacy);
            lMembers.add(Case.HEX.formatHex(entry));
        }
        List<String> zs = new ArrayList<>(zMembers);
        List<String> ls = new ArrayList<>(lMembers);
        zs.sort(null);
        ls.sort(null);
        if (!zs.equals(ls)) {
            throw new AssertionError("timeout set and order list differ: " + zs + " vs " + ls);
        }
        return out;
    }

    /** The target list's raw values (hex), head first. */
    List<String> target() {
        List<String> out = new ArrayList<>();
        for (Object o : env.javaA.getList(name, ByteArrayCodec.INSTANCE).readAll()) {
            out.add(Case.HEX.formatHex((byte[]) o));
        }
        return out;
    }

    long timeoutCard() {
        return env.javaA.getScoredSortedSet(timeoutKey(), ByteArrayCodec.INSTANCE).size();
    }

    long orderLen() {
        return env.javaA.getList(orderKey(), ByteArrayCodec.INSTANCE).size();
    }

    void deleteAll() {
        env.javaA.getKeys().delete(name, timeoutKey(), orderKey());
    }
}
