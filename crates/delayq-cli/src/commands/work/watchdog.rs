//! The commands' watchdog: a small process forked when the worker starts, which ends (SIGKILL)
//! the process group of every command still running when the worker dies, however it dies
//! (`kill -9`, an OOM kill, a panic that aborts). Each command runs in a group of its own, so
//! without it a killed worker's commands would run on while their values and limit slots come
//! back to other workers: a cap exceeded, one value run twice at once.
//!
//! How: the worker and the watchdog share a Unix socket pair (`SOCK_SEQPACKET`: one message per
//! send, and end-of-file once every copy of the worker's end is closed, which the kernel does
//! when the worker dies). A command registers its own group from its child process before it
//! runs anything (`pre_exec`, between fork and exec), so that no command can start a process the
//! watchdog does not know the group of; the worker forgets a group once it is over. A spawn that
//! fails after its child registered (an exec refused) leaves no pid to forget by: so the worker
//! spawns one command at a time and then says whether that spawn went (`=`) or not (`x`: the
//! watchdog drops the group registered last). When the
//! socket reaches end-of-file, the watchdog sends SIGKILL to every group it still knows, and
//! exits.
//!
//! A second line, for when the watchdog is killed too (`pkill -9 -f 'delayq.*work'` takes both:
//! the watchdog is a fork of the worker, renamed `delayq-watchdog` but with the worker's command
//! line): every command is forked from one thread kept for that (see [`Spawner`]), and asks the
//! kernel for SIGKILL when that thread ends (`PR_SET_PDEATHSIG`). That signal fires when the
//! *thread* that forked the child ends, which is why it is not a Tokio worker thread (one may
//! end while the process lives on: `block_in_place` hands its work to a new thread); and it
//! reaches the command only, not what the command started, which the watchdog alone ends.
//!
//! The forked watchdog runs no Rust code that allocates or locks (the worker is multi-threaded:
//! another thread may hold the allocator's lock at the fork): only system calls on memory made
//! before the fork. It leaves the worker's process group, so that a terminal's Ctrl-C or a
//! `kill` of the worker's group does not take it first, ignores SIGINT, SIGTERM and SIGHUP, and
//! closes every file the worker had open (Redis connections, the log) but its socket.
//!
//! A group is forgotten once its leader is reaped; should the worker die in the instant between
//! the two, the watchdog signals a group that is over (its id is free again only once its last
//! process is gone, so reuse within that instant is the only risk left).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::process::{Child, Command};

/// One message: `+` (registered by the command's child), `=` (its spawn went), `x` (its spawn
/// failed), `-` (forgotten), then the group's id (little-endian; 0 for `x`).
const MESSAGE_LEN: usize = 5;

/// The worker's end of the socket to its watchdog, or nothing where there is none.
pub(crate) struct Watchdog {
    /// The socket (close-on-exec: commands hold it only between fork and exec).
    #[cfg(target_os = "linux")]
    socket: Option<std::os::fd::OwnedFd>,
    /// Set once a message could not be sent (the watchdog is gone), so that it is said once.
    lost: Arc<AtomicBool>,
    /// Held while one command is spawned and its outcome told, so that a failed spawn's
    /// registration is the last one the watchdog got (without a [`Spawner`], whose one thread
    /// spawns one at a time).
    spawning: std::sync::Mutex<()>,
    /// The thread commands are forked from; `None` outside a Tokio runtime, or off Linux.
    spawner: Option<Spawner>,
}

/// A command to spawn and where its outcome goes.
type SpawnRequest = (
    Command,
    tokio::sync::oneshot::Sender<std::io::Result<Child>>,
);

