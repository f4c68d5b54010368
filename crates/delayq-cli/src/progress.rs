//! Progress of long work on stderr: a line rewritten in place for a person at a terminal, a
//! log line now and then (every 10 % or 5 s) for a file or a pipe. Work of fewer than
//! [`QUIET_BELOW`] items says nothing.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// Work smaller than this is done before anyone would read a progress line.
pub(crate) const QUIET_BELOW: u64 = 2_000;

/// Reports `done` of `total` for one task.
pub(crate) struct Progress {
    quiet: bool,
    what: &'static str,
    total: u64,
    terminal: bool,
    started: Instant,
    last_line: Instant,
    last_done: u64,
}

impl Progress {
    pub(crate) fn new(what: &'static str, total: u64) -> Progress {
        let now = Instant::now();
        Progress {
            quiet: total < QUIET_BELOW,
            what,
            total,
            terminal: std::io::stderr().is_terminal(),
            started: now,
            last_line: now,
            last_done: 0,
        }
    }

    /// `done` of the total are done now.
    pub(crate) fn update(&mut self, done: u64) {
        if self.quiet {
            return;
        }
        let mut err = std::io::stderr().lock();
        if self.terminal {
            let percent = done * 100 / self.total.max(1);
            let _ = write!(err, "\r{} {done} of {} ({percent}%)", self.what, self.total);
            let _ = err.flush();
            return;
        }
        let step = (self.total / 10).max(1);
        if done / step > self.last_done / step || self.last_line.elapsed() >= Duration::from_secs(5)
        {
            let _ = writeln!(err, "delayq: {} {done} of {}", self.what, self.total);
            self.last_line = Instant::now();
            self.last_done = done;
        }
    }

    /// The work ended with `done` done.
    pub(crate) fn finish(self, done: u64) {
        if self.quiet {
            return;
        }
        let mut err = std::io::stderr().lock();
        let took = self.started.elapsed().as_secs_f64();
        if self.terminal {
            let _ = writeln!(
                err,
                "\r{} {done} of {} in {took:.1} s",
                self.what, self.total
            );
        } else {
            let _ = writeln!(
                err,
                "delayq: {} {done} of {} in {took:.1} s",
                self.what, self.total
            );
        }
    }
}
