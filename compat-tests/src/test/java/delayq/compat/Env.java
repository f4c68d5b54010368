package delayq.compat;

import java.io.File;
import java.util.HashSet;
import java.util.Set;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * What one suite run shares: a private redis-server, two Redisson clients (two "Java services")
 * and two delayq peer processes. Started once, stopped when the JVM exits.
 */
final class Env {
    final String version = System.getProperty("redisson.version", "unknown");
    final boolean legacy = Boolean.getBoolean("legacy.format");
    final RedisServer redis;
    final RedissonClient javaA;
    final RedissonClient javaB;
    final Peer peerA;
    final Peer peerB;
    final Set<String> peerCodecs = new HashSet<>();

    private static Env instance;

    static synchronized Env get() {
        if (instance == null) {
            try {
                instance = new Env();
            } catch (Exception e) {
                throw new IllegalStateException("cannot set up the compat environment: " + e, e);
            }
            Runtime.getRuntime().addShutdownHook(new Thread(instance::close));
        }
        return instance;
    }

    private Env() throws Exception {
        redis = RedisServer.start();
        javaA = client();
        javaB = client();
        String bin = System.getProperty("peer.bin");
        if (bin == null || !new File(bin).canExecute()) {
            throw new IllegalStateException("peer binary not found: " + bin + " (run compat-tests/run.sh)");
        }
        File logDir = new File(System.getProperty("results.dir", "target"));
        logDir.mkdirs();
        peerA = new Peer("A", bin, redis.url(), new File(logDir, "peer-A-" + version + ".log"));
        peerB = new Peer("B", bin, redis.url(), new File(logDir, "peer-B-" + version + ".log"));
        peerA.call("caps").path("codecs").forEach(n -> peerCodecs.add(n.asText()));
    }

    /** A new Redisson client on the suite's server; the caller shuts it down. */
    RedissonClient newClient() {
        return client();
    }

    private RedissonClient client() {
        Config config = new Config();
        config.useSingleServer()
                .setAddress(redis.url())
                .setConnectionMinimumIdleSize(4)
                .setConnectionPoolSize(64)
                .setSubscriptionConnectionPoolSize(64)
                .setTimeout(10_000);
        return Redisson.create(config);
    }

    /** Whether the delayq peer offers this case's codec (its {@code caps}). */
    boolean peerHas(Case c) {
        return peerCodecs.contains(c.codecId.peerName);
    }

    /** The codecs the delayq peer offers. */
    String peerCodecs() {
        return String.join(", ", peerCodecs);
    }

    private void close() {
        for (AutoCloseable c : new AutoCloseable[] {peerA, peerB}) {
            try {
                c.close();
            } catch (Exception ignored) {
                // best effort at exit
            }
        }
        try {
            javaA.shutdown();
            javaB.shutdown();
        } catch (Exception ignored) {
            // best effort at exit
        }
        redis.close();
    }
}
