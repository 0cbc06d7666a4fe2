//! Policy as code: the operator's rules that route each proposed plan and
//! each risky call of an executing plan.
//!
//! A rule (`[[policy.rules]]` in the server's config, `[[rules]]` in the
//! files of `policy.d/` beside it) has an `id`, an action (`auto`, `one`,
//! `quorum = N`, `deny`) and matchers on agent, project, branch, host, risk
//! class, tool and paths (globs). When several match, the strongest wins:
//! deny > quorum (larger N first) > one > auto; among equals, the first
//! written. No matching rule keeps plangate's behaviour without a policy.
//!
//! Only the operator's files are read: nothing an agent or a repository
//! sends becomes a rule, and a plan's `allows` cannot lift a `deny`, `one`
//! or `quorum` rule. What the agent reports about itself (project, branch,
//! host, files) is its word: a restricting rule errs toward a match when a
//! value is missing, and `auto` matches only values that are there.
//!
//! The crate is pure but for [`Policy::load`], which reads the files;
//! [`replay`] and [`suggest`] run over audit records as values, for
//! `plangate policy test` and `plangate policy suggest`.

mod load;
pub mod replay;
pub mod route;
pub mod rule;
pub mod suggest;

pub use load::{policy_dir, to_toml, Section, POLICY_DIR};
pub use route::{call_verdict, plan_verdict, CallVerdict, Facts, PlanVerdict, Routed};
pub use rule::{Action, Applies, Rule, RuleSpec, Source};
use std::path::PathBuf;
use thiserror::Error;

/// Why a policy cannot be used. The server refuses to start with one.
#[derive(Debug, Error)]
pub enum PolicyError {
    #[error("cannot read {}: {source}", .path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{} is not a policy file: {message}", .path.display())]
    Parse { path: PathBuf, message: String },
    #[error("rule {id:?} in {source_}: {problem}")]
    Rule { id: String, source_: Source, problem: String },
    #[error("rule id {id:?} is written twice ({first} and {second}); give each rule its own id")]
    Duplicate { id: String, first: Source, second: Source },
    #[error("{} policy problems:\n{}", .0.len(), .0.iter().map(|e| format!("  - {e}")).collect::<Vec<_>>().join("\n"))]
    Several(Vec<PolicyError>),
}

/// The effective policy: every rule of every source, in the order they
/// were written (the config's section first, then `policy.d/` by file
/// name).
#[derive(Debug, Clone, Default)]
pub struct Policy {
    rules: Vec<Rule>,
}

impl Policy {
    /// Compile rules from their sources, reporting every problem at once.
    pub fn compile(sources: Vec<(Source, Vec<RuleSpec>)>) -> Result<Policy, PolicyError> {
        let mut rules: Vec<Rule> = Vec::new();
        let mut problems = Vec::new();
        for (source, specs) in sources {
            for spec in specs {
                let id = spec.id.clone();
                if let Some(first) = rules.iter().find(|r| r.id == id) {
                    problems.push(PolicyError::Duplicate { id, first: first.source.clone(), second: source.clone() });
                    continue;
                }
                match Rule::compile(spec, source.clone()) {
                    Ok(rule) => rules.push(rule),
                    Err(problem) => problems.push(PolicyError::Rule { id, source_: source.clone(), problem }),
                }
            }
        }
        match problems.len() {
            0 => Ok(Policy { rules }),
            1 => Err(problems.remove(0)),
            _ => Err(PolicyError::Several(problems)),
        }
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The rule with this id.
    pub fn rule(&self, id: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| r.id == id)
    }
}

#[cfg(test)]
mod tests;
