//! The transfer's head window (due entries looked up at the head of the order list, a batch that
//! is exactly the head leaving with one LTRIM) leaves, call after call, exactly the state
//! Redisson's one-LREM-per-entry transfer would: checked against a model of that algorithm on
//! order lists of several shapes.

use crate::common;

use bytes::Bytes;
use delayq::entry::{pack, unpack, EntryFormat};
use delayq::QueueKeys;
use fred::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Redisson's transfer, step by step, on an in-memory copy of the three keys.
struct Model {
    /// The order list, head first.
    order: Vec<Bytes>,
    /// The timeout zset as (score, member).
    zset: Vec<(f64, Bytes)>,
    target: Vec<String>,
}

impl Model {
    fn sort_zset(&mut self) {
        // Redis orders equal scores by member bytes.
        self.zset
            .sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap().then_with(|| a.1.cmp(&b.1)));
    }

    /// One call: the `batch` lowest-scored entries due at `now`, each RPUSHed as its value,
    /// LREMed once from the head of the order list and ZREMed.
    fn transfer(&mut self, now: f64, batch: usize) -> usize {
        self.sort_zset();
        let due: Vec<Bytes> = self
            .zset
            .iter()
            .take_while(|(score, _)| *score <= now)
            .take(batch)
            .map(|(_, entry)| entry.clone())
            .collect();
        for entry in &due {
            self.target.push(value_of(entry));
            if let Some(pos) = self.order.iter().position(|e| e == entry) {
                self.order.remove(pos);
            }
            self.zset.retain(|(_, e)| e != entry);
        }
        due.len()
    }
}

fn value_of(entry: &[u8]) -> String {
    String::from_utf8(unpack(entry, EntryFormat::Current).unwrap().value.to_vec()).unwrap()
}

/// How the order list relates to due order.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// Offered in due order: every batch is the head of the list.
    DueOrdered,
    /// Due order with neighbours swapped up to 30 places.
    NearlyOrdered,
    /// Every other entry due, in order; the rest far in the future.
    Interleaved,
    /// Due times at random.
    Random,
    /// Due order, but some entries are in the order list twice (identical bytes, as two legacy
    /// offers of one value at one time would be); the zset holds them once.
    WithDuplicates,
    /// Random due times and duplicates: the position index meets identical members.
    RandomWithDuplicates,
}

/// Writes `count` entries of `shape` straight into the queue's keys and returns the model.
async fn write_shape(
    client: &Client,
    keys: &QueueKeys,
    shape: Shape,
    count: usize,
    rng: &mut StdRng,
) -> Model {
    let past = (delayq::time::now_ms() as f64) - 3_600_000.0;
    let mut entries: Vec<(f64, Bytes)> = (0..count)
        .map(|i| {
            let score = match shape {
                Shape::Interleaved if i % 2 == 1 => past + 7_200_000.0 + i as f64,
                Shape::Random | Shape::RandomWithDuplicates => {
                    past + rng.random_range(0..1_000_000) as f64
                }
                _ => past + i as f64,
            };
            let entry = Bytes::from(pack(
                &rng.random::<[u8; 8]>(),
                format!("v{i:05}").as_bytes(),
            ));
            (score, entry)
        })
        .collect();
    if let Shape::NearlyOrdered = shape {
        for i in 0..count {
            let j = (i + rng.random_range(0..30)).min(count - 1);
            entries.swap(i, j);
        }
    }
    let mut order: Vec<Bytes> = entries.iter().map(|(_, e)| e.clone()).collect();
    if let Shape::WithDuplicates | Shape::RandomWithDuplicates = shape {
        for i in (0..count).step_by(7).rev() {
            order.insert(i + 1, order[i].clone());
        }
    }
    for chunk in order.chunks(500) {
        let _: i64 = client.rpush(keys.order(), chunk.to_vec()).await.unwrap();
    }
    for chunk in entries.chunks(500) {
        let _: i64 = client
            .zadd(keys.timeout(), None, None, false, false, chunk.to_vec())
            .await
            .unwrap();
    }
    Model {
        order,
        zset: entries,
        target: Vec::new(),
    }
}

