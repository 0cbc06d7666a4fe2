//! The machine: what it is, how much memory a process holds, and how fast
//! its disk makes one small append durable.

use crate::stats::{rate, Samples};
use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

/// `VmRSS` of a process, in KiB (from `/proc/<pid>/status`).
pub fn rss_kib(pid: u32) -> Option<u64> {
    status_number(pid, "VmRSS:")
}

/// The number of threads of a process (from `/proc/<pid>/status`).
pub fn threads(pid: u32) -> Option<u64> {
    status_number(pid, "Threads:")
}

/// The first number on the `/proc/<pid>/status` line starting with `field`.
fn status_number(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `nproc`, `uname -r`, the CPU model and the disk under `dir`, one line each.
/// CPU time a process has used so far (user + system), from
/// `/proc/<pid>/stat`; `None` once it is gone.
pub fn cpu_time(pid: u32) -> Option<Duration> {
    cpu_times(pid).map(|(user, system)| user + system)
}

/// [`cpu_time`] in its two parts: in the process's own code (user) and in
/// the kernel on its behalf (system: system calls, wake-ups, I/O).
pub fn cpu_times(pid: u32) -> Option<(Duration, Duration)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command may hold spaces and parentheses: fields count from the last ')'.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let (user, system): (u64, u64) = (fields.get(11)?.parse().ok()?, fields.get(12)?.parse().ok()?);
    // SAFETY: sysconf reads a constant of the running system.
    let per_second = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).ok().filter(|t| *t > 0)?;
    let of = |ticks: u64| Duration::from_micros(ticks * 1_000_000 / per_second);
    Some((of(user), of(system)))
}

/// Context switches (voluntary and not) of a process's live threads so
/// far, from `/proc/<pid>/task/*/status`: a thread waking another costs
/// one each side, whatever the machine's load. Threads that exited are
/// not counted, so compare readings across a span in which the threads of
/// interest stay up.
pub fn context_switches(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return 0 };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("status")).ok())
        .flat_map(|status| {
            status
                .lines()
                .filter(|l| l.starts_with("voluntary_ctxt_switches") || l.starts_with("nonvoluntary_ctxt_switches"))
                .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                .collect::<Vec<_>>()
        })
        .sum()
}

/// CPU time used so far by every process of this machine named `comm`
/// (e.g. `postgres`: the server and all its backends). A process that
/// exited in between is not counted: compare two readings only across a
/// span in which the processes of interest stay up.
pub fn cpu_time_of_all(comm: &str) -> Duration {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Duration::ZERO };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim_end() == comm))
        .filter_map(cpu_time)
        .sum()
}

pub fn describe_machine(dir: &Path) -> String {
    let run = |cmd: &str, args: &[&str]| {
        std::process::Command::new(cmd)
            .args(args)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_else(|e| format!("({cmd}: {e})"))
    };
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| c.lines().find(|l| l.starts_with("model name")).and_then(|l| l.split(':').nth(1)).map(|m| m.trim().to_string()))
        .unwrap_or_default();
    let dir = dir.display().to_string();
    let df = run("df", &["-hT", &dir]);
    let disk = df.lines().last().unwrap_or_default().split_whitespace().collect::<Vec<_>>().join(" ");
    let journal = disk.split_whitespace().next().and_then(ext4_journal).map(|j| format!("\n{j}")).unwrap_or_default();
    format!("nproc: {}\nuname -r: {}\ncpu: {model}\ndisk (df -hT {dir}): {disk}{journal}", run("nproc", &[]), run("uname", &["-r"]))
}

/// Whether the ext4 filesystem on `device` (`/dev/vda`) has a journal, in
/// words; `None` when it is not ext4. It matters to every figure that
/// creates files: without a journal, ext4 makes each new inode skip those
/// freed in the last 60–360 s, reading each one to find out, so a run pays
/// for what the runs before it deleted (docs/PERFORMANCE.md §17).
fn ext4_journal(device: &str) -> Option<String> {
    let name = device.strip_prefix("/dev/")?.replace('/', "!");
    std::fs::metadata(format!("/proc/fs/ext4/{name}")).ok()?;
    let journaled = std::fs::read_dir("/proc/fs/jbd2")
        .map(|dirs| dirs.flatten().any(|d| d.file_name().to_string_lossy().starts_with(&format!("{name}-"))))
        .unwrap_or(false);
    Some(if journaled {
        "ext4 journal: yes".to_string()
    } else {
        "ext4 journal: NO — file creation there scans the inodes freed in the last minutes (docs/PERFORMANCE.md §17)".to_string()
    })
}

/// What the disk did in one timed loop.
#[derive(Debug, Clone)]
pub struct SyncRate {
    pub ops_per_sec: f64,
    pub latency: Samples,
}

/// Append `record` bytes and `fsync` (`File::sync_all`), one at a time on
/// one thread, for `secs`: the "single-fsync rate" of this disk.
pub fn append_fsync(dir: &Path, secs: f64, record: usize) -> std::io::Result<SyncRate> {
    let mut file = OpenOptions::new().create(true).append(true).open(dir.join("append-fsync.log"))?;
    let data = vec![b'x'; record];
    timed(secs, || {
        file.write_all(&data)?;
        file.sync_all()
    })
}

/// Append and `sync_file_range(WAIT_BEFORE|WRITE|WAIT_AFTER)` over the new
/// bytes: what sled 0.34's flush does on Linux (it does not call fsync).
pub fn append_sync_file_range(dir: &Path, secs: f64, record: usize) -> std::io::Result<SyncRate> {
    use std::os::unix::io::AsRawFd;
    let mut file = OpenOptions::new().create(true).append(true).open(dir.join("append-sfr.log"))?;
    let data = vec![b'x'; record];
    let mut offset: i64 = 0;
    timed(secs, || {
        file.write_all(&data)?;
        let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE | libc::SYNC_FILE_RANGE_WRITE | libc::SYNC_FILE_RANGE_WAIT_AFTER;
        // SAFETY: a plain system call on a file descriptor we own.
        let ret = unsafe { libc::sync_file_range(file.as_raw_fd(), offset, record as i64, flags) };
        offset += record as i64;
        if ret < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    })
}

fn timed(secs: f64, mut op: impl FnMut() -> std::io::Result<()>) -> std::io::Result<SyncRate> {
    let mut latency = Samples::default();
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(secs);
    while Instant::now() < deadline {
        let t = Instant::now();
        op()?;
        latency.push(t.elapsed());
    }
    Ok(SyncRate { ops_per_sec: rate(latency.len() as u64, start.elapsed()), latency })
}
