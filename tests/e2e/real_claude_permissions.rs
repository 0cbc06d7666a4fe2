//! The real Claude Code in its default permission mode, its permission
//! dialogs relayed to the Telegram fake by plangate's `PermissionRequest`
//! hook (installed by the real installer), answered from the "phone".
//!
//! Claude Code runs as the Agent SDK host drives it (`ClaudeHost`): it asks
//! the hook and the host at once and takes the first answer, so the host
//! here never answers a dialog before plangate did (it only denies one
//! after plangate gave it back). Each test skips loudly without the client.

use super::kit::tg_user;
use super::permissions::{card, edited, release, start_permissions, ALICE, CHAT};
use super::real_claude::Project;
use plangate_engine::codec::{encode, Button};
use plangate_engine::ApprovalId;
use plangate_testkit::claude::{new_session_id, ClaudeHost, Decision, PermissionAsk};
use plangate_testkit::clients;
use plangate_testkit::fake_anthropic::{FakeAnthropic, Turn};
use plangate_testkit::telegram::FakeTelegram;
use serde_json::json;
use std::sync::Arc;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");

/// The request id in a permission card's buttons.
fn request_of(card: &plangate_testkit::telegram::Recorded) -> ApprovalId {
    let (_, data) = card.keyboard().expect("buttons").into_iter().flatten().next().expect("a button");
    match plangate_engine::codec::decode(&data) {
        Ok(Button::Answer(id, _)) => id,
        other => panic!("not a permission button: {other:?}"),
    }
}

/// Read the host's output to its `result`, answering no dialog; returns
/// the dialogs Claude Code asked the host about.
async fn to_result(host: &mut ClaudeHost) -> Vec<PermissionAsk> {
    let mut asked = Vec::new();
    while let Some(line) = host.next().await {
        if let Some(ask) = PermissionAsk::of(&line) {
            asked.push(ask);
        } else if line["type"] == "result" {
            break;
        }
    }
    asked
}

/// The real binary with a Telegram destination, a project with the hooks
/// installed (`wait` is `PLANGATE_HOOK_WAIT`), a released session (the gate
/// lets its mutations through), and a scripted model.
struct Scene {
    claude: clients::ClaudeCode,
    telegram: Arc<FakeTelegram>,
    project: Project,
    sid: String,
    model: FakeAnthropic,
    _server: plangate_testkit::server::ServerProcess,
}

impl Scene {
    async fn new(wait: &str) -> Option<Scene> {
        let claude = clients::claude_code()?;
        let telegram = Arc::new(FakeTelegram::start().await);
        let server = start_permissions(&telegram, "").await;
        let project = Project::install(BIN, &server, wait);
        let sid = new_session_id();
        release(&server, &sid).await;
        Some(Scene { claude, telegram, project, sid, model: FakeAnthropic::start().await, _server: server })
    }

    /// Claude Code in its default permission mode, asked `prompt`.
    async fn run(&self, prompt: &str) -> ClaudeHost {
        let mut host = self.project.claude(&self.claude, &self.model).permission_mode("default").session_id(&self.sid).host().await;
        host.send_user(prompt).await;
        host
    }
}

/// Tap button `n` of the `nth` permission card.
fn tap(fake: &Arc<FakeTelegram>, nth: usize, n: u8) -> tokio::task::JoinHandle<i64> {
    let fake = fake.clone();
    tokio::spawn(async move {
        let (sent, id) = card(&fake, nth).await;
        fake.push_update(fake.callback_update(
            CHAT,
            id,
            plangate_testkit::telegram::FakeTelegram::user(ALICE, Some("alice"), "alice"),
            &encode(Button::Answer(request_of(&sent), n)),
        ));
        id
    })
}

