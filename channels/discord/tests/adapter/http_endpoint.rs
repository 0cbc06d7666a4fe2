//! Inbound over the signed interactions endpoint.

use super::*;

fn sign(key: &SigningKey, timestamp: &str, body: &[u8]) -> String {
    let mut message = timestamp.as_bytes().to_vec();
    message.extend_from_slice(body);
    hex::encode(key.sign(&message).to_bytes())
}

struct Http {
    url: String,
    key: SigningKey,
    clock: Arc<ManualClock>,
    client: reqwest::Client,
}

impl Http {
    async fn send(&self, body: &Value) -> reqwest::Response {
        let body = body.to_string();
        let timestamp = self.clock.unix_secs().to_string();
        let signature = sign(&self.key, &timestamp, body.as_bytes());
        self.raw(&signature, &timestamp, body).await
    }

    async fn raw(&self, signature: &str, timestamp: &str, body: String) -> reqwest::Response {
        self.client
            .post(&self.url)
            .header("x-signature-ed25519", signature)
            .header("x-signature-timestamp", timestamp)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap()
    }
}

async fn http_endpoint(fake: &DiscordFake, handler: Arc<Recorder>, defer_after_ms: u64) -> (Running, Http) {
    let clock = Arc::new(ManualClock::at_secs(1_760_000_000));
    let mut c = config(fake, Transport::Http);
    c.defer_after_ms = defer_after_ms;
    let running = run(fake, c, handler, Some(clock.clone())).await;
    let http = Http {
        url: running.endpoint.clone().unwrap(),
        key: SigningKey::from_bytes(&SEED),
        clock,
        client: reqwest::Client::builder().no_proxy().build().unwrap(),
    };
    (running, http)
}

#[tokio::test]
async fn http_ping_and_signed_approve() {
    let fake = DiscordFake::start(APP).await;
    let handler = Recorder::new(|_| Reply::Notice("✅ Approved v2".into()));
    let (_running, http) = http_endpoint(&fake, handler.clone(), 2000).await;

    let pong = http.send(&fake::ping_interaction(1, APP)).await;
    assert_eq!(pong.status(), 200);
    assert_eq!(pong.json::<Value>().await.unwrap()["type"], 1);

    let click = fake::component_interaction(9301, "tok-http", APP, &alice(), 42, &encode(Button::Approve(approval())));
    let response = http.send(&click).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        json!({"type": 4, "data": {"content": "✅ Approved v2", "allowed_mentions": no_mentions(), "flags": 64, "attachments": []}})
    );
    assert_eq!(handler.events(), vec![inbound(Action::Button(Button::Approve(approval())), 9301)]);
    assert!(fake.requests().is_empty(), "the answer rides in the HTTP response; no REST call");

    // The same signed request again (a replay) is refused without reaching the server.
    let replay = http.send(&click).await;
    assert_eq!(replay.status(), 409);
    assert_eq!(handler.events().len(), 1);
}

