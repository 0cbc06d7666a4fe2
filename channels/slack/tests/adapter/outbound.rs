//! Outbound: what the adapter sends to the fake Web API.

use super::*;

#[tokio::test]
async fn proposal_posts_the_block_kit_card_then_uploads_the_document_into_its_thread() {
    let h = harness(Transport::Http, |_| Reply::None).await;
    let id = aid(0xab);
    let card = open_card(id, &["Read the client", "Add backoff"]);
    let delivery = h.channel().post_card(&destination(Style::Buttons), &card, &document()).await.unwrap();

    let log = h.fake.requests();
    let seq: Vec<&str> = log.iter().map(|r| r.api.as_str()).collect();
    assert_eq!(seq, ["chat.postMessage", "files.getUploadURLExternal", "upload", "files.completeUploadExternal"]);

    let post = &log[0];
    assert_eq!(post.http_method, "POST");
    assert_eq!(post.header("authorization"), Some("Bearer xoxb-test-bot"));
    let ts = "1700000000.000001";
    assert_eq!(
        post.json(),
        &json!({
            "channel": "C1",
            "text": "Plan for approval: Add retries #ababab (demo/s1 · v1 · just now)",
            "unfurl_links": false,
            "unfurl_media": false,
            "blocks": [
                {"type": "header", "text": literal("Add retries")},
                {"type": "context", "elements": [literal("demo/s1 · v1 · just now · #ababab")]},
                plain("Make the client resilient."),
                plain("Steps\n1. ○ Read the client\n2. ○ Add backoff"),
                plain("Risks\n• flaky tests"),
                plain("Verification\n• cargo test"),
                card_actions_json(id),
            ],
        })
    );

    let get_url = &log[1];
    assert_eq!(get_url.http_method, "GET");
    assert_eq!(get_url.query("filename"), Some("plan-add-retries-v1.md"));
    assert_eq!(get_url.query("length"), Some(document().text.len().to_string().as_str()));

    let upload = &log[2];
    assert_eq!(upload.path, "/upload/F2");
    assert_eq!(upload.header("content-type"), Some("text/markdown"));
    assert_eq!(upload.bytes(), document().text.as_bytes());

    assert_eq!(log[3].json(), &json!({"files": [{"id": "F2", "title": "plan-add-retries-v1.md"}], "channel_id": "C1", "thread_ts": ts}));
    assert_eq!(
        delivery,
        Delivery {
            destination: "ops-slack".into(),
            channel: "slack".into(),
            chat: "C1".into(),
            message_id: ts.into(),
            thread: None,
            style: Style::Buttons
        }
    );
}

#[tokio::test]
async fn text_style_cards_show_the_commands_instead_of_buttons() {
    let h = harness(Transport::Http, |_| Reply::None).await;
    let card = open_card(aid(1), &["one"]);
    h.channel().post_card(&destination(Style::Text), &card, &document()).await.unwrap();
    let post = &h.fake.calls("chat.postMessage")[0];
    let blocks = post.json()["blocks"].as_array().unwrap();
    assert!(blocks.iter().all(|b| b["type"] != "actions"), "{blocks:?}");
    assert_eq!(
        blocks.last().unwrap(),
        &section("Reply with one of:\n`/plan accept #010101`\n`/plan changes #010101 &lt;what to change&gt;`\n`/plan cancel #010101`\n`/plan view #010101`")
    );
}

#[tokio::test]
async fn a_failed_upload_does_not_fail_the_posted_card() {
    let h = harness(Transport::Http, |_| Reply::None).await;
    h.fake.script("files.getUploadURLExternal", Scripted::error("missing_scope"));
    let delivery = h.channel().post_card(&destination(Style::Buttons), &open_card(aid(18), &["one"]), &document()).await.unwrap();
    assert_eq!(delivery.message_id, "1700000000.000001");
    assert_eq!(h.fake.sequence(), ["chat.postMessage", "files.getUploadURLExternal"]);
    // View plan sends it later on demand, into the thread.
    h.channel().send_document("C1", Some(&delivery.message_id), &document()).await.unwrap();
    assert_eq!(h.fake.calls("files.completeUploadExternal")[0].json()["thread_ts"], delivery.message_id.as_str());
}

