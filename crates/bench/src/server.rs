//! Run the real `plangate serve` for a benchmark and wait until it is ready.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A started server.
pub struct Started {
    pub child: Child,
    /// `http://127.0.0.1:PORT`
    pub base: String,
    /// From spawn until `/healthz` answered 200.
    pub ready: Duration,
    /// From spawn until it printed `plangate listening on …`.
    pub listening: Duration,
}

impl Started {
    /// SIGTERM (a normal stop: in-flight work finishes, the store is
    /// flushed and closed), and reap. Returns how long the stop took.
    pub fn stop(&mut self) -> Duration {
        let t0 = Instant::now();
        if let Ok(pid) = i32::try_from(self.child.id()) {
            // SAFETY: kill(2) on our own child's pid has no memory effects.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
        let _ = self.child.wait();
        t0.elapsed()
    }

    /// SIGKILL, and reap.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Spawn `bin serve --config config_path` and wait until `/healthz` answers 200.
/// Panics when it does not listen within 300 s or is not healthy 60 s later.
pub async fn start(bin: &str, config_path: &Path, http: &reqwest::Client) -> Started {
    let t0 = Instant::now();
    let mut child = Command::new(bin)
        .args(["serve", "--config"])
        .arg(config_path)
        .env("RUST_LOG", std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn plangate");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("plangate listening on ") {
                let _ = tx.send(rest.trim().to_string());
            }
        }
    });
    let base = rx.recv_timeout(Duration::from_secs(300)).expect("plangate did not listen within 300 s");
    let listening = t0.elapsed();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(r) = http.get(format!("{base}/healthz")).send().await {
            if r.status().is_success() {
                break;
            }
        }
        assert!(Instant::now() < deadline, "/healthz never answered 200");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Started { child, base, ready: t0.elapsed(), listening }
}

/// `12.3 MiB` from KiB, `?` when unknown.
pub fn mib(kib: Option<u64>) -> String {
    kib.map(|k| format!("{:.1} MiB", k as f64 / 1024.0)).unwrap_or_else(|| "?".to_string())
}
