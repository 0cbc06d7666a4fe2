//! Outbound: what the adapter sends to the fake REST API.

use super::*;

#[tokio::test]
async fn start_registers_plan_with_every_subcommand_in_the_guild() {
    let fake = DiscordFake::start(APP).await;
    let (_stop, shutdown) = watch::channel(false);
    let adapter = start(config(&fake, Transport::Http), Recorder::new(|_| Reply::None), shutdown, always_leader()).await.unwrap();
    assert_eq!(adapter.expected_team.as_deref(), Some(GUILD.to_string().as_str()));
    assert!(adapter.task.is_none(), "no gateway in HTTP mode");
    let requests = fake.requests();
    assert_eq!(
        requests.iter().map(Recorded::line).collect::<Vec<_>>(),
        vec![format!("POST /api/v10/applications/{APP}/guilds/{GUILD}/commands")]
    );
    let command = requests[0].json().unwrap();
    assert_eq!(requests[0].authorization.as_deref(), Some("Bot test-bot-token"));
    assert_eq!(command["name"], "plan");
    let subs: Vec<&str> = command["options"].as_array().unwrap().iter().map(|o| o["name"].as_str().unwrap()).collect();
    assert_eq!(
        subs,
        [
            "help",
            "status",
            "list",
            "view",
            "accept",
            "changes",
            "edit",
            "cancel",
            "answer",
            "on",
            "off",
            "auto",
            "restate",
            "allow",
            "deny",
            "rules",
            "web",
            "pair",
            "approvers"
        ]
    );
    let revise = &command["options"][5];
    assert_eq!(revise["type"], 1);
    assert_eq!(revise["options"][0]["name"], "feedback");
    assert_eq!(revise["options"][0]["required"], true);
    assert_eq!(revise["options"][1]["name"], "target");
    assert_eq!(revise["options"][1]["required"], false);
}

#[tokio::test]
async fn global_registration_without_guild() {
    let fake = DiscordFake::start(APP).await;
    let mut c = config(&fake, Transport::Http);
    c.guild_id = None;
    let (_stop, shutdown) = watch::channel(false);
    let adapter = start(c, Recorder::new(|_| Reply::None), shutdown, always_leader()).await.unwrap();
    assert_eq!(adapter.expected_team, None);
    assert_eq!(fake.requests()[0].line(), format!("POST /api/v10/applications/{APP}/commands"));
}

#[tokio::test]
async fn proposal_posts_embed_buttons_no_mentions_and_the_document() {
    let fake = DiscordFake::start(APP).await;
    let running = run(&fake, config(&fake, Transport::Http), Recorder::new(|_| Reply::None), None).await;
    let channel = running.adapter.channel.clone();
    let delivery = post(&fake, &channel, Style::Buttons).await;

    let requests = fake.message_requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(r.line(), format!("POST /api/v10/channels/{CHANNEL}/messages"));
    assert_eq!(r.authorization.as_deref(), Some("Bot test-bot-token"));
    assert_eq!(
        trimmed(r.json().unwrap()),
        json!({
            "embeds": [card_embed()],
            "allowed_mentions": no_mentions(),
            "components": card_buttons(approval()),
            "attachments": [{"id": 0, "filename": "plan-add-retries-v2.md", "description": null}]
        })
    );
    let files = r.files();
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].name, "files[0]");
    assert_eq!(files[0].file_name.as_deref(), Some("plan-add-retries-v2.md"));
    assert_eq!(files[0].text(), document().text);

    assert_eq!(delivery.channel, "discord");
    assert_eq!(delivery.chat, CHANNEL.to_string());
    assert_eq!(delivery.destination, "ops-dc");
    assert_eq!(delivery.style, Style::Buttons);
    assert!(delivery.message_id.parse::<u64>().unwrap() > 0);
}

