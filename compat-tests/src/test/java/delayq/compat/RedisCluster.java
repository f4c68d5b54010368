package delayq.compat;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A Redis Cluster of a few masters (no replicas) on free loopback ports, for the sharded
 * scenario: cluster-enabled {@link RedisServer}s joined by {@code redis-cli --cluster create}
 * (the CLI next to the server program), which gives each master an equal range of slots.
 */
final class RedisCluster implements AutoCloseable {
    final List<RedisServer> nodes;

    private RedisCluster(List<RedisServer> nodes) {
        this.nodes = nodes;
    }

    static RedisCluster start(int masters) throws Exception {
        List<RedisServer> nodes = new ArrayList<>();
        RedisCluster cluster = new RedisCluster(nodes);
        try {
            for (int i = 0; i < masters; i++) {
                nodes.add(RedisServer.start("--cluster-enabled", "yes",
                        "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000"));
            }
            String program = RedisServer.program();
            String cli = program.endsWith("-server")
                    ? program.substring(0, program.length() - "-server".length()) + "-cli"
                    : "redis-cli";
            List<String> cmd = new ArrayList<>(List.of(cli, "--cluster", "create"));
            for (RedisServer n : nodes) {
                cmd.add("127.0.0.1:" + n.port);
            }
            cmd.addAll(List.of("--cluster-replicas", "0", "--cluster-yes"));
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            p.getOutputStream().close();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0 || !out.contains("All 16384 slots covered")) {
                throw new IllegalStateException(String.join(" ", cmd) + " failed:\n" + out);
            }
            cluster.waitHealthy();
            return cluster;
        } catch (Exception e) {
            cluster.close();
            throw e;
        }
    }

    /** Waits until every node says {@code cluster_state:ok}, all slots assigned, and knows every node. */
    private void waitHealthy() throws Exception {
        long deadline = System.currentTimeMillis() + 30_000;
        String last = "";
        while (System.currentTimeMillis() < deadline) {
            boolean ok = true;
            for (RedisServer n : nodes) {
                String info = call(n.port, "CLUSTER INFO");
                if (!info.contains("cluster_state:ok") || !info.contains("cluster_slots_assigned:16384")
                        || !info.contains("cluster_known_nodes:" + nodes.size() + "\r")) {
                    ok = false;
                    last = "node " + n.port + ": " + info.replace("\r\n", " ");
                    break;
                }
            }
            if (ok) {
                return;
            }
            Thread.sleep(100);
        }
        throw new IllegalStateException("the Cluster did not become healthy in 30 s: " + last);
    }

    /** Node addresses for Redisson's {@code useClusterServers()}. */
    List<String> addresses() {
        List<String> out = new ArrayList<>();
        for (RedisServer n : nodes) {
            out.add(n.url());
        }
        return out;
    }

    /** fred's Cluster URL, for the delayq peer: {@code redis-cluster://127.0.0.1:P1?node=127.0.0.1:P2&...}. */
    String peerUrl() {
        StringBuilder url = new StringBuilder("redis-cluster://127.0.0.1:").append(nodes.get(0).port);
        for (int i = 1; i < nodes.size(); i++) {
            url.append(i == 1 ? '?' : '&').append("node=127.0.0.1:").append(nodes.get(i).port);
        }
        return url.toString();
    }

    /** The index (in {@link #nodes}) of the master serving {@code key}'s slot. */
    int masterOf(String key) throws IOException {
        int port0 = nodes.get(0).port;
        int slot = Integer.parseInt(call(port0, "CLUSTER KEYSLOT " + key));
        for (String line : call(port0, "CLUSTER NODES").split("\n")) {
            String[] f = line.trim().split(" ");
            if (f.length < 9) {
                continue;
            }
            int port = Integer.parseInt(f[1].substring(f[1].lastIndexOf(':') + 1, f[1].indexOf('@')));
            for (int j = 8; j < f.length; j++) {
                if (f[j].startsWith("[")) {
                    continue; // a slot being migrated or imported
                }
                String[] range = f[j].split("-");
                int lo = Integer.parseInt(range[0]);
                int hi = range.length > 1 ? Integer.parseInt(range[1]) : lo;
                if (slot >= lo && slot <= hi) {
                    for (int k = 0; k < nodes.size(); k++) {
                        if (nodes.get(k).port == port) {
                            return k;
                        }
                    }
                }
            }
        }
        throw new IllegalStateException("no master serves slot " + slot + " of " + key);
    }

    /** One inline command to the node on {@code port}; its bulk-string, status or integer reply. */
    static String call(int port, String command) throws IOException {
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
            s.setSoTimeout(5000);
            s.getOutputStream().write((command + "\r\n").getBytes(StandardCharsets.UTF_8));
            DataInputStream in = new DataInputStream(s.getInputStream());
            String head = line(in);
            switch (head.isEmpty() ? '?' : head.charAt(0)) {
                case '$': {
                    int n = Integer.parseInt(head.substring(1));
                    if (n < 0) {
                        return "";
                    }
                    byte[] body = new byte[n];
                    in.readFully(body);
                    return new String(body, StandardCharsets.UTF_8);
                }
                case '+':
                case ':':
                    return head.substring(1);
                default:
                    throw new IOException(command + " on port " + port + ": " + head);
            }
        }
    }

    private static String line(InputStream in) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int prev = -1;
        while (true) {
            int b = in.read();
            if (b < 0) {
                throw new IOException("connection closed in a reply");
            }
            if (prev == '\r' && b == '\n') {
                byte[] all = out.toByteArray();
                return new String(all, 0, all.length - 1, StandardCharsets.UTF_8);
            }
            out.write(b);
            prev = b;
        }
    }

    @Override
    public void close() {
        for (RedisServer n : nodes) {
            n.close();
        }
    }
}
