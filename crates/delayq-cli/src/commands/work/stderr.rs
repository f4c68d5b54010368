//! A command's stderr: passed on to the worker's own stderr as it comes (the worker's log), and
//! its last `--keep-stderr` bytes kept, so that a failed attempt's error says what the command
//! printed (`sh exited with exit status: 3; stderr: SMTP 550 ...`). Its stdout is never kept.

use std::io::Write;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::process::ChildStderr;

/// How long the worker reads a command's stderr after the command exited, for what is still in
/// the pipe: a process the command left running may hold the pipe open, and its later output
/// is lost (its writes fail with EPIPE) once the worker stops reading.
pub(crate) const DRAIN: Duration = Duration::from_millis(500);

/// Bytes read from the pipe at once.
const CHUNK: usize = 8 * 1024;

/// The end of one command's stderr, read from its pipe.
pub(crate) struct StderrTail {
    /// The pipe, until its end (or a read error).
    pipe: Option<ChildStderr>,
    /// The last bytes read, at most `keep`.
    kept: Vec<u8>,
    /// How many bytes to keep.
    keep: usize,
    /// Bytes read in all.
    total: u64,
}

impl StderrTail {
    /// Reads `pipe` (none: the command's stderr is not piped), keeping its last `keep` bytes.
    pub(crate) fn new(pipe: Option<ChildStderr>, keep: usize) -> Self {
        StderrTail {
            pipe,
            kept: Vec::with_capacity(keep.min(CHUNK)),
            keep,
            total: 0,
        }
    }

    /// Whether the pipe is still open.
    pub(crate) fn is_open(&self) -> bool {
        self.pipe.is_some()
    }

    /// Reads what the pipe has next, passing it on to the worker's stderr; closes the pipe at
    /// its end. Cancel safe: a read that did not finish took nothing from the pipe.
    pub(crate) async fn read_some(&mut self) {
        let Some(pipe) = self.pipe.as_mut() else {
            return std::future::pending().await;
        };
        let mut chunk = [0u8; CHUNK];
        match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => self.pipe = None,
            Ok(n) => self.take(&chunk[..n]),
        }
    }

    /// Reads the rest of the pipe, until its end or for at most [`DRAIN`].
    pub(crate) async fn drain(&mut self) {
        let rest = async {
            while self.is_open() {
                self.read_some().await;
            }
        };
        let _ = tokio::time::timeout(DRAIN, rest).await;
        self.pipe = None;
    }

    /// Passes `chunk` on to the worker's stderr and keeps the end.
    fn take(&mut self, chunk: &[u8]) {
        // The worker's log: a closed or full stderr is no reason to fail the job.
        let _ = std::io::stderr().lock().write_all(chunk);
        self.keep_end(chunk);
    }

    /// Counts `chunk` and keeps the last `keep` bytes of all read.
    fn keep_end(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        if chunk.len() >= self.keep {
            self.kept.clear();
            self.kept
                .extend_from_slice(&chunk[chunk.len() - self.keep..]);
            return;
        }
        let over = (self.kept.len() + chunk.len()).saturating_sub(self.keep);
        self.kept.drain(..over);
        self.kept.extend_from_slice(chunk);
    }

    /// What a failed attempt's error says of the output, after `failure`: `failure` alone when
    /// the command printed nothing on stderr (or nothing is kept); else `FAILURE; stderr: TEXT`,
    /// or `FAILURE; stderr (last N of M bytes): TEXT` when only its end is kept. TEXT is at most
    /// `keep` bytes of UTF-8 (bytes that are not UTF-8 are replaced), starting at a character,
    /// without its trailing line break.
    pub(crate) fn after(&self, failure: String) -> String {
        let (text, cut) = tail_text(&self.kept, self.keep);
        let text = text.trim_end();
        if text.is_empty() {
            return failure;
        }
        if cut || self.total > self.kept.len() as u64 {
            let (kept, total) = (text.len(), self.total);
            return format!("{failure}; stderr (last {kept} of {total} bytes): {text}");
        }
        format!("{failure}; stderr: {text}")
    }
}

/// `bytes` (a pipe's last bytes) as text of at most `keep` bytes: without the pieces of a
/// character cut at its start, bytes that are not UTF-8 replaced (U+FFFD), and, when the
/// replacements made it longer, only its end; and whether any of `bytes` was left out.
fn tail_text(bytes: &[u8], keep: usize) -> (String, bool) {
    // A character cut at the start shows as up to three continuation bytes (10xxxxxx).
    let cut = bytes
        .iter()
        .take(3)
        .take_while(|b| (**b & 0xC0) == 0x80)
        .count();
    let text = String::from_utf8_lossy(&bytes[cut..]);
    if text.len() <= keep {
        return (text.into_owned(), cut > 0);
    }
    let mut start = text.len() - keep;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    (text[start..].to_owned(), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tail(keep: usize, chunks: &[&[u8]]) -> StderrTail {
        let mut tail = StderrTail::new(None, keep);
        for chunk in chunks {
            tail.keep_end(chunk);
        }
        tail
    }

    #[test]
    fn a_short_stderr_is_kept_whole() {
        let said = tail(4096, &[b"SMTP 550 5.1.1 ", b"mailbox unavailable\n"]);
        assert_eq!(
            said.after("sh exited with exit status: 3".into()),
            "sh exited with exit status: 3; stderr: SMTP 550 5.1.1 mailbox unavailable"
        );
        let silent = tail(4096, &[]);
        assert_eq!(silent.after("sh exited".into()), "sh exited");
        let blank = tail(4096, &[b"\n\n"]);
        assert_eq!(blank.after("sh exited".into()), "sh exited");
    }

    #[test]
    fn a_long_stderr_keeps_its_end_from_a_character_on() {
        // "é" is two bytes: 11 bytes kept of "xéééééé" start inside one.
        let said = tail(11, &[b"x", "éééééé".as_bytes()]);
        assert_eq!(said.kept.len(), 11);
        assert_eq!(
            said.after("failed".into()),
            "failed; stderr (last 10 of 13 bytes): ééééé"
        );
        let mut big = vec![b'a'; 1 << 20];
        big.extend_from_slice(b"the last line\n");
        let said = tail(64, &[&big[..5000], &big[5000..]]);
        let text = said.after("failed".into());
        assert!(text.ends_with("aaathe last line"), "{text}");
        let (head, kept) = text.split_once("): ").unwrap();
        assert_eq!(head, "failed; stderr (last 63 of 1048590 bytes");
        assert_eq!(kept.len(), 63, "64 kept less the trailing line break");
    }

    #[test]
    fn bytes_that_are_not_utf8_never_make_it_longer_than_kept() {
        // Each 0xff becomes U+FFFD, three bytes.
        let said = tail(8, &[&[0xff; 100]]);
        let text = said.after(String::new());
        let kept = text.split_once("): ").unwrap().1;
        assert!(kept.len() <= 8, "{kept:?}");
        assert!(kept.chars().all(|c| c == '\u{fffd}'));
    }
}
