//! Who this process is, for the records it leaves in Redis: its host's name, and one id for
//! the whole process (host, pid and a random part) that its registry records and the delivery
//! ids of its takes carry alike, so that a reader can tell which process holds a delivery.

use std::sync::LazyLock;

/// The process's id: `HOST-PID-RANDOM` (8 hex digits), the host's name kept to letters,
/// digits, `-`, `_` and `.` so that the id is safe in a URL path and a registry record.
static ID: LazyLock<String> = LazyLock::new(|| {
    let host: String = host_name()
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '_' | '.' => c,
            _ => '_',
        })
        .collect();
    format!(
        "{host}-{}-{:08x}",
        std::process::id(),
        rand::random::<u32>()
    )
});

/// The process's id (the same for its whole life).
pub(crate) fn id() -> &'static str {
    &ID
}

/// The host's name, as the kernel has it (or the environment says), else `unknown`; tabs and
/// line breaks turned into spaces (the registry's records separate fields with them).
pub(crate) fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|name| name.replace(['\t', '\n'], " "))
        .unwrap_or_else(|| "unknown".to_owned())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_id_is_stable_and_url_safe() {
        assert_eq!(super::id(), super::id());
        assert!(super::id()
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)));
        assert!(super::id().contains(&format!("-{}-", std::process::id())));
    }
}