#[tokio::test]
async fn update_card_shows_the_receipt_without_buttons_and_is_idempotent() {
    let fake = DiscordFake::start(APP).await;
    let running = run(&fake, config(&fake, Transport::Http), Recorder::new(|_| Reply::None), None).await;
    let channel = running.adapter.channel.clone();
    let delivery = post(&fake, &channel, Style::Buttons).await;
    let done = decided(&card(), DecisionStatus::Approved, "✅ Approved v2 by discord:@alice · 14:02 UTC");
    channel.update_card(&delivery, &done).await.unwrap();
    channel.update_card(&delivery, &done).await.unwrap();
    let edits = fake.wait_for_count(WAIT, "PATCH", "/messages/", 2).await;
    assert_eq!(edits[0].line(), format!("PATCH /api/v10/channels/{CHANNEL}/messages/{}", delivery.message_id));
    let mut embed = card_embed();
    embed["color"] = json!(0x57F287);
    embed["footer"] = json!({"text": "✅ Approved v2 by discord:\\@alice · 14:02 UTC"});
    assert_eq!(edits[0].json().unwrap(), json!({"embeds": [embed], "allowed_mentions": no_mentions(), "components": []}));
    assert_eq!(edits[0].body, edits[1].body, "the same card gives the same edit");
}

#[tokio::test]
async fn nudge_replies_to_the_card_with_buttons() {
    let fake = DiscordFake::start(APP).await;
    let running = run(&fake, config(&fake, Transport::Http), Recorder::new(|_| Reply::None), None).await;
    let channel = running.adapter.channel.clone();
    let delivery = post(&fake, &channel, Style::Buttons).await;
    channel.send_nudge(&delivery, &card(), "⏰ Plan 'Add retries' v2 has waited 10 min for your approval (#a1b2c3)").await.unwrap();
    let posts = fake.wait_for_count(WAIT, "POST", "/messages", 2).await;
    assert_eq!(
        trimmed(posts[1].json().unwrap()),
        json!({
            "content": "⏰ Plan 'Add retries' v2 has waited 10 min for your approval (#a1b2c3)",
            "embeds": [],
            "allowed_mentions": no_mentions(),
            "message_reference": {"type": 0, "message_id": delivery.message_id, "channel_id": CHANNEL.to_string(), "guild_id": null, "fail_if_not_exists": false},
            "components": card_buttons(approval())
        })
    );
}

#[tokio::test]
async fn text_style_has_commands_and_no_components() {
    let fake = DiscordFake::start(APP).await;
    let running = run(&fake, config(&fake, Transport::Http), Recorder::new(|_| Reply::None), None).await;
    let channel = running.adapter.channel.clone();
    let delivery = post(&fake, &channel, Style::Text).await;
    let body = trimmed(fake.message_requests()[0].json().unwrap());
    assert_eq!(
        body["content"],
        "📋 Add retries \\@everyone\ndemo/s1 · v2 · just now · #a1b2c3\n\nMake \\*the\\* client retry.\n\nSteps\n1. ⏳ Add a retry loop\n2. ⏳ Test it\n\nRisks\n• More load\n\nVerification\n• cargo test\n\nReply with one of:\n`/plan accept #a1b2c3`\n`/plan changes #a1b2c3 <what to change>`\n`/plan cancel #a1b2c3`\n`/plan view #a1b2c3`"
    );
    assert_eq!(body["embeds"], json!([]));
    assert!(body.get("components").is_none());
    assert_eq!(body["allowed_mentions"], no_mentions());
    assert_eq!(fake.message_requests()[0].files().len(), 1);
    // The text card's edit drops the commands and shows the receipt.
    channel.update_card(&delivery, &decided(&card(), DecisionStatus::Cancelled, "✖ Cancelled v2 by discord:@alice")).await.unwrap();
    let edit = fake.wait_for_count(WAIT, "PATCH", "/messages/", 1).await.remove(0).json().unwrap();
    assert!(edit["content"].as_str().unwrap().ends_with("• cargo test\n\n✖ Cancelled v2 by discord:\\@alice"), "{edit}");
    assert_eq!(edit["components"], json!([]));
}

