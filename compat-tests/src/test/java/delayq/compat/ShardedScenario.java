package delayq.compat;

import static java.util.concurrent.TimeUnit.MILLISECONDS;
import static java.util.concurrent.TimeUnit.SECONDS;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.zip.CRC32;
import org.redisson.api.RBlockingQueue;
import org.redisson.api.RDelayedQueue;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.ByteArrayCodec;
import org.redisson.client.codec.Codec;

/**
 * Scenario 9: delayq's sharded queues ({@code ShardedQueue}) with Java services that use the
 * README's recipe: shard {@code i} of {@code NAME} is the ordinary Redisson queue
 * {@code NAME:{i}}, and a value goes to shard {@code CRC32(the codec's bytes) % N}, computed here
 * with {@code java.util.zip.CRC32} alone, never by asking delayq.
 *
 * <ol>
 *   <li>Two Java producers (clients shut down right after their offers, so no Java transfer task
 *       is left) offer through the recipe with random delays while delayq's sharded worker runs:
 *       delayq's scheduler moves, the worker takes every value exactly once, none early, each
 *       from the shard the recipe chose, with Java's bytes; delayq's {@code shard_for} agrees
 *       with the recipe for every value, and each shard's raw entries hold only its values.</li>
 *   <li>The reverse: delayq's ShardedQueue offers (one by one and in batches; its transfer
 *       off), Java's {@code RDelayedQueue} per shard transfers, and one Java consumer per shard
 *       polls that shard's {@code RBlockingQueue}: every value exactly once, none early, from
 *       the shard the recipe predicts.</li>
 *   <li>Remove by value across languages: Java removes values delayq offered (going to the
 *       recipe's shard), delayq removes values Java offered; both sides' {@code contains},
 *       {@code size} and per-shard {@code readAll} agree, and the handle of delayq's
 *       {@code offer_with_handle} names the recipe's shard and an entry of it.</li>
 * </ol>
 *
 * <p>All three run on a Redis Cluster of three masters ({@link Env#cluster()}), where the six
 * shards' hash tags put the queue on every master (checked), so both sides also route each
 * shard's commands and scripts to its own master.
 */
final class ShardedScenario {
    private ShardedScenario() {}

    static final int SHARDS = 6;
    static final int VALUES = 60;
    static final long FAR = CompatMatrixTest.FAR;

    /** The README's recipe, the shard part: the JDK's CRC32 of the codec's bytes, modulo N. */
    static int shardOf(Codec codec, Object value, int shards) {
        ByteBuf buf;
        try {
            buf = codec.getValueEncoder().encode(value);
        } catch (Exception e) {
            throw new IllegalStateException("cannot encode " + Case.show(value), e);
        }
        try {
            CRC32 crc = new CRC32();
            crc.update(ByteBufUtil.getBytes(buf));
            return (int) (crc.getValue() % shards);
        } finally {
            buf.release();
        }
    }

    /** The README's recipe, the queue part: shard {@code shard} of {@code name}. */
    static RDelayedQueue<Object> shardQueue(RedissonClient r, String name, int shard, Codec codec) {
        return r.getDelayedQueue(r.getBlockingQueue(name + ":{" + shard + "}", codec));
    }

    /**
     * Runs the three parts on the suite's Redis Cluster of three masters, each on a queue of its
     * own; the cell {@code x} (on the standalone server, unused) records the lateness.
     */
    static void run(Ctx x) throws Exception {
        Env cluster = Env.cluster();
        Ctx a = new Ctx(x.c, 9, cluster);
        try {
            onEveryMaster(a);
            javaOffersDelayqWorks(x, a);
        } finally {
            deleteShards(a);
        }
        Ctx b = new Ctx(x.c, 9, cluster);
        try {
            delayqOffersJavaTakes(x, b);
        } finally {
            deleteShards(b);
        }
        Ctx z = new Ctx(x.c, 9, cluster);
        try {
            removeAcrossLanguages(z);
        } finally {
            deleteShards(z);
        }
    }

