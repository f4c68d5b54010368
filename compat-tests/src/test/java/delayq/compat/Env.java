package delayq.compat;

import java.io.File;
import java.util.HashSet;
import java.util.Set;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import org.redisson.config.ReadMode;

/**
 * What one suite run shares: a private redis-server, two Redisson clients (two "Java services")
 * and two delayq peer processes. Started once, stopped when the JVM exits. The sharded scenario
 * has a second one ({@link #cluster()}) on a Redis Cluster of three masters.
 */
final class Env {
    final String version = System.getProperty("redisson.version", "unknown");
    final boolean legacy = Boolean.getBoolean("legacy.format");
    /** The standalone server, or null on a Cluster. */
    final RedisServer redis;
    /** The Cluster, or null on a standalone server. */
    final RedisCluster cluster;
    final RedissonClient javaA;
    final RedissonClient javaB;
    final Peer peerA;
    final Peer peerB;
    final Set<String> peerCodecs = new HashSet<>();

    private static Env instance;
    private static Env clusterInstance;

    static synchronized Env get() {
        if (instance == null) {
            try {
                instance = new Env(false);
            } catch (Exception e) {
                throw new IllegalStateException("cannot set up the compat environment: " + e, e);
            }
            Runtime.getRuntime().addShutdownHook(new Thread(instance::close));
        }
        return instance;
    }

    /** The same on a Redis Cluster of three masters (started on first use). */
    static synchronized Env cluster() {
        if (clusterInstance == null) {
            try {
                clusterInstance = new Env(true);
            } catch (Exception e) {
                throw new IllegalStateException("cannot set up the compat Cluster environment: " + e, e);
            }
            Runtime.getRuntime().addShutdownHook(new Thread(clusterInstance::close));
        }
        return clusterInstance;
    }

    private Env(boolean onCluster) throws Exception {
        redis = onCluster ? null : RedisServer.start();
        cluster = onCluster ? RedisCluster.start(3) : null;
        javaA = client();
        javaB = client();
        String bin = System.getProperty("peer.bin");
        if (bin == null || !new File(bin).canExecute()) {
            throw new IllegalStateException("peer binary not found: " + bin + " (run compat-tests/run.sh)");
        }
        File logDir = new File(System.getProperty("results.dir", "target"));
        logDir.mkdirs();
        String url = onCluster ? cluster.peerUrl() : redis.url();
        String log = (onCluster ? "-cluster-" : "-") + version + ".log";
        peerA = new Peer("A", bin, url, new File(logDir, "peer-A" + log));
        peerB = new Peer("B", bin, url, new File(logDir, "peer-B" + log));
        peerA.call("caps").path("codecs").forEach(n -> peerCodecs.add(n.asText()));
    }

    /** A new Redisson client on the suite's server; the caller shuts it down. */
    RedissonClient newClient() {
        return client();
    }

    private RedissonClient client() {
        Config config = new Config();
        if (cluster != null) {
            config.useClusterServers()
                    .addNodeAddress(cluster.addresses().toArray(new String[0]))
                    .setReadMode(ReadMode.MASTER)
                    .setMasterConnectionMinimumIdleSize(4)
                    .setMasterConnectionPoolSize(64)
                    .setSubscriptionConnectionPoolSize(64)
                    .setTimeout(10_000);
            return Redisson.create(config);
        }
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
        if (redis != null) {
            redis.close();
        }
        if (cluster != null) {
            cluster.close();
        }
    }
}
