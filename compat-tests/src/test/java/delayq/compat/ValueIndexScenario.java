package delayq.compat;

import static java.util.concurrent.TimeUnit.MILLISECONDS;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import org.redisson.api.RDelayedQueue;
import org.redisson.client.codec.ByteArrayCodec;

/**
 * Scenario 8: delayq's index-backed operations ({@code remove}, {@code contains},
 * {@code contains_all}, {@code remove_all}, {@code offer_unique}, {@code reschedule},
 * {@code cancel}) with real Redisson clients offering, polling, removing and transferring on the
 * same queue.
 *
 * <p>First two Java clients (their transfer tasks running, as delayq's does) offer, poll and remove
 * values from a small pool (so values repeat) while delayq runs its operations: the index is built
 * and used while Java changes the queue under it, and both schedulers move what becomes due. Then,
 * step by step, a Java change is followed by one delayq operation whose result and effect are
 * compared with what Redisson's own algorithm does to the order list it saw just before: entry by
 * entry, bytes included (remove takes the first entry carrying the value, removeAll every one,
 * and so on), and the timeout set must hold exactly the order list's entries after every step.
 */
final class ValueIndexScenario {
    private ValueIndexScenario() {}

    static final int POOL = 24;
    static final long FAR = CompatMatrixTest.FAR;
    static final HexFormat HEX = Case.HEX;

    static void run(Ctx x) throws Exception {
        Case c = x.c;
        Peer p = x.env.peerA;
        x.open(p, true, null);
        RDelayedQueue<Object> dqA = x.dq(x.env.javaA);
        RDelayedQueue<Object> dqB = x.dq(x.env.javaB);
        Random rnd = new Random(8 + c.slug().hashCode());
        List<String> handles = Collections.synchronizedList(new ArrayList<>());
        try {
            // A base: each pool value offered by Java (twice for some) and by delayq.
            for (int i = 0; i < POOL; i++) {
                dqA.offer(c.value(i), FAR, MILLISECONDS);
                if (i % 3 == 0) {
                    dqB.offer(c.value(i), FAR, MILLISECONDS);
                }
                handles.add(x.peer(p, "offer_with_handle", "value", x.pv(c.value(i)), "delay_ms", FAR)
                        .path("handle").asText());
            }
            concurrent(x, p, dqA, dqB, handles, rnd);
            x.pending(); // the timeout set and the order list hold the same entries
            for (int step = 0; step < 60; step++) {
                javaChange(x, dqA, dqB, rnd);
                delayqStep(x, p, handles, rnd, step);
            }
            javaEnds(x, p, dqA);
        } finally {
            dqA.destroy();
            dqB.destroy();
            x.peer(p, "destroy");
        }
    }

    /**
     * Java ends the queue ({@code delete()}, {@code clear()} or a short {@code expire(Duration)},
     * by row) while delayq's scheduler transfers it: delayq's indexes of the queue must go too,
     * though Redisson's calls touch only the timeout set and the order list.
     */
    static void javaEnds(Ctx x, Peer p, RDelayedQueue<Object> dq) throws Exception {
        // A lookup by value: the value index exists before Java ends the queue.
        x.peer(p, "contains", "value", x.pv(x.c.value(0)));
        String[] indexes = {x.prefixed("delayq_values"), x.prefixed("delayq_index")};
        CompatMatrixTest.check(x.env.javaA.getKeys().countExists(indexes[0]) == 1,
                "the value index exists before Java ends the queue");
        String[] ops = {"delete", "clear", "expire"};
        int row = Case.onePerCodec().stream().map(Case::slug).toList().indexOf(x.c.slug());
        String op = ops[Math.floorMod(row, ops.length)];
        switch (op) {
            case "delete" -> dq.delete();
            case "clear" -> dq.clear();
            default -> dq.expire(java.time.Duration.ofMillis(300));
        }
        long deadline = System.currentTimeMillis() + CompatMatrixTest.PATIENCE_MS;
        while (x.env.javaA.getKeys().countExists(indexes) > 0) {
            CompatMatrixTest.check(System.currentTimeMillis() < deadline,
                    "delayq's indexes outlived the queue after Java's " + op + "(): " + keysLeft(x, indexes));
            Thread.sleep(50);
        }
    }

