use super::*;
use crate::replay::{replay, CallRecord, Entry, PlanRecord};
use plangate_gate::classes::RiskClass;
use proptest::prelude::*;

fn spec(id: &str, action: &str) -> RuleSpec {
    RuleSpec { id: id.into(), action: Some(action.into()), ..RuleSpec::default() }
}

fn policy(specs: Vec<RuleSpec>) -> Policy {
    Policy::compile(vec![(Source::Config(None), specs)]).unwrap()
}

fn call(agent: &str, classes: &[RiskClass], undeclared: &[RiskClass]) -> Facts {
    Facts { agent: agent.into(), tool: Some("Bash".into()), classes: classes.to_vec(), undeclared: undeclared.to_vec(), ..Facts::default() }
}

fn parse(toml_text: &str) -> Result<Policy, PolicyError> {
    let section: Section = toml::from_str(toml_text).map_err(|e| PolicyError::Parse { path: "t".into(), message: e.to_string() })?;
    Policy::compile(vec![(Source::Config(None), section.rules)])
}

#[test]
fn a_written_policy_reads_with_every_matcher() {
    let p = parse(
        r#"
        [[rules]]
        id = "prod-drop"
        action = "deny"
        class = "db.drop"
        host = ["prod-*"]

        [[rules]]
        id = "two-for-infra"
        quorum = 2
        class = ["infra.change"]
        project = "billing-*"
        branch = "main"
        tool = "Bash"
        path = "infra/**"
        on = "calls"
        "#,
    )
    .unwrap();
    assert_eq!(p.rules().len(), 2);
    assert_eq!(p.rules()[0].action, Action::Deny);
    assert_eq!(p.rules()[1].action, Action::Quorum(2));
    assert_eq!(p.rules()[1].on, Applies::Calls);
}

#[test]
fn rules_print_as_a_policy_file_that_reads_back() {
    let specs = vec![
        RuleSpec { class: vec!["git.push".into()], on: Applies::Calls, note: Some("why".into()), ..spec("a", "auto") },
        RuleSpec { quorum: Some(2), action: None, project: vec!["api".into()], ..spec("b", "") },
    ];
    let text = to_toml(&specs);
    let back: Section = toml::from_str(&text).unwrap();
    assert_eq!(back.rules, specs, "{text}");
}

#[test]
fn bad_rules_are_refused_with_what_to_write() {
    let refused = |t: &str| parse(t).unwrap_err().to_string();
    assert!(refused("[[rules]]\nid = \"x\"\naction = \"maybe\"").contains("not one of auto, one, quorum, deny"));
    assert!(refused("[[rules]]\nid = \"x\"\naction = \"quorum\"").contains("needs `quorum = N`"));
    assert!(refused("[[rules]]\nid = \"x\"\nquorum = 1").contains("2 to 20"));
    assert!(refused("[[rules]]\nid = \"x\"\naction = \"deny\"\nclass = \"db.nuke\"").contains("not a risk class"));
    assert!(refused("[[rules]]\nid = \"x\"\naction = \"auto\"\non = \"plans\"").contains("calls only"));
    assert!(refused("[[rules]]\nid = \"a b\"\naction = \"deny\"").contains("must be"));
    assert!(refused("[[rules]]\nid = \"x\"\naction = \"deny\"\npath = \"src/[\"").contains("not a glob"));
    assert!(refused("[[rules]]\nid = \"x\"\naction = \"deny\"\n[[rules]]\nid = \"x\"\naction = \"one\"").contains("written twice"));
    assert!(parse("[[rules]]\nid = \"x\"\naction = \"deny\"\ncolour = \"red\"").is_err(), "unknown keys are refused");
}

#[test]
fn no_matching_rule_keeps_the_behaviour_without_a_policy() {
    let p = policy(vec![RuleSpec { class: vec!["db.drop".into()], ..spec("d", "deny") }]);
    let facts = call("a", &[RiskClass::GitPush], &[RiskClass::GitPush]);
    assert!(p.route_call(&facts).is_none());
    assert_eq!(call_verdict(None, true, false), CallVerdict::Ask);
    assert_eq!(call_verdict(None, false, false), CallVerdict::Allow);
    assert_eq!(call_verdict(None, true, true), CallVerdict::Allow);
    assert_eq!(plan_verdict(None), PlanVerdict::AsConfigured);
}

#[test]
fn deny_wins_over_a_grant_and_over_what_the_plan_declared() {
    let p = policy(vec![RuleSpec { class: vec!["db.drop".into()], ..spec("no-drops", "deny") }]);
    let declared = call("a", &[RiskClass::DbDrop], &[]);
    let routed = p.route_call(&declared).unwrap();
    assert_eq!(routed.rule.id, "no-drops");
    assert_eq!(call_verdict(Some(routed.action), false, true), CallVerdict::Deny);
}