/// The thread every command is forked from, kept as long as the worker runs commands: a
/// command's `PR_SET_PDEATHSIG` fires when it ends, so it ends only when the worker is done
/// with commands (dropped: its queue closed, then joined) or dies.
struct Spawner {
    requests: Option<std::sync::mpsc::Sender<SpawnRequest>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Spawner {
    /// Starts the thread, in the current Tokio runtime (a child's exit is watched by it);
    /// `None` outside one.
    fn start(fd: Option<i32>, lost: Arc<AtomicBool>) -> Option<Spawner> {
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        let (requests, queue) = std::sync::mpsc::channel::<SpawnRequest>();
        let thread = std::thread::Builder::new()
            .name("delayq-spawner".into())
            .spawn(move || {
                let _entered = runtime.enter();
                while let Ok((mut command, reply)) = queue.recv() {
                    let _ = reply.send(spawn_told(fd, &mut command, &lost));
                }
            })
            .ok()?;
        Some(Spawner {
            requests: Some(requests),
            thread: Some(thread),
        })
    }
}

impl Drop for Spawner {
    fn drop(&mut self) {
        // Its queue closed, the thread ends after the spawn it is at (if any).
        drop(self.requests.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Spawns `command` and tells the watchdog on `fd` whether the spawn went.
fn spawn_told(fd: Option<i32>, command: &mut Command, lost: &AtomicBool) -> std::io::Result<Child> {
    let Some(fd) = fd else {
        return command.spawn();
    };
    let spawned = command.spawn();
    let told = match &spawned {
        Ok(child) => send(
            fd,
            b'=',
            child
                .id()
                .and_then(|id| i32::try_from(id).ok())
                .unwrap_or(0),
        ),
        Err(_) => send(fd, b'x', 0),
    };
    if !told {
        say_lost(lost);
    }
    spawned
}

/// Says once that the watchdog is gone.
fn say_lost(lost: &AtomicBool) {
    if !lost.swap(true, Ordering::Relaxed) {
        tracing::warn!(
            error = %std::io::Error::last_os_error(),
            "the commands' watchdog is gone: a killed worker's commands will outlive it"
        );
    }
}

impl Watchdog {
    /// Forks the watchdog. Where that fails (or off Linux), the worker runs without one and
    /// says so: its commands then outlive a killed worker.
    pub(crate) fn start() -> Self {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let lost = Arc::new(AtomicBool::new(false));
            match linux::fork_watchdog() {
                Ok(socket) => {
                    let spawner = Spawner::start(Some(socket.as_raw_fd()), lost.clone());
                    return Watchdog {
                        socket: Some(socket),
                        lost,
                        spawning: Default::default(),
                        spawner,
                    };
                }
                Err(err) => tracing::warn!(
                    error = %err,
                    "cannot start the commands' watchdog: a killed worker's commands will \
                     outlive it"
                ),
            }
        }
        #[cfg(not(target_os = "linux"))]
        tracing::warn!(
            "no commands' watchdog on this system: a killed worker's commands will outlive it"
        );
        let lost = Arc::new(AtomicBool::new(false));
        Watchdog {
            #[cfg(target_os = "linux")]
            socket: None,
            spawner: cfg!(target_os = "linux")
                .then(|| Spawner::start(None, lost.clone()))
                .flatten(),
            lost,
            spawning: Default::default(),
        }
    }

    /// Whether commands are forked from the [`Spawner`]'s thread, so that a command may ask to
    /// die with it ([`die_with_parent`]).
    pub(crate) fn spawns_from_own_thread(&self) -> bool {
        self.spawner.is_some()
    }

    /// Spawns `command` (whose `pre_exec` registers its group) from the [`Spawner`]'s thread
    /// (else from this one), then tells the watchdog whether the spawn went, one spawn at a
    /// time.
    ///
    /// # Cancel safety
    ///
    /// Dropped while the spawn is under way, the command (if it started) runs on unwatched by
    /// this call: its group stays known to the watchdog.
    pub(crate) async fn spawn(&self, mut command: Command) -> std::io::Result<Child> {
        if let Some(requests) = self.spawner.as_ref().and_then(|s| s.requests.as_ref()) {
            let (reply, spawned) = tokio::sync::oneshot::channel();
            if requests.send((command, reply)).is_ok() {
                return spawned
                    .await
                    .unwrap_or_else(|_| Err(std::io::Error::other("the spawning thread is gone")));
            }
            return Err(std::io::Error::other("the spawning thread is gone"));
        }
        let _one_at_a_time = self
            .spawning
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        spawn_told(self.descriptor(), &mut command, &self.lost)
    }

    /// The socket's descriptor, for a command's `pre_exec` to register its group with
    /// [`register_own_group`]; `None` without a watchdog.
    pub(crate) fn descriptor(&self) -> Option<i32> {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            self.socket.as_ref().map(AsRawFd::as_raw_fd)
        }
        #[cfg(not(target_os = "linux"))]
        None
    }

    /// The group `id` is over (its command exited on its own, or the group was ended): the
    /// watchdog no longer ends it.
    pub(crate) fn forget(&self, id: i32) {
        let Some(fd) = self.descriptor() else { return };
        if !send(fd, b'-', id) {
            say_lost(&self.lost);
        }
    }
}

/// Asks the kernel to SIGKILL the calling process when the thread that forked it ends (the
/// [`Spawner`]'s: the worker is gone), and dies at once if the worker `parent` is gone already.
/// Called in the command's child between fork and exec: only system calls.
#[cfg(target_os = "linux")]
pub(crate) fn die_with_parent(parent: u32) {
    // SAFETY: prctl(2), getppid(2) and raise(3) take plain integers and touch no memory.
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        if u32::try_from(libc::getppid()).ok() != Some(parent) {
            libc::raise(libc::SIGKILL);
        }
    }
}

/// Without a watchdog there is no socket to send on.
#[cfg(not(target_os = "linux"))]
fn send(_fd: i32, _op: u8, _id: i32) -> bool {
    true
}

/// Registers the group the calling process leads (the command runs with `process_group(0)`:
/// the group's id is its pid) with the watchdog on `fd`. Called in the command's child between
/// fork and exec: only system calls. A failure is not the command's: it runs all the same.
pub(crate) fn register_own_group(fd: i32) {
    // SAFETY: getpid(2) touches no memory.
    let id = unsafe { libc::getpid() };
    let _ = send(fd, b'+', id);
}

/// Sends one message; true when it went. Never raises SIGPIPE (a command's child has the
/// default action for it, and the watchdog may be gone).
#[cfg(target_os = "linux")]
fn send(fd: i32, op: u8, id: i32) -> bool {
    let id = id.to_le_bytes();
    let message: [u8; MESSAGE_LEN] = [op, id[0], id[1], id[2], id[3]];
    loop {
        // SAFETY: the buffer is ours and MESSAGE_LEN bytes long.
        let sent =
            unsafe { libc::send(fd, message.as_ptr().cast(), MESSAGE_LEN, libc::MSG_NOSIGNAL) };
        if sent == MESSAGE_LEN as isize {
            return true;
        }
        if sent < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        return false;
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use super::MESSAGE_LEN;
    use std::os::fd::{FromRawFd, OwnedFd};

    /// The most process ids Linux has (`PID_MAX_LIMIT` on 64-bit systems).
    const PID_LIMIT: usize = 1 << 22;

    /// Forks the watchdog; returns the worker's end of the socket.
    pub(super) fn fork_watchdog() -> std::io::Result<OwnedFd> {
        // Everything the watchdog uses is made before the fork: one bit per possible group.
        let mut groups = vec![0u8; pid_limit() / 8 + 1];
        let mut pair = [0i32; 2];
        // SAFETY: socketpair(2) writes two descriptors into `pair`.
        let made = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                pair.as_mut_ptr(),
            )
        };
        if made != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: both are ours, just made; each owned once.
        let (ours, theirs) = unsafe { (OwnedFd::from_raw_fd(pair[0]), pair[1]) };
        // SAFETY: the child runs `watch` only, which makes system calls on memory made above,
        // and never returns.
        match unsafe { libc::fork() } {
            -1 => {
                let err = std::io::Error::last_os_error();
                // SAFETY: ours, not closed elsewhere.
                unsafe { libc::close(theirs) };
                Err(err)
            }
            0 => watch(theirs, &mut groups),
            _ => {
                // SAFETY: the child has its copy; the worker keeps only its own end.
                unsafe { libc::close(theirs) };
                Ok(ours)
            }
        }
    }

