//! What an error means to a script (the exit status) and to a person (one line per cause).

use delayq::fred::error::ErrorKind;
use delayq::{Error, Refusal};
use std::process::ExitCode;

/// Exit statuses by error class; `delayq --help` lists them, docs/cli.md too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    /// 1: a false answer with `--exit-status`, `check` warnings, a queue `queues` could not
    /// read, or a schedule that does not exist.
    False = 1,
    /// 2: usage or invalid input (clap uses 2 for usage errors too).
    Usage = 2,
    /// 3: Redis cannot be reached (refused, timed out, dropped).
    Connection = 3,
    /// 4: authentication or an ACL refused the command.
    Auth = 4,
    /// 5: a key holds the wrong type.
    WrongType = 5,
    /// 6: the codec cannot encode or decode a value.
    Codec = 6,
    /// 7: Redis refused for its state (out of memory, busy, read-only, loading).
    Refused = 7,
    /// 8: anything else.
    Other = 8,
    /// 9: a durable write on the master that its replicas (or AOF) did not confirm in time.
    NotConfirmed = 9,
}

impl From<Status> for ExitCode {
    fn from(status: Status) -> ExitCode {
        ExitCode::from(status as u8)
    }
}

/// Usage or invalid input found by the command line itself (exit 2), such as flags that do not
/// go together.
#[derive(Debug)]
pub(crate) struct Usage(pub(crate) String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// The class of `err`, from the first [`Usage`], delayq or fred error in its chain.
pub(crate) fn status(err: &anyhow::Error) -> Status {
    for cause in err.chain() {
        if cause.downcast_ref::<Usage>().is_some() {
            return Status::Usage;
        }
        if let Some(err) = cause.downcast_ref::<Error>() {
            return of_delayq(err);
        }
        if let Some(err) = cause.downcast_ref::<delayq::fred::error::Error>() {
            return of_fred(err);
        }
        // Text that is no value of the codec (not UTF-8, not a number for long, …).
        if cause
            .downcast_ref::<crate::text_codec::TextCodecError>()
            .is_some()
        {
            return Status::Codec;
        }
        if cause.downcast_ref::<std::io::Error>().is_some() {
            return Status::Other;
        }
    }
    Status::Other
}

fn of_delayq(err: &Error) -> Status {
    match err {
        Error::WrongType { .. } => Status::WrongType,
        Error::NotConfirmed { .. } => Status::NotConfirmed,
        Error::NoSuchSchedule { .. } => Status::False,
        Error::Encode { .. } | Error::Decode { .. } => Status::Codec,
        Error::InvalidDelay(_)
        | Error::InvalidConfig(_)
        | Error::InvalidSchedule(_)
        | Error::InvalidLimits(_)
        | Error::ValueTooLarge { .. } => Status::Usage,
        Error::Refused {
            refusal: Refusal::NoPermission,
            ..
        } => Status::Auth,
        Error::Refused { .. } => Status::Refused,
        Error::Redis(err) | Error::Script { source: err, .. } => of_fred(err),
        _ if err.is_connection_error() => Status::Connection,
        _ => Status::Other,
    }
}

fn of_fred(err: &delayq::fred::error::Error) -> Status {
    match err.kind() {
        ErrorKind::Auth => Status::Auth,
        ErrorKind::IO
        | ErrorKind::Timeout
        | ErrorKind::Canceled
        | ErrorKind::Routing
        | ErrorKind::Sentinel => Status::Connection,
        ErrorKind::Config | ErrorKind::InvalidArgument | ErrorKind::Url => Status::Usage,
        _ if err.details().starts_with("NOPERM") => Status::Auth,
        _ => Status::Other,
    }
}

/// Whether `err` is a write to a pipe whose reader has gone (`delayq queues | head`): for a
/// command that only prints, the reader has what it wanted, and that is no error.
pub(crate) fn is_closed_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The error for a person: the message, then each cause on a line of its own, each said once
/// (a cause whose text its parent already includes is left out), and fred's `Debug`-formatted
/// IO errors read as their message.
pub(crate) fn describe(err: &anyhow::Error) -> String {
    lines(err).join("\n  because: ")
}

/// The error as the JSON object `--json` prints it (on stderr, as `{"error": ...}`; in a row of
/// `delayq queues`): the message, its causes, and the exit status its class has.
pub(crate) fn json_of(err: &anyhow::Error) -> serde_json::Value {
    let mut lines = lines(err).into_iter();
    let message = lines.next().unwrap_or_default();
    serde_json::json!({
        "message": message,
        "causes": lines.collect::<Vec<_>>(),
        "exit_status": status(err) as u8,
    })
}

/// The message, then each cause, each said once.
fn lines(err: &anyhow::Error) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for cause in err.chain() {
        let text = readable(&cause.to_string());
        if lines.iter().any(|seen| seen.contains(&text)) {
            continue;
        }
        // A parent that ends with this cause's text (thiserror's "{source}") keeps it once.
        if let Some(last) = lines.last_mut() {
            if let Some(stripped) = last.strip_suffix(&text) {
                *last = stripped.trim_end_matches([':', ' ']).to_owned();
            }
        }
        lines.push(text);
    }
    lines.retain(|line| !line.is_empty());
    lines
}

/// `Os { code: 111, kind: ConnectionRefused, message: "Connection refused" }` as
/// `connection refused`, and fred's `IO Error: ` prefixes dropped.
fn readable(text: &str) -> String {
    let text = text
        .replace("redis error: ", "")
        .replace("IO Error: ", "")
        .replace("Unknown Error: ", "");
    match (text.find("Os {"), text.find("message: \"")) {
        (Some(start), Some(at)) => {
            let message_start = at + "message: \"".len();
            let message_end = text[message_start..]
                .find('"')
                .map_or(text.len(), |e| message_start + e);
            let message = text[message_start..message_end].to_lowercase();
            let end = text[start..]
                .find('}')
                .map_or(text.len(), |e| start + e + 1);
            format!("{}{}{}", &text[..start], message, &text[end..])
        }
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_read_as_their_message() {
        assert_eq!(
            readable("redis error: IO Error: Os { code: 111, kind: ConnectionRefused, message: \"Connection refused\" }"),
            "connection refused"
        );
    }

    #[test]
    fn causes_are_said_once() {
        let inner = anyhow::anyhow!("connection refused");
        let err = inner.context("cannot connect to redis://h:1");
        assert_eq!(
            describe(&err),
            "cannot connect to redis://h:1\n  because: connection refused"
        );
    }
}
