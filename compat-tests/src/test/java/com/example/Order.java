package com.example;

import java.util.Objects;

/** The POJO used across the suite; delayq's side names it {@code com.example.Order} too. */
public class Order {
    private long id;
    private String sku;

    public Order() {}

    public Order(long id, String sku) {
        this.id = id;
        this.sku = sku;
    }

    public long getId() { return id; }
    public void setId(long id) { this.id = id; }
    public String getSku() { return sku; }
    public void setSku(String sku) { this.sku = sku; }

    @Override
    public boolean equals(Object o) {
        return o instanceof Order other && other.id == id && Objects.equals(other.sku, sku);
    }

    @Override
    public int hashCode() { return Objects.hash(id, sku); }

    @Override
    public String toString() { return "Order{id=" + id + ", sku=" + sku + "}"; }
}
