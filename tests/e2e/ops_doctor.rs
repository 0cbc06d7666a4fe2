//! `plangate doctor` through the real binary against the loopback fakes
//! (offline): the Telegram, Slack and Discord tokens work, each destination
//! chat is seen by the bot, which can post there, each approver is a member;
//! the agent hooks installed in the project name a binary that exists;
//! `server.public_url` answers. Every failure is named with what to do, and
//! fails the run. The running server too: it answers and is ready, it
//! accepts `PLANGATE_TOKEN`, and (with the operator token) its destinations,
//! paired ones included, have approvers and every agent has one; and the
//! data dir doctor looks at is named, with where its value came from.

use super::kit::{closed_port_url, pair_code, say, telegram_section, tg_user};
use plangate_testkit::discord::{DiscordFake, GUILD_ID};
use plangate_testkit::server::{ServerProcess, AGENT_TOKEN, OPERATOR_TOKEN, OTHER_AGENT_TOKEN};
use plangate_testkit::slack::{Scripted as SlackScripted, SlackFake, BOT_USER};
use plangate_testkit::telegram::{FakeTelegram, Scripted, TOKEN};
use serde_json::json;
use std::path::Path;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");

/// `plangate doctor` on `toml`, run in `project` with a home of its own (no
/// Claude Code or Codex settings of the machine's user are read).
async fn doctor_in(project: &Path, toml: &str) -> (i32, String) {
    let file = project.join("plangate.toml");
    std::fs::write(&file, toml).expect("write");
    let out = doctor_cli(project, &["doctor", "--config", file.to_str().expect("utf-8")]).await;
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

pub(super) async fn doctor(toml: &str) -> (i32, String) {
    let dir = tempfile::tempdir().expect("dir");
    doctor_in(dir.path(), toml).await
}

/// The binary with `args` in `project`, whose `home/` is `HOME`,
/// `CLAUDE_CONFIG_DIR` and `CODEX_HOME`.
async fn doctor_cli(project: &Path, args: &[&str]) -> std::process::Output {
    doctor_cli_env(project, args, &[]).await
}

/// [`doctor_cli`] with `env` and nothing else of plangate's environment
/// (no `PLANGATE_*` of the machine: the server, the tokens and the data dir
/// are the test's).
async fn doctor_cli_env(project: &Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let home = project.join("home");
    std::fs::create_dir_all(&home).expect("home");
    let mut command = tokio::process::Command::new(BIN);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("PLANGATE") {
            command.env_remove(key);
        }
    }
    let out = command
        .args(args)
        .current_dir(project)
        .env("HOME", &home)
        .env("CLAUDE_CONFIG_DIR", &home)
        .env("CODEX_HOME", &home)
        .envs(env.iter().copied())
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), out).await.expect("finished").expect("run");
    eprintln!("plangate {args:?}:\n{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    out
}

fn doctor_config(fake: &FakeTelegram, token: &str) -> String {
    format!(
        "[server]\nbind = \"127.0.0.1:8787\"\ndata_dir = \"d\"\n[telegram]\ntoken = \"{token}\"\napi_url = \"{}\"\n\
         [destinations.ops]\nchannel = \"telegram\"\nchat = \"-1001\"\napprovers = [\"telegram:111\", \"telegram:222\"]\n\
         [destinations.gone]\nchannel = \"telegram\"\nchat = \"-1002\"\n\
         [agents.claude]\ntoken = \"claude-5f2c9a7e01b3d4a6\"\ndestinations = [\"ops\", \"gone\"]\n",
        fake.api_url()
    )
}