#[test]
fn auto_covers_only_calls_whose_every_undeclared_class_it_names() {
    let p = policy(vec![RuleSpec { class: vec!["db.migrate".into()], ..spec("migrations", "auto") }]);
    let migrate = call("a", &[RiskClass::DbMigrate], &[RiskClass::DbMigrate]);
    assert_eq!(p.route_call(&migrate).map(|r| r.action), Some(Action::Auto));
    let and_delete = call("a", &[RiskClass::FilesDelete, RiskClass::DbMigrate], &[RiskClass::FilesDelete, RiskClass::DbMigrate]);
    assert!(p.route_call(&and_delete).is_none(), "`sqlx migrate run && rm -rf /srv` is not a migration only");
}

#[test]
fn what_the_agent_did_not_report_matches_restricting_rules_and_never_auto() {
    let p = policy(vec![
        RuleSpec { project: vec!["billing-*".into()], class: vec!["git.push".into()], ..spec("billing-push", "one") },
        RuleSpec { project: vec!["sandbox".into()], ..spec("sandbox-auto", "auto") },
    ]);
    let unknown = call("a", &[RiskClass::GitPush], &[RiskClass::GitPush]);
    assert_eq!(p.route_call(&unknown).unwrap().rule.id, "billing-push");
    let sandbox = Facts { project: Some("sandbox".into()), ..call("a", &[RiskClass::NetExec], &[RiskClass::NetExec]) };
    assert_eq!(p.route_call(&sandbox).unwrap().rule.id, "sandbox-auto");
    let other = Facts { project: Some("docs".into()), ..unknown.clone() };
    assert!(p.route_call(&other).is_none());
}

#[test]
fn paths_restrict_on_any_file_and_auto_needs_every_file() {
    let p = policy(vec![
        RuleSpec { path: vec!["secrets/**".into()], ..spec("secrets", "deny") },
        RuleSpec { path: vec!["fixtures/*.env".into()], class: vec!["secrets.read".into()], ..spec("fixtures", "auto") },
    ]);
    let read = |paths: Option<Vec<&str>>| Facts {
        tool: Some("Read".into()),
        paths: paths.map(|v| v.into_iter().map(String::from).collect()),
        ..call("a", &[RiskClass::SecretsRead], &[RiskClass::SecretsRead])
    };
    assert_eq!(p.route_call(&read(Some(vec!["fixtures/a.env"]))).unwrap().rule.id, "fixtures");
    assert_eq!(p.route_call(&read(Some(vec!["fixtures/a.env", "secrets/b.env"]))).unwrap().rule.id, "secrets");
    assert_eq!(p.route_call(&read(None)).unwrap().rule.id, "secrets", "a shell command's files are unknown");
    assert!(p.route_call(&read(Some(vec!["fixtures/deep/a.env"]))).is_none(), "`*` stays within a directory");
}

#[test]
fn plans_are_routed_by_the_classes_they_allow_and_never_auto() {
    let p = policy(vec![
        RuleSpec { class: vec!["db.drop".into()], ..spec("no-drop-plans", "deny") },
        RuleSpec { class: vec!["infra.change".into()], quorum: Some(3), action: None, ..spec("infra", "") },
        RuleSpec { agent: vec!["*".into()], ..spec("everything", "auto") },
        RuleSpec { tool: vec!["Bash".into()], ..spec("bash-only", "deny") },
    ]);
    let plan = |classes: &[RiskClass]| Facts { agent: "a".into(), classes: classes.to_vec(), ..Facts::default() };
    assert!(p.route_plan(&plan(&[])).is_none());
    assert_eq!(plan_verdict(p.route_plan(&plan(&[RiskClass::InfraChange])).map(|r| r.action)), PlanVerdict::Quorum(3));
    let both = p.route_plan(&plan(&[RiskClass::InfraChange, RiskClass::DbDrop])).unwrap();
    assert_eq!((both.rule.id.as_str(), plan_verdict(Some(both.action))), ("no-drop-plans", PlanVerdict::Refused));
}

