//! The tamper-evident audit through the real binary: an export of more
//! than 10,000 records verifies offline; each of 1,000 single-byte edits,
//! removed, inserted and moved lines fails verification naming the line
//! it changed; a tail cut (and given a correct end line) is caught against
//! the last checkpoint of the checkpoint file; the key file is private.

use plangate_engine::{AuditEvent, Timestamp};
use plangate_store::prelude::*;
use plangate_store::SledStore;
use plangate_testkit::server::{ServerProcess, OPERATOR_TOKEN};
use reqwest::Method;
use serde_json::json;
use std::path::Path;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");

/// Records written straight into the stopped server's store: the quick
/// way to a large audit (a transition writes a few at a time).
const BULK: usize = 10_000;

async fn cli(args: &[&str]) -> (i32, String) {
    let out = tokio::process::Command::new(BIN).args(args).env("PLANGATE_OPERATOR_TOKEN", OPERATOR_TOKEN).output();
    let out = tokio::time::timeout(Duration::from_secs(120), out).await.expect("finished").expect("run");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

fn bulk_event(n: usize) -> AuditEvent {
    AuditEvent {
        at: Timestamp(1_700_000_000_000 + n as i64),
        agent: "demo".into(),
        session_id: format!("bulk-{}", n % 97),
        actor: "telegram:@alice".into(),
        action: "approved".into(),
        approval_id: None,
        version: Some(1),
        detail: format!("record {n}: ünïcödé \"quoted\" \\ and a tab\t"),
    }
}

/// A server that decided a plan, was stopped (a checkpoint), got
/// [`BULK`] more records and runs again.
async fn server_with_a_big_audit(checkpoints: &Path) -> ServerProcess {
    let section = format!("{}\n[audit]\ncheckpoint_interval = \"1h\"\ncheckpoint_file = {:?}\n", plangate_testkit::pg::SLED, checkpoints);
    let mut s = ServerProcess::start(BIN, &section).await;
    s.agent(Method::POST, "/v1/sessions/audited/enter").send().await.expect("enter");
    let body = json!({"title": "Audited", "steps": [{"step": "one"}]});
    let (st, d) = ServerProcess::send(s.agent(Method::POST, "/v1/sessions/audited/proposals").json(&body)).await;
    assert_eq!(st, 201, "{d}");
    s.decide_when_pending("audited", json!({"action": "approve", "actor": "alice"})).await;
    assert!(s.terminate().await.success());
    {
        let store = SledStore::open(&s.data_path()).expect("the stopped server's store");
        for batch in (0..BULK).collect::<Vec<_>>().chunks(500) {
            store.append_audit(&batch.iter().map(|n| bulk_event(*n)).collect::<Vec<_>>()).expect("append");
        }
    }
    s.start_again_on_same_port().await;
    s
}

/// The 1-based line where `changed` first differs from `original`.
fn first_difference(original: &[u8], changed: &[u8]) -> usize {
    let a: Vec<&[u8]> = original.split(|b| *b == b'\n').collect();
    let b: Vec<&[u8]> = changed.split(|b| *b == b'\n').collect();
    (0..).find(|i| a.get(*i) != b.get(*i)).expect("they differ") + 1
}

/// xorshift64*: reproducible changes without a dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n as u64) as usize
    }
}

/// One random change: a byte edited, a line removed, a line inserted (a
/// copy of another), or two lines swapped.
fn change(original: &[u8], rng: &mut Rng, kind: usize) -> Vec<u8> {
    let body = original.strip_suffix(b"\n").expect("ends with a newline");
    let mut lines: Vec<Vec<u8>> = body.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
    let n = lines.len();
    match kind % 4 {
        0 => {
            let mut text = original.to_vec();
            let at = rng.below(text.len());
            let to = rng.below(256) as u8;
            text[at] = if text[at] == to { to.wrapping_add(1) } else { to };
            return text;
        }
        1 => {
            lines.remove(rng.below(n));
        }
        2 => {
            let copy = lines[rng.below(n)].clone();
            lines.insert(rng.below(n + 1), copy);
        }
        _ => {
            let i = rng.below(n);
            let j = (i + 1 + rng.below(n - 1)) % n;
            lines.swap(i, j);
        }
    }
    let mut text = lines.join(&b'\n');
    text.push(b'\n');
    text
}

