//! Issue 29, the rest, through the real binary: `[approvals] amendments =
//! "flag"`, and a plan's scope held to by the gate: writes outside it are
//! denied (`..`, absolute paths, a symlink out of the tree made on disk and
//! resolved by `plangate hook claude`), and an amendment widens it.

use crate::hooks::{hook, Run};
use crate::kit::{call, gate, gate_call, status};
use crate::sec_amend::{approved, say_as, sent, telegram};
use plangate_testkit::server::ServerProcess;
use plangate_testkit::telegram::FakeTelegram;
use reqwest::Method;
use serde_json::{json, Value};
use std::path::Path;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");

/// Telegram messages sent so far whose text contains `needle`.
fn sent_with(fake: &FakeTelegram, needle: &str) -> Vec<String> {
    fake.calls("sendMessage").iter().map(|r| r.str("text").to_string()).filter(|t| t.contains(needle)).collect()
}

/// Under `flag`, added steps go through at once, marked on the cards and in
/// the audit, with one notice (the amendment's card) per batch.
#[tokio::test]
async fn flagged_steps_go_through_marked_with_one_notice_per_batch() {
    let fake = FakeTelegram::start().await;
    let s = ServerProcess::start_with(BIN, &["ops"], &telegram(&fake, "\n[approvals]\namendments = \"flag\"\n")).await;
    approved(&s, "f1", json!({"title": "Fix typo", "steps": [{"step": "Fix the typo in README"}]})).await;
    let add = |steps: Value| s.agent(Method::POST, "/v1/sessions/f1/steps").json(&json!({"merge": true, "steps": steps}));
    let (st, d) = call(add(json!([{"step": "Also rotate all secrets"}]))).await;
    assert_eq!(st, 200, "{d}");

    // No wait: nothing pending, the gate stays open.
    let view = status(&s, "f1").await;
    assert_eq!((view["amendment"]["status"].as_str(), view["amendment"]["flagged"].as_bool()), (Some("approved"), Some(true)), "{view}");
    let (_, pending) = call(s.operator(Method::GET, "/v1/approvals?status=pending")).await;
    assert_eq!(pending.as_array().map(Vec::len), Some(0), "{pending}");
    let rm = json!({"session_id": "f1", "tool": "Bash", "input": {"command": "rm -rf build"}});
    assert_eq!(gate_call(&s, &rm).await.0, "allow");

    // One notice on the chat, marked.
    let card = sent(&fake, "Amendment to v1").await;
    assert!(card.contains("+ Also rotate all secrets (added after approval)") && card.contains("nobody approved"), "{card}");
    let (_, audit) = call(s.operator(Method::GET, "/v1/audit?agent=demo&session=f1")).await;
    let amend = audit.as_array().and_then(|a| a.iter().find(|e| e["action"] == "amend")).cloned().unwrap_or_default();
    assert!(amend["detail"].as_str().unwrap_or_default().contains("added after approval"), "{audit}");

    // Progress on the same batch: no second notice. A new batch: one more.
    let (st, d) = call(add(json!([{"step": "Also rotate all secrets", "status": "in_progress"}]))).await;
    assert_eq!(st, 200, "{d}");
    let (st, d) = call(add(json!([{"step": "Update the runbook"}]))).await;
    assert_eq!(st, 200, "{d}");
    let second = sent(&fake, "Update the runbook").await;
    assert!(second.contains("Amendment to v1") && second.contains("+ Update the runbook (added after approval)"), "{second}");
    assert_eq!(sent_with(&fake, "Amendment to v1").len(), 2, "one notice per batch");
    // The approved step is still locked.
    let (st, d) =
        call(s.agent(Method::POST, "/v1/sessions/f1/steps").json(&json!({"merge": false, "steps": [{"step": "Drop the db"}]}))).await;
    assert_eq!((st, d["error"]["code"].as_str()), (409, Some("approved_steps_locked")), "{d}");
}

/// A project on disk: `src/api/`, a symlink `src/api/escape` to a directory
/// outside it, and that directory.
struct Project {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
}

fn project() -> Project {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("shop");
    let outside = dir.path().join("elsewhere");
    std::fs::create_dir_all(root.join("src/api")).expect("src/api");
    std::fs::create_dir_all(&outside).expect("outside");
    std::os::unix::fs::symlink(&outside, root.join("src/api/escape")).expect("symlink");
    Project { root, _dir: dir }
}

/// A Claude Code `PreToolUse` of `Write` to `file_path`, in `cwd`.
fn write_event(session: &str, cwd: &Path, file_path: &str) -> Value {
    json!({
        "session_id": session,
        "transcript_path": "/tmp/transcript.jsonl",
        "cwd": cwd.display().to_string(),
        "permission_mode": "acceptEdits",
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": file_path, "content": "x"},
        "tool_use_id": "toolu_scope"
    })
}

fn allowed(run: &Run) -> bool {
    run.code == 0 && run.stdout.trim().is_empty()
}

fn scoped_plan() -> Value {
    json!({
        "title": "Fix the users endpoint",
        "steps": [{"step": "Fix the handler"}],
        "scope": {"paths": ["src/api/**", "tests/**"]},
        "harness": "claude_code"
    })
}

