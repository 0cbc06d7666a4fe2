//! Inbound over the gateway, and only while leading.

use super::*;

/// The interaction callbacks the fake received, as `(path, body)`.
fn callbacks(fake: &DiscordFake) -> Vec<(String, Value)> {
    fake.requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/callback"))
        .map(|r| (r.path.clone(), r.json().unwrap_or(Value::Null)))
        .collect()
}

#[tokio::test]
async fn gateway_approve_round_trip() {
    let fake = DiscordFake::start(APP).await;
    let handler = Recorder::new(|e| match &e.action {
        Action::Button(Button::Approve(_)) => Reply::Notice("✅ Approved v2".into()),
        _ => Reply::None,
    });
    // The default transport: serenity's gateway client.
    let mut c = config(&fake, Transport::Gateway);
    c.application_public_key = None;
    let (stop, shutdown) = watch::channel(false);
    let adapter = start(c, handler.clone(), shutdown, always_leader()).await.unwrap();
    assert!(adapter.routes.is_none());
    let identify = fake.wait_identified(WAIT).await;
    assert_eq!(identify["d"]["token"], "Bot test-bot-token");
    let startup: Vec<String> = fake.requests().iter().map(Recorded::line).collect();
    assert_eq!(startup, vec![format!("POST /api/v10/applications/{APP}/guilds/{GUILD}/commands"), "GET /api/v10/gateway".to_string()]);

    let channel = adapter.channel.clone();
    let delivery = channel.post_card(&destination(Style::Buttons), &card(), &document()).await.unwrap();
    let message: u64 = delivery.message_id.parse().unwrap();
    fake.dispatch(
        "INTERACTION_CREATE",
        fake::component_interaction(9001, "tok-approve", APP, &alice(), message, &encode(Button::Approve(approval()))),
    );
    let events = handler.wait(1).await;
    assert_eq!(events, vec![inbound(Action::Button(Button::Approve(approval())), 9001)]);
    fake.wait_for_count(WAIT, "POST", "/callback", 1).await;
    // What the server does after the decision: edit the card.
    channel
        .update_card(&delivery, &decided(&card(), DecisionStatus::Approved, "✅ Approved v2 by discord:@alice · 14:02 UTC"))
        .await
        .unwrap();

    let sequence: Vec<String> = fake.requests().iter().skip(2).map(Recorded::line).collect();
    assert_eq!(
        sequence,
        vec![
            format!("POST /api/v10/channels/{CHANNEL}/messages"),
            "POST /api/v10/interactions/9001/tok-approve/callback".to_string(),
            format!("PATCH /api/v10/channels/{CHANNEL}/messages/{message}"),
        ]
    );
    assert_eq!(
        callbacks(&fake)[0].1,
        json!({"type": 4, "data": {"content": "✅ Approved v2", "allowed_mentions": no_mentions(), "flags": 64, "attachments": []}})
    );
    print_sequence("approve (gateway)", &fake);

    stop.send(true).unwrap();
    tokio::time::timeout(WAIT, adapter.task.unwrap()).await.expect("gateway task ends on shutdown").unwrap();
}