#[tokio::test]
async fn http_refuses_bad_signatures_before_parsing() {
    let fake = DiscordFake::start(APP).await;
    let handler = Recorder::new(|_| Reply::Notice("ok".into()));
    let (_running, http) = http_endpoint(&fake, handler.clone(), 2000).await;
    let body = fake::component_interaction(9400, "tok", APP, &alice(), 42, &encode(Button::Approve(approval()))).to_string();
    let ts = http.clock.unix_secs().to_string();
    let good = sign(&http.key, &ts, body.as_bytes());

    // Wrong key.
    let other = SigningKey::from_bytes(&[9; 32]);
    assert_eq!(http.raw(&sign(&other, &ts, body.as_bytes()), &ts, body.clone()).await.status(), 401);
    // A flipped bit.
    let mut flipped = hex::decode(&good).unwrap();
    flipped[10] ^= 1;
    assert_eq!(http.raw(&hex::encode(&flipped), &ts, body.clone()).await.status(), 401);
    // Non-canonical S (S + L): the same signature in a malleated encoding.
    const L: [u8; 32] = [
        0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0x10,
    ];
    let mut malleated = hex::decode(&good).unwrap();
    let mut carry = 0u16;
    for i in 0..32 {
        let sum = u16::from(malleated[32 + i]) + u16::from(L[i]) + carry;
        malleated[32 + i] = sum as u8;
        carry = sum >> 8;
    }
    assert_eq!(carry, 0);
    assert_eq!(http.raw(&hex::encode(&malleated), &ts, body.clone()).await.status(), 401);
    // Signed body, different body.
    assert_eq!(http.raw(&good, &ts, body.replace("9400", "9401")).await.status(), 401);
    // Signature for another timestamp.
    assert_eq!(http.raw(&good, &(http.clock.unix_secs() + 1).to_string(), body.clone()).await.status(), 401);
    // Missing headers, malformed hex, uppercase-tolerant but not sign-tolerant.
    let bare = http.client.post(&http.url).body(body.clone()).send().await.unwrap();
    assert_eq!(bare.status(), 401);
    assert_eq!(http.raw(&format!("+{}", &good[1..]), &ts, body.clone()).await.status(), 401);
    assert_eq!(http.raw(&good[..126], &ts, body.clone()).await.status(), 401);
    // A validly signed body that is not an interaction: 400, and still nothing reaches the server.
    let junk = "{\"type\": 99}".to_string();
    assert_eq!(http.raw(&sign(&http.key, &ts, junk.as_bytes()), &ts, junk).await.status(), 400);
    assert!(handler.events().is_empty());
    // And the genuine request passes.
    assert_eq!(http.raw(&good, &ts, body).await.status(), 200);
    assert_eq!(handler.events().len(), 1);
}

#[tokio::test]
async fn http_refuses_stale_and_future_timestamps() {
    let fake = DiscordFake::start(APP).await;
    let handler = Recorder::new(|_| Reply::Notice("ok".into()));
    let (_running, http) = http_endpoint(&fake, handler.clone(), 2000).await;
    let now = http.clock.unix_secs();
    let body = |id: u64| fake::component_interaction(id, "tok", APP, &alice(), 42, &encode(Button::Approve(approval()))).to_string();
    for (id, ts) in [(1u64, now - 301), (2, now + 301), (3, now - 100_000)] {
        let b = body(id);
        let response = http.raw(&sign(&http.key, &ts.to_string(), b.as_bytes()), &ts.to_string(), b).await;
        assert_eq!(response.status(), 401, "timestamp {ts} vs now {now}");
    }
    for (id, ts) in [(4u64, now - 299), (5, now + 299)] {
        let b = body(id);
        assert_eq!(http.raw(&sign(&http.key, &ts.to_string(), b.as_bytes()), &ts.to_string(), b).await.status(), 200);
    }
    assert_eq!(handler.events().len(), 2);
    // A captured request replayed later is refused for its age (after the id cache too).
    let b = body(6);
    let signature = sign(&http.key, &now.to_string(), b.as_bytes());
    assert_eq!(http.raw(&signature, &now.to_string(), b.clone()).await.status(), 200);
    http.clock.advance(400_000);
    assert_eq!(http.raw(&signature, &now.to_string(), b).await.status(), 401);
    assert_eq!(handler.events().len(), 3);
}

