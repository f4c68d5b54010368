package delayq.compat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.redisson.api.RBlockingQueue;
import org.redisson.api.RScript;
import org.redisson.api.RDelayedQueue;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.ByteArrayCodec;
import org.redisson.client.protocol.ScoredEntry;

/** One scenario run on one case: its queue name, and helpers for both sides and raw Redis. */
final class Ctx {
    private static final AtomicInteger SEQ = new AtomicInteger();

    final Env env;
    final Case c;
    final String name;
    final Matrix.Lateness javaLate = new Matrix.Lateness();
    final Matrix.Lateness rustLate = new Matrix.Lateness();

    Ctx(Case c, int scenario) {
        this(c, scenario, Env.get());
    }

    /** A scenario run on the servers and clients of {@code env} (the Cluster's, for instance). */
    Ctx(Case c, int scenario, Env env) {
        this(c, "cq:" + env.version + ":s" + scenario + ":" + c.slug() + ":" + SEQ.incrementAndGet(), env);
    }

    private Ctx(Case c, String name, Env env) {
        this.env = env;
        this.c = c;
        this.name = name;
    }

    /**
     * Shard {@code i} of the sharded queue named like this one, as a queue of its own: the
     * Redisson queue {@code NAME:{i}} (the name that delayq's ShardedQueue and the README's Java
     * recipe both use).
     */
    Ctx shard(int i) {
        return new Ctx(c, name + ":{" + i + "}", env);
    }

    /** Redisson's prefixName: a name holding braces is not wrapped in braces again. */
    String prefixed(String prefix) {
        return name.contains("{") ? prefix + ":" + name : prefix + ":{" + name + "}";
    }

    String timeoutKey() {
        return prefixed("redisson_delay_queue_timeout");
    }

    String orderKey() {
        return prefixed("redisson_delay_queue");
    }

    // ---- peer side ----

    /** The value as the peer receives it. */
    ObjectNode pv(Object v) {
        return Case.neutral(v);
    }

    /** Fails the cell unless delayq's peer has this case's codec (there is no raw fallback). */
    void requirePeerCodec() {
        if (!env.peerHas(c)) {
            throw new AssertionError("the delayq peer does not offer codec " + c.codecId.peerName
                    + " (its caps: " + env.peerCodecs() + ")");
        }
    }

    /** Opens the queue in a peer. {@code sweepMs}: null = delayq's default, negative = off. */
    void open(Peer p, boolean transfer, Long sweepMs) {
        ObjectNode cmd = Peer.cmd("open", "h", name, "name", name,
                "codec", c.codecId.peerName, "kind", c.kind,
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

    /** Opens the sharded queue {@code name} ({@code shards} shards) in a peer, under handle {@code name}. */
    void openSharded(Peer p, int shards, boolean transfer) {
        p.call(Peer.cmd("open", "h", name, "name", name,
                "codec", c.codecId.peerName, "kind", c.kind,
                "legacy", env.legacy, "transfer", transfer, "shards", shards));
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

    /** Checks a value the peer reported: its bytes and its Rust-side value. */
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
        if (!item.path("value").toString().equals(Case.neutral(expected).toString())) {
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
        // Both keys in one script, so a running scheduler cannot move entries between the reads.
        RScript.ReturnType list;
        try {
            list = RScript.ReturnType.valueOf("MULTI"); // Redisson 3.x
        } catch (IllegalArgumentException e) {
            list = RScript.ReturnType.valueOf("LIST"); // Redisson 4.x
        }
        List<Object> reply = env.javaA.getScript(ByteArrayCodec.INSTANCE).eval(RScript.Mode.READ_ONLY,
                "local z = redis.call('zrange', KEYS[1], 0, -1, 'WITHSCORES') "
                        + "local l = redis.call('lrange', KEYS[2], 0, -1) "
                        + "local out = {tostring(#z)} "
                        + "for i = 1, #z do out[#out + 1] = z[i] end "
                        + "for i = 1, #l do out[#out + 1] = l[i] end "
                        + "return out",
                list, List.of(timeoutKey(), orderKey()));
        int zn = Integer.parseInt(text(reply.get(0)));
        Map<String, Double> out = new HashMap<>();
        List<String> zMembers = new ArrayList<>();
        for (int i = 1; i < 1 + zn; i += 2) {
            byte[] member = (byte[]) reply.get(i);
            byte[] v = Entries.value(member, env.legacy);
            out.put(Case.HEX.formatHex(v), Double.parseDouble(text(reply.get(i + 1))));
            zMembers.add(Case.HEX.formatHex(member));
        }
        List<String> lMembers = new ArrayList<>();
        for (Object o : reply.subList(1 + zn, reply.size())) {
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

    private static String text(Object o) {
        return o instanceof byte[] b ? new String(b, java.nio.charset.StandardCharsets.US_ASCII) : String.valueOf(o);
    }

    /**
     * Offers from a Java client that exists only for these offers and is shut down at once, so no
     * Java transfer task is left for this queue (RDelayedQueue.destroy() alone does not stop it in
     * older Redisson). Returns each value's lower bound of due time.
     */
    long[] javaOfferAlone(List<Object> values, long[] delays) {
        org.redisson.api.RedissonClient once = env.newClient();
        try {
            RDelayedQueue<Object> dq = dq(once);
            long[] lower = new long[values.size()];
            for (int i = 0; i < values.size(); i++) {
                lower[i] = System.currentTimeMillis() + delays[i];
                dq.offer(values.get(i), delays[i], java.util.concurrent.TimeUnit.MILLISECONDS);
            }
            dq.destroy();
            return lower;
        } finally {
            once.shutdown(0, 5, java.util.concurrent.TimeUnit.SECONDS);
        }
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
