//! The `/plan` text grammar, identical on every channel (the README's "Chat
//! channels" lists it for users).
//!
//! Telegram and plain-text chats send the whole message (`/plan accept #a1b2`,
//! `/plan@PlanBot status`); Slack and Discord slash commands hand over the
//! words after `/plan`. Both end up in [`parse_args`]. Every malformed command
//! gets an error that shows the correct usage.

use crate::ids::{is_valid_agent_id, is_valid_session_id, SessionKey};
use thiserror::Error;

/// What a command applies to when a chat has more than one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `#a1b2c3`: a prefix (4–32 hex characters) of an approval id.
    Approval(String),
    /// `agent/session`
    Session(SessionKey),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanCommand {
    /// `/plan` alone: help plus the status of this chat's sessions.
    Help,
    Status,
    List,
    View,
    /// Approve; optionally except some steps, with a note, or the round's
    /// edited plan.
    Accept(AcceptTerms),
    /// Approve with these steps instead of the agent's.
    Edit(Vec<String>),
    /// Request changes (`revise` or its alias `reject`).
    Revise(String),
    Cancel,
    /// "I am on it": the others' reminders wait while the claim holds
    /// ([`crate::claim`]).
    Claim,
    Answer(String),
    On,
    Off,
    Auto(bool),
    /// Post the card again (it scrolled away).
    Restate,
    /// List the session's open subagent runs.
    Subagents,
    /// Close the session's open subagent runs, so a plan stuck behind a
    /// crashed child can be decided.
    ClearSubagents,
    /// Send me a personal sign-in link for the web page, privately.
    Web,
    /// Answer the waiting permission request (`/plan allow [once|session|always]`,
    /// `/plan deny [reason]`).
    Permission(crate::permission::PermissionAnswer),
    /// List the permission rules of this chat's agents.
    Rules,
    /// Remove stored rule N (as `/plan rules` numbers them).
    RemoveRule(usize),
    /// `/plan pair CODE`: make this chat a destination of the agent the
    /// code was made for (`plangate pair`), its sender the first approver.
    Pair(String),
    /// `/plan approvers [add|remove …]`: this chat's approvers.
    Approvers(ApproversChange),
}

/// What `/plan approvers` asks. The people are as typed: mentions
/// (`<@U123>`, `<@123>`) or identities (`telegram:111`); which platform's
/// form is valid is the server's business. On Telegram, where a mention
/// carries no id, `add`/`remove` as a reply to the person's message names
/// them (the adapter adds their identity).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApproversChange {
    List,
    Add(Vec<String>),
    Remove(Vec<String>),
}

impl PlanCommand {
    /// Whether the command decides or changes state (so needs an approver).
    pub fn changes_state(&self) -> bool {
        !matches!(
            self,
            PlanCommand::Help
                | PlanCommand::Status
                | PlanCommand::List
                | PlanCommand::View
                | PlanCommand::Restate
                | PlanCommand::Subagents
                | PlanCommand::Web
                | PlanCommand::Rules
                | PlanCommand::Approvers(ApproversChange::List)
        )
    }
}

/// What `/plan accept` may add: `except 3,5`, `edited`, `-- a note`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AcceptTerms {
    /// Step numbers (1-based, as on the card) left out of the approval.
    pub except: Vec<usize>,
    /// Approve the round's edited plan (the one the card shows).
    pub edited: bool,
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    pub command: PlanCommand,
    pub target: Option<Target>,
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{message}\nUsage: {usage}")]
pub struct GrammarError {
    pub message: String,
    pub usage: &'static str,
}

/// Every command with its usage, for help texts and errors.
pub const USAGE: &[(&str, &str)] = &[
    ("status", "/plan status [#id|agent/session]"),
    ("list", "/plan list"),
    ("view", "/plan view [#id|agent/session]"),
    ("accept", "/plan accept [#id|agent/session] [except 3,5 | edited] [-- note]"),
    ("edit", "/plan edit [#id|agent/session] <step 1>; <step 2>; …"),
    ("changes", "/plan changes [#id|agent/session] <what should change>"),
    ("cancel", "/plan cancel [#id|agent/session]"),
    ("claim", "/plan claim [#id|agent/session] (you are on it: the others are not reminded until it runs out)"),
    ("answer", "/plan answer [#id|agent/session] <your answer>"),
    ("on", "/plan on [agent/session]"),
    ("off", "/plan off [#id|agent/session]"),
    ("auto", "/plan auto on|off [#id|agent/session]"),
    ("restate", "/plan restate [#id|agent/session]"),
    ("subagents", "/plan subagents [clear] [#id|agent/session]"),
    ("web", "/plan web (a personal sign-in link for the web page, sent privately)"),
    ("allow", "/plan allow [#id|agent/session] [once|session|always] (the permission request #id on its card)"),
    ("deny", "/plan deny [#id|agent/session] [reason]"),
    ("rules", "/plan rules | /plan rules remove N"),
    ("pair", "/plan pair CODE (the code `plangate pair` printed: this chat receives the agent's plans, you approve them)"),
    ("approvers", "/plan approvers [add|remove <@person>…] (on Telegram: add/remove as a reply to their message)"),
];

