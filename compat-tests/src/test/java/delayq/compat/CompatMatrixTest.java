package delayq.compat;

import static java.util.concurrent.TimeUnit.MILLISECONDS;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.redisson.api.RBlockingQueue;
import org.redisson.api.RDelayedQueue;
import org.redisson.api.RFuture;

/**
 * The interop matrix for one Redisson version: every case (codec x value kind) through the six
 * scenarios of the issue. Each cell is recorded (pass/fail, lateness per side) and also fails the
 * JUnit test, so Surefire's counts and RESULTS.md agree.
 */
@Execution(ExecutionMode.CONCURRENT)
class CompatMatrixTest {
    /** Mixed delays (ms) of scenarios 1 and 2. */
    static final long[] DELAYS = {700, 300, 1200, 350, 400, 1000, 450, 850};
    /** Far enough that nothing becomes due during a scenario. */
    static final long FAR = 120_000;
    /**
     * The longest a wait for a state (a value taken, a queue drained) may last: generous, as a
     * loaded machine is slow, never early; a wait that sees its state goes on at once.
     */
    static final long PATIENCE_MS = 60_000;
    /**
     * How late a delivery may be and still count as re-armed by the channel: without it the
     * scheduler would wake only for the FAR head, so any bound well under FAR tells the two
     * apart, also on a loaded machine.
     */
    static final long RE_ARMED_WITHIN_MS = 10_000;

    static Stream<Case> cases() {
        return Case.all().stream();
    }

    static Stream<Case> codecs() {
        return Case.onePerCodec().stream();
    }

    /** Probes where a destroyed RDelayedQueue did / did not keep moving values. */
    static final java.util.concurrent.atomic.AtomicInteger DESTROY_STOPPED = new java.util.concurrent.atomic.AtomicInteger();
    static final java.util.concurrent.atomic.AtomicInteger DESTROY_LEAKED = new java.util.concurrent.atomic.AtomicInteger();

    @AfterAll
    static void writeMatrix() throws Exception {
        int leaked = DESTROY_LEAKED.get();
        int probes = leaked + DESTROY_STOPPED.get();
        Matrix.note(leaked == 0
                ? "RDelayedQueue.destroy() stopped Java's transfer task in all " + probes + " probes."
                : "RDelayedQueue.destroy() did NOT stop Java's transfer task in " + leaked + " of " + probes
                        + " probes (a value that became due after destroy() was still moved by Java). "
                        + "That is why Java producers in S1/S5/S6 use a Redisson client shut down right after offering.");
        Matrix.write(Env.get().version);
    }

    interface Body {
        void run(Ctx x) throws Exception;
    }

    /** Runs one cell, records it, and rethrows a failure for JUnit. */
    static void cell(Case c, int scenario, Body body) throws Exception {
        Ctx x = new Ctx(c, scenario);
        try {
            x.requirePeerCodec();
            body.run(x);
            Matrix.record(x.env.version, c, scenario, Matrix.Status.PASS, x.javaLate, x.rustLate, "");
        } catch (Throwable t) {
            Matrix.record(x.env.version, c, scenario, Matrix.Status.FAIL, x.javaLate, x.rustLate,
                    t.toString());
            throw t;
        } finally {
            try {
                x.deleteAll();
            } catch (Exception ignored) {
                // keys are per cell; a leftover does not affect other cells
            }
        }
    }

    static void check(boolean ok, String message) {
        if (!ok) {
            throw new AssertionError(message);
        }
    }

    static void eq(Object expected, Object actual, String what) {
        check(java.util.Objects.equals(expected, actual), what + ": expected " + expected + ", got " + actual);
    }

    static long now() {
        return System.currentTimeMillis();
    }

    /** Due time of each value: its score if still pending, else the lower bound offer-start + delay. */
    static long[] dues(Ctx x, List<Object> values, long[] lower) {
        Map<String, Double> pend = x.pending();
        long[] due = new long[values.size()];
        for (int i = 0; i < values.size(); i++) {
            Double s = pend.get(x.c.hex(values.get(i)));
            due[i] = s != null ? s.longValue() : lower[i];
            check(s == null || s.longValue() >= lower[i],
                    "score " + s + " of value " + i + " is before offer time + delay " + lower[i]);
        }
        for (String h : pend.keySet()) {
            check(values.stream().anyMatch(v -> x.c.hex(v).equals(h)), "unexpected pending value " + h);
        }
        return due;
    }

    // ---------------------------------------------------------------------------------------
    // 1. Java offers; only delayq's scheduler runs; a delayq consumer takes everything on time.

