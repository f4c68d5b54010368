package com.example;

/** The order event's status; delayq's side is a Rust enum renamed to this class. */
public enum OrderStatus { NEW, PAID, EXPIRED }
