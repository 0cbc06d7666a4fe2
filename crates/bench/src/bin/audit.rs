//! One approval's audit trail out of a long audit, on sled: read from the
//! end of the log (what a query by approval did before `AuditQuery::since`)
//! against a seek to the approval's proposal time (what the web page and
//! `GET /v1/audit?approval=` do now), side by side in one run.
//!
//! Writes `--events` audit entries `--gap-ms` apart (100 ms: a million
//! span 28 hours), a thousand per `append_audit`; approval k owns the
//! entries of the k-th of `--approvals` equal stretches of the log (every
//! tenth entry there is its), as a plan's trail gathers around its
//! proposal. Then times the trail of the newest approval and of the one
//! halfway, each five times both ways.
//!
//! Run: `CARGO_TARGET_DIR=/work/target-bench cargo run --release -p plangate-bench --bin audit -- --events 1000000`
//! `--smoke`: 20,000 entries of 200 approvals (`target/debug/audit --smoke`, seconds).

use plangate_bench::sys;
use plangate_engine::{ApprovalId, AuditEvent, Timestamp};
use plangate_store::prelude::*;
use plangate_store::{AuditQuery, SledStore};
use std::path::Path;
use std::time::{Duration, Instant};

/// The margin the server leaves before a proposal's time (`core::audit_since`).
const MARGIN_MS: i64 = 10 * 60 * 1000;

fn id(n: u64) -> ApprovalId {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&n.to_be_bytes());
    ApprovalId(bytes)
}

fn event(i: u64, per_approval: u64, gap_ms: i64) -> AuditEvent {
    AuditEvent {
        at: Timestamp(1_700_000_000_000 + i as i64 * gap_ms),
        agent: "demo".into(),
        session_id: format!("s{}", i / per_approval),
        actor: "plangate".into(),
        action: "card_posted".into(),
        approval_id: i.is_multiple_of(10).then(|| id(i / per_approval)),
        version: Some(1),
        detail: "ops -100 message 42".into(),
    }
}

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

fn main() {
    let events: u64 = plangate_bench::sized("--events", 1_000_000, 20_000);
    let approvals: u64 = plangate_bench::sized("--approvals", 10_000, 200);
    let gap_ms: i64 = plangate_bench::arg("--gap-ms", 100);
    let per_approval = (events / approvals).max(10);
    let dir: String = plangate_bench::arg("--dir", std::env::temp_dir().display().to_string());
    println!("{}", sys::describe_machine(Path::new(&dir)));
    let root = tempfile::tempdir_in(&dir).expect("temp dir");
    let store = SledStore::open(root.path()).expect("store");
    let written = Instant::now();
    for chunk in (0..events).collect::<Vec<_>>().chunks(1000) {
        let batch: Vec<AuditEvent> = chunk.iter().map(|i| event(*i, per_approval, gap_ms)).collect();
        store.append_audit(&batch).expect("append");
    }
    println!("{events} audit entries written in {:.1} s\n", written.elapsed().as_secs_f64());
    println!("| approval | entries in its trail | from the end of the log (median of 5) | seek to its time (median of 5) | ratio |");
    println!("|---|---|---|---|---|");
    // The newest approval, and the one halfway: their first entries.
    let newest = (events - 1) / per_approval;
    for (label, k) in [("newest", newest), ("halfway", newest / 2)] {
        let first = k * per_approval;
        let approval = id(k);
        let at = event(first, per_approval, gap_ms).at;
        let query = |since: Option<Timestamp>| AuditQuery { approval_id: Some(approval), since, ..AuditQuery::default() };
        let (mut full, mut seek, mut found) = (Vec::new(), Vec::new(), (0, 0));
        for _ in 0..5 {
            let t = Instant::now();
            found.0 = store.audit(&query(None)).expect("audit").len();
            full.push(t.elapsed());
            let t = Instant::now();
            found.1 = store.audit(&query(Some(Timestamp(at.0 - MARGIN_MS)))).expect("audit").len();
            seek.push(t.elapsed());
        }
        let (full, seek) = (median(full), median(seek));
        println!(
            "| {label} | {} (seek found {}) | {:.2} ms | {:.2} ms | {:.0}× |",
            found.0,
            found.1,
            full.as_secs_f64() * 1e3,
            seek.as_secs_f64() * 1e3,
            full.as_secs_f64() / seek.as_secs_f64().max(1e-9)
        );
        // Both ways find the whole trail, or the seek is no answer.
        assert_eq!(found.0, found.1, "the {label} approval's trail: from the end found {}, the seek {}", found.0, found.1);
        assert!(found.0 > 0, "the {label} approval has no trail");
    }
    if plangate_bench::smoke() {
        println!("\nsmoke run: a small log; these figures measure nothing");
    }
}