#[tokio::test]
async fn an_export_verifies_and_every_single_change_or_a_cut_tail_is_named() {
    let dir = tempfile::tempdir().expect("dir");
    let checkpoints = dir.path().join("checkpoints.jsonl");
    let mut s = server_with_a_big_audit(&checkpoints).await;
    let data_dir = s.data_path();
    let (code, key) = cli(&["audit", "key", "--data-dir", data_dir.to_str().expect("utf-8")]).await;
    assert_eq!(code, 0, "{key}");
    let key = key.trim().to_string();
    assert_eq!(key.len(), 64, "{key}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(data_dir.join("audit-key")).expect("key file").permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the audit key is private");
    }

    let export = dir.path().join("audit.jsonl");
    let export_arg = export.to_str().expect("utf-8");
    let (code, out) = cli(&["audit", "export", "--out", export_arg, "--url", &s.base]).await;
    assert_eq!(code, 0, "{out}");
    // The shutdown's checkpoint signs the head the export ended at.
    assert!(s.terminate().await.success());
    let cps = checkpoints.to_str().expect("utf-8");
    assert_eq!(std::fs::read_to_string(&checkpoints).expect("checkpoints").lines().count(), 2, "one per shutdown");

    let original = std::fs::read(&export).expect("export");
    let lines = original.split(|b| *b == b'\n').filter(|l| !l.is_empty()).count();
    assert!(lines > BULK + 2, "{lines} lines");
    let text = String::from_utf8_lossy(&original);
    assert!(
        text.contains("\"action\":\"audit_checkpoint\"") && text.contains("\"action\":\"audit_exported\""),
        "checkpoints and the export itself are in the chain"
    );
    let (code, out) = cli(&["audit", "verify", export_arg, "--key", &key, "--checkpoints", cps]).await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("intact: ") && out.contains("checkpoints matched"), "{out}");

    // A cut tail with a correct end line: whole by itself, caught against
    // the last checkpoint.
    let body = text.trim_end_matches('\n');
    let kept: Vec<&str> = body.lines().take(lines - 4).collect();
    let last: serde_json::Value = serde_json::from_str(kept.last().expect("a record")).expect("json");
    let end = plangate_audit::export::Line::End {
        last_seq: last["seq"].as_u64().expect("seq"),
        hash: hex::decode(last["hash"].as_str().expect("hash")).expect("hex").try_into().expect("32 bytes"),
        records: (kept.len() - 1) as u64,
    };
    let cut = dir.path().join("cut.jsonl");
    std::fs::write(&cut, format!("{}\n{}\n", kept.join("\n"), end.to_line())).expect("write");
    let cut_arg = cut.to_str().expect("utf-8");
    let (code, out) = cli(&["audit", "verify", cut_arg, "--key", &key]).await;
    assert_eq!(code, 0, "without the checkpoint file a clean cut is not seen: {out}");
    let (code, out) = cli(&["audit", "verify", cut_arg, "--key", &key, "--checkpoints", cps]).await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("the newest records were cut"), "{out}");

    // 1,000 single changes, each named at its line by the verifier the
    // binary runs; every 20th also through the binary itself (a debug
    // build takes a second a run).
    let mut rng = Rng(0x5eed_a0d1_7000_0051);
    let changed_path = dir.path().join("changed.jsonl");
    let changed_arg = changed_path.to_str().expect("utf-8");
    let checkpoint_list: Vec<plangate_audit::Checkpoint> = std::fs::read_to_string(&checkpoints)
        .expect("checkpoints")
        .lines()
        .map(|l| plangate_audit::Checkpoint::parse(l).expect("a checkpoint"))
        .collect();
    let public = plangate_audit::VerifyingKey::from_bytes(&hex::decode(&key).expect("hex").try_into().expect("32 bytes")).expect("key");
    for i in 0..1000 {
        let changed = change(&original, &mut rng, i);
        if changed == original {
            continue;
        }
        let line = first_difference(&original, &changed);
        let broken = verify_in_process(&changed, &public, &checkpoint_list).expect_err("a changed export fails");
        assert_eq!(broken.line(), Some(line), "change {i} (kind {}) at line {line}: {broken}", i % 4);
        if i % 20 == 0 {
            std::fs::write(&changed_path, &changed).expect("write");
            let (code, out) = cli(&["audit", "verify", changed_arg, "--key", &key, "--checkpoints", cps]).await;
            assert_eq!(code, 1, "change {i} (kind {}) at line {line} passed: {out}", i % 4);
            assert!(out.contains(&format!("line {line}:")), "change {i} (kind {}) at line {line}: {out}", i % 4);
        }
    }
}

/// What `plangate audit verify` does with a file, on bytes in memory.
fn verify_in_process(
    text: &[u8],
    key: &plangate_audit::VerifyingKey,
    checkpoints: &[plangate_audit::Checkpoint],
) -> Result<plangate_audit::Verified, plangate_audit::Broken> {
    let mut verifier = plangate_audit::Verifier::new(Some(key));
    let body = text.strip_suffix(b"\n").unwrap_or(text);
    for line in body.split(|b| *b == b'\n') {
        if verifier.line_bytes(line).is_err() {
            break;
        }
    }
    verifier.finish(checkpoints)
}