#[tokio::test]
async fn a_plan_past_the_embed_limits_is_cut_with_a_note() {
    let fake = DiscordFake::start(APP).await;
    let running = run(&fake, config(&fake, Transport::Http), Recorder::new(|_| Reply::None), None).await;
    let channel = running.adapter.channel.clone();
    let mut big = card();
    big.summary = Some("A long summary line.\n".repeat(400));
    big.steps = (1..=120).map(|n| CardStep { number: n, mark: "⏳", text: format!("Step {n}: {}", "do the thing ".repeat(6)) }).collect();
    big.risks = (0..60).map(|n| format!("Risk {n}")).collect();
    channel.post_card(&destination(Style::Buttons), &big, &document()).await.unwrap();
    let r = fake.wait_for_count(WAIT, "POST", "/messages", 1).await.remove(0);
    let body = r.json().unwrap();
    let embeds = body["embeds"].as_array().unwrap();
    assert_eq!(embeds.len(), 1);
    let embed = &embeds[0];
    assert!(embed_total(embed) <= 6000, "embed total {}", embed_total(embed));
    let description = embed["description"].as_str().unwrap();
    assert!(description.chars().count() <= 4096);
    assert!(description.ends_with("A long summary line.\n… full plan in the attached document"), "cut at a line boundary with the note");
    assert!(embed.get("fields").is_none() || embed["fields"] == json!([]), "nothing after the cut");
    // Steps that overflow a field continue in more fields, and the cut lands in the last one.
    big.summary = None;
    channel.post_card(&destination(Style::Buttons), &big, &document()).await.unwrap();
    let r = fake.wait_for_count(WAIT, "POST", "/messages", 2).await.remove(1);
    let embed = r.json().unwrap()["embeds"][0].clone();
    assert!(embed_total(&embed) <= 6000, "embed total {}", embed_total(&embed));
    let fields = embed["fields"].as_array().unwrap();
    assert_eq!(fields[0]["name"], "Steps");
    assert_eq!(fields[1]["name"], "Steps (cont.)");
    for f in fields {
        let value = f["value"].as_str().unwrap();
        assert!(value.chars().count() <= 1024);
        assert!(
            value.lines().all(|l| l.starts_with(|c: char| c.is_ascii_digit()) || l == "… full plan in the attached document"),
            "whole lines only: {value}"
        );
    }
    assert!(fields.last().unwrap()["value"].as_str().unwrap().ends_with("\n… full plan in the attached document"));
    assert_eq!(r.files().len(), 1, "the document carries everything");
}

#[tokio::test]
async fn a_429_is_waited_out_then_the_card_is_sent() {
    let fake = DiscordFake::start(APP).await;
    let running = run(&fake, config(&fake, Transport::Http), Recorder::new(|_| Reply::None), None).await;
    let channel = running.adapter.channel.clone();
    fake.script_rate_limit("POST", &format!("/api/v10/channels/{CHANNEL}/messages"), 0.4);
    let delivery = channel.post_card(&destination(Style::Buttons), &card(), &document()).await.expect("sent after the 429");
    let posts = fake.wait_for_count(WAIT, "POST", "/messages", 2).await;
    let waited = posts[1].at.duration_since(posts[0].at);
    assert!(waited >= Duration::from_millis(400), "retry_after honoured: waited {waited:?}");
    assert_eq!(posts[0].body, posts[1].body, "the same message again");
    assert!(!delivery.message_id.is_empty());
    // A refusal is not retried and says what Discord said.
    fake.script(
        "PATCH",
        &format!("/api/v10/channels/{CHANNEL}/messages/{}", delivery.message_id),
        403,
        &[],
        json!({"code": 50013, "message": "Missing Permissions"}),
    );
    let err = channel.update_card(&delivery, &card()).await.unwrap_err();
    assert!(matches!(&err, plangate_channel::ChannelError::Forbidden { message, .. } if message.contains("Missing Permissions")), "{err}");
    assert_eq!(fake.wait_for_count(WAIT, "PATCH", "/messages/", 1).await.len(), 1);
}

#[tokio::test]
async fn rate_limiter_keeps_five_per_window_per_channel() {
    let fake = DiscordFake::start(APP).await;
    let mut c = config(&fake, Transport::Http);
    c.per_channel = 2;
    c.per_channel_window_secs = 1;
    let running = run(&fake, c, Recorder::new(|_| Reply::None), None).await;
    let channel = running.adapter.channel.clone();
    for n in 0..3 {
        channel.send_text(&CHANNEL.to_string(), &format!("text {n}")).await.unwrap();
    }
    let posts = fake.wait_for_count(WAIT, "POST", "/messages", 3).await;
    assert!(posts[2].at.duration_since(posts[0].at) >= Duration::from_millis(950), "third send waited for the window");
    assert_eq!(posts[0].json().unwrap()["content"], "text 0");
}

