//! The adapter over long polling against the fake Bot API: cards, buttons, commands, prompts, limits, leadership.

use super::*;

#[tokio::test]
async fn start_identifies_the_bot_registers_plan_and_long_polls() {
    let fake = FakeTelegram::start().await;
    let handler = Recorder::new(|_| Reply::None);
    let running = run(config(&fake), handler).await;
    let poll = fake.wait_call("getUpdates", 1, WAIT).await;
    let methods: Vec<String> = fake.requests().iter().map(|r| r.method.clone()).take(4).collect();
    assert_eq!(methods, ["getMe", "setMyCommands", "deleteWebhook", "getUpdates"]);
    assert!(fake.requests().iter().all(|r| r.token == TOKEN));
    let commands = fake.calls("setMyCommands")[0].field("commands").clone();
    assert_eq!(commands[0]["command"], "plan");
    assert!(commands[0]["description"].as_str().unwrap().contains("/plan for help"));
    assert_eq!(commands.as_array().unwrap().len(), 1);
    assert_eq!(poll.field("timeout"), &json!(1));
    assert_eq!(poll.field("allowed_updates"), &json!(["message", "callback_query"]));
    assert!(poll.field("offset").is_null(), "no saved cursor, no offset");
    running.stop().await;
}

#[tokio::test]
async fn post_card_sends_the_card_with_buttons_and_the_plan_as_a_reply() {
    let fake = FakeTelegram::start().await;
    let running = run(config(&fake), Recorder::new(|_| Reply::None)).await;
    let p = proposal("Add retries", &["Read the client", "Add backoff"], DecisionStatus::Pending);
    let markdown = "# Add retries\n\n1. Read the client\n2. Add backoff\n";
    let delivery = running.adapter.channel.post_card(&destination(Style::Buttons), &card_of(&p), &document_of(&p, markdown)).await.unwrap();

    let card = fake.wait_call("sendMessage", 1, WAIT).await;
    assert_eq!(card.chat_id(), Some(CHAT));
    assert_eq!(card.str("parse_mode"), "HTML");
    assert_eq!(card.field("link_preview_options"), &json!({"is_disabled": true}));
    assert_eq!(
        card.str("text"),
        "📋 <b>Add retries</b>\n<i>demo/s1 · v1 · 3 min ago · #111111</i>\n\nMake the client resilient.\n\n<b>Steps</b>\n1. ○ Read the client\n2. ○ Add backoff\n\n<b>Risks</b>\n• retries could hide outages"
    );
    assert_eq!(card.keyboard().unwrap(), card_keyboard(ID));
    assert!(card.reply_to().is_none());

    let doc = fake.wait_call("sendDocument", 1, WAIT).await;
    assert!(doc.content_type.as_deref().unwrap().starts_with("multipart/form-data"));
    assert_eq!(doc.chat_id(), Some(CHAT));
    assert_eq!(doc.field("document")["file_name"], "plan-add-retries-v1.md");
    assert_eq!(doc.field("document")["text"], markdown);
    let card_id = sent_id(&fake, 1);
    assert_eq!(doc.reply_to(), Some(card_id), "the document replies to the card");
    assert_eq!(doc.field("reply_parameters")["allow_sending_without_reply"], true);

    assert_eq!(
        delivery,
        Delivery {
            destination: "ops-tg".into(),
            channel: "telegram".into(),
            chat: CHAT.to_string(),
            message_id: card_id.to_string(),
            thread: None,
            style: Style::Buttons
        }
    );
    running.stop().await;
}

#[tokio::test]
async fn text_style_cards_show_commands_and_no_keyboard() {
    let fake = FakeTelegram::start().await;
    let running = run(config(&fake), Recorder::new(|_| Reply::None)).await;
    let p = proposal("Add retries", &["Read"], DecisionStatus::Pending);
    let delivery = running.adapter.channel.post_card(&destination(Style::Text), &card_of(&p), &document_of(&p, "# x")).await.unwrap();
    let card = fake.wait_call("sendMessage", 1, WAIT).await;
    assert!(card.field("reply_markup").is_null(), "no keyboard: {:?}", card.body);
    let text = card.str("text");
    assert!(
        text.ends_with(
            "Reply with one of:\n<code>/plan accept #111111</code>\n<code>/plan accept #111111 except &lt;step numbers&gt; -- &lt;note&gt;</code>\n<code>/plan changes #111111 &lt;what to change&gt;</code>\n<code>/plan claim #111111</code>\n<code>/plan cancel #111111</code>\n<code>/plan view #111111</code>"
        ),
        "{text}"
    );
    fake.wait_call("sendDocument", 1, WAIT).await;
    assert_eq!(delivery.style, Style::Text);

    // The nudge of a text card repeats the commands, without buttons.
    running.adapter.channel.send_nudge(&delivery, &card_of(&p), "⏰ Plan 'Add retries' v1 has waited 10 min").await.unwrap();
    let nudge = fake.wait_call("sendMessage", 2, WAIT).await;
    assert!(nudge.field("reply_markup").is_null());
    assert!(nudge.str("text").starts_with("⏰ Plan 'Add retries' v1 has waited 10 min\nReply with one of:"));
    assert_eq!(nudge.reply_to().map(|id| id.to_string()), Some(delivery.message_id.clone()));
    running.stop().await;
}

