//! The Claude Code hook's lifecycle events through the real binary, fed the
//! sample events in tests/fixtures/claude/: `SessionStart` restores the plan
//! after a compaction (and on resume), `UserPromptSubmit` delivers an untaken
//! decision once, and subagent runs follow the subagent tool's `PreToolUse` /
//! `PostToolUse` / `PostToolUseFailure` and `SubagentStart` / `SubagentStop`.

use super::hooks::{event, hook, hook_raw};
use super::kit::{call, closed_port_url, status};
use plangate_testkit::server::ServerProcess;
use reqwest::Method;
use serde_json::{json, Value};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");

/// The `additionalContext` of a context answer to `event`.
fn context_of(run: &super::hooks::Run, event: &str) -> String {
    let v = run.json();
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], event, "{v}");
    assert!(v["hookSpecificOutput"].get("permissionDecision").is_none(), "{v}");
    v["hookSpecificOutput"]["additionalContext"].as_str().expect("additionalContext").to_string()
}

/// Approve the pending approval of `sid` as an operator.
async fn approve(s: &ServerProcess, sid: &str) -> Value {
    let id = s.pending_approval(sid).await;
    let (st, d) =
        call(s.operator(Method::POST, &format!("/v1/approvals/{id}/decision")).json(&json!({"action": "approve", "actor": "alice"}))).await;
    assert_eq!(st, 200, "{d}");
    d
}

#[tokio::test]
async fn session_start_after_compaction_restores_the_open_steps_and_on_resume_too() {
    let s = ServerProcess::start(BIN, "").await;
    let state = tempfile::tempdir().expect("state dir");
    let sid = "hydrate-1";

    // Nothing planned: nothing to restore, no output.
    let run = hook(&s, &event("session_start_compact.json", sid), &[], state.path()).await;
    assert_eq!((run.code, run.stdout.as_str()), (0, ""));

    // Claude proposes through ExitPlanMode, a person approves, Claude works.
    let run = hook(&s, &event("pre_tool_use_exit_plan_mode.json", sid), &[("PLANGATE_HOOK_WAIT", "0")], state.path()).await;
    assert!(run.pre_tool_use_denial().contains("awaiting approval"));
    approve(&s, sid).await;
    let done = json!({"merge": true, "steps": [
        {"step": "Add a `RetryPolicy` (3 attempts, 200 ms base, jitter) to `src/payments/client.rs`", "status": "completed"},
        {"step": "Wrap `charge` and `refund` in the policy; never retry non-idempotent `capture`", "status": "in_progress"}]});
    let (st, v) = call(s.agent(Method::POST, &format!("/v1/sessions/{sid}/steps")).json(&done)).await;
    assert_eq!(st, 200, "{v}");

    // After the compaction: the seed's text, only the open steps, as facts.
    // On resume nothing was compressed, and the first line does not say so
    // (issue 54).
    for (fixture, header) in [
        ("session_start_compact.json", "[Your active plan was preserved across context compression]"),
        ("session_start_resume.json", "[Your active plan, as it stands now that this session resumed]"),
    ] {
        let run = hook(&s, &event(fixture, sid), &[], state.path()).await;
        assert_eq!(run.code, 0);
        let text = context_of(&run, "SessionStart");
        let id = status(&s, sid).await["approval_id"].as_str().expect("id").to_string();
        assert_eq!(
            text,
            format!(
                "{header}\n\
                 Plan v1 \"Add retries to the payment client\" (approval {id}) was approved by a human; these steps remain.\n\
                 - [>] Wrap `charge` and `refund` in the policy; never retry non-idempotent `capture` (in_progress)\n\
                 - [ ] Add tests against the provider fake for 503, timeout and 400 (pending)"
            )
        );
        assert!(run.took < Duration::from_secs(2), "{:?}", run.took);
    }

    // Every step closed: nothing to restore.
    let closed = json!({"merge": true, "steps": [
        {"step": "Wrap `charge` and `refund` in the policy; never retry non-idempotent `capture`", "status": "completed"},
        {"step": "Add tests against the provider fake for 503, timeout and 400", "status": "cancelled"}]});
    let (st, v) = call(s.agent(Method::POST, &format!("/v1/sessions/{sid}/steps")).json(&closed)).await;
    assert_eq!(st, 200, "{v}");
    let run = hook(&s, &event("session_start_compact.json", sid), &[], state.path()).await;
    assert_eq!((run.code, run.stdout.as_str()), (0, ""));

    // plangate down: Claude is told the plan state is unknown, and nothing blocks.
    let run = hook_raw(&closed_port_url(), event("session_start_compact.json", sid).to_string().as_bytes(), &[], state.path()).await;
    assert_eq!(run.code, 0);
    assert!(context_of(&run, "SessionStart").contains("could not be reached"), "{}", run.stdout);
}

