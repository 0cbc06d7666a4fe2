//! `ExitPlanMode`: the plan Claude Code presents, proposed to plangate, and
//! the wait for people's decision, answered in Claude Code's terms.

use super::*;

/// Propose, wait, answer. The flag says whether the answer hands Claude a
/// final decision (then its injection is taken: see [`answer`]).
pub(super) async fn exit_plan_mode(call: &ToolCall, settings: &Settings, channel: bool) -> (Answer, bool) {
    let env = crate::claude::plan_file::Environment::current(call.cwd.as_deref());
    let markdown = match plan_text(&call.tool_input, &env) {
        Ok(m) => m,
        Err(why) => return (Answer::deny(call.event, format!("plangate: {why}")), false),
    };
    let body = ProposalBody::markdown(markdown, None);
    // The project is the one Claude Code works in, not the hook's own directory.
    let client = settings.client.clone().in_dir(call.cwd.as_deref().map(std::path::Path::new));
    let submitted = tokio::time::timeout(
        QUICK_BUDGET,
        submit(&client, settings.recall.as_ref(), &call.session_id, &body, "Claude Code called ExitPlanMode"),
    )
    .await;
    let submitted = match submitted {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return (Answer::deny(call.event, format!("plangate could not submit the plan: {e}")), false),
        Err(_) => {
            return (Answer::deny(call.event, "plangate did not take the plan in time; call ExitPlanMode again with the same plan"), false)
        }
    };
    let mut decision = submitted.decision;
    if !decision.is_final() {
        // Long-polls of at most 300 s each, chained up to the whole wait.
        match settings.client.wait_decision(&call.session_id, settings.wait).await {
            Ok(Some(d)) if d.approval_id == decision.approval_id => decision = d,
            Ok(Some(d)) => {
                let text = format!(
                    "plangate: plan v{} was replaced by v{} while waiting; call ExitPlanMode with your current plan",
                    decision.version, d.version
                );
                return (Answer::deny(call.event, text), false);
            }
            Ok(None) => {}
            Err(AgentError::Timeout { .. }) => {}
            Err(e) => return (Answer::deny(call.event, format!("plangate could not learn the decision: {e}")), false),
        }
    }
    let delivered = matches!(
        decision.status,
        DecisionStatus::Approved | DecisionStatus::Edited | DecisionStatus::Rejected | DecisionStatus::TimedOut | DecisionStatus::Cancelled
    );
    (decide(call, &decision, submitted.recalled, channel), delivered)
}

/// What Claude is told when the wait ends with the plan still pending.
///
/// Without a channel: a deny that tells Claude to call `ExitPlanMode` again
/// with the same plan; the decision then reaches Claude on the user's next
/// prompt (`UserPromptSubmit` delivers the untaken `[PLAN_DECISION]`), or
/// when it calls again. With a plangate channel running in this Claude
/// process (`channel`): the dialog is left open (`ask` for `PreToolUse`, no
/// decision for `PermissionRequest`), and the channel answers it when the
/// human decides (see [`super::channel`]).
pub(super) fn still_pending(call: &ToolCall, d: &DecisionView, channel: bool) -> Answer {
    if channel {
        let reason = format!(
            "plangate: plan v{} awaits a human's approval (id {}); plangate's channel answers this dialog when they decide",
            d.version, d.approval_id
        );
        return match call.event {
            Event::PermissionRequest => Answer::NoDecision,
            _ => Answer::Ask(reason),
        };
    }
    Answer::deny(
        call.event,
        format!(
            "plangate: plan v{} is awaiting approval (id {}); call ExitPlanMode again with the same plan to check",
            d.version, d.approval_id
        ),
    )
}

/// The permission mode Claude Code continues in once people approved the
/// plan: the operator's `[agents.<id>] after_approval`, which the decision
/// carries (`acceptEdits` by default: the approval was the person's one
/// tap, so file edits go without a second ask at the terminal and a 🔐
/// card each, while plangate's gate still holds every call to the approved
/// plan and its scope, and shell commands still ask; `default` for Claude
/// Code's manual mode; `auto` for its auto mode; `keep` to leave the mode
/// as Claude Code chooses it). `PLANGATE_AFTER_APPROVAL_MODE` in the hook's
/// environment overrides it; a value neither knows keeps the mode, with a
/// warning.
fn after_approval_mode(d: &DecisionView) -> Option<&'static str> {
    let local = std::env::var("PLANGATE_AFTER_APPROVAL_MODE").ok().filter(|v| !v.is_empty());
    match local.as_deref().or(d.after_approval.as_deref()) {
        None | Some("acceptEdits" | "accept_edits") => Some("acceptEdits"),
        Some("default") => Some("default"),
        Some("auto") => Some("auto"),
        Some("keep") => None,
        Some(other) => {
            eprintln!("plangate: the mode after approval {other:?} is not acceptEdits, default, auto or keep; the mode is kept");
            None
        }
    }
}