    /**
     * What is left of the queue, to tell why the indexes stayed: each key's type, size and time
     * to live (a timeout set or order list back means someone wrote the queue again).
     */
    static String keysLeft(Ctx x, String[] indexes) {
        List<String> keys = new ArrayList<>(List.of(x.timeoutKey(), x.orderKey()));
        keys.addAll(List.of(indexes));
        List<String> out = new ArrayList<>();
        for (String key : keys) {
            var bucket = x.env.javaA.getKeys();
            long ttl = bucket.remainTimeToLive(key);
            String type = String.valueOf(bucket.getType(key));
            out.add(key + " " + type + " ttl " + ttl);
        }
        return String.join(", ", out);
    }

    /** Java writers and delayq's operations at the same time, for about two seconds. */
    static void concurrent(Ctx x, Peer p, RDelayedQueue<Object> dqA, RDelayedQueue<Object> dqB,
            List<String> handles, Random rnd) throws Exception {
        Case c = x.c;
        AtomicBoolean stop = new AtomicBoolean();
        List<Throwable> failures = Collections.synchronizedList(new ArrayList<>());
        List<Thread> writers = new ArrayList<>();
        for (RDelayedQueue<Object> dq : List.of(dqA, dqB)) {
            long seed = rnd.nextLong();
            Thread t = new Thread(() -> {
                Random r = new Random(seed);
                try {
                    while (!stop.get()) {
                        int roll = r.nextInt(10);
                        Object v = c.value(r.nextInt(POOL));
                        if (roll < 5) {
                            // Half of them become due while this runs: both schedulers move them.
                            dq.offer(v, r.nextBoolean() ? 100 + r.nextInt(900) : FAR, MILLISECONDS);
                        } else if (roll < 7) {
                            dq.poll();
                        } else {
                            dq.remove(v);
                        }
                    }
                } catch (Throwable e) {
                    failures.add(e);
                }
            });
            t.start();
            writers.add(t);
        }
        long end = System.currentTimeMillis() + 2000;
        while (System.currentTimeMillis() < end) {
            Object v = c.value(rnd.nextInt(POOL));
            switch (rnd.nextInt(7)) {
                case 0 -> x.peer(p, "remove", "value", x.pv(v));
                case 1 -> x.peer(p, "contains", "value", x.pv(v));
                case 2 -> x.peer(p, "offer_unique", "value", x.pv(v), "delay_ms", FAR);
                case 3 -> x.peer(p, "reschedule", "value", x.pv(v), "delay_ms", FAR);
                case 4 -> x.peer(p, "remove_all", "values", List.of(x.pv(v)));
                case 5 -> handles.add(x.peer(p, "offer_with_handle", "value", x.pv(v), "delay_ms", FAR)
                        .path("handle").asText());
                default -> {
                    if (!handles.isEmpty()) {
                        x.peer(p, "cancel", "handle", handles.get(rnd.nextInt(handles.size())));
                    }
                }
            }
        }
        stop.set(true);
        for (Thread t : writers) {
            t.join();
        }
        if (!failures.isEmpty()) {
            throw new AssertionError("a Java writer failed: " + failures.get(0), failures.get(0));
        }
        // Everything offered above is due within a second of the end: wait for that, then until
        // the schedulers have moved all of it (a fixed pause was too short on a loaded machine,
        // and an entry moved during the steps below would change the list they compare).
        long allDue = System.currentTimeMillis() + 1000;
        long deadline = allDue + CompatMatrixTest.PATIENCE_MS;
        while (System.currentTimeMillis() < allDue || dueNotMoved(x) > 0) {
            CompatMatrixTest.check(System.currentTimeMillis() < deadline,
                    dueNotMoved(x) + " due entries still not moved");
            Thread.sleep(50);
        }
    }

    /** How many entries of the timeout set are due now, and so still to be moved. */
    static int dueNotMoved(Ctx x) {
        return x.env.javaA.getScoredSortedSet(x.timeoutKey(), ByteArrayCodec.INSTANCE)
                .valueRange(Double.NEGATIVE_INFINITY, true, System.currentTimeMillis(), true).size();
    }

    static void javaChange(Ctx x, RDelayedQueue<Object> dqA, RDelayedQueue<Object> dqB, Random rnd) {
        Object v = x.c.value(rnd.nextInt(POOL));
        switch (rnd.nextInt(4)) {
            case 0 -> dqA.offer(v, FAR, MILLISECONDS);
            case 1 -> dqB.poll();
            case 2 -> dqA.remove(v);
            default -> dqB.offer(v, FAR, MILLISECONDS);
        }
    }

