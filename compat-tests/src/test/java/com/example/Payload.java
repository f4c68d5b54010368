package com.example;

import java.math.BigInteger;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;

/**
 * The Java types only Kryo5Codec carries well: {@code of(i)} is the i-th test value;
 * delayq's peer builds the same.
 */
public class Payload {
    private BigInteger big;
    private Instant at;
    private OffsetDateTime odt;
    private ZonedDateTime zdt;
    private Duration ttl;
    private ZoneId zone;
    private LocalDate day;
    private LocalTime time;
    private Timestamp stamp;
    private int[] codes;
    private String[] names;
    private TreeMap<String, Long> sorted;
    private List<String> frozen;
    private Optional<String> note;
    private Point point;
    private OrderStatus status;

    public static Payload of(int i) {
        Payload p = new Payload();
        p.big = new BigInteger("123456789012345678901234567890").add(BigInteger.valueOf(i));
        p.at = Instant.ofEpochSecond(1767225600L + i, i);
        p.odt = OffsetDateTime.of(2026, 1, 1, 0, 0, i % 60, i, ZoneOffset.ofHours(2));
        p.zdt = ZonedDateTime.of(LocalDateTime.of(2026, 7, 1, 8, 0).plusSeconds(i), ZoneId.of("Europe/Paris"));
        p.ttl = Duration.ofSeconds(i, 5);
        p.zone = ZoneId.of("Europe/Paris");
        p.day = LocalDate.of(2026, 1, 1).plusDays(i);
        p.time = LocalTime.of(12, i % 60);
        p.stamp = new Timestamp(1767225600123L + i);
        p.codes = new int[] {i, -i};
        p.names = new String[] {"n" + i, null};
        p.sorted = new TreeMap<>();
        p.sorted.put("a", (long) i);
        p.sorted.put("b", (long) -i);
        p.frozen = List.of("f" + i);
        p.note = i % 2 == 0 ? Optional.of("n" + i) : Optional.empty();
        p.point = new Point(i, "p" + i, new ArrayList<>(List.of("t")));
        p.status = OrderStatus.values()[i % 3];
        return p;
    }

    /** The i this value was made from. */
    public int index() { return ttl.getSeconds() > Integer.MAX_VALUE ? -1 : (int) ttl.getSeconds(); }

    @Override
    public boolean equals(Object o) {
        return o instanceof Payload p && Objects.equals(p.big, big) && Objects.equals(p.at, at) && Objects.equals(p.odt, odt)
                && Objects.equals(p.zdt, zdt) && Objects.equals(p.ttl, ttl) && Objects.equals(p.zone, zone)
                && Objects.equals(p.day, day) && Objects.equals(p.time, time) && Objects.equals(p.stamp, stamp)
                && Arrays.equals(p.codes, codes) && Arrays.equals(p.names, names) && Objects.equals(p.sorted, sorted)
                && Objects.equals(p.frozen, frozen) && Objects.equals(p.note, note) && Objects.equals(p.point, point)
                && p.status == status;
    }

    @Override
    public int hashCode() { return Objects.hash(big); }

    @Override
    public String toString() { return "Payload(" + index() + ")"; }
}
