//! Which project a card is about, and routing by project (#30), through the
//! real binary and the Telegram fake: the project an agent sends is on the
//! card, in the API and in `/plan list` (grouped, oldest waiting first); the
//! CLI reads it from the working directory's git files; a destination's
//! `projects` globs take only the cards of those projects, and its people
//! decide only those.

use super::kit::{call, cards_in, propose, say, telegram_section, tg_user, wait_cards};
use plangate_testkit::server::{ServerProcess, AGENT_TOKEN};
use plangate_testkit::telegram::FakeTelegram;
use reqwest::Method;
use serde_json::{json, Value};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");
const WAIT: Duration = Duration::from_secs(15);
const BILLING_CHAT: i64 = -1001000000001;
const WEB_CHAT: i64 = -1001000000002;
const ALICE: i64 = 111;
const BOB: i64 = 222;

fn with_project(title: &str, project: Value) -> Value {
    json!({"title": title, "steps": [{"step": "Read the code"}], "project": project})
}

#[tokio::test]
async fn the_project_is_on_the_card_in_the_api_and_in_the_grouped_list() {
    let fake = FakeTelegram::start().await;
    let extra = format!(
        "{}\n[destinations.ops]\nchannel = \"telegram\"\nchat = \"{BILLING_CHAT}\"\napprovers = [\"telegram:{ALICE}\"]\n",
        telegram_section(&fake)
    );
    let s = ServerProcess::start_with(BIN, &["ops"], &extra).await;
    let billing = json!({"name": "billing-api", "branch": "feat/retries", "host": "dev-laptop"});
    propose(&s, "s1", &with_project("Add retries", billing.clone())).await;
    propose(&s, "s2", &with_project("Fix the header", json!({"name": "web", "branch": "main"}))).await;
    propose(&s, "s3", &json!({"title": "Tidy up", "steps": [{"step": "Look"}]})).await;
    let cards = wait_cards(&fake, BILLING_CHAT, 3).await;
    // Each proposal's card job runs on its own: find them by title.
    let card = |title: &str| cards.iter().find(|c| c.contains(title)).unwrap_or_else(|| panic!("{title} in {cards:?}")).clone();
    assert!(card("Add retries").contains("📁 billing-api · feat/retries · dev-laptop — demo/s1"), "{}", card("Add retries"));
    assert!(card("Fix the header").contains("📁 web · main — demo/s2"), "{}", card("Fix the header"));
    assert!(!card("Tidy up").contains("📁"), "no project, no label: {}", card("Tidy up"));

    // The agent's Decision and the operator's list carry it as sent.
    let (_, decision) = call(s.agent(Method::GET, "/v1/sessions/s1/decision")).await;
    assert_eq!(decision["project"], billing, "{decision}");
    let (_, list) = call(s.operator(Method::GET, "/v1/approvals")).await;
    let listed = list.to_string();
    assert!(listed.contains("\"name\":\"billing-api\"") && listed.contains("\"host\":\"dev-laptop\""), "{listed}");

    // `/plan list`: by project, the one waiting longest first.
    let text = say(&fake, BILLING_CHAT, tg_user(ALICE, "alice"), "/plan list", "📁").await;
    let at = |needle: &str| text.find(needle).unwrap_or_else(|| panic!("{needle} in {text}"));
    assert!(at("📁 billing-api") < at("📁 web") && at("📁 web") < at("📁 (no project)"), "{text}");
    assert!(text.contains("Add retries · waiting") && text.contains("feat/retries · dev-laptop"), "{text}");

    // Hidden characters and wrong shapes are refused with the key to fix.
    let req = |body: Value| s.agent(Method::POST, "/v1/sessions/s4/proposals").json(&body);
    let (st, _) = call(s.agent(Method::POST, "/v1/sessions/s4/enter")).await;
    assert_eq!(st, 200);
    let (st, err) = call(req(with_project("T", json!({"name": "bill\u{202E}ing"})))).await;
    assert_eq!(st, 422, "{err}");
    assert!(err["error"]["message"].as_str().unwrap().contains("project.name contains the character U+202E"), "{err}");
    let (st, err) = call(req(with_project("T", json!("billing")))).await;
    assert_eq!((st, err["error"]["code"].as_str()), (422, Some("invalid_request")), "{err}");
}