#[tokio::test]
async fn only_the_leader_runs_the_gateway_session() {
    let fake = DiscordFake::start(APP).await;
    let handler = Recorder::new(|_| Reply::None);
    let mut c = config(&fake, Transport::Gateway);
    c.application_public_key = None;
    let (lead, leader) = watch::channel(false);
    let (stop, shutdown) = watch::channel(false);
    let adapter = start(c, handler.clone(), shutdown, leader).await.expect("a follower starts");
    let live = adapter.liveness.clone();
    let follower = || live.status() == Ok(Some(plangate_channel::FOLLOWER));
    let identified = || fake.frames().iter().filter(|f| f["op"] == 2).count();
    let click = |id: u64| fake::component_interaction(id, &format!("tok-{id}"), APP, &alice(), 42, &encode(Button::View(approval())));

    // A follower registers /plan (every replica may) but opens no session,
    // and still sends: by the time the fake has answered this send, a
    // session opened at start would have looked the gateway up.
    adapter.channel.send_text(&CHANNEL.to_string(), "from a follower").await.unwrap();
    let lines: Vec<String> = fake.requests().iter().map(Recorded::line).filter(|l| !l.ends_with("/messages")).collect();
    assert_eq!(lines, [format!("POST /api/v10/applications/{APP}/guilds/{GUILD}/commands")], "no gateway lookup");
    assert_eq!(identified(), 0, "no IDENTIFY from a follower");
    assert!(follower());

    // Elected: looks the gateway up, identifies, handles interactions.
    lead.send_replace(true);
    fake.wait_identified(WAIT).await;
    eventually(WAIT, "ready", || std::future::ready(live.status() == Ok(None))).await;
    fake.dispatch("INTERACTION_CREATE", click(9001));
    handler.wait(1).await;

    // Deposed: the shard shuts down; an interaction sent now waits at the
    // fake (Discord would give it to the session that leads) instead.
    lead.send_replace(false);
    eventually(WAIT, "a follower again", || std::future::ready(follower())).await;
    fake.dispatch("INTERACTION_CREATE", click(9002));
    // The marker: by the time the fake has answered a send of the deposed
    // adapter, a session it kept or opened again would have the interaction.
    adapter.channel.send_text(&CHANNEL.to_string(), "from a deposed leader").await.unwrap();
    assert_eq!(handler.events().len(), 1, "no session here any more");
    assert_eq!(identified(), 1, "no new IDENTIFY while a follower");

    // Elected again: a new session, which gets the waiting interaction.
    lead.send_replace(true);
    let events = handler.wait(2).await;
    assert_eq!(identified(), 2);
    assert_eq!(events[1], inbound(Action::Button(Button::View(approval())), 9002));
    let gateway_lookups = fake.requests().iter().filter(|r| r.path.starts_with("/api/v10/gateway")).count();
    assert_eq!(gateway_lookups, 2, "one per term");

    stop.send(true).unwrap();
    tokio::time::timeout(WAIT, adapter.task.unwrap()).await.expect("gateway task ends on shutdown").unwrap();
}

fn print_sequence(name: &str, fake: &DiscordFake) {
    println!("--- {name}");
    for r in fake.requests() {
        let body = r.json().map(|j| j.to_string()).unwrap_or_default();
        let files: Vec<String> = r.files().iter().map(|f| format!("{}={}", f.name, f.file_name.clone().unwrap_or_default())).collect();
        println!("{} {} {}", r.line(), body, files.join(","));
    }
}

