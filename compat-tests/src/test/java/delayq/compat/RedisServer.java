package delayq.compat;

import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A private redis-server on a free loopback port, for one suite run: the program named by the
 * system property {@code redis.server} (run.sh's COMPAT_SERVER, e.g. Valkey's valkey-server).
 */
final class RedisServer implements AutoCloseable {
    final int port;
    private final Process process;
    private final Path dir;

    private RedisServer(int port, Process process, Path dir) {
        this.port = port;
        this.process = process;
        this.dir = dir;
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        }
    }

    /** The server program: run.sh's COMPAT_SERVER. */
    static String program() {
        return System.getProperty("redis.server", "redis-server");
    }

    /** Starts a server; {@code extra} are more command-line arguments (a Cluster node's). */
    static RedisServer start(String... extra) throws Exception {
        Exception last = null;
        for (int attempt = 0; attempt < 5; attempt++) {
            int port = freePort();
            Path dir = Files.createTempDirectory("delayq-compat-redis");
            File log = dir.resolve("redis.log").toFile();
            String program = program();
            List<String> args = new ArrayList<>(List.of(program, "--port", String.valueOf(port),
                    "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                    "--dir", dir.toString()));
            args.addAll(List.of(extra));
            Process p = new ProcessBuilder(args)
                    .redirectErrorStream(true)
                    .redirectOutput(log)
                    .start();
            long deadline = System.currentTimeMillis() + 5000;
            while (System.currentTimeMillis() < deadline && p.isAlive()) {
                try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
                    s.getOutputStream().write("PING\r\n".getBytes());
                    byte[] buf = new byte[7];
                    int n = s.getInputStream().read(buf);
                    if (n > 0 && new String(buf, 0, n).startsWith("+PONG")) {
                        return new RedisServer(port, p, dir);
                    }
                } catch (IOException e) {
                    Thread.sleep(50);
                }
            }
            p.destroyForcibly();
            last = new IllegalStateException(program + " did not start on port " + port + ": "
                    + Files.readString(log.toPath()));
        }
        throw last;
    }

    String url() {
        return "redis://127.0.0.1:" + port;
    }

    @Override
    public void close() {
        process.destroy();
        try {
            process.waitFor();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
