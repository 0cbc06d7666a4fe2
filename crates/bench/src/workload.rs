//! The workload every benchmark shares: a realistic plan, the timer policy of
//! `config/default.toml` (nudges at 10, 30 and 60 minutes, a 24 h timeout),
//! and one approval cycle per session: enter → propose → approve.

use plangate_engine::{Actor, ApprovalId, Command, Ctx, Plan, SessionKey, Step, TimerPolicy, Timestamp, Transition, Verdict};
use std::sync::atomic::{AtomicU64, Ordering};

/// The agent every benchmark session belongs to (the harness config's `demo`).
pub const AGENT: &str = "demo";

/// A plan of the size agents send: title, summary, six steps with
/// acceptance criteria, assumptions, risks, verification (≈1.3 KB as JSON).
pub fn plan(n: u64) -> Plan {
    let step = |i: usize, text: &str| Step {
        acceptance_criteria: vec![format!("criterion {i}a holds"), format!("criterion {i}b holds")],
        ..Step::pending(text)
    };
    Plan {
        summary: Some("Retry transient failures of the upstream client with jittered exponential backoff, capped.".to_string()),
        steps: vec![
            step(1, "Read the HTTP client and list every call site"),
            step(2, "Add a RetryPolicy type with max attempts and a cap"),
            step(3, "Wrap idempotent calls in the retry loop"),
            step(4, "Surface the final error with the attempt count"),
            step(5, "Unit-test the backoff schedule with a fake clock"),
            step(6, "Run the integration suite against the staging fake"),
        ],
        assumptions: vec!["Only GET and PUT are idempotent here".to_string()],
        risks: vec!["Retries can amplify an outage; the cap bounds it".to_string(), "Timeouts add latency to failures".to_string()],
        verification: vec!["cargo test -p client".to_string(), "a soak run shows no retry storm".to_string()],
        ..Plan::titled(format!("Plan {n}: add retries with backoff to the upstream client"))
    }
}

/// The markdown document of [`plan`] `n`, as plangate renders it.
pub fn plan_markdown(n: u64) -> String {
    plangate_engine::plan::render_markdown(&plan(n))
}

/// Nudges at 10, 30 and 60 minutes and a 24 h timeout: four timers per proposal.
pub fn policy() -> TimerPolicy {
    TimerPolicy { nudges_ms: vec![600_000, 1_800_000, 3_600_000], timeout_ms: Some(86_400_000), ..TimerPolicy::default() }
}

/// Wall-clock milliseconds.
pub fn now() -> Timestamp {
    let ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0);
    Timestamp(ms)
}

/// Unique 128-bit values for approval ids: a per-process nonce and a counter
/// (benchmarks must never collide; real ids are random).
pub fn fresh_random() -> [u8; 16] {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    static NONCE: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let nonce = *NONCE.get_or_init(|| {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(7);
        t ^ (u64::from(std::process::id()) << 32)
    });
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&nonce.to_be_bytes());
    out[8..].copy_from_slice(&n.to_be_bytes());
    out
}

pub fn ctx() -> Ctx {
    Ctx { now: now(), random: fresh_random(), timers: policy(), approvals: Default::default() }
}

/// The approver who taps Approve.
pub fn approver() -> Actor {
    Actor::Human { id: "telegram:111111".to_string(), name: "telegram:@alice".to_string() }
}

pub fn key(session: usize) -> SessionKey {
    SessionKey::new(AGENT, format!("bench-{session}"))
}

pub fn enter() -> Command {
    Command::Enter { reason: None }
}

pub fn propose(n: u64) -> Command {
    Command::Propose { plan: plan(n), markdown: None, requested_by: None, harness: plangate_engine::Harness::Api, project: None }
}

pub fn approve(id: ApprovalId) -> Command {
    Command::Decide { approval_id: id, verdict: Verdict::Approve }
}

/// The approval id a propose transition minted.
pub fn minted(t: &Transition) -> Option<ApprovalId> {
    t.state.latest.as_ref().map(|p| p.approval_id)
}
