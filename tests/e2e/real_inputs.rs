//! What real agents send, captured and replayed (issue 47): the hook inputs
//! the pinned Claude Code and Codex wrote for the calls that broke sessions
//! before — Claude Code's heredoc commit, a 5,000-character command,
//! unicode with an emoji and a right-to-left override, a file with a
//! unicode name, an edit — fed byte for byte to `plangate hook claude|codex`
//! against the real server.
//!
//! Capture (`#[ignore]`d: it needs the clients of `.ci/install-clients`):
//! `PLANGATE_WRITE_FIXTURES=1 cargo test -p plangate-server --test e2e
//! real_inputs::capture -- --ignored` writes them under
//! `tests/fixtures/claude-<version>/` and `tests/fixtures/codex-<version>/`;
//! without the variable the same run checks that the client still sends
//! what the fixtures hold. The replays read only the files, so they always
//! run.

use super::kit::{call, fixture_path, gate, hook_run, read_json, Run};
use super::permissions::{release, start_permissions, ALICE, CHAT};
use plangate_testkit::clients::{self, CLAUDE_CODE_VERSION, CODEX_VERSION};
use plangate_testkit::hook_recorder::{HookEvent, HookRecorder};
use plangate_testkit::server::ServerProcess;
use plangate_testkit::telegram::{FakeTelegram, Recorded};
use reqwest::Method;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(15);

/// Claude Code's commit, as its system prompt tells it to write one.
const HEREDOC_COMMIT: &str = "git commit -m \"$(cat <<'EOF'\nAdd retries to the uploader\n\nA failed chunk is sent again up to three times, with a growing pause\nbetween tries, so one dropped connection no longer fails the upload.\n\nCo-Authored-By: Claude <noreply@anthropic.com>\nEOF\n)\"";
/// Unicode, an emoji and a right-to-left override (U+202E), in one command.
const UNICODE_COMMAND: &str = "printf '%s\\n' \"Grüße aus Zürich — 東京 🚀 \u{202E}gpj.exe\" > greeting.txt";
/// The file the `Write` creates: a unicode name.
const UNICODE_FILE: &str = "notizen-ünïcödé-名前 🚀.md";
const WRITTEN: &str = "# Notizen\n\nZeile eins: Grüße 👋\nZeile zwei: 東京\n\n- erledigt\n";
/// A one-line command of exactly 5,000 characters.
fn long_command() -> String {
    let (head, tail) = ("echo ", " > long.txt");
    let digits: String = "0123456789".chars().cycle().take(5_000 - head.len() - tail.len()).collect();
    let command = format!("{head}{digits}{tail}");
    assert_eq!(command.chars().count(), 5_000);
    command
}

/// A commit as a heredoc, the way a Codex model writes one.
const CODEX_HEREDOC_COMMIT: &str =
    "git commit -F - <<'EOF'\nAdd retries to the uploader\n\nA failed chunk is sent again up to three times: Grüße 🚀\nEOF";
/// The file Codex's `apply_patch` adds: a unicode name.
const CODEX_FILE: &str = "ünïcödé-名前 🚀.txt";

// ------------------------------------------------------------ replay

/// The calls captured from each client (`pre_tool_use_<case>.json` and
/// `permission_request_<case>.json` of each).
const CLAUDE_CASES: [&str; 5] = ["bash_heredoc_commit", "bash_long", "bash_unicode", "write_unicode_name", "edit"];
const CODEX_CASES: [&str; 3] = ["bash_heredoc_commit", "bash_long", "apply_patch_unicode_name"];

/// One client's captured fixtures, with the machine they came from put back:
/// the placeholder `/home/dev` (its `project`, `elsewhere`, `.codex`) is a
/// temporary directory here, so the hook resolves the files against a
/// project that exists, as on the agent's machine. Nothing else changes.
struct Captured {
    /// `claude` or `codex`, as in `plangate hook <harness>`.
    harness: &'static str,
    home: tempfile::TempDir,
    /// (name, the hook's stdin) of each fixture, `PreToolUse` first.
    events: Vec<(String, String)>,
}

