//! Inbound over signed HTTP requests.

use super::*;

#[tokio::test]
async fn approve_round_trip_over_signed_http() {
    let h = harness(Transport::Http, |e| match e.action {
        Action::Button(Button::Approve(_)) => Reply::Notice("Approved v1 ✅".into()),
        _ => Reply::None,
    })
    .await;
    assert!(h.adapter.task.is_none());
    let id = aid(13);
    let card = open_card(id, &["one"]);
    let delivery = h.channel().post_card(&destination(Style::Buttons), &card, &document()).await.unwrap();
    let payload = block_actions(
        "U1",
        "alice",
        "C1",
        &delivery.message_id,
        &encode(Button::Approve(id)),
        "1700000400.000001",
        &h.fake.response_url("r1"),
    );
    let response = h.post_interaction(&payload).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.unwrap(), "", "acked at once with an empty body");
    let events = h.handler.wait_events(1).await;
    assert_eq!(
        events[0],
        Inbound {
            channel: "slack",
            chat: "C1".into(),
            user: user(TEAM),
            action: Action::Button(Button::Approve(id)),
            idempotency_key: Some("slack:action:1700000400.000001".into()),
            thread: None,
        }
    );
    let notice = h.fake.wait_calls("response_url", 1, T).await;
    assert_eq!(
        notice[0].json(),
        &json!({"response_type": "ephemeral", "replace_original": false, "text": "Approved v1 ✅", "blocks": [plain("Approved v1 ✅")]})
    );
    h.channel()
        .update_card(&delivery, &decided(&card, DecisionStatus::Approved, "✅ Approved v1 by slack:@alice · 14:02 UTC"))
        .await
        .unwrap();
    let seq = h.fake.sequence();
    dump("approve round trip (HTTP)", &h);
    assert_eq!(
        seq,
        ["chat.postMessage", "files.getUploadURLExternal", "upload", "files.completeUploadExternal", "response_url", "chat.update"]
    );
}

#[tokio::test]
async fn revise_modal_over_signed_http_answers_validation_errors_in_the_response() {
    let h = harness(Transport::Http, |_| Reply::None).await;
    let meta = format!("{}|C1|1700000000.000001", aid(14));
    let empty = view_submission("U1", "alice", "V1", "h1", "plangate_feedback", &meta, input(""));
    let response = h.post_interaction(&empty).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        json!({"response_action": "errors", "errors": {"plangate_input": "Say what should change."}})
    );
    let ok = view_submission("U1", "alice", "V1", "h2", "plangate_feedback", &meta, input("smaller steps"));
    let response = h.post_interaction(&ok).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.unwrap(), "");
    let events = h.handler.wait_events(1).await;
    assert_eq!(events[0].action, Action::Feedback { approval_id: aid(14), text: "smaller steps".into() });
    assert_eq!(events[0].idempotency_key.as_deref(), Some("slack:view:V1:h2"));
}