#[tokio::test]
async fn real_claude_code_asks_the_phone_allow_once_runs_and_the_same_command_asks_again() {
    let Some(sc) = Scene::new("30").await else { return };
    sc.model.push([
        Turn::tool("Bash", json!({"command": "touch made-once.txt", "description": "Create a file"})),
        Turn::tool("Bash", json!({"command": "touch made-once.txt", "description": "Create it again"})),
        Turn::text("done"),
    ]);
    let mut host = sc.run("make a file").await;
    let first = tap(&sc.telegram, 1, 0); // Allow once
    let second = tap(&sc.telegram, 2, 0); // the same command asks again: allow once more
    to_result(&mut host).await;
    let (card1, card2) = (first.await.unwrap(), second.await.unwrap());
    assert_ne!(card1, card2);
    assert!(sc.project.path().join("made-once.txt").exists());
    let bash = sc.model.results_of("Bash");
    assert_eq!(bash.len(), 2, "{bash:?}");
    assert!(bash.iter().all(|r| !r.is_error), "{bash:?}");
    assert!(edited(&sc.telegram, card1, "Allowed once by").await.contains("alice"));
    host.finish().await;
}

#[tokio::test]
async fn real_claude_code_allowed_for_the_session_does_not_ask_again() {
    let Some(sc) = Scene::new("30").await else { return };
    sc.model.push([
        Turn::tool("Bash", json!({"command": "touch a.txt"})),
        Turn::tool("Bash", json!({"command": "touch a.txt"})),
        Turn::text("done"),
    ]);
    let mut host = sc.run("make a file twice").await;
    let first = tap(&sc.telegram, 1, 1); // Allow for this session
    to_result(&mut host).await;
    first.await.unwrap();
    let bash = sc.model.results_of("Bash");
    assert_eq!(bash.len(), 2, "{bash:?}");
    assert!(bash.iter().all(|r| !r.is_error), "{bash:?}");
    let cards = sc.telegram.calls("sendMessage").into_iter().filter(|r| r.keyboard().is_some()).count();
    assert_eq!(cards, 1, "the second identical call was allowed by the session's rule, without a card");
    host.finish().await;
}

#[tokio::test]
async fn real_claude_code_denied_with_a_reason_tells_the_model_why() {
    let Some(sc) = Scene::new("30").await else { return };
    sc.model.push([Turn::tool("Bash", json!({"command": "touch denied.txt"})), Turn::text("ok, I will not")]);
    let mut host = sc.run("make a file").await;
    let fake = sc.telegram.clone();
    let deny = tokio::spawn(async move {
        card(&fake, 1).await;
        super::kit::say(&fake, CHAT, tg_user(ALICE, "alice"), "/plan deny use the build dir instead", "denied").await;
    });
    to_result(&mut host).await;
    deny.await.unwrap();
    assert!(!sc.project.path().join("denied.txt").exists());
    let bash = &sc.model.results_of("Bash")[0];
    assert!(bash.is_error, "{bash:?}");
    assert!(bash.text.contains("use the build dir instead"), "the model's next request carries the reason: {bash:?}");
    host.finish().await;
}

#[tokio::test]
async fn real_claude_code_unanswered_falls_back_to_its_own_dialog_and_nothing_runs() {
    let Some(sc) = Scene::new("2").await else { return };
    sc.model.push([Turn::tool("Bash", json!({"command": "touch nobody.txt"})), Turn::text("nobody answered")]);
    let mut host = sc.run("make a file").await;
    // The host's own dialog: nobody is at the terminal either, so once
    // plangate handed the dialog back (its card says it expired), deny.
    let (_, card1) = card(&sc.telegram, 1).await;
    let ask = host.next_permission().await.expect("Claude Code asks the host too");
    edited(&sc.telegram, card1, "Expired").await;
    host.answer(&ask, Decision::Deny("nobody at the terminal".into())).await;
    to_result(&mut host).await;
    assert!(!sc.project.path().join("nobody.txt").exists());
    assert!(sc.model.results_of("Bash")[0].is_error);
    host.finish().await;
}