/// The help text shown for `/plan` and unknown commands.
pub fn help() -> String {
    let mut out = String::from("plangate commands:\n/plan — this help and the status of this chat's plans\n");
    for (_, usage) in USAGE {
        out.push_str(usage);
        out.push('\n');
    }
    out.push_str("A target is needed only when this chat has more than one plan: #id (from the card) or agent/session.");
    out
}

/// Request changes has one name, `changes` (the button's "Request
/// changes"); `revise` and `reject`, its names before, still work.
const CHANGES_ALIASES: [&str; 2] = ["revise", "reject"];

fn usage_of(verb: &str) -> &'static str {
    let verb = if CHANGES_ALIASES.contains(&verb) { "changes" } else { verb };
    USAGE.iter().find(|(v, _)| *v == verb).map(|(_, u)| *u).unwrap_or("/plan <command> — send /plan for the list")
}

/// Parse a whole message. `Ok(None)` when the message is not a `/plan`
/// command at all (ordinary chat, or a command addressed to another bot).
pub fn parse(text: &str, bot_username: Option<&str>) -> Result<Option<Parsed>, GrammarError> {
    let text = text.trim_start();
    let Some(first) = text.split_whitespace().next() else { return Ok(None) };
    let (command, addressee) = match first.split_once('@') {
        Some((c, bot)) => (c, Some(bot)),
        None => (first, None),
    };
    if !command.eq_ignore_ascii_case("/plan") {
        return Ok(None);
    }
    if let (Some(addressee), Some(me)) = (addressee, bot_username) {
        if !addressee.eq_ignore_ascii_case(me.trim_start_matches('@')) {
            return Ok(None);
        }
    }
    parse_args(text[first.len()..].trim()).map(Some)
}