#[tokio::test]
async fn http_revise_via_modal_submit() {
    let fake = DiscordFake::start(APP).await;
    let id = approval();
    let handler = Recorder::new(move |e| match &e.action {
        Action::Button(Button::RequestChanges(a)) => {
            Reply::AskFeedback { approval_id: *a, version: 2, prompt: "What should change?".into() }
        }
        Action::Feedback { .. } => Reply::Notice("✏️ Changes requested on v2".into()),
        _ => Reply::None,
    });
    let (_running, http) = http_endpoint(&fake, handler.clone(), 2000).await;
    let modal = http.send(&fake::component_interaction(9501, "tok", APP, &alice(), 42, &encode(Button::RequestChanges(id)))).await;
    let modal: Value = modal.json().await.unwrap();
    assert_eq!(modal["type"], 9);
    assert_eq!(modal["data"]["custom_id"], encode(Button::RequestChanges(id)));
    let submit = http
        .send(&fake::modal_interaction(
            9502,
            "tok",
            APP,
            &alice(),
            &encode(Button::RequestChanges(id)),
            &[("text", "Fewer steps")],
            Some(42),
        ))
        .await;
    assert_eq!(submit.json::<Value>().await.unwrap()["data"]["content"], "✏️ Changes requested on v2");
    assert_eq!(handler.wait(2).await[1], inbound(Action::Feedback { approval_id: id, text: "Fewer steps".into() }, 9502));
    // An Ask* reply to a modal submission cannot be another modal: it says what to type.
    let handler2 = Recorder::new(move |_| Reply::AskFeedback { approval_id: id, version: 2, prompt: "Say more *please*".into() });
    let fake2 = DiscordFake::start(APP).await;
    let (_r2, http2) = http_endpoint(&fake2, handler2, 2000).await;
    let again = http2
        .send(&fake::modal_interaction(9503, "tok", APP, &alice(), &encode(Button::RequestChanges(id)), &[("text", "")], Some(42)))
        .await;
    assert_eq!(
        again.json::<Value>().await.unwrap()["data"]["content"],
        "Say more \\*please\\*\nSend `/plan changes #a1b2c3 <what should change>`"
    );
}

#[tokio::test]
async fn a_slow_handler_is_deferred_then_the_reply_replaces_it() {
    let fake = DiscordFake::start(APP).await;
    let handler = Recorder::slow(Duration::from_millis(1500), |_| Reply::Notice("✅ Approved v2".into()));
    let (_running, http) = http_endpoint(&fake, handler.clone(), 100).await;
    let started = tokio::time::Instant::now();
    let response = http.send(&fake::component_interaction(9601, "tok-slow", APP, &alice(), 42, &encode(Button::Approve(approval())))).await;
    assert!(started.elapsed() < Duration::from_millis(1200), "answered before the handler finished");
    assert_eq!(response.json::<Value>().await.unwrap(), json!({"type": 5, "data": {"flags": 64, "attachments": []}}));
    let patch = fake.wait_for_count(WAIT, "PATCH", "/messages/@original", 1).await.remove(0);
    assert_eq!(patch.path, format!("/api/v10/webhooks/{APP}/tok-slow/messages/@original"));
    assert_eq!(patch.json().unwrap(), json!({"content": "✅ Approved v2", "allowed_mentions": no_mentions()}));
}

/// Over HTTP, Discord may not have processed the deferral yet when the late
/// reply comes: a 404 on `@original` is retried (and a 500, and a 429 after
/// its retry_after), all through the shared `send_with_retry`.
#[tokio::test]
async fn a_deferred_reply_is_retried_after_a_404_a_500_and_a_429() {
    let fake = DiscordFake::start(APP).await;
    let original = format!("/api/v10/webhooks/{APP}/tok-late/messages/@original");
    fake.script("PATCH", &original, 404, &[], json!({"code": 10062, "message": "Unknown interaction"}));
    fake.script("PATCH", &original, 500, &[], json!({"message": "Internal Server Error"}));
    fake.script_rate_limit("PATCH", &original, 0.3);
    let handler = Recorder::slow(Duration::from_millis(300), |_| Reply::Notice("✅ Approved v2".into()));
    let (_running, http) = http_endpoint(&fake, handler, 100).await;
    let response = http.send(&fake::component_interaction(9602, "tok-late", APP, &alice(), 42, &encode(Button::Approve(approval())))).await;
    assert_eq!(response.json::<Value>().await.unwrap()["type"], 5, "deferred");
    // Answered 404, 500, 429 as scripted, then 200.
    let patches = fake.wait_for_count(WAIT, "PATCH", "/messages/@original", 4).await;
    assert!(patches.iter().all(|p| p.path == original && p.body == patches[0].body), "the same edit each time");
    let waited = patches[3].at.duration_since(patches[2].at);
    assert!(waited >= Duration::from_millis(300), "retry_after honoured: waited {waited:?}");
    // The marker: another click's late reply, answered at once. A retry
    // after the success would be on its way before it.
    let marker = http.send(&fake::component_interaction(9603, "tok-marker", APP, &alice(), 42, &encode(Button::Approve(approval())))).await;
    assert_eq!(marker.json::<Value>().await.unwrap()["type"], 5, "deferred");
    fake.wait_for_count(WAIT, "PATCH", "/tok-marker/messages/@original", 1).await;
    assert_eq!(fake.requests().iter().filter(|r| r.method == "PATCH" && r.path == original).count(), 4, "nothing after the success");
}