#[tokio::test]
async fn an_untaken_decision_reaches_claude_on_the_next_prompt_exactly_once() {
    let s = ServerProcess::start(BIN, "").await;
    let state = tempfile::tempdir().expect("state dir");
    let sid = "prompt-1";
    let prompt = event("user_prompt_submit.json", sid);

    // Nothing waiting: the prompt goes on as typed.
    let run = hook(&s, &prompt, &[], state.path()).await;
    assert_eq!((run.code, run.stdout.as_str()), (0, ""));

    // The hook's wait ended with the plan pending; the approval comes later.
    let run = hook(&s, &event("pre_tool_use_exit_plan_mode.json", sid), &[("PLANGATE_HOOK_WAIT", "1")], state.path()).await;
    assert!(run.pre_tool_use_denial().contains("awaiting approval"));
    approve(&s, sid).await;

    // The user types: the decision, with the approved steps, rides along.
    let run = hook(&s, &prompt, &[], state.path()).await;
    assert_eq!(run.code, 0);
    let text = context_of(&run, "UserPromptSubmit");
    assert!(text.starts_with("[PLAN_DECISION]: approved\n") && text.ends_with("[/PLAN_DECISION]"), "{text}");
    assert!(text.contains("The approved steps:\n1. Add a `RetryPolicy`"), "{text}");
    // Taken atomically: the next prompt gets nothing, and neither does a taker.
    let run = hook(&s, &prompt, &[], state.path()).await;
    assert_eq!((run.code, run.stdout.as_str()), (0, ""));
    let (_, taken) = call(s.agent(Method::POST, &format!("/v1/sessions/{sid}/injection/take"))).await;
    assert_eq!(taken, json!({"injection": null}));

    // A decision the hook itself handed to Claude (ExitPlanMode waited for
    // it) is taken too: the next prompt does not repeat it.
    let sid = "prompt-2";
    let pre = event("pre_tool_use_exit_plan_mode.json", sid);
    let approver = async { s.decide_when_pending(sid, json!({"action": "revise", "feedback": "add a metric", "actor": "bob"})).await };
    let (run, decided) = tokio::join!(hook(&s, &pre, &[("PLANGATE_HOOK_WAIT", "30")], state.path()), approver);
    assert_eq!(decided["status"], "rejected");
    assert!(run.pre_tool_use_denial().contains("add a metric"));
    let run = hook(&s, &event("user_prompt_submit.json", sid), &[], state.path()).await;
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "delivered twice");

    // plangate down: the prompt is never blocked.
    let run = hook_raw(&closed_port_url(), prompt.to_string().as_bytes(), &[], state.path()).await;
    assert_eq!((run.code, run.stdout.as_str()), (0, ""));
}