impl Captured {
    fn load(harness: &'static str) -> Captured {
        let (dir, cases): (String, &[&str]) = match harness {
            "claude" => (format!("claude-{CLAUDE_CODE_VERSION}"), &CLAUDE_CASES),
            _ => (format!("codex-{CODEX_VERSION}"), &CODEX_CASES),
        };
        let home = tempfile::tempdir().expect("home");
        for sub in ["project", "elsewhere", ".codex", ".claude/plans"] {
            std::fs::create_dir_all(home.path().join(sub)).expect("mkdir");
        }
        let here = home.path().to_str().expect("a UTF-8 temp dir").to_string();
        assert!(!here.contains(['"', '\\']), "{here} goes into JSON as it is");
        let mut events = Vec::new();
        for prefix in ["pre_tool_use", "permission_request"] {
            for case in cases {
                let name = format!("{prefix}_{case}.json");
                let path = fixture_path(&dir, &name);
                let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                events.push((name, text.replace("/home/dev", &here)));
            }
        }
        Captured { harness, home, events }
    }

    /// The one session every fixture of the capture ran in.
    fn session(&self) -> String {
        let ids: std::collections::BTreeSet<String> =
            self.events.iter().map(|(_, e)| parse(e)["session_id"].as_str().expect("session_id").to_string()).collect();
        assert_eq!(ids.len(), 1, "{ids:?}");
        ids.into_iter().next().expect("one")
    }

    async fn hook(&self, s: &ServerProcess, input: &str, wait: &str, state: &Path) -> Run {
        let home = self.home.path().to_str().expect("UTF-8");
        hook_run(self.harness, &s.base, input.as_bytes(), &[("HOME", home), ("PLANGATE_HOOK_WAIT", wait)], state).await
    }
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).expect("a captured hook input is JSON")
}

/// The hook's answer to a gate event, checked for its form: exit 0, and
/// either no output (no opinion) or one JSON object answering `event` with
/// a decision of the kinds the harness knows — never `continue: false`,
/// which would end the agent's session. The JSON, or `None`.
fn answer(run: &Run, event: &str) -> Option<Value> {
    assert_eq!(run.code, 0, "{event}: {}", run.stderr);
    if run.stdout.is_empty() {
        return None;
    }
    let v = run.json();
    assert_ne!(v["continue"], json!(false), "{event}: a gate event never stops the session: {v}");
    let out = &v["hookSpecificOutput"];
    assert_eq!(out["hookEventName"], event, "{v}");
    match event {
        "PreToolUse" => assert!(matches!(out["permissionDecision"].as_str(), None | Some("allow" | "deny" | "ask")), "{v}"),
        _ => assert!(matches!(out["decision"]["behavior"].as_str(), Some("allow" | "deny")), "{v}"),
    }
    Some(v)
}

/// A card's text as a person reads it: Telegram's HTML entities decoded,
/// the word joiner that keeps `@` from notifying someone taken out.
fn as_read(html: &str) -> String {
    html.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&amp;", "&").replace('\u{2060}', "")
}

/// Whether the card `shown` holds `text` as the engine reveals it (hidden
/// and direction-changing characters as `⟦U+…⟧`): all of it, or when the
/// card was cut, its first 200 characters.
fn holds(shown: &str, text: &str, cut: bool) -> bool {
    let revealed = plangate_engine::text::reveal(text).0;
    let wanted: String = if cut { revealed.chars().take(200).collect() } else { revealed };
    shown.contains(&wanted)
}

/// The session answers its agent: `GET /v1/sessions/{id}` and a gate call
/// are both 200, and a read is still allowed.
async fn answers(s: &ServerProcess, sid: &str, mode: &str) {
    let (st, v) = call(s.agent(Method::GET, &format!("/v1/sessions/{sid}"))).await;
    assert_eq!((st, v["mode"].as_str()), (200, Some(mode)), "{v}");
    let (decision, reason) = gate(s, sid, "Bash", json!({"command": "ls"})).await;
    assert_eq!(decision, "allow", "{reason}");
}

/// The cards (messages with buttons) among `reqs`.
fn cards(reqs: &[Recorded]) -> Vec<Recorded> {
    reqs.iter().filter(|r| r.method == "sendMessage" && r.keyboard().is_some()).cloned().collect()
}

