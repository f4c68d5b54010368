//! Tells when a queue the worker serves is paused, and when it is resumed: the worker cannot
//! see it otherwise (a paused queue's due values stay pending, so the worker just looks idle).

use crate::text_codec::TextCodec;
use delayq::DelayedQueue;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How often each queue's pause flag is read.
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// The task that watches the queues' pause flags; [`shutdown`](Self::shutdown) stops it.
pub(crate) struct PauseWatch {
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl PauseWatch {
    pub(crate) fn start(queues: Vec<DelayedQueue<TextCodec>>) -> Self {
        let stop = CancellationToken::new();
        let task = tokio::spawn(watch(queues, stop.clone()));
        PauseWatch { stop, task }
    }

    pub(crate) async fn shutdown(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

/// Logs each queue's pause state once when it is first seen paused, once when it is resumed.
async fn watch(queues: Vec<DelayedQueue<TextCodec>>, stop: CancellationToken) {
    let mut paused = vec![false; queues.len()];
    let look = async {
        loop {
            for (queue, was_paused) in queues.iter().zip(paused.iter_mut()) {
                match queue.inspect().is_paused().await {
                    Ok(true) if !*was_paused => tracing::info!(
                        queue = queue.name(),
                        "queue is paused: its due values stay pending until `delayq resume`"
                    ),
                    Ok(false) if *was_paused => {
                        tracing::info!(queue = queue.name(), "queue resumed")
                    }
                    Ok(_) => continue,
                    // The worker's takes report an unreachable Redis already.
                    Err(err) => {
                        tracing::debug!(queue = queue.name(), error = %err, "could not read the pause flag");
                        continue;
                    }
                }
                *was_paused = !*was_paused;
            }
            tokio::time::sleep(CHECK_EVERY).await;
        }
    };
    tokio::select! {
        () = look => {}
        () = stop.cancelled() => {}
    }
}
