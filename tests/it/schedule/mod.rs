//! Recurring schedules: the occurrence math across daylight-saving transitions (a given clock),
//! the missed-occurrence policies, exactly-once firing by several contending firers (one
//! killed over and over, one with its clock ahead), and firing hosted by a scheduler group.

mod dst;
mod exactly_once;
mod hosted;
mod ids;
mod missed;
mod scale;
mod typed;

use crate::common::queue::zset;
use delayq::fred::clients::Client;
use delayq::QueueKeys;

/// The due times of every pending entry of `queue`, ascending: the occurrences offered.
async fn offered(client: &Client, queue: &str) -> Vec<i64> {
    let mut due: Vec<i64> = zset(client, QueueKeys::new(queue).timeout())
        .await
        .into_iter()
        .map(|(_, score)| score)
        .collect();
    due.sort_unstable();
    due
}

/// Epoch ms of an RFC 3339 instant.
fn at(text: &str) -> i64 {
    let (date, time) = text.split_once('T').expect("date T time");
    let mut d = date.split('-').map(|p| p.parse::<i64>().unwrap());
    let (y, m, day) = (d.next().unwrap(), d.next().unwrap(), d.next().unwrap());
    let time = time.trim_end_matches('Z');
    let mut t = time.split(':').map(|p| p.parse::<i64>().unwrap());
    let (h, min, s) = (t.next().unwrap(), t.next().unwrap(), t.next().unwrap_or(0));
    // Days since the epoch of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    ((days * 24 + h) * 60 + min) * 60_000 + s * 1000
}

#[test]
fn instants_read_as_epoch_ms() {
    assert_eq!(at("1970-01-01T00:00:00Z"), 0);
    assert_eq!(at("2026-03-29T01:00:00Z"), 1_774_746_000_000);
}
