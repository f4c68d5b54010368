//! A wall-clock timer precise to well under a millisecond: a thread waits on a condition
//! variable until the wake-up time (in epoch microseconds) and then notifies the scheduler's
//! task. Tokio's timer wheel rounds every sleep up to the next millisecond and more, so a value
//! due at `T` would move at `T + 1..2 ms`; this wakes within a few tens of microseconds of `T`.

use crate::time::now_us;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::Notify;

#[derive(Debug, Default)]
struct State {
    wake_at_us: Option<i64>,
    stop: bool,
}

type Shared = Arc<(Mutex<State>, Condvar)>;

/// Owns the timer thread; dropping it stops the thread.
#[derive(Debug)]
pub(super) struct PreciseTimer {
    shared: Shared,
    thread: Option<JoinHandle<()>>,
}

impl PreciseTimer {
    /// Starts the thread; it calls `fired.notify_one()` each time a wake-up time is reached.
    pub(super) fn start(fired: Arc<Notify>) -> std::io::Result<PreciseTimer> {
        let shared: Shared = Arc::default();
        let thread_shared = shared.clone();
        let thread = std::thread::Builder::new()
            .name("delayq-timer".into())
            .spawn(move || run(&thread_shared, &fired))?;
        Ok(PreciseTimer {
            shared,
            thread: Some(thread),
        })
    }

    /// Sets (or clears) the next wake-up time, epoch microseconds.
    pub(super) fn set(&self, wake_at_us: Option<i64>) {
        let (lock, condvar) = &*self.shared;
        let mut state = lock.lock().unwrap_or_else(PoisonError::into_inner);
        if state.wake_at_us != wake_at_us {
            state.wake_at_us = wake_at_us;
            condvar.notify_one();
        }
    }
}

impl Drop for PreciseTimer {
    fn drop(&mut self) {
        {
            let (lock, condvar) = &*self.shared;
            lock.lock().unwrap_or_else(PoisonError::into_inner).stop = true;
            condvar.notify_one();
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn run(shared: &Shared, fired: &Notify) {
    let (lock, condvar) = &**shared;
    let mut state = lock.lock().unwrap_or_else(PoisonError::into_inner);
    loop {
        if state.stop {
            return;
        }
        state = match state.wake_at_us {
            None => condvar.wait(state).unwrap_or_else(PoisonError::into_inner),
            Some(at) => {
                let left = at.saturating_sub(now_us());
                if left <= 0 {
                    state.wake_at_us = None;
                    fired.notify_one();
                    continue;
                }
                let wait = Duration::from_micros(u64::try_from(left).unwrap_or(u64::MAX));
                condvar
                    .wait_timeout(state, wait)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0
            }
        };
    }
}

/// Sleeps until `at`, or forever without one.
pub(super) async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn wakes_within_a_millisecond_of_the_time_asked() {
        let fired = Arc::new(Notify::new());
        let timer = PreciseTimer::start(fired.clone()).unwrap();
        let mut late = Vec::new();
        for _ in 0..20 {
            let at = now_us() + 3_000;
            timer.set(Some(at));
            fired.notified().await;
            let now = now_us();
            assert!(now >= at, "woke {} us early", at - now);
            late.push(now - at);
        }
        late.sort();
        // The median, not the maximum: a loaded machine may delay a thread now and then.
        assert!(late[10] < 1_000, "median lateness {} us", late[10]);
        timer.set(None);
    }
}