#[tokio::test]
async fn doctor_checks_token_chats_and_approvers_against_the_platform() {
    let fake = FakeTelegram::start().await;
    let (code, out) = doctor(&doctor_config(&fake, TOKEN)).await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("✓ telegram.token: works"), "{out}");
    assert!(out.contains("✓ destinations.ops.chat: -1001 resolves"), "{out}");
    assert!(out.contains("✓ destinations.ops.approvers[1]: telegram:222 is in the chat"), "{out}");

    // A chat the bot is not in, and an approver who left.
    // (Destinations are checked in name order: `gone`, then `ops`.)
    fake.script("getChat", Scripted::Error { status: 400, description: "Bad Request: chat not found".into() });
    fake.script("getChat", Scripted::Result(serde_json::json!({"id": -1001, "type": "supergroup", "title": "Ops"})));
    fake.script(
        "getChatMember",
        Scripted::Result(serde_json::json!({"status": "member", "user": {"id": 111, "is_bot": false, "first_name": "A"}})),
    );
    fake.script(
        "getChatMember",
        Scripted::Result(serde_json::json!({"status": "left", "user": {"id": 222, "is_bot": false, "first_name": "B"}})),
    );
    let (code, out) = doctor(&doctor_config(&fake, TOKEN)).await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("✗ destinations.ops.approvers[1]: telegram:222 is not in the chat (left); invite them"), "{out}");
    assert!(out.contains("✗ destinations.gone.chat: -1002: Bad Request: chat not found; add the bot"), "{out}");

    // A token that does not work stops there.
    let (code, out) = doctor(&doctor_config(&fake, "999:wrong-token-abcdefghijkl")).await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("✗ telegram.token: Unauthorized; copy the token from @BotFather"), "{out}");
    assert!(!out.contains("wrong-token"), "the token is not printed: {out}");
}

/// A Slack and a Discord destination with one approver each, on the fakes,
/// and `public_url` (when given).
fn three_platforms(telegram: &FakeTelegram, slack: &SlackFake, discord: &DiscordFake, public_url: Option<&str>) -> String {
    let server = match public_url {
        Some(url) => format!("public_url = \"{url}\"\noperator_token = \"doctor-e2e-operator-token-0123456789\"\n"),
        None => String::new(),
    };
    format!(
        "[server]\nbind = \"127.0.0.1:8787\"\ndata_dir = \"d\"\n{server}\
         [telegram]\ntoken = \"{TOKEN}\"\napi_url = \"{}\"\n\
         [slack]\nbot_token = \"xoxb-test\"\napp_token = \"xapp-test\"\napi_url = \"{}\"\n\
         [discord]\nbot_token = \"discord-test-token\"\napplication_id = \"345678901234567890\"\napi_url = \"{}\"\n\
         [destinations.ops]\nchannel = \"telegram\"\nchat = \"-1001\"\napprovers = [\"telegram:111\"]\n\
         [destinations.team]\nchannel = \"slack\"\nchat = \"C0PLANS\"\napprovers = [\"slack:U0ALICE\"]\n\
         [destinations.builders]\nchannel = \"discord\"\nchat = \"123456789012345678\"\napprovers = [\"discord:234567890123456789\"]\n\
         [agents.claude]\ntoken = \"claude-5f2c9a7e01b3d4a6\"\ndestinations = [\"ops\", \"team\", \"builders\"]\n",
        telegram.api_url(),
        slack.api_url(),
        discord.base
    )
}

/// Slack's answer for a channel with the bot and `approver` in it.
fn members_with(approver: &str) -> SlackScripted {
    SlackScripted::ok(json!({"members": [BOT_USER, approver], "response_metadata": {"next_cursor": ""}}))
}

/// Everything configured, everything right: all three platforms, a running
/// plangate behind `public_url`, Claude Code hooks installed for the binary.
#[tokio::test]
async fn doctor_passes_a_working_setup_on_all_three_platforms() {
    let (telegram, slack, discord) = (FakeTelegram::start().await, SlackFake::start().await, DiscordFake::start(345678901234567890).await);
    let mut server = ServerProcess::start(BIN, "").await;
    let project = tempfile::tempdir().expect("project");
    let install = doctor_cli(project.path(), &["hook", "install", "claude", "--scope", "local"]).await;
    assert!(install.status.success());
    slack.script("conversations.members", members_with("U0ALICE"));

    let (code, out) = doctor_in(project.path(), &three_platforms(&telegram, &slack, &discord, Some(&server.base))).await;
    assert_eq!(code, 0, "{out}");
    for line in [
        "✓ telegram.token: works",
        "✓ destinations.ops.approvers[0]: telegram:111 is in the chat",
        "✓ slack.bot_token: works (team T0FAKE, bot @plangate)",
        "✓ destinations.team.chat: C0PLANS is #plans, and the bot is in it and can post (chat:write)",
        "✓ destinations.team.approvers[0]: slack:U0ALICE is in #plans",
        "✓ discord.bot_token: works (bot plangate)",
        "✓ destinations.builders.chat: 123456789012345678 is #plans, and the bot can see it and post cards there",
        "✓ destinations.builders.approvers[0]: discord:234567890123456789 is a member of the server",
        &format!("✓ server.public_url: {}/healthz answers (200 OK, ok)", server.base),
        "✓ claude hooks ",
        "plangate handlers, the gate on every tool, running ",
    ] {
        assert!(out.contains(line), "{line:?} in {out}");
    }
    let members = slack.calls("conversations.members");
    assert_eq!(members.len(), 1);
    assert_eq!(members[0].query("channel"), Some("C0PLANS"));
    let paths: Vec<String> = discord.requests().iter().map(|r| format!("{} {}", r.method, r.path)).collect();
    for path in [
        "GET /api/v10/users/@me".to_string(),
        "GET /api/v10/channels/123456789012345678".into(),
        format!("GET /api/v10/guilds/{GUILD_ID}/roles"),
        format!("GET /api/v10/guilds/{GUILD_ID}/members/234567890123456789"),
    ] {
        assert!(paths.contains(&path), "{path} in {paths:?}");
    }
    server.terminate().await;
}