/// Parse the words after `/plan`.
pub fn parse_args(args: &str) -> Result<Parsed, GrammarError> {
    let args = args.trim();
    if args.is_empty() {
        return Ok(Parsed { command: PlanCommand::Help, target: None });
    }
    let (verb, rest) = split_word(args);
    let verb_lower = verb.to_ascii_lowercase();
    let usage = usage_of(&verb_lower);
    let err = |message: String| GrammarError { message, usage };
    // Neither takes a target: a code or a mention is never read as one.
    match verb_lower.as_str() {
        "pair" => return pair_code(rest).map(|code| Parsed { command: PlanCommand::Pair(code), target: None }).map_err(err),
        "approvers" => return approvers_change(rest).map(|c| Parsed { command: PlanCommand::Approvers(c), target: None }).map_err(err),
        _ => {}
    }
    let (target, rest) = take_target(rest).map_err(&err)?;
    let no_more = |rest: &str| -> Result<(), GrammarError> {
        if rest.is_empty() {
            Ok(())
        } else {
            Err(err(format!("`/plan {verb_lower}` takes no text, but got {:?}", truncate(rest))))
        }
    };
    let command = match verb_lower.as_str() {
        "help" => {
            no_more(rest)?;
            PlanCommand::Help
        }
        "status" => {
            no_more(rest)?;
            PlanCommand::Status
        }
        "list" => {
            no_more(rest)?;
            if target.is_some() {
                return Err(err("`/plan list` takes no target".to_string()));
            }
            PlanCommand::List
        }
        "view" => {
            no_more(rest)?;
            PlanCommand::View
        }
        "accept" | "approve" => PlanCommand::Accept(accept_terms(rest).map_err(&err)?),
        "cancel" => {
            no_more(rest)?;
            PlanCommand::Cancel
        }
        "claim" => {
            no_more(rest)?;
            PlanCommand::Claim
        }
        "on" => {
            no_more(rest)?;
            if matches!(target, Some(Target::Approval(_))) {
                return Err(err("`/plan on` needs agent/session, not a plan id".to_string()));
            }
            PlanCommand::On
        }
        "off" => {
            no_more(rest)?;
            PlanCommand::Off
        }
        "restate" => {
            no_more(rest)?;
            PlanCommand::Restate
        }
        "web" => {
            no_more(rest)?;
            if target.is_some() {
                return Err(err("`/plan web` takes no target".to_string()));
            }
            PlanCommand::Web
        }
        "changes" | "revise" | "reject" => {
            if rest.is_empty() {
                return Err(err("say what should change, e.g. `/plan changes split step 2 into two`".to_string()));
            }
            PlanCommand::Revise(rest.to_string())
        }
        "allow" => {
            let grade = if rest.is_empty() { "once" } else { rest };
            match crate::permission::PermissionAnswer::parse(grade) {
                Ok(answer @ crate::permission::PermissionAnswer::Allow { .. }) => PlanCommand::Permission(answer),
                _ => return Err(err(format!("say `once`, `session` or `always`, got {:?}", truncate(rest)))),
            }
        }
        "deny" => {
            PlanCommand::Permission(crate::permission::PermissionAnswer::Deny { reason: (!rest.is_empty()).then(|| rest.to_string()) })
        }
        "rules" => {
            if target.is_some() {
                return Err(err("`/plan rules` takes no target".to_string()));
            }
            let (word, n) = split_word(rest);
            match (word.to_ascii_lowercase().as_str(), n.trim()) {
                ("", _) => PlanCommand::Rules,
                ("remove", n) => match n.parse::<usize>() {
                    Ok(n) if n >= 1 => PlanCommand::RemoveRule(n),
                    _ => return Err(err(format!("say which rule by its number in `/plan rules`, got {:?}", truncate(n)))),
                },
                (other, _) => return Err(err(format!("expected `remove N` or nothing, got {:?}", truncate(other)))),
            }
        }
        "answer" => {
            if rest.is_empty() {
                return Err(err("the answer is missing".to_string()));
            }
            PlanCommand::Answer(rest.to_string())
        }
        "edit" => {
            let steps: Vec<String> = rest.split(['\n', ';']).map(crate::list::item_text).filter(|s| !s.is_empty()).collect();
            if steps.is_empty() {
                return Err(err("give the steps, separated by `;` or one per line".to_string()));
            }
            PlanCommand::Edit(steps)
        }
        "subagents" => {
            // `clear` may come before or after the target, like `auto on`.
            let (word, tail) = split_word(rest);
            let (command, tail) = match word.to_ascii_lowercase().as_str() {
                "" => (PlanCommand::Subagents, tail),
                "clear" => (PlanCommand::ClearSubagents, tail),
                other => return Err(err(format!("expected `clear` or nothing, got {:?}", truncate(other)))),
            };
            let (target2, tail) = if target.is_none() { take_target(tail).map_err(&err)? } else { (None, tail) };
            no_more(tail)?;
            return Ok(Parsed { command, target: target.or(target2) });
        }
        "auto" => {
            // `auto on|off` may come before or after the target.
            let (word, tail) = split_word(rest);
            let (target2, tail) = if target.is_none() { take_target(tail).map_err(&err)? } else { (None, tail) };
            no_more(tail)?;
            let on = match word.to_ascii_lowercase().as_str() {
                "on" => true,
                "off" => false,
                "" => return Err(err("say `on` or `off`".to_string())),
                other => return Err(err(format!("expected `on` or `off`, got {:?}", truncate(other)))),
            };
            return Ok(Parsed { command: PlanCommand::Auto(on), target: target.or(target2) });
        }
        other => return Err(GrammarError {
            message: format!("unknown command {:?}; send /plan for the list", truncate(other)),
            usage:
                "/plan <status|list|view|accept|edit|revise|reject|cancel|claim|answer|on|off|auto|restate|subagents|web|pair|approvers> …",
        }),
    };
    Ok(Parsed { command, target })
}

/// The one word after `/plan pair`. Whether it is a code is checked where
/// codes are (a malformed code is refused like a wrong one).
fn pair_code(rest: &str) -> Result<String, String> {
    let (code, tail) = split_word(rest);
    if code.is_empty() {
        return Err("the code is missing: run `plangate pair telegram|slack|discord` and send what it prints".to_string());
    }
    if !tail.is_empty() {
        return Err("`/plan pair` takes the code alone".to_string());
    }
    Ok(code.to_string())
}