#[tokio::test]
async fn update_card_edits_in_place_with_the_receipt_and_no_keyboard() {
    let fake = FakeTelegram::start().await;
    let running = run(config(&fake), Recorder::new(|_| Reply::None)).await;
    let p = proposal("Add retries", &["Read"], DecisionStatus::Pending);
    let channel = &running.adapter.channel;
    let delivery = channel.post_card(&destination(Style::Buttons), &card_of(&p), &document_of(&p, "# x")).await.unwrap();

    let approved = proposal("Add retries", &["Read"], DecisionStatus::Approved);
    channel.update_card(&delivery, &card_of(&approved)).await.unwrap();
    let edit = fake.wait_call("editMessageText", 1, WAIT).await;
    assert_eq!(edit.chat_id(), Some(CHAT));
    assert_eq!(edit.field("message_id").to_string(), delivery.message_id);
    assert_eq!(edit.str("parse_mode"), "HTML");
    assert!(edit.str("text").ends_with("\n\n<b>✅ Approved v1 by telegram:@\u{2060}alice · 14:02 UTC</b>"), "{}", edit.str("text"));
    assert_eq!(edit.field("reply_markup"), &json!({"inline_keyboard": []}), "keyboard removed");
    let stored = fake.message(CHAT, delivery.message_id.parse().unwrap()).unwrap();
    assert!(stored.get("reply_markup").is_none());

    // "message is not modified" is success, not an error.
    fake.script("editMessageText", Scripted::Error { status: 400, description: NOT_MODIFIED.into() });
    channel.update_card(&delivery, &card_of(&approved)).await.expect("not modified is fine");
    // Any other refusal is an error, typed by what it means.
    fake.script("editMessageText", Scripted::Error { status: 400, description: "Bad Request: chat not found".into() });
    let err = channel.update_card(&delivery, &card_of(&approved)).await.unwrap_err();
    assert!(matches!(err, ChannelError::NotFound { .. }), "{err:?}");
    fake.script("editMessageText", Scripted::Error { status: 400, description: "Bad Request: message can't be edited".into() });
    let err = channel.update_card(&delivery, &card_of(&approved)).await.unwrap_err();
    assert!(matches!(err, ChannelError::Api { status: Some(400), .. }), "{err:?}");
    running.stop().await;
}

#[tokio::test]
async fn approve_round_trip() {
    let fake = FakeTelegram::start().await;
    let handler = Recorder::new(|event| match event.action {
        Action::Button(Button::Approve(_)) => Reply::Notice("Approved v1".into()),
        _ => Reply::None,
    });
    let running = run(config(&fake), handler.clone()).await;
    let channel = &running.adapter.channel;
    let p = proposal("Add retries", &["Read the client"], DecisionStatus::Pending);
    let delivery = channel.post_card(&destination(Style::Buttons), &card_of(&p), &document_of(&p, "# Add retries")).await.unwrap();
    let card_id: i64 = delivery.message_id.parse().unwrap();
    fake.wait_call("sendDocument", 1, WAIT).await;

    let update_id = fake.push_update(fake.callback_update(CHAT, card_id, alice(), &encode(Button::Approve(ID))));
    let seen = handler.wait_seen(1).await;
    assert_eq!(
        seen[0],
        Inbound {
            channel: "telegram",
            chat: CHAT.to_string(),
            user: alice_user(),
            action: Action::Button(Button::Approve(ID)),
            idempotency_key: Some(format!("telegram:update:{update_id}")),
            thread: None,
        }
    );
    let answer = fake.wait_call("answerCallbackQuery", 1, WAIT).await;
    assert_eq!(answer.str("text"), "Approved v1");
    assert!(answer.str("callback_query_id").starts_with("cbq-"));

    // The server then edits the card through the channel.
    let approved = proposal("Add retries", &["Read the client"], DecisionStatus::Approved);
    channel.update_card(&delivery, &card_of(&approved)).await.unwrap();
    fake.wait_call("editMessageText", 1, WAIT).await;
    handler.wait_cursor(&(update_id + 1).to_string()).await;

    let sequence: Vec<String> = fake.actions().iter().map(describe).collect();
    let everything: Vec<String> = fake.requests().iter().map(describe).collect();
    println!("APPROVE ROUND TRIP (with long polls):\n{}", everything.join("\n"));
    let methods: Vec<&str> = sequence.iter().map(|s| s.split(' ').next().unwrap()).collect();
    assert_eq!(
        methods,
        ["getMe", "setMyCommands", "deleteWebhook", "sendMessage", "sendDocument", "answerCallbackQuery", "editMessageText"]
    );
    assert_eq!(fake.calls("answerCallbackQuery").len(), 1, "answered exactly once");
    running.stop().await;
}