#[tokio::test]
async fn every_plan_form_as_a_signed_slash_command_reaches_the_handler() {
    let h = harness(Transport::Http, |e| match &e.action {
        Action::BadCommand(t) => Reply::Text(format!("Unknown: {t}")),
        _ => Reply::Text("ok".into()),
    })
    .await;
    let forms = [
        "",
        "help",
        "status",
        "status demo/s1",
        "list",
        "view",
        "view #a1b2c3",
        "accept",
        "approve #a1b2",
        "edit #a1b2 Read the client; Add backoff",
        "revise make step 2 smaller",
        "reject #a1b2 not now",
        "cancel #a1b2",
        "answer demo/s1 use sled",
        "on demo/s1",
        "off",
        "auto on",
        "auto off demo/s1",
        "restate",
        "frobnicate",
        "revise",
        "on #a1b2",
    ];
    for (i, text) in forms.iter().enumerate() {
        let body = serde_urlencoded::to_string([
            ("token", "unused"),
            ("team_id", TEAM),
            ("team_domain", "fake"),
            ("channel_id", "C1"),
            ("channel_name", "ops"),
            ("user_id", "U1"),
            ("user_name", "alice"),
            ("command", "/plan"),
            ("text", text),
            ("api_app_id", "A0FAKE"),
            ("response_url", &h.fake.response_url(&format!("cmd{i}"))),
            ("trigger_id", &format!("trig-{i}")),
        ])
        .unwrap();
        let response = h.post_signed("/slack/commands", &body, now(), &[]).await;
        assert_eq!(response.status(), 200, "{text}");
        assert_eq!(response.text().await.unwrap(), "");
    }
    let events = h.handler.wait_events(forms.len()).await;
    for (i, text) in forms.iter().enumerate() {
        let event = events
            .iter()
            .find(|e| e.idempotency_key.as_deref() == Some(&format!("slack:command:trig-{i}")))
            .expect("every form reaches the handler");
        let expected = match parse_args(text) {
            Ok(parsed) => Action::Command(parsed),
            Err(_) => Action::BadCommand(text.to_string()),
        };
        assert_eq!(event.action, expected, "{text:?}");
        assert_eq!(event.user, user(TEAM));
        assert_eq!(event.chat, "C1");
    }
    assert!(matches!(
        events.iter().find(|e| e.idempotency_key.as_deref() == Some("slack:command:trig-19")).unwrap().action,
        Action::BadCommand(_)
    ));
    let replies = h.fake.wait_calls("response_url", forms.len(), T).await;
    assert!(replies.iter().any(|r| r.path == "/response/cmd19" && r.json()["text"] == "Unknown: frobnicate"));
}

