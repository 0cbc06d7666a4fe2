//! Workspaces: the home team, learned from auth.test when not configured.

use super::*;

#[tokio::test]
async fn without_team_id_the_home_workspace_is_learned_from_auth_test() {
    for transport in [Transport::Socket, Transport::Http] {
        let h = harness_with(
            transport,
            |c| {
                c.team_id = None;
                c.allow_other_teams = vec![OTHER_TEAM.into()];
            },
            |_| Reply::None,
        )
        .await;
        let auth = h.fake.calls("auth.test");
        assert_eq!(auth.len(), 1, "{transport:?}");
        assert_eq!(auth[0].header("authorization"), Some("Bearer xoxb-test-bot"), "auth.test asks with the bot token");
        assert_eq!(h.adapter.expected_team.as_deref(), Some(TEAM), "{transport:?}");
    }
    // A configured team is trusted as it is: no call at start.
    let h = harness(Transport::Http, |_| Reply::None).await;
    assert!(h.fake.calls("auth.test").is_empty());
    assert_eq!(h.adapter.expected_team.as_deref(), Some(TEAM));
}

#[tokio::test]
async fn without_team_id_a_failed_auth_test_stops_the_start() {
    for (transport, failure) in [
        (Transport::Http, Scripted::error("invalid_auth")),
        (Transport::Socket, Scripted::error("account_inactive")),
        (Transport::Http, Scripted::ok(json!({"team_id": ""}))),
    ] {
        let fake = SlackFake::start().await;
        fake.script("auth.test", failure.clone());
        let mut cfg = config(&fake, transport);
        cfg.team_id = Some(" ".into());
        let (_tx, rx) = watch::channel(false);
        let handler = Recorder::new(|_| Reply::None);
        let error = match start(cfg, handler, rx, always_leader()).await {
            Err(e) => e,
            Ok(_) => panic!("started without knowing its workspace ({failure:?})"),
        };
        assert!(matches!(error, plangate_slack::SlackError::Workspace(_)), "{error}");
        let message = error.to_string();
        assert!(message.contains("auth.test failed") && message.contains("slack.team_id"), "{message}");
        // Nothing else was tried: no Socket Mode connection, no message.
        assert_eq!(fake.sequence(), ["auth.test"], "{failure:?}");
    }
}

#[tokio::test]
async fn every_inbound_path_reports_the_workspace_it_came_from() {
    let h = harness(Transport::Socket, |_| Reply::None).await;
    h.fake.wait_connected(T).await;
    let id = aid(0x21);
    let meta = format!("{id}|C1|");
    let click = block_actions("UX", "x", "C1", "1.0", &encode(Button::Approve(id)), "1700000900.000001", &h.fake.response_url("a"));
    let modal = view_submission("UX", "x", "V9", "h9", "plangate_feedback", &meta, input("no"));
    let command = slash_command("UX", "x", "C1", "accept", "trig-x", &h.fake.response_url("c"));
    for (kind, payload) in [("interactive", click.clone()), ("interactive", modal.clone()), ("slash_commands", command.clone())] {
        let env = h.fake.send_envelope(kind, from_team(payload, OTHER_TEAM));
        h.fake.wait_for_ack(&env, T).await;
    }
    // Slack Connect: the host's team in `team`, the clicker's own in `user.team_id`.
    let mut connect = click.clone();
    connect["user"]["team_id"] = json!(OTHER_TEAM);
    connect["actions"][0]["action_ts"] = json!("1700000900.000002");
    h.fake.wait_for_ack(&h.fake.send_envelope("interactive", connect), T).await;
    let events = h.handler.wait_events(4).await;
    assert!(events.iter().all(|e| e.user.team.as_deref() == Some(OTHER_TEAM)), "{events:#?}");

    // The same over signed HTTP.
    let h = harness(Transport::Http, |_| Reply::None).await;
    h.post_interaction(&from_team(click, OTHER_TEAM)).await;
    h.post_interaction(&from_team(modal, OTHER_TEAM)).await;
    let form = format!(
        "team_id={OTHER_TEAM}&channel_id=C1&user_id=UX&user_name=x&command=%2Fplan&text=accept&trigger_id=trig-h&response_url={}",
        h.fake.response_url("h")
    );
    assert_eq!(h.post_signed("/slack/commands", &form, h.clock.unix_secs(), &[]).await.status(), 200);
    let events = h.handler.wait_events(3).await;
    assert!(events.iter().all(|e| e.user.team.as_deref() == Some(OTHER_TEAM)), "{events:#?}");
}