#[tokio::test]
async fn revise_round_trip_through_a_force_reply_prompt() {
    let fake = FakeTelegram::start().await;
    let handler = Recorder::new(|event| match &event.action {
        Action::Button(Button::RequestChanges(id)) => {
            Reply::AskFeedback { approval_id: *id, version: 1, prompt: "What should change in v1?".into() }
        }
        Action::Feedback { .. } => Reply::Notice("Changes requested on v1".into()),
        _ => Reply::None,
    });
    let running = run(config(&fake), handler.clone()).await;
    let channel = &running.adapter.channel;
    let p = proposal("Add retries", &["Read the client"], DecisionStatus::Pending);
    let delivery = channel.post_card(&destination(Style::Buttons), &card_of(&p), &document_of(&p, "# Add retries")).await.unwrap();
    let card_id: i64 = delivery.message_id.parse().unwrap();
    fake.wait_call("sendDocument", 1, WAIT).await;

    let click = fake.push_update(fake.callback_update(CHAT, card_id, alice(), &encode(Button::RequestChanges(ID))));
    let prompt = fake.wait_call("sendMessage", 2, WAIT).await;
    let answer = fake.wait_call("answerCallbackQuery", 1, WAIT).await;
    assert!(answer.field("text").is_null(), "no toast for a prompt");
    assert_eq!(prompt.reply_to(), Some(card_id), "the prompt replies to the card that was clicked");
    assert_eq!(
        prompt.field("reply_markup"),
        &json!({"force_reply": true, "selective": true, "input_field_placeholder": "What should change?"})
    );
    assert_eq!(
        prompt.str("text"),
        format!("<a href=\"tg://user?id={ALICE}\">Alice</a> What should change in v1?"),
        "the server's prompt says what to reply, once"
    );
    let prompt_id = sent_id(&fake, 2);

    let reply = fake.message_update(CHAT, alice(), "Split step 2 <b>please</b>", Some(prompt_id));
    let reply_message_id = reply["message"]["message_id"].as_i64().unwrap();
    let feedback = fake.push_update(reply);
    let seen = handler.wait_seen(2).await;
    assert_eq!(seen[0].action, Action::Button(Button::RequestChanges(ID)));
    assert_eq!(seen[0].idempotency_key, Some(format!("telegram:update:{click}")));
    assert_eq!(
        seen[1],
        Inbound {
            channel: "telegram",
            chat: CHAT.to_string(),
            user: alice_user(),
            action: Action::Feedback { approval_id: ID, text: "Split step 2 <b>please</b>".into() },
            idempotency_key: Some(format!("telegram:update:{feedback}")),
            thread: None,
        }
    );
    // A Notice for a message is a reply to that message.
    let notice = fake.wait_call("sendMessage", 3, WAIT).await;
    assert_eq!(notice.str("text"), "Changes requested on v1");
    assert_eq!(notice.reply_to(), Some(reply_message_id));

    let rejected = proposal("Add retries", &["Read the client"], DecisionStatus::Rejected);
    channel.update_card(&delivery, &card_of(&rejected)).await.unwrap();
    let edit = fake.wait_call("editMessageText", 1, WAIT).await;
    assert!(
        edit.str("text").contains("✏️ Changes requested on v1 by telegram:@\u{2060}alice · 14:02 UTC: split step 2"),
        "{:?}",
        edit.str("text")
    );
    assert_eq!(edit.field("reply_markup"), &json!({"inline_keyboard": []}));

    let sequence: Vec<String> = fake.actions().iter().map(describe).collect();
    let everything: Vec<String> = fake.requests().iter().map(describe).collect();
    println!("REVISE ROUND TRIP (with long polls):\n{}", everything.join("\n"));
    let methods: Vec<&str> = sequence.iter().map(|s| s.split(' ').next().unwrap()).collect();
    assert_eq!(
        methods,
        [
            "getMe",
            "setMyCommands",
            "deleteWebhook",
            "sendMessage",
            "sendDocument",
            "answerCallbackQuery",
            "sendMessage",
            "sendMessage",
            "editMessageText"
        ]
    );
    running.stop().await;
}

#[tokio::test]
async fn forged_and_oversized_callback_data_is_an_unknown_button() {
    let fake = FakeTelegram::start().await;
    let handler = Recorder::new(|_| Reply::None);
    let running = run(config(&fake), handler.clone()).await;
    let forged = [
        "pg1:a:not-an-id".to_string(),
        format!("pg1:z:{ID}"),
        format!("pg2:a:{ID}"),
        format!("pg1:a:{ID}:1"),
        format!("pg1:a:{ID}{}", "0".repeat(40)),
        String::new(),
    ];
    for data in &forged {
        fake.push_update(fake.callback_update(CHAT, 5, alice(), data));
    }
    let seen = handler.wait_seen(forged.len()).await;
    let expected: Vec<Action> = forged
        .iter()
        .map(|d| if d.len() > 64 { Action::UnknownButton(format!("{}…", &d[..64])) } else { Action::UnknownButton(d.clone()) })
        .collect();
    assert_eq!(seen.iter().map(|e| e.action.clone()).collect::<Vec<_>>(), expected);
    let answers = fake
        .wait_for(WAIT, |reqs| {
            let answers: Vec<Recorded> = reqs.iter().filter(|r| r.method == "answerCallbackQuery").cloned().collect();
            (answers.len() == forged.len()).then_some(answers)
        })
        .await;
    assert!(answers.iter().all(|a| a.str("text") == UNKNOWN_BUTTON));
    // Each query answered once, by its own id.
    let mut ids: Vec<String> = answers.iter().map(|a| a.str("callback_query_id")).collect();
    ids.dedup();
    assert_eq!(ids.len(), forged.len());
    assert!(fake.calls("sendMessage").is_empty(), "nothing else is sent");
    running.stop().await;
}

