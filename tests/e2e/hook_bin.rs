//! `plangate-hook claude|codex`, the hook-only binary (issue 53), against
//! `plangate hook claude|codex`: every hook input a real client wrote
//! (`tests/fixtures/claude-<version>/`, `tests/fixtures/codex-<version>/`)
//! fed to both, one after the other, against the same running server, each
//! in a session of its own (a fresh one per run, so neither sees what the
//! other did); the exit code, stdout and stderr must be the same, byte for
//! byte once the run's own session id, state directory and any approval id
//! are written as placeholders. Then the failures — the server down, a bad
//! token, no token, stdin that is not JSON, and for `plangate-hook` an
//! argument that names no harness — are each a block through both.

use super::kit::{closed_port_url, fixture_path, run_with_input, Run};
use plangate_testkit::server::{ServerProcess, AGENT_TOKEN};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");
const HOOK_BIN: &str = env!("CARGO_BIN_EXE_plangate-hook");

/// The two ways to start the hook.
#[derive(Clone, Copy, Debug)]
enum Entry {
    /// `plangate hook <harness>`.
    Plangate,
    /// `plangate-hook <harness>`.
    HookBin,
}

const ENTRIES: [Entry; 2] = [Entry::Plangate, Entry::HookBin];

/// What a run of the hook gets, besides its entry point and harness.
struct Env<'a> {
    url: &'a str,
    /// `PLANGATE_TOKEN`, or none at all.
    token: Option<&'a str>,
    home: &'a Path,
    state: &'a Path,
    extra: &'a [(&'a str, &'a str)],
}

/// The hook of `harness` through `entry`, not yet started.
fn command(entry: Entry, harness: &str) -> tokio::process::Command {
    match entry {
        Entry::Plangate => {
            let mut cmd = tokio::process::Command::new(BIN);
            cmd.args(["hook", harness]);
            cmd
        }
        Entry::HookBin => {
            let mut cmd = tokio::process::Command::new(HOOK_BIN);
            cmd.arg(harness);
            cmd
        }
    }
}

/// Run the hook of `harness` through `entry` with `input` on stdin, in an
/// environment of only `env` (and a `PATH`), as a harness would.
async fn run(entry: Entry, harness: &str, input: &[u8], env: &Env<'_>) -> Run {
    let mut cmd = command(entry, harness);
    cmd.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", env.home)
        .env("PLANGATE_URL", env.url)
        .env("PLANGATE_STATE_DIR", env.state)
        .env("PLANGATE_HOOK_WAIT", "1");
    if let Some(token) = env.token {
        cmd.env("PLANGATE_TOKEN", token);
    }
    for (k, v) in env.extra {
        cmd.env(k, v);
    }
    let run = run_with_input(cmd, input, Duration::from_secs(120)).await;
    eprintln!("{entry:?} {harness} -> exit {}: {} {}", run.code, run.stdout.trim(), run.stderr.trim());
    run
}

/// Every hook input of the real clients: (harness, file name, text), from
/// each `tests/fixtures/<harness>-<version>/` directory.
fn real_inputs() -> Vec<(&'static str, String, String)> {
    let root = fixture_path("", "");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root).expect("tests/fixtures").map(|e| e.expect("entry").path()).collect();
    dirs.sort();
    let mut inputs = Vec::new();
    for dir in dirs {
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        let harness = match name.split_once('-') {
            Some(("claude", _)) => "claude",
            Some(("codex", _)) => "codex",
            _ => continue,
        };
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).expect("fixtures").map(|e| e.expect("entry").path()).collect();
        files.sort();
        for file in files.into_iter().filter(|f| f.extension().is_some_and(|e| e == "json")) {
            let text = std::fs::read_to_string(&file).expect("fixture");
            inputs.push((harness, format!("{name}/{}", file.file_name().and_then(|n| n.to_str()).unwrap_or_default()), text));
        }
    }
    inputs
}

/// `text` with the run's own `session` (if any) and `state` directory, and
/// every 32-hex-character id (an approval's), as placeholders.
fn normalized(text: &str, session: Option<&str>, state: &Path) -> String {
    let text = session.map_or_else(|| text.to_string(), |s| text.replace(s, "<session>"));
    let text = text.replace(&state.display().to_string(), "<state>");
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(start) = rest.find(|c: char| c.is_ascii_hexdigit()) {
        out.push_str(&rest[..start]);
        let run = &rest[start..];
        let len = run.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(run.len());
        let word = &run[..len];
        let id = len == 32 && !word.bytes().any(|b| b.is_ascii_uppercase());
        out.push_str(if id { "<id>" } else { word });
        rest = &run[len..];
    }
    out.push_str(rest);
    out
}

