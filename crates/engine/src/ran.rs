//! What ran under an approval: the tally of an executing plan and the
//! receipt it becomes when the plan ends.
//!
//! An approval is a promise about what an agent will do; the receipt is
//! what it did. While an approved plan executes, every call the gate sees
//! is counted against the step in progress ([`Execution::record`]), with
//! the ones that did not simply run (asked, denied, outside the scope)
//! listed. When the plan ends (every step closed, a person's Done, the
//! agent planning again) the tally is sealed into a [`Ran`] on the
//! proposal that executed last: its cards, its page and
//! `GET /v1/approvals/{id}/receipt` show it, and its hash goes into the
//! audit chain, so the receipt a person reads later is the one recorded.
//!
//! Bounded by construction: counts per step, and at most
//! [`MAX_LISTED`] attempts and [`MAX_LISTED`] permission answers kept
//! (each cut to [`MAX_SHOWN_CHARS`]); the rest are counted in
//! `unlisted`. A session of 10,000 calls keeps a receipt of a few KiB.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::ids::{ApprovalId, Timestamp};
use crate::plan::{Step, StepStatus};

/// How many attempts (and, separately, permission answers) a receipt lists
/// one by one; the counts stay exact beyond it.
pub const MAX_LISTED: usize = 50;

/// How much of a call's command or path a listed attempt keeps.
pub const MAX_SHOWN_CHARS: usize = 200;

/// How many listed attempts a card shows (the page and the API show all).
pub const CARD_ATTEMPTS: usize = 5;

/// What the gate said to one call of an executing plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallOutcome {
    /// It ran without asking anyone.
    Allowed,
    /// People were asked (policy or a rule): a permission card.
    Asked,
    /// Refused (policy, a rule, an amendment waiting, the gate).
    Denied,
    /// A file tool outside the approved scope: refused, and people were
    /// asked to widen the scope.
    OutOfScope,
}

impl CallOutcome {
    fn says(self) -> &'static str {
        match self {
            CallOutcome::Allowed => "ran",
            CallOutcome::Asked => "asked",
            CallOutcome::Denied => "denied",
            CallOutcome::OutOfScope => "outside the scope",
        }
    }
}

/// The calls counted against one step (or against none: before the agent
/// marked any step, `number` is 0).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepCalls {
    /// 1-based position in the session's step list when counted; 0: no step.
    pub number: usize,
    pub step: String,
    pub calls: u32,
    #[serde(default)]
    pub asked: u32,
    #[serde(default)]
    pub denied: u32,
    #[serde(default)]
    pub out_of_scope: u32,
}

/// One call that did not simply run, as the receipt lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    pub at: Timestamp,
    /// The step it counted against (1-based; 0: none).
    pub step: usize,
    pub tool: String,
    /// The command, or the tool and its paths, cut to [`MAX_SHOWN_CHARS`].
    pub shown: String,
    pub outcome: CallOutcome,
}

/// The live tally of an executing plan, kept in the session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Execution {
    /// The approved versions it ran under: the plan, then each approved
    /// amendment.
    pub approvals: Vec<ApprovalId>,
    pub started_at: Timestamp,
    pub steps: Vec<StepCalls>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<Attempt>,
    /// Permission cards answered while it ran: `allowed once: git push (telegram:@alice)`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answers: Vec<String>,
    /// Versions of amendments proposed while it ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub amendments: Vec<u32>,
    /// Attempts and answers beyond [`MAX_LISTED`]: counted, not listed.
    #[serde(default)]
    pub unlisted: u32,
}

/// How an executed plan ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "how")]
pub enum Ending {
    /// Every step closed.
    Completed,
    /// A person ended it (the stalled card's Done).
    EndedBy { by: String },
    /// The agent went back to planning before closing every step.
    Replanned,
}

impl Ending {
    fn says(&self) -> String {
        match self {
            Ending::Completed => "completed".to_string(),
            Ending::EndedBy { by } => format!("ended by {by}"),
            Ending::Replanned => "left for a new plan".to_string(),
        }
    }
}

