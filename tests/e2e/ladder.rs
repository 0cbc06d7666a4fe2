//! The escalation ladder through the real binary, on the test clock
//! (#52): each level at its offset, once, across kill -9 and restarts; a
//! claim holds the ladder back until it runs out; on-call schedules read
//! from loopback fakes that check the exact requests, and every way a
//! schedule can fail falls back to the static approvers, audited.

use super::kit::{approval_id, audit, audit_actions, cards_in, operator_cli, plan, propose, propose_id, telegram_section, tg_user};
use plangate_engine::codec::{encode, Button};
use plangate_testkit::server::{eventually, ServerProcess};
use plangate_testkit::smtp::FakeSmtp;
use plangate_testkit::telegram::FakeTelegram;
use plangate_testkit::webhook::{FakeReceiver, Reply};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");
const WAIT: Duration = Duration::from_secs(15);
const MIN: i64 = 60_000;
const TEAM: i64 = -100;
/// The chats of levels 1, 2 and 3.
const LEVELS: [i64; 3] = [-201, -202, -203];

/// A team chat and one chat per level: 10, 20 and 30 minutes after the
/// proposal; reminders every 5 minutes before that.
fn three_levels(fake: &FakeTelegram, extra: &str) -> String {
    format!(
        r#"
[approvals]
nudges = ["5m"]
timeout = "2h"
claim_timeout = "25m"

[[approvals.ladder]]
after = "10m"
destinations = ["l1"]

[[approvals.ladder]]
after = "20m"
destinations = ["l2"]

[[approvals.ladder]]
after = "30m"
destinations = ["l3"]

{}
[destinations.team]
channel = "telegram"
chat = "{TEAM}"
approvers = ["telegram:1", "telegram:2"]

[destinations.l1]
channel = "telegram"
chat = "{}"

[destinations.l2]
channel = "telegram"
chat = "{}"

[destinations.l3]
channel = "telegram"
chat = "{}"
{extra}
"#,
        telegram_section(fake),
        LEVELS[0],
        LEVELS[1],
        LEVELS[2]
    )
}

/// One level at 10 minutes (`level`: its target keys), reminders at 5,
/// and the team chat with `approvers`.
fn one_level(fake: &FakeTelegram, level: &str, approvers: &str) -> String {
    format!(
        "\n[approvals]\nnudges = [\"5m\"]\ntimeout = \"2h\"\n\n[[approvals.ladder]]\nafter = \"10m\"\n{level}\n{}\n\
         [destinations.team]\nchannel = \"telegram\"\nchat = \"{TEAM}\"\napprovers = {approvers}\n",
        telegram_section(fake)
    )
}

/// Cards (messages with buttons) in each level's chat.
fn level_cards(fake: &FakeTelegram) -> Vec<usize> {
    LEVELS.iter().map(|chat| cards_in(fake, *chat).len()).collect()
}