#[tokio::test]
async fn gateway_revise_round_trip_through_the_feedback_modal() {
    let fake = DiscordFake::start(APP).await;
    let id = approval();
    let handler = Recorder::new(move |e| match &e.action {
        Action::Button(Button::RequestChanges(a)) => {
            Reply::AskFeedback { approval_id: *a, version: 2, prompt: "What should change in 'Add retries' v2?".into() }
        }
        Action::Feedback { .. } => Reply::Notice("✏️ Changes requested on v2".into()),
        _ => Reply::None,
    });
    let running = run(&fake, config(&fake, Transport::Gateway), handler.clone(), None).await;
    let channel = running.adapter.channel.clone();
    let delivery = channel.post_card(&destination(Style::Buttons), &card(), &document()).await.unwrap();
    let message: u64 = delivery.message_id.parse().unwrap();

    fake.dispatch(
        "INTERACTION_CREATE",
        fake::component_interaction(9101, "tok-click", APP, &alice(), message, &encode(Button::RequestChanges(id))),
    );
    fake.wait_for_count(WAIT, "POST", "/callback", 1).await;
    assert_eq!(
        callbacks(&fake)[0],
        (
            "/api/v10/interactions/9101/tok-click/callback".to_string(),
            json!({"type": 9, "data": {
                "custom_id": encode(Button::RequestChanges(id)),
                "title": "Request changes to v2",
                "components": [{"type": 1, "components": [{
                    "type": 4, "style": 2, "label": "What should change?", "custom_id": "text",
                    "placeholder": "What should change in 'Add retries' v2?", "max_length": 4000, "required": true
                }]}]
            }})
        )
    );
    fake.dispatch(
        "INTERACTION_CREATE",
        fake::modal_interaction(
            9102,
            "tok-modal",
            APP,
            &alice(),
            &encode(Button::RequestChanges(id)),
            &[("text", "  Split step 2 into two  ")],
            Some(message),
        ),
    );
    let events = handler.wait(2).await;
    assert_eq!(
        events,
        vec![
            inbound(Action::Button(Button::RequestChanges(id)), 9101),
            inbound(Action::Feedback { approval_id: id, text: "Split step 2 into two".into() }, 9102),
        ]
    );
    fake.wait_for_count(WAIT, "POST", "/callback", 2).await;
    assert_eq!(
        callbacks(&fake)[1].1,
        json!({"type": 4, "data": {"content": "✏️ Changes requested on v2", "allowed_mentions": no_mentions(), "flags": 64, "attachments": []}})
    );
    channel
        .update_card(
            &delivery,
            &decided(&card(), DecisionStatus::Rejected, "✏️ Changes requested on v2 by discord:@alice · 14:03 UTC: Split step 2 into two"),
        )
        .await
        .unwrap();
    let sequence: Vec<String> = fake.requests().iter().map(Recorded::line).collect();
    assert_eq!(
        sequence,
        vec![
            format!("POST /api/v10/channels/{CHANNEL}/messages"),
            "POST /api/v10/interactions/9101/tok-click/callback".to_string(),
            "POST /api/v10/interactions/9102/tok-modal/callback".to_string(),
            format!("PATCH /api/v10/channels/{CHANNEL}/messages/{message}"),
        ]
    );
    print_sequence("revise (gateway)", &fake);
}

