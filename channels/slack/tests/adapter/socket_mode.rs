//! Inbound over Socket Mode, and only while leading.

use super::*;

#[tokio::test]
async fn approve_round_trip_over_socket_mode() {
    let h = harness(Transport::Socket, |e| match e.action {
        Action::Button(Button::Approve(_)) => Reply::Notice("Approved v1 ✅".into()),
        _ => Reply::None,
    })
    .await;
    assert_eq!(h.adapter.expected_team.as_deref(), Some(TEAM));
    assert!(h.adapter.routes.is_none());
    h.fake.wait_connected(T).await;
    let open = &h.fake.calls("apps.connections.open")[0];
    assert_eq!(open.header("authorization"), Some("Bearer xapp-test-app"), "Socket Mode uses the app-level token");

    let id = aid(9);
    let card = open_card(id, &["Read the client", "Add backoff"]);
    let delivery = h.channel().post_card(&destination(Style::Buttons), &card, &document()).await.unwrap();
    let payload = block_actions(
        "U1",
        "alice",
        "C1",
        &delivery.message_id,
        &encode(Button::Approve(id)),
        "1700000100.000001",
        &h.fake.response_url("r1"),
    );
    let envelope = h.fake.send_envelope("interactive", payload.clone());
    assert_eq!(h.fake.wait_for_ack(&envelope, T).await, json!({"envelope_id": envelope}));

    let events = h.handler.wait_events(1).await;
    assert_eq!(
        events[0],
        Inbound {
            channel: "slack",
            chat: "C1".into(),
            user: user(TEAM),
            action: Action::Button(Button::Approve(id)),
            idempotency_key: Some("slack:action:1700000100.000001".into()),
            thread: None,
        }
    );
    let notice = h.fake.wait_calls("response_url", 1, T).await;
    assert_eq!(
        notice[0].json(),
        &json!({"response_type": "ephemeral", "replace_original": false, "text": "Approved v1 ✅", "blocks": [plain("Approved v1 ✅")]})
    );

    // The server edits the card into its receipt.
    h.channel()
        .update_card(&delivery, &decided(&card, DecisionStatus::Approved, "✅ Approved v1 by slack:@alice · 14:02 UTC"))
        .await
        .unwrap();

    // Slack redelivers the same click (no ack seen): acked, not handled twice.
    let again = h.fake.send_envelope("interactive", payload);
    h.fake.wait_for_ack(&again, T).await;
    assert_eq!(h.handler.events().len(), 1);

    let seq = h.fake.sequence();
    dump("approve round trip (Socket Mode)", &h);
    assert_eq!(
        seq,
        [
            "apps.connections.open",
            "chat.postMessage",
            "files.getUploadURLExternal",
            "upload",
            "files.completeUploadExternal",
            "response_url",
            "chat.update"
        ]
    );
}

