//! [`Priority`]: how a worker over several queues chooses the queue of its next take, and the
//! [`Picker`] that applies it to the queues found holding values.

use crate::{Error, Result};

/// How a worker over several queues ([`WorkerBuilder::with_queue`](super::WorkerBuilder::with_queue))
/// chooses the queue of its next value; set with
/// [`WorkerBuilder::priority`](super::WorkerBuilder::priority). The queues are numbered in the
/// order they were given: the one the worker was made from first, then each `with_queue`.
///
/// Only queues holding ready values take part, so no queue's turn is wasted on an empty one,
/// and a paused queue takes no part at all.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Priority {
    /// The queues with values in turn, one value each (weights all 1). The default.
    #[default]
    Turns,
    /// In the order given: a value is taken from a queue only when no queue before it has
    /// ready values (each take looks at the lengths of the queues before the one it takes
    /// from, at most one round trip for all of them). A busy first queue starves the others,
    /// as Asynq's and Sidekiq's strict order do.
    Strict,
    /// By weight, one weight per queue in the order given (each at least 1): of every
    /// `sum` values taken while all the queues hold values, a queue with weight `w` gets `w`,
    /// spread out (smooth weighted round robin, as nginx's upstreams). Asynq and Sidekiq pick
    /// the queue at random with probability `w / sum`: the same shares over time, without the
    /// randomness in the short run.
    Weighted(Vec<u32>),
}

impl Priority {
    /// [`Priority::Weighted`] with `weights`, one per queue in the order given.
    pub fn weighted(weights: impl IntoIterator<Item = u32>) -> Priority {
        Priority::Weighted(weights.into_iter().collect())
    }

    /// Checks the priority against a worker over `queues` queues.
    pub(super) fn validate(&self, queues: usize) -> Result<()> {
        let Priority::Weighted(weights) = self else {
            return Ok(());
        };
        if weights.len() != queues {
            return Err(Error::InvalidConfig(format!(
                "the worker has {queues} queue(s) and {} weight(s): give one weight per queue, \
                 in the queues' order",
                weights.len()
            )));
        }
        if weights.contains(&0) {
            return Err(Error::InvalidConfig(
                "a queue's weight must be at least 1".into(),
            ));
        }
        Ok(())
    }
}

/// Chooses among the queues that hold values, by a [`Priority`].
#[derive(Debug)]
pub(super) struct Picker {
    strict: bool,
    weights: Vec<i64>,
    /// Smooth weighted round robin: each pick adds every candidate's weight to its credit, and
    /// the one with the most credit (the first of equals) is picked and pays the candidates'
    /// total weight.
    credit: Vec<i64>,
}

impl Picker {
    /// A picker over `queues` queues (the priority was validated against them).
    pub(super) fn new(priority: &Priority, queues: usize) -> Picker {
        let weights = match priority {
            Priority::Weighted(weights) => weights.iter().map(|&w| i64::from(w)).collect(),
            Priority::Turns | Priority::Strict => vec![1; queues],
        };
        Picker {
            strict: matches!(priority, Priority::Strict),
            weights,
            credit: vec![0; queues],
        }
    }

    /// Whether the queues are served in strict order.
    pub(super) fn strict(&self) -> bool {
        self.strict
    }

    /// The queue to take from next among the candidates (`candidate[i]`: queue `i` holds values
    /// and may be taken from), or `None` when there is none.
    pub(super) fn pick(&mut self, candidate: &[bool]) -> Option<usize> {
        if self.strict {
            return candidate.iter().position(|&c| c);
        }
        let mut total = 0;
        let mut best: Option<usize> = None;
        for (i, _) in candidate.iter().enumerate().filter(|(_, &c)| c) {
            total += self.weights[i];
            self.credit[i] += self.weights[i];
            if best.is_none_or(|b| self.credit[i] > self.credit[b]) {
                best = Some(i);
            }
        }
        let best = best?;
        self.credit[best] -= total;
        Some(best)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shares(picker: &mut Picker, candidate: &[bool], picks: usize) -> Vec<usize> {
        let mut got = vec![0; candidate.len()];
        for _ in 0..picks {
            got[picker.pick(candidate).unwrap()] += 1;
        }
        got
    }

    #[test]
    fn weights_give_exact_shares_spread_out() {
        let mut picker = Picker::new(&Priority::weighted([6, 3, 1]), 3);
        assert_eq!(shares(&mut picker, &[true; 3], 1_000), [600, 300, 100]);
        // Within any 10 picks in a row, every queue gets its weight (not 6 of the first in a row).
        let order: Vec<usize> = (0..10).map(|_| picker.pick(&[true; 3]).unwrap()).collect();
        assert_eq!(order.iter().filter(|&&q| q == 0).count(), 6);
        assert!(
            order.windows(4).all(|w| w.iter().any(|&q| q != 0)),
            "{order:?}"
        );
    }

    #[test]
    fn queues_without_values_take_no_part() {
        let mut picker = Picker::new(&Priority::weighted([6, 3, 1]), 3);
        assert_eq!(
            shares(&mut picker, &[false, true, true], 400),
            [0, 300, 100]
        );
        assert_eq!(picker.pick(&[false; 3]), None);
        let mut turns = Picker::new(&Priority::Turns, 3);
        assert_eq!(shares(&mut turns, &[true, false, true], 10), [5, 0, 5]);
    }

    #[test]
    fn strict_takes_the_first_queue_with_values() {
        let mut picker = Picker::new(&Priority::Strict, 3);
        assert!(picker.strict());
        assert_eq!(picker.pick(&[true, true, true]), Some(0));
        assert_eq!(picker.pick(&[false, true, true]), Some(1));
        assert_eq!(picker.pick(&[false, false, true]), Some(2));
        assert_eq!(picker.pick(&[false, false, false]), None);
    }

    #[test]
    fn weights_are_checked_against_the_queues() {
        assert!(Priority::weighted([6, 3]).validate(3).is_err());
        assert!(Priority::weighted([6, 0, 1]).validate(3).is_err());
        assert!(Priority::weighted([6, 3, 1]).validate(3).is_ok());
        assert!(Priority::Strict.validate(5).is_ok());
    }
}