#[tokio::test]
async fn update_card_turns_the_card_into_its_receipt_without_buttons() {
    let h = harness(Transport::Http, |_| Reply::None).await;
    let card = open_card(aid(2), &["one"]);
    let delivery = h.channel().post_card(&destination(Style::Buttons), &card, &document()).await.unwrap();
    let receipt = "✅ Approved v1 by slack:@alice · 14:02 UTC";
    h.channel().update_card(&delivery, &decided(&card, DecisionStatus::Approved, receipt)).await.unwrap();
    let update = &h.fake.calls("chat.update")[0];
    assert_eq!(update.json()["channel"], "C1");
    assert_eq!(update.json()["ts"], delivery.message_id.as_str());
    assert_eq!(update.json()["text"], format!("Add retries #020202: {receipt}"));
    let blocks = update.json()["blocks"].as_array().unwrap();
    assert!(blocks.iter().all(|b| b["type"] != "actions"));
    assert_eq!(blocks.last().unwrap(), &plain(receipt));
    assert_eq!(blocks[0]["type"], "header");
}

#[tokio::test]
async fn nudges_go_into_the_cards_thread_with_the_buttons_while_open() {
    let h = harness(Transport::Http, |_| Reply::None).await;
    let card = open_card(aid(3), &["one"]);
    let delivery = h.channel().post_card(&destination(Style::Buttons), &card, &document()).await.unwrap();
    let text = "⏰ Plan 'Add retries' v1 has waited 10 min for your approval (#030303)";
    h.channel().send_nudge(&delivery, &card, text).await.unwrap();
    let nudge = &h.fake.calls("chat.postMessage")[1];
    assert_eq!(nudge.json()["thread_ts"], delivery.message_id.as_str());
    assert_eq!(nudge.json()["channel"], "C1");
    assert_eq!(nudge.json()["blocks"], json!([plain(text), card_actions_json(aid(3))]));
    // A decided card is nudged without buttons.
    h.channel().send_nudge(&delivery, &decided(&card, DecisionStatus::Approved, "done"), text).await.unwrap();
    assert_eq!(h.fake.calls("chat.postMessage")[2].json()["blocks"], json!([plain(text)]));
}

#[tokio::test]
async fn a_long_plan_is_split_into_sections_and_cut_at_fifty_blocks() {
    let h = harness(Transport::Http, |_| Reply::None).await;
    // 40 steps of ~100 chars: > 3,000 characters, fewer than 50 blocks.
    let medium: Vec<String> = (0..40).map(|i| format!("step {i} {}", "m".repeat(92))).collect();
    let medium_refs: Vec<&str> = medium.iter().map(String::as_str).collect();
    h.channel().post_card(&destination(Style::Buttons), &open_card(aid(4), &medium_refs), &document()).await.unwrap();
    let blocks = h.fake.calls("chat.postMessage")[0].json()["blocks"].as_array().unwrap().clone();
    let step_sections: Vec<&str> = blocks.iter().filter_map(|b| b["text"]["text"].as_str()).filter(|t| t.contains("○ step")).collect();
    assert_eq!(step_sections.len(), 2, "{step_sections:#?}");
    assert!(step_sections.iter().all(|t| t.chars().count() <= 3000));
    let lines: Vec<&str> = step_sections.iter().flat_map(|t| t.lines()).filter(|l| *l != "Steps").collect();
    assert_eq!(lines.len(), 40, "every step is shown, each line whole");
    assert!(lines.iter().enumerate().all(|(i, l)| l.starts_with(&format!("{}. ○ step {i} ", i + 1))));
    assert!(!blocks.iter().any(|b| b["text"]["text"].as_str().is_some_and(|t| t.contains("full plan"))));

    // 400 steps of ~400 chars: far more than 50 sections.
    let long: Vec<String> = (0..400).map(|i| format!("step {i} {}", "l".repeat(392))).collect();
    let long_refs: Vec<&str> = long.iter().map(String::as_str).collect();
    h.channel().post_card(&destination(Style::Buttons), &open_card(aid(5), &long_refs), &document()).await.unwrap();
    let blocks = h.fake.calls("chat.postMessage")[1].json()["blocks"].as_array().unwrap().clone();
    assert_eq!(blocks.len(), 50);
    assert_eq!(blocks[48], section("_… full plan in the attached document_"));
    assert_eq!(blocks[49], card_actions_json(aid(5)));
    let mut texts = Vec::new();
    all_texts(&Value::Array(blocks.clone()), &mut texts);
    assert!(texts.iter().all(|t| t.chars().count() <= 3000));
    // The document still goes with it.
    assert_eq!(h.fake.calls("files.completeUploadExternal").len(), 2);
}