async fn assert_same_state(client: &Client, keys: &QueueKeys, model: &mut Model, context: &str) {
    let order: Vec<Bytes> = client.lrange(keys.order(), 0, -1).await.unwrap();
    assert!(order == model.order, "{context}: order list differs");
    model.sort_zset();
    let zset: Vec<Bytes> = client
        .zrange(keys.timeout(), 0, -1, None, false, None, false)
        .await
        .unwrap();
    let expected: Vec<Bytes> = model.zset.iter().map(|(_, e)| e.clone()).collect();
    assert!(zset == expected, "{context}: timeout zset differs");
    let target: Vec<String> = client.lrange(keys.target(), 0, -1).await.unwrap();
    assert_eq!(target, model.target, "{context}: target list differs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_leaves_redissons_state_whatever_the_shape() {
    let redis = common::TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let mut rng = StdRng::seed_from_u64(0x6465_6c61_7971);
    let shapes = [
        Shape::DueOrdered,
        Shape::NearlyOrdered,
        Shape::Interleaved,
        Shape::Random,
        Shape::WithDuplicates,
        Shape::RandomWithDuplicates,
    ];
    for shape in shapes {
        // 1,500 entries: past the default index threshold (1,000), so the index is used
        // whenever the head window does not hold the whole batch.
        let name = common::unique_name("head");
        let queue = crate::common::queue::manual_queue(&client, &name).await;
        let keys = queue.keys().clone();
        let mut model = write_shape(&client, &keys, shape, 1_500, &mut rng).await;

        let (mut at_head, mut by_index, mut calls) = (0, 0, 0);
        loop {
            let batch = rng.random_range(1..=150);
            let outcome = queue.admin().transfer_due(batch).await.unwrap();
            // A call moves its whole batch unless its time runs out first (the position index
            // is built a few ms of each call's time): then the earliest part of it, at least one.
            assert!(outcome.moved as usize <= batch, "{shape:?} call {calls}");
            let expected = model.transfer(delayq::time::now_ms() as f64, outcome.moved as usize);
            calls += 1;
            assert_eq!(outcome.moved as usize, expected, "{shape:?} call {calls}");
            assert_same_state(
                &client,
                &keys,
                &mut model,
                &format!("{shape:?} call {calls}"),
            )
            .await;
            at_head += outcome.found_at_head;
            by_index += outcome.found_by_index;
            if outcome.moved == 0 {
                break;
            }
        }
        let moved = model.target.len() as u64;
        match shape {
            Shape::DueOrdered => {
                // All from the head; the index was never needed, so never built.
                assert_eq!(at_head, moved, "{shape:?}");
                let index: i64 = client.exists(keys.index()).await.unwrap();
                assert_eq!(index, 0, "{shape:?}: index built for nothing");
            }
            Shape::WithDuplicates => {
                // The second copies stay behind at the head (as with Redisson), so the window
                // finds fewer as they pile up; what matters here is the state checked above.
                assert!(at_head > moved / 2, "{shape:?}: {at_head} of {moved}");
            }
            Shape::NearlyOrdered => {
                assert!(at_head > moved * 9 / 10, "{shape:?}: {at_head} of {moved}");
            }
            Shape::Interleaved => {
                // Entries that are not due pile up at the head, so later batches are found
                // through the index (until the list is shorter than the index threshold).
                assert!(
                    at_head > 0 && by_index > 0,
                    "{shape:?}: {at_head}/{by_index}"
                );
            }
            Shape::RandomWithDuplicates => {
                // Identical members make the index rebuild and check every position; most
                // entries are still moved, all in Redisson's end state (checked above).
                assert_eq!(moved, 1_500, "{shape:?}");
            }
            Shape::Random => {
                // The index serves while the list holds at least 1,000 entries (the first 500).
                assert!(by_index >= 400, "{shape:?}: {by_index} of {moved}");
            }
        }
        let _: i64 = client
            .del(vec![
                keys.order(),
                keys.timeout(),
                keys.target(),
                keys.index(),
            ])
            .await
            .unwrap();
    }
}