#[tokio::test]
async fn every_plan_command_form_reaches_the_handler_and_others_do_not() {
    let fake = FakeTelegram::start().await;
    let handler = Recorder::new(|event| match &event.action {
        Action::Command(Parsed { command: PlanCommand::Help, .. }) => Reply::Text("plangate commands: <all of them>".into()),
        _ => Reply::None,
    });
    let running = run(config(&fake), handler.clone()).await;
    let messages = [
        "/plan",
        "/plan status",
        &format!("/plan@{BOT_USERNAME} accept #111111"),
        "/plan@OtherBot status",
        "  /PLAN revise #abcd split step 2",
        "/plan frobnicate now",
        &format!("/plan@{BOT_USERNAME} edit"),
        "/planet",
        "/start",
        "hello /plan status",
        "/plan list",
    ];
    let mut ids = Vec::new();
    for text in messages {
        let update = fake.message_update(CHAT, alice(), text, None);
        ids.push((update["message"]["message_id"].as_i64().unwrap(), fake.push_update(update)));
    }
    // Updates are handled in order: once the last one is seen, every
    // message before it has been either handled or ignored.
    let seen = handler.wait_seen(7).await;
    let actions: Vec<Action> = seen.iter().map(|e| e.action.clone()).collect();
    assert_eq!(
        actions,
        vec![
            Action::Command(Parsed { command: PlanCommand::Help, target: None }),
            Action::Command(Parsed { command: PlanCommand::Status, target: None }),
            Action::Command(Parsed { command: PlanCommand::Accept(Default::default()), target: Some(Target::Approval("111111".into())) }),
            Action::Command(Parsed { command: PlanCommand::Revise("split step 2".into()), target: Some(Target::Approval("abcd".into())) }),
            Action::BadCommand("frobnicate now".into()),
            Action::BadCommand("edit".into()),
            Action::Command(Parsed { command: PlanCommand::List, target: None }),
        ]
    );
    let keys: Vec<String> = seen.iter().map(|e| e.idempotency_key.clone().unwrap()).collect();
    let expected_keys: Vec<String> = [0, 1, 2, 4, 5, 6, 10].iter().map(|i| format!("telegram:update:{}", ids[*i].1)).collect();
    assert_eq!(keys, expected_keys);
    assert!(seen.iter().all(|e| e.user == alice_user() && e.chat == CHAT.to_string()));
    // Text replies go to the chat as a reply to the command, escaped.
    let help = fake.wait_call("sendMessage", 1, WAIT).await;
    assert_eq!(help.str("text"), "plangate commands: &lt;all of them&gt;");
    assert_eq!(help.reply_to(), Some(ids[0].0));
    assert_eq!(fake.calls("sendMessage").len(), 1);
    running.stop().await;
}

#[tokio::test]
async fn a_long_plan_cuts_the_card_at_a_line_but_attaches_the_whole_document() {
    let fake = FakeTelegram::start().await;
    let running = run(config(&fake), Recorder::new(|_| Reply::None)).await;
    let long_step = "x".repeat(4000);
    let p = proposal("Big plan", &["First, short", &long_step, "Third"], DecisionStatus::Pending);
    let markdown = format!("# Big plan\n\n1. First, short\n2. {long_step}\n3. Third\n");
    running.adapter.channel.post_card(&destination(Style::Buttons), &card_of(&p), &document_of(&p, &markdown)).await.unwrap();
    let card = fake.wait_call("sendMessage", 1, WAIT).await;
    let visible = strip(&card.str("text"));
    assert!(visible.encode_utf16().count() <= 4096, "{} units", visible.encode_utf16().count());
    assert!(visible.ends_with(&format!("1. ○ First, short\n{CUT_MARKER}")), "{visible}");
    assert!(!visible.contains("xxxx"));
    assert_eq!(card.keyboard().unwrap(), card_keyboard(ID), "the buttons survive the cut");
    let doc = fake.wait_call("sendDocument", 1, WAIT).await;
    assert_eq!(doc.field("document")["text"], json!(markdown));
    assert_eq!(doc.field("document")["size"], json!(markdown.len()));
    running.stop().await;
}

#[tokio::test]
async fn html_is_escaped_mentions_defused_and_hidden_characters_shown() {
    let fake = FakeTelegram::start().await;
    let running = run(config(&fake), Recorder::new(|_| Reply::None)).await;
    let p = proposal("<script>&amp; @everyone", &["rm -rf /tmp/\u{202E}txt.exe", "<b>bold?</b>"], DecisionStatus::Pending);
    running.adapter.channel.post_card(&destination(Style::Buttons), &card_of(&p), &document_of(&p, "# x")).await.unwrap();
    let text = fake.wait_call("sendMessage", 1, WAIT).await.str("text");
    assert!(text.starts_with("<b>⚠ This plan contains hidden or direction-changing characters"), "{text}");
    assert!(text.contains("📋 <b>&lt;script&gt;&amp;amp; @\u{2060}everyone</b>"), "{text}");
    assert!(text.contains("1. ○ rm -rf /tmp/⟦U+202E⟧txt.exe"), "{text}");
    assert!(text.contains("2. ○ &lt;b&gt;bold?&lt;/b&gt;"), "{text}");
    assert!(!text.contains('\u{202E}'));
    // The only tags are ours.
    let tags: Vec<&str> = text.match_indices('<').map(|(i, _)| &text[i..i + text[i..].find('>').unwrap() + 1]).collect();
    assert!(tags.iter().all(|t| ["<b>", "</b>", "<i>", "</i>"].contains(t)), "{tags:?}");
    running.stop().await;
}

#[tokio::test]
async fn a_429_is_retried_after_retry_after() {
    let fake = FakeTelegram::start().await;
    let running = run(config(&fake), Recorder::new(|_| Reply::None)).await;
    fake.script("sendMessage", Scripted::RetryAfter(1));
    let p = proposal("Add retries", &["Read"], DecisionStatus::Pending);
    let delivery = running.adapter.channel.post_card(&destination(Style::Buttons), &card_of(&p), &document_of(&p, "# x")).await.unwrap();
    let sends = fake.calls("sendMessage");
    assert_eq!(sends.len(), 2, "refused once, then sent");
    assert_eq!(sends[0].body, sends[1].body, "the same request again");
    let waited = sends[1].at.duration_since(sends[0].at);
    assert!(waited >= Duration::from_millis(950), "waited only {waited:?}");
    assert_eq!(delivery.message_id, sent_id(&fake, 1).to_string());
    fake.wait_call("sendDocument", 1, WAIT).await;
    running.stop().await;
}