    @ParameterizedTest(name = "S1 java offers, delayq moves and takes: {0}")
    @MethodSource("cases")
    void s1JavaOffersDelayqDelivers(Case c) throws Exception {
        cell(c, 1, x -> {
            // Does RDelayedQueue.destroy() stop Java's transfer task? (A fact about Redisson,
            // noted under the matrix: when it does not, "only delayq's scheduler" needs the
            // Java producer's client shut down, which is what javaOfferAlone does.)
            Ctx probe = new Ctx(c, 1);
            try {
                RDelayedQueue<Object> pdq = probe.dq(x.env.javaA);
                pdq.offer(c.value(999), 150, MILLISECONDS);
                pdq.destroy();
                Thread.sleep(700);
                (probe.target().isEmpty() ? DESTROY_STOPPED : DESTROY_LEAKED).incrementAndGet();
            } finally {
                probe.deleteAll();
            }
            // And a shut-down producer client really leaves no Java transfer behind.
            Ctx probe2 = new Ctx(c, 1);
            try {
                probe2.javaOfferAlone(List.of(c.value(998)), new long[] {150});
                Thread.sleep(700);
                eq(0, probe2.target().size(), "values moved after the Java producer client shut down");
                eq(1L, probe2.timeoutCard(), "pending after the Java producer client shut down");
            } finally {
                probe2.deleteAll();
            }

            x.open(x.env.peerA, true, null);
            List<Object> values = new ArrayList<>();
            for (int i = 0; i < DELAYS.length; i++) {
                values.add(c.value(i));
            }
            long[] lower = x.javaOfferAlone(values, DELAYS);
            long[] due = dues(x, values, lower);

            JsonNode items = x.peer(x.env.peerA, "take_many", "count", values.size(),
                    "timeout_ms", 1200 + 5000).path("items");
            eq(values.size(), items.size(), "values taken by delayq");
            boolean[] seen = new boolean[values.size()];
            for (JsonNode it : items) {
                int i = indexOf(x, values, it.path("raw").asText());
                check(i >= 0, "delayq took an unknown value " + it);
                check(!seen[i], "delayq took value " + i + " twice");
                seen[i] = true;
                x.checkItem(it, values.get(i), "take");
                long at = it.path("at_ms").asLong();
                check(at >= due[i], "value " + i + " taken " + (due[i] - at) + " ms before due");
                x.rustLate.add(at - due[i]);
            }
            x.peer(x.env.peerA, "destroy");
            eq(0L, x.timeoutCard(), "timeout set after delivery");
            eq(0L, x.orderLen(), "order list after delivery");
            eq(0, x.target().size(), "target list after takes");
        });
    }

    static int indexOf(Ctx x, List<Object> values, String hex) {
        for (int i = 0; i < values.size(); i++) {
            if (x.c.hex(values.get(i)).equals(hex)) {
                return i;
            }
        }
        return -1;
    }

    // ---------------------------------------------------------------------------------------
    // 2. delayq offers; only Java's scheduler runs; Java take() decodes everything on time.

    @ParameterizedTest(name = "S2 delayq offers, java moves and takes: {0}")
    @MethodSource("cases")
    void s2DelayqOffersJavaDelivers(Case c) throws Exception {
        cell(c, 2, x -> {
            x.open(x.env.peerA, false, null);
            RBlockingQueue<Object> bq = x.bq(x.env.javaA);
            RDelayedQueue<Object> dq = x.env.javaA.getDelayedQueue(bq);
            try {
                List<Object> values = new ArrayList<>();
                long[] lower = new long[DELAYS.length];
                int half = DELAYS.length / 2;
                for (int i = 0; i < half; i++) {
                    values.add(c.value(i));
                    lower[i] = now() + DELAYS[i];
                    x.peerOffer(x.env.peerA, values.get(i), DELAYS[i]);
                }
                List<Object> rest = new ArrayList<>();
                List<Long> restDelays = new ArrayList<>();
                long start = now();
                for (int i = half; i < DELAYS.length; i++) {
                    values.add(c.value(i));
                    rest.add(values.get(i));
                    restDelays.add(DELAYS[i]);
                    lower[i] = start + DELAYS[i];
                }
                x.peerOfferAll(x.env.peerA, rest, restDelays);
                // Exact bytes on Redis: the entries delayq wrote carry Java's codec bytes.
                long[] due = dues(x, values, lower);

                boolean[] seen = new boolean[values.size()];
                long deadline = now() + 1200 + PATIENCE_MS;
                int got = 0;
                while (got < values.size() && now() < deadline) {
                    Object v = bq.poll(Math.max(1, deadline - now()), MILLISECONDS);
                    long at = now();
                    if (v == null) {
                        continue;
                    }
                    int i = -1;
                    for (int k = 0; k < values.size(); k++) {
                        if (Case.same(values.get(k), v)) {
                            i = k;
                        }
                    }
                    check(i >= 0, "Java took an unexpected value " + Case.show(v));
                    check(!seen[i], "Java took value " + i + " twice");
                    seen[i] = true;
                    got++;
                    check(at >= due[i], "value " + i + " taken " + (due[i] - at) + " ms before due");
                    x.javaLate.add(at - due[i]);
                }
                eq(values.size(), got, "values taken by Java");
                eq(0L, x.timeoutCard(), "timeout set after delivery");
                eq(0L, x.orderLen(), "order list after delivery");
            } finally {
                dq.destroy();
            }
        });
    }