/// The sealed receipt of an executed plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ran {
    pub ending: Ending,
    pub ended_at: Timestamp,
    pub execution: Execution,
    /// `sha256:` of the canonical JSON of everything above
    /// ([`Ran::digest`]), as entered in the audit chain.
    pub hash: String,
}

/// The totals of a tally.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    pub calls: u32,
    pub asked: u32,
    pub denied: u32,
    pub out_of_scope: u32,
}

impl Execution {
    pub fn new(approval: ApprovalId, now: Timestamp) -> Execution {
        Execution {
            approvals: vec![approval],
            started_at: now,
            steps: Vec::new(),
            attempts: Vec::new(),
            answers: Vec::new(),
            amendments: Vec::new(),
            unlisted: 0,
        }
    }

    /// Count one call against the step the agent works on now: the first
    /// in progress, else the first still open, else none (0).
    pub fn record(&mut self, steps: &[Step], tool: &str, shown: &str, outcome: CallOutcome, now: Timestamp) {
        let current =
            steps.iter().position(|s| s.status == StepStatus::InProgress).or_else(|| steps.iter().position(|s| !s.status.is_closed()));
        let (number, text) = current.map_or((0, ""), |i| (i + 1, steps[i].step.as_str()));
        let entry = match self.steps.iter().position(|s| s.step == text && (s.number == 0) == (number == 0)) {
            Some(i) => &mut self.steps[i],
            None => {
                self.steps.push(StepCalls { number, step: text.to_string(), ..StepCalls::default() });
                self.steps.last_mut().expect("just pushed")
            }
        };
        entry.number = number;
        entry.calls = entry.calls.saturating_add(1);
        match outcome {
            CallOutcome::Allowed => return,
            CallOutcome::Asked => entry.asked = entry.asked.saturating_add(1),
            CallOutcome::Denied => entry.denied = entry.denied.saturating_add(1),
            CallOutcome::OutOfScope => entry.out_of_scope = entry.out_of_scope.saturating_add(1),
        }
        if self.attempts.len() >= MAX_LISTED {
            self.unlisted = self.unlisted.saturating_add(1);
            return;
        }
        // One line per attempt: a heredoc's lines joined with ⏎.
        let one_line: Vec<&str> = shown.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
        let shown = plangate_basics::text::cut_chars(&crate::text::reveal(&one_line.join(" ⏎ ")).0, MAX_SHOWN_CHARS);
        let tool = plangate_basics::text::cut_chars(tool, 64);
        self.attempts.push(Attempt { at: now, step: number, tool, shown, outcome });
    }

    /// A permission card answered while the plan ran.
    pub fn answered(&mut self, line: String) {
        if self.answers.len() >= MAX_LISTED {
            self.unlisted = self.unlisted.saturating_add(1);
        } else {
            self.answers.push(plangate_basics::text::cut_chars(&line, MAX_SHOWN_CHARS));
        }
    }

    pub fn totals(&self) -> Totals {
        self.steps.iter().fold(Totals::default(), |t, s| Totals {
            calls: t.calls.saturating_add(s.calls),
            asked: t.asked.saturating_add(s.asked),
            denied: t.denied.saturating_add(s.denied),
            out_of_scope: t.out_of_scope.saturating_add(s.out_of_scope),
        })
    }

    /// Seal the tally: steps in the order of the session's final list.
    pub fn seal(mut self, ending: Ending, now: Timestamp) -> Ran {
        self.steps.sort_by_key(|s| if s.number == 0 { usize::MAX } else { s.number });
        let hash = Ran::digest(&ending, now, &self);
        Ran { ending, ended_at: now, execution: self, hash }
    }
}

impl Totals {
    /// `50 calls, 1 asked, 2 denied (2 outside the scope)`: the line a
    /// completion shows.
    pub fn line(&self) -> String {
        let calls = if self.calls == 1 { "1 call".to_string() } else { format!("{} calls", self.calls) };
        let mut line = format!("{calls}, {} asked, {} denied", self.asked, self.denied + self.out_of_scope);
        if self.out_of_scope > 0 {
            line.push_str(&format!(" ({} outside the scope)", self.out_of_scope));
        }
        line
    }
}