#[tokio::test]
async fn the_long_poll_waits_out_a_429_backs_off_on_a_409_and_goes_on() {
    let fake = FakeTelegram::start().await;
    let handler = Recorder::new(|_| Reply::None);
    let running = run(config(&fake), handler.clone()).await;
    fake.wait_call("getUpdates", 1, WAIT).await;
    // Taken by the next two polls (the one running now is not affected).
    fake.script("getUpdates", Scripted::RetryAfter(1));
    let conflict = "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running";
    fake.script("getUpdates", Scripted::Error { status: 409, description: conflict.into() });
    fake.wait_request("getUpdates", WAIT, |r| r.status == 409).await;
    fake.push_update(fake.message_update(CHAT, alice(), "/plan status", None));
    handler.wait_seen(1).await;
    let polls = fake.calls("getUpdates");
    let after = |status: u16| {
        let i = polls.iter().position(|p| p.status == status).unwrap();
        polls[i + 1].at.duration_since(polls[i].at)
    };
    assert!(after(429) >= Duration::from_millis(950), "retry_after honoured: next poll after {:?}", after(429));
    assert!(after(409) >= Duration::from_millis(950), "backed off 1 s: next poll after {:?}", after(409));
    running.stop().await;
}

#[tokio::test]
async fn sends_to_one_chat_are_spaced_by_the_per_chat_limit() {
    let fake = FakeTelegram::start().await;
    let config = TelegramConfig { per_chat_per_second: 1, global_per_second: 30, ..config(&fake) };
    let running = run(config, Recorder::new(|_| Reply::None)).await;
    let channel = &running.adapter.channel;
    channel.send_text(&CHAT.to_string(), "one").await.unwrap();
    channel.send_text("42", "elsewhere").await.unwrap();
    channel.send_text(&CHAT.to_string(), "two").await.unwrap();
    let sends = fake.calls("sendMessage");
    let texts: Vec<String> = sends.iter().map(|s| s.str("text")).collect();
    assert_eq!(texts, ["one", "elsewhere", "two"]);
    assert!(sends[1].at.duration_since(sends[0].at) < Duration::from_millis(500), "another chat is not held up");
    assert!(sends[2].at.duration_since(sends[0].at) >= Duration::from_millis(950), "same chat: 1 per second");
    running.stop().await;
}

#[tokio::test]
async fn a_restart_resumes_from_the_saved_cursor() {
    let fake = FakeTelegram::start().await;
    let handler = Recorder::new(|_| Reply::None);
    let first = run(config(&fake), handler.clone()).await;
    let u1 = fake.push_update(fake.message_update(CHAT, alice(), "/plan status", None));
    let u2 = fake.push_update(fake.message_update(CHAT, alice(), "/plan list", None));
    handler.wait_seen(2).await;
    handler.wait_cursor(&(u2 + 1).to_string()).await;
    first.stop().await;
    let polls_before = fake.calls("getUpdates").len();

    // The fake never forgets updates: only the cursor keeps 1 and 2 away.
    let second = run(config(&fake), handler.clone()).await;
    let resumed = fake.wait_call("getUpdates", polls_before + 1, WAIT).await;
    assert_eq!(resumed.field("offset"), &json!(u2 + 1));
    let u3 = fake.push_update(fake.message_update(CHAT, alice(), "/plan view", None));
    handler.wait_seen(3).await;
    handler.wait_cursor(&(u3 + 1).to_string()).await;
    let keys: Vec<String> = handler.seen().iter().map(|e| e.idempotency_key.clone().unwrap()).collect();
    assert_eq!(keys, [u1, u2, u3].map(|u| format!("telegram:update:{u}")));
    second.stop().await;
}