#[tokio::test]
async fn weak_or_missing_public_keys_fail_at_start() {
    let fake = DiscordFake::start(APP).await;
    let mut identity = [0u8; 32];
    identity[0] = 1;
    let mut c = config(&fake, Transport::Http);
    c.application_public_key = Some(hex::encode(identity));
    let (_stop, shutdown) = watch::channel(false);
    let Err(err) = start(c, Recorder::new(|_| Reply::None), shutdown.clone(), always_leader()).await else {
        panic!("a weak key must be refused")
    };
    assert!(err.to_string().starts_with("`discord.application_public_key`: is a small-order"), "{err}");
    let mut c = config(&fake, Transport::Http);
    c.application_public_key = None;
    let Err(err) = start(c, Recorder::new(|_| Reply::None), shutdown, always_leader()).await else { panic!("HTTP mode needs a key") };
    assert!(err.to_string().contains("application_public_key"), "{err}");
    assert!(fake.requests().is_empty(), "nothing is sent with a bad config");
}

/// Approve with note…: a modal with a note and the steps to leave out; its
/// submission is an approval with both, and step numbers that are not
/// numbers are the grammar's usage error, not a guess.
#[tokio::test]
async fn http_approve_with_a_note_and_steps_left_out_via_the_modal() {
    let fake = DiscordFake::start(APP).await;
    let id = approval();
    let handler = Recorder::new(move |e| match &e.action {
        Action::Button(Button::ApproveWithNote(a)) => Reply::AskApproval {
            approval_id: *a,
            version: 2,
            steps: vec!["Add a retry loop".into(), "Test it".into()],
            prompt: "Approve v2 (#a1b2c3) with a note for the agent.".into(),
        },
        Action::Approve { .. } => Reply::Notice("✅ Approved v2".into()),
        _ => Reply::None,
    });
    let (_running, http) = http_endpoint(&fake, handler.clone(), 2000).await;
    let modal = http.send(&fake::component_interaction(9601, "tok", APP, &alice(), 42, &encode(Button::ApproveWithNote(id)))).await;
    let modal: Value = modal.json().await.unwrap();
    assert_eq!(modal["type"], 9);
    assert_eq!(modal["data"]["custom_id"], encode(Button::ApproveWithNote(id)));
    assert_eq!(modal["data"]["title"], "Approve v2");
    let inputs: Vec<&Value> = modal["data"]["components"].as_array().unwrap().iter().map(|row| &row["components"][0]).collect();
    assert_eq!((inputs[0]["custom_id"].as_str(), inputs[0]["required"].as_bool()), (Some("text"), Some(false)));
    assert_eq!((inputs[1]["custom_id"].as_str(), inputs[1]["required"].as_bool()), (Some("except"), Some(false)));
    assert!(inputs[1]["placeholder"].as_str().unwrap().contains("1–2"), "{}", inputs[1]);
    let submit = |n: u64, note: &'static str, except: &'static str| {
        fake::modal_interaction(
            n,
            "tok",
            APP,
            &alice(),
            &encode(Button::ApproveWithNote(id)),
            &[("text", note), ("except", except)],
            Some(42),
        )
    };
    let answer = http.send(&submit(9602, "ok, but no migrations", "2")).await;
    assert_eq!(answer.json::<Value>().await.unwrap()["data"]["content"], "✅ Approved v2");
    let events = handler.wait(2).await;
    assert_eq!(events[1], inbound(Action::Approve { approval_id: id, note: Some("ok, but no migrations".into()), except: vec![2] }, 9602));
    // Empty fields: a plain approval.
    http.send(&submit(9603, "", "")).await;
    assert_eq!(handler.wait(3).await[2], inbound(Action::Approve { approval_id: id, note: None, except: vec![] }, 9603));
    http.send(&submit(9604, "", "two")).await;
    assert_eq!(handler.wait(4).await[3], inbound(Action::BadCommand("accept except two".into()), 9604));
}