/// A Slack channel the bot was never invited to, a Slack approver not in
/// it, a Discord channel whose overwrite takes Send Messages away, a Discord
/// approver who is not in the server: each named, with its fix.
#[tokio::test]
async fn doctor_names_a_slack_channel_without_the_bot_and_a_discord_approver_outside_the_server() {
    let (telegram, slack, discord) = (FakeTelegram::start().await, SlackFake::start().await, DiscordFake::start(345678901234567890).await);
    let toml = three_platforms(&telegram, &slack, &discord, None);
    slack.script("conversations.info", SlackScripted::ok(json!({"channel": {"id": "C0PLANS", "name": "plans", "is_member": false}})));
    let member = format!("/api/v10/guilds/{GUILD_ID}/members/234567890123456789");
    discord.script("GET", &member, 404, &[], json!({"message": "Unknown Member", "code": 10007}));
    let (code, out) = doctor(&toml).await;
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(
            "✗ destinations.team.chat: C0PLANS is #plans, but the bot is not in it, so it cannot post there; /invite @plangate in #plans"
        ),
        "{out}"
    );
    assert!(!out.contains("destinations.team.approvers"), "nothing more is checked in a channel the bot is not in: {out}");
    assert!(
        out.contains(
            "✗ destinations.builders.approvers[0]: discord:234567890123456789 is not a member of the server #plans is in \
             (Unknown Member (404, code 10007)); invite them, or fix the id (right-click the user → Copy User ID)"
        ),
        "{out}"
    );
    assert!(out.contains("✓ destinations.builders.chat"), "{out}");

    // The bot in the channel, an approver who is not; a Discord channel
    // where the bot's role may not post; a Slack channel it cannot see.
    slack.script("conversations.members", members_with("U0SOMEONE"));
    let channel = "/api/v10/channels/123456789012345678";
    let overwrites = json!([{"id": GUILD_ID.to_string(), "type": 0, "allow": "0", "deny": "2048"}]);
    discord.script(
        "GET",
        channel,
        200,
        &[],
        json!({"id": "123456789012345678", "guild_id": GUILD_ID.to_string(), "name": "plans", "permission_overwrites": overwrites}),
    );
    let (code, out) = doctor(&toml).await;
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("✗ destinations.team.approvers[0]: slack:U0ALICE is not in #plans, so they never see the card; /invite them there"),
        "{out}"
    );
    assert!(
        out.contains("✗ destinations.builders.chat: 123456789012345678 is #plans, but the bot lacks Send Messages there; grant its role Send Messages in #plans"),
        "{out}"
    );
    slack.script("conversations.info", SlackScripted::error("channel_not_found"));
    discord.script("GET", channel, 403, &[], json!({"message": "Missing Access", "code": 50001}));
    // A token without chat:write: it can look, not post.
    let scopes = vec![("x-oauth-scopes".to_string(), "commands,channels:read".to_string())];
    let body = json!({"ok": true, "team_id": "T0FAKE", "user": "plangate"});
    slack.script("auth.test", SlackScripted { status: 200, headers: scopes, body });
    let (_, out) = doctor(&toml).await;
    assert!(out.contains("✗ destinations.team.chat: C0PLANS: channel_not_found; the bot cannot see it"), "{out}");
    assert!(
        out.contains(
            "✗ slack.bot_token: the token lacks chat:write (it has commands,channels:read), so no card can be posted; \
             add chat:write under OAuth & Permissions → Bot Token Scopes, then reinstall the app"
        ),
        "{out}"
    );
    assert!(out.contains("✗ destinations.builders.chat: 123456789012345678: Missing Access (403, code 50001); the bot cannot see it: give its role View Channel"), "{out}");
}

