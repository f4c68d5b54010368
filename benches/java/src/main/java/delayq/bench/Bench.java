package delayq.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.redisson.Redisson;
import org.redisson.api.RBlockingQueue;
import org.redisson.api.RDelayedQueue;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

/**
 * The Java Redisson side of delayq's benchmark, driven by benches/delayq_bench.rs.
 *
 * <p>{@code Bench serve <redis-url>}: reads one command per line on stdin and answers each with
 * one line {@code RESULT <json>} (or {@code ERROR <text>}) on stdout; prints {@code READY} once
 * connected. Every queue is Redisson's own {@code getDelayedQueue(getBlockingQueue(name,
 * StringCodec.INSTANCE))}, so the transfer runs in Redisson's real QueueTransferTask.
 *
 * <p>{@code Bench rss <redis-url> <queue> <count> <concurrency>}: in a fresh JVM, offers and takes
 * {@code count} values and prints the process's resident memory as one {@code RESULT} line.
 */
public final class Bench {
    private final RedissonClient redisson;
    private final Map<String, RDelayedQueue<String>> schedulers = new HashMap<>();

    private Bench(String url) {
        Config config = new Config();
        config.setCodec(StringCodec.INSTANCE);
        // A long timeout: Redisson's remove/contains on a queue of a million entries holds Redis
        // for seconds (the lookup phase measures exactly that), and a timed-out write is retried.
        config.useSingleServer().setAddress(url).setTimeout(300_000);
        redisson = Redisson.create(config);
    }

    public static void main(String[] args) throws Exception {
        if (args.length >= 2 && args[0].equals("serve")) {
            new Bench(args[1]).serve();
        } else if (args.length == 5 && args[0].equals("rss")) {
            Bench bench = new Bench(args[1]);
            String json = bench.rss(args[2], Long.parseLong(args[3]), Integer.parseInt(args[4]));
            System.out.println("RESULT " + json);
            bench.redisson.shutdown();
        } else {
            System.err.println("usage: Bench serve <url> | Bench rss <url> <queue> <count> <concurrency>");
            System.exit(2);
        }
    }

