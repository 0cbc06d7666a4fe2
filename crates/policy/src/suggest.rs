//! Candidate rules from repeated human approvals (`plangate policy
//! suggest`): calls people were asked about and allowed, again and again,
//! grouped by agent, project, tool and the classes the plan had not
//! declared; each group a candidate `auto` rule with the prompts it would
//! have saved. A group with a class above [`Level::Low`] is never offered
//! as `auto`: it is held back, with the advice to declare the class in the
//! plans that need it, where a person approves it with the plan.

use crate::replay::{Entry, Recorded};
use crate::route::CallVerdict;
use crate::rule::RuleSpec;
use plangate_gate::classes::RiskClass;
use serde::Serialize;
use std::collections::BTreeMap;

/// How much harm a class can do when it runs by mistake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Undone in a minute (a plain push can be reverted).
    Low,
    /// Changes shared state that takes work to undo.
    Medium,
    /// Destroys data, history or trust, or hands the machine to someone else.
    High,
}

/// The level of a class. Only `git.push` is low: everything else either
/// changes shared state or cannot be taken back.
pub fn level(class: RiskClass) -> Level {
    match class {
        RiskClass::GitPush => Level::Low,
        RiskClass::DbMigrate | RiskClass::PackagePublish | RiskClass::SecretsRead | RiskClass::InfraChange => Level::Medium,
        RiskClass::FilesDelete | RiskClass::DbDrop | RiskClass::GitRewrite | RiskClass::NetExec | RiskClass::Privilege => Level::High,
    }
}

/// The fewest approvals of one kind of call before it is suggested.
pub const MIN_APPROVALS: usize = 2;

/// A candidate rule and what it would have saved.
#[derive(Debug, Clone, Serialize)]
pub struct Suggestion {
    pub rule: RuleSpec,
    /// Prompts people answered "allow" that the rule would have answered.
    pub saved: usize,
    /// Every time this kind of call was asked.
    pub asked: usize,
}

/// A kind of call people allowed repeatedly that is not offered as `auto`.
#[derive(Debug, Clone, Serialize)]
pub struct HeldBack {
    pub agent: String,
    pub project: Option<String>,
    pub tool: Option<String>,
    pub classes: Vec<RiskClass>,
    pub approvals: usize,
    pub why: String,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Suggestions {
    pub suggestions: Vec<Suggestion>,
    pub held_back: Vec<HeldBack>,
}

type Key = (String, Option<String>, Option<String>, Vec<RiskClass>);

#[derive(Default)]
struct Tally {
    asked: usize,
    allowed: usize,
    denied: usize,
}

/// Read the audit (oldest first): each asked call, then the answer its
/// permission card got in the same session.
pub fn suggest<'a>(entries: impl IntoIterator<Item = Entry<'a>>) -> Suggestions {
    let mut waiting: BTreeMap<&'a str, Key> = BTreeMap::new();
    let mut tallies: BTreeMap<Key, Tally> = BTreeMap::new();
    for entry in entries {
        match Recorded::read(entry.action, entry.detail) {
            Some(Recorded::Call(c)) if c.verdict == CallVerdict::Ask && !c.facts.undeclared.is_empty() => {
                let f = c.facts;
                let key = (f.agent, f.project, f.tool, f.undeclared);
                tallies.entry(key.clone()).or_default().asked += 1;
                waiting.insert(entry.session_id, key);
            }
            _ if entry.action == "permission" => {
                let Some(key) = waiting.remove(entry.session_id) else { continue };
                let tally = tallies.entry(key).or_default();
                if is_allow(entry.detail) {
                    tally.allowed += 1;
                } else if entry.detail.contains(" denied") {
                    tally.denied += 1;
                }
            }
            _ => {}
        }
    }
    rank(tallies)
}

/// The engine's answers: "allowed once", "allowed for this session",
/// "always allowed".
fn is_allow(detail: &str) -> bool {
    [" allowed once by ", " allowed for this session by ", " always allowed by "].iter().any(|s| detail.contains(s))
}

fn rank(tallies: BTreeMap<Key, Tally>) -> Suggestions {
    let mut out = Suggestions::default();
    for ((agent, project, tool, classes), t) in tallies {
        if t.allowed < MIN_APPROVALS || t.denied > 0 {
            continue;
        }
        if let Some(above) = classes.iter().find(|c| level(**c) > Level::Low) {
            let why = format!("{above} is above low risk: declare it in the plans that need it (\"allows\")");
            out.held_back.push(HeldBack { agent, project, tool, classes, approvals: t.allowed, why });
            continue;
        }
        let id = format!("auto-{agent}-{}", classes.iter().map(|c| c.id().replace('.', "-")).collect::<Vec<_>>().join("-"));
        let rule = RuleSpec {
            id,
            action: Some("auto".to_string()),
            on: crate::Applies::Calls,
            note: Some(format!("suggested: people allowed this {} times and denied it never", t.allowed)),
            agent: vec![agent],
            project: project.into_iter().collect(),
            tool: tool.into_iter().collect(),
            class: classes.iter().map(|c| c.id().to_string()).collect(),
            ..RuleSpec::default()
        };
        out.suggestions.push(Suggestion { rule, saved: t.allowed, asked: t.asked });
    }
    out.suggestions.sort_by(|a, b| b.saved.cmp(&a.saved).then_with(|| a.rule.id.cmp(&b.rule.id)));
    unique_ids(&mut out.suggestions);
    out.held_back.sort_by_key(|h| std::cmp::Reverse(h.approvals));
    out
}

/// Two groups of one agent and classes (other projects or tools) would
/// share an id: the later ones get `-2`, `-3`, … so the rules load together.
fn unique_ids(suggestions: &mut [Suggestion]) {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for s in suggestions {
        let n = seen.entry(s.rule.id.clone()).or_default();
        *n += 1;
        if *n > 1 {
            s.rule.id = format!("{}-{n}", s.rule.id);
        }
    }
}