    // ---------------------------------------------------------------------------------------
    // 3. Two Java clients and two delayq processes, all running schedulers, thousands of offers.

    static final int PER_PRODUCER = 500;

    @ParameterizedTest(name = "S3 both schedulers, 4 producers x " + PER_PRODUCER + ": {0}")
    @MethodSource("codecs")
    void s3BothSchedulersExactlyOnce(Case c) throws Exception {
        cell(c, 3, x -> {
            x.open(x.env.peerA, true, null);
            x.open(x.env.peerB, true, null);
            RDelayedQueue<Object> dqA = x.dq(x.env.javaA);
            RDelayedQueue<Object> dqB = x.dq(x.env.javaB);
            try {
                Random rnd = new Random(42 + c.slug().hashCode());
                int total = 4 * PER_PRODUCER;
                List<Object> values = new ArrayList<>();
                List<Long> delays = new ArrayList<>();
                for (int i = 0; i < total; i++) {
                    values.add(c.value(i));
                    delays.add((long) rnd.nextInt(1500));
                }
                CompletableFuture<Void> javaA = CompletableFuture.runAsync(() -> javaOffers(dqA, values, delays, 0));
                CompletableFuture<Void> javaB = CompletableFuture.runAsync(
                        () -> javaOffers(dqB, values, delays, PER_PRODUCER));
                CompletableFuture<Void> rustA = CompletableFuture.runAsync(
                        () -> peerOffers(x, x.env.peerA, values, delays, 2 * PER_PRODUCER));
                CompletableFuture<Void> rustB = CompletableFuture.runAsync(
                        () -> peerOffers(x, x.env.peerB, values, delays, 3 * PER_PRODUCER));
                CompletableFuture.allOf(javaA, javaB, rustA, rustB).join();

                long deadline = now() + 1500 + PATIENCE_MS;
                while ((x.timeoutCard() > 0 || x.orderLen() > 0) && now() < deadline) {
                    Thread.sleep(100);
                }
                eq(0L, x.timeoutCard(), "entries still pending (timeout set)");
                eq(0L, x.orderLen(), "entries still pending (order list)");
                Map<String, Integer> counts = new HashMap<>();
                for (String h : x.target()) {
                    counts.merge(h, 1, Integer::sum);
                }
                List<String> problems = new ArrayList<>();
                for (int i = 0; i < total; i++) {
                    int n = counts.getOrDefault(x.c.hex(values.get(i)), 0);
                    if (n != 1) {
                        problems.add("value " + i + " delivered " + n + "x");
                    }
                }
                int delivered = counts.values().stream().mapToInt(Integer::intValue).sum();
                check(problems.isEmpty() && delivered == total,
                        "target list has " + delivered + " of " + total + ": " + problems.subList(0, Math.min(10, problems.size())));
            } finally {
                dqA.destroy();
                dqB.destroy();
                x.peer(x.env.peerA, "destroy");
                x.peer(x.env.peerB, "destroy");
            }
        });
    }

    static void javaOffers(RDelayedQueue<Object> dq, List<Object> values, List<Long> delays, int from) {
        List<RFuture<Void>> fs = new ArrayList<>();
        for (int i = from; i < from + PER_PRODUCER; i++) {
            fs.add(dq.offerAsync(values.get(i), delays.get(i), MILLISECONDS));
        }
        fs.forEach(f -> f.toCompletableFuture().join());
    }

    static void peerOffers(Ctx x, Peer p, List<Object> values, List<Long> delays, int from) {
        for (int chunk = from; chunk < from + PER_PRODUCER; chunk += 100) {
            x.peerOfferAll(p, values.subList(chunk, chunk + 100), delays.subList(chunk, chunk + 100));
        }
    }

    // ---------------------------------------------------------------------------------------
    // 4. Collection operations agree across languages.

