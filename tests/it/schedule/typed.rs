//! The schedules door typed by the queue's codec: values go in and come back as the codec's
//! values, are stored as its bytes (what Java reads), and a stored value the codec cannot read
//! is an error of the read, not a wrong value.

use crate::common::queue::{bytes_queue, connect, manual_queue, manual_queue_with};
use crate::common::{unique_name, TestRedis};
use delayq::codec::{Codec, LongCodec};
use delayq::time::now_ms;
use delayq::{EntryFormat, Error, FiringConfig, QueueOptions, Recurrence, Schedule};
use std::time::Duration;

#[tokio::test]
async fn values_go_in_and_come_back_typed_stored_as_the_codecs_bytes() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("typed");
    let queue = manual_queue_with(&client, &name, LongCodec, EntryFormat::Current).await;
    let every = Recurrence::every(Duration::from_secs(60)).unwrap();
    let start = now_ms() - 1_000;
    let set = queue
        .schedules()
        .set(Schedule::new("n", every, 42_i64).start_ms(start))
        .await
        .unwrap();
    assert_eq!(set.schedule.value, 42);
    let read = queue.schedules().get("n").await.unwrap().expect("stored");
    assert_eq!(read.schedule.value, 42);
    assert_eq!(
        queue.schedules().list().await.unwrap()[0].schedule.value,
        42
    );
    // Stored as the codec's bytes: the same schedule read as bytes.
    let raw = bytes_queue(&client, name.as_str(), QueueOptions::default()).await;
    let stored = raw.schedules().get("n").await.unwrap().expect("stored");
    assert_eq!(stored.schedule.value, LongCodec.encode(&42).unwrap());
    // Fired, the occurrence is the codec's value on the queue.
    let config = FiringConfig::default().with_lead(Duration::ZERO);
    let tally = queue.schedules().fire_due(start, &config).await.unwrap();
    assert_eq!(tally.offered, 1, "{tally:?}");
    let pending = queue.inspect().pending(0).await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(*pending[0].value.as_ref().unwrap(), 42);
    assert_eq!(queue.admin().transfer_due(10).await.unwrap().moved, 1);
    let consumer = queue.consumer().await.unwrap();
    assert_eq!(consumer.poll(Duration::ZERO).await.unwrap(), Some(42));
}

#[tokio::test]
async fn a_value_the_codec_cannot_read_is_an_error_of_the_read() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("typed-bad");
    let raw = bytes_queue(&client, name.as_str(), QueueOptions::default()).await;
    let every = Recurrence::every(Duration::from_secs(60)).unwrap();
    raw.schedules()
        .set(Schedule::new("bad", every, vec![0xff, 0xfe]))
        .await
        .unwrap();
    let strings = manual_queue(&client, &name).await;
    let err = strings.schedules().get("bad").await.unwrap_err();
    assert!(matches!(err, Error::Decode { .. }), "{err:?}");
    assert!(strings.schedules().list().await.is_err());
    // The schedule is untouched: still there, still bytes.
    let stored = raw.schedules().get("bad").await.unwrap().expect("kept");
    assert_eq!(stored.schedule.value, [0xff, 0xfe]);
}