#[tokio::test]
async fn only_the_leader_long_polls_and_each_term_resumes_from_the_saved_offset() {
    let fake = FakeTelegram::start().await;
    let handler = Recorder::new(|_| Reply::None);
    let (lead, leader) = watch::channel(false);
    let (stop, shutdown) = watch::channel(false);
    let adapter = start(config(&fake), handler.clone(), shutdown, leader).await.expect("a follower starts");
    let running = Running { adapter, stop };
    let live = running.adapter.liveness.clone();
    // Start-time calls run on every replica.
    let methods: Vec<String> = fake.requests().iter().map(|r| r.method.clone()).collect();
    assert_eq!(methods, ["getMe", "setMyCommands", "deleteWebhook"]);

    // A follower: an update waits at Telegram, nobody polls, and /readyz is
    // fine. Outbound works on every replica; by the time the fake has
    // answered this send, a poll begun at start would be recorded too.
    let u1 = fake.push_update(fake.message_update(CHAT, alice(), "/plan status", None));
    running.adapter.channel.send_text(&CHAT.to_string(), "from a follower").await.unwrap();
    assert!(fake.calls("getUpdates").is_empty(), "a follower never polls");
    assert!(handler.seen().is_empty());
    assert_eq!(live.status(), Ok(Some(plangate_channel::FOLLOWER)));

    // Elected: a short poll at once, then long polls.
    lead.send_replace(true);
    handler.wait_seen(1).await;
    handler.wait_cursor(&(u1 + 1).to_string()).await;
    let first = &fake.calls("getUpdates")[0];
    assert_eq!(first.field("timeout"), &json!(0), "a takeover starts with a short poll");
    assert!(first.field("offset").is_null(), "nothing saved yet");
    let polls = fake.wait_call("getUpdates", 2, WAIT).await;
    assert_eq!(polls.field("timeout"), &json!(1));
    assert_eq!(polls.field("offset"), &json!(u1 + 1));
    eventually(WAIT, "ready once polled", || std::future::ready(live.status() == Ok(None))).await;

    // Deposed: the poll in flight is dropped and no other one starts.
    lead.send_replace(false);
    eventually(WAIT, "a follower again", || std::future::ready(live.status() == Ok(Some(plangate_channel::FOLLOWER)))).await;
    let deposed = std::time::Instant::now();
    // Pushed while the dropped poll may still wait at the fake: even if the
    // fake answers it, nobody reads the answer.
    let u2 = fake.push_update(fake.message_update(CHAT, alice(), "/plan list", None));
    // The marker: by the time the fake has answered a send of the deposed
    // adapter, a poll it kept or began again would be recorded too.
    running.adapter.channel.send_text(&CHAT.to_string(), "from a deposed leader").await.unwrap();
    let late: Vec<String> = fake.calls("getUpdates").iter().filter(|p| p.at > deposed).map(describe).collect();
    assert!(late.is_empty(), "polled after losing leadership: {late:?}");
    assert_eq!(handler.seen().len(), 1, "u2 is the new leader's");
    assert_eq!(handler.cursor(), Some((u1 + 1).to_string()));

    // Another replica leads meanwhile: it handles u2 and saves the offset.
    handler.save_cursor(CURSOR_KEY, &(u2 + 1).to_string());
    let u3 = fake.push_update(fake.message_update(CHAT, alice(), "/plan view", None));

    // Elected again: resumes from the saved offset, so neither u1 nor u2
    // reaches the server a second time.
    let before = fake.calls("getUpdates").len();
    lead.send_replace(true);
    let resumed = fake.wait_call("getUpdates", before + 1, WAIT).await;
    assert_eq!(resumed.field("offset"), &json!(u2 + 1));
    assert_eq!(resumed.field("timeout"), &json!(0));
    handler.wait_seen(2).await;
    handler.wait_cursor(&(u3 + 1).to_string()).await;
    let keys: Vec<String> = handler.seen().iter().map(|e| e.idempotency_key.clone().unwrap()).collect();
    assert_eq!(keys, [u1, u3].map(|u| format!("telegram:update:{u}")));

    // Shutdown ends the task, whatever the leadership.
    lead.send_replace(false);
    eventually(WAIT, "a follower again", || std::future::ready(live.status() == Ok(Some(plangate_channel::FOLLOWER)))).await;
    running.stop().await;
}

#[tokio::test]
async fn a_follower_that_is_never_elected_still_shuts_down() {
    let fake = FakeTelegram::start().await;
    let handler = Recorder::new(|_| Reply::None);
    // The sender is gone: this replica stays a follower for good.
    let (_, leader) = watch::channel(false);
    let (stop, shutdown) = watch::channel(false);
    let adapter = start(config(&fake), handler, shutdown, leader).await.expect("starts");
    eventually(WAIT, "a follower", || std::future::ready(adapter.liveness.status() == Ok(Some(plangate_channel::FOLLOWER)))).await;
    Running { adapter, stop }.stop().await;
    assert!(fake.calls("getUpdates").is_empty());
}

#[tokio::test]
async fn a_panicking_handler_costs_one_update_not_the_transport() {
    let fake = FakeTelegram::start().await;
    let handler = Recorder::new(|event| match &event.action {
        Action::Command(Parsed { command: PlanCommand::Off, .. }) => panic!("handler bug (expected by this test)"),
        _ => Reply::None,
    });
    let running = run(config(&fake), handler.clone()).await;
    fake.push_update(fake.message_update(CHAT, alice(), "/plan off", None));
    let last = fake.push_update(fake.message_update(CHAT, alice(), "/plan status", None));
    let seen = handler.wait_seen(1).await;
    assert_eq!(seen[0].idempotency_key, Some(format!("telegram:update:{last}")));
    handler.wait_cursor(&(last + 1).to_string()).await;
    running.stop().await;
}

#[tokio::test]
async fn a_feedback_prompt_still_maps_after_a_restart() {
    let fake = FakeTelegram::start().await;
    let handler = Recorder::new(|event| match &event.action {
        Action::Button(Button::RequestChanges(id)) => {
            Reply::AskFeedback { approval_id: *id, version: 1, prompt: "What should change?".into() }
        }
        _ => Reply::None,
    });
    let first = run(config(&fake), handler.clone()).await;
    fake.push_update(fake.callback_update(CHAT, 7, alice(), &encode(Button::RequestChanges(ID))));
    fake.wait_call("sendMessage", 1, WAIT).await;
    let prompt_id = sent_id(&fake, 1);
    handler.wait_seen(1).await;
    first.stop().await;

    let second = run(config(&fake), handler.clone()).await;
    fake.push_update(fake.message_update(CHAT, alice(), "smaller steps", Some(prompt_id)));
    // A reply to a message that is not a prompt of ours maps to nothing.
    let bob = FakeTelegram::user(222, None, "Bob");
    let plain = fake.message_update(CHAT, bob.clone(), "unrelated", None);
    let plain_id = plain["message"]["message_id"].as_i64().unwrap();
    fake.push_update(plain);
    fake.push_update(fake.message_update(CHAT, bob, "reply to a human", Some(plain_id)));
    fake.push_update(fake.message_update(CHAT, alice(), "/plan status", None));
    let seen = handler.wait_seen(3).await;
    assert_eq!(seen[1].action, Action::Feedback { approval_id: ID, text: "smaller steps".into() });
    assert_eq!(seen[2].action, Action::Command(Parsed { command: PlanCommand::Status, target: None }));
    second.stop().await;
}

