//! Export and offline verification of the tamper-evident audit chain, on
//! sled: `--records` chained records (a thousand per `append_audit`), then
//! the server's export (`plangate_server::audit::export`, the code behind
//! `GET /v1/operator/audit/export`) into memory, then `plangate audit
//! verify`'s verifier over it (every line parsed, re-encoded and hashed),
//! each timed. The bar: export plus verify of 1,000,000 records in
//! at most 30 s.
//!
//! Run: `cargo run --release -p plangate-bench --bin audit_chain -- --records 1000000`
//! `--smoke`: 2,000 records (`target/debug/audit_chain --smoke`, seconds).

use plangate_engine::{AuditEvent, Timestamp};
use plangate_store::prelude::*;
use plangate_store::SledStore;
use std::time::Instant;

/// An audit record the size of a decision's.
fn event(n: usize) -> AuditEvent {
    AuditEvent {
        at: Timestamp(1_700_000_000_000 + n as i64 * 100),
        agent: "claude".into(),
        session_id: format!("session-{}", n % 1000),
        actor: "telegram:@alice (Alice Example)".into(),
        action: "approved".into(),
        approval_id: Some(plangate_engine::ApprovalId([(n % 251) as u8; 16])),
        version: Some(1),
        detail: format!("Plan v1 \"Add retries to the uploader\" approved by Alice Example ({n})"),
    }
}

fn main() {
    let records: usize = plangate_bench::sized("--records", 1_000_000, 2_000);
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SledStore::open(dir.path()).expect("store");
    let started = Instant::now();
    for first in (0..records).step_by(1000) {
        let batch: Vec<AuditEvent> = (first..(first + 1000).min(records)).map(event).collect();
        store.append_audit(&batch).expect("append");
    }
    let fill = started.elapsed();

    let started = Instant::now();
    let head = store.audit_head().expect("head");
    let (tx, mut rx) = tokio::sync::mpsc::channel(8);
    let exporting = std::thread::scope(|s| {
        s.spawn(|| plangate_server::audit::export(&store, None, head, tx));
        let mut out = Vec::new();
        while let Some(chunk) = rx.blocking_recv() {
            out.extend_from_slice(&chunk.expect("export chunk"));
        }
        out
    });
    let export = started.elapsed();

    let started = Instant::now();
    let mut verifier = plangate_audit::Verifier::new(None);
    let body = exporting.strip_suffix(b"\n").unwrap_or(&exporting);
    for line in body.split(|b| *b == b'\n') {
        verifier.line_bytes(line).expect("intact");
    }
    let verified = verifier.finish(&[]).expect("intact");
    let verify = started.elapsed();
    assert_eq!(verified.records, records as u64);

    println!(
        "records {records}  export bytes {}  fill {:.2} s  export {:.2} s  verify {:.2} s  export+verify {:.2} s",
        exporting.len(),
        fill.as_secs_f64(),
        export.as_secs_f64(),
        verify.as_secs_f64(),
        (export + verify).as_secs_f64()
    );
}