/// Released by a person: every captured `PreToolUse` passes without an
/// opinion; every `PermissionRequest` becomes a card — a long input cut, the
/// whole of it attached as a document replying to the card — and "Allow
/// once" tapped on the phone is the hook's allow. The session keeps
/// answering after each, and after the server crashed and came back.
async fn released(harness: &'static str) {
    let captured = Captured::load(harness);
    let sid = captured.session();
    let fake = FakeTelegram::start().await;
    let mut s = start_permissions(&fake, "").await;
    let state = tempfile::tempdir().expect("state");
    release(&s, &sid).await;
    let mut relayed = 0;
    for (name, input) in &captured.events {
        let event = parse(input);
        let event_name = event["hook_event_name"].as_str().expect("hook_event_name");
        if event_name == "PreToolUse" {
            let run = captured.hook(&s, input, "30", state.path()).await;
            assert_eq!(answer(&run, event_name), None, "{name}: released, the gate has no opinion");
            answers(&s, &sid, "normal").await;
            continue;
        }
        relayed += 1;
        let tap = async {
            let card = fake.wait_for(WAIT, |reqs| cards(reqs).into_iter().nth(relayed - 1)).await;
            let (_, allow_once) = card.keyboard().expect("buttons")[0][0].clone();
            let id = card.message_id_sent().expect("message id");
            fake.push_update(fake.callback_update(CHAT, id, FakeTelegram::user(ALICE, Some("alice"), "alice"), &allow_once));
            card
        };
        let (run, card) = tokio::join!(captured.hook(&s, input, "30", state.path()), tap);
        let v = answer(&run, event_name).unwrap_or_else(|| panic!("{name}: no answer from the phone reached the hook"));
        assert_eq!(v["hookSpecificOutput"]["decision"]["behavior"], "allow", "{name}: {v}");
        if harness == "claude" {
            assert_eq!(v["hookSpecificOutput"]["decision"]["updatedInput"], event["tool_input"], "{name}: runs what was asked");
        }
        let text = card.str("text");
        let tool = event["tool_name"].as_str().expect("tool_name");
        assert!(text.contains(&format!("Permission request from demo/{sid}: {tool}")), "{name}: {text}");
        let input = &event["tool_input"];
        let cut = serde_json::to_string_pretty(input).expect("JSON").chars().count() > 1_500;
        if cut {
            assert!(text.contains("(cut here: the whole input is attached)"), "{name}: {text}");
            let doc = fake.wait_request("sendDocument", WAIT, |r| r.reply_to() == card.message_id_sent()).await;
            let attached = doc.field("document")["text"].as_str().unwrap_or_default().to_string();
            let command = input["command"].as_str().expect("the long input is a command");
            assert!(attached.contains(command), "{name}: the document holds the whole command: {attached:.200}");
        } else {
            assert!(!text.contains("the whole input is attached"), "{name}: {text}");
        }
        // What the person reads is what runs: every line, blank ones and
        // hidden characters included.
        let shown = as_read(&text);
        let field = |k: &str| input[k].as_str();
        let parts: Vec<&str> = match (field("command"), field("file_path")) {
            (Some(command), _) => vec![command],
            (None, Some(file)) => [Some(file), field("content"), field("new_string")].into_iter().flatten().flat_map(str::lines).collect(),
            _ => panic!("{name}: neither a command nor a file: {input}"),
        };
        for part in parts {
            assert!(holds(&shown, part, cut), "{name}: the card shows {part:?}:\n{shown}");
        }
        answers(&s, &sid, "normal").await;
    }
    assert_eq!(cards(&fake.requests()).len(), relayed, "one card per PermissionRequest");

    s.restart().await;
    answers(&s, &sid, "normal").await;
    for (name, input) in captured.events.iter().filter(|(n, _)| n.starts_with("pre_tool_use")) {
        let run = captured.hook(&s, input, "30", state.path()).await;
        assert_eq!(answer(&run, "PreToolUse"), None, "{name}: after the restart too");
    }
    answers(&s, &sid, "normal").await;
}