#[test]
fn policy_d_files_are_merged_after_the_section_each_rule_with_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("plangate.toml");
    std::fs::write(&config, "").unwrap();
    std::fs::create_dir(dir.path().join(POLICY_DIR)).unwrap();
    std::fs::write(dir.path().join("policy.d/20-b.toml"), "[[rules]]\nid = \"b\"\naction = \"one\"\n").unwrap();
    std::fs::write(dir.path().join("policy.d/10-a.toml"), "[[rules]]\nid = \"a\"\naction = \"deny\"\nclass = \"db.drop\"\n").unwrap();
    std::fs::write(dir.path().join("policy.d/README.md"), "not a policy").unwrap();
    let section = Section { rules: vec![spec("s", "one")] };
    let p = Policy::load(&section, Some(&config)).unwrap();
    let ids: Vec<&str> = p.rules().iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["s", "a", "b"]);
    assert_eq!(p.rules()[1].source, Source::File(dir.path().join("policy.d/10-a.toml")));
    std::fs::write(dir.path().join("policy.d/30-bad.toml"), "[[rules]]\nid = ").unwrap();
    assert!(matches!(Policy::load(&section, Some(&config)), Err(PolicyError::Parse { .. })), "a half-read policy would widen");
    assert!(Policy::load(&section, None).unwrap().rules().len() == 1, "the embedded config has no policy.d");
}

#[test]
fn a_replay_lists_only_the_decisions_that_change() {
    let asked = CallRecord {
        facts: call("a", &[RiskClass::DbMigrate], &[RiskClass::DbMigrate]),
        granted: false,
        verdict: CallVerdict::Ask,
        rule: None,
        shown: "sqlx migrate run".into(),
    };
    let allowed = CallRecord { facts: call("a", &[RiskClass::GitPush], &[]), verdict: CallVerdict::Allow, ..asked.clone() };
    let plan = PlanRecord {
        facts: Facts { agent: "a".into(), classes: vec![RiskClass::DbDrop], ..Facts::default() },
        title: "Drop the old table".into(),
        verdict: PlanVerdict::AsConfigured,
        rule: None,
        step_up: None,
    };
    let details = [asked.detail(), allowed.detail(), plan.detail(), "not json".to_string()];
    let actions = [replay::CALL_ACTION, replay::CALL_ACTION, replay::PLAN_ACTION, replay::CALL_ACTION];
    let entries: Vec<Entry> = details.iter().zip(actions).map(|(d, a)| Entry { at: 1, session_id: "s", action: a, detail: d }).collect();
    let candidate = policy(vec![
        RuleSpec { class: vec!["db.migrate".into()], ..spec("migrations", "auto") },
        RuleSpec { class: vec!["db.drop".into()], ..spec("no-drops", "deny") },
    ]);
    let r = replay(&candidate, entries.clone());
    assert_eq!(r.decisions, 3);
    let got: Vec<(&str, &str, &str)> = r.changes.iter().map(|c| (c.what.as_str(), c.was.as_str(), c.would_be.as_str())).collect();
    assert_eq!(got, [("sqlx migrate run", "ask", "allow"), ("Drop the old table", "as configured", "refused")]);
    assert!(replay(&Policy::default(), entries).changes.is_empty(), "the empty policy changes nothing it decided");
}

#[test]
fn suggestions_come_from_repeated_approvals_and_never_auto_above_low() {
    let push = CallRecord {
        facts: Facts { project: Some("api".into()), ..call("a", &[RiskClass::GitPush], &[RiskClass::GitPush]) },
        granted: false,
        verdict: CallVerdict::Ask,
        rule: None,
        shown: "git push".into(),
    };
    let drop = CallRecord { facts: call("a", &[RiskClass::DbDrop], &[RiskClass::DbDrop]), shown: "dropdb x".into(), ..push.clone() };
    let mut log: Vec<(String, String, &str)> = Vec::new();
    for (i, record) in [&push, &push, &push, &drop, &drop].into_iter().enumerate() {
        let s = format!("s{i}");
        log.push((s.clone(), record.detail(), replay::CALL_ACTION));
        log.push((s, format!("q{i}: Bash allowed once by telegram:1"), "permission"));
    }
    let entries = log.iter().map(|(s, d, a)| Entry { at: 0, session_id: s, action: a, detail: d });
    let found = suggest::suggest(entries);
    assert_eq!(found.suggestions.len(), 1);
    let s = &found.suggestions[0];
    assert_eq!((s.saved, s.rule.class.as_slice(), s.rule.action.as_deref()), (3, &["git.push".to_string()][..], Some("auto")));
    assert_eq!(found.held_back.len(), 1, "db.drop is above low: never suggested as auto");
    assert!(Policy::compile(vec![(Source::Config(None), vec![s.rule.clone()])]).is_ok(), "a suggestion is a valid rule");
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![Just(Action::Auto), Just(Action::One), (2u32..6).prop_map(Action::Quorum), Just(Action::Deny)]
}