#[tokio::test]
async fn mentions_in_agent_text_are_neutralized() {
    let h = harness(Transport::Http, |_| Reply::None).await;
    let mut card = open_card(aid(6), &["ping <!channel> & <@U999> then <!here>", "<https://evil.example|click>"]);
    card.summary = Some("<!everyone> look".into());
    card.risks = vec!["<#C42> leaks".into()];
    card.warning = Some("⚠ hidden <!channel>".into());
    h.channel().post_card(&destination(Style::Buttons), &card, &document()).await.unwrap();
    let post = h.fake.calls("chat.postMessage")[0].json().clone();
    // No mrkdwn text (nor the notification text) carries a mention or link.
    let mut texts = vec![post["text"].as_str().unwrap().to_string()];
    mrkdwn_texts(&post["blocks"], &mut texts);
    for t in &texts {
        for raw in ["<!channel>", "<!here>", "<!everyone>", "<@U999>", "<#C42>", "<https://"] {
            assert!(!t.contains(raw), "{raw} reached Slack as mrkdwn in {t:?}");
        }
    }
    // The agent's words are plain_text, which Slack never parses for
    // mentions or links: shown exactly as written.
    let blocks = post["blocks"].as_array().unwrap();
    assert_eq!(blocks[2], plain("<!everyone> look"));
    assert_eq!(blocks[3], plain("Steps\n1. ○ ping <!channel> & <@U999> then <!here>\n2. ○ <https://evil.example|click>"));
    assert_eq!(blocks[4], plain("Risks\n• <#C42> leaks"));
    assert_eq!(blocks[6], plain("⚠ hidden <!channel>"));
    assert_eq!(post["blocks"][0]["text"], literal("Add retries"));
}

#[tokio::test]
async fn agent_formatting_is_shown_verbatim_not_as_mrkdwn() {
    let h = harness(Transport::Http, |_| Reply::None).await;
    let id = aid(0x1f);
    let mut card = open_card(id, &["*Approved by @alice*", "_it_ ~strike~ `code` ```block```"]);
    card.title = "*Approved by @alice* <!channel>".into();
    card.context = "demo/s_1 · v1 · just now".into();
    card.summary = Some("> *Approved by @alice*\n:white_check_mark: <https://evil.example|Approve>".into());
    card.risks = vec![];
    card.verification = vec![];
    card.assumptions = vec!["& <> &amp;".into()];
    h.channel().post_card(&destination(Style::Buttons), &card, &document()).await.unwrap();
    let post = h.fake.calls("chat.postMessage")[0].json().clone();
    let mut actions = card_actions_json(id);
    actions["elements"][4]["confirm"]["text"] = literal(&format!(
        "This cancels “*Approved by @alice* <!channel>” #{}. Its session stays blocked (read-only) until a new plan is approved.",
        id.short()
    ));
    assert_eq!(
        post,
        json!({
            "channel": "C1",
            "text": format!("Plan for approval: ∗Approved by @alice∗ &lt;!channel&gt; #{} (demo/sˍ1 · v1 · just now)", id.short()),
            "unfurl_links": false,
            "unfurl_media": false,
            "blocks": [
                {"type": "header", "text": literal("*Approved by @alice* <!channel>")},
                {"type": "context", "elements": [literal(&format!("demo/s_1 · v1 · just now · #{}", id.short()))]},
                plain("> *Approved by @alice*\n:white_check_mark: <https://evil.example|Approve>"),
                plain("Steps\n1. ○ *Approved by @alice*\n2. ○ _it_ ~strike~ `code` ```block```"),
                plain("Assumptions\n• & <> &amp;"),
                actions,
            ],
        })
    );
    // The receipt quotes the decider's feedback: verbatim too; the
    // notification text is escaped.
    let delivery = Delivery::posted(&destination(Style::Buttons), "C1", "1700000000.000001");
    let receipt = "✏️ Changes requested on v1 by slack:@bob: *Approved by @alice* <!here>";
    h.channel().update_card(&delivery, &decided(&card, DecisionStatus::Rejected, receipt)).await.unwrap();
    let update = h.fake.calls("chat.update")[0].json().clone();
    assert_eq!(update["blocks"].as_array().unwrap().last().unwrap(), &plain(receipt));
    assert_eq!(
        update["text"],
        format!(
            "∗Approved by @alice∗ &lt;!channel&gt; #{}: ✏️ Changes requested on v1 by slack:@bob: ∗Approved by @alice∗ &lt;!here&gt;",
            id.short()
        )
    );
}