/// In plan mode: every captured call is a mutation, so `PreToolUse` is
/// denied and `PermissionRequest` too, each in its own event's terms, with
/// a reason the model reads, and no card reaches the phone. The session
/// keeps answering, also after the server crashed and came back.
async fn in_plan_mode(harness: &'static str) {
    let captured = Captured::load(harness);
    let sid = captured.session();
    let fake = FakeTelegram::start().await;
    let mut s = start_permissions(&fake, "").await;
    let state = tempfile::tempdir().expect("state");
    let (st, v) = call(s.agent(Method::POST, &format!("/v1/sessions/{sid}/enter"))).await;
    assert_eq!(st, 200, "{v}");
    for round in ["before the restart", "after the restart"] {
        for (name, input) in &captured.events {
            let event_name = parse(input)["hook_event_name"].as_str().expect("hook_event_name").to_string();
            let run = captured.hook(&s, input, "5", state.path()).await;
            let v = answer(&run, &event_name).unwrap_or_else(|| panic!("{name} {round}: planning, a mutation is refused"));
            let reason = match event_name.as_str() {
                "PreToolUse" => run.pre_tool_use_denial(),
                _ => run.permission_denial(),
            };
            assert!(reason.starts_with("plangate: "), "{name} {round}: {v}");
            answers(&s, &sid, "plan").await;
        }
        if round == "before the restart" {
            s.restart().await;
            answers(&s, &sid, "plan").await;
        }
    }
    let posted: Vec<String> = cards(&fake.requests()).iter().map(|c| c.str("text")).collect();
    assert!(posted.is_empty(), "no card for a call the gate refused: {posted:?}");
}

#[tokio::test]
async fn claude_code_inputs_in_a_released_session_reach_the_phone_and_keep_the_session() {
    released("claude").await;
}

#[tokio::test]
async fn claude_code_inputs_in_plan_mode_are_refused_in_each_events_terms() {
    in_plan_mode("claude").await;
}

#[tokio::test]
async fn codex_inputs_in_a_released_session_reach_the_phone_and_keep_the_session() {
    released("codex").await;
}

#[tokio::test]
async fn codex_inputs_in_plan_mode_are_refused_in_each_events_terms() {
    in_plan_mode("codex").await;
}

// ------------------------------------------------------------ capture

