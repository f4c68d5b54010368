package com.example;

import java.math.BigDecimal;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.Date;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * The payload of a real order-timeout message, for every codec (the Jackson ones
 * with JavaTimeModule). {@code of(i)} is the i-th test value; delayq's peer builds the same.
 */
public class OrderEvent {
    private Long orderId;
    private BigDecimal amount;
    private OrderStatus status;
    private LocalDateTime createdAt;
    private Date expireAt;
    private List<Item> items;
    private Set<String> tags;

    public OrderEvent() {}

    public static OrderEvent of(int i) {
        OrderEvent e = new OrderEvent();
        e.orderId = 1000L + i;
        e.amount = BigDecimal.valueOf(i * 100L + 25, 2);
        e.status = OrderStatus.values()[i % 3];
        e.createdAt = LocalDateTime.of(2026, 1, 1, 12, 0).plusMinutes(i);
        e.expireAt = new Date(1767225600123L + i);
        e.items = new ArrayList<>(List.of(new Item("sku-" + i, i + 1)));
        e.tags = new HashSet<>(List.of("t" + i));
        return e;
    }

    public Long getOrderId() { return orderId; }

    @Override
    public boolean equals(Object o) {
        return o instanceof OrderEvent e && Objects.equals(e.orderId, orderId) && Objects.equals(e.amount, amount)
                && e.status == status && Objects.equals(e.createdAt, createdAt) && Objects.equals(e.expireAt, expireAt)
                && Objects.equals(e.items, items) && Objects.equals(e.tags, tags);
    }

    @Override
    public int hashCode() { return Objects.hash(orderId); }

    @Override
    public String toString() {
        return "OrderEvent{" + orderId + "," + amount + "," + status + "," + createdAt + "," + expireAt.getTime() + ","
                + items + "," + tags + "}";
    }
}