#[tokio::test]
async fn cancel_asks_for_a_second_tap_and_view_sends_the_document() {
    let fake = FakeTelegram::start().await;
    let handler = Recorder::new(|event| match &event.action {
        Action::Button(Button::Cancel(id)) => {
            Reply::ConfirmCancel { approval_id: *id, version: 1, prompt: "Cancel v1 and leave plan mode?".into() }
        }
        Action::Button(Button::ConfirmCancel(_)) => Reply::Notice("Cancelled v1".into()),
        Action::Button(Button::View(_)) => Reply::Document {
            document: Document { file_name: "plan-add-retries-v1.md".into(), text: "# Add retries\n".into() },
            caption: "Plan v1 <full>".into(),
        },
        _ => Reply::None,
    });
    let running = run(config(&fake), handler.clone()).await;
    let p = proposal("Add retries", &["Read"], DecisionStatus::Pending);
    let delivery = running.adapter.channel.post_card(&destination(Style::Buttons), &card_of(&p), &document_of(&p, "# x")).await.unwrap();
    let card_id: i64 = delivery.message_id.parse().unwrap();

    fake.push_update(fake.callback_update(CHAT, card_id, alice(), &encode(Button::Cancel(ID))));
    let confirm = fake.wait_call("sendMessage", 2, WAIT).await;
    assert_eq!(confirm.str("text"), "Cancel v1 and leave plan mode?");
    assert_eq!(confirm.reply_to(), Some(card_id));
    assert_eq!(confirm.keyboard().unwrap(), vec![vec![("Yes, cancel v1".to_string(), encode(Button::ConfirmCancel(ID)))]]);
    let confirm_id = sent_id(&fake, 2);

    fake.push_update(fake.callback_update(CHAT, confirm_id, alice(), &encode(Button::ConfirmCancel(ID))));
    fake.push_update(fake.callback_update(CHAT, card_id, alice(), &encode(Button::View(ID))));
    let seen = handler.wait_seen(3).await;
    assert_eq!(seen[1].action, Action::Button(Button::ConfirmCancel(ID)));
    let doc = fake.wait_call("sendDocument", 2, WAIT).await;
    assert_eq!(doc.reply_to(), Some(card_id));
    assert_eq!(doc.field("document")["file_name"], "plan-add-retries-v1.md");
    assert_eq!(doc.str("caption"), "Plan v1 &lt;full&gt;");
    let answers: Vec<String> = fake
        .wait_for(WAIT, |reqs| {
            let a: Vec<String> = reqs.iter().filter(|r| r.method == "answerCallbackQuery").map(|r| r.str("text")).collect();
            (a.len() == 3).then_some(a)
        })
        .await;
    assert_eq!(answers, ["", "Cancelled v1", ""], "one answer per click; the Notice is the toast");
    // The confirmation keeps no live button: it is edited to what the tap did.
    let closed = fake.wait_call("editMessageText", 1, WAIT).await;
    assert_eq!(closed.str("message_id"), confirm_id.to_string());
    assert_eq!(closed.str("text"), "Cancelled v1");
    assert_eq!(closed.field("reply_markup"), &json!({"inline_keyboard": []}));
    running.stop().await;
}

#[tokio::test]
async fn edit_has_no_modal_so_a_force_reply_collects_the_steps() {
    let fake = FakeTelegram::start().await;
    let handler = Recorder::new(|event| match &event.action {
        Action::Button(Button::Edit(id)) => {
            Reply::AskEdit { approval_id: *id, version: 1, steps: vec!["Read".into(), "Write <it>".into()] }
        }
        _ => Reply::None,
    });
    let running = run(config(&fake), handler.clone()).await;
    fake.push_update(fake.callback_update(CHAT, 9, alice(), &encode(Button::Edit(ID))));
    let prompt = fake.wait_call("sendMessage", 1, WAIT).await;
    assert_eq!(
        prompt.str("text"),
        format!(
            "<a href=\"tg://user?id={ALICE}\">Alice</a> Reply with the steps of v1 ({}), one per line.\nCurrent steps:\n1. Read\n2. Write &lt;it&gt;",
            plangate_engine::view::short_ref(&ID)
        )
    );
    assert_eq!(prompt.field("reply_markup")["force_reply"], true);
    let prompt_id = sent_id(&fake, 1);
    fake.push_update(fake.message_update(CHAT, alice(), "1. Read the client\n2) Add backoff\n\n- Test it", Some(prompt_id)));
    fake.push_update(fake.message_update(CHAT, alice(), "   \n  - \n", Some(prompt_id)));
    let seen = handler.wait_seen(2).await;
    assert_eq!(
        seen[1].action,
        Action::Edit { approval_id: ID, steps: vec!["Read the client".into(), "Add backoff".into(), "Test it".into()] }
    );
    // No steps: told so, handler not bothered.
    let told = fake.wait_call("sendMessage", 2, WAIT).await;
    assert_eq!(told.str("text"), "Send the steps, one per line.");
    assert_eq!(handler.seen().len(), 2);
    running.stop().await;
}