    @ParameterizedTest(name = "S4 cross-language operations: {0}")
    @MethodSource("cases")
    void s4CrossLanguageOperations(Case c) throws Exception {
        cell(c, 4, x -> {
            Peer p = x.env.peerA;
            x.open(p, false, null);
            RDelayedQueue<Object> dq = x.dq(x.env.javaA);
            try {
                List<Object> v = new ArrayList<>();
                for (int i = 0; i < 10; i++) {
                    v.add(c.value(i));
                }
                dq.offer(v.get(0), FAR, MILLISECONDS);
                dq.offer(v.get(1), FAR, MILLISECONDS);
                dq.offer(v.get(2), FAR, MILLISECONDS);

                eq(3L, x.peer(p, "size").path("result").asLong(), "delayq size after Java offers");
                eq(true, x.peer(p, "contains", "value", x.pv(v.get(1))).path("result").asBoolean(), "delayq contains v1");
                eq(false, x.peer(p, "contains", "value", x.pv(v.get(9))).path("result").asBoolean(), "delayq contains v9");
                x.checkItem(x.peer(p, "peek").path("item"), v.get(0), "delayq peek");
                x.checkItems(x.peer(p, "read_all").path("items"), List.of(v.get(0), v.get(1), v.get(2)), "delayq read_all");
                eq(true, x.peer(p, "remove", "value", x.pv(v.get(1))).path("result").asBoolean(), "delayq remove v1");
                eq(false, x.peer(p, "remove", "value", x.pv(v.get(1))).path("result").asBoolean(), "delayq remove v1 again");

                eq(2, dq.size(), "Java size after delayq remove");
                eq(false, dq.contains(v.get(1)), "Java contains removed v1");
                sameList(List.of(v.get(0), v.get(2)), dq.readAll(), "Java readAll");

                x.peerOffer(p, v.get(3), FAR);
                x.peerOfferAll(p, List.of(v.get(4), v.get(5)), List.of(FAR, FAR));
                eq(5, dq.size(), "Java size after delayq offers");
                eq(true, dq.contains(v.get(4)), "Java contains delayq's v4");
                sameList(List.of(v.get(0), v.get(2), v.get(3), v.get(4), v.get(5)), dq.readAll(), "Java readAll");
                check(Case.same(v.get(0), dq.peek()), "Java peek");
                eq(true, dq.remove(v.get(4)), "Java remove delayq's v4");
                eq(false, x.peer(p, "contains", "value", x.pv(v.get(4))).path("result").asBoolean(), "delayq contains v4");
                eq(4L, x.peer(p, "size").path("result").asLong(), "delayq size after Java remove");
                x.checkItems(x.peer(p, "read_all").path("items"), List.of(v.get(0), v.get(2), v.get(3), v.get(5)), "delayq read_all");

                check(Case.same(v.get(0), dq.poll()), "Java poll");
                x.checkItem(x.peer(p, "poll").path("item"), v.get(2), "delayq poll");
                x.checkItems(x.peer(p, "poll_many", "n", 5).path("items"), List.of(v.get(3), v.get(5)), "delayq poll_many");
                eq(0, dq.size(), "Java size after polls");
                eq(0L, x.timeoutCard(), "timeout set after polls");
                check(x.peer(p, "poll").path("item").isNull(), "delayq poll on empty");

                x.peerOffer(p, v.get(6), FAR);
                x.peerOffer(p, v.get(7), FAR);
                x.peerOffer(p, v.get(8), FAR);
                sameList(List.of(v.get(6), v.get(7)), dq.poll(2), "Java poll(2)");
                eq(1L, x.peer(p, "size").path("result").asLong(), "delayq size after Java poll(2)");
                x.checkItem(x.peer(p, "peek").path("item"), v.get(8), "delayq peek");

                dq.offer(v.get(9), FAR, MILLISECONDS);
                eq(true, x.peer(p, "clear").path("result").asBoolean(), "delayq clear");
                eq(0, dq.size(), "Java size after delayq clear");
                eq(true, dq.isEmpty(), "Java isEmpty after delayq clear");
                eq(0L, x.timeoutCard(), "timeout set after delayq clear");

                x.peerOffer(p, v.get(0), FAR);
                eq(1, dq.size(), "Java size after delayq offer");
                dq.clear();
                eq(0L, x.peer(p, "size").path("result").asLong(), "delayq size after Java clear");
                eq(0L, x.timeoutCard(), "timeout set after Java clear");
                eq(0, x.target().size(), "nothing reached the target list");
            } finally {
                dq.destroy();
            }
        });
    }