    /// `/proc/sys/kernel/pid_max`, or the largest it can be.
    fn pid_limit() -> usize {
        std::fs::read_to_string("/proc/sys/kernel/pid_max")
            .ok()
            .and_then(|text| text.trim().parse::<usize>().ok())
            .map_or(PID_LIMIT, |max| max.min(PID_LIMIT))
    }

    /// The watchdog: reads messages until end-of-file, then kills the groups it knows.
    fn watch(socket: i32, groups: &mut [u8]) -> ! {
        // SAFETY: plain system calls; every pointer is to memory of this function or `groups`.
        unsafe {
            libc::setpgid(0, 0);
            // Told apart from the worker by name (`ps`, `killall delayq`); its command line
            // stays the worker's.
            libc::prctl(
                libc::PR_SET_NAME,
                c"delayq-watchdog".as_ptr() as libc::c_ulong,
                0,
                0,
                0,
            );
            for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::signal(signal, libc::SIG_IGN);
            }
            // The socket to descriptor 3, everything else closed; stdio to /dev/null.
            if socket != 3 && libc::dup2(socket, 3) != 3 {
                libc::_exit(1);
            }
            if libc::syscall(libc::SYS_close_range, 4u32, u32::MAX, 0u32) != 0 {
                let mut most = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                libc::getrlimit(libc::RLIMIT_NOFILE, &mut most);
                for fd in 4..most.rlim_cur.min(1 << 20) as i32 {
                    libc::close(fd);
                }
            }
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
            if null >= 0 {
                for fd in 0..3 {
                    libc::dup2(null, fd);
                }
                if null > 3 {
                    libc::close(null);
                }
            }
            let mut message = [0u8; MESSAGE_LEN];
            // The group registered last, until the worker says how its spawn went.
            let mut unconfirmed = 0;
            loop {
                let got = libc::recv(3, message.as_mut_ptr().cast(), MESSAGE_LEN, 0);
                if got < 0 && *libc::__errno_location() == libc::EINTR {
                    continue;
                }
                if got != MESSAGE_LEN as isize {
                    // End-of-file: the worker is gone (or a message it cannot have sent).
                    break;
                }
                take_in(groups, &mut unconfirmed, &message);
            }
            for (byte_index, byte) in groups.iter().enumerate() {
                for bit in 0..8 {
                    if byte & (1 << bit) != 0 {
                        let id = (byte_index * 8 + bit) as i32;
                        libc::kill(-id, libc::SIGKILL);
                    }
                }
            }
            libc::_exit(0)
        }
    }

    /// Takes in one message: the groups to end, and the one registered last until its spawn is
    /// told.
    fn take_in(groups: &mut [u8], unconfirmed: &mut i32, message: &[u8; MESSAGE_LEN]) {
        let id = i32::from_le_bytes([message[1], message[2], message[3], message[4]]);
        match message[0] {
            b'+' => {
                mark(groups, id, true);
                *unconfirmed = id;
            }
            b'=' => *unconfirmed = 0,
            b'x' => {
                mark(groups, *unconfirmed, false);
                *unconfirmed = 0;
            }
            _ => mark(groups, id, false),
        }
    }

    /// Sets (`on`) or clears the bit of group `id`; ids out of range are left alone.
    fn mark(groups: &mut [u8], id: i32, on: bool) {
        let Ok(id) = usize::try_from(id) else { return };
        if id <= 1 {
            return;
        }
        if let Some(byte) = groups.get_mut(id / 8) {
            if on {
                *byte |= 1 << (id % 8);
            } else {
                *byte &= !(1 << (id % 8));
            }
        }
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn groups_are_marked_and_cleared_and_odd_ids_ignored() {
            let mut groups = vec![0u8; 4];
            super::mark(&mut groups, 9, true);
            super::mark(&mut groups, 17, true);
            super::mark(&mut groups, 17, false);
            super::mark(&mut groups, 1, true);
            super::mark(&mut groups, -5, true);
            super::mark(&mut groups, 1000, true);
            assert_eq!(groups, [0, 0b10, 0, 0]);
        }

        #[test]
        fn a_failed_spawn_drops_the_group_registered_last() {
            let message = |op: u8, id: i32| {
                let b = id.to_le_bytes();
                [op, b[0], b[1], b[2], b[3]]
            };
            let (mut groups, mut unconfirmed) = (vec![0u8; 4], 0);
            for m in [message(b'+', 9), message(b'=', 9), message(b'+', 17)] {
                super::take_in(&mut groups, &mut unconfirmed, &m);
            }
            assert_eq!(groups, [0, 0b10, 0b10, 0]);
            super::take_in(&mut groups, &mut unconfirmed, &message(b'x', 0));
            assert_eq!(groups, [0, 0b10, 0, 0], "17's exec failed: nothing to end");
            super::take_in(&mut groups, &mut unconfirmed, &message(b'x', 0));
            super::take_in(&mut groups, &mut unconfirmed, &message(b'-', 9));
            assert_eq!(groups, [0; 4]);
        }
    }
}
