//! A nudge storm: 10,000 reminders due at once, drained through the real
//! teloxide, slack-morphism and serenity clients against loopback fakes that
//! enforce each platform's send limits (and answer 429 beyond them).
//!
//! Setup, straight through the store API (so the records are exactly the
//! server's): `--nudges` / 3 pending approvals, spread over `--chats` agents;
//! agent k posts to Telegram chat k, Slack channel k and Discord channel k,
//! and each approval has a card delivered to all three. Every proposal is 11
//! minutes old, so its first nudge (10 min) is due the moment the server
//! starts: one nudge per approval per destination, `--nudges` in all.
//!
//! The fakes enforce Telegram's 1/s per chat and 30/s overall, Slack's 1/s per
//! channel and 20/s overall (plangate's defaults) and Discord's 5 per 5 s per
//! channel and 50/s overall, as strict sliding windows on arrival time.
//! plangate is configured with the same limits. Reported per platform:
//! nudges delivered, 429s, throughput between the first and last admitted
//! send against the configured limit; overall: time from ready until the
//! last nudge, the server's RSS peak, and duplicates (a nudge replying to the
//! same card twice). With the defaults the drain takes about 170 s (Slack's
//! 20/s is the slowest lane).
//!
//! Run: `cargo run --release -p plangate-bench --bin storm`
//! Options: `--nudges 10000`, `--chats 100`, `--dir PATH`, `--timeout-secs 600`.
//! `--smoke`: 30 nudges over 5 agents, which must all arrive, once each,
//! within 60 s (`target/debug/storm --smoke`, a few seconds).

use plangate_bench::server::{mib, start};
use plangate_bench::{plangate_bin, sys, workload};
use plangate_channel::{Delivery, Style};
use plangate_engine::{apply, Actor, Ctx, SessionKey, State, Timestamp};
use plangate_store::prelude::*;
use plangate_store::{Commit, SledStore};
use plangate_testkit::discord::DiscordFake;
use plangate_testkit::limits::{Limits, RateStats};
use plangate_testkit::slack::{SlackFake, TEAM};
use plangate_testkit::telegram::{FakeTelegram, TOKEN};
use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

const OPERATOR_TOKEN: &str = "bench-operator-token-0123456789";
const DISCORD_APP: u64 = 700_000_000_000_000_007;
const DISCORD_GUILD: u64 = 800_000_000_000_000_008;
/// How old every proposal is: past the first nudge (10 min), before the second (30 min).
const AGE_MS: i64 = 11 * 60_000;

fn agent(k: usize) -> String {
    format!("agent-{k}")
}
fn telegram_chat(k: usize) -> String {
    format!("-100{k:06}")
}
fn slack_channel(k: usize) -> String {
    format!("C{k:08}")
}
fn discord_channel(k: usize) -> String {
    format!("{}", 600_000_000_000_000_000u64 + k as u64)
}

/// One pending approval per session, its card delivered to agent k's three chats.
fn populate(data_dir: &Path, approvals: usize, chats: usize) -> Duration {
    let store = SledStore::open(data_dir).expect("store");
    let start = Instant::now();
    let at = Timestamp(workload::now().0 - AGE_MS);
    let ctx = || Ctx { now: at, random: workload::fresh_random(), timers: workload::policy(), approvals: Default::default() };
    std::thread::scope(|s| {
        for lane in 0..16 {
            let store = &store;
            s.spawn(move || {
                for i in (lane..approvals).step_by(16) {
                    let k = i % chats;
                    let key = SessionKey::new(agent(k), format!("storm-{i}"));
                    let entered = apply(&State::new(key.clone()), &Actor::Agent, workload::enter(), &ctx()).expect("enter");
                    let proposed = apply(&entered.state, &Actor::Agent, workload::propose(i as u64), &ctx()).expect("propose");
                    let id = workload::minted(&proposed).expect("approval id");
                    let mut commit = Commit::of(&proposed, &entered.state, None);
                    commit.audit = entered.audit.iter().chain(&proposed.audit).cloned().collect();
                    store.commit(commit).expect("commit").written().expect("commit");
                    let delivered = |destination: String, channel: &str, chat: String, message_id: String| Delivery {
                        destination,
                        channel: channel.to_string(),
                        chat,
                        message_id,
                        thread: None,
                        style: Style::Buttons,
                    };
                    for delivery in [
                        delivered(format!("tg-{k}"), "telegram", telegram_chat(k), format!("{}", 1_000 + i)),
                        delivered(format!("sl-{k}"), "slack", slack_channel(k), format!("1700000000.{i:06}")),
                        delivered(format!("dc-{k}"), "discord", discord_channel(k), format!("{}", 1_100_000_000_000_000_000u64 + i as u64)),
                    ] {
                        store.add_delivery(&id, &delivery).expect("delivery");
                    }
                }
            });
        }
    });
    start.elapsed()
}