    static void sameList(List<Object> expected, List<Object> actual, String what) {
        boolean ok = expected.size() == actual.size();
        for (int i = 0; ok && i < expected.size(); i++) {
            ok = Case.same(expected.get(i), actual.get(i));
        }
        if (!ok) {
            List<String> e = new ArrayList<>();
            expected.forEach(o -> e.add(Case.show(o)));
            List<String> a = new ArrayList<>();
            actual.forEach(o -> a.add(Case.show(o)));
            throw new AssertionError(what + ": expected " + e + ", got " + a);
        }
    }

    // ---------------------------------------------------------------------------------------
    // 5. The channel works both ways.

    @ParameterizedTest(name = "S5 channel re-arms the other side's scheduler: {0}")
    @MethodSource("cases")
    void s5ChannelBothWays(Case c) throws Exception {
        cell(c, 5, x -> {
            // (a) Java's scheduler alone, armed for a far head; delayq's offer becomes the new head.
            x.open(x.env.peerA, false, null);
            RBlockingQueue<Object> bq = x.bq(x.env.javaA);
            RDelayedQueue<Object> dq = x.env.javaA.getDelayedQueue(bq);
            try {
                x.peerOffer(x.env.peerA, c.value(0), FAR);
                Thread.sleep(300);
                long lower = now() + 700;
                x.peerOffer(x.env.peerA, c.value(1), 700);
                long due = dues(x, List.of(c.value(0), c.value(1)), new long[] {0, lower})[1];
                Object v = bq.poll(PATIENCE_MS, MILLISECONDS);
                long at = now();
                check(v != null, "Java's scheduler did not deliver delayq's new head within " + PATIENCE_MS + " ms");
                check(Case.same(c.value(1), v), "Java took " + Case.show(v));
                check(at >= due, "taken " + (due - at) + " ms early");
                x.javaLate.add(at - due);
                check(at - due < RE_ARMED_WITHIN_MS, "Java delivered " + (at - due) + " ms late: not re-armed by the channel");
            } finally {
                dq.destroy();
            }
            // (b) delayq's scheduler alone (no sweep), armed for a far head; a Java offer becomes
            // the new head. A fresh queue name: in old Redisson a destroyed RDelayedQueue keeps
            // its transfer task, which must not be the one delivering here.
            Ctx y = new Ctx(c, 5);
            try {
                y.open(y.env.peerA, true, -1L);
                y.peerOffer(y.env.peerA, c.value(2), FAR);
                Thread.sleep(300);
                long lower = y.javaOfferAlone(List.of(c.value(3)), new long[] {700})[0];
                long due = dues(y, List.of(c.value(2), c.value(3)), new long[] {0, lower})[1];
                JsonNode r = y.peer(y.env.peerA, "take", "timeout_ms", PATIENCE_MS);
                long at = r.path("at_ms").asLong();
                check(!r.path("item").isNull(), "delayq's scheduler did not deliver Java's new head within " + PATIENCE_MS + " ms");
                y.checkItem(r.path("item"), c.value(3), "delayq take");
                check(at >= due, "taken " + (due - at) + " ms early");
                x.rustLate.add(at - due);
                check(at - due < RE_ARMED_WITHIN_MS, "delayq delivered " + (at - due) + " ms late: not re-armed by the channel");
                y.peer(y.env.peerA, "destroy");
            } finally {
                y.deleteAll();
            }
        });
    }

    // ---------------------------------------------------------------------------------------
    // 6. Legacy (dLc0) entries both ways; only meaningful against Redisson < 3.21.1.