async fn wait_level_cards(s: &ServerProcess, session: &str, fake: &FakeTelegram, want: [usize; 3]) {
    let within = tokio::time::timeout(WAIT, async {
        while level_cards(fake) != want {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    if within.await.is_err() {
        panic!("level cards {:?}, not {want:?}; audit: {:#?}", level_cards(fake), audit(s, &format!("session={session}")).await);
    }
}

/// Wait until `n` levels' jobs are done (their `ladder_reached` records).
async fn jobs_done(s: &ServerProcess, session: &str, n: usize) {
    let done = || async { audit_actions(s, session).await.iter().filter(|a| *a == "ladder_reached").count() >= n };
    eventually(WAIT, &format!("{n} levels' jobs done"), done).await;
}

#[tokio::test]
async fn a_three_level_ladder_reaches_each_level_at_its_offset_once_across_restarts() {
    let fake = FakeTelegram::start().await;
    let mut s = ServerProcess::start_with(BIN, &["team"], &three_levels(&fake, "")).await;
    let id = propose_id(&s, "ladder", &plan("Ladder", &["one"])).await;
    fake.wait_request("sendMessage", WAIT, |r| r.chat_id() == Some(TEAM) && r.keyboard().is_some()).await;

    // Nothing before the first offset.
    s.advance_clock(9 * MIN).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(level_cards(&fake), [0, 0, 0]);
    // Level 1 at 10 minutes.
    s.advance_clock(MIN).await;
    wait_level_cards(&s, "ladder", &fake, [1, 0, 0]).await;
    let first = fake.wait_request("sendMessage", WAIT, |r| r.chat_id() == Some(LEVELS[0]) && r.keyboard().is_some()).await;
    assert!(first.str("text").contains("escalated: no decision after 10 min (level 1)"), "{}", first.str("text"));

    // Killed between levels (once level 1's job is done: a kill while a
    // card is on its way may post it again, at least once, as every chat
    // job), down for 10 minutes: level 2 fires on the start, level 1 is
    // not reached again.
    jobs_done(&s, "ladder", 1).await;
    s.kill9().await;
    s.advance_clock(10 * MIN).await;
    s.restart().await;
    wait_level_cards(&s, "ladder", &fake, [1, 1, 0]).await;
    jobs_done(&s, "ladder", 2).await;

    // Killed again with nothing due: the start reaches no level.
    s.restart().await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(level_cards(&fake), [1, 1, 0]);
    // `plangate ladder show`: two levels reached, the third due at +30m.
    let (code, out, _) = operator_cli(&s, &["ladder", "show", &id]).await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("level 1 at +10m") && out.contains("reached, passed on"), "{out}");
    assert!(out.contains("level 2 at +20m") && out.contains("level 3 at +30m"), "{out}");
    assert!(out.contains("destination l3"), "{out}");

    // Level 3 at 30 minutes.
    s.advance_clock(10 * MIN).await;
    wait_level_cards(&s, "ladder", &fake, [1, 1, 1]).await;
    jobs_done(&s, "ladder", 3).await;
    s.restart().await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(level_cards(&fake), [1, 1, 1], "no level twice");
    let actions = audit_actions(&s, "ladder").await;
    assert_eq!(actions.iter().filter(|a| *a == "escalate").count(), 3, "{actions:?}");
    assert_eq!(actions.iter().filter(|a| *a == "ladder_reached").count(), 3, "{actions:?}");
    let details: Vec<String> = audit(&s, "session=ladder")
        .await
        .iter()
        .filter(|e| e["action"] == "escalate")
        .map(|e| e["detail"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(details.iter().map(|d| d.split(':').next().unwrap_or_default()).collect::<Vec<_>>(), ["level 1", "level 2", "level 3"]);
}

#[tokio::test]
async fn a_claim_stops_the_others_nudges_and_the_ladder_resumes_when_it_runs_out() {
    let fake = FakeTelegram::start().await;
    let mut s = ServerProcess::start_with(BIN, &["team"], &three_levels(&fake, "")).await;
    let id = approval_id(&propose(&s, "held", &plan("Held", &["one"])).await);
    let card = fake.wait_request("sendMessage", WAIT, |r| r.chat_id() == Some(TEAM) && r.keyboard().is_some()).await;
    fake.push_update(fake.callback_update(TEAM, card.message_id_sent().unwrap(), tg_user(1, "alice"), &encode(Button::Claim(id))));
    fake.wait_request("editMessageText", WAIT, |r| r.str("text").contains("🙋 Claimed by")).await;
    // The claim holds 25 minutes: no reminder (due at 5), no level (due at 10 and 20).
    s.advance_clock(24 * MIN).await;
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert_eq!(level_cards(&fake), [0, 0, 0]);
    assert!(!fake.calls("sendMessage").iter().any(|r| r.str("text").contains("⏰")), "nobody reminded during the claim");
    // It runs out at 25: the ladder resumes where it stood, levels 1 and 2 at once.
    s.advance_clock(2 * MIN).await;
    wait_level_cards(&s, "held", &fake, [1, 1, 0]).await;
    let actions = audit_actions(&s, "held").await;
    assert!(actions.contains(&"claim".to_string()), "{actions:?}");
    // Level 3 keeps its own offset.
    s.advance_clock(4 * MIN).await;
    wait_level_cards(&s, "held", &fake, [1, 1, 1]).await;
}

/// An iCalendar feed whose one shift covers the test clock's now.
fn feed(who: &str) -> String {
    let now = std::time::SystemTime::now();
    let stamp = |t: std::time::SystemTime| humantime::format_rfc3339_seconds(t).to_string().replace(['-', ':'], "");
    format!(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nDTSTART:{}\r\nDTEND:{}\r\nSUMMARY:{who}\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n",
        stamp(now - Duration::from_secs(86_400)),
        stamp(now + Duration::from_secs(3 * 86_400))
    )
}

/// One level that reads five schedules: a feed that answers, a feed that
/// hangs past its timeout, one that answers 500, one that answers HTML,
/// one with nobody on call now.
/// The working one reaches its person; each failing one falls back,
/// audited with why, to its `fallback` or the team's approvers; the
/// requests are exactly the configured ones.
#[tokio::test]
async fn failing_schedules_fall_back_to_the_static_approvers_audited() {
    let fake = FakeTelegram::start().await;
    let feeds = FakeReceiver::start().await;
    feeds.script("/good.ics", [Reply::body("text/calendar", feed("telegram:7"))]);
    feeds.script("/slow.ics", [Reply::Hang]);
    feeds.script("/broken.ics", [Reply::status(500)]);
    feeds.script("/junk.ics", [Reply::body("text/html", "<html>login</html>")]);
    feeds.script("/empty.ics", [Reply::body("text/calendar", "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nEND:VCALENDAR\r\n")]);
    let mut extra = one_level(&fake, "schedules = [\"good\", \"slow\", \"broken\", \"junk\", \"empty\"]", "[\"telegram:1\"]");
    for name in ["good", "slow", "broken", "junk", "empty"] {
        extra.push_str(&format!("\n[schedules.{name}]\nkind = \"ical\"\nurl = \"{}\"\n", feeds.url(&format!("/{name}.ics"))));
        if name == "slow" {
            extra.push_str("timeout = \"1s\"\nfallback = [\"telegram:5\"]\n");
        }
    }
    let mut s = ServerProcess::start_with(BIN, &["team"], &extra).await;
    propose_id(&s, "oncall", &plan("On call", &["one"])).await;
    s.advance_clock(10 * MIN).await;
    eventually(WAIT, "the level reached", || async { audit_actions(&s, "oncall").await.contains(&"ladder_reached".to_string()) }).await;
    let entries = audit(&s, "session=oncall").await;
    let details = |action: &str| -> Vec<String> {
        entries.iter().filter(|e| e["action"] == action).map(|e| e["detail"].as_str().unwrap_or_default().to_string()).collect()
    };
    let fallbacks = details("schedule_fallback");
    assert_eq!(fallbacks.len(), 4, "{fallbacks:?}");
    assert!(
        fallbacks.iter().any(|d| d.contains("slow ical schedule no answer within 1.0 s; reaching telegram:5 instead")),
        "{fallbacks:?}"
    );
    assert!(fallbacks.iter().any(|d| d.contains("broken ical schedule answered HTTP 500; reaching telegram:1 instead")), "{fallbacks:?}");
    assert!(fallbacks.iter().any(|d| d.contains("junk ical schedule answered something that is not a schedule")), "{fallbacks:?}");
    assert!(fallbacks.iter().any(|d| d.contains("empty ical schedule names nobody on call now; reaching telegram:1")), "{fallbacks:?}");
    let reached = details("ladder_reached");
    assert_eq!(reached.len(), 1, "{reached:?}");
    for who in ["telegram:7", "telegram:5", "telegram:1"] {
        assert!(reached[0].contains(who), "{who} in {reached:?}");
    }
    // Exactly one GET per feed, with nothing but what was configured.
    for path in ["/good.ics", "/slow.ics", "/broken.ics", "/junk.ics", "/empty.ics"] {
        let got = feeds.received_at(path);
        assert_eq!(got.len(), 1, "{path}: {got:?}");
        assert_eq!((got[0].method.as_str(), got[0].query.as_str()), ("GET", ""));
        assert!(got[0].header("authorization").is_empty());
    }
}

/// PagerDuty's and Opsgenie's on-call APIs, read with their tokens: the
/// exact requests each documents, and who they name is reached. The
/// token never reaches the audit or `ladder show`.
#[tokio::test]
async fn pagerduty_and_opsgenie_are_read_with_their_tokens() {
    let fake = FakeTelegram::start().await;
    let api = FakeReceiver::start().await;
    let pd = r#"{"oncalls":[{"escalation_level":2,"user":{"summary":"Bob","email":"bob@example.com"}},{"escalation_level":1,"user":{"summary":"Alice","email":"alice@example.com"}}]}"#;
    api.script("/pd/oncalls", [Reply::body("application/json", pd), Reply::body("application/json", pd)]);
    let og = r#"{"data":{"onCallRecipients":["carol@example.com"]}}"#;
    api.script("/og/v2/schedules/S%202/on-calls", [Reply::body("application/json", og), Reply::body("application/json", og)]);
    let level = one_level(&fake, "schedules = [\"pd\", \"og\"]", "[\"telegram:1\"]");
    let extra = format!(
        r#"{level}
[schedules.pd]
kind = "pagerduty"
api_url = "{}"
schedule_id = "P1ABC"
token = "pd-secret-token"
cache = "1ms"
aliases = {{ "alice@example.com" = "telegram:11" }}

[schedules.og]
kind = "opsgenie"
api_url = "{}"
schedule_id = "S 2"
token = "og-secret-token"
cache = "1ms"
"#,
        api.url("/pd"),
        api.url("/og")
    );
    let mut s = ServerProcess::start_with(BIN, &["team"], &extra).await;
    let id = propose_id(&s, "apis", &plan("APIs", &["one"])).await;
    let (code, shown, _) = operator_cli(&s, &["ladder", "show", &id]).await;
    assert_eq!(code, 0);
    assert!(shown.contains("schedule pd (pagerduty)") && shown.contains("person telegram:11"), "{shown}");
    assert!(shown.contains("carol@example.com"), "{shown}");
    s.advance_clock(10 * MIN).await;
    eventually(WAIT, "the level reached", || async { audit_actions(&s, "apis").await.contains(&"ladder_reached".to_string()) }).await;
    let entries = audit(&s, "session=apis").await;
    let reached: Vec<&str> = entries.iter().filter(|e| e["action"] == "ladder_reached").filter_map(|e| e["detail"].as_str()).collect();
    assert!(reached[0].contains("telegram:11") && reached[0].contains("carol@example.com"), "{reached:?}");
    assert!(!reached[0].contains("bob@example.com"), "only the first escalation level is on call: {reached:?}");
    let all = serde_json::to_string(&entries).unwrap();
    assert!(!all.contains("secret-token") && !shown.contains("secret-token"));
    let pd_calls = api.received_at("/pd/oncalls");
    assert_eq!(pd_calls.len(), 2, "ladder show and the level each read once: {pd_calls:?}");
    for r in &pd_calls {
        assert_eq!((r.method.as_str(), r.query.as_str()), ("GET", "schedule_ids%5B%5D=P1ABC&include%5B%5D=users"));
        assert_eq!(r.header("authorization"), "Token token=pd-secret-token");
        assert_eq!(r.header("accept"), "application/vnd.pagerduty+json;version=2");
    }
    let og_calls = api.received_at("/og/v2/schedules/S%202/on-calls");
    assert_eq!(og_calls.len(), 2, "{:?}", api.received());
    for r in &og_calls {
        assert_eq!((r.method.as_str(), r.query.as_str()), ("GET", "scheduleIdentifierType=id&flat=true"));
        assert_eq!(r.header("authorization"), "GenieKey og-secret-token");
    }
}

/// `YYYY-MM-DD` and the hour of the test clock's now (UTC), `days` on.
fn today(days: i64) -> (String, u32) {
    let at = std::time::SystemTime::now() + Duration::from_secs(10 * 60);
    let at = if days >= 0 { at + Duration::from_secs(days as u64 * 86_400) } else { at - Duration::from_secs((-days) as u64 * 86_400) };
    let text = humantime::format_rfc3339_seconds(at).to_string();
    (text[..10].to_string(), text[11..13].parse().unwrap())
}

/// A level reached by email: whoever a rota says is on call, a named
/// approver away (their delegate instead), one in quiet hours (skipped,
/// said), a plain address; repeated every 5 minutes, each round mailed
/// once across a restart.
#[tokio::test]
async fn a_level_mails_the_rota_the_delegate_and_an_address_but_not_who_is_in_quiet_hours() {
    let (fake, smtp) = (FakeTelegram::start().await, FakeSmtp::start().await);
    let (yesterday, hour) = today(-1);
    let (tomorrow, _) = today(1);
    // Quiet from an hour before the level fires to two after, in UTC.
    let quiet = format!("{:02}:00-{:02}:00", (hour + 23) % 24, (hour + 2) % 24);
    let level = one_level(
        &fake,
        "repeat = \"5m\"\nschedules = [\"rota\"]\napprovers = [\"telegram:8\", \"telegram:9\"]\nemails = [\"oncall@example.com\"]",
        "[\"telegram:1\", \"telegram:10\"]",
    );
    let extra = format!(
        r#"{level}
[schedules.rota]
kind = "rota"
people = ["telegram:7"]
time_zone = "UTC"
start = "{yesterday}T00:00"

[people."telegram:7"]
email = "seven@example.com"

[people."telegram:8"]
email = "eight@example.com"
quiet_hours = "{quiet}"

[people."telegram:9"]
email = "nine@example.com"
away_from = "{yesterday}"
away_until = "{tomorrow}"
delegate = "telegram:10"
{}"#,
        smtp.section("http://plangate.test", &[("telegram:10", "ten@example.com")])
    );
    let mut s = ServerProcess::start_with(BIN, &["team"], &extra).await;
    let id = propose_id(&s, "mail", &plan("Mailed", &["one"])).await;
    let (code, shown, _) = operator_cli(&s, &["ladder", "show", &id]).await;
    assert_eq!(code, 0);
    assert!(shown.contains("person telegram:7 by email to seven@example.com"), "{shown}");
    assert!(shown.contains("telegram:9 is away: telegram:10 instead") && shown.contains("telegram:8 in quiet hours"), "{shown}");
    s.advance_clock(10 * MIN).await;
    // Escalation emails only (the delegate, an approver of the team, also
    // gets the card and its reminder).
    let escalations_to = |address: &str| -> Vec<plangate_testkit::smtp::Captured> {
        let mails = smtp.captured();
        mails.into_iter().filter(|m| m.to.iter().any(|t| t == address) && m.header("subject").starts_with("Escalated: ")).collect()
    };
    let to = |address: &str| escalations_to(address).len();
    let all_three = || async { to("seven@example.com") == 1 && to("ten@example.com") == 1 && to("oncall@example.com") == 1 };
    eventually(WAIT, "the level's three emails", all_three).await;
    jobs_done(&s, "mail", 1).await;
    assert_eq!((to("eight@example.com"), to("nine@example.com")), (0, 0), "quiet hours and away");
    // Links only for the delegate, an approver of the agent's chats.
    let body = |address: &str| escalations_to(address)[0].body("text/plain");
    assert!(body("ten@example.com").contains("http://plangate.test/e/"), "{}", body("ten@example.com"));
    assert!(!body("seven@example.com").contains("/e/") && !body("oncall@example.com").contains("/e/"));
    let reached: Vec<String> = audit(&s, "session=mail")
        .await
        .iter()
        .filter(|e| e["action"] == "ladder_reached")
        .map(|e| e["detail"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(
        reached[0].contains("telegram:8 in quiet hours") && reached[0].contains("telegram:9 is away: telegram:10 instead"),
        "{reached:?}"
    );

    // Killed and started again: nothing is mailed twice; the repeat at
    // 15 minutes mails each of them once more.
    s.restart().await;
    s.advance_clock(5 * MIN).await;
    let twice = || async { to("seven@example.com") == 2 && to("ten@example.com") == 2 && to("oncall@example.com") == 2 };
    eventually(WAIT, "the repeat's emails", twice).await;
    jobs_done(&s, "mail", 2).await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(to("seven@example.com"), 2);
    let escalations: Vec<String> = audit(&s, "session=mail")
        .await
        .iter()
        .filter(|e| e["action"] == "escalate")
        .map(|e| e["detail"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(escalations[1].starts_with("level 1 again (repeat 1)"), "{escalations:?}");
}

/// A ladder that cannot work is refused at load by `plangate config
/// check`, naming the key and the fix.
#[tokio::test]
async fn config_check_names_the_ladder_key_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plangate.toml");
    let toml = "[server]\nbind = \"127.0.0.1:0\"\ndata_dir = \"d\"\noperator_token = \"config-check-operator-token-0123\"\n\
        [approvals]\nnudges = [\"5m\"]\n[[approvals.ladder]]\nafter = \"30m\"\nschedules = [\"cal\"]\n\
        [[approvals.ladder]]\nafter = \"10m\"\nemails = [\"x@example.com\"]\n\
        [schedules.cal]\nkind = \"ical\"\nurl = \"http://calendar.example.com/a.ics\"\n";
    std::fs::write(&path, toml).unwrap();
    let out = std::process::Command::new(BIN).args(["config", "check", "--config"]).arg(&path).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("`approvals.ladder[1].after`") && stderr.contains("order the levels by `after`"), "{stderr}");
    assert!(stderr.contains("`schedules.cal.url`") && stderr.contains("https://"), "{stderr}");
}

/// Three replicas on one PostgreSQL, twelve plans proposed across them,
/// each with a three-level ladder on real time (2, 4 and 6 s): every level
/// of every plan is reached exactly once (the level timers are leased like
/// every other: no replica fires one another holds), and one replica
/// killed in the middle loses none.
#[tokio::test]
async fn replicas_reach_each_level_of_each_plan_once() {
    const PLANS: usize = 12;
    let Some(pg) = plangate_testkit::pg::TestSchema::create_or_skip().await else { return };
    let fake = FakeTelegram::start().await;
    let mut extra = format!(
        "[approvals]\nnudges = []\ntimeout = \"120s\"\n\n{}per_chat_per_second = 1000\nglobal_per_second = 1000\n\n\
         [destinations.team]\nchannel = \"telegram\"\nchat = \"{TEAM}\"\napprovers = [\"telegram:1\"]\n",
        telegram_section(&fake)
    );
    for (i, chat) in LEVELS.iter().enumerate() {
        extra.push_str(&format!("\n[[approvals.ladder]]\nafter = \"{}s\"\ndestinations = [\"l{}\"]\n", 2 * (i + 1), i + 1));
        extra.push_str(&format!("\n[destinations.l{}]\nchannel = \"telegram\"\nchat = \"{chat}\"\n", i + 1));
    }
    let mut rs = plangate_testkit::pg::start_replicas(BIN, 3, &pg, &["team"], &extra).await;
    for i in 0..PLANS {
        propose_id(&rs[i % 3], &format!("r{i}"), &plan(&format!("Replicated plan {i:02}"), &["one"])).await;
    }
    // Replica 0 killed as the first levels fall due.
    tokio::time::sleep(Duration::from_millis(2200)).await;
    rs[0].kill9().await;
    // Every plan's card in every level's chat.
    let titled = |fake: &FakeTelegram, chat: i64, i: usize| {
        cards_in(fake, chat).iter().filter(|c| c.contains(&format!("Replicated plan {i:02}"))).count()
    };
    let all = || async { LEVELS.iter().all(|chat| (0..PLANS).all(|i| titled(&fake, *chat, i) >= 1)) };
    eventually(Duration::from_secs(60), "every level of every plan", all).await;
    // Leases run out, the survivors catch up; nothing more comes.
    tokio::time::sleep(Duration::from_secs(5)).await;
    for i in 0..PLANS {
        let escalations = audit(&rs[1], &format!("session=r{i}")).await.iter().filter(|e| e["action"] == "escalate").count();
        assert_eq!(escalations, 3, "plan r{i}: each level fired once");
    }
    // A card a killed replica was posting may go out twice (chat jobs run at
    // least once); a level fired twice would post every card of it twice.
    let posts: usize = LEVELS.iter().map(|chat| cards_in(&fake, *chat).len()).sum();
    assert!(posts <= 3 * PLANS + 2, "{posts} level cards for {} levels reached", 3 * PLANS);
}

/// A level with `repeat` reminds its chat under the level's card, once per
/// round, until the next level takes over.
#[tokio::test]
async fn a_repeating_level_reminds_its_chat_until_the_next_level() {
    let fake = FakeTelegram::start().await;
    let config = three_levels(&fake, "").replacen("destinations = [\"l1\"]\n", "destinations = [\"l1\"]\nrepeat = \"4m\"\n", 1);
    let mut s = ServerProcess::start_with(BIN, &["team"], &config).await;
    propose_id(&s, "again", &plan("Again", &["one"])).await;
    fake.wait_request("sendMessage", WAIT, |r| r.chat_id() == Some(TEAM) && r.keyboard().is_some()).await;
    let repeats = |fake: &FakeTelegram| {
        fake.calls("sendMessage")
            .iter()
            .filter(|r| r.chat_id() == Some(LEVELS[0]) && r.str("text").contains("Still waiting (level 1"))
            .count()
    };
    s.advance_clock(10 * MIN).await;
    wait_level_cards(&s, "again", &fake, [1, 0, 0]).await;
    // Rounds at 14 and 18 minutes; level 2 at 20 ends them (the round due at 22 never comes).
    for (turn, want) in [(4, 1), (4, 2)] {
        s.advance_clock(turn * MIN).await;
        eventually(WAIT, &format!("{want} reminders in level 1's chat"), || async { repeats(&fake) == want }).await;
    }
    s.advance_clock(2 * MIN).await;
    // (A reminder carries the card's buttons too: level 2's chat is counted.)
    eventually(WAIT, "level 2's card", || async { cards_in(&fake, LEVELS[1]).len() == 1 }).await;
    s.advance_clock(4 * MIN).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(repeats(&fake), 2, "no repeat of level 1 after level 2");
    let texts: Vec<String> = fake.calls("sendMessage").iter().filter(|r| r.chat_id() == Some(LEVELS[0])).map(|r| r.str("text")).collect();
    assert!(texts.iter().any(|t| t.contains("Still waiting (level 1, repeat 2)")), "{texts:?}");
}