/// `/plan <sub>`, its options, and what the server must receive.
type Case = (&'static str, Vec<(&'static str, &'static str)>, Action);

#[tokio::test]
async fn every_plan_subcommand_reaches_the_handler() {
    let fake = DiscordFake::start(APP).await;
    let handler = Recorder::new(|_| Reply::Text("ok".into()));
    let _running = run(&fake, config(&fake, Transport::Gateway), handler.clone(), None).await;
    let session = || Some(Target::Session(SessionKey::new("demo", "s1")));
    let approval = || Some(Target::Approval("a1b2c3".into()));
    let cases: Vec<Case> = vec![
        ("help", vec![], Action::Command(Parsed { command: PlanCommand::Help, target: None })),
        ("status", vec![("target", "demo/s1")], Action::Command(Parsed { command: PlanCommand::Status, target: session() })),
        ("list", vec![], Action::Command(Parsed { command: PlanCommand::List, target: None })),
        ("view", vec![("target", "#a1b2c3")], Action::Command(Parsed { command: PlanCommand::View, target: approval() })),
        ("accept", vec![], Action::Command(Parsed { command: PlanCommand::Accept(Default::default()), target: None })),
        (
            "revise",
            vec![("feedback", "smaller steps"), ("target", "#a1b2c3")],
            Action::Command(Parsed { command: PlanCommand::Revise("smaller steps".into()), target: approval() }),
        ),
        (
            "reject",
            vec![("feedback", "#nope is not a target here")],
            Action::Command(Parsed { command: PlanCommand::Revise("#nope is not a target here".into()), target: None }),
        ),
        (
            "edit",
            vec![("steps", "one; two")],
            Action::Command(Parsed { command: PlanCommand::Edit(vec!["one".into(), "two".into()]), target: None }),
        ),
        ("cancel", vec![("target", "demo/s1")], Action::Command(Parsed { command: PlanCommand::Cancel, target: session() })),
        ("answer", vec![("text", "Postgres")], Action::Command(Parsed { command: PlanCommand::Answer("Postgres".into()), target: None })),
        ("on", vec![("target", "demo/s1")], Action::Command(Parsed { command: PlanCommand::On, target: session() })),
        ("off", vec![], Action::Command(Parsed { command: PlanCommand::Off, target: None })),
        (
            "auto",
            vec![("state", "on"), ("target", "demo/s1")],
            Action::Command(Parsed { command: PlanCommand::Auto(true), target: session() }),
        ),
        ("restate", vec![], Action::Command(Parsed { command: PlanCommand::Restate, target: None })),
        ("pair", vec![("code", "ABCD-EFGH")], Action::Command(Parsed { command: PlanCommand::Pair("ABCD-EFGH".into()), target: None })),
        (
            "approvers",
            vec![("action", "list")],
            Action::Command(Parsed { command: PlanCommand::Approvers(ApproversChange::List), target: None }),
        ),
        // Bad input reaches the server as BadCommand with the words typed.
        ("on", vec![("target", "#a1b2")], Action::BadCommand("on #a1b2".into())),
        ("status", vec![("target", "not a target")], Action::BadCommand("status not a target".into())),
    ];
    for (n, (sub, options, _)) in cases.iter().enumerate() {
        let id = 9200 + n as u64;
        fake.dispatch(
            "INTERACTION_CREATE",
            fake::command_interaction(id, &format!("tok-{id}"), APP, &alice(), "plan", fake::plan_subcommand(sub, options)),
        );
        handler.wait(n + 1).await;
    }
    let events = handler.events();
    let expected: Vec<Inbound> = cases.into_iter().enumerate().map(|(n, (_, _, action))| inbound(action, 9200 + n as u64)).collect();
    assert_eq!(events, expected);
    let answered = fake.wait_for_count(WAIT, "POST", "/callback", expected.len()).await;
    assert_eq!(
        answered[0].json().unwrap(),
        json!({"type": 4, "data": {"content": "ok", "allowed_mentions": no_mentions(), "flags": 64, "attachments": []}})
    );
}

#[tokio::test]
async fn replies_render_as_modal_confirm_and_document() {
    let fake = DiscordFake::start(APP).await;
    let id = approval();
    let qid = ApprovalId([0x0f; 16]);
    let handler = Recorder::new(move |e| match &e.action {
        Action::Button(Button::Cancel(a)) => {
            Reply::ConfirmCancel { approval_id: *a, version: 2, prompt: "Cancel 'Add retries' v2 and turn plan mode off?".into() }
        }
        Action::Button(Button::Edit(a)) => {
            Reply::AskEdit { approval_id: *a, version: 2, steps: vec!["Add a retry loop".into(), "Test it".into()] }
        }
        Action::Button(Button::AnswerOther(q)) => Reply::AskAnswer { question_id: *q, prompt: "Which database?".into() },
        Action::Button(Button::View(_)) => Reply::Document { document: document(), caption: "Plan v2 of demo/s1".into() },
        Action::Edit { .. } | Action::AnswerText { .. } => Reply::Notice("done".into()),
        _ => Reply::None,
    });
    let _running = run(&fake, config(&fake, Transport::Gateway), handler.clone(), None).await;
    let click = |n: u64, data: Button| {
        fake.dispatch("INTERACTION_CREATE", fake::component_interaction(n, &format!("tok-{n}"), APP, &alice(), 42, &encode(data)))
    };

    click(1, Button::Cancel(id));
    let r = fake.wait_for_count(WAIT, "POST", "/callback", 1).await;
    assert_eq!(
        r[0].json().unwrap(),
        json!({"type": 4, "data": {
            "content": "Cancel 'Add retries' v2 and turn plan mode off?", "allowed_mentions": no_mentions(), "flags": 64, "attachments": [],
            "components": [{"type": 1, "components": [{"type": 2, "style": 4, "label": "Yes, cancel v2", "custom_id": encode(Button::ConfirmCancel(id)), "disabled": false}]}]
        }})
    );

    click(2, Button::Edit(id));
    let r = fake.wait_for_count(WAIT, "POST", "/callback", 2).await;
    let modal = r[1].json().unwrap();
    assert_eq!(modal["type"], 9);
    assert_eq!(modal["data"]["custom_id"], encode(Button::Edit(id)));
    assert_eq!(modal["data"]["components"][0]["components"][0]["value"], "Add a retry loop\nTest it");
    fake.dispatch(
        "INTERACTION_CREATE",
        fake::modal_interaction(
            3,
            "tok-3",
            APP,
            &alice(),
            &encode(Button::Edit(id)),
            &[("text", "1. Add a retry loop\n\n2. Test it twice\n")],
            Some(42),
        ),
    );

    click(4, Button::AnswerOther(qid));
    let r = fake.wait_for_count(WAIT, "POST", "/callback", 4).await;
    assert_eq!(r[3].json().unwrap()["data"]["custom_id"], encode(Button::AnswerOther(qid)));
    fake.dispatch(
        "INTERACTION_CREATE",
        fake::modal_interaction(5, "tok-5", APP, &alice(), &encode(Button::AnswerOther(qid)), &[("text", "MariaDB")], Some(42)),
    );

    // A document is deferred, then the original response is replaced with the file.
    click(6, Button::View(id));
    let patch = fake.wait_for_count(WAIT, "PATCH", "/messages/@original", 1).await.remove(0);
    assert_eq!(patch.path, format!("/api/v10/webhooks/{APP}/tok-6/messages/@original"));
    assert_eq!(patch.json().unwrap()["content"], "Plan v2 of demo/s1");
    assert_eq!(patch.files()[0].file_name.as_deref(), Some("plan-add-retries-v2.md"));
    assert_eq!(patch.files()[0].text(), document().text);
    let deferred = fake.requests().into_iter().find(|r| r.path == "/api/v10/interactions/6/tok-6/callback").unwrap();
    assert_eq!(deferred.json().unwrap(), json!({"type": 5, "data": {"flags": 64, "attachments": []}}));
    assert!(deferred.at <= patch.at);

    let events = handler.wait(6).await;
    assert_eq!(events[2].action, Action::Edit { approval_id: id, steps: vec!["Add a retry loop".into(), "Test it twice".into()] });
    assert_eq!(events[4].action, Action::AnswerText { question_id: qid, text: "MariaDB".into() });
}

#[tokio::test]
async fn forged_and_oversized_custom_ids_are_unknown_buttons() {
    let fake = DiscordFake::start(APP).await;
    let handler = Recorder::new(|_| Reply::Notice("Unknown button".into()));
    let _running = run(&fake, config(&fake, Transport::Gateway), handler.clone(), None).await;
    let long = format!("pg1:a:{}{}", "a".repeat(32), "x".repeat(200));
    for (n, data) in ["pg1:a:zz", "pg2:a:a1b2c3d4000102030405060708090a0b", long.as_str()].iter().enumerate() {
        fake.dispatch("INTERACTION_CREATE", fake::component_interaction(7000 + n as u64, "tok", APP, &alice(), 42, data));
    }
    let events = handler.wait(3).await;
    assert_eq!(events[0].action, Action::UnknownButton("pg1:a:zz".into()));
    assert_eq!(events[1].action, Action::UnknownButton("pg2:a:a1b2c3d4000102030405060708090a0b".into()));
    assert_eq!(events[2].action, Action::UnknownButton(long.chars().take(100).collect()));
    // A foreign guild's event still reaches the server, which refuses it by `expected_team`.
    let stranger = Actor { user_id: 1, username: "mallory".into(), guild_id: Some(13), channel_id: 14 };
    fake.dispatch("INTERACTION_CREATE", fake::component_interaction(7100, "tok", APP, &stranger, 42, &encode(Button::Approve(approval()))));
    let events = handler.wait(4).await;
    assert_eq!(events[3].user, User { id: "1".into(), name: "@mallory".into(), team: Some("13".into()) });
    // The same interaction id twice is handled once.
    fake.dispatch("INTERACTION_CREATE", fake::component_interaction(7100, "tok", APP, &stranger, 42, &encode(Button::Approve(approval()))));
    fake.dispatch("INTERACTION_CREATE", fake::component_interaction(7101, "tok", APP, &stranger, 42, "pg1:zz"));
    let events = handler.wait(5).await;
    assert_eq!(events.len(), 5);
    assert_eq!(events[4].idempotency_key.as_deref(), Some("discord:interaction:7101"));
}