/// A Claude Code hook whose binary is gone blocks every tool call: named,
/// with the install command that fixes it.
#[tokio::test]
async fn doctor_names_a_hook_binary_that_does_not_exist() {
    let project = tempfile::tempdir().expect("project");
    let settings = project.path().join(".claude").join("settings.local.json");
    std::fs::create_dir_all(settings.parent().expect("dir")).expect("mkdir");
    let gone = project.path().join("moved-away").join("plangate");
    let command = format!("'{}' hook claude || exit 2", gone.display());
    let hooks = json!({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": command, "timeout": 610}]}]}});
    std::fs::write(&settings, hooks.to_string()).expect("write");
    let (code, out) = doctor_in(project.path(), "[server]\nbind = \"127.0.0.1:8787\"\ndata_dir = \"d\"\n").await;
    assert_eq!(code, 1, "{out}");
    let expected = format!(
        "✗ claude hooks {}: runs {}, which does not exist: the gate fails closed, so every tool call is blocked; \
         run `plangate hook install claude --scope local` in {} with the plangate binary you mean to keep",
        settings.display(),
        gone.display(),
        project.path().display()
    );
    assert!(out.contains(&expected), "{expected}\nin {out}");

    // Only the observing handlers: nothing is gated.
    let observe = json!({"hooks": {"SubagentStart": [{"hooks": [{"type": "command", "command": format!("'{BIN}' hook claude")}]}]}});
    std::fs::write(&settings, observe.to_string()).expect("write");
    let (code, out) = doctor_in(project.path(), "[server]\nbind = \"127.0.0.1:8787\"\ndata_dir = \"d\"\n").await;
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(
            "no PreToolUse gate on every tool, so Claude Code's tool calls are not gated; run `plangate hook install claude --scope local`"
        ),
        "{out}"
    );
}

/// `server.public_url` that nothing answers on, and one in plain http on a
/// host other than loopback (refused without a request).
#[tokio::test]
async fn doctor_names_a_public_url_that_does_not_answer() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let server = |url: &str| {
        format!(
            "[server]\nbind = \"127.0.0.1:8787\"\ndata_dir = \"d\"\npublic_url = \"{url}\"\noperator_token = \"doctor-e2e-operator-token-0123456789\"\n"
        )
    };
    let (code, out) = doctor(&server(&format!("http://127.0.0.1:{free}"))).await;
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!(
            "✗ server.public_url: http://127.0.0.1:{free}/healthz does not answer (error sending request); start plangate (`plangate serve`), \
             and check that this name resolves here and that the proxy forwards to server.bind (127.0.0.1:8787)"
        )),
        "{out}"
    );
    let (code, out) = doctor(&server("http://plans.example.com")).await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("✗ server.public_url: http://plans.example.com is plain http on a host other than loopback"), "{out}");
    assert!(out.contains("set server.public_url = \"https://…\""), "{out}");
}

/// `plangate doctor ARGS` in `project` with `env`: exit code and stdout.
async fn doctor_env(project: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let out = doctor_cli_env(project, args, env).await;
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A `PLANGATE_TOKEN` the running server does not know fails, naming the
/// variable to copy; the right one, exported as the server's own variable
/// alone, passes and says whose it is.
#[tokio::test]
async fn doctor_checks_that_the_running_server_accepts_the_agent_token() {
    let mut s = ServerProcess::start(BIN, "").await;
    let project = tempfile::tempdir().expect("project");
    let wrong = [("PLANGATE_URL", s.base.as_str()), ("PLANGATE_TOKEN", "not-the-token-of-any-agent-7f3a9c")];
    let (code, out) = doctor_env(project.path(), &["doctor"], &wrong).await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains(&format!("✓ server: {} (PLANGATE_URL) answers and is ready", s.base)), "{out}");
    let expected = format!(
        "✗ agent token: PLANGATE_TOKEN is not accepted by the server at {}: it is not the token of any agent in its config; \
         use the value of PLANGATE__AGENTS__<ID>__TOKEN the server runs with",
        s.base
    );
    assert!(out.contains(&expected), "{expected}\nin {out}");
    assert!(!out.contains("not-the-token"), "the token is not printed: {out}");

    let right = [("PLANGATE_URL", s.base.as_str()), ("PLANGATE__AGENTS__DEMO__TOKEN", AGENT_TOKEN)];
    let (_, out) = doctor_env(project.path(), &["doctor"], &right).await;
    assert!(out.contains(&format!("✓ agent token: PLANGATE_TOKEN is accepted by the server at {}: it is agent demo's", s.base)), "{out}");
    assert!(!out.contains(AGENT_TOKEN), "the token is not printed: {out}");

    // Without one: said, with the variable to set, and not a failure.
    let (_, out) = doctor_env(project.path(), &["doctor"], &[("PLANGATE_URL", s.base.as_str())]).await;
    assert!(out.contains("⚠ agent token: not checked: PLANGATE_TOKEN is not set"), "{out}");
    s.terminate().await;
}