#[tokio::test]
async fn the_cli_sends_the_project_of_its_working_directory() {
    let s = ServerProcess::start(BIN, "").await;
    let repo = tempfile::tempdir().expect("temp dir");
    let git = repo.path().join("checkout/.git");
    std::fs::create_dir_all(&git).unwrap();
    std::fs::write(git.join("HEAD"), "ref: refs/heads/feat/retries\n").unwrap();
    std::fs::write(git.join("config"), "[remote \"origin\"]\n\turl = git@github.com:acme/billing-api.git\n").unwrap();
    let dir = repo.path().join("checkout");
    std::fs::write(dir.join("plan.md"), "# Add retries\n\n## Steps\n1. Read the client\n").unwrap();
    let out = tokio::process::Command::new(BIN)
        .args(["propose", "plan.md", "--session", "cli", "--json"])
        .current_dir(&dir)
        .env("PLANGATE_URL", &s.base)
        .env("PLANGATE_TOKEN", AGENT_TOKEN)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), out).await.expect("finished").expect("ran");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (_, decision) = call(s.agent(Method::GET, "/v1/sessions/cli/decision")).await;
    assert_eq!(decision["project"]["name"], "billing-api", "{decision}");
    assert_eq!(decision["project"]["branch"], "feat/retries", "{decision}");
}

#[tokio::test]
async fn routing_by_project_sends_each_card_only_where_it_matches() {
    let fake = FakeTelegram::start().await;
    let extra = format!(
        "{}\n[destinations.billing]\nchannel = \"telegram\"\nchat = \"{BILLING_CHAT}\"\napprovers = [\"telegram:{ALICE}\"]\nprojects = [\"billing-*\"]\n\
         [destinations.web]\nchannel = \"telegram\"\nchat = \"{WEB_CHAT}\"\napprovers = [\"telegram:{BOB}\"]\nprojects = [\"web\"]\n",
        telegram_section(&fake)
    );
    let s = ServerProcess::start_with(BIN, &["billing", "web"], &extra).await;
    let billing = propose(&s, "b1", &with_project("Add retries", json!({"name": "billing-api"}))).await;
    propose(&s, "w1", &with_project("Fix the header", json!({"name": "web"}))).await;
    let in_billing = wait_cards(&fake, BILLING_CHAT, 1).await;
    let in_web = wait_cards(&fake, WEB_CHAT, 1).await;
    assert!(in_billing[0].contains("Add retries") && in_web[0].contains("Fix the header"));
    // A card that names no project goes nowhere here, and the audit says why.
    propose(&s, "n1", &json!({"title": "Unlabelled", "steps": [{"step": "Look"}]})).await;
    plangate_testkit::server::eventually(WAIT, "the unrouted card is recorded", || async {
        super::kit::audit(&s, "session=n1").await.iter().any(|e| e["action"] == "card_recorded")
    })
    .await;
    // Each chat lists and decides only its own projects.
    let id = billing["approval_id"].as_str().unwrap().to_string();
    let refused = say(&fake, WEB_CHAT, tg_user(BOB, "bob"), &format!("/plan accept #{}", &id[..8]), "#id").await;
    assert!(refused.contains("No plan with that #id in this chat"), "{refused}");
    let listed = say(&fake, WEB_CHAT, tg_user(BOB, "bob"), "/plan list", "📁").await;
    assert!(listed.contains("📁 web") && !listed.contains("billing"), "{listed}");
    let (_, decision) = call(s.agent(Method::GET, "/v1/sessions/b1/decision")).await;
    assert_eq!(decision["status"], "pending");
    assert_eq!(cards_in(&fake, BILLING_CHAT).len() + cards_in(&fake, WEB_CHAT).len(), 2, "one card each, none unrouted");

    // `config check` says where each project's cards go.
    let out = tokio::process::Command::new(BIN).args(["config", "check", "--config"]).arg(s.config_path()).kill_on_drop(true).output();
    let out = tokio::time::timeout(Duration::from_secs(30), out).await.expect("finished").expect("ran");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("cards to billing: projects matching billing-*"), "{said}");
    assert!(said.contains("cards to web: projects matching web"), "{said}");
}