    /** The shards' hash tags spread the queue over every master of the Cluster. */
    static void onEveryMaster(Ctx x) throws Exception {
        RedisCluster cluster = x.env.cluster;
        int[] perMaster = new int[cluster.nodes.size()];
        for (int s = 0; s < SHARDS; s++) {
            perMaster[cluster.masterOf(x.shard(s).name)]++;
        }
        for (int m = 0; m < perMaster.length; m++) {
            CompatMatrixTest.check(perMaster[m] > 0, "no shard of " + SHARDS + " on master " + m
                    + " (shards per master: " + java.util.Arrays.toString(perMaster) + ")");
        }
    }

    /**
     * Every key of the sharded queue {@code x.name}: Redisson's and delayq's, of every shard (one
     * DEL a key: on a Cluster the shards' keys are in different slots).
     */
    static void deleteShards(Ctx x) {
        for (String key : x.env.javaA.getKeys().getKeysByPattern("*" + x.name + ":{*")) {
            x.env.javaA.getKeys().delete(key);
        }
    }

    static List<Ctx> shards(Ctx x) {
        List<Ctx> out = new ArrayList<>();
        for (int s = 0; s < SHARDS; s++) {
            out.add(x.shard(s));
        }
        return out;
    }

    static List<ObjectNode> neutral(Ctx x, List<Object> values) {
        List<ObjectNode> out = new ArrayList<>();
        values.forEach(v -> out.add(x.pv(v)));
        return out;
    }

    /** The recipe's shard of each value; checks delayq's shard_for agrees, and that all shards are used. */
    static int[] recipeShards(Ctx x, Peer p, List<Object> values) {
        int[] shard = new int[values.size()];
        boolean[] used = new boolean[SHARDS];
        JsonNode delayq = x.peer(p, "shard_for", "values", neutral(x, values)).path("shards");
        CompatMatrixTest.eq(values.size(), delayq.size(), "delayq's shard_for answers");
        for (int i = 0; i < values.size(); i++) {
            shard[i] = shardOf(x.c.codec, values.get(i), SHARDS);
            used[shard[i]] = true;
            CompatMatrixTest.eq(shard[i], delayq.get(i).asInt(),
                    "delayq's shard of value " + i + " (" + Case.show(values.get(i)) + ") vs Java's CRC32");
        }
        for (int s = 0; s < SHARDS; s++) {
            CompatMatrixTest.check(used[s], "no value of " + values.size() + " maps to shard " + s);
        }
        return shard;
    }

    static int indexOfHex(Ctx x, List<Object> values, String hex) {
        return CompatMatrixTest.indexOf(x, values, hex);
    }

    /**
     * Reads every shard's raw entries (well packed, timeout set and order list agreeing) and
     * target list: each value is in the recipe's shard, in at most one place. Returns the due
     * times: the score for values still pending, else {@code lower}.
     */
    static long[] placement(Ctx x, List<Object> values, int[] shard, long[] lower) {
        long[] due = lower.clone();
        int[] places = new int[values.size()];
        for (int s = 0; s < SHARDS; s++) {
            Ctx sh = x.shard(s);
            // The target list first: a value moving on between the reads is then seen in neither.
            for (String h : sh.target()) {
                int i = indexOfHex(x, values, h);
                CompatMatrixTest.check(i >= 0, "shard " + s + "'s target list holds an unknown value " + h);
                CompatMatrixTest.eq(shard[i], s, "shard whose target list holds value " + i);
                places[i]++;
            }
            for (Map.Entry<String, Double> e : sh.pending().entrySet()) {
                int i = indexOfHex(x, values, e.getKey());
                CompatMatrixTest.check(i >= 0, "shard " + s + " holds an unknown pending value " + e.getKey());
                CompatMatrixTest.eq(shard[i], s, "shard holding pending value " + i);
                CompatMatrixTest.check(e.getValue().longValue() >= lower[i],
                        "score of value " + i + " is before offer time + delay");
                due[i] = e.getValue().longValue();
                places[i]++;
            }
        }
        for (int i = 0; i < values.size(); i++) {
            CompatMatrixTest.check(places[i] <= 1, "value " + i + " is in " + places[i] + " places");
        }
        return due;
    }

