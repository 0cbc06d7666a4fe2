//! The texts `/plan status`, `/plan subagents` and a malformed command
//! answer with: plain words about a session, no decision made here.

use plangate_engine::grammar;
use plangate_engine::view::short_ref;
use plangate_engine::{DecisionStatus, Mode, State};

pub(super) fn bad_command(text: &str) -> String {
    let result = match grammar::parse(text, None) {
        Ok(None) => grammar::parse_args(text).map(|_| ()),
        other => other.map(|_| ()),
    };
    match result {
        Err(e) => e.to_string(),
        Ok(()) => grammar::help(),
    }
}

pub(super) fn summary_line(state: &State) -> String {
    let s = &state.session;
    let line = match &state.latest {
        Some(p) if p.status == DecisionStatus::Pending => {
            format!("{} {} · v{} pending · {}", short_ref(&p.approval_id), s.key, p.version, p.plan.title)
        }
        _ if s.mode == Mode::Halted => format!("{} · halted: the plan was cancelled (read-only)", s.key),
        _ => format!("{} · plan mode, no pending plan", s.key),
    };
    match s.open_subagents.len() {
        0 => line,
        n => format!("{line} · {n} subagent run(s) open"),
    }
}

/// The open subagent runs of a session, for `/plan subagents` and `/plan status`.
pub(super) fn subagents_text(state: &State, now: plangate_engine::Timestamp) -> String {
    let runs = plangate_engine::subagents::describe(state, now);
    if runs.is_empty() {
        return format!("{}: no subagent run is open.", state.session.key);
    }
    let mut out = format!("{}\n", plangate_engine::card::SUBAGENTS_HEADING);
    out.push_str(&runs.iter().map(|r| format!("⏳ {r}")).collect::<Vec<_>>().join("\n"));
    out
}

pub(super) fn status_text(state: &State, now: plangate_engine::Timestamp) -> String {
    let s = &state.session;
    let mut out = format!(
        "{} · {} mode · approval {}",
        s.key,
        match s.mode {
            Mode::Plan => "plan",
            Mode::Halted => "halted (read-only)",
            Mode::Normal => "normal",
        },
        serde_json::to_value(s.approval).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
    );
    if let Some(p) = &state.latest {
        out.push_str(&format!("\nv{} {} {} ({})", p.version, short_ref(&p.approval_id), p.plan.title, p.status.as_str()));
    }
    for (i, step) in s.steps.iter().enumerate() {
        out.push_str(&format!("\n{}. {} {}", i + 1, step.status.mark(), step.step));
    }
    if s.auto_approve {
        out.push_str("\nauto-approve is on");
    }
    if !s.open_subagents.is_empty() {
        out.push('\n');
        out.push_str(&subagents_text(state, now));
    }
    out
}