impl Ran {
    /// The hash of a receipt's content: SHA-256 over its canonical JSON
    /// (serde's field order, no whitespace).
    pub fn digest(ending: &Ending, ended_at: Timestamp, execution: &Execution) -> String {
        #[derive(Serialize)]
        struct Canonical<'a> {
            ending: &'a Ending,
            ended_at: Timestamp,
            execution: &'a Execution,
        }
        let bytes = serde_json::to_vec(&Canonical { ending, ended_at, execution }).unwrap_or_default();
        format!("sha256:{}", hex::encode(Sha256::digest(&bytes)))
    }

    /// Whether `hash` is the hash of the rest (a stored receipt edited
    /// afterwards is not).
    pub fn intact(&self) -> bool {
        Ran::digest(&self.ending, self.ended_at, &self.execution) == self.hash
    }

    /// `Ran: 50 calls, 0 asked, 2 denied (2 outside the scope) · completed`.
    pub fn summary(&self) -> String {
        format!("{} · {}", self.execution.totals().line(), self.ending.says())
    }

    /// The card's lines: the summary, one line per step with calls, the
    /// first [`CARD_ATTEMPTS`] attempts and how many more the page lists.
    pub fn card_lines(&self) -> Vec<String> {
        let e = &self.execution;
        let mut lines = vec![self.summary()];
        for s in &e.steps {
            let step = if s.number == 0 { "before any step".to_string() } else { format!("step {}", s.number) };
            let mut extra = Vec::new();
            for (n, what) in [(s.asked, "asked"), (s.denied, "denied"), (s.out_of_scope, "outside the scope")] {
                if n > 0 {
                    extra.push(format!("{n} {what}"));
                }
            }
            let calls = if s.calls == 1 { "1 call".to_string() } else { format!("{} calls", s.calls) };
            let extra = if extra.is_empty() { String::new() } else { format!(" ({})", extra.join(", ")) };
            lines.push(format!("{step}: {calls}{extra}"));
        }
        for a in e.attempts.iter().take(CARD_ATTEMPTS) {
            lines.push(attempt_line(a));
        }
        let more = e.attempts.len().saturating_sub(CARD_ATTEMPTS) + e.unlisted as usize;
        if more > 0 {
            lines.push(format!("… and {more} more on the plan's page"));
        }
        if !e.amendments.is_empty() {
            let versions: Vec<String> = e.amendments.iter().map(|v| format!("v{v}")).collect();
            lines.push(format!("amendments: {}", versions.join(", ")));
        }
        if !e.answers.is_empty() {
            lines.push(format!("permission answers: {}", e.answers.len()));
        }
        lines
    }

    /// The line appended to the plan document and recorded in the audit.
    pub fn document_line(&self) -> String {
        format!("- {} — ran: {} ({})", self.ended_at.rfc3339(), self.summary(), self.hash)
    }
}

/// `⊘ Write /etc/hosts — outside the scope (step 2)`.
pub fn attempt_line(a: &Attempt) -> String {
    let mark = match a.outcome {
        CallOutcome::Asked => "❓",
        CallOutcome::Allowed => "•",
        CallOutcome::Denied | CallOutcome::OutOfScope => "⊘",
    };
    let step = if a.step == 0 { String::new() } else { format!(" (step {})", a.step) };
    format!("{mark} {} — {}{step}", a.shown, a.outcome.says())
}

