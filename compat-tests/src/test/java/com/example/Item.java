package com.example;

import java.util.Objects;

/** A line of an order event. */
public class Item {
    private String sku;
    private int qty;

    public Item() {}

    public Item(String sku, int qty) {
        this.sku = sku;
        this.qty = qty;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Item other && Objects.equals(other.sku, sku) && other.qty == qty;
    }

    @Override
    public int hashCode() { return Objects.hash(sku, qty); }

    @Override
    public String toString() { return "Item{" + sku + "x" + qty + "}"; }
}