#[tokio::test]
async fn a_429_is_waited_out_as_retry_after_says_then_the_send_succeeds() {
    let h = harness(Transport::Http, |_| Reply::None).await;
    h.fake.script("chat.postMessage", Scripted::rate_limited(1));
    let started = Instant::now();
    let delivery = h.channel().post_card(&destination(Style::Buttons), &open_card(aid(7), &["one"]), &document()).await.unwrap();
    assert!(started.elapsed() >= Duration::from_secs(1), "Retry-After was not honoured: {:?}", started.elapsed());
    let posts = h.fake.calls("chat.postMessage");
    assert_eq!(posts.len(), 2);
    assert_eq!(posts[0].json(), posts[1].json(), "the same message is sent again");
    assert_eq!(delivery.message_id, "1700000000.000001");

    // A Retry-After longer than the policy allows is reported, not slept on.
    h.fake.script("chat.update", Scripted::rate_limited(3600));
    let err = h.channel().update_card(&delivery, &open_card(aid(7), &["one"])).await.unwrap_err();
    assert!(
        matches!(err, ChannelError::RateLimited { platform: "slack", retry_after } if retry_after == Duration::from_secs(3600)),
        "{err:?}"
    );
    // Refusals are errors, not retried.
    h.fake.script("chat.postMessage", Scripted::error("channel_not_found"));
    let err = h.channel().send_text("CNOPE", "hi").await.unwrap_err();
    assert!(matches!(&err, ChannelError::NotFound { message, .. } if message == "channel_not_found"), "{err:?}");
    assert_eq!(h.fake.calls("chat.postMessage").len(), 3);
}

#[tokio::test]
async fn messages_to_one_channel_are_paced_at_one_per_second() {
    let h = harness_with(Transport::Http, |c| c.per_channel_per_second = 1, |_| Reply::None).await;
    let started = Instant::now();
    h.channel().send_text("C1", "first").await.unwrap();
    h.channel().send_text("C2", "other channel, not held up").await.unwrap();
    assert!(started.elapsed() < Duration::from_millis(900));
    h.channel().send_text("C1", "second").await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(950), "{:?}", started.elapsed());
    assert_eq!(h.fake.calls("chat.postMessage").len(), 3);
}

#[tokio::test]
async fn questions_get_one_button_per_option_and_show_the_answer_afterwards() {
    let h = harness(Transport::Http, |_| Reply::None).await;
    let qid = aid(8);
    let mut q = Question {
        question_id: qid,
        session: SessionKey::new("demo", "s1"),
        question: "Which DB <!here>?".into(),
        options: vec!["sled".into(), "postgres".into()],
        allow_freetext: true,
        asked_at: Timestamp(0),
        status: QuestionStatus::Pending,
        answer: None,
        answered_by: None,
        answered_at: None,
        permission: None,
        stalled: None,
    };
    let delivery = h.channel().post_question(&destination(Style::Buttons), &q).await.unwrap();
    let post = h.fake.calls("chat.postMessage")[0].json().clone();
    assert_eq!(
        post["blocks"],
        json!([
            plain("❓ demo/s1 asks:\nWhich DB <!here>?"),
            {"type": "actions", "block_id": "plangate_actions", "elements": [
                option_json("sled", Button::Answer(qid, 0)),
                option_json("postgres", Button::Answer(qid, 1)),
                button_json("Other…", Button::AnswerOther(qid)),
            ]},
        ])
    );
    q.status = QuestionStatus::Answered;
    q.answer = Some("sled".into());
    q.answered_by = Some("slack:@alice".into());
    h.channel().update_question(&delivery, &q).await.unwrap();
    let update = h.fake.calls("chat.update")[0].json().clone();
    assert_eq!(update["ts"], delivery.message_id.as_str());
    assert_eq!(update["blocks"], json!([plain("❓ demo/s1 asks:\nWhich DB <!here>?"), plain("✅ Answered by slack:@alice: sled")]));
}

#[tokio::test]
async fn a_card_under_another_goes_into_its_thread_and_so_do_its_reminders() {
    let h = harness(Transport::Http, |_| Reply::None).await;
    let parent = h.channel().post_card(&destination(Style::Buttons), &open_card(aid(5), &["one"]), &document()).await.unwrap();
    let child_card = open_card(aid(6), &["one", "two"]);
    let child = h.channel().post_card_under(&parent, &destination(Style::Buttons), &child_card, &document()).await.unwrap();
    let posts = h.fake.calls("chat.postMessage");
    assert_eq!(posts[1].json()["thread_ts"], parent.message_id.as_str());
    assert_eq!(posts[1].json()["channel"], "C1");
    assert_eq!(child.thread.as_deref(), Some(parent.message_id.as_str()));
    assert_ne!(child.message_id, parent.message_id);
    h.channel().send_nudge(&child, &child_card, "⏰ waiting").await.unwrap();
    assert_eq!(h.fake.calls("chat.postMessage")[2].json()["thread_ts"], parent.message_id.as_str(), "one thread, not a thread of a reply");
}