/// `[add|remove <who>…]` after `/plan approvers`.
fn approvers_change(rest: &str) -> Result<ApproversChange, String> {
    let (word, tail) = split_word(rest);
    let people = || tail.split([' ', ',', '\n']).map(str::trim).filter(|w| !w.is_empty()).map(str::to_string).collect::<Vec<_>>();
    match word.to_ascii_lowercase().as_str() {
        "" | "list" if tail.is_empty() => Ok(ApproversChange::List),
        "add" => Ok(ApproversChange::Add(people())),
        "remove" | "rm" => Ok(ApproversChange::Remove(people())),
        _ => Err(format!("expected `add`, `remove` or nothing, got {:?}", truncate(rest))),
    }
}

/// `[except 3,5 | edited] [-- note]` after `/plan accept [target]`.
fn accept_terms(rest: &str) -> Result<AcceptTerms, String> {
    let (words, note) = split_note(rest);
    let mut terms = AcceptTerms { note, ..AcceptTerms::default() };
    let (word, tail) = split_word(words);
    match word.to_ascii_lowercase().as_str() {
        "" => {}
        "edited" | "edit" => {
            if !tail.is_empty() {
                return Err(format!("`edited` takes nothing after it but `-- note`, got {:?}", truncate(tail)));
            }
            terms.edited = true;
        }
        "except" => {
            terms.except = parse_step_numbers(tail)?;
            if terms.except.is_empty() {
                return Err("say which steps to leave out, e.g. `except 3,5`".to_string());
            }
        }
        _ => {
            return Err(format!(
                "`/plan accept` takes `except <steps>`, `edited` or `-- <note>`, but got {:?}; put a note after `--`",
                truncate(words)
            ))
        }
    }
    Ok(terms)
}

/// Step numbers as people type them: `3,5`, `3, 5`, `3 5`, `#3`. Empty
/// text is no steps. Whether the numbers exist is the engine's check.
pub fn parse_step_numbers(text: &str) -> Result<Vec<usize>, String> {
    text.split([',', ' ', ';', '\n'])
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|part| {
            part.trim_start_matches('#')
                .parse::<usize>()
                .map_err(|_| format!("{:?} is not a step number; say which steps to leave out, e.g. `except 3,5`", truncate(part)))
        })
        .collect()
}

/// Split `words -- note` at the first `--` standing alone.
fn split_note(rest: &str) -> (&str, Option<String>) {
    let rest = rest.trim();
    let at = if rest == "--" || rest.starts_with("-- ") || rest.starts_with("--\n") {
        Some(0)
    } else {
        rest.match_indices("--").map(|(i, _)| i).find(|&i| {
            let before = rest[..i].ends_with(char::is_whitespace);
            let after = rest[i + 2..].is_empty() || rest[i + 2..].starts_with(char::is_whitespace);
            before && after
        })
    };
    match at {
        Some(i) => {
            let note = rest[i + 2..].trim();
            (rest[..i].trim(), (!note.is_empty()).then(|| note.to_string()))
        }
        None => (rest, None),
    }
}

fn truncate(s: &str) -> String {
    s.chars().take(40).collect()
}

fn split_word(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    match s.find(char::is_whitespace) {
        Some(i) => (&s[..i], s[i..].trim()),
        None => (s, ""),
    }
}