/// Nothing answers where the server should be: a failure with what to do,
/// naming where the address came from. With `--config` and no address
/// given, the file's `server.bind` is asked, and a server not started yet
/// is a warning (doctor checks a file before its first start too).
#[tokio::test]
async fn doctor_says_what_to_do_when_no_server_answers() {
    let project = tempfile::tempdir().expect("project");
    let url = closed_port_url();
    let (code, out) = doctor_env(project.path(), &["doctor"], &[("PLANGATE_URL", url.as_str())]).await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains(&format!("✗ server: nothing answers at {url} (PLANGATE_URL): ")), "{out}");
    assert!(out.contains("start it with `plangate serve`"), "{out}");
    assert!(out.contains("or point doctor at it with --url or PLANGATE_URL"), "{out}");
    assert!(!out.contains("agent token"), "nothing more is asked of a server that does not answer: {out}");

    let (code, out) = doctor_env(project.path(), &["doctor", "--url", &url], &[]).await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains(&format!("✗ server: nothing answers at {url} (--url): ")), "{out}");

    let bind = url.trim_start_matches("http://");
    let file = project.path().join("plangate.toml");
    std::fs::write(&file, format!("[server]\nbind = \"{bind}\"\ndata_dir = \"d\"\n")).expect("write");
    let (code, out) = doctor_env(project.path(), &["doctor", "--config", file.to_str().expect("utf-8")], &[]).await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(&format!("⚠ server: nothing answers at {url} (server.bind in {}): ", file.display())), "{out}");
}

const CHAT: i64 = -1007770001;
const ALICE: i64 = 111;

/// A chat paired with the running server: doctor lists it with its
/// approver, finds the agent's destination, and checks the paired chat and
/// its approver against Telegram like a configured one. Every token comes
/// from the server's own variables, as in the README's setup.
#[tokio::test]
async fn doctor_lists_the_paired_destinations_and_their_approvers() {
    let fake = FakeTelegram::start().await;
    let mut s = ServerProcess::start(BIN, &telegram_section(&fake)).await;
    let code = pair_code(&s, "telegram", &[]).await;
    say(&fake, CHAT, tg_user(ALICE, "alice"), &format!("/plan pair {code}"), "Paired").await;

    let project = tempfile::tempdir().expect("project");
    let api_url = fake.api_url();
    let env = [
        ("PLANGATE_URL", s.base.as_str()),
        ("PLANGATE__SERVER__OPERATOR_TOKEN", OPERATOR_TOKEN),
        ("PLANGATE__AGENTS__DEMO__TOKEN", AGENT_TOKEN),
        ("PLANGATE__TELEGRAM__TOKEN", TOKEN),
        ("PLANGATE__TELEGRAM__API_URL", api_url.as_str()),
    ];
    let (code, out) = doctor_env(project.path(), &["doctor"], &env).await;
    assert_eq!(code, 0, "{out}");
    for line in [
        format!("✓ destinations.demo-telegram: paired telegram chat {CHAT} of agent demo; approvers telegram:{ALICE} (paired by "),
        format!("✓ agents.demo: its plans go to demo-telegram (the server at {})", s.base),
        "✓ telegram.token: works".to_string(),
        format!("✓ destinations.demo-telegram.chat: {CHAT} resolves"),
        format!("✓ destinations.demo-telegram.approvers[0]: telegram:{ALICE} is in the chat"),
    ] {
        assert!(out.contains(&line), "{line:?} in {out}");
    }
    s.terminate().await;
}