    /** After delivery: nothing pending, nothing ready, nothing in flight, in any shard. */
    static void empty(Ctx x) {
        for (int s = 0; s < SHARDS; s++) {
            Ctx sh = x.shard(s);
            CompatMatrixTest.eq(0L, sh.timeoutCard(), "shard " + s + " timeout set after delivery");
            CompatMatrixTest.eq(0L, sh.orderLen(), "shard " + s + " order list after delivery");
            CompatMatrixTest.eq(0, sh.target().size(), "shard " + s + " target list after delivery");
            CompatMatrixTest.eq(0, x.env.javaA.getScoredSortedSet("delayq_inflight:" + sh.name,
                    ByteArrayCodec.INSTANCE).size(), "shard " + s + " values in flight after the worker");
        }
    }

    // ---------------------------------------------------------------------------------------
    // (a) Java producers through the recipe; delayq's scheduler moves, its sharded worker takes.

    static void javaOffersDelayqWorks(Ctx cell, Ctx x) throws Exception {
        Case c = x.c;
        Peer p = x.env.peerA;
        x.openSharded(p, SHARDS, true);
        try {
            Random rnd = new Random(9 + c.slug().hashCode());
            List<Object> values = new ArrayList<>();
            long[] delays = new long[VALUES];
            for (int i = 0; i < VALUES; i++) {
                values.add(c.value(i));
                delays[i] = 200 + rnd.nextInt(1300);
            }
            int[] shard = recipeShards(x, p, values);

            // The worker runs while the producers offer.
            CompletableFuture<JsonNode> work = CompletableFuture.supplyAsync(() -> x.peer(p, "work",
                    "count", VALUES, "timeout_ms", 1500 + 20_000, "linger_ms", 500, "concurrency", 4));
            long[] lower = new long[VALUES];
            CompletableFuture<Void> a = CompletableFuture.runAsync(() -> javaOffers(x, values, delays, shard, lower, 0));
            CompletableFuture<Void> b = CompletableFuture.runAsync(() -> javaOffers(x, values, delays, shard, lower, 1));
            CompletableFuture.allOf(a, b).join();
            long[] due = placement(x, values, shard, lower);

            JsonNode reply = work.join();
            JsonNode items = reply.path("items");
            boolean[] seen = new boolean[VALUES];
            for (JsonNode it : items) {
                int i = indexOfHex(x, values, it.path("job_raw").asText());
                CompatMatrixTest.check(i >= 0, "delayq's worker took an unknown value " + it);
                CompatMatrixTest.check(!seen[i], "delayq's worker took value " + i + " twice");
                seen[i] = true;
                x.checkItem(it, values.get(i), "worker job");
                CompatMatrixTest.eq(x.shard(shard[i]).name, it.path("queue").asText(),
                        "shard delayq's worker took value " + i + " from");
                CompatMatrixTest.eq(1, it.path("attempt").asInt(), "attempt of value " + i);
                long at = it.path("at_ms").asLong();
                CompatMatrixTest.check(at >= due[i], "value " + i + " handled " + (due[i] - at) + " ms before due");
                cell.rustLate.add(at - due[i]);
            }
            CompatMatrixTest.eq(VALUES, items.size(), "values handled by delayq's sharded worker");
            JsonNode stats = reply.path("stats");
            CompatMatrixTest.eq(VALUES, stats.path("taken").asInt(), "worker taken");
            CompatMatrixTest.eq(VALUES, stats.path("acked").asInt(), "worker acked");
            for (String k : List.of("retried", "dead", "given_back", "lost", "errors")) {
                CompatMatrixTest.eq(0, stats.path(k).asInt(), "worker " + k);
            }
            CompatMatrixTest.eq(0L, x.peer(p, "size").path("result").asLong(), "delayq size after delivery");
            empty(x);
        } finally {
            x.peer(p, "destroy");
            deleteShards(x);
        }
    }