    /** The order list's entries (hex), head first. */
    static List<String> order(Ctx x) {
        List<String> out = new ArrayList<>();
        for (Object o : x.env.javaA.getList(x.orderKey(), ByteArrayCodec.INSTANCE).readAll()) {
            out.add(HEX.formatHex((byte[]) o));
        }
        return out;
    }

    static String valueHex(Ctx x, String entryHex) {
        return HEX.formatHex(Entries.value(HEX.parseHex(entryHex), x.env.legacy));
    }

    static void delayqStep(Ctx x, Peer p, List<String> handles, Random rnd, int step) {
        Case c = x.c;
        List<String> before = order(x);
        Object v = c.value(rnd.nextInt(POOL + 2)); // sometimes a value nobody offered
        Object w = c.value(rnd.nextInt(POOL + 2));
        String hv = c.hex(v);
        String hw = c.hex(w);
        int first = -1;
        for (int i = 0; i < before.size(); i++) {
            if (valueHex(x, before.get(i)).equals(hv)) {
                first = i;
                break;
            }
        }
        boolean hasW = before.stream().anyMatch(e -> valueHex(x, e).equals(hw));
        List<String> expected = new ArrayList<>(before);
        String what = "step " + step + ": ";
        int op = rnd.nextInt(7);
        JsonNode reply;
        switch (op) {
            case 0 -> {
                what += "remove";
                reply = x.peer(p, "remove", "value", x.pv(v));
                if (first >= 0) {
                    expected.remove(first);
                }
                CompatMatrixTest.eq(first >= 0, reply.path("result").asBoolean(), what);
            }
            case 1 -> {
                what += "contains";
                reply = x.peer(p, "contains", "value", x.pv(v));
                CompatMatrixTest.eq(first >= 0, reply.path("result").asBoolean(), what);
            }
            case 2 -> {
                what += "contains_all";
                reply = x.peer(p, "contains_all", "values", List.of(x.pv(v), x.pv(w)));
                CompatMatrixTest.eq(first >= 0 && hasW, reply.path("result").asBoolean(), what);
            }
            case 3 -> {
                what += "remove_all";
                reply = x.peer(p, "remove_all", "values", List.of(x.pv(v), x.pv(w)));
                expected.removeIf(e -> {
                    String h = valueHex(x, e);
                    return h.equals(hv) || h.equals(hw);
                });
                CompatMatrixTest.eq(first >= 0 || hasW, reply.path("result").asBoolean(), what);
            }
            case 4 -> {
                what += "offer_unique";
                reply = x.peer(p, "offer_unique", "value", x.pv(v), "delay_ms", FAR + step);
                CompatMatrixTest.eq(first >= 0, reply.path("result").asBoolean(), what);
                if (first >= 0) {
                    String kept = before.get(first);
                    expected.removeIf(e -> !e.equals(kept) && valueHex(x, e).equals(hv));
                }
            }
            case 5 -> {
                what += "reschedule";
                reply = x.peer(p, "reschedule", "value", x.pv(v), "delay_ms", FAR + step);
                CompatMatrixTest.eq(first >= 0, reply.path("result").asBoolean(), what);
            }
            default -> {
                what += "cancel";
                String handle = handles.isEmpty() ? "ffffffffffffffffff" : handles.get(rnd.nextInt(handles.size()));
                int at = -1;
                for (int i = 0; i < before.size(); i++) {
                    if (before.get(i).startsWith(handle)) {
                        at = i;
                        break;
                    }
                }
                reply = x.peer(p, "cancel", "handle", handle);
                CompatMatrixTest.eq(at >= 0, reply.path("result").asBoolean(), what);
                if (at >= 0) {
                    expected.remove(at);
                }
            }
        }
        List<String> after = order(x);
        if (op == 4 && first < 0) {
            // A new entry at the tail, with a fresh id.
            CompatMatrixTest.eq(expected.size() + 1, after.size(), what + ": order list length");
            CompatMatrixTest.eq(hv, valueHex(x, after.get(after.size() - 1)), what + ": the new entry");
            after = after.subList(0, after.size() - 1);
        }
        CompatMatrixTest.check(expected.equals(after),
                what + ": the order list is not what Redisson's algorithm leaves (" + before.size()
                        + " entries before, " + expected.size() + " expected, " + after.size() + " found)");
        x.pending(); // the timeout set holds exactly the order list's entries
    }
}
