//! What one firing does with one schedule: which occurrences it offers (the late ones, the
//! missed ones its policy keeps, those within the lead) and where the schedule goes next.

use super::spec::{Missed, ScheduleInfo};
use crate::Result;

/// The occurrences to offer and the next occurrence after them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// The next occurrence the schedule stood at (the compare-and-set).
    pub(crate) from_ms: i64,
    /// The occurrences to offer, ascending.
    pub(crate) occurrences: Vec<i64>,
    /// The schedule's next occurrence after them; `None`: it has ended.
    pub(crate) then_ms: Option<i64>,
    /// What the missed-occurrence policy decided, when occurrences were missed.
    pub(crate) missed: Option<MissedDecision>,
}

/// The missed occurrences a firing found, and what its policy kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MissedDecision {
    pub(crate) policy: Missed,
    /// The first missed occurrence.
    pub(crate) first_ms: i64,
    /// The latest missed occurrence.
    pub(crate) latest_ms: i64,
    /// How many of them fire.
    pub(crate) fired: usize,
    /// Older ones beyond the cap did not fire.
    pub(crate) capped: bool,
}

/// The instants a firing goes by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Horizon {
    /// Occurrences up to this fire now (now + lead).
    pub(crate) fire_until_ms: i64,
    /// Occurrences before this are missed (now - missed_after).
    pub(crate) missed_before_ms: i64,
    /// The most occurrences one call offers (the rest in the next).
    pub(crate) most: usize,
}

/// The plan for `info` at `horizon`; `None` when nothing is due (or it is paused or ended).
pub(crate) fn plan(info: &ScheduleInfo, horizon: Horizon) -> Result<Option<Plan>> {
    let schedule = &info.schedule;
    let Some(next) = info.next_ms else {
        return Ok(None);
    };
    if schedule.paused || next > horizon.fire_until_ms {
        return Ok(None);
    }
    let compiled = schedule.compiled()?;
    let mut occurrences = Vec::new();
    let mut from = Some(next);
    let mut missed = None;
    let cut = horizon.missed_before_ms;
    if next < cut {
        let latest_ms = compiled.before(cut, next).unwrap_or(next);
        let mut capped = false;
        match schedule.missed {
            Missed::Skip => {}
            Missed::Latest => occurrences.push(latest_ms),
            Missed::All { cap } => {
                let mut before = cut;
                while occurrences.len() < cap as usize {
                    match compiled.before(before, next) {
                        Some(ms) => {
                            occurrences.push(ms);
                            before = ms;
                        }
                        None => break,
                    }
                }
                capped = compiled.before(before, next).is_some();
                occurrences.reverse();
            }
        }
        missed = Some(MissedDecision {
            policy: schedule.missed,
            first_ms: next,
            latest_ms,
            fired: occurrences.len(),
            capped,
        });
        from = schedule.within(compiled.at_or_after(cut));
    }
    while let Some(ms) = from {
        if ms > horizon.fire_until_ms || occurrences.len() >= horizon.most.max(1) {
            break;
        }
        occurrences.push(ms);
        from = schedule.within(compiled.after(ms));
    }
    Ok(Some(Plan {
        from_ms: next,
        occurrences,
        then_ms: from,
        missed,
    }))
}
