// A Java service whose only job is Redisson's transfer task for one delayed queue: it builds
// RDelayedQueue (which starts QueueTransferTask) and keeps it until its stdin closes or it is
// killed. Started by tests/faults/soak as a single-file program:
//   java -cp "$(cat classpath.txt)" JavaScheduler redis://127.0.0.1:PORT QUEUE
// It prints "ready" once the queue object exists, then nothing unless Redisson logs warnings.

import java.io.InputStream;
import org.redisson.Redisson;
import org.redisson.api.RBlockingQueue;
import org.redisson.api.RDelayedQueue;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

public class JavaScheduler {
    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: JavaScheduler REDIS_URL QUEUE");
            System.exit(2);
        }
        Config config = new Config();
        config.useSingleServer()
                .setAddress(args[0])
                // Reconnect quickly after CLIENT KILL and restarts; keep retrying commands.
                .setRetryAttempts(10)
                .setTimeout(5000)
                .setConnectTimeout(5000)
                .setPingConnectionInterval(1000);
        RedissonClient redisson = Redisson.create(config);
        RBlockingQueue<String> target = redisson.getBlockingQueue(args[1], StringCodec.INSTANCE);
        RDelayedQueue<String> delayed = redisson.getDelayedQueue(target);
        System.out.println("ready");
        System.out.flush();
        InputStream in = System.in;
        while (in.read() >= 0) {
            // Wait for end of input: the driver closes our stdin to stop us.
        }
        delayed.destroy();
        redisson.shutdown();
    }
}