/// Take a leading `#id` or `agent/session` target, if present.
fn take_target(rest: &str) -> Result<(Option<Target>, &str), String> {
    let (word, tail) = split_word(rest);
    if let Some(hex) = word.strip_prefix('#') {
        let hex = hex.to_ascii_lowercase();
        if !(4..=32).contains(&hex.len()) || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("{:?} is not a plan id: use the #id shown on the card (at least 4 characters)", truncate(word)));
        }
        return Ok((Some(Target::Approval(hex)), tail));
    }
    if let Some((agent, session)) = word.split_once('/') {
        if is_valid_agent_id(agent) && is_valid_session_id(session) {
            return Ok((Some(Target::Session(SessionKey::new(agent, session))), tail));
        }
    }
    Ok((None, rest.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> Parsed {
        parse(s, Some("PlanBot")).unwrap().unwrap()
    }

    #[test]
    fn permission_answers_and_rules() {
        use crate::permission::{Grade, PermissionAnswer};
        let cmd = |s: &str| parse_args(s).map(|p| p.command);
        assert_eq!(cmd("allow"), Ok(PlanCommand::Permission(PermissionAnswer::Allow { grade: Grade::Once })));
        assert_eq!(cmd("allow session"), Ok(PlanCommand::Permission(PermissionAnswer::Allow { grade: Grade::Session })));
        assert_eq!(cmd("allow always"), Ok(PlanCommand::Permission(PermissionAnswer::Allow { grade: Grade::Always })));
        assert!(cmd("allow deny").is_err() && cmd("allow forever").is_err());
        assert_eq!(cmd("deny"), Ok(PlanCommand::Permission(PermissionAnswer::Deny { reason: None })));
        assert_eq!(
            parse_args("deny demo/s1 use the staging tag").unwrap(),
            Parsed {
                command: PlanCommand::Permission(PermissionAnswer::Deny { reason: Some("use the staging tag".into()) }),
                target: Some(Target::Session(SessionKey::new("demo", "s1")))
            }
        );
        assert_eq!(cmd("rules"), Ok(PlanCommand::Rules));
        assert_eq!(cmd("rules remove 2"), Ok(PlanCommand::RemoveRule(2)));
        assert!(cmd("rules remove 0").is_err() && cmd("rules remove x").is_err() && cmd("rules add").is_err());
        assert!(PlanCommand::RemoveRule(1).changes_state() && !PlanCommand::Rules.changes_state());
    }

    #[test]
    fn pair_and_approvers_take_no_target() {
        assert_eq!(ok("/plan pair ABCD-EFGH").command, PlanCommand::Pair("ABCD-EFGH".into()));
        // A code that looks like a target is still the code.
        assert_eq!(ok("/plan pair #abcd").command, PlanCommand::Pair("#abcd".into()));
        assert!(parse_args("pair").is_err() && parse_args("pair A B").is_err());
        assert_eq!(ok("/plan approvers").command, PlanCommand::Approvers(ApproversChange::List));
        assert_eq!(ok("/plan approvers add").command, PlanCommand::Approvers(ApproversChange::Add(vec![])));
        assert_eq!(
            ok("/plan approvers add <@U1> <@U2|bob>").command,
            PlanCommand::Approvers(ApproversChange::Add(vec!["<@U1>".into(), "<@U2|bob>".into()]))
        );
        assert_eq!(
            ok("/plan approvers remove telegram:1").command,
            PlanCommand::Approvers(ApproversChange::Remove(vec!["telegram:1".into()]))
        );
        assert!(parse_args("approvers drop x").is_err());
        assert_eq!(ok("/plan approvers").target, None);
    }
    #[test]
    fn every_verb() {
        assert_eq!(ok("/plan").command, PlanCommand::Help);
        assert_eq!(ok("/plan status").command, PlanCommand::Status);
        assert_eq!(ok("/plan list").command, PlanCommand::List);
        assert_eq!(ok("/plan view #a1b2").target, Some(Target::Approval("a1b2".into())));
        assert_eq!(ok("/plan accept").command, PlanCommand::Accept(AcceptTerms::default()));
        assert_eq!(ok("/plan edit one; two\nthree").command, PlanCommand::Edit(vec!["one".into(), "two".into(), "three".into()]));
        assert_eq!(ok("/plan revise #A1B2 make it smaller").command, PlanCommand::Revise("make it smaller".into()));
        assert_eq!(ok("/plan reject too big").command, PlanCommand::Revise("too big".into()));
        assert_eq!(ok("/plan changes #A1B2 make it smaller").command, PlanCommand::Revise("make it smaller".into()));
        assert_eq!(ok("/plan cancel").command, PlanCommand::Cancel);
        assert_eq!(ok("/plan answer yes please").command, PlanCommand::Answer("yes please".into()));
        assert_eq!(ok("/plan on demo/s1").target, Some(Target::Session(SessionKey::new("demo", "s1"))));
        assert_eq!(ok("/plan off").command, PlanCommand::Off);
        assert_eq!(ok("/plan auto on").command, PlanCommand::Auto(true));
        let p = ok("/plan auto demo/s1 off");
        assert_eq!((p.command, p.target), (PlanCommand::Auto(false), Some(Target::Session(SessionKey::new("demo", "s1")))));
        assert_eq!(ok("/plan restate").command, PlanCommand::Restate);
        assert_eq!(ok("/plan subagents").command, PlanCommand::Subagents);
        let p = ok("/plan subagents clear #a1b2");
        assert_eq!((p.command, p.target), (PlanCommand::ClearSubagents, Some(Target::Approval("a1b2".into()))));
        let p = ok("/plan subagents demo/s1 clear");
        assert_eq!((p.command, p.target), (PlanCommand::ClearSubagents, Some(Target::Session(SessionKey::new("demo", "s1")))));
        assert!(PlanCommand::ClearSubagents.changes_state() && !PlanCommand::Subagents.changes_state());
        assert!(!PlanCommand::Approvers(ApproversChange::List).changes_state());
        assert!(PlanCommand::Approvers(ApproversChange::Add(vec![])).changes_state() && PlanCommand::Pair("X".into()).changes_state());
        let e = parse_args("subagents kill").unwrap_err();
        assert!(e.message.contains("expected `clear`") && e.usage.starts_with("/plan subagents"), "{e}");
        assert!(parse_args("subagents clear now").is_err());
    }

    #[test]
    fn claim_takes_a_target_and_nothing_else() {
        assert_eq!(ok("/plan claim").command, PlanCommand::Claim);
        let p = ok("/plan claim #a1b2");
        assert_eq!((p.command, p.target), (PlanCommand::Claim, Some(Target::Approval("a1b2".into()))));
        let p = ok("/plan@PlanBot CLAIM demo/s1");
        assert_eq!((p.command, p.target), (PlanCommand::Claim, Some(Target::Session(SessionKey::new("demo", "s1")))));
        assert!(PlanCommand::Claim.changes_state());
        let e = parse_args("claim #a1b2 for me").unwrap_err();
        assert!(e.message.contains("takes no text") && e.usage.starts_with("/plan claim"), "{e}");
        assert!(help().contains("/plan claim [#id|agent/session]"));
    }

    #[test]
    fn edit_steps_follow_the_one_list_rule() {
        let steps = |text: &str| match ok(text).command {
            PlanCommand::Edit(steps) => steps,
            other => panic!("{other:?}"),
        };
        assert_eq!(steps("/plan edit 1.5x faster; 2024 plan; 10. ten"), ["1.5x faster", "2024 plan", "ten"]);
        assert_eq!(steps("/plan edit 1) a\n• b\n\n○ c; - [ ] d;;"), ["a", "b", "c", "d"]);
    }

    #[test]
    fn accept_with_exclusions_a_note_or_the_edit() {
        let terms = |text: &str| match ok(text).command {
            PlanCommand::Accept(terms) => terms,
            other => panic!("{other:?}"),
        };
        let t = terms("/plan accept #a1b2 except 3,5 -- ok, but don't touch the migrations -- really");
        assert_eq!(t.except, vec![3, 5]);
        assert_eq!(t.note.as_deref(), Some("ok, but don't touch the migrations -- really"));
        assert_eq!(ok("/plan accept #a1b2 except 3").target, Some(Target::Approval("a1b2".into())));
        assert_eq!(terms("/plan accept except 2, 4 6").except, vec![2, 4, 6]);
        assert_eq!(terms("/plan accept -- fine").note.as_deref(), Some("fine"));
        assert_eq!(terms("/plan accept demo/s1 -- fine").note.as_deref(), Some("fine"));
        assert!(terms("/plan accept #a1b2 edited").edited);
        assert_eq!(terms("/plan accept --").note, None);
        for bad in ["accept except", "accept except two", "accept now please", "accept edited 3", "accept ok--fine"] {
            let e = parse_args(bad).unwrap_err();
            assert!(e.to_string().contains("Usage: /plan accept"), "{bad}: {e}");
        }
    }

    #[test]
    fn bot_addressing() {
        assert_eq!(ok("/plan@PlanBot status").command, PlanCommand::Status);
        assert_eq!(parse("/plan@OtherBot status", Some("PlanBot")).unwrap(), None);
        assert_eq!(parse("hello", None).unwrap(), None);
        assert_eq!(parse("/planet", None).unwrap(), None);
    }

    #[test]
    fn errors_show_usage() {
        let e = parse_args("revise").unwrap_err();
        assert!(e.to_string().contains("Usage: /plan changes"), "{e}");
        assert!(!help().contains("revise") && !help().contains("reject"), "one name per action in the help");
        let e = parse_args("revise #zz nope").unwrap_err();
        assert!(e.message.contains("not a plan id"));
        let e = parse_args("auto maybe").unwrap_err();
        assert!(e.message.contains("expected `on` or `off`"));
        let e = parse_args("frobnicate").unwrap_err();
        assert!(e.message.contains("unknown command"));
        let e = parse_args("accept now please").unwrap_err();
        assert!(e.message.contains("put a note after `--`"), "{e}");
        assert!(parse_args("edit #a1b2").is_err());
        assert!(parse_args("on #a1b2").is_err());
    }
}