#[tokio::test]
async fn revise_round_trip_over_socket_mode_with_the_feedback_modal() {
    let h = harness(Transport::Socket, |e| match &e.action {
        Action::Button(Button::RequestChanges(id)) => {
            Reply::AskFeedback { approval_id: *id, version: 1, prompt: "What should change in 'Add retries' v1?".into() }
        }
        Action::Feedback { .. } => Reply::Notice("Changes requested on v1".into()),
        _ => Reply::None,
    })
    .await;
    h.fake.wait_connected(T).await;
    let id = aid(10);
    let card = open_card(id, &["Read the client", "Add backoff"]);
    let delivery = h.channel().post_card(&destination(Style::Buttons), &card, &document()).await.unwrap();
    let ts = delivery.message_id.clone();

    let click =
        block_actions("U1", "alice", "C1", &ts, &encode(Button::RequestChanges(id)), "1700000200.000001", &h.fake.response_url("r2"));
    let env = h.fake.send_envelope("interactive", click);
    h.fake.wait_for_ack(&env, T).await;
    let open = h.fake.wait_calls("views.open", 1, T).await;
    let meta = format!("{id}|C1|{ts}");
    assert_eq!(
        open[0].json(),
        &json!({
            "trigger_id": "trigger-1700000200.000001",
            "view": {
                "type": "modal",
                "title": {"type": "plain_text", "text": "Request changes"},
                "submit": {"type": "plain_text", "text": "Send"},
                "close": {"type": "plain_text", "text": "Cancel"},
                "callback_id": "plangate_feedback",
                "private_metadata": meta,
                "blocks": [
                    plain("What should change in 'Add retries' v1?"),
                    {"type": "input", "block_id": "plangate_input", "label": {"type": "plain_text", "text": "What should change?"},
                     "element": {"type": "plain_text_input", "action_id": "plangate_text", "multiline": true, "max_length": 3000}},
                ],
            },
        })
    );

    // Empty feedback: the modal stays open with the error; nothing reaches the server.
    let empty = view_submission("U1", "alice", "V1", "h1", "plangate_feedback", &meta, input("   "));
    let env = h.fake.send_envelope("interactive", empty);
    let ack = h.fake.wait_for_ack(&env, T).await;
    assert_eq!(
        ack,
        json!({"envelope_id": env, "payload": {"response_action": "errors", "errors": {"plangate_input": "Say what should change."}}})
    );
    assert_eq!(h.handler.events().len(), 1);

    let submit = view_submission("U1", "alice", "V1", "h2", "plangate_feedback", &meta, input("Split step 2 <!channel>"));
    let env = h.fake.send_envelope("interactive", submit);
    assert_eq!(h.fake.wait_for_ack(&env, T).await, json!({"envelope_id": env}));
    let events = h.handler.wait_events(2).await;
    assert_eq!(events[0].action, Action::Button(Button::RequestChanges(id)));
    assert_eq!(
        events[1],
        Inbound {
            channel: "slack",
            chat: "C1".into(),
            user: user(TEAM),
            action: Action::Feedback { approval_id: id, text: "Split step 2 <!channel>".into() },
            idempotency_key: Some("slack:view:V1:h2".into()),
            thread: None,
        }
    );
    // No response_url on a view submission: the notice is a chat.postEphemeral in the thread.
    let eph = h.fake.wait_calls("chat.postEphemeral", 1, T).await;
    assert_eq!(
        eph[0].json(),
        &json!({"channel": "C1", "user": "U1", "text": "Changes requested on v1", "blocks": [plain("Changes requested on v1")], "thread_ts": ts})
    );

    h.channel()
        .update_card(
            &delivery,
            &decided(&card, DecisionStatus::Rejected, "✏️ Changes requested on v1 by slack:@alice · 14:05 UTC: Split step 2 <!channel>"),
        )
        .await
        .unwrap();
    let update = &h.fake.calls("chat.update")[0];
    assert_eq!(
        update.json()["blocks"].as_array().unwrap().last().unwrap(),
        &plain("✏️ Changes requested on v1 by slack:@alice · 14:05 UTC: Split step 2 <!channel>")
    );

    let seq = h.fake.sequence();
    dump("revise round trip (Socket Mode)", &h);
    assert_eq!(
        seq,
        [
            "apps.connections.open",
            "chat.postMessage",
            "files.getUploadURLExternal",
            "upload",
            "files.completeUploadExternal",
            "views.open",
            "chat.postEphemeral",
            "chat.update"
        ]
    );
}