/// An agent the server sends no plan anywhere for fails; a destination
/// nobody may decide in is a warning; without the operator token doctor
/// says what it could not check and which variable to set.
#[tokio::test]
async fn doctor_names_an_agent_without_a_destination_and_a_destination_without_an_approver() {
    let fake = FakeTelegram::start().await;
    let extra = format!("{}\n[destinations.quiet]\nchannel = \"telegram\"\nchat = \"-1009\"\n", telegram_section(&fake));
    let mut s = ServerProcess::start_with(BIN, &["quiet"], &extra).await;
    let project = tempfile::tempdir().expect("project");
    let env = [("PLANGATE_URL", s.base.as_str()), ("PLANGATE_OPERATOR_TOKEN", OPERATOR_TOKEN), ("PLANGATE_TOKEN", OTHER_AGENT_TOKEN)];
    let (code, out) = doctor_env(project.path(), &["doctor"], &env).await;
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!(
            "✗ agents.other: no destination on the server at {}, so its plans reach no chat (only `plangate decide` decides them); \
             pair one: `plangate pair telegram --agent other`",
            s.base
        )),
        "{out}"
    );
    assert!(
        out.contains("⚠ destinations.quiet: config telegram chat -1009 of agent demo has no approver: only the operator decides its plans"),
        "{out}"
    );
    assert!(out.contains("✓ agents.demo: its plans go to quiet"), "{out}");

    let (code, out) = doctor_env(project.path(), &["doctor"], &[("PLANGATE_URL", s.base.as_str())]).await;
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(
            "⚠ destinations: not checked: listing the server's destinations and their approvers takes the operator token; \
             set PLANGATE_OPERATOR_TOKEN (or export PLANGATE__SERVER__OPERATOR_TOKEN, as for `plangate serve`)"
        ),
        "{out}"
    );
    let wrong = [("PLANGATE_URL", s.base.as_str()), ("PLANGATE_OPERATOR_TOKEN", "not-the-operator-token-5d1e0b")];
    let (code, out) = doctor_env(project.path(), &["doctor"], &wrong).await;
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!(
            "✗ operator token: PLANGATE_OPERATOR_TOKEN is not accepted by the server at {}: it is not its operator token; \
             use the value of PLANGATE__SERVER__OPERATOR_TOKEN the server runs with",
            s.base
        )),
        "{out}"
    );
    s.terminate().await;
}

/// The data dir doctor looks at is an absolute path with where its value
/// came from; one that does not exist is said plainly (a warning), with
/// where to run doctor instead.
#[tokio::test]
async fn doctor_names_the_data_dir_it_checks_and_where_that_came_from() {
    let project = tempfile::tempdir().expect("project");
    let dir = project.path();
    let url = closed_port_url();
    let (_, out) = doctor_env(dir, &["doctor"], &[("PLANGATE_URL", url.as_str())]).await;
    let expected = format!(
        "⚠ server.data_dir: {} (server.data_dir = \"./data\" of the embedded defaults, relative to the working directory {}) does not exist",
        dir.join("data").display(),
        dir.display()
    );
    assert!(out.contains(&expected), "{expected}\nin {out}");
    assert!(out.contains("run doctor where `plangate serve` runs"), "{out}");
    assert!(out.contains("or pass --config"), "{out}");
    assert!(!out.contains("✓ server.data_dir"), "{out}");

    std::fs::create_dir(dir.join("data")).expect("mkdir");
    let (_, out) = doctor_env(dir, &["doctor"], &[("PLANGATE_URL", url.as_str())]).await;
    assert!(
        out.contains(&format!("✓ server.data_dir: {} (server.data_dir = \"./data\" of the embedded defaults", dir.join("data").display())),
        "{out}"
    );

    let elsewhere = tempfile::tempdir().expect("data");
    let (_, out) = doctor_env(
        dir,
        &["doctor"],
        &[("PLANGATE_URL", url.as_str()), ("PLANGATE__SERVER__DATA_DIR", elsewhere.path().to_str().expect("utf-8"))],
    )
    .await;
    assert!(
        out.contains(&format!("✓ server.data_dir: {0} (PLANGATE__SERVER__DATA_DIR = \"{0}\") exists", elsewhere.path().display())),
        "{out}"
    );
}