/// Approve with note…: the optional second step is a ForceReply for the
/// note, and the reply to that recorded prompt approves with it.
#[tokio::test]
async fn approve_with_note_asks_for_the_note_by_force_reply() {
    let fake = FakeTelegram::start().await;
    let handler = Recorder::new(|event| match &event.action {
        Action::Button(Button::ApproveWithNote(id)) => Reply::AskApproval {
            approval_id: *id,
            version: 1,
            steps: vec!["Read".into()],
            prompt: "Approve v1 with a note for the agent.".into(),
        },
        _ => Reply::None,
    });
    let running = run(config(&fake), handler.clone()).await;
    fake.push_update(fake.callback_update(CHAT, 9, alice(), &encode(Button::ApproveWithNote(ID))));
    let prompt = fake.wait_call("sendMessage", 1, WAIT).await;
    assert_eq!(
        prompt.str("text"),
        format!(
            "<a href=\"tg://user?id={ALICE}\">Alice</a> Approve v1 with a note for the agent.\nReply with your note: it goes to the agent with the approval of v1."
        )
    );
    assert_eq!(prompt.field("reply_markup")["force_reply"], true);
    assert_eq!(prompt.field("reply_markup")["input_field_placeholder"], "Your note for the agent");
    let prompt_id = sent_id(&fake, 1);
    fake.push_update(fake.message_update(CHAT, alice(), "  ok, but don't touch the migrations ", Some(prompt_id)));
    let seen = handler.wait_seen(2).await;
    assert_eq!(
        seen[1].action,
        Action::Approve { approval_id: ID, note: Some("ok, but don't touch the migrations".into()), except: vec![] }
    );
    running.stop().await;
}

#[tokio::test]
async fn questions_have_one_button_per_option_and_other_asks_for_text() {
    let fake = FakeTelegram::start().await;
    let handler = Recorder::new(|event| match &event.action {
        Action::Button(Button::AnswerOther(qid)) => {
            Reply::AskAnswer { question_id: *qid, prompt: "Your answer to: which database?".into() }
        }
        Action::AnswerText { .. } => Reply::Notice("Answer sent to demo/s1".into()),
        _ => Reply::None,
    });
    let running = run(config(&fake), handler.clone()).await;
    let mut question = Question {
        question_id: QID,
        session: SessionKey::new("demo", "s1"),
        question: "Which database?".into(),
        options: vec!["Postgres".into(), "SQLite".into()],
        allow_freetext: true,
        asked_at: Timestamp(0),
        status: QuestionStatus::Pending,
        answer: None,
        answered_by: None,
        answered_at: None,
        permission: None,
        stalled: None,
    };
    let channel = &running.adapter.channel;
    let delivery = channel.post_question(&destination(Style::Buttons), &question).await.unwrap();
    let post = fake.wait_call("sendMessage", 1, WAIT).await;
    assert_eq!(post.str("text"), "❓ <b>Question from demo/s1</b>\nWhich database?");
    assert_eq!(
        post.keyboard().unwrap(),
        vec![
            vec![("Postgres".to_string(), encode(Button::Answer(QID, 0)))],
            vec![("SQLite".to_string(), encode(Button::Answer(QID, 1)))],
            vec![("Other…".to_string(), encode(Button::AnswerOther(QID)))],
        ]
    );
    let qmsg: i64 = delivery.message_id.parse().unwrap();
    fake.push_update(fake.callback_update(CHAT, qmsg, alice(), &encode(Button::Answer(QID, 1))));
    fake.push_update(fake.callback_update(CHAT, qmsg, alice(), &encode(Button::AnswerOther(QID))));
    let prompt = fake.wait_call("sendMessage", 2, WAIT).await;
    assert!(prompt.str("text").ends_with(&format!("Reply with your answer (answer #{QID})")));
    assert_eq!(prompt.field("reply_markup")["input_field_placeholder"], "Your answer");
    fake.push_update(fake.message_update(CHAT, alice(), "DuckDB", Some(sent_id(&fake, 2))));
    let seen = handler.wait_seen(3).await;
    assert_eq!(seen[0].action, Action::Button(Button::Answer(QID, 1)));
    assert_eq!(seen[1].action, Action::Button(Button::AnswerOther(QID)));
    assert_eq!(seen[2].action, Action::AnswerText { question_id: QID, text: "DuckDB".into() });

    question.status = QuestionStatus::Answered;
    question.answer = Some("DuckDB".into());
    question.answered_by = Some("telegram:@alice".into());
    channel.update_question(&delivery, &question).await.unwrap();
    let edit = fake.wait_call("editMessageText", 1, WAIT).await;
    assert_eq!(
        edit.str("text"),
        "❓ <b>Question from demo/s1</b>\nWhich database?\n\n<b>✅ Answered by telegram:@\u{2060}alice: </b>DuckDB"
    );
    assert_eq!(edit.field("reply_markup"), &json!({"inline_keyboard": []}));
    running.stop().await;
}

#[tokio::test]
async fn a_nudge_replies_to_the_card_with_the_buttons_while_it_is_open() {
    let fake = FakeTelegram::start().await;
    let running = run(config(&fake), Recorder::new(|_| Reply::None)).await;
    let p = proposal("Add retries", &["Read"], DecisionStatus::Pending);
    let channel = &running.adapter.channel;
    let delivery = channel.post_card(&destination(Style::Buttons), &card_of(&p), &document_of(&p, "# x")).await.unwrap();
    channel.send_nudge(&delivery, &card_of(&p), "⏰ Plan 'Add retries' v1 has waited 10 min for your approval (#111111)").await.unwrap();
    let nudge = fake.wait_call("sendMessage", 2, WAIT).await;
    assert_eq!(nudge.str("text"), "⏰ Plan 'Add retries' v1 has waited 10 min for your approval (#111111)");
    assert_eq!(nudge.reply_to().map(|r| r.to_string()), Some(delivery.message_id.clone()));
    assert_eq!(nudge.keyboard().unwrap(), card_keyboard(ID));
    // Decided: a late reminder carries no buttons.
    let approved = proposal("Add retries", &["Read"], DecisionStatus::Approved);
    channel.send_nudge(&delivery, &card_of(&approved), "⏰ late").await.unwrap();
    assert!(fake.wait_call("sendMessage", 3, WAIT).await.field("reply_markup").is_null());
    running.stop().await;
}