/// Writes through the Claude hook: inside the scope allowed; outside it,
/// through `..`, to an absolute path elsewhere, or through a symlink out of
/// the tree, denied with the scope named.
#[tokio::test]
async fn a_scoped_plan_denies_writes_outside_its_paths() {
    let s = ServerProcess::start(BIN, "").await;
    let state = tempfile::tempdir().expect("state dir");
    let p = project();
    approved(&s, "sc1", scoped_plan()).await;

    let inside = p.root.join("src/api/users.rs").display().to_string();
    for path in [inside.as_str(), "src/api/users.rs", "tests/users.rs"] {
        let run = hook(&s, &write_event("sc1", &p.root, path), &[], state.path()).await;
        assert!(allowed(&run), "{path}: {}", run.stdout);
    }
    for path in ["src/api/../../../x.rs", "../elsewhere/x.rs", "/etc/passwd", "src/api/escape/x.rs"] {
        let reason = hook(&s, &write_event("sc1", &p.root, path), &[], state.path()).await.pre_tool_use_denial();
        assert!(reason.contains("outside the session's working directory") && reason.contains("src/api/**"), "{path}: {reason}");
    }
    // A caller that claims an unnormalized path, and a patch climbing out, straight at the API.
    let claimed = json!({"session_id": "sc1", "tool": "Write", "input": {"file_path": "x"}, "paths": [{"path": "src/api/../../etc/x"}]});
    assert_eq!(gate_call(&s, &claimed).await.0, "deny");
    let patch = "*** Begin Patch\n*** Add File: ../escape.rs\n+x\n*** End Patch\n";
    let (verdict, reason) = gate(&s, "sc1", "apply_patch", json!({"command": patch})).await;
    assert_eq!(verdict, "deny", "{reason}");
    let inside = "*** Begin Patch\n*** Update File: src/api/users.rs\n@@\n-a\n+b\n*** End Patch\n";
    assert_eq!(gate(&s, "sc1", "apply_patch", json!({"command": inside})).await.0, "allow");
    // Inside the project, outside the scope: denied naming the scope (and
    // people are asked to widen it, so from here on nothing writes).
    let run = hook(&s, &write_event("sc1", &p.root, "src/payments/charge.rs"), &[], state.path()).await;
    let reason = run.pre_tool_use_denial();
    assert!(reason.contains("src/payments/charge.rs") && reason.contains("src/api/**, tests/**"), "{reason}");
    let reason = hook(&s, &write_event("sc1", &p.root, "src/api/users.rs"), &[], state.path()).await.pre_tool_use_denial();
    assert!(reason.contains("scope widened"), "{reason}");
}

/// Writing outside the scope asks people to widen it, on a card of its own;
/// under a quorum of two both must approve; then that file (only) is in.
#[tokio::test]
async fn widening_the_scope_by_amendment_under_a_quorum_of_two() {
    let fake = FakeTelegram::start().await;
    let s = ServerProcess::start_with(BIN, &["ops"], &telegram(&fake, "\n[destinations.ops.approvals]\nrequired = 2\n")).await;
    let state = tempfile::tempdir().expect("state dir");
    let p = project();
    let (st, d) = call(s.agent(Method::POST, "/v1/sessions/w1/enter")).await;
    assert_eq!(st, 200, "{d}");
    let (st, d) = call(s.agent(Method::POST, "/v1/sessions/w1/proposals").json(&scoped_plan())).await;
    assert_eq!(st, 201, "{d}");
    let card = sent(&fake, "Fix the users endpoint").await;
    assert!(card.contains("Touches: src/api/**, tests/**"), "{card}");
    let (alice, bob) = ((111, "alice"), (222, "bob"));
    say_as(&fake, alice, "/plan accept demo/w1", "1 of 2").await;
    say_as(&fake, bob, "/plan accept demo/w1", "Approved").await;

    let charge = "src/payments/charge.rs";
    let reason = hook(&s, &write_event("w1", &p.root, charge), &[], state.path()).await.pre_tool_use_denial();
    assert!(reason.contains("widen"), "{reason}");
    let card = sent(&fake, "Amendment to v1").await;
    assert!(card.contains("Claude wants to edit src/payments/charge.rs, outside src/api/**, tests/**"), "{card}");
    let view = status(&s, "w1").await;
    assert_eq!(view["amendment"]["status"], "pending", "{view}");
    // While it waits nothing writes, in scope or not; asking again posts no second card.
    let inside = p.root.join("src/api/users.rs").display().to_string();
    assert!(!allowed(&hook(&s, &write_event("w1", &p.root, &inside), &[], state.path()).await));
    hook(&s, &write_event("w1", &p.root, charge), &[], state.path()).await.pre_tool_use_denial();
    assert_eq!(sent_with(&fake, "Claude wants to edit").len(), 1);

    say_as(&fake, alice, "/plan accept demo/w1", "1 of 2").await;
    assert!(!allowed(&hook(&s, &write_event("w1", &p.root, charge), &[], state.path()).await), "one of two opens nothing");
    say_as(&fake, bob, "/plan accept", "Approved").await;
    assert!(allowed(&hook(&s, &write_event("w1", &p.root, charge), &[], state.path()).await));
    assert!(allowed(&hook(&s, &write_event("w1", &p.root, &inside), &[], state.path()).await));
    let reason = hook(&s, &write_event("w1", &p.root, "src/payments/refund.rs"), &[], state.path()).await.pre_tool_use_denial();
    assert!(reason.contains("src/payments/charge.rs"), "the scope now names the file: {reason}");
}