/// `dir` as a git repository with one staged file, as Claude Code finds a
/// project it is about to commit in.
fn git_repo(dir: &Path) {
    for args in [&["init", "-q"][..], &["config", "user.email", "dev@example.com"], &["config", "user.name", "Dev"]] {
        let out = Command::new("git").args(args).current_dir(dir).output().expect("git");
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    std::fs::write(dir.join("uploader.txt"), "retries: 3\n").expect("write");
    let out = Command::new("git").args(["add", "uploader.txt"]).current_dir(dir).output().expect("git add");
    assert!(out.status.success());
}

/// The real Claude Code, in its default permission mode under a host that
/// allows every dialog, the recorder as its hooks: `Write` and `Edit` of a
/// unicode-named file, the unicode command, the 5,000-character command,
/// the heredoc commit.
#[tokio::test]
#[ignore = "drives the real Claude Code; run to capture its fixtures"]
async fn capture_claude() {
    use plangate_testkit::claude::{new_session_id, ClaudeRun, Decision};
    use plangate_testkit::fake_anthropic::{FakeAnthropic, Turn};
    let Some(claude) = clients::claude_code() else { return };
    let fake = FakeAnthropic::start().await;
    let hooks = HookRecorder::new();
    let work = tempfile::tempdir().expect("project");
    git_repo(work.path());
    let file = work.path().join(UNICODE_FILE).display().to_string();
    let long = long_command();
    fake.push([
        Turn::tool("Write", json!({"file_path": file, "content": WRITTEN})),
        Turn::tool("Edit", json!({"file_path": file, "old_string": "- erledigt\n", "new_string": "- erledigt\n- offen: Zürich ✈️\n"})),
        Turn::tool("Bash", json!({"command": UNICODE_COMMAND, "description": "Write a greeting"})),
        Turn::tool("Bash", json!({"command": long, "description": "Write a long line"})),
        Turn::tool("Bash", json!({"command": HEREDOC_COMMIT, "description": "Commit the uploader retries"})),
        Turn::text("Committed."),
    ]);
    let run = ClaudeRun::new(&claude, &fake, work.path()).permission_mode("default").session_id(&new_session_id());
    let mut host = run.settings(hooks.claude_settings()).host().await;
    host.send_user("write the notes, then commit the uploader").await;
    let mut asked = Vec::new();
    host.until_result(|ask| {
        asked.push(ask.tool_name.clone());
        Decision::Allow
    })
    .await
    .expect("a result");
    let out = host.finish().await;
    out.assert_success();
    assert_eq!(asked, ["Write", "Edit", "Bash", "Bash", "Bash"], "Claude Code asked the host about each call");
    let log = Command::new("git").args(["log", "--format=%B", "-1"]).current_dir(work.path()).output().expect("git log");
    assert!(String::from_utf8_lossy(&log.stdout).starts_with("Add retries to the uploader\n"), "the commit ran");

    let case = |e: &HookEvent| {
        let command = e.input["tool_input"]["command"].as_str();
        match e.input["tool_name"].as_str() {
            Some("Bash") if command == Some(HEREDOC_COMMIT) => Some("bash_heredoc_commit"),
            Some("Bash") if command == Some(long.as_str()) => Some("bash_long"),
            Some("Bash") if command == Some(UNICODE_COMMAND) => Some("bash_unicode"),
            Some("Write") => Some("write_unicode_name"),
            Some("Edit") => Some("edit"),
            _ => None,
        }
    };
    let named = named(&hooks.events(), &CLAUDE_CASES, case);
    keep("claude", CLAUDE_CODE_VERSION, &named, out.home(), work.path(), "/home/dev", &[]);
}

/// The real Codex (`codex exec --approve-for-me`: Codex's usual
/// `workspace-write` sandbox, its approvals asked — the `PermissionRequest`
/// hook first, then its automatic reviewer, which the fake answers with an
/// allow), the recorder as its hooks: a heredoc commit and a 5,000-character
/// command through `exec_command`, each asking to leave the sandbox (`.git`
/// is read-only in it), and `apply_patch` adding a unicode-named file
/// outside the writable roots (`/tmp` excluded from them).
#[tokio::test]
#[ignore = "drives the real Codex; run to capture its fixtures"]
async fn capture_codex() {
    use plangate_testkit::codex::CodexRun;
    use plangate_testkit::fake_openai::{FakeOpenAi, Request, Turn};
    let Some(codex) = clients::codex() else { return };
    let fake = FakeOpenAi::start().await;
    let hooks = HookRecorder::new();
    let work = tempfile::tempdir().expect("project");
    git_repo(work.path());
    let outside = tempfile::tempdir().expect("a directory outside the sandbox");
    let long = long_command();
    let patch = format!("*** Begin Patch\n*** Add File: {}/{CODEX_FILE}\n+Grüße 🚀\n+東京\n*** End Patch\n", outside.path().display());
    let escalated = |cmd: &str, why: &str| {
        Turn::call("exec_command", json!({"cmd": cmd, "sandbox_permissions": "require_escalated", "justification": why}))
    };
    // The reviewer's requests belong to a turn of their own, under the main one.
    let reviewer = |r: &Request| r.body["client_metadata"]["parent_turn_id"].is_string();
    for turn in [
        escalated(CODEX_HEREDOC_COMMIT, "Commit the uploader retries (.git is read-only in the sandbox)"),
        escalated(&long, "Write a long line"),
        Turn::apply_patch(&patch),
        Turn::message("Done."),
    ] {
        fake.push_when(move |r| !reviewer(r), move |_| turn);
    }
    for _ in 0..3 {
        let allow = json!({"outcome": "allow", "risk_level": "low", "user_authorization": "high", "rationale": "The user asked for it."});
        fake.push_when(reviewer, move |_| Turn::message(allow.to_string()));
    }
    let out = CodexRun::new(&codex, &fake, work.path())
        .hooks(hooks.codex_hooks())
        .arg("--approve-for-me")
        .arg("-c")
        .arg("sandbox_workspace_write.exclude_slash_tmp=true")
        .arg("-c")
        .arg("sandbox_workspace_write.exclude_tmpdir_env_var=true")
        .run("commit the uploader, then write the notes")
        .await;
    out.assert_success();
    assert_eq!(fake.pending(), 0, "every scripted turn was asked for");
    let log = Command::new("git").args(["log", "--format=%B", "-1"]).current_dir(work.path()).output().expect("git log");
    assert!(String::from_utf8_lossy(&log.stdout).starts_with("Add retries to the uploader\n"), "the commit ran");
    assert!(work.path().join("long.txt").exists());
    assert_eq!(std::fs::read_to_string(outside.path().join(CODEX_FILE)).expect("the patch ran"), "Grüße 🚀\n東京\n");

    let case = |e: &HookEvent| {
        let command = e.input["tool_input"]["command"].as_str()?;
        match e.input["tool_name"].as_str() {
            Some("Bash") if command == CODEX_HEREDOC_COMMIT => Some("bash_heredoc_commit"),
            Some("Bash") if command == long => Some("bash_long"),
            Some("apply_patch") if command.contains(CODEX_FILE) => Some("apply_patch_unicode_name"),
            _ => None,
        }
    };
    let named = named(&hooks.events(), &CODEX_CASES, case);
    let outside_as = [(outside.path(), "/home/dev/elsewhere")];
    keep("codex", CODEX_VERSION, &named, out.home(), work.path(), "/home/dev/.codex", &outside_as);
}

/// The `PreToolUse` and `PermissionRequest` events of each of `cases`
/// (which `case` tells), as `pre_tool_use_<case>` and
/// `permission_request_<case>`.
fn named(events: &[HookEvent], cases: &[&str], case: impl Fn(&HookEvent) -> Option<&'static str>) -> Vec<(String, HookEvent)> {
    let mut named = Vec::new();
    for wanted in cases {
        for (prefix, event) in [("pre_tool_use", "PreToolUse"), ("permission_request", "PermissionRequest")] {
            let found = events.iter().find(|e| e.event == event && case(e) == Some(*wanted));
            let found = found.unwrap_or_else(|| panic!("no {event} for {wanted} in {events:#?}"));
            named.push((format!("{prefix}_{wanted}"), found.clone()));
        }
    }
    named
}

/// `PLANGATE_WRITE_FIXTURES=1`: write each event as
/// `tests/fixtures/<client>-<version>/<name>.json`, the hook's stdin byte for
/// byte but for the temporary home (`home_as`), project directory
/// (`/home/dev/project`, also in Claude Code's project slug) and `others`.
/// Otherwise check that the fixture of that name has the same fields and
/// the same tool input.
fn keep(client: &str, version: &str, named: &[(String, HookEvent)], home: &Path, work: &Path, home_as: &str, others: &[(&Path, &str)]) {
    let dir = format!("{client}-{version}");
    let write = std::env::var("PLANGATE_WRITE_FIXTURES").as_deref() == Ok("1");
    for (name, event) in named {
        let mut text = event.raw.trim_end().to_string();
        for (dir, placeholder) in others {
            text = text.replace(&dir.display().to_string(), placeholder);
        }
        let text = with_placeholders(&text, home, work, home_as) + "\n";
        let path = fixture_path(&dir, &format!("{name}.json"));
        if write {
            std::fs::write(&path, text).expect("write the fixture");
            continue;
        }
        let (now, kept): (Value, Value) = (serde_json::from_str(&text).expect("JSON"), read_json(&path));
        let keys = |v: &Value| v.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()).unwrap_or_default();
        assert_eq!(keys(&now), keys(&kept), "{name}: the fields changed");
        assert_eq!(now["tool_input"], kept["tool_input"], "{name}: the tool input changed");
    }
}

fn with_placeholders(text: &str, home: &Path, work: &Path, home_as: &str) -> String {
    let slug = |p: &str| p.replace(['/', '.'], "-");
    let (home, work) = (home.display().to_string(), work.display().to_string());
    text.replace(&work, "/home/dev/project").replace(&slug(&work), "-home-dev-project").replace(&home, home_as)
}
