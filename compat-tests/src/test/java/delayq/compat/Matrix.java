package delayq.compat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.LongSummaryStatistics;

/**
 * The results of one run (one Redisson version): one line per case x scenario, written as a TSV
 * that {@code tools/Aggregate.java} turns into RESULTS.md.
 */
final class Matrix {
    /** Status of a cell. */
    enum Status { PASS, FAIL, NA }

    /** Delivery lateness (take time minus due time, ms) measured on one side. */
    static final class Lateness {
        final List<Long> samples = Collections.synchronizedList(new ArrayList<>());

        void add(long ms) {
            samples.add(ms);
        }

        String summary() {
            synchronized (samples) {
                if (samples.isEmpty()) {
                    return "-";
                }
                LongSummaryStatistics s = samples.stream().mapToLong(Long::longValue).summaryStatistics();
                return Math.round(s.getAverage()) + "/" + s.getMax();
            }
        }
    }

    private static final List<String> LINES = Collections.synchronizedList(new ArrayList<>());

    static void record(String version, Case c, int scenario, Status status, Lateness java, Lateness rust, String detail) {
        String d = detail == null ? "" : detail.replaceAll("[\\t\\r\\n]+", " ");
        if (d.length() > 300) {
            d = d.substring(0, 300) + "...";
        }
        LINES.add(String.join("\t", version, c.codecId.javaName, c.kind, "S" + scenario,
                status.name(), java.summary(), rust.summary(), d));
    }

    private static final List<String> NOTES = Collections.synchronizedList(new ArrayList<>());

    /** An observation about Redisson itself (not a delayq result), printed under the matrix. */
    static void note(String text) {
        synchronized (NOTES) {
            if (!NOTES.contains(text)) {
                NOTES.add(text);
            }
        }
    }

    static void write(String version) throws IOException {
        Path dir = Path.of(System.getProperty("results.dir", "target/compat-results"));
        Files.createDirectories(dir);
        List<String> lines;
        synchronized (LINES) {
            lines = new ArrayList<>(LINES);
        }
        Collections.sort(lines);
        Files.write(dir.resolve("results-" + version + ".tsv"), lines, StandardCharsets.UTF_8);
        synchronized (NOTES) {
            Files.write(dir.resolve("notes-" + version + ".txt"), NOTES, StandardCharsets.UTF_8);
        }
    }
}
