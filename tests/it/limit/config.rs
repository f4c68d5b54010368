//! Storing, reading and clearing a queue's limits; refusing what cannot work.

use super::setup;
use delayq::limit::{KeyRule, Limits, Rate};
use delayq::Error;
use fred::interfaces::{HashesInterface, KeysInterface, ListInterface};
use std::time::Duration;

fn full() -> Limits {
    Limits::default()
        .with_concurrency(3)
        .with_rate(Rate::new(20, Duration::from_secs(1)).unwrap())
        .with_key(KeyRule::Regex("customer=(\\w+)".into()))
        .with_key_concurrency(1)
        .with_key_rate("5/250ms".parse().unwrap())
}

#[tokio::test]
async fn limits_are_stored_read_back_and_cleared() {
    let (_redis, client, queue) = setup("limits-store").await;
    assert_eq!(queue.limits().get().await.unwrap(), None);
    assert!(!queue.limits().clear().await.unwrap());

    queue.limits().set(&full()).await.unwrap();
    assert_eq!(queue.limits().get().await.unwrap(), Some(full()));
    let key = queue.keys().limits();
    assert_eq!(key, format!("delayq_limits:{{{}}}", queue.name()));
    let concurrency: Option<String> = client.hget(&key, "concurrency").await.unwrap();
    assert_eq!(concurrency.as_deref(), Some("3"));

    // A smaller set replaces the whole hash.
    let only_rate = Limits::default().with_rate("7/1m".parse().unwrap());
    queue.limits().set(&only_rate).await.unwrap();
    assert_eq!(queue.limits().get().await.unwrap(), Some(only_rate));

    assert!(queue.limits().clear().await.unwrap());
    assert_eq!(queue.limits().get().await.unwrap(), None);
    assert!(!client.exists::<bool, _>(&key).await.unwrap());
    let usage = queue.limits().usage().await.unwrap();
    assert_eq!((usage.slots_held, usage.values_held), (0, 0));
}

#[tokio::test]
async fn limits_that_cannot_work_are_refused_and_nothing_is_stored() {
    let (_redis, _client, queue) = setup("limits-refused").await;
    for bad in [
        Limits::default().with_concurrency(0),
        Limits::default().with_key_concurrency(0),
        Limits::default().with_key(KeyRule::Regex("(unclosed".into())),
        Limits::default().with_key(KeyRule::JsonPointer("no-slash".into())),
        Limits::default().with_rate(Rate {
            count: 0,
            period: Duration::from_secs(1),
        }),
    ] {
        let err = queue.limits().set(&bad).await.unwrap_err();
        assert!(matches!(err, Error::InvalidLimits(_)), "{bad:?}: {err}");
        assert_eq!(queue.limits().get().await.unwrap(), None, "{bad:?}");
    }
}

#[tokio::test]
async fn a_hand_edited_or_wrong_type_hash_is_a_clear_error() {
    let (_redis, client, queue) = setup("limits-hand-edited").await;
    let key = queue.keys().limits();
    let _: () = client.hset(&key, ("concurrency", "lots")).await.unwrap();
    let err = queue.limits().get().await.unwrap_err().to_string();
    assert!(err.contains("concurrency") && err.contains("lots"), "{err}");

    let _: () = client.del(&key).await.unwrap();
    let _: () = client.hset(&key, ("colour", "red")).await.unwrap();
    let err = queue.limits().get().await.unwrap_err().to_string();
    assert!(err.contains("colour"), "{err}");

    let _: () = client.del(&key).await.unwrap();
    let _: () = client.rpush(&key, "a list").await.unwrap();
    let err = queue.limits().get().await.unwrap_err();
    assert!(matches!(err, Error::WrongType { .. }), "{err}");
    let err = queue.limits().set(&full()).await.unwrap_err();
    assert!(matches!(err, Error::WrongType { .. }), "{err}");
}
