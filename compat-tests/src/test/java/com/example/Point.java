package com.example;

import java.util.List;

/** A Java record (Kryo's RecordSerializer); delayq's side uses Kryo5Codec::record. */
public record Point(int x, String label, List<String> tags) {}
