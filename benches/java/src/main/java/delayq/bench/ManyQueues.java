package delayq.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.redisson.Redisson;
import org.redisson.api.RDelayedQueue;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

/**
 * Many queues in one JVM, for delayq's many-queues benchmark: Redisson holding
 * {@code count} {@code RDelayedQueue} instances, as a Java service that keeps them moving does.
 *
 * <p>{@code ManyQueues <redis-url> <prefix> <count> <seconds> [tuned]}: creates the instances
 * {@code <prefix>-0 .. <prefix>-<count-1>} one by one (Redisson's defaults, or with {@code tuned}
 * a subscription pool large enough for every channel), stopping at the first failure or after
 * {@code seconds}; then prints {@code READY <json>} (how many it holds, how long creating them
 * took, the error it stopped at). Each later stdin line {@code stats} is answered with
 * {@code RESULT <json>} (resident memory, heap in use after a GC). At end of input it destroys
 * the instances and exits.
 */
public final class ManyQueues {
    private ManyQueues() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: ManyQueues <url> <prefix> <count> <seconds> [tuned]");
            System.exit(2);
        }
        String url = args[0];
        String prefix = args[1];
        int count = Integer.parseInt(args[2]);
        long deadline = System.nanoTime() + (long) (Double.parseDouble(args[3]) * 1e9);
        boolean tuned = args.length > 4 && args[4].equals("tuned");

        Config config = new Config();
        config.setCodec(StringCodec.INSTANCE);
        var server = config.useSingleServer().setAddress(url);
        if (tuned) {
            // One subscription connection per 1,000 channels would do for Redis; Redisson's
            // defaults allow 50 connections of 5 subscriptions each.
            server.setSubscriptionsPerConnection(1000);
            server.setSubscriptionConnectionPoolSize(Math.max(50, count / 1000 + 1));
        }
        RedissonClient redisson = Redisson.create(config);
        List<RDelayedQueue<String>> queues = new ArrayList<>();
        String error = null;
        long start = System.nanoTime();
        try {
            for (int i = 0; i < count; i++) {
                if (System.nanoTime() > deadline) {
                    error = "gave up after " + args[3] + " s";
                    break;
                }
                String name = prefix + "-" + i;
                queues.add(redisson.getDelayedQueue(redisson.getBlockingQueue(name, StringCodec.INSTANCE)));
            }
        } catch (Throwable e) {
            error = e.toString().replace('\n', ' ').replace('"', '\'');
        }
        double secs = (System.nanoTime() - start) / 1e9;
        PrintStream out = System.out;
        out.println("READY {\"created\":" + queues.size() + ",\"secs\":" + secs + ",\"tuned\":" + tuned
                + ",\"error\":" + (error == null ? "null" : "\"" + error + "\"") + "}");
        out.flush();

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.trim().equals("stats")) {
                System.gc();
                Runtime rt = Runtime.getRuntime();
                out.println("RESULT {\"rss_kib\":" + vmRssKib()
                        + ",\"heap_used_kib\":" + (rt.totalMemory() - rt.freeMemory()) / 1024
                        + ",\"threads\":" + Thread.activeCount() + "}");
            } else {
                out.println("ERROR unknown command " + line.trim());
            }
            out.flush();
        }
        for (RDelayedQueue<String> queue : queues) {
            try {
                queue.destroy();
            } catch (Throwable e) {
                // The instance may never have finished subscribing.
            }
        }
        redisson.shutdown();
    }

    private static long vmRssKib() throws IOException {
        for (String l : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (l.startsWith("VmRSS:")) {
                return Long.parseLong(l.replaceAll("[^0-9]", ""));
            }
        }
        return -1;
    }
}