pub(super) fn decide(call: &ToolCall, d: &DecisionView, recalled: bool, channel: bool) -> Answer {
    let by = d.decided_by.as_deref().unwrap_or("a human");
    match d.status {
        DecisionStatus::Approved => match call.event {
            // The decision, with the approved steps, for Claude to execute.
            Event::PreToolUse => match &d.injection {
                Some(text) => Answer::Context { event: Event::PreToolUse, text: text.clone() },
                None => Answer::NoDecision,
            },
            _ => Answer::AllowPlan { updated_input: call.tool_input.clone(), mode: after_approval_mode(d) },
        },
        DecisionStatus::Edited => {
            let edited = d.plan.as_ref().map(render_markdown).unwrap_or_default();
            match call.event {
                Event::PreToolUse => {
                    let injection = d.injection.clone().unwrap_or_else(|| {
                        format!("Plan v{} was approved with edits by {by}: execute the edited plan below, not your original.", d.version)
                    });
                    Answer::Context { event: Event::PreToolUse, text: format!("{injection}\n\nThe approved plan:\n\n{edited}") }
                }
                _ => {
                    let mut updated = call.tool_input.clone();
                    match updated.as_object_mut() {
                        Some(obj) => {
                            obj.insert("plan".to_string(), json!(edited));
                        }
                        None => updated = json!({"plan": edited}),
                    }
                    Answer::AllowPlan { updated_input: updated, mode: after_approval_mode(d) }
                }
            }
        }
        DecisionStatus::Rejected => {
            let text = d.injection.clone().unwrap_or_else(|| {
                format!(
                    "{by} requested changes to plan v{}: {}\nRevise the plan and call ExitPlanMode again.",
                    d.version,
                    d.feedback.as_deref().unwrap_or("(no feedback)")
                )
            });
            let again = if recalled { "You sent the same plan again; it was already sent back. " } else { "" };
            Answer::deny(call.event, format!("plangate: {again}{text}"))
        }
        DecisionStatus::Pending => still_pending(call, d, channel),
        DecisionStatus::Superseded => Answer::deny(
            call.event,
            format!("plangate: plan v{} was superseded by a newer proposal; call ExitPlanMode with your current plan", d.version),
        ),
        DecisionStatus::TimedOut | DecisionStatus::Cancelled => {
            let text = d.injection.clone().unwrap_or_else(|| format!("plan v{} was {}; it was not approved", d.version, d.status.as_str()));
            Answer::deny(call.event, format!("plangate: {text}"))
        }
    }
}

/// The plan markdown of an `ExitPlanMode` call.
pub(super) fn plan_text(tool_input: &Value, env: &crate::claude::plan_file::Environment) -> Result<String, String> {
    if let Some(plan) = tool_input.get("plan").and_then(Value::as_str).filter(|p| !p.trim().is_empty()) {
        return Ok(plan.to_string());
    }
    match tool_input.get("planFilePath").and_then(Value::as_str).filter(|p| !p.trim().is_empty()) {
        Some(path) => read_plan_file(path, env),
        None => Err(
            "ExitPlanMode carried no plan, so it is blocked: write your plan to the plan file that plan mode names (Write), then call ExitPlanMode again"
                .to_string(),
        ),
    }
}

/// Read a plan file, but only a `.md` file inside Claude Code's plans
/// directory: the path comes from tool input, and the file's text goes to
/// the approvers' chats.
pub(super) fn read_plan_file(path: &str, env: &crate::claude::plan_file::Environment) -> Result<String, String> {
    let refuse = || format!("ExitPlanMode's planFilePath {path:?} is not a .md file in Claude Code's plans directory, so it is blocked");
    let expanded = match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => Path::new(&home).join(rest),
        _ => PathBuf::from(path),
    };
    let file = expanded.canonicalize().map_err(|e| format!("cannot read ExitPlanMode's plan file {path:?} ({e}), so it is blocked"))?;
    let root = env.plans_dir().and_then(|d| d.canonicalize().ok()).ok_or_else(refuse)?;
    if !file.starts_with(&root) || file.extension().is_none_or(|e| e != "md") {
        return Err(refuse());
    }
    let mut text = String::new();
    let read = std::fs::File::open(&file).and_then(|f| std::io::Read::read_to_string(&mut std::io::Read::take(f, 1 << 20), &mut text));
    read.map_err(|e| format!("cannot read ExitPlanMode's plan file {path:?} ({e}), so it is blocked"))?;
    if text.trim().is_empty() {
        return Err(format!("ExitPlanMode's plan file {path:?} is empty, so it is blocked"));
    }
    Ok(text)
}