    /**
     * One Java producer: a client of its own offering every other value (from {@code from})
     * through the recipe, shut down right after.
     */
    static void javaOffers(Ctx x, List<Object> values, long[] delays, int[] shard, long[] lower, int from) {
        RedissonClient once = x.env.newClient();
        try {
            Map<Integer, RDelayedQueue<Object>> dqs = new HashMap<>();
            for (int i = from; i < values.size(); i += 2) {
                RDelayedQueue<Object> dq = dqs.computeIfAbsent(shard[i], s -> shardQueue(once, x.name, s, x.c.codec));
                lower[i] = System.currentTimeMillis() + delays[i];
                dq.offer(values.get(i), delays[i], MILLISECONDS);
            }
            dqs.values().forEach(RDelayedQueue::destroy);
        } finally {
            once.shutdown(0, 5, SECONDS);
        }
    }

    // ---------------------------------------------------------------------------------------
    // (b) delayq's ShardedQueue offers; Java transfers and takes from each shard's blocking queue.

    record Taken(int shard, Object value, long at) {}

    static void delayqOffersJavaTakes(Ctx x, Ctx y) throws Exception {
        Case c = y.c;
        Peer p = y.env.peerB;
        y.openSharded(p, SHARDS, false);
        List<RDelayedQueue<Object>> dqs = new ArrayList<>();
        AtomicBoolean stop = new AtomicBoolean();
        List<Thread> consumers = new ArrayList<>();
        try {
            Random rnd = new Random(90 + c.slug().hashCode());
            List<Object> values = new ArrayList<>();
            long[] delays = new long[VALUES];
            for (int i = 0; i < VALUES; i++) {
                values.add(c.value(100 + i));
                delays[i] = 200 + rnd.nextInt(1300);
            }
            int[] shard = recipeShards(y, p, values);

            // Java's transfer (one RDelayedQueue per shard) and one consumer per shard.
            List<Taken> taken = Collections.synchronizedList(new ArrayList<>());
            List<Throwable> failures = Collections.synchronizedList(new ArrayList<>());
            for (int s = 0; s < SHARDS; s++) {
                dqs.add(shardQueue(y.env.javaA, y.name, s, c.codec));
                RBlockingQueue<Object> bq = y.env.javaB.getBlockingQueue(y.shard(s).name, c.codec);
                int shardNo = s;
                Thread t = new Thread(() -> {
                    try {
                        while (!stop.get()) {
                            Object v = bq.poll(200, MILLISECONDS);
                            if (v != null) {
                                taken.add(new Taken(shardNo, v, System.currentTimeMillis()));
                            }
                        }
                    } catch (Throwable e) {
                        failures.add(e);
                    }
                }, "s9-consumer-" + s);
                t.start();
                consumers.add(t);
            }

            // delayq offers: half one by one (answering its shard), half in batches of 10.
            long[] lower = new long[VALUES];
            int half = VALUES / 2;
            for (int i = 0; i < half; i++) {
                lower[i] = System.currentTimeMillis() + delays[i];
                JsonNode r = p.call("offer", "h", y.name, "value", y.pv(values.get(i)), "delay_ms", delays[i]);
                CompatMatrixTest.eq(shard[i], r.path("shard").asInt(), "shard delayq offered value " + i + " to");
            }
            for (int from = half; from < VALUES; from += 10) {
                List<Object> chunk = new ArrayList<>();
                List<Long> chunkDelays = new ArrayList<>();
                long start = System.currentTimeMillis();
                for (int i = from; i < from + 10; i++) {
                    chunk.add(values.get(i));
                    chunkDelays.add(delays[i]);
                    lower[i] = start + delays[i];
                }
                y.peerOfferAll(p, chunk, chunkDelays);
            }
            long[] due = placement(y, values, shard, lower);

            long deadline = System.currentTimeMillis() + 1500 + 20_000;
            while (taken.size() < VALUES && System.currentTimeMillis() < deadline && failures.isEmpty()) {
                Thread.sleep(20);
            }
            Thread.sleep(500); // a value taken twice would show up now
            stop.set(true);
            for (Thread t : consumers) {
                t.join();
            }
            if (!failures.isEmpty()) {
                throw new AssertionError("a Java consumer failed: " + failures.get(0), failures.get(0));
            }
            boolean[] seen = new boolean[VALUES];
            for (Taken t : taken) {
                int i = -1;
                for (int k = 0; k < VALUES; k++) {
                    if (Case.same(values.get(k), t.value())) {
                        i = k;
                    }
                }
                CompatMatrixTest.check(i >= 0, "Java took an unexpected value " + Case.show(t.value()));
                CompatMatrixTest.check(!seen[i], "Java took value " + i + " twice");
                seen[i] = true;
                CompatMatrixTest.eq(shard[i], t.shard(), "shard Java took value " + i + " from");
                CompatMatrixTest.check(t.at() >= due[i], "value " + i + " taken " + (due[i] - t.at()) + " ms before due");
                x.javaLate.add(t.at() - due[i]);
            }
            CompatMatrixTest.eq(VALUES, taken.size(), "values Java took from the shards");
            empty(y);
        } finally {
            stop.set(true);
            for (Thread t : consumers) {
                t.join();
            }
            dqs.forEach(RDelayedQueue::destroy);
            p.call("destroy", "h", y.name);
        }
    }