#[tokio::test]
async fn edit_and_other_answer_modals_become_edit_and_answer_text() {
    let h = harness(Transport::Socket, |e| match &e.action {
        Action::Button(Button::Edit(id)) => {
            Reply::AskEdit { approval_id: *id, version: 1, steps: vec!["Read the client".into(), "Add backoff".into()] }
        }
        Action::Button(Button::AnswerOther(q)) => Reply::AskAnswer { question_id: *q, prompt: "Which DB?".into() },
        _ => Reply::None,
    })
    .await;
    h.fake.wait_connected(T).await;
    let id = aid(11);
    let env = h.fake.send_envelope(
        "interactive",
        block_actions("U1", "alice", "C1", "1700000000.000009", &encode(Button::Edit(id)), "1700000300.000001", &h.fake.response_url("r")),
    );
    h.fake.wait_for_ack(&env, T).await;
    let open = h.fake.wait_calls("views.open", 1, T).await;
    let view = &open[0].json()["view"];
    assert_eq!(view["callback_id"], "plangate_edit");
    assert_eq!(view["submit"]["text"], "Approve");
    assert_eq!(view["blocks"][0]["element"]["initial_value"], "Read the client\nAdd backoff");
    let meta = view["private_metadata"].as_str().unwrap().to_string();
    let env = h.fake.send_envelope(
        "interactive",
        view_submission(
            "U1",
            "alice",
            "V7",
            "h7",
            "plangate_edit",
            &meta,
            input("1. Read the client\n2. Add jittered backoff\n\n- Test it"),
        ),
    );
    h.fake.wait_for_ack(&env, T).await;
    let events = h.handler.wait_events(2).await;
    assert_eq!(
        events[1].action,
        Action::Edit { approval_id: id, steps: vec!["Read the client".into(), "Add jittered backoff".into(), "Test it".into()] }
    );

    let qid = aid(12);
    let env = h.fake.send_envelope(
        "interactive",
        block_actions(
            "U1",
            "alice",
            "C1",
            "1700000000.000010",
            &encode(Button::AnswerOther(qid)),
            "1700000300.000002",
            &h.fake.response_url("r"),
        ),
    );
    h.fake.wait_for_ack(&env, T).await;
    let open = h.fake.wait_calls("views.open", 2, T).await;
    let view = &open[1].json()["view"];
    assert_eq!(view["callback_id"], "plangate_answer");
    let meta = view["private_metadata"].as_str().unwrap().to_string();
    assert!(meta.starts_with(&qid.to_string()));
    let env = h
        .fake
        .send_envelope("interactive", view_submission("U1", "alice", "V8", "h8", "plangate_answer", &meta, input("postgres, please")));
    h.fake.wait_for_ack(&env, T).await;
    let events = h.handler.wait_events(4).await;
    assert_eq!(events[3].action, Action::AnswerText { question_id: qid, text: "postgres, please".into() });

    // A submission of somebody else's modal, or with forged metadata, is ignored.
    let env = h.fake.send_envelope("interactive", view_submission("U1", "alice", "V9", "h9", "other_app_modal", &meta, input("x")));
    h.fake.wait_for_ack(&env, T).await;
    let env =
        h.fake.send_envelope("interactive", view_submission("U1", "alice", "V9", "h9", "plangate_feedback", "not-an-id|C1|", input("x")));
    h.fake.wait_for_ack(&env, T).await;
    assert_eq!(h.handler.events().len(), 4);
}

#[tokio::test]
async fn slash_commands_over_socket_mode_are_acked_bare_and_answered_ephemerally() {
    let h = harness(Transport::Socket, |_| Reply::Text("plangate commands: <!here>".into())).await;
    h.fake.wait_connected(T).await;
    let env =
        h.fake.send_envelope("slash_commands", slash_command("U1", "alice", "C1", "accept #abcd", "trig-1", &h.fake.response_url("c1")));
    assert_eq!(h.fake.wait_for_ack(&env, T).await, json!({"envelope_id": env}));
    let events = h.handler.wait_events(1).await;
    // slack-morphism's command model drops user_name: the id stands in.
    assert_eq!(
        events[0],
        Inbound {
            channel: "slack",
            chat: "C1".into(),
            user: User { id: "U1".into(), name: "U1".into(), team: Some(TEAM.into()) },
            action: Action::Command(parse_args("accept #abcd").unwrap()),
            idempotency_key: Some("slack:command:trig-1".into()),
            thread: None,
        }
    );
    let reply = h.fake.wait_calls("response_url", 1, T).await;
    assert_eq!(reply[0].json()["text"], "plangate commands: &lt;!here&gt;");
}