fn written(a: Action) -> (Option<String>, Option<u32>) {
    match a {
        Action::Quorum(n) => (None, Some(n)),
        other => (Some(other.to_string()), None),
    }
}

proptest! {
    /// Whatever the order the rules are written in, the strongest matching
    /// action decides: deny > quorum (larger first) > one > auto.
    #[test]
    fn precedence_is_deny_then_quorum_then_one_then_auto(actions in proptest::collection::vec(action(), 1..8), seed in any::<u64>()) {
        let specs: Vec<RuleSpec> = actions.iter().enumerate().map(|(i, a)| {
            let (action, quorum) = written(*a);
            RuleSpec { id: format!("r{i}"), action, quorum, ..RuleSpec::default() }
        }).collect();
        let mut shuffled = specs.clone();
        let len = shuffled.len();
        shuffled.rotate_left((seed as usize) % len);
        let facts = call("a", &[RiskClass::GitPush], &[RiskClass::GitPush]);
        let expected = actions.iter().copied().max_by_key(|a| a.rank()).unwrap();
        for rules in [specs, shuffled] {
            let p = policy(rules);
            prop_assert_eq!(p.route_call(&facts).map(|r| r.action), Some(expected));
        }
        let deny = actions.contains(&Action::Deny);
        let verdict = call_verdict(Some(expected), true, false);
        prop_assert_eq!(verdict == CallVerdict::Deny, deny);
    }
}

fn plan_facts(agent: &str, project: Option<&str>, classes: &[RiskClass], steps: usize) -> Facts {
    Facts { agent: agent.into(), project: project.map(String::from), classes: classes.to_vec(), steps: Some(steps), ..Facts::default() }
}

#[test]
fn step_up_asks_for_a_passkey_by_class_project_agent_or_plan_size() {
    let p = parse(
        r#"
        [[rules]]
        id = "prod-two"
        quorum = 2
        project = "prod-*"

        [[rules]]
        id = "prod-passkey"
        step_up = true
        project = "prod-*"

        [[rules]]
        id = "drops"
        action = "one"
        class = "db.drop"
        step_up = true

        [[rules]]
        id = "ci"
        step_up = true
        agent = "ci"

        [[rules]]
        id = "big"
        step_up = true
        min_steps = 10
        "#,
    )
    .unwrap();
    let id = |f: &Facts| p.step_up_plan(f).map(|r| r.id.clone());
    // A passkey adds to the quorum the strongest rule asks for.
    let prod = plan_facts("dev", Some("prod-api"), &[], 3);
    assert_eq!(id(&prod).as_deref(), Some("prod-passkey"));
    assert_eq!(plan_verdict(p.route_plan(&prod).map(|r| r.action)), PlanVerdict::Quorum(2));
    assert_eq!(id(&plan_facts("dev", Some("docs"), &[RiskClass::DbDrop], 3)).as_deref(), Some("drops"));
    assert_eq!(id(&plan_facts("ci", Some("docs"), &[], 3)).as_deref(), Some("ci"));
    assert_eq!(id(&plan_facts("dev", Some("docs"), &[], 10)).as_deref(), Some("big"));
    assert_eq!(id(&plan_facts("dev", Some("docs"), &[], 9)), None, "nine steps are under min_steps");
    // An unknown project errs toward the passkey; calls never ask for one.
    assert_eq!(id(&Facts { project: None, ..plan_facts("dev", None, &[], 1) }).as_deref(), Some("prod-passkey"));
    assert!(p.route_call(&Facts { project: Some("docs".into()), ..call("dev", &[], &[]) }).is_none(), "min_steps routes no call");
    // `policy show` writes it back as written.
    let shown = to_toml(std::slice::from_ref(&p.rule("big").unwrap().spec));
    assert!(shown.contains("step_up = true") && shown.contains("min_steps = 10"), "{shown}");
}

#[test]
fn step_up_belongs_on_rules_that_route_plans_to_people() {
    for bad in [
        "[[rules]]\nid = \"x\"\naction = \"auto\"\nstep_up = true\n",
        "[[rules]]\nid = \"x\"\non = \"calls\"\nstep_up = true\n",
        "[[rules]]\nid = \"x\"\ntool = \"Bash\"\nstep_up = true\n",
        "[[rules]]\nid = \"x\"\nstep_up = true\nmin_steps = 0\n",
    ] {
        assert!(parse(bad).is_err(), "{bad}");
    }
    assert_eq!(parse("[[rules]]\nid = \"x\"\nstep_up = true\n").unwrap().rule("x").unwrap().action, Action::One);
}
