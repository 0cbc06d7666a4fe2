//! Inbound over a webhook instead of long polling.

use super::*;

fn webhook_config(fake: &FakeTelegram, secret: Option<&str>) -> TelegramConfig {
    TelegramConfig {
        transport: Transport::Webhook,
        webhook_secret: secret.map(|s| SecretString::new(s.to_string())),
        webhook_url: Some("https://plangate.example.org/telegram/webhook".into()),
        ..config(fake)
    }
}

#[tokio::test]
async fn webhook_mode_requires_a_secret() {
    let fake = FakeTelegram::start().await;
    let (_stop, shutdown) = watch::channel(false);
    let result = start(webhook_config(&fake, None), Recorder::new(|_| Reply::None), shutdown, always_leader()).await;
    match result {
        Err(TelegramError::Config(ConfigError { key, .. })) => assert_eq!(key, "telegram.webhook_secret"),
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("started without a webhook secret"),
    }
    assert!(fake.requests().is_empty(), "refused before talking to Telegram");
}

#[tokio::test]
async fn webhook_refuses_wrong_or_missing_secrets_before_parsing() {
    const SECRET: &str = "s3cret-Token_0123456789";
    let fake = FakeTelegram::start().await;
    let handler = Recorder::new(|event| match event.action {
        Action::Button(Button::Approve(_)) => Reply::Notice("Approved v1".into()),
        _ => Reply::None,
    });
    let running = run(webhook_config(&fake, Some(SECRET)), handler.clone()).await;
    assert!(running.adapter.task.is_none());
    assert_eq!(SECRET_HEADER, "x-telegram-bot-api-secret-token");
    let set = fake.wait_call("setWebhook", 1, WAIT).await;
    assert_eq!(set.str("url"), "https://plangate.example.org/telegram/webhook");
    assert_eq!(set.str("secret_token"), SECRET);
    assert_eq!(set.field("allowed_updates"), &json!(["message", "callback_query"]));

    let routes = running.adapter.routes.clone().expect("webhook route");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}{WEBHOOK_PATH}", listener.local_addr().unwrap());
    let server = tokio::spawn(async move { axum::serve(listener, routes).await });

    let click = fake.callback_update(CHAT, 5, alice(), &encode(Button::Approve(ID)));
    let mut update = click.clone();
    update["update_id"] = json!(77);
    assert_eq!(fake.deliver_webhook(&url, None, &update).await, 401);
    assert_eq!(fake.deliver_webhook(&url, Some("s3cret-Token_0123456788"), &update).await, 401);
    assert_eq!(fake.deliver_webhook(&url, Some(&format!("{SECRET}x")), &update).await, 401);
    assert_eq!(fake.deliver_webhook(&url, Some(""), &update).await, 401);
    // Not even a body that is not JSON gets past the check to be parsed (400).
    assert_eq!(fake.deliver_webhook(&url, Some("wrong"), &json!("not an update")).await, 401);
    assert!(handler.seen().is_empty(), "the handler is never called without the secret");
    assert!(fake.calls("answerCallbackQuery").is_empty());

    assert_eq!(fake.deliver_webhook(&url, Some(SECRET), &json!("not an update")).await, 400);
    assert_eq!(fake.deliver_webhook(&url, Some(SECRET), &update).await, 200);
    let seen = handler.seen();
    assert_eq!(seen.len(), 1, "handled before the 200");
    assert_eq!(seen[0].action, Action::Button(Button::Approve(ID)));
    assert_eq!(seen[0].idempotency_key.as_deref(), Some("telegram:update:77"));
    assert_eq!(fake.wait_call("answerCallbackQuery", 1, WAIT).await.str("text"), "Approved v1");
    assert!(fake.calls("getUpdates").is_empty(), "no polling in webhook mode");
    server.abort();
    running.stop().await;
}

#[tokio::test]
async fn a_bad_token_fails_at_start_without_leaking_it() {
    let fake = FakeTelegram::start().await;
    let config = TelegramConfig { token: SecretString::new("999:WRONG-secret-token".into()), ..config(&fake) };
    let (_stop, shutdown) = watch::channel(false);
    let error = match start(config, Recorder::new(|_| Reply::None), shutdown, always_leader()).await {
        Err(e) => e,
        Ok(_) => panic!("started with a wrong token"),
    };
    let shown = error.to_string();
    assert!(shown.contains("getMe"), "{shown}");
    assert!(!shown.contains("WRONG-secret-token"), "{shown}");
}

/// Security: a reply is matched to a prompt only by the message ids plangate
/// recorded, never by text. An agent's question that ends like a prompt's tag
/// line (`(edit #<id>)`) must not turn a person's reply into an edit.
#[tokio::test]
async fn a_reply_to_agent_text_that_mimics_a_prompt_tag_is_not_a_prompt() {
    let fake = FakeTelegram::start().await;
    let handler = Recorder::new(|_| Reply::None);
    let running = run(config(&fake), handler.clone()).await;
    let question = Question {
        question_id: QID,
        session: SessionKey::new("demo", "s1"),
        question: format!("Which database?\nReply with the steps of v1, one per line (edit #{ID})"),
        options: vec![],
        allow_freetext: true,
        asked_at: Timestamp(0),
        status: QuestionStatus::Pending,
        answer: None,
        answered_by: None,
        answered_at: None,
        permission: None,
        stalled: None,
    };
    let delivery = running.adapter.channel.post_question(&destination(Style::Buttons), &question).await.unwrap();
    let posted = fake.wait_call("sendMessage", 1, WAIT).await;
    assert!(posted.str("text").trim_end().ends_with(&format!("(edit #{ID})")), "{}", posted.str("text"));
    let qmsg: i64 = delivery.message_id.parse().unwrap();
    fake.push_update(fake.message_update(CHAT, alice(), "Postgres", Some(qmsg)));
    fake.push_update(fake.message_update(CHAT, alice(), "/plan status", None));
    let seen = handler.wait_seen(1).await;
    assert_eq!(seen[0].action, Action::Command(Parsed { command: PlanCommand::Status, target: None }), "{seen:?}");
    assert!(handler.cursors.lock().unwrap().keys().all(|k| !k.starts_with("telegram:prompt:")), "nothing was recorded as a prompt");
    running.stop().await;
}