    @ParameterizedTest(name = "S6 legacy entries both ways: {0}")
    @MethodSource("cases")
    void s6LegacyEntries(Case c) throws Exception {
        Env env = Env.get();
        if (!env.legacy) {
            Ctx x = new Ctx(c, 6);
            Matrix.record(env.version, c, 6, Matrix.Status.NA, x.javaLate, x.rustLate,
                    "current format version; legacy checks run against the legacy version");
            return;
        }
        cell(c, 6, x -> {
            Peer p = x.env.peerA;
            x.open(p, false, null);
            List<Object> v = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                v.add(c.value(i));
            }
            RBlockingQueue<Object> bq = x.bq(x.env.javaA);
            RDelayedQueue<Object> dq = x.env.javaA.getDelayedQueue(bq);
            try {
                // Java (legacy) writes; the raw entries are dLc0; delayq reads them.
                dq.offer(v.get(0), FAR, MILLISECONDS);
                dq.offer(v.get(1), FAR, MILLISECONDS);
                x.pending();
                for (Object o : x.env.javaA.getList(x.orderKey(), org.redisson.client.codec.ByteArrayCodec.INSTANCE).readAll()) {
                    byte[] e = (byte[]) o;
                    check(e.length == 16 + c.encode(v.get(0)).length || e.length == 16 + c.encode(v.get(1)).length,
                            "Java entry is not dLc0-sized: " + Case.HEX.formatHex(e));
                }
                x.checkItems(x.peer(p, "read_all").path("items"), List.of(v.get(0), v.get(1)), "delayq read_all of Java dLc0");
                eq(true, x.peer(p, "contains", "value", x.pv(v.get(1))).path("result").asBoolean(), "delayq contains");

                // delayq writes dLc0; legacy Java's poll() accepts them.
                x.peerOffer(p, v.get(2), FAR);
                x.peerOfferAll(p, List.of(v.get(3)), List.of(FAR));
                x.pending();
                sameList(List.of(v.get(0), v.get(1), v.get(2), v.get(3)), dq.readAll(), "Java readAll");
                check(Case.same(v.get(0), dq.poll()), "Java poll (Java entry)");
                check(Case.same(v.get(1), dq.poll()), "Java poll (Java entry)");
                check(Case.same(v.get(2), dq.poll()), "Java poll of delayq's dLc0 entry");
                eq(true, dq.remove(v.get(3)), "Java remove of delayq's dLc0 entry");

                // delayq's dLc0 entries moved by legacy Java's scheduler, taken by Java.
                long lower = now() + 300;
                x.peerOffer(p, v.get(4), 300);
                Object got = bq.poll(PATIENCE_MS, MILLISECONDS);
                check(Case.same(v.get(4), got), "Java take of delayq's dLc0 entry: " + Case.show(got));
                x.javaLate.add(now() - lower);
            } finally {
                dq.destroy();
            }

            // Java's dLc0 entries moved by delayq's scheduler, taken by delayq (a fresh queue:
            // this version's destroyed RDelayedQueue may still run its transfer task).
            Ctx y = new Ctx(c, 6);
            try {
                y.open(p, true, null);
                long lower = y.javaOfferAlone(List.of(v.get(5)), new long[] {300})[0];
                JsonNode r = y.peer(p, "take", "timeout_ms", PATIENCE_MS);
                y.checkItem(r.path("item"), v.get(5), "delayq take of Java's dLc0 entry");
                check(r.path("at_ms").asLong() >= lower, "delayq took Java's entry early");
                x.rustLate.add(r.path("at_ms").asLong() - lower);
                y.peer(p, "destroy");
            } finally {
                y.deleteAll();
            }
        });
    }

    // ---------------------------------------------------------------------------------------
    // 7. delayq's reliable consumer on a queue Java peers use: a failed value goes back as a
    //    normal pending entry that Java sees, moves and takes; an acknowledged one leaves nothing.

    @ParameterizedTest(name = "S8 value index under Java writers: {0}")
    @MethodSource("codecs")
    void s8ValueIndexUnderJavaWriters(Case c) throws Exception {
        cell(c, 8, ValueIndexScenario::run);
    }

    @ParameterizedTest(name = "S9 sharded queues with Java's CRC32 recipe, both ways: {0}")
    @MethodSource("codecs")
    void s9ShardedQueuesWithJavaRecipe(Case c) throws Exception {
        cell(c, 9, ShardedScenario::run);
    }

    // ---------------------------------------------------------------------------------------
    // 10. delayq fires a recurring schedule; a Java consumer takes each occurrence once, on time.

    /**
     * Occurrences of the S10 schedule, and its interval (ms): long enough that an occurrence
     * taken late on a loaded machine (seen over 1 s late) is still taken before the next one's
     * time, which is how a duplicate hiding a miss is told apart.
     */
    static final int OCCURRENCES = 4;
    static final long EVERY_MS = 3000;

    @ParameterizedTest(name = "S10 delayq fires a schedule, java takes each occurrence: {0}")
    @MethodSource("codecs")
    void s10DelayqFiresJavaTakes(Case c) throws Exception {
        cell(c, 10, x -> {
            // Two delayq processes fire the queue's schedules and transfer; Java transfers too.
            x.open(x.env.peerA, true, null);
            x.open(x.env.peerB, true, null);
            RBlockingQueue<Object> bq = x.bq(x.env.javaA);
            RDelayedQueue<Object> dq = x.env.javaA.getDelayedQueue(bq);
            try {
                Object value = c.value(0);
                long start = now() + 1500;
                long[] occurrence = new long[OCCURRENCES];
                for (int i = 0; i < OCCURRENCES; i++) {
                    occurrence[i] = start + i * EVERY_MS;
                }
                long last = occurrence[OCCURRENCES - 1];
                x.peer(x.env.peerA, "schedule_every", "schedule", "tick", "value", x.pv(value),
                        "every_ms", EVERY_MS, "start_ms", start, "end_ms", last);

                // The value is the same every time: the i-th taken is matched to the i-th
                // occurrence. Taken before it: something was early; taken after the next one's
                // time: a duplicate and a miss could hide each other, so that fails too.
                long deadline = last + PATIENCE_MS;
                int taken = 0;
                while (taken < OCCURRENCES && now() < deadline) {
                    Object v = bq.poll(Math.max(1, deadline - now()), MILLISECONDS);
                    long at = now();
                    if (v == null) {
                        continue;
                    }
                    check(Case.same(value, v), "Java took an unexpected value " + Case.show(v));
                    check(at >= occurrence[taken], "occurrence " + taken + " taken "
                            + (occurrence[taken] - at) + " ms before its time");
                    check(taken + 1 == OCCURRENCES || at < occurrence[taken + 1],
                            "occurrence " + taken + " taken after the next occurrence's time");
                    x.javaLate.add(at - occurrence[taken]);
                    taken++;
                }
                eq(OCCURRENCES, taken, "occurrences taken by Java");

                // Ended: the schedule's hash has no next occurrence once its last one fired;
                // then nothing may be pending or ready (a second copy of an occurrence).
                var schedule = x.env.javaA.<String, String>getMap(x.prefixed("delayq_schedule") + ":tick",
                        org.redisson.client.codec.StringCodec.INSTANCE);
                long endBy = now() + PATIENCE_MS;
                while (schedule.get("next_ms") != null && now() < endBy) {
                    Thread.sleep(50);
                }
                eq(null, schedule.get("next_ms"), "the schedule's next occurrence");
                eq(String.valueOf(last), schedule.get("last_ms"), "the schedule's last occurrence");
                eq(0L, x.timeoutCard(), "timeout set after the last occurrence");
                eq(0L, x.orderLen(), "order list after the last occurrence");
                eq(0, x.target().size(), "target list after the last occurrence");
            } finally {
                dq.destroy();
                x.peer(x.env.peerA, "destroy");
                x.peer(x.env.peerB, "destroy");
                x.env.javaA.getKeys().delete(x.prefixed("delayq_schedules"),
                        x.prefixed("delayq_schedule") + ":tick");
            }
        });
    }

    // ---------------------------------------------------------------------------------------
    // 11. delayq's deduplicated offers while Java removes and takes the key's entry.

    @ParameterizedTest(name = "S11 delayq dedup offers, java removes and takes the entry: {0}")
    @MethodSource("codecs")
    void s11DedupWithJavaRemovingAndTaking(Case c) throws Exception {
        cell(c, 11, x -> {
            Peer p = x.env.peerA;
            // Both sides' schedulers run: the debounced value is moved when due whichever sees it
            // first (a Java scheduler re-armed by two channel messages at once may keep the later
            // time; S5 covers the channel itself).
            x.open(p, true, null);
            RBlockingQueue<Object> bq = x.bq(x.env.javaA);
            RDelayedQueue<Object> dq = x.env.javaA.getDelayedQueue(bq);
            String mapping = x.prefixed("delayq_dedup") + ":k";
            try {
                List<Object> v = new ArrayList<>();
                for (int i = 0; i < 5; i++) {
                    v.add(c.value(i));
                }
                JsonNode first = dedup(x, p, v.get(0), FAR, false);
                eq("offered", first.path("outcome").asText(), "first dedup offer");
                JsonNode kept = dedup(x, p, v.get(1), FAR, false);
                eq("kept", kept.path("outcome").asText(), "throttled offer within the window");
                eq(first.path("handle").asText(), kept.path("handle").asText(), "kept entry's handle");
                sameList(List.of(v.get(0)), dq.readAll(), "Java readAll after the throttled offer");

                // Java removes the key's entry by value: the mapping is stale, the next offer goes in.
                eq(true, dq.remove(v.get(0)), "Java remove of delayq's deduplicated entry");
                JsonNode fresh = dedup(x, p, v.get(2), FAR, false);
                eq("offered", fresh.path("outcome").asText(), "dedup offer after Java's remove");
                check(!fresh.path("handle").asText().equals(first.path("handle").asText()), "a new entry");
                sameList(List.of(v.get(2)), dq.readAll(), "Java readAll after the new offer");

                // Debounce: the value and due time replaced; moved when due, Java takes it.
                long offered = now();
                JsonNode replaced = dedup(x, p, v.get(3), 300, true);
                eq("replaced", replaced.path("outcome").asText(), "debounced offer");
                check(replaced.path("due_ms").asLong() >= offered + 300, "debounced due time");
                eq(false, dq.contains(v.get(2)), "Java contains the replaced value");
                Object took = bq.poll(PATIENCE_MS, MILLISECONDS);
                long at = now();
                check(Case.same(v.get(3), took), "Java took " + Case.show(took) + ", expected the debounced value");
                check(at >= replaced.path("due_ms").asLong(), "debounced value taken before due");
                x.javaLate.add(at - replaced.path("due_ms").asLong());

                // Java took the key's entry within the window: the next offer goes in.
                JsonNode again = dedup(x, p, v.get(4), FAR, false);
                eq("offered", again.path("outcome").asText(), "dedup offer after Java took the entry");
                sameList(List.of(v.get(4)), dq.readAll(), "Java readAll at the end");
                eq(1L, x.timeoutCard(), "timeout set at the end");
            } finally {
                dq.destroy();
                x.peer(p, "destroy");
                x.env.javaA.getKeys().delete(mapping);
            }
        });
    }

    /** delayq's offer of v under the key "k" with a minute's window (debounced or throttled). */
    static JsonNode dedup(Ctx x, Peer p, Object v, long delayMs, boolean debounce) {
        return x.peer(p, "offer_dedup", "value", x.pv(v), "delay_ms", delayMs, "key", "k",
                "window_ms", 60_000, "debounce", debounce);
    }

    @ParameterizedTest(name = "S7 delayq reliable consumer with Java peers: {0}")
    @MethodSource("cases")
    void s7ReliableConsumerWithJavaPeers(Case c) throws Exception {
        cell(c, 7, x -> {
            Peer p = x.env.peerA;
            x.open(p, true, null);
            Object a = c.value(0);
            Object b = c.value(1);
            long[] lower = x.javaOfferAlone(List.of(a, b), new long[] {100, 100});
            // Both moved by delayq's scheduler before anyone takes (nothing consumes yet).
            long movedBy = now() + PATIENCE_MS;
            while (x.target().size() < 2 && now() < movedBy) {
                Thread.sleep(10);
            }
            eq(2, x.target().size(), "values moved to the target list");
            // delayq takes one of them and fails it: retried in 2 s through the delayed queue (long
            // enough for Java's checks below to run while it is still pending, even on a busy host).
            JsonNode r = x.peer(p, "reliable_take", "timeout_ms", PATIENCE_MS, "outcome", "nack", "delay_ms", 2000);
            String tookHex = r.path("item").path("raw").asText();
            Object failed = tookHex.equals(c.hex(a)) ? a : b;
            Object other = failed == a ? b : a;
            x.checkItem(r.path("item"), failed, "reliable take of a Java offer");
            eq(1, r.path("attempt").asInt(), "first attempt");
            eq(true, r.path("settled").asBoolean(), "nack accepted");
            check(r.path("at_ms").asLong() >= lower[0], "reliable take before due");
            x.rustLate.add(r.path("at_ms").asLong() - lower[0]);

            // Java sees a normal Redisson entry: well packed, pending, comparable by value.
            Map<String, Double> pending = x.pending();
            eq(1, pending.size(), "pending entries after the nack");
            long retryDue = pending.get(c.hex(failed)).longValue();
            RBlockingQueue<Object> bq = x.bq(x.env.javaA);
            RDelayedQueue<Object> dq = x.env.javaA.getDelayedQueue(bq);
            try {
                eq(1, dq.size(), "Java size() of the retried value");
                eq(true, dq.contains(failed), "Java contains() of the retried value");
                // The other value is still on the target list for Java; the retry follows when due.
                Object first = bq.poll(PATIENCE_MS, MILLISECONDS);
                check(Case.same(other, first), "Java took " + Case.show(first) + ", expected the untouched value");
                Object second = bq.poll(PATIENCE_MS, MILLISECONDS);
                long at = now();
                check(Case.same(failed, second), "Java took " + Case.show(second) + ", expected the retried value");
                check(at >= retryDue, "retry taken " + (retryDue - at) + " ms before due");
                x.javaLate.add(at - retryDue);
            } finally {
                dq.destroy();
            }

            // An acknowledged value leaves nothing behind that Java could see.
            Object d = c.value(2);
            long dLower = x.javaOfferAlone(List.of(d), new long[] {50})[0];
            JsonNode acked = x.peer(p, "reliable_take", "timeout_ms", PATIENCE_MS, "outcome", "ack");
            x.checkItem(acked.path("item"), d, "reliable take for ack");
            eq(true, acked.path("settled").asBoolean(), "ack accepted");
            check(acked.path("at_ms").asLong() >= dLower, "reliable take before due");
            eq(0L, x.timeoutCard(), "timeout set after ack");
            eq(0L, x.orderLen(), "order list after ack");
            eq(0, x.target().size(), "target list after ack");
        });
    }
}
