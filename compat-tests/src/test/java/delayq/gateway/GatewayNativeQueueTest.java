package delayq.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.redisson.Redisson;
import org.redisson.api.RBlockingQueue;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.codec.JsonJacksonCodec;
import org.redisson.config.Config;

/**
 * Java Redisson consumers take the values {@code delayq gateway}'s native queues offered over
 * HTTP, with the String and Jackson JSON codecs. Run by
 * {@code crates/delayq-gateway/tests/native/run.sh}, which starts a throwaway redis-server and
 * a gateway (allowing {@code java:*}) and passes their addresses and the native token in the
 * environment; the matrix of compat-tests/run.sh leaves this class out (see the pom).
 */
class GatewayNativeQueueTest {
    private static final HttpClient HTTP = HttpClient.newHttpClient();
    private static RedissonClient redisson;

    private static String env(String name) {
        String value = System.getenv(name);
        if (value == null || value.isEmpty()) {
            throw new IllegalStateException(name + " is not set: run crates/delayq-gateway/tests/native/run.sh");
        }
        return value;
    }

    @BeforeAll
    static void connect() {
        Config config = new Config();
        config.useSingleServer().setAddress(env("GATEWAY_REDIS_URL"));
        redisson = Redisson.create(config);
    }

    @AfterAll
    static void close() {
        if (redisson != null) {
            redisson.shutdown();
        }
    }

    /** Offers {@code body} into {@code queue} through the gateway; the JSON answer. */
    private static String offer(String queue, String query, String body) throws Exception {
        HttpRequest request = HttpRequest.newBuilder(
                        URI.create(env("GATEWAY_URL") + "/v1/queues/" + queue + "/offer?" + query))
                .header("Authorization", "Bearer " + env("GATEWAY_NATIVE_TOKEN"))
                .POST(HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8))
                .build();
        HttpResponse<String> response = HTTP.send(request, HttpResponse.BodyHandlers.ofString());
        assertEquals(201, response.statusCode(), response.body());
        assertTrue(response.body().contains("\"handle\""), response.body());
        return response.body();
    }

    @Test
    void stringCodecConsumerTakesTheText() throws Exception {
        String text = "gr\u00fc\u00dfe \u2713 17";
        offer("java:text", "codec=string", text);
        RBlockingQueue<String> queue = redisson.getBlockingQueue("java:text", StringCodec.INSTANCE);
        assertEquals(text, queue.poll(60, TimeUnit.SECONDS));
    }

    @Test
    void jacksonCodecConsumerTakesTheObjectAfterItsDelay() throws Exception {
        offer("java:json", "codec=json&delay=3s",
                "{\"id\": 17, \"sku\": \"x-1\", \"tags\": [\"a\", \"b\"], \"price\": 12.5, \"ok\": true}");
        RBlockingQueue<Object> queue = redisson.getBlockingQueue("java:json", new JsonJacksonCodec());
        // Not before its delay: the gateway moves it to the queue once due.
        assertNull(queue.poll());
        Object taken = queue.poll(60, TimeUnit.SECONDS);
        assertNotNull(taken);
        assertTrue(taken instanceof Map, taken.getClass().getName());
        Map<?, ?> order = (Map<?, ?>) taken;
        assertEquals(17L, order.get("id"));
        assertEquals("x-1", order.get("sku"));
        assertEquals(List.of("a", "b"), order.get("tags"));
        assertEquals(12.5, order.get("price"));
        assertEquals(Boolean.TRUE, order.get("ok"));
        assertEquals(5, order.size());
    }
}
