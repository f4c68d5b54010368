import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Turns the per-version TSVs written by the JUnit suite into compat-tests/RESULTS.md.
 * Usage: java Aggregate.java RESULTS_DIR OUT.md VERSION... ; exits 1 on any FAIL or missing run.
 */
public class Aggregate {
    static final String[] SCENARIOS = {"S1", "S2", "S3", "S4", "S5", "S6", "S7", "S8", "S9", "S10", "S11"};

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        Path out = Path.of(args[1]);
        StringBuilder md = new StringBuilder();
        md.append("# delayq vs. Redisson: interop matrix\n\n");
        md.append("Written by `compat-tests/run.sh` (see README.md there).");
        String server = System.getProperty("compat.server", "");
        if (!server.isEmpty()) {
            md.append(" Server: ").append(server).append('.');
        }
        String only = System.getProperty("compat.scenarios", "");
        if (!only.isEmpty()) {
            md.append(" Scenarios run: ").append(only).append(" (the others' cells are empty).");
        }
        md.append(" Scenarios:\n\n");
        md.append("- **S1** Java offers (mixed delays), only delayq's scheduler runs, a delayq consumer takes every value: right bytes and value, none early.\n");
        md.append("- **S2** delayq offers (single and batched), only Java's `RDelayedQueue` scheduler runs, Java `poll(timeout)` decodes every value, none early.\n");
        md.append("- **S3** two Java clients and two delayq processes, all running schedulers, 4 x 500 random-delay offers: every value lands exactly once.\n");
        md.append("- **S4** `remove`/`contains`/`size`/`peek`/`read_all`/`poll`/`poll(n)`/`clear` across languages.\n");
        md.append("- **S5** a new head offered by one side re-arms the other side's idle scheduler (delayq with its safety sweep off).\n");
        md.append("- **S6** legacy `dLc0` entries both ways (only against Redisson < 3.21.1).\n");
        md.append("- **S7** delayq's reliable consumer takes Java offers: a nacked value goes back as a normal pending entry that Java's `size`/`contains` see and Java's scheduler and `poll` deliver when due; an acked value leaves nothing.\n");
        md.append("- **S8** delayq's index-backed `remove`/`contains`/`contains_all`/`remove_all`/`offer_unique`/`reschedule`/`cancel` while two Java clients offer, poll, remove and transfer on the same queue; then, step by step after each Java change, the order list entry by entry (bytes included) and the result are what Redisson's algorithm gives on the list it saw, and the timeout set holds exactly the list's entries; last, Java ends the queue (`delete()`, `clear()` or `expire(Duration)`, by row) and delayq's scheduler drops its indexes of it.\n");
        md.append("- **S9** sharded queues (6 shards `NAME:{i}` on a 3-master Cluster, every master serving some) against Java's recipe (JDK `CRC32` of the codec's bytes mod 6, one `RDelayedQueue` per shard): Java producers offer, delayq's scheduler and sharded worker deliver every value exactly once, none early, each from the recipe's shard; delayq's `ShardedQueue` offers, Java's transfer and per-shard consumers take every value exactly once from the recipe's shard; remove by value across languages; delayq's `shard_for` and handles agree with the recipe for every value.\n");
        md.append("- **S10** two delayq processes fire a recurring schedule (every 3 s, 4 occurrences, the value encoded with the row's codec) while their schedulers and Java's `RDelayedQueue` transfer; Java `poll(timeout)` takes each occurrence once, none before its time, none left over.\n");
        md.append("- **S11** delayq's deduplicated offers of one key (`offer_dedup`, a minute's window): a throttled offer keeps the pending entry; Java's `remove(value)` of it makes the next offer a new entry; a debounced offer replaces value and due time, and the new value is moved when due (both schedulers run) and taken by Java's `poll`; after Java took it, the next offer is a new entry again.\n\n");
        md.append("Cells: `PASS`/`FAIL`/`n/a`, then delivery lateness (take time minus due time) as average/max ms, ");
        md.append("`j` measured on Java's side (Java scheduler + Java take), `d` on delayq's. ");
        md.append("Every cell runs delayq's own codec for its row on the Rust side (the suite has no fallback that ");
        md.append("carries Java-encoded bytes), and also checks the exact bytes on Redis.\n");
        int pass = 0;
        int fail = 0;
        int na = 0;
        boolean missing = false;
        for (int a = 2; a < args.length; a++) {
            String version = args[a];
            Path tsv = dir.resolve("results-" + version + ".tsv");
            md.append("\n## Redisson ").append(version).append("\n\n");
            if (!Files.exists(tsv)) {
                md.append("**No results: the suite did not run to the end for this version.**\n");
                missing = true;
                continue;
            }
            Map<String, Map<String, String>> rows = new LinkedHashMap<>();
            List<String> failures = new ArrayList<>();
            for (String line : Files.readAllLines(tsv, StandardCharsets.UTF_8)) {
                String[] f = line.split("\t", -1);
                if (f.length < 8) {
                    continue;
                }
                String row = f[1] + " / " + f[2];
                String status = f[4];
                String cell;
                switch (status) {
                    case "PASS":
                        pass++;
                        cell = "PASS";
                        break;
                    case "FAIL":
                        fail++;
                        cell = "**FAIL**";
                        failures.add("- " + row + " " + f[3] + ": " + f[7].replace("|", "\\|"));
                        break;
                    default:
                        na++;
                        cell = "n/a";
                }
                if (!f[5].equals("-")) {
                    cell += " j " + f[5];
                }
                if (!f[6].equals("-")) {
                    cell += " d " + f[6];
                }
                rows.computeIfAbsent(row, k -> new LinkedHashMap<>()).put(f[3], cell);
            }
            md.append("| codec / value |");
            for (String s : SCENARIOS) {
                md.append(' ').append(s).append(" |");
            }
            md.append("\n|---|");
            for (int i = 0; i < SCENARIOS.length; i++) {
                md.append("---|");
            }
            md.append('\n');
            for (Map.Entry<String, Map<String, String>> e : rows.entrySet()) {
                md.append("| ").append(e.getKey()).append(" |");
                for (String s : SCENARIOS) {
                    md.append(' ').append(e.getValue().getOrDefault(s, "")).append(" |");
                }
                md.append('\n');
            }
            Path notes = dir.resolve("notes-" + version + ".txt");
            if (Files.exists(notes)) {
                List<String> ns = Files.readAllLines(notes, StandardCharsets.UTF_8);
                if (!ns.isEmpty()) {
                    md.append("\nObserved about Redisson ").append(version).append(":\n\n");
                    ns.forEach(n -> md.append("- ").append(n).append('\n'));
                }
            }
            if (!failures.isEmpty()) {
                md.append("\nFailures:\n\n");
                failures.forEach(l -> md.append(l).append('\n'));
            }
        }
        md.append("\nTotal cells: ").append(pass).append(" pass, ").append(fail).append(" fail, ")
                .append(na).append(" n/a.\n");
        Files.writeString(out, md.toString(), StandardCharsets.UTF_8);
        if (fail > 0 || missing || args.length < 3) {
            System.exit(1);
        }
    }
}