fn config(dir: &Path, chats: usize, tg: &FakeTelegram, slack: &SlackFake, discord: &DiscordFake) -> String {
    let mut toml = format!(
        r#"
[server]
bind = "127.0.0.1:0"
data_dir = "{data}"
operator_token = "{OPERATOR_TOKEN}"

[approvals]
nudges = ["10m", "30m", "60m"]
timeout = "24h"

[telegram]
token = "{TOKEN}"
api_url = "{tg_url}"
poll_timeout_secs = 5
per_chat_per_second = {tg_chat}
global_per_second = {tg_global}

[slack]
bot_token = "xoxb-bench"
app_token = "xapp-bench"
api_url = "{slack_url}"
team_id = "{TEAM}"
per_channel_per_second = {sl_chat}
global_per_second = {sl_global}

[discord]
bot_token = "discord-bench-token"
application_id = "{DISCORD_APP}"
api_url = "{discord_url}"
guild_id = "{DISCORD_GUILD}"
per_channel = {dc_chat}
per_channel_window_secs = {dc_window}
"#,
        data = dir.join("data").display(),
        tg_url = tg.api_url(),
        slack_url = slack.api_url(),
        discord_url = discord.base,
        tg_chat = Limits::TELEGRAM.per_chat.0,
        tg_global = Limits::TELEGRAM.global.0,
        sl_chat = Limits::SLACK.per_chat.0,
        sl_global = Limits::SLACK.global.0,
        dc_chat = Limits::DISCORD.per_chat.0,
        dc_window = Limits::DISCORD.per_chat.1.as_secs(),
    );
    for k in 0..chats {
        let _ = write!(
            toml,
            r#"
[agents.{agent}]
token = "bench-agent-token-{k:06}-0123456789"
destinations = ["tg-{k}", "sl-{k}", "dc-{k}"]

[destinations.tg-{k}]
channel = "telegram"
chat = "{tg}"
approvers = ["telegram:111"]

[destinations.sl-{k}]
channel = "slack"
chat = "{sl}"
approvers = ["slack:U1"]

[destinations.dc-{k}]
channel = "discord"
chat = "{dc}"
approvers = ["discord:500000000000000001"]
"#,
            agent = agent(k),
            tg = telegram_chat(k),
            sl = slack_channel(k),
            dc = discord_channel(k),
        );
    }
    toml
}

/// Nudges each fake saw, and how many of them replied to a card already nudged.
struct Seen {
    telegram: usize,
    slack: usize,
    discord: usize,
    duplicates: usize,
}

fn seen(tg: &FakeTelegram, slack: &SlackFake, discord: &DiscordFake) -> Seen {
    let mut cards = HashSet::new();
    let mut duplicates = 0;
    let mut count = |card: String| {
        if !cards.insert(card) {
            duplicates += 1;
        }
    };
    let mut telegram = 0;
    for r in tg.calls("sendMessage").iter().filter(|r| r.status == 200) {
        telegram += 1;
        count(format!("tg:{}:{:?}", r.str("chat_id"), r.reply_to()));
    }
    let mut slack_n = 0;
    for r in slack.calls("chat.postMessage") {
        let body = r.json();
        if body["thread_ts"].is_string() {
            slack_n += 1;
            count(format!("sl:{}:{}", body["channel"], body["thread_ts"]));
        }
    }
    let mut discord_n = 0;
    for r in discord.message_requests().iter().filter(|r| r.method == "POST") {
        let reference = r.json().map(|j| j["message_reference"]["message_id"].to_string()).unwrap_or_default();
        discord_n += 1;
        count(format!("dc:{}:{reference}", r.path));
    }
    Seen { telegram, slack: slack_n, discord: discord_n, duplicates }
}

