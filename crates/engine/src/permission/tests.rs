//! Tests of [`super`] (permission.rs).

use super::*;
use serde_json::json;

fn bash(cmd: &str) -> Value {
    json!({"command": cmd})
}

fn call<'a>(tool: &'a str, input: &'a Value, paths: Option<&'a [Target]>) -> Call<'a> {
    Call { tool, input, paths }
}

#[test]
fn rules_parse_and_print_back() {
    for r in ["Bash", "Bash(npm test:*)", "Edit(src/**)", "mcp__github__create_issue", "apply_patch(src/*.rs)", r#"Bash("sh:*")"#] {
        assert_eq!(Rule::parse(r).unwrap().to_string(), r);
    }
    assert!(matches!(Rule::parse("Bash(npm"), Err(RuleError::Shape(_))));
    assert!(matches!(Rule::parse("Ba sh"), Err(RuleError::Tool(_))));
    assert!(matches!(Rule::parse("WebFetch(domain:x.com)"), Err(RuleError::NoPatternFor { .. })));
    assert!(matches!(Rule::parse("Edit(src/[)"), Err(RuleError::Glob { .. })));
    assert!(matches!(Rule::parse("Bash()"), Err(RuleError::Pattern { .. })));
    assert!(matches!(Rule::parse("Bash( :*)"), Err(RuleError::EmptyPrefix { .. })));
    assert_eq!(
        Rule::parse(r#"Edit("docs/b,.env", "docs/a.md")"#).unwrap().what(),
        &Match::Files(vec!["docs/a.md".into(), "docs/b,.env".into()])
    );
    assert!(matches!(Rule::parse(r#"Edit("../x")"#), Err(RuleError::Quoted { .. })));
}

#[test]
fn what_is_written_back_parses_again() {
    // Found by the rule_parser fuzz target (fuzz/corpus/rule_parser/regress_*).
    let long = format!("Edit(\"{}\",\"b\")", "a".repeat(3994));
    for text in ["Bash(\"\\u007f\")", "Edit(\"a\\u0085b\")", long.as_str(), "Edit(\"b\", \"a\")"] {
        let rule = Rule::parse(text).unwrap();
        assert_eq!(Rule::parse(&rule.to_string()), Ok(rule.clone()), "{text:.60}");
    }
}

#[test]
fn a_prefix_rule_matches_only_a_single_simple_command() {
    let rule = Rule::parse("Bash(npm test:*)").unwrap();
    for ok in ["npm test", "npm test -- --watch=false", "npm  test x"] {
        assert!(rule.allows(&call("Bash", &bash(ok), None)), "{ok}");
    }
    for no in ["npm testing", "npm test; rm -rf /", "npm test && git push", "npm test $(rm x)", "npm test > out", "npm", "npx test"] {
        assert!(!rule.allows(&call("Bash", &bash(no), None)), "{no}");
    }
    let exact = Rule::parse("Bash(npm publish --tag next)").unwrap();
    assert!(exact.allows(&call("Bash", &bash(" npm publish --tag next "), None)));
    assert!(!exact.allows(&call("Bash", &bash("npm publish --tag next; rm x"), None)));
    assert!(!exact.allows(&call("Write", &bash("npm publish --tag next"), None)));
    // PowerShell is not read word by word: a prefix never allows there.
    assert!(!Rule::parse("PowerShell(Get-Date:*)").unwrap().allows(&call("PowerShell", &bash("Get-Date"), None)));
}

#[test]
fn a_literal_command_ending_in_a_prefix_marker_is_exact() {
    let input = bash("sh:*");
    let rule = Rule::covering(&call("Bash", &input, None));
    assert_eq!(rule.what(), &Match::Exact("sh:*".into()));
    assert_eq!(rule.to_string(), r#"Bash("sh:*")"#);
    assert!(rule.allows(&call("Bash", &input, None)));
    assert!(!rule.allows(&call("Bash", &bash("sh -c 'rm -rf ~'"), None)));
    let back: Rule = serde_json::from_str(&serde_json::to_string(&rule).unwrap()).unwrap();
    assert_eq!(back, rule);
}

#[test]
fn a_multi_line_or_long_command_is_granted_exactly_and_reads_back() {
    let heredoc = "git commit -m \"$(cat <<'EOF'\nFix the uploader\n\nCo-Authored-By: Claude\nEOF\n)\"";
    let long = format!("echo {}", "x".repeat(10_000));
    for command in [heredoc, long.as_str(), "echo ünïcödé 🚀", "echo a\u{202e}b"] {
        let input = bash(command);
        let rule = Rule::covering(&call("Bash", &input, None));
        let stored = serde_json::to_string(&rule).unwrap();
        let back: Rule = serde_json::from_str(&stored).unwrap();
        assert_eq!(back, rule);
        assert!(back.allows(&call("Bash", &input, None)));
        assert!(!back.allows(&call("Bash", &bash(&format!("{command}; rm -rf /")), None)));
        assert!(rule.shown().chars().count() <= SHOWN_RULE_CHARS);
    }
}

#[test]
fn file_rules_match_every_normalized_file_and_never_outside() {
    let rule = Rule::parse("Edit(src/**)").unwrap();
    let input = json!({});
    let inside = [Target::Path("src/a/b.rs".into())];
    let mixed = [Target::Path("src/a.rs".into()), Target::Path("docs/x.md".into())];
    let outside = [Target::Outside("/etc/passwd".into())];
    let sneaky = [Target::Path("src/../../etc/passwd".into())];
    assert!(rule.allows(&call("Edit", &input, Some(&inside))));
    assert!(!rule.allows(&call("Edit", &input, Some(&mixed))));
    assert!(!rule.allows(&call("Edit", &input, Some(&outside))));
    assert!(!rule.allows(&call("Edit", &input, Some(&sneaky))));
    assert!(!rule.allows(&call("Edit", &input, None)));
}

#[test]
fn the_covering_rule_is_the_narrowest() {
    let input = bash("npm publish --tag next");
    assert_eq!(Rule::covering(&call("Bash", &input, None)).to_string(), "Bash(npm publish --tag next)");
    let files = [Target::Path("src/a[1].rs".into())];
    let edit = Rule::covering(&call("Edit", &json!({}), Some(&files)));
    assert_eq!(edit.to_string(), r#"Edit("src/a[1].rs")"#);
    assert!(edit.allows(&call("Edit", &json!({}), Some(&files))));
    assert!(!edit.allows(&call("Edit", &json!({}), Some(&[Target::Path("src/a1.rs".into())]))));
    // Two files are two literal files: a comma in a name is part of it.
    let two = [Target::Path("docs/a.md".into()), Target::Path("docs/b,.env".into())];
    let rule = Rule::covering(&call("Write", &json!({}), Some(&two)));
    assert!(rule.allows(&call("Write", &json!({}), Some(&two[..1]))));
    assert!(!rule.allows(&call("Write", &json!({}), Some(&[Target::Path(".env".into())]))));
    let odd = [Target::Path("docs/a\\*".into())];
    let rule = Rule::covering(&call("Write", &json!({}), Some(&odd)));
    assert!(!rule.allows(&call("Write", &json!({}), Some(&[Target::Path("docs/aXYZ".into())]))));
    let outside = [Target::Outside("/x".into())];
    let none = Rule::covering(&call("Write", &json!({}), Some(&outside)));
    assert!(!none.allows(&call("Write", &json!({}), Some(&outside))));
    // Another tool: exactly that input, never the whole tool.
    let mcp = Rule::covering(&call("mcp__x__y", &json!({"a": 1}), None));
    assert!(mcp.allows(&call("mcp__x__y", &json!({"a": 1}), None)));
    assert!(!mcp.allows(&call("mcp__x__y", &json!({"a": 2}), None)));
    // A PowerShell grant is its exact command, not the tool.
    let ps = Rule::covering(&call("PowerShell", &bash("Get-Date"), None));
    assert!(!ps.allows(&call("PowerShell", &bash("Remove-Item -Recurse C:\\"), None)));
    // A tool name with a space still makes a rule that reads back.
    let odd_tool = Rule::covering(&call("my tool", &json!({}), None));
    assert_eq!(serde_json::from_str::<Rule>(&serde_json::to_string(&odd_tool).unwrap()).unwrap(), odd_tool);
}

#[test]
fn old_string_records_read_as_what_made_them() {
    let read = |s: &str| serde_json::from_value::<Rule>(json!(s)).unwrap();
    assert_eq!(read("Bash(sh:*)").what(), &Match::Exact("sh:*".into()));
    assert_eq!(read("Bash(git commit -m \"a\nb\")").what(), &Match::Exact("git commit -m \"a\nb\"".into()));
    assert_eq!(read(&format!("Bash(echo {})", "y".repeat(5000))).tool(), "Bash");
    assert_eq!(read("Edit(src/a[[]1[]].rs)").what(), &Match::Files(vec!["src/a[1].rs".into()]));
    assert!(matches!(read("Edit({docs/a.md,docs/b,.env})").what(), Match::Never(_)));
    assert_eq!(read("mcp__x__y").what(), &Match::Any);
    assert_eq!(read("my tool").tool(), "my tool");
    assert_eq!(read("").tool(), "");
}

#[test]
fn deny_and_ask_read_wider_than_allow() {
    let deny = Rule::parse("Edit(.env)").unwrap();
    let both = [Target::Path("src/a.rs".into()), Target::Path(".env".into())];
    assert!(deny.restricts(&call("Edit", &json!({}), Some(&both))));
    assert!(deny.restricts(&call("Edit", &json!({}), None)));
    assert!(!deny.allows(&call("Edit", &json!({}), Some(&both))));
    let exact = Rule::parse("Bash(rm -rf build)").unwrap();
    assert!(exact.restricts(&call("Bash", &bash("cd x && rm -rf build"), None)));
    assert!(exact.restricts(&call("Bash", &bash("rm  -rf   build"), None)));
}

#[test]
fn deny_wins_then_ask_then_allow() {
    let input = bash("npm test");
    let c = call("Bash", &input, None);
    let r = |s: &str| Rule::parse(s).unwrap();
    let mut rules = Rules { allow: vec![r("Bash(npm test:*)")], ..Rules::default() };
    assert!(matches!(judge(&c, &rules, &[]), Judged::Allow { .. }));
    rules.ask.push(r("Bash"));
    assert_eq!(judge(&c, &rules, &[r("Bash")]), Judged::Ask);
    rules.deny.push(r("Bash(npm test)"));
    assert_eq!(judge(&c, &rules, &[]), Judged::Deny(r("Bash(npm test)")));
    assert_eq!(judge(&c, &Rules::default(), &[]), Judged::Ask);
    assert!(matches!(judge(&c, &Rules::default(), &[r("Bash(npm test)")]), Judged::Allow { from: "this session's rules", .. }));
}

#[test]
fn typed_answers() {
    let allow = |g| Ok(PermissionAnswer::Allow { grade: g });
    assert_eq!(PermissionAnswer::parse("allow once"), allow(Grade::Once));
    assert_eq!(PermissionAnswer::parse("Allow for this session"), allow(Grade::Session));
    assert_eq!(PermissionAnswer::parse("session"), allow(Grade::Session));
    assert_eq!(PermissionAnswer::parse("ALWAYS"), allow(Grade::Always));
    assert_eq!(PermissionAnswer::parse("deny"), Ok(PermissionAnswer::Deny { reason: None }));
    assert_eq!(
        PermissionAnswer::parse("deny: use the staging tag"),
        Ok(PermissionAnswer::Deny { reason: Some("use the staging tag".into()) })
    );
    assert!(PermissionAnswer::parse("denylist").is_err());
    assert!(PermissionAnswer::parse("sure").is_err());
}

#[test]
fn inputs_render_for_people_and_long_ones_say_so() {
    let (shown, whole) = render("Bash", &json!({"command": "rm -rf build", "description": "clean"}));
    assert_eq!((shown.as_str(), whole), ("$ rm -rf build\n# clean", true));
    let (shown, _) = render("Edit", &json!({"file_path": "a.rs", "old_string": "x\ny", "new_string": "z"}));
    assert_eq!(shown, "a.rs\n- x\n- y\n+ z");
    let big = "line\n".repeat(1000);
    let (shown, whole) = render("Write", &json!({"file_path": "a", "content": big}));
    assert!(!whole && shown.chars().count() <= SHOWN_CHARS && shown.ends_with('…'));
    let (shown, _) = render("Bash", &json!({"command": "echo \u{202e}x"}));
    assert!(shown.contains("⟦U+202E⟧"));
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever a harness sends, the grant reads back from its
        /// record and allows that very call.
        #[test]
        fn every_grant_reads_back_and_allows_its_call(tool in prop_oneof![Just("Bash".to_string()), Just("PowerShell".to_string()), Just("exec_command".to_string()), ".{0,30}"], command in "(?s).{0,300}") {
            let input = if tool == "exec_command" { json!({"cmd": command}) } else { json!({"command": command}) };
            let c = call(&tool, &input, None);
            let rule = Rule::covering(&c);
            let back: Rule = serde_json::from_str(&serde_json::to_string(&rule).unwrap()).unwrap();
            prop_assert_eq!(&back, &rule);
            prop_assert!(back.allows(&c));
        }

        /// What configuration writes reads back as the same rule.
        #[test]
        fn written_rules_round_trip(text in "(Bash|Edit|Write|mcp__a__b)(\\((.{1,40})\\))?") {
            if let Ok(rule) = Rule::parse(&text) {
                prop_assert_eq!(Rule::parse(&rule.to_string()), Ok(rule.clone()));
                let back: Rule = serde_json::from_str(&serde_json::to_string(&rule).unwrap()).unwrap();
                prop_assert_eq!(back, rule);
            }
        }

        /// An exact command never allows a longer one.
        #[test]
        fn an_exact_grant_allows_nothing_more(command in "(?s).{1,200}", more in "(?s).{1,50}") {
            let input = json!({"command": command});
            let rule = Rule::covering(&call("Bash", &input, None));
            let longer = json!({"command": format!("{command}{more}")});
            let c = call("Bash", &longer, None);
            if longer["command"].as_str().map(str::trim) != Some(command.trim()) {
                prop_assert!(!rule.allows(&c));
            }
        }
    }
}