/// What a call shows on a receipt: the shell command when it is one, else
/// the tool and the files it writes, else the tool.
pub fn shown(tool: &str, command: Option<String>, paths: &[String]) -> String {
    match command {
        Some(c) => c,
        None if !paths.is_empty() => format!("{tool} {}", paths.join(", ")),
        None => tool.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(statuses: &[StepStatus]) -> Vec<Step> {
        statuses.iter().enumerate().map(|(n, st)| Step { status: *st, ..Step::pending(format!("step {}", n + 1)) }).collect()
    }

    #[test]
    fn calls_count_against_the_step_in_progress_and_attempts_are_listed() {
        let mut e = Execution::new(ApprovalId([1; 16]), Timestamp(0));
        let mut list = steps(&[StepStatus::InProgress, StepStatus::Pending]);
        for _ in 0..3 {
            e.record(&list, "Bash", "cargo test", CallOutcome::Allowed, Timestamp(1));
        }
        list[0].status = StepStatus::Completed;
        e.record(&list, "Write", "Write /etc/hosts", CallOutcome::OutOfScope, Timestamp(2));
        e.record(&list, "Bash", "rm -rf /srv", CallOutcome::Denied, Timestamp(3));
        let t = e.totals();
        assert_eq!((t.calls, t.asked, t.denied, t.out_of_scope), (5, 0, 1, 1));
        assert_eq!(t.line(), "5 calls, 0 asked, 2 denied (1 outside the scope)");
        let ran = e.seal(Ending::Completed, Timestamp(4));
        assert!(ran.intact());
        assert_eq!(ran.execution.steps.iter().map(|s| (s.number, s.calls)).collect::<Vec<_>>(), vec![(1, 3), (2, 2)]);
        assert_eq!(
            ran.card_lines(),
            vec![
                "5 calls, 0 asked, 2 denied (1 outside the scope) · completed".to_string(),
                "step 1: 3 calls".to_string(),
                "step 2: 2 calls (1 denied, 1 outside the scope)".to_string(),
                "⊘ Write /etc/hosts — outside the scope (step 2)".to_string(),
                "⊘ rm -rf /srv — denied (step 2)".to_string(),
            ]
        );
    }

    #[test]
    fn a_flood_of_attempts_keeps_exact_counts_and_a_bounded_list() {
        let mut e = Execution::new(ApprovalId([1; 16]), Timestamp(0));
        let list = steps(&[StepStatus::InProgress]);
        let long = "x".repeat(10_000);
        for _ in 0..10_000 {
            e.record(&list, "Bash", &long, CallOutcome::Denied, Timestamp(1));
        }
        assert_eq!(e.totals().denied, 10_000);
        assert_eq!(e.attempts.len(), MAX_LISTED);
        assert_eq!(e.unlisted as usize, 10_000 - MAX_LISTED);
        assert!(e.attempts.iter().all(|a| a.shown.chars().count() <= MAX_SHOWN_CHARS));
        let ran = e.seal(Ending::Completed, Timestamp(2));
        assert!(serde_json::to_vec(&ran).unwrap().len() < 20_000);
        assert_eq!(ran.card_lines().last().unwrap(), &format!("… and {} more on the plan's page", 10_000 - CARD_ATTEMPTS));
    }

    #[test]
    fn an_edited_receipt_is_not_intact() {
        let mut e = Execution::new(ApprovalId([1; 16]), Timestamp(0));
        e.record(&steps(&[StepStatus::InProgress]), "Bash", "ls", CallOutcome::Allowed, Timestamp(1));
        let mut ran = e.seal(Ending::Completed, Timestamp(2));
        assert!(ran.intact());
        ran.execution.steps[0].calls = 0;
        assert!(!ran.intact());
    }

    #[test]
    fn calls_before_any_step_count_apart_and_last() {
        let mut e = Execution::new(ApprovalId([1; 16]), Timestamp(0));
        e.record(&[], "Read", "Read", CallOutcome::Allowed, Timestamp(1));
        e.record(&steps(&[StepStatus::InProgress]), "Bash", "ls", CallOutcome::Allowed, Timestamp(1));
        let ran = e.seal(Ending::Replanned, Timestamp(2));
        assert_eq!(ran.card_lines()[1..], ["step 1: 1 call".to_string(), "before any step: 1 call".to_string()]);
        assert!(ran.summary().ends_with("left for a new plan"));
    }

    #[test]
    fn a_heredoc_is_one_line_and_hidden_characters_show() {
        let mut e = Execution::new(ApprovalId([1; 16]), Timestamp(0));
        let commit = "git commit -F - <<'EOF'\nfix: retries\n\nbody \u{202e}txt\nEOF";
        e.record(&steps(&[StepStatus::InProgress]), "Bash", commit, CallOutcome::Asked, Timestamp(1));
        let shown = &e.attempts[0].shown;
        assert!(!shown.contains('\n') && !shown.contains('\u{202e}'), "{shown}");
        assert!(shown.starts_with("git commit -F - <<'EOF' ⏎ fix: retries ⏎ body"), "{shown}");
    }
}