#[tokio::test]
async fn start_checks_the_config_and_shutdown_ends_the_socket_mode_task() {
    let fake = SlackFake::start().await;
    let (tx, rx) = watch::channel(false);
    let mut missing = config(&fake, Transport::Socket);
    missing.app_token = None;
    match start(missing, Recorder::new(|_| Reply::None), rx.clone(), always_leader()).await {
        Err(plangate_slack::SlackError::Config(plangate_channel::ConfigError { key: "slack.app_token", .. })) => {}
        Err(other) => panic!("wrong error: {other}"),
        Ok(_) => panic!("started without an app token"),
    }
    let mut adapter = start(config(&fake, Transport::Socket), Recorder::new(|_| Reply::None), rx, always_leader()).await.expect("starts");
    fake.wait_connected(T).await;
    tx.send(true).unwrap();
    let task = adapter.task.take().expect("Socket Mode runs a task");
    tokio::time::timeout(T, task).await.expect("the task ends on shutdown").unwrap();
}

#[tokio::test]
async fn only_the_leader_holds_the_socket_mode_connection() {
    let fake = SlackFake::start().await;
    let handler = Recorder::new(|_| Reply::None);
    let (lead, leader) = watch::channel(false);
    let (stop, shutdown) = watch::channel(false);
    let mut adapter = start(config(&fake, Transport::Socket), handler.clone(), shutdown, leader).await.expect("a follower starts");
    let live = adapter.liveness.clone();
    let follower = || live.status() == Ok(Some(plangate_channel::FOLLOWER));
    let command = |trigger: &str| slash_command("U1", "alice", "C1", "status", trigger, &fake.response_url(trigger));

    // A follower still sends; by the time the fake has answered this send, a
    // connection opened at start would be recorded too: it opens none.
    adapter.channel.send_text("C1", "from a follower").await.unwrap();
    assert_eq!(fake.calls("chat.postMessage").len(), 1);
    assert!(fake.calls("apps.connections.open").is_empty(), "a follower asks for no socket");
    assert_eq!(fake.connections(), 0);
    assert!(follower());

    // Elected: connects; ready once Slack says hello.
    lead.send_replace(true);
    fake.wait_connected(T).await;
    eventually(T, "ready after hello", || std::future::ready(live.status() == Ok(None))).await;
    let env = fake.send_envelope("slash_commands", command("t1"));
    fake.wait_for_ack(&env, T).await;
    handler.wait_events(1).await;

    // Deposed: the socket closes, and envelopes reach nobody here.
    lead.send_replace(false);
    eventually(T, "a follower again", || std::future::ready(follower())).await;
    let frames = fake.frames().len();
    // The socket's close reaches the fake.
    eventually(T, "the socket closed", || std::future::ready(fake.open_sockets() == 0)).await;
    let lost = fake.send_envelope("slash_commands", command("t2"));
    // The marker: by the time the fake has answered a send of the deposed
    // adapter, a socket it kept or opened again would have acked the envelope.
    adapter.channel.send_text("C1", "from a deposed leader").await.unwrap();
    assert_eq!(fake.frames().len(), frames, "no frame after losing leadership (no ack of {lost})");
    assert_eq!(handler.events().len(), 1);
    assert_eq!(fake.connections(), 1, "no new connection while a follower");
    assert_eq!(fake.calls("apps.connections.open").len(), 1);

    // Elected again: a new connection that works.
    lead.send_replace(true);
    fake.wait_calls("apps.connections.open", 2, T).await;
    eventually(T, "connected again", || std::future::ready(fake.connections() == 2 && live.status() == Ok(None))).await;
    let env = fake.send_envelope("slash_commands", command("t3"));
    fake.wait_for_ack(&env, T).await;
    let events = handler.wait_events(2).await;
    assert_eq!(events[1].idempotency_key.as_deref(), Some("slack:command:t3"));

    stop.send_replace(true);
    let task = adapter.task.take().expect("Socket Mode runs a task");
    tokio::time::timeout(T, task).await.expect("the task ends on shutdown").unwrap();
}
