package delayq.compat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One delayq process ({@code delayq-compat-peer}) driven over JSON lines. Thread safe: commands
 * from several tests run concurrently in the peer and replies are matched by id.
 */
final class Peer implements AutoCloseable {
    static final ObjectMapper JSON = new ObjectMapper();

    final String name;
    private final Process process;
    private final OutputStream stdin;
    private final Map<Long, CompletableFuture<JsonNode>> waiting = new ConcurrentHashMap<>();
    private final AtomicLong ids = new AtomicLong();
    private volatile String died;

    Peer(String name, String bin, String redisUrl, File log) throws Exception {
        this.name = name;
        this.process = new ProcessBuilder(bin, redisUrl)
                .redirectError(ProcessBuilder.Redirect.appendTo(log))
                .start();
        this.stdin = process.getOutputStream();
        BufferedReader out = new BufferedReader(
                new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        String first = out.readLine();
        if (first == null || !JSON.readTree(first).path("ready").asBoolean()) {
            process.destroyForcibly();
            throw new IllegalStateException("peer " + name + " did not start (see " + log + "): " + first);
        }
        Thread reader = new Thread(() -> readLoop(out), "peer-" + name);
        reader.setDaemon(true);
        reader.start();
    }

    private void readLoop(BufferedReader out) {
        try {
            String line;
            while ((line = out.readLine()) != null) {
                JsonNode reply = JSON.readTree(line);
                CompletableFuture<JsonNode> f = waiting.remove(reply.path("id").asLong(-1));
                if (f != null) {
                    f.complete(reply);
                }
            }
            died = "peer " + name + " closed its output";
        } catch (Exception e) {
            died = "peer " + name + " output failed: " + e;
        }
        waiting.values().forEach(f -> f.completeExceptionally(new IllegalStateException(died)));
    }

    /** Builds a command: {@code cmd("offer", "h", "q1", ...)}. */
    static ObjectNode cmd(String op, Object... kv) {
        ObjectNode n = JSON.createObjectNode();
        n.put("op", op);
        for (int i = 0; i < kv.length; i += 2) {
            n.set((String) kv[i], JSON.valueToTree(kv[i + 1]));
        }
        return n;
    }

    CompletableFuture<JsonNode> send(ObjectNode command) {
        long id = ids.incrementAndGet();
        command.put("id", id);
        CompletableFuture<JsonNode> f = new CompletableFuture<>();
        if (died != null) {
            f.completeExceptionally(new IllegalStateException(died));
            return f;
        }
        waiting.put(id, f);
        byte[] line = (command.toString() + "\n").getBytes(StandardCharsets.UTF_8);
        synchronized (stdin) {
            try {
                stdin.write(line);
                stdin.flush();
            } catch (Exception e) {
                waiting.remove(id);
                f.completeExceptionally(e);
            }
        }
        return f;
    }

    /** Sends a command and waits for a successful reply; a failed reply throws. */
    JsonNode call(ObjectNode command) {
        String op = command.path("op").asText();
        JsonNode reply;
        try {
            // Past the longest wait a command may ask for (a take's timeout_ms up to PATIENCE_MS).
            reply = send(command).get(2 * CompatMatrixTest.PATIENCE_MS, TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("peer " + name + " " + op + ": " + e, e);
        }
        if (!reply.path("ok").asBoolean()) {
            throw new PeerError("peer " + name + " " + op + " failed: " + reply.path("error").asText());
        }
        return reply;
    }

    JsonNode call(String op, Object... kv) {
        return call(cmd(op, kv));
    }

    /** An error reported by delayq (as opposed to a broken peer). */
    static final class PeerError extends RuntimeException {
        PeerError(String message) {
            super(message);
        }
    }

    @Override
    public void close() {
        synchronized (stdin) {
            try {
                stdin.write("quit\n".getBytes(StandardCharsets.UTF_8));
                stdin.flush();
            } catch (Exception ignored) {
                // already gone
            }
        }
        try {
            if (!process.waitFor(5, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }
}