#[tokio::test]
async fn subagent_runs_follow_claude_codes_events_and_hold_up_approval_until_they_end() {
    let s = ServerProcess::start(BIN, "").await;
    let state = tempfile::tempdir().expect("state dir");
    let sid = "subagents-1";
    let run = hook(&s, &event("pre_tool_use_exit_plan_mode.json", sid), &[("PLANGATE_HOOK_WAIT", "0")], state.path()).await;
    assert!(run.pre_tool_use_denial().contains("awaiting approval"));
    let open = |v: &Value| v["open_subagents"].clone();

    // Claude starts an Explore subagent: the gate lets it through (no
    // output) and opens no run of its own (Claude Code may still refuse to
    // start it, and would then report nothing more).
    let run = hook(&s, &event("pre_tool_use_agent.json", sid), &[], state.path()).await;
    assert_eq!((run.code, run.stdout.as_str()), (0, ""));
    assert_eq!(open(&status(&s, sid).await), json!([]));
    // The subagent itself starts, works (its tool calls are its heartbeat)…
    let run = hook(&s, &event("subagent_start.json", sid), &[], state.path()).await;
    assert_eq!((run.code, run.stdout.as_str()), (0, ""));
    let run = hook(&s, &event("pre_tool_use_read_in_subagent.json", sid), &[], state.path()).await;
    assert_eq!((run.code, run.stdout.as_str()), (0, ""));
    // The tool call returns at launch (background subagents): the run stays open.
    let run = hook(&s, &event("post_tool_use_agent.json", sid), &[], state.path()).await;
    assert_eq!((run.code, run.stdout.as_str()), (0, ""));
    assert_eq!(open(&status(&s, sid).await), json!(["agent:a3f9c2e1"]));

    // …and meanwhile nobody can approve the plan.
    let id = s.pending_approval(sid).await;
    let approve_call =
        || s.operator(Method::POST, &format!("/v1/approvals/{id}/decision")).json(&json!({"action": "approve", "actor": "alice"}));
    let (st, e) = call(approve_call()).await;
    assert_eq!((st, e["error"]["code"].as_str()), (409, Some("subagents_open")), "{e}");
    assert_eq!(e["error"]["details"]["open_subagents"], json!(["agent:a3f9c2e1"]));

    // The subagent stops: its run closes.
    let run = hook(&s, &event("subagent_stop.json", sid), &[], state.path()).await;
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "a stopping subagent is never held");
    assert_eq!(open(&status(&s, sid).await), json!([]));

    // A subagent call that Claude Code refuses to start (no SubagentStart,
    // no PostToolUse) or that fails leaves nothing open.
    let mut second = event("pre_tool_use_agent.json", sid);
    second["tool_use_id"] = json!("toolu_01Zx4Cv7Bn1Mq8Lp3Ks6Dg2H");
    let run = hook(&s, &second, &[], state.path()).await;
    assert_eq!(run.stdout, "");
    let run = hook(&s, &event("post_tool_use_failure_agent.json", sid), &[], state.path()).await;
    assert_eq!((run.code, run.stdout.as_str()), (0, ""));
    assert_eq!(open(&status(&s, sid).await), json!([]));

    // A subagent call the gate refuses (in another worktree) opens nothing;
    // one without a tool_use_id (Claude Code before 2.0.43, without
    // SubagentStart) cannot be tracked, so it is blocked.
    let mut isolated = event("pre_tool_use_agent.json", sid);
    isolated["tool_input"]["isolation"] = json!("worktree");
    hook(&s, &isolated, &[], state.path()).await.pre_tool_use_denial();
    let mut untracked = event("pre_tool_use_agent.json", sid);
    untracked.as_object_mut().expect("object").remove("tool_use_id");
    let reason = hook(&s, &untracked, &[], state.path()).await.pre_tool_use_denial();
    assert!(reason.contains("tool_use_id"), "{reason}");
    assert_eq!(open(&status(&s, sid).await), json!([]));

    // Nothing open: the approval goes through, and the audit has every run.
    let (st, d) = call(approve_call()).await;
    assert_eq!((st, d["status"].as_str()), (200, Some("approved")), "{d}");
    let (_, audit) = call(s.operator(Method::GET, &format!("/v1/audit?session={sid}"))).await;
    let runs: Vec<String> = audit
        .as_array()
        .expect("audit")
        .iter()
        .filter(|e| e["action"].as_str().is_some_and(|a| a.starts_with("subagent_")))
        .map(|e| format!("{} {}", e["action"].as_str().unwrap_or(""), e["detail"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(runs, ["subagent_open agent:a3f9c2e1", "subagent_close agent:a3f9c2e1"]);

    // plangate down: a stopping subagent is still never held, and a new
    // subagent call is blocked (the gate cannot be asked).
    let down = closed_port_url();
    let run = hook_raw(&down, event("subagent_stop.json", sid).to_string().as_bytes(), &[], state.path()).await;
    assert_eq!((run.code, run.stdout.as_str()), (0, ""));
    let run = hook_raw(&down, event("pre_tool_use_agent.json", sid).to_string().as_bytes(), &[], state.path()).await;
    assert!(run.pre_tool_use_denial().contains("cannot reach plangate"));
}