    private void serve() throws IOException {
        PrintStream out = System.out;
        out.println("READY " + org.redisson.Version.class.getPackage().getImplementationVersion());
        out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] a = line.trim().split(" ");
            if (a.length == 0 || a[0].isEmpty()) {
                continue;
            }
            try {
                String json = run(a);
                out.println("RESULT " + json);
            } catch (Exception e) {
                out.println("ERROR " + e.toString().replace('\n', ' '));
            }
            out.flush();
        }
        for (RDelayedQueue<String> dq : schedulers.values()) {
            dq.destroy();
        }
        redisson.shutdown();
    }

    private String run(String[] a) throws Exception {
        switch (a[0]) {
            case "offer":
                return offer(a[1], Integer.parseInt(a[2]), Double.parseDouble(a[3]), Long.parseLong(a[4]));
            case "sched_start": {
                RDelayedQueue<String> dq = delayed(a[1]);
                schedulers.put(a[1], dq);
                return "{}";
            }
            case "sched_stop": {
                RDelayedQueue<String> dq = schedulers.remove(a[1]);
                if (dq == null) {
                    throw new IllegalStateException("no scheduler for " + a[1]);
                }
                dq.destroy();
                return "{}";
            }
            case "latency":
                return latency(a[1], Integer.parseInt(a[2]), Double.parseDouble(a[3]),
                        Long.parseLong(a[4]), Long.parseLong(a[5]), Path.of(a[6]));
            case "drain":
                return drain(a[1], Long.parseLong(a[2]), Integer.parseInt(a[3]));
            case "offer_n":
                return offerN(a[1], Long.parseLong(a[2]), Long.parseLong(a[3]), Integer.parseInt(a[4]),
                        Long.parseLong(a[5]), Long.parseLong(a[6]));
            case "lookup":
                return lookup(a[1], a[2], Integer.parseInt(a[3]), Long.parseLong(a[4]), Long.parseLong(a[5]));
            default:
                throw new IllegalArgumentException("unknown command " + a[0]);
        }
    }

    private RDelayedQueue<String> delayed(String name) {
        return redisson.getDelayedQueue(redisson.getBlockingQueue(name, StringCodec.INSTANCE));
    }

    /** {@code concurrency} threads offer unique values for {@code seconds}, each call synchronous. */
    private String offer(String name, int concurrency, double seconds, long delayMs) throws Exception {
        RDelayedQueue<String> dq = delayed(name);
        AtomicLong seq = new AtomicLong();
        long start = System.nanoTime();
        long deadline = start + (long) (seconds * 1e9);
        List<Thread> threads = new ArrayList<>();
        List<Throwable> failures = new ArrayList<>();
        for (int t = 0; t < concurrency; t++) {
            Thread th = new Thread(() -> {
                try {
                    while (System.nanoTime() < deadline) {
                        dq.offer(value(seq.getAndIncrement()), delayMs, TimeUnit.MILLISECONDS);
                    }
                } catch (Throwable e) {
                    synchronized (failures) {
                        failures.add(e);
                    }
                }
            });
            th.start();
            threads.add(th);
        }
        for (Thread th : threads) {
            th.join();
        }
        double secs = (System.nanoTime() - start) / 1e9;
        dq.destroy();
        if (!failures.isEmpty()) {
            throw new IllegalStateException("offer failed: " + failures.get(0), failures.get(0));
        }
        return "{\"ops\":" + seq.get() + ",\"secs\":" + secs + "}";
    }

    /**
     * {@code concurrency} threads offer the values {@code from .. from + count - 1}, each with a
     * random delay in [minMs, maxMs).
     */
    private String offerN(String name, long from, long count, int concurrency, long minMs, long maxMs)
            throws Exception {
        RDelayedQueue<String> dq = delayed(name);
        AtomicLong next = new AtomicLong(from);
        long start = System.nanoTime();
        List<Thread> threads = new ArrayList<>();
        List<Throwable> failures = new ArrayList<>();
        for (int t = 0; t < concurrency; t++) {
            Thread th = new Thread(() -> {
                try {
                    long i;
                    while ((i = next.getAndIncrement()) < from + count) {
                        long delay = ThreadLocalRandom.current().nextLong(minMs, maxMs);
                        dq.offer(value(i), delay, TimeUnit.MILLISECONDS);
                    }
                } catch (Throwable e) {
                    synchronized (failures) {
                        failures.add(e);
                    }
                }
            });
            th.start();
            threads.add(th);
        }
        for (Thread th : threads) {
            th.join();
        }
        double secs = (System.nanoTime() - start) / 1e9;
        dq.destroy();
        if (!failures.isEmpty()) {
            throw new IllegalStateException("offer failed: " + failures.get(0), failures.get(0));
        }
        return "{\"ops\":" + count + ",\"secs\":" + secs + "}";
    }

    /**
     * {@code count} calls of Redisson's {@code contains(v)} or {@code remove(v)} on values drawn at
     * random (seeded) from {@code 0 .. n - 1}, one after the other.
     */
    private String lookup(String name, String op, int count, long n, long seed) {
        RDelayedQueue<String> dq = delayed(name);
        java.util.Random random = new java.util.Random(seed);
        long found = 0;
        long start = System.nanoTime();
        for (int k = 0; k < count; k++) {
            String v = value(Math.floorMod(random.nextLong(), n));
            boolean hit;
            switch (op) {
                case "contains":
                    hit = dq.contains(v);
                    break;
                case "remove":
                    hit = dq.remove(v);
                    break;
                default:
                    throw new IllegalArgumentException("unknown lookup " + op);
            }
            if (hit) {
                found++;
            }
        }
        double secs = (System.nanoTime() - start) / 1e9;
        dq.destroy();
        return "{\"ops\":" + count + ",\"found\":" + found + ",\"secs\":" + secs + "}";
    }

    /**
     * Offers {@code rate} values a second for {@code seconds}, each with a random delay in
     * [minMs, maxMs], while one consumer takes them; writes each value's due-to-take latency
     * (microseconds) to {@code out}, one a line.
     */
    private String latency(String name, int rate, double seconds, long minMs, long maxMs, Path out)
            throws Exception {
        RBlockingQueue<String> target = redisson.getBlockingQueue(name, StringCodec.INSTANCE);
        RDelayedQueue<String> dq = redisson.getDelayedQueue(target);
        long total = (long) (rate * seconds);
        long[] latencies = new long[(int) total];
        AtomicLong received = new AtomicLong();
        List<Throwable> failures = new ArrayList<>();
        Thread consumer = new Thread(() -> {
            try {
                while (received.get() < total) {
                    String v = target.poll(1, TimeUnit.SECONDS);
                    if (v == null) {
                        continue;
                    }
                    long nowUs = epochMicros();
                    long due = Long.parseLong(v.substring(v.lastIndexOf('-') + 1));
                    latencies[(int) received.getAndIncrement()] = nowUs - due * 1000;
                }
            } catch (Throwable e) {
                synchronized (failures) {
                    failures.add(e);
                }
            }
        });
        consumer.start();
        long start = System.nanoTime();
        long sent = 0;
        while (sent < total) {
            long shouldHave = Math.min(total, (long) ((System.nanoTime() - start) / 1e9 * rate));
            while (sent < shouldHave) {
                long delay = ThreadLocalRandom.current().nextLong(minMs, maxMs + 1);
                long due = System.currentTimeMillis() + delay;
                dq.offer("lat-" + sent + "-" + due, delay, TimeUnit.MILLISECONDS);
                sent++;
            }
            Thread.sleep(1);
        }
        double sendSecs = (System.nanoTime() - start) / 1e9;
        consumer.join(maxMs + 10_000);
        consumer.interrupt();
        dq.destroy();
        if (!failures.isEmpty()) {
            throw new IllegalStateException("consumer failed: " + failures.get(0), failures.get(0));
        }
        long got = received.get();
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < got; i++) {
            text.append(latencies[i]).append('\n');
        }
        Files.writeString(out, text.toString());
        return "{\"sent\":" + sent + ",\"received\":" + got + ",\"send_secs\":" + sendSecs + "}";
    }

    /** Takes {@code count} values off the list {@code name}: one by one, or {@code batch} at a time. */
    private String drain(String name, long count, int batch) throws Exception {
        RBlockingQueue<String> target = redisson.getBlockingQueue(name, StringCodec.INSTANCE);
        long got = 0;
        long start = System.nanoTime();
        while (got < count) {
            if (batch <= 1) {
                String v = target.poll(5, TimeUnit.SECONDS);
                if (v == null) {
                    throw new IllegalStateException("list ran dry after " + got + " values");
                }
                got++;
            } else {
                List<String> vs = target.poll(batch);
                if (vs.isEmpty()) {
                    throw new IllegalStateException("list ran dry after " + got + " values");
                }
                got += vs.size();
            }
        }
        double secs = (System.nanoTime() - start) / 1e9;
        return "{\"ops\":" + got + ",\"secs\":" + secs + "}";
    }

    /** Offers {@code count} due values from {@code concurrency} threads while as many take them. */
    private String rss(String name, long count, int concurrency) throws Exception {
        RBlockingQueue<String> target = redisson.getBlockingQueue(name, StringCodec.INSTANCE);
        RDelayedQueue<String> dq = redisson.getDelayedQueue(target);
        AtomicLong offered = new AtomicLong();
        AtomicLong taken = new AtomicLong();
        List<Throwable> failures = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        long start = System.nanoTime();
        for (int t = 0; t < concurrency; t++) {
            threads.add(new Thread(() -> {
                try {
                    long i;
                    while ((i = offered.getAndIncrement()) < count) {
                        dq.offer(value(i), 0, TimeUnit.MILLISECONDS);
                    }
                } catch (Throwable e) {
                    synchronized (failures) {
                        failures.add(e);
                    }
                }
            }));
            threads.add(new Thread(() -> {
                try {
                    while (taken.get() < count && failures.isEmpty()) {
                        if (target.poll(1, TimeUnit.SECONDS) != null) {
                            taken.incrementAndGet();
                        }
                    }
                } catch (Throwable e) {
                    synchronized (failures) {
                        failures.add(e);
                    }
                }
            }));
        }
        threads.forEach(Thread::start);
        for (Thread th : threads) {
            th.join();
        }
        double secs = (System.nanoTime() - start) / 1e9;
        if (!failures.isEmpty()) {
            throw new IllegalStateException("rss run failed: " + failures.get(0), failures.get(0));
        }
        Map<String, Long> status = procStatus();
        Runtime rt = Runtime.getRuntime();
        dq.destroy();
        return "{\"ops\":" + count + ",\"taken\":" + taken.get() + ",\"secs\":" + secs
                + ",\"rss_kib\":" + status.getOrDefault("VmRSS", -1L)
                + ",\"hwm_kib\":" + status.getOrDefault("VmHWM", -1L)
                + ",\"heap_used_kib\":" + (rt.totalMemory() - rt.freeMemory()) / 1024
                + ",\"heap_max_kib\":" + rt.maxMemory() / 1024 + "}";
    }

    private static Map<String, Long> procStatus() throws IOException {
        Map<String, Long> m = new HashMap<>();
        for (String l : Files.readAllLines(Path.of("/proc/self/status"))) {
            String[] kv = l.split(":\\s+");
            if (kv.length == 2 && kv[1].endsWith(" kB")) {
                m.put(kv[0], Long.parseLong(kv[1].substring(0, kv[1].length() - 3).trim()));
            }
        }
        return m;
    }

    /** The same 18-byte values the Rust side offers. */
    static String value(long i) {
        return String.format("value-%012d", i);
    }

    private static long epochMicros() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
    }
}