/// A run as compared: exit code, then stdout and stderr, normalized.
fn seen(run: &Run, session: Option<&str>, state: &Path) -> (i32, String, String) {
    (run.code, normalized(&run.stdout, session, state), normalized(&run.stderr, session, state))
}

#[tokio::test]
async fn every_real_client_input_gets_the_same_answer_from_both_binaries() {
    let s = ServerProcess::start(BIN, "").await;
    let home = tempfile::tempdir().expect("home");
    for sub in ["project", "elsewhere", ".codex", ".claude/plans"] {
        std::fs::create_dir_all(home.path().join(sub)).expect("mkdir");
    }
    let here = home.path().to_str().expect("a UTF-8 temp dir").to_string();
    let inputs = real_inputs();
    assert!(inputs.iter().filter(|(h, _, _)| *h == "claude").count() >= 20, "the Claude Code captures are there");
    assert!(inputs.iter().filter(|(h, _, _)| *h == "codex").count() >= 10, "the Codex captures are there");
    let mut kinds = std::collections::BTreeSet::new();
    for (n, (harness, name, text)) in inputs.iter().enumerate() {
        let event: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let original = event["session_id"].as_str().unwrap_or_else(|| panic!("{name}: no session_id")).to_string();
        let mut answers = Vec::new();
        for (e, entry) in ENTRIES.into_iter().enumerate() {
            // A session of this run's own, of the same shape.
            let session = format!("{n:08x}-0000-4000-8000-{e:012x}");
            let input = text.replace(&original, &session).replace("/home/dev", &here);
            let state = tempfile::tempdir().expect("state");
            let env = Env { url: &s.base, token: Some(AGENT_TOKEN), home: home.path(), state: state.path(), extra: &[] };
            let run = run(entry, harness, input.as_bytes(), &env).await;
            answers.push(seen(&run, Some(&session), state.path()));
        }
        assert_eq!(answers[0], answers[1], "{name}: plangate hook {harness} (left) and plangate-hook {harness} (right) differ");
        kinds.insert((answers[0].0, answers[0].1.is_empty()));
    }
    // Not only silence: the captures got answers of more than one kind.
    assert!(kinds.len() > 1, "{kinds:?}");
}

/// Whether `run` blocks the call in its harness's terms: exit 2 with a
/// reason on stderr (both harnesses obey it), or exit 0 with a JSON deny.
fn assert_blocked(run: &Run, what: &str) {
    if run.code == 2 {
        assert!(!run.stderr.trim().is_empty(), "{what}: exit 2 needs its reason on stderr");
        return;
    }
    let v = run.json();
    let out = &v["hookSpecificOutput"];
    let denied = out["permissionDecision"] == "deny" || out["decision"]["behavior"] == "deny" || v["decision"] == "block";
    assert!(denied, "{what}: not a block: {v}");
}

#[tokio::test]
async fn failures_are_the_same_block_from_both_binaries() {
    let s = ServerProcess::start(BIN, "").await;
    let down = closed_port_url();
    let home = tempfile::tempdir().expect("home");
    let inputs = real_inputs();
    for harness in ["claude", "codex"] {
        let (_, name, gate_event) =
            inputs.iter().find(|(h, n, _)| *h == harness && n.ends_with("/pre_tool_use_bash.json")).expect("a captured Bash call");
        let cases: [(&str, &str, Option<&str>, &[u8]); 4] = [
            ("the server down", &down, Some(AGENT_TOKEN), gate_event.as_bytes()),
            ("a bad token", &s.base, Some("not-the-agent-token-0123456789"), gate_event.as_bytes()),
            ("no token", &s.base, None, gate_event.as_bytes()),
            ("stdin that is not JSON", &s.base, Some(AGENT_TOKEN), b"{ not json"),
        ];
        for (case, url, token, input) in cases {
            let what = format!("{harness}, {case} ({name})");
            let mut answers = Vec::new();
            for entry in ENTRIES {
                let state = tempfile::tempdir().expect("state");
                let env = Env { url, token, home: home.path(), state: state.path(), extra: &[] };
                let run = run(entry, harness, input, &env).await;
                assert_blocked(&run, &format!("{what} through {entry:?}"));
                answers.push(seen(&run, None, state.path()));
            }
            assert_eq!(answers[0], answers[1], "{what}: plangate hook (left) and plangate-hook (right) differ");
        }
        // The token as `plangate serve` reads it is the hook's too, through
        // both: the same answer as with `PLANGATE_TOKEN`, not a block for a
        // missing token.
        let mut answers = Vec::new();
        for entry in ENTRIES {
            let state = tempfile::tempdir().expect("state");
            let extra = [("PLANGATE__AGENTS__DEMO__TOKEN", AGENT_TOKEN)];
            let env = Env { url: &s.base, token: None, home: home.path(), state: state.path(), extra: &extra };
            let run = run(entry, harness, gate_event.as_bytes(), &env).await;
            assert!(
                !run.stdout.contains("PLANGATE_TOKEN") && !run.stderr.contains("PLANGATE_TOKEN"),
                "{harness}: {} {}",
                run.stdout,
                run.stderr
            );
            answers.push(seen(&run, None, state.path()));
        }
        assert_eq!(answers[0], answers[1], "{harness}: the server's token variable");
    }
}