fn lane(name: &str, stats: RateStats, limit: usize, nudges: usize) -> String {
    let rate = stats.per_second().unwrap_or(0.0);
    format!(
        "  {name:<9} {nudges:>6} nudges, {:>4} answered 429, {rate:>6.2}/s between first and last send (limit {limit}/s: {:.1}%)",
        stats.refused,
        100.0 * rate / limit as f64
    )
}

#[tokio::main]
async fn main() {
    let nudges: usize = plangate_bench::sized("--nudges", 10_000, 30);
    let chats: usize = plangate_bench::sized("--chats", 100, 5);
    let timeout = Duration::from_secs(plangate_bench::sized("--timeout-secs", 600, 60));
    let dir: String = plangate_bench::arg("--dir", std::env::temp_dir().display().to_string());
    let approvals = nudges.div_ceil(3);
    let bin = plangate_bin();
    println!("{}", sys::describe_machine(Path::new(&dir)));
    println!("binary: {bin}\n");

    let tg = FakeTelegram::start().await;
    let slack = SlackFake::start().await;
    let discord = DiscordFake::start(DISCORD_APP).await;
    tg.enforce_limits(Limits::TELEGRAM);
    slack.enforce_limits(Limits::SLACK);
    discord.enforce_limits(Limits::DISCORD);

    let root = tempfile::tempdir_in(&dir).expect("temp dir");
    let data = root.path().join("data");
    std::fs::create_dir_all(&data).expect("data dir");
    let took = populate(&data, approvals, chats);
    println!(
        "populated {approvals} pending approvals over {chats} agents × 3 destinations ({} nudges due) in {:.1} s",
        approvals * 3,
        took.as_secs_f64()
    );
    let config_path = root.path().join("config.toml");
    std::fs::write(&config_path, config(root.path(), chats, &tg, &slack, &discord)).expect("config");

    let http = reqwest::Client::builder().no_proxy().build().expect("client");
    let mut server = start(&bin, &config_path, &http).await;
    let pid = server.child.id();
    println!("ready after {:.0} ms, RSS {}", server.ready.as_secs_f64() * 1e3, mib(sys::rss_kib(pid)));

    let t0 = Instant::now();
    let expected = approvals * 3;
    let mut peak = 0;
    let mut last_report = 0;
    let drained = loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        peak = peak.max(sys::rss_kib(pid).unwrap_or(0));
        // The fakes' admission counters are cheap to read; the recorded
        // requests are only walked once, at the end.
        let admitted = [tg.rate_stats(), slack.rate_stats(), discord.rate_stats()].map(|s| s.admitted as usize);
        if admitted.iter().sum::<usize>() >= expected {
            break Some(t0.elapsed());
        }
        if t0.elapsed() > timeout {
            break None;
        }
        let secs = t0.elapsed().as_secs();
        if secs >= last_report + 15 {
            last_report = secs;
            let [t, s, d] = admitted;
            println!("  {secs:>3} s: telegram {t}, slack {s}, discord {d} (of {approvals} each), RSS {}", mib(sys::rss_kib(pid)));
        }
    };
    // Anything sent twice would arrive soon after; give it a moment.
    tokio::time::sleep(Duration::from_secs(2)).await;
    peak = peak.max(sys::rss_kib(pid).unwrap_or(0));
    server.kill();

    let s = seen(&tg, &slack, &discord);
    let (ts, ss, ds) = (tg.rate_stats(), slack.rate_stats(), discord.rate_stats());
    match drained {
        Some(d) => println!(
            "\ndrained {} nudges in {:.1} s after ready ({:.0}/s overall)",
            expected,
            d.as_secs_f64(),
            expected as f64 / d.as_secs_f64()
        ),
        None => println!("\nNOT drained within {} s: {} of {expected} nudges sent", timeout.as_secs(), s.telegram + s.slack + s.discord),
    }
    println!("{}", lane("telegram", ts, Limits::TELEGRAM.global.0, s.telegram));
    println!("{}", lane("slack", ss, Limits::SLACK.global.0, s.slack));
    println!("{}", lane("discord", ds, Limits::DISCORD.global.0, s.discord));
    println!(
        "429s in all: {}; nudges to a card already nudged: {}; server RSS peak {}",
        ts.refused + ss.refused + ds.refused,
        s.duplicates,
        mib(Some(peak))
    );
    if plangate_bench::smoke() {
        assert!(drained.is_some() && s.duplicates == 0, "the smoke storm must drain, each nudge once");
        println!("\nsmoke run: a tiny storm; these figures measure nothing");
    }
}
