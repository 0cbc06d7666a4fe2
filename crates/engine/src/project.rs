//! Which project a proposal is about: the repository, branch and machine
//! where the agent runs, as its hook, MCP server or CLI read them locally
//! (`"project": {"name", "branch", "host"}` of a proposal body).
//!
//! Agent-written, like the plan: it is only as honest as the agent, so it
//! labels cards and routes them to the chats that want that project
//! ([`Project::name`] against a destination's `projects` globs), but it never
//! decides who may approve anything a destination's approver list would not
//! allow anyway. Bounded and one line each; hidden characters are refused
//! here rather than revealed later, because the name is matched against
//! globs and used as a forum topic's title, where a marker would not help.

use crate::refusal::Refusal;
use crate::text::is_hidden_char;
use serde::{Deserialize, Serialize};

/// The longest project name (characters): a repository directory's name.
pub const MAX_NAME_CHARS: usize = 100;
/// The longest branch name (characters).
pub const MAX_BRANCH_CHARS: usize = 200;
/// The longest host name (characters): a DNS name's limit is 253.
pub const MAX_HOST_CHARS: usize = 253;

/// Where the agent runs, when it says.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Project {
    /// The repository's name (the working tree's directory), e.g. `billing-api`.
    pub name: String,
    /// The checked-out branch, or `detached@1a2b3c4` for a detached HEAD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// The machine's host name, e.g. `dev-laptop`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

impl Project {
    /// Check and tidy a project an agent sent: each part trimmed, one line,
    /// no hidden or control characters, within its bound; an empty branch or
    /// host is left out, an empty name is refused.
    pub fn validate(self) -> Result<Project, Refusal> {
        let name = part("project.name", &self.name, MAX_NAME_CHARS)?
            .ok_or_else(|| Refusal::InvalidRequest("project.name is empty; send the repository's name, or leave project out".into()))?;
        let branch = self.branch.as_deref().map(|b| part("project.branch", b, MAX_BRANCH_CHARS)).transpose()?.flatten();
        let host = self.host.as_deref().map(|h| part("project.host", h, MAX_HOST_CHARS)).transpose()?.flatten();
        Ok(Project { name, branch, host })
    }

    /// `billing-api · feat/retries · dev-laptop`: how cards, the page and
    /// `/plan list` show it.
    pub fn label(&self) -> String {
        [Some(self.name.as_str()), self.branch.as_deref(), self.host.as_deref()].into_iter().flatten().collect::<Vec<_>>().join(" · ")
    }
}

/// A destination's `projects = ["billing-*", "web"]`: globs on
/// [`Project::name`] saying which agents' cards go there. No pattern at all
/// takes every card; with patterns, a card goes there only when its project
/// is named and matches one (a card that names no project goes only to
/// destinations without patterns).
#[derive(Debug, Clone, Default)]
pub struct ProjectPatterns {
    patterns: Vec<String>,
    set: Option<globset::GlobSet>,
}

impl ProjectPatterns {
    /// Compile `patterns` (globset syntax: `*`, `?`, `[abc]`, `{a,b}`),
    /// or say which one is not a glob.
    pub fn new(patterns: &[String]) -> Result<ProjectPatterns, String> {
        if patterns.is_empty() {
            return Ok(ProjectPatterns::default());
        }
        let mut builder = globset::GlobSetBuilder::new();
        for pattern in patterns {
            if pattern.trim().is_empty() {
                return Err("contains an empty pattern; write a project name or a glob like \"billing-*\"".to_string());
            }
            let glob = globset::Glob::new(pattern.trim()).map_err(|e| format!("{pattern:?} is not a glob: {e}"))?;
            builder.add(glob);
        }
        let set = builder.build().map_err(|e| format!("the patterns do not compile: {e}"))?;
        Ok(ProjectPatterns { patterns: patterns.to_vec(), set: Some(set) })
    }

    /// Whether a card of `project` (its name) goes where these patterns are.
    pub fn matches(&self, project: Option<&str>) -> bool {
        match (&self.set, project) {
            (None, _) => true,
            (Some(set), Some(name)) => set.is_match(name),
            (Some(_), None) => false,
        }
    }

    /// The patterns as configured; empty means every project.
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }
}

fn part(key: &str, value: &str, max: usize) -> Result<Option<String>, Refusal> {
    let value = value.trim();
    if value.is_empty() {
        return Ok(None);
    }
    if let Some(c) = value.chars().find(|c| c.is_control() || is_hidden_char(*c)) {
        return Err(Refusal::InvalidRequest(format!(
            "{key} contains the character U+{:04X}, which is hidden or a control character; send it as one line of visible text",
            c as u32
        )));
    }
    let chars = value.chars().count();
    if chars > max {
        return Err(Refusal::InvalidRequest(format!("{key} is {chars} characters long; at most {max} are accepted")));
    }
    Ok(Some(value.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(name: &str, branch: Option<&str>, host: Option<&str>) -> Project {
        Project { name: name.into(), branch: branch.map(Into::into), host: host.map(Into::into) }
    }

    #[test]
    fn a_project_is_trimmed_and_labelled_by_its_parts() {
        let p = project(" billing-api ", Some("feat/retries"), Some(" dev-laptop")).validate().unwrap();
        assert_eq!(p.label(), "billing-api · feat/retries · dev-laptop");
        let bare = project("web", Some("  "), None).validate().unwrap();
        assert_eq!((bare.branch.as_deref(), bare.label().as_str()), (None, "web"));
    }

    #[test]
    fn hidden_control_empty_and_long_parts_are_refused_with_the_key() {
        let refused = |p: Project| p.validate().unwrap_err().to_string();
        assert!(refused(project("bill\u{202E}ing", None, None)).contains("project.name contains the character U+202E"));
        assert!(refused(project("a", Some("x\ny"), None)).contains("project.branch"));
        assert!(refused(project("a", None, Some("h\u{200B}"))).contains("project.host"));
        assert!(refused(project("  ", None, None)).contains("project.name is empty"));
        assert!(refused(project(&"n".repeat(MAX_NAME_CHARS + 1), None, None)).contains("at most 100"));
        assert!(project(&"n".repeat(MAX_NAME_CHARS), None, None).validate().is_ok());
    }

    #[test]
    fn patterns_route_by_name_and_no_pattern_takes_everything() {
        let all = ProjectPatterns::new(&[]).unwrap();
        assert!(all.matches(None) && all.matches(Some("x")));
        let billing = ProjectPatterns::new(&["billing-*".into(), "web".into()]).unwrap();
        assert!(billing.matches(Some("billing-api")) && billing.matches(Some("web")));
        assert!(!billing.matches(Some("webapp")) && !billing.matches(Some("Billing-api")) && !billing.matches(None));
        assert!(ProjectPatterns::new(&["a[".into()]).unwrap_err().contains("\"a[\" is not a glob"));
        assert!(ProjectPatterns::new(&[" ".into()]).unwrap_err().contains("empty pattern"));
    }

    #[test]
    fn unknown_fields_are_refused_when_read() {
        assert!(serde_json::from_str::<Project>(r#"{"name":"a","cwd":"/home"}"#).is_err());
        let p: Project = serde_json::from_str(r#"{"name":"a","branch":"main"}"#).unwrap();
        assert_eq!(p.label(), "a · main");
    }
}