#[tokio::test]
async fn plangate_hook_without_a_harness_blocks() {
    for args in [&[][..], &["gemini"], &["hook", "claude"], &["claude", "extra"], &["--help"]] {
        let mut cmd = tokio::process::Command::new(HOOK_BIN);
        cmd.args(args).env_clear().env("PLANGATE_URL", closed_port_url()).env("PLANGATE_TOKEN", AGENT_TOKEN);
        let run = run_with_input(cmd, b"{}", Duration::from_secs(60)).await;
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains("plangate-hook claude|codex") && run.stdout.is_empty(), "{args:?}: {}", run.stderr);
    }
}

/// The hook's own stdin reader (issue 53 moved it off tokio's blocking
/// pool onto `poll(2)` on the main thread) keeps both of its limits,
/// through both binaries: a harness that opens stdin and never closes it
/// gets a block once the 2 s budget is spent, not a hung tool call; one
/// that sends more than 4 MiB gets a block naming the cap, not a parse.
#[tokio::test]
async fn stdin_that_never_closes_or_runs_over_the_cap_is_a_block_from_both_binaries() {
    use tokio::io::AsyncWriteExt;
    let s = ServerProcess::start(BIN, "").await;
    let home = tempfile::tempdir().expect("home");
    for harness in ["claude", "codex"] {
        for entry in ENTRIES {
            let what = format!("{harness} through {entry:?}");
            let state = tempfile::tempdir().expect("state");
            let mut cmd = command(entry, harness);
            let piped = std::process::Stdio::piped;
            cmd.env_clear()
                .env("PATH", "/usr/bin:/bin")
                .env("HOME", home.path())
                .env("PLANGATE_URL", &s.base)
                .env("PLANGATE_TOKEN", AGENT_TOKEN)
                .env("PLANGATE_STATE_DIR", state.path())
                .stdin(piped())
                .stdout(piped())
                .stderr(piped())
                .kill_on_drop(true);
            let started = std::time::Instant::now();
            let mut child = cmd.spawn().expect("spawn");
            // Half an event, and stdin held open past the budget.
            let mut stdin = child.stdin.take().expect("stdin");
            stdin.write_all(br#"{"hook_event_name": "PreToolUse", "tool_name": "Bash", "#).await.expect("write");
            let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
                .await
                .unwrap_or_else(|_| panic!("{what}: the hook hung on a stdin that never closes"))
                .expect("output");
            drop(stdin);
            let held = Run {
                code: out.status.code().unwrap_or(-1),
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
                took: started.elapsed(),
            };
            assert_blocked(&held, &format!("{what}, stdin never closed"));
            assert!(
                format!("{}{}", held.stdout, held.stderr).contains("did not arrive on stdin in time"),
                "{what}: {} {}",
                held.stdout,
                held.stderr
            );
            assert!(held.took >= Duration::from_millis(1500), "{what}: blocked after {:?}, before its budget", held.took);

            // Over the cap: 4 MiB and one byte more of an event.
            let mut big = br#"{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": ""#.to_vec();
            big.resize((4 << 20) + 1, b'x');
            let env = Env { url: &s.base, token: Some(AGENT_TOKEN), home: home.path(), state: state.path(), extra: &[] };
            let run = run(entry, harness, &big, &env).await;
            assert_blocked(&run, &format!("{what}, over 4 MiB"));
            assert!(format!("{}{}", run.stdout, run.stderr).contains("is over 4194304 bytes"), "{what}: {} {}", run.stdout, run.stderr);
        }
    }
}
