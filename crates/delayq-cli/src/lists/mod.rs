//! A queue's lists as the dashboard and the CLI read them and act on their entries, one home
//! for both: `rows.rs`, pages of rows with bounded previews (the dashboard's API answers them,
//! `delayq dead|inflight|ready list` prints them); `dead.rs`, a dead letter found by its id and
//! retried or deleted. [`locate`] finds an entry near where a page showed it.

pub(crate) mod dead;
pub(crate) mod rows;

/// Entries one search (or one look for an entry) reads at most.
pub(crate) const WINDOW: usize = 1_000;
/// Entries read by one command of a search.
pub(crate) const STEP: usize = 100;

/// The first member from position `start` for which `wanted` holds, with its position, among
/// at most [`WINDOW`] read by `page(offset, count)` in steps of [`STEP`].
pub(crate) async fn locate<T, F, Fut>(
    start: usize,
    mut page: F,
    wanted: impl Fn(&T) -> bool,
) -> anyhow::Result<Option<(usize, T)>>
where
    F: FnMut(usize, usize) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Vec<T>>>,
{
    let mut at = start;
    while at < start + WINDOW {
        let read = page(at, STEP).await?;
        let got = read.len();
        if let Some((i, member)) = read.into_iter().enumerate().find(|(_, m)| wanted(m)) {
            return Ok(Some((at + i, member)));
        }
        if got < STEP {
            break;
        }
        at += got;
    }
    Ok(None)
}