#[tokio::test]
async fn bad_signatures_stale_timestamps_and_replays_are_refused_before_parsing() {
    let h = harness(Transport::Http, |_| Reply::None).await;
    let id = aid(15);
    let payload = block_actions(
        "U1",
        "alice",
        "C1",
        "1700000000.000001",
        &encode(Button::Approve(id)),
        "1700000500.000001",
        &h.fake.response_url("r"),
    );
    let body = serde_urlencoded::to_string([("payload", payload.to_string())]).unwrap();
    let url = format!("{}/slack/interactivity", h.base);
    let ts = now().to_string();

    // Signed with another secret.
    let forged = plangate_slack::verify::sign(b"not-the-secret", &ts, body.as_bytes());
    let r = h
        .http
        .post(&url)
        .header("x-slack-request-timestamp", &ts)
        .header("x-slack-signature", &forged)
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(r.text().await.unwrap(), "", "nothing about the MAC is returned");
    // Garbage with a bad signature is 401, not 400: the body is never parsed.
    let r = h
        .http
        .post(&url)
        .header("x-slack-request-timestamp", &ts)
        .header("x-slack-signature", format!("v0={}", "0".repeat(64)))
        .body("%%%{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    // A good signature over another body.
    let good = plangate_slack::verify::sign(SECRET.as_bytes(), &ts, body.as_bytes());
    let r = h
        .http
        .post(&url)
        .header("x-slack-request-timestamp", &ts)
        .header("x-slack-signature", &good)
        .body(body.replace("Approve", "Approvf"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    // Missing headers.
    let r = h.http.post(&url).body(body.clone()).send().await.unwrap();
    assert_eq!(r.status(), 400);
    let r = h.http.post(&url).header("x-slack-request-timestamp", &ts).body(body.clone()).send().await.unwrap();
    assert_eq!(r.status(), 400);

    // Stale and future timestamps, correctly signed: the verifier's clock moves.
    let signed_at = h.clock.unix_secs();
    h.clock.set(Timestamp((signed_at + 301) * 1000));
    assert_eq!(h.post_signed("/slack/interactivity", &body, signed_at, &[]).await.status(), 401);
    h.clock.set(Timestamp((signed_at - 301) * 1000));
    assert_eq!(h.post_signed("/slack/interactivity", &body, signed_at, &[]).await.status(), 401);
    h.clock.set(Timestamp((signed_at + 300) * 1000));
    assert_eq!(h.post_signed("/slack/interactivity", &body, signed_at, &[]).await.status(), 200, "the edge of the window is accepted");
    h.handler.wait_events(1).await;

    // Replays within the window (and Slack's own retries) are acked but handled once.
    assert_eq!(h.post_signed("/slack/interactivity", &body, signed_at, &[]).await.status(), 200);
    assert_eq!(
        h.post_signed("/slack/interactivity", &body, signed_at, &[("x-slack-retry-num", "1"), ("x-slack-retry-reason", "http_timeout")])
            .await
            .status(),
        200
    );
    // A correctly signed body that is not a payload is a 400.
    assert_eq!(h.post_signed("/slack/interactivity", "payload=%7Bnot-json", signed_at, &[]).await.status(), 400);
    assert_eq!(h.post_signed("/slack/commands", "text=no+user", signed_at, &[]).await.status(), 400);
    // Nothing after the first accepted request reached the handler: a fresh
    // click is the second event, and no replay got in before or after it.
    let fresh =
        block_actions("U1", "alice", "C1", "1700000000.000001", &encode(Button::View(id)), "1700000500.000002", &h.fake.response_url("r"));
    assert_eq!(h.post_interaction(&fresh).await.status(), 200);
    let events = h.handler.wait_events(2).await;
    assert_eq!(
        events.iter().map(|e| e.idempotency_key.clone().unwrap()).collect::<Vec<_>>(),
        ["slack:action:1700000500.000001", "slack:action:1700000500.000002"]
    );
    assert_eq!(h.handler.events().len(), 2);
}

#[tokio::test]
async fn forged_callback_data_and_foreign_teams_reach_the_server_marked() {
    let h = harness(Transport::Http, |_| Reply::Notice("Unknown button".into())).await;
    let long = format!("pg1:a:{}", "f".repeat(500));
    for (i, data) in ["pg1:a:zz", "pg2:a:00000000000000000000000000000000", long.as_str()].iter().enumerate() {
        let p = block_actions("U1", "alice", "C1", "1700000000.000001", data, &format!("1700000600.00000{i}"), &h.fake.response_url("r"));
        assert_eq!(h.post_interaction(&p).await.status(), 200);
    }
    let events = h.handler.wait_events(3).await;
    let mut unknown: Vec<String> = events
        .iter()
        .map(|e| match &e.action {
            Action::UnknownButton(d) => d.clone(),
            other => panic!("forged data decoded as {other:?}"),
        })
        .collect();
    unknown.sort_by_key(|d| d.len());
    assert_eq!(unknown[0], "pg1:a:zz");
    assert_eq!(unknown[1], "pg2:a:00000000000000000000000000000000");
    assert_eq!(unknown[2], format!("pg1:a:{}…", "f".repeat(93)), "oversized data is cut for the audit");

    // A click from another workspace carries its team; the server refuses it
    // against Adapter::expected_team.
    let mut foreign = block_actions(
        "UEVIL",
        "mallory",
        "C1",
        "1700000000.000001",
        &encode(Button::Approve(aid(16))),
        "1700000600.000009",
        &h.fake.response_url("r"),
    );
    foreign["team"]["id"] = json!("TEVIL");
    foreign["user"]["team_id"] = json!("TEVIL");
    h.post_interaction(&foreign).await;
    let events = h.handler.wait_events(4).await;
    let e = events.iter().find(|e| e.user.id == "UEVIL").unwrap();
    assert_eq!(e.user.team.as_deref(), Some("TEVIL"));
    assert_eq!(h.adapter.expected_team.as_deref(), Some(TEAM));
}

#[tokio::test]
async fn replies_are_rendered_the_slack_way() {
    let id = aid(17);
    let h = harness(Transport::Http, move |e| match &e.action {
        Action::Button(Button::Cancel(id)) => {
            Reply::ConfirmCancel { approval_id: *id, version: 1, prompt: "Cancel 'Add retries' v1? Plan mode goes off.".into() }
        }
        Action::Button(Button::View(_)) => Reply::Document { document: document(), caption: "Plan v1 <!here>".into() },
        Action::Button(Button::Approve(_)) => Reply::Text("status: <@U2> & co".into()),
        Action::Button(Button::ConfirmCancel(_)) => Reply::Notice("Cancelled v1".into()),
        _ => Reply::None,
    })
    .await;
    let cancel = block_actions(
        "U1",
        "alice",
        "C1",
        "1700000000.000001",
        &encode(Button::Cancel(id)),
        "1700000700.000001",
        &h.fake.response_url("cancel"),
    );
    h.post_interaction(&cancel).await;
    let r = h.fake.wait_calls("response_url", 1, T).await;
    let mut confirm = button_json("Yes, cancel the plan", Button::ConfirmCancel(id));
    confirm["style"] = json!("danger");
    assert_eq!(
        r[0].json(),
        &json!({
            "response_type": "ephemeral",
            "replace_original": false,
            "text": "Cancel 'Add retries' v1? Plan mode goes off.",
            "blocks": [plain("Cancel 'Add retries' v1? Plan mode goes off."), {"type": "actions", "block_id": "plangate_actions", "elements": [confirm]}],
        })
    );

    // The click on that ephemeral button replaces it with the outcome.
    let mut yes = block_actions(
        "U1",
        "alice",
        "C1",
        "1700000000.000077",
        &encode(Button::ConfirmCancel(id)),
        "1700000700.000009",
        &h.fake.response_url("yes"),
    );
    yes["container"]["is_ephemeral"] = json!(true);
    h.post_interaction(&yes).await;
    let r = h.fake.wait_calls("response_url", 2, T).await;
    assert_eq!(r[1].path, "/response/yes");
    assert_eq!(
        r[1].json(),
        &json!({"response_type": "ephemeral", "replace_original": true, "text": "Cancelled v1", "blocks": [plain("Cancelled v1")]})
    );
    assert_eq!(h.handler.events()[1].action, Action::Button(Button::ConfirmCancel(id)));

    // View plan: the document goes into the card's thread with the caption.
    let view = block_actions(
        "U1",
        "alice",
        "C1",
        "1700000000.000042",
        &encode(Button::View(id)),
        "1700000700.000002",
        &h.fake.response_url("view"),
    );
    h.post_interaction(&view).await;
    let complete = h.fake.wait_calls("files.completeUploadExternal", 1, T).await;
    assert_eq!(complete[0].json()["channel_id"], "C1");
    assert_eq!(complete[0].json()["thread_ts"], "1700000000.000042");
    assert_eq!(complete[0].json()["initial_comment"], "Plan v1 &lt;!here&gt;");

    // A response_url that is not Slack's (nor the configured API's) is never called.
    let evil = block_actions(
        "U1",
        "alice",
        "C1",
        "1700000000.000001",
        &encode(Button::Approve(id)),
        "1700000700.000003",
        "http://127.0.0.2:9/steal",
    );
    h.post_interaction(&evil).await;
    let eph = h.fake.wait_calls("chat.postEphemeral", 1, T).await;
    assert_eq!(
        eph[0].json(),
        &json!({
            "channel": "C1",
            "user": "U1",
            "text": "status: &lt;@U2&gt; &amp; co",
            "blocks": [plain("status: <@U2> & co")],
            "thread_ts": "1700000000.000001"
        })
    );
    assert_eq!(h.fake.calls("response_url").len(), 2);
    // The mention only ever reached Slack inert: escaped, or in plain_text.
    for r in h.fake.requests() {
        let mut texts = Vec::new();
        mrkdwn_texts(r.json(), &mut texts);
        texts.extend(r.json()["text"].as_str().map(str::to_string));
        assert!(texts.iter().all(|t| !t.contains("<@U2>")), "{texts:?}");
    }
}