    // ---------------------------------------------------------------------------------------
    // (c) Remove by value across languages on a sharded queue.

    static void removeAcrossLanguages(Ctx z) {
        Case c = z.c;
        Peer p = z.env.peerA;
        z.openSharded(p, SHARDS, false);
        List<RDelayedQueue<Object>> dqs = new ArrayList<>();
        try {
            for (int s = 0; s < SHARDS; s++) {
                dqs.add(shardQueue(z.env.javaA, z.name, s, c.codec));
            }
            int n = 12;
            List<Object> byJava = new ArrayList<>();
            List<Object> byDelayq = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                byJava.add(c.value(200 + i));
                byDelayq.add(c.value(300 + i));
            }
            List<Object> all = new ArrayList<>(byJava);
            all.addAll(byDelayq);
            int[] shard = recipeShards(z, p, all);
            for (int i = 0; i < n; i++) {
                dqs.get(shard[i]).offer(byJava.get(i), FAR, MILLISECONDS);
                JsonNode r = p.call("offer", "h", z.name, "value", z.pv(byDelayq.get(i)), "delay_ms", FAR);
                CompatMatrixTest.eq(shard[n + i], r.path("shard").asInt(), "shard delayq offered value " + (n + i) + " to");
            }
            placement(z, all, shard, new long[all.size()]);
            checkSizes(z, p, dqs, 2 * n);
            // Each side finds the other's values (so they are in the shard it looks in).
            for (int i = 0; i < n; i++) {
                CompatMatrixTest.eq(true, p.call("contains", "h", z.name, "value", z.pv(byJava.get(i)))
                        .path("result").asBoolean(), "delayq contains Java's value " + i);
                CompatMatrixTest.eq(true, dqs.get(shard[n + i]).contains(byDelayq.get(i)),
                        "Java contains delayq's value " + i + " in the recipe's shard");
            }
            // Java removes half of delayq's values, delayq half of Java's.
            for (int i = 0; i < n / 2; i++) {
                CompatMatrixTest.eq(true, dqs.get(shard[n + i]).remove(byDelayq.get(i)),
                        "Java remove of delayq's value " + i);
                CompatMatrixTest.eq(false, p.call("contains", "h", z.name, "value", z.pv(byDelayq.get(i)))
                        .path("result").asBoolean(), "delayq contains the value Java removed " + i);
                CompatMatrixTest.eq(false, p.call("remove", "h", z.name, "value", z.pv(byDelayq.get(i)))
                        .path("result").asBoolean(), "delayq remove of the value Java removed " + i);
                CompatMatrixTest.eq(true, p.call("remove", "h", z.name, "value", z.pv(byJava.get(i)))
                        .path("result").asBoolean(), "delayq remove of Java's value " + i);
                CompatMatrixTest.eq(false, dqs.get(shard[i]).contains(byJava.get(i)),
                        "Java contains the value delayq removed " + i);
                CompatMatrixTest.eq(false, dqs.get(shard[i]).remove(byJava.get(i)),
                        "Java remove of the value delayq removed " + i);
            }
            checkSizes(z, p, dqs, n);
            // The rest is where it was: per shard, Java's readAll is exactly the values the recipe
            // puts there, in offer order.
            for (int s = 0; s < SHARDS; s++) {
                List<Object> expected = new ArrayList<>();
                for (int i = n / 2; i < n; i++) {
                    if (shard[i] == s) {
                        expected.add(byJava.get(i));
                    }
                    if (shard[n + i] == s) {
                        expected.add(byDelayq.get(i));
                    }
                }
                CompatMatrixTest.sameList(expected, dqs.get(s).readAll(), "Java readAll of shard " + s);
            }

            // A handle names the recipe's shard and an entry of it; cancelling it is seen by Java.
            Object h = c.value(400);
            int hs = shardOf(c.codec, h, SHARDS);
            String handle = p.call("offer_with_handle", "h", z.name, "value", z.pv(h), "delay_ms", FAR)
                    .path("handle").asText();
            int colon = handle.indexOf(':');
            CompatMatrixTest.check(colon > 0, "handle without a shard: " + handle);
            CompatMatrixTest.eq(hs, Integer.parseInt(handle.substring(0, colon)), "shard in delayq's handle");
            String id = handle.substring(colon + 1);
            boolean found = false;
            for (Object o : z.env.javaA.getList(z.shard(hs).orderKey(), ByteArrayCodec.INSTANCE).readAll()) {
                found |= Case.HEX.formatHex((byte[]) o).startsWith(id);
            }
            CompatMatrixTest.check(found, "no entry " + id + " in shard " + hs + "'s order list");
            CompatMatrixTest.eq(true, dqs.get(hs).contains(h), "Java contains the value offered with a handle");
            CompatMatrixTest.eq(true, p.call("cancel", "h", z.name, "handle", handle).path("result").asBoolean(),
                    "delayq cancel");
            CompatMatrixTest.eq(false, dqs.get(hs).contains(h), "Java contains the cancelled value");
            checkSizes(z, p, dqs, n);
            CompatMatrixTest.eq(0, totalTargets(z), "values on the target lists");
        } finally {
            dqs.forEach(RDelayedQueue::destroy);
            p.call("destroy", "h", z.name);
        }
    }

    static void checkSizes(Ctx z, Peer p, List<RDelayedQueue<Object>> dqs, int expected) {
        CompatMatrixTest.eq((long) expected, p.call("size", "h", z.name).path("result").asLong(), "delayq size");
        int java = 0;
        for (RDelayedQueue<Object> dq : dqs) {
            java += dq.size();
        }
        CompatMatrixTest.eq(expected, java, "Java's sizes of the shards added up");
        for (int s = 0; s < SHARDS; s++) {
            z.shard(s).pending(); // well packed, timeout set and order list agree
        }
    }

    static int totalTargets(Ctx z) {
        int total = 0;
        for (int s = 0; s < SHARDS; s++) {
            total += z.shard(s).target().size();
        }
        return total;
    }
}
