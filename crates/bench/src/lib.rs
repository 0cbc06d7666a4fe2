//! plangate's benchmarks, and the seed's file store to compare against.
//!
//! Everything here measures; nothing here is used by plangate itself. The
//! figures and the commands that produce them are in `docs/PERFORMANCE.md`.
//!
//! * `benches/engine.rs` (criterion): `engine::apply` of every command kind.
//! * `src/bin/durable.rs`: durable transitions per second at 1, 16 and 64
//!   concurrent sessions, plangate against [`baseline::PlanStore`], beside a
//!   bare append+fsync loop on the same disk.
//! * `src/bin/e2e.rs`: the real `plangate` binary with the real teloxide
//!   client against the loopback fake Telegram: propose → card, tap → agent
//!   released, `POST /v1/gate`, the in-process gate, and memory.
//! * `src/bin/startup.rs`: 100,000 pending approvals on disk, time to ready
//!   (and, with `--web`, the web inbox and a plan page at that size).
//! * `src/bin/audit.rs`: one approval's audit trail out of a million sled
//!   audit entries, read from the end against a seek to its time.
//! * `src/bin/storm.rs`: a 10,000-nudge storm drained through the real
//!   Telegram, Slack and Discord clients against loopback fakes that enforce
//!   each platform's send limits (429s counted).
//!
//! The shared pieces: [`workload`] (the plans and commands every benchmark
//! uses), [`baseline`], [`stats`] (percentiles and rates), [`sys`]
//! (machine description, RSS, raw sync rates) and [`server`] (start the
//! binary, wait for ready).

pub mod baseline;
pub mod server;
pub mod stats;
pub mod sys;
pub mod workload;

/// The `plangate` binary to run: `$PLANGATE_BIN`, else the release build in
/// `$CARGO_TARGET_DIR` (or `target`), else the debug build.
pub fn plangate_bin() -> String {
    if let Ok(bin) = std::env::var("PLANGATE_BIN") {
        return bin;
    }
    let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../target").to_string());
    let release = format!("{target}/release/plangate");
    if std::path::Path::new(&release).exists() {
        return release;
    }
    format!("{target}/debug/plangate")
}

/// `--name value` from the command line, parsed, or `default`.
pub fn arg<T: std::str::FromStr>(name: &str, default: T) -> T {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Whether `--name` is on the command line.
pub fn flag(name: &str) -> bool {
    std::env::args().any(|a| a == name)
}