#[tokio::test]
async fn questions_have_option_buttons_other_and_show_the_answer() {
    let fake = DiscordFake::start(APP).await;
    let running = run(&fake, config(&fake, Transport::Http), Recorder::new(|_| Reply::None), None).await;
    let channel = running.adapter.channel.clone();
    let qid = ApprovalId([0x0f; 16]);
    let mut question = Question {
        question_id: qid,
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
    let delivery = channel.post_question(&destination(Style::Buttons), &question).await.unwrap();
    let post = fake.wait_for_count(WAIT, "POST", "/messages", 1).await.remove(0);
    assert_eq!(
        trimmed(post.json().unwrap()),
        json!({
            "content": "❓ **demo/s1 asks:**\nWhich database?\n\n1. Postgres\n2. SQLite",
            "embeds": [],
            "allowed_mentions": no_mentions(),
            "components": [{"type": 1, "components": [
                {"type": 2, "style": 1, "label": "Postgres", "custom_id": encode(Button::Answer(qid, 0))},
                {"type": 2, "style": 1, "label": "SQLite", "custom_id": encode(Button::Answer(qid, 1))},
                {"type": 2, "style": 2, "label": "Other…", "custom_id": encode(Button::AnswerOther(qid))}
            ]}]
        })
    );
    question.status = QuestionStatus::Answered;
    question.answer = Some("SQLite".into());
    question.answered_by = Some("discord:@alice".into());
    channel.update_question(&delivery, &question).await.unwrap();
    let edit = fake.wait_for_count(WAIT, "PATCH", "/messages/", 1).await.remove(0);
    assert_eq!(
        edit.json().unwrap(),
        json!({
            "content": "❓ **demo/s1 asks:**\nWhich database?\n\n1. Postgres\n2. SQLite\n\n✅ Answered by discord:\\@alice: SQLite",
            "allowed_mentions": no_mentions(),
            "components": []
        })
    );
}

#[tokio::test]
async fn send_document_and_text() {
    let fake = DiscordFake::start(APP).await;
    let running = run(&fake, config(&fake, Transport::Http), Recorder::new(|_| Reply::None), None).await;
    let channel = running.adapter.channel.clone();
    channel.send_document(&CHANNEL.to_string(), Some("123"), &document()).await.unwrap();
    channel.send_text(&CHANNEL.to_string(), &format!("@here {}", "line\n".repeat(500))).await.unwrap();
    let posts = fake.wait_for_count(WAIT, "POST", "/messages", 2).await;
    assert_eq!(posts[0].files()[0].file_name.as_deref(), Some("plan-add-retries-v2.md"));
    assert_eq!(posts[0].json().unwrap()["message_reference"]["message_id"], "123");
    let text = posts[1].json().unwrap()["content"].as_str().unwrap().to_string();
    assert!(text.starts_with("\\@here line\n"));
    assert!(text.chars().count() <= 2000 && text.ends_with("\n…"));
    assert_eq!(
        channel.send_text("general", "x").await.unwrap_err().to_string(),
        "discord refused the request: channel \"general\" is not a Discord id"
    );
}

#[tokio::test]
async fn a_card_under_another_references_it_with_its_document() {
    let fake = DiscordFake::start(APP).await;
    let running = run(&fake, config(&fake, Transport::Http), Recorder::new(|_| Reply::None), None).await;
    let channel = running.adapter.channel.clone();
    let parent = post(&fake, &channel, Style::Buttons).await;
    let child = channel.post_card_under(&parent, &destination(Style::Buttons), &card(), &document()).await.expect("posted under");
    let posts = fake.wait_for_count(WAIT, "POST", "/messages", 2).await;
    let body = trimmed(posts[1].json().unwrap());
    assert_eq!(
        body["message_reference"],
        json!({"type": 0, "message_id": parent.message_id, "channel_id": CHANNEL.to_string(), "guild_id": null, "fail_if_not_exists": false})
    );
    assert_eq!(body["components"], card_buttons(approval()), "the card's own buttons");
    assert_eq!((child.chat.as_str(), child.destination.as_str()), (parent.chat.as_str(), parent.destination.as_str()));
    assert_ne!(child.message_id, parent.message_id);
}
