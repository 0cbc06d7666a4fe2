//! Reading a hook event from stdin, the same way for every harness: within a
//! time budget and a size cap, so a harness that never closes stdin, or
//! sends something huge, gets a refusal instead of a hung or bloated hook.
//!
//! On Unix it reads on the calling thread, `poll(2)` bounding each wait by
//! what is left of the budget: tokio's stdin hands every read to its
//! blocking pool, and a hook process started three threads for it, once per
//! tool call (docs/PERFORMANCE.md §28). Nothing else runs on a hook's
//! runtime while it reads its input, so nothing waits behind it.

use std::time::Duration;

/// Hook input larger than this is refused (the API takes 1 MiB bodies).
pub const MAX_INPUT_BYTES: u64 = 4 << 20;

/// Why stdin could not be read.
enum Failed {
    Late,
    Io(std::io::Error),
}

/// The bytes on stdin, or why they could not be read, phrased as the reason
/// the call is blocked.
pub async fn read_stdin(budget: Duration) -> Result<Vec<u8>, String> {
    match read_capped(budget).await {
        Err(Failed::Late) => Err("plangate: the hook input did not arrive on stdin in time, so this call is blocked".to_string()),
        Err(Failed::Io(e)) => Err(format!("plangate: cannot read the hook input ({e}), so this call is blocked")),
        Ok(input) if input.len() as u64 > MAX_INPUT_BYTES => {
            Err(format!("plangate: the hook input is over {MAX_INPUT_BYTES} bytes, so this call is blocked"))
        }
        Ok(input) => Ok(input),
    }
}

/// Up to `MAX_INPUT_BYTES + 1` bytes of stdin, to its end, within `budget`.
/// A closed stdin (`EBADF`) reads as empty, as Rust's `Stdin` has it.
#[cfg(unix)]
async fn read_capped(budget: Duration) -> Result<Vec<u8>, Failed> {
    use std::io::Error;
    let deadline = std::time::Instant::now() + budget;
    let mut input = Vec::new();
    // On the stack and small: a hook's event is a few KiB, and a 64 KiB
    // heap buffer cleared at every call was 6.8 % of a hook's instructions.
    let mut chunk = [0u8; 8 * 1024];
    while (input.len() as u64) <= MAX_INPUT_BYTES {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(Failed::Late);
        }
        let mut fd = libc::pollfd { fd: libc::STDIN_FILENO, events: libc::POLLIN, revents: 0 };
        let millis = libc::c_int::try_from(left.as_millis().max(1)).unwrap_or(libc::c_int::MAX);
        // SAFETY: poll(2) on one pollfd we own, for at most `millis`.
        match unsafe { libc::poll(&mut fd, 1, millis) } {
            0 => return Err(Failed::Late),
            n if n < 0 => match Error::last_os_error() {
                e if e.kind() == std::io::ErrorKind::Interrupted => continue,
                e => return Err(Failed::Io(e)),
            },
            _ if fd.revents & libc::POLLNVAL != 0 => break,
            _ => {}
        }
        // SAFETY: read(2) into `chunk`, which holds `chunk.len()` bytes.
        let n = unsafe { libc::read(libc::STDIN_FILENO, chunk.as_mut_ptr().cast(), chunk.len()) };
        match usize::try_from(n) {
            Ok(0) => break,
            Ok(n) => input.extend_from_slice(&chunk[..n]),
            Err(_) => match Error::last_os_error() {
                e if matches!(e.kind(), std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock) => {}
                e if e.raw_os_error() == Some(libc::EBADF) => break,
                e => return Err(Failed::Io(e)),
            },
        }
    }
    Ok(input)
}

/// Elsewhere: tokio's stdin, through its blocking pool.
#[cfg(not(unix))]
async fn read_capped(budget: Duration) -> Result<Vec<u8>, Failed> {
    use tokio::io::AsyncReadExt;
    let mut input = Vec::new();
    match tokio::time::timeout(budget, tokio::io::stdin().take(MAX_INPUT_BYTES + 1).read_to_end(&mut input)).await {
        Err(_) => Err(Failed::Late),
        Ok(Err(e)) => Err(Failed::Io(e)),
        Ok(Ok(_)) => Ok(input),
    }
}
