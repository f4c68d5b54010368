//! Bad and foreign input: malformed entries and wrong-type keys on Redis, entries Redisson
//! packed, random and damaged bytes through every decoder, bad input injected into live queues,
//! values past the server's size limit.

mod bad_input;
mod entry_fixtures;
mod fuzz_decode;
mod fuzz_live;
mod too_large;