/// `AskUserQuestion`: Claude Code runs the `PermissionRequest` hook for it,
/// and an allow that carries `answers` is the user's answer. Each question
/// is a plangate question (options as buttons); the model gets the label
/// tapped on the phone.
#[tokio::test]
async fn real_claude_code_ask_user_question_is_answered_from_the_phone() {
    let Some(sc) = Scene::new("30").await else { return };
    let question = json!({"question": "Which DB?", "header": "DB", "multiSelect": false,
        "options": [{"label": "sled", "description": "embedded"}, {"label": "pg", "description": "a server"}]});
    sc.model.push([Turn::tool("AskUserQuestion", json!({"questions": [question]})), Turn::text("ok")]);
    let mut host = sc.run("ask me").await;
    let fake = sc.telegram.clone();
    let tapped = tokio::spawn(async move {
        let (sent, id) = card(&fake, 1).await;
        assert!(sent.str("text").contains("Which DB?"), "{}", sent.str("text"));
        let (_, data) = sent.keyboard().unwrap().into_iter().flatten().nth(1).expect("the second option");
        fake.push_update(fake.callback_update(CHAT, id, tg_user(ALICE, "alice"), &data));
    });
    to_result(&mut host).await;
    tapped.await.unwrap();
    let result = &sc.model.results_of("AskUserQuestion")[0];
    assert!(!result.is_error, "{result:?}");
    assert!(result.text.contains("pg"), "the model gets the answer tapped: {result:?}");
    host.finish().await;
}

/// What broke sessions before (issue 47): Claude Code's permission dialogs
/// for a multi-line heredoc and a 5,000-character command reach the phone
/// as cards (cut, the whole input attached), a grant for the first covers
/// exactly it, and the session keeps answering afterwards.
#[tokio::test]
async fn real_claude_code_multi_line_and_long_commands_reach_the_phone_and_the_session_keeps_working() {
    let Some(sc) = Scene::new("30").await else { return };
    let heredoc = "cat > message.txt <<'EOF'\nAdd retries to the uploader\n\nCo-Authored-By: Claude <noreply@anthropic.com>\nEOF";
    let long = format!("echo {} > long.txt", "0123456789".repeat(500));
    sc.model.push([
        Turn::tool("Bash", json!({"command": heredoc, "description": "Write the commit message"})),
        Turn::tool("Bash", json!({"command": long, "description": "A long command"})),
        Turn::tool("Bash", json!({"command": heredoc, "description": "Write it again"})),
        Turn::text("done"),
    ]);
    let mut host = sc.run("write the message").await;
    let first = tap(&sc.telegram, 1, 1); // Allow for this session
    let second = tap(&sc.telegram, 2, 0); // Allow once
    to_result(&mut host).await;
    let (card1, _) = (first.await.unwrap(), second.await.unwrap());
    let bash = sc.model.results_of("Bash");
    assert_eq!(bash.len(), 3, "{bash:?}");
    assert!(bash.iter().all(|r| !r.is_error), "{bash:?}");
    assert!(sc.project.path().join("message.txt").exists() && sc.project.path().join("long.txt").exists());
    let cards: Vec<_> = sc.telegram.calls("sendMessage").into_iter().filter(|r| r.keyboard().is_some()).collect();
    assert_eq!(cards.len(), 2, "the heredoc's second run was allowed by its session grant");
    assert!(cards[1].str("text").contains("the whole input is attached"), "{}", cards[1].str("text"));
    // The long command went whole as a document, beside its card.
    let doc = sc.telegram.wait_call("sendDocument", 1, std::time::Duration::from_secs(15)).await;
    assert_eq!(doc.reply_to(), cards[1].message_id_sent());
    assert!(edited(&sc.telegram, card1, "Allowed for this session by").await.contains("alice"));
    let (st, v) = super::kit::call(sc._server.agent(reqwest::Method::GET, &format!("/v1/sessions/{}", sc.sid))).await;
    assert_eq!(st, 200, "{v}");
    let (decision, reason) = super::kit::gate(&sc._server, &sc.sid, "Bash", json!({"command": "ls"})).await;
    assert_eq!(decision, "allow", "{reason}");
    host.finish().await;
}
