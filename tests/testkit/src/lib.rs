//! Test support shared by plangate's end-to-end tests and benchmarks.
//!
//! * [`server`]: start the real `plangate` binary on a free loopback port with
//!   a temporary data dir and config, and talk to it.
//! * [`telegram`], [`slack`], [`discord`]: fakes of each platform's HTTP API
//!   on 127.0.0.1 that record every request and let a test script inbound
//!   events. The real client crates are pointed at them through the
//!   configurable API base URLs; nothing here needs a network beyond loopback.
//! * [`cards`]: hand-built pending and decided cards for the channel
//!   crates' render tests.
//! * [`webhook`]: a receiver of plangate's signed webhooks on 127.0.0.1 that
//!   records every delivery and answers from a script (errors, redirects,
//!   never).
//! * [`smtp`]: a loopback SMTP server that captures every message, and
//!   reads their MIME parts back.
//! * [`push`]: a loopback Web Push service that verifies each push's VAPID
//!   JWT and decrypts its body with the test device's keys, answering
//!   201, 404, 410, 429, 500 on demand.
//! * [`limits`]: the platforms' send limits, which a fake enforces (429s
//!   included) once told to.
//! * [`pg`]: a fresh schema per test on the machine's PostgreSQL, its
//!   `[store]` section, and N replicas of the binary sharing it.
//! * [`clients`]: the pinned real agent clients (Claude Code, Codex CLI) that
//!   `.ci/install-clients` installs; [`skip`]: skipping loudly when a
//!   prerequisite like them is missing (a failure under
//!   `PLANGATE_REQUIRE_ALL`).
//! * [`fake_anthropic`], [`fake_openai`]: scripted fakes of the Anthropic
//!   Messages API and the OpenAI Responses API on 127.0.0.1, the model side
//!   of a real client, both a [`scripted`] fake that is only its protocol;
//!   [`claude`] and [`codex`] run the real clients against
//!   them; [`hook_recorder`]: a command hook that records what a client
//!   sends each hook event.

mod agent_proc;
pub mod cards;
pub mod claude;
pub mod clients;
pub mod codex;
pub mod discord;
pub mod fake_anthropic;
pub mod fake_openai;
pub mod hook_recorder;
pub mod limits;
pub mod passkey;
pub mod pg;
pub mod push;
pub mod scripted;
pub mod server;
pub mod skip;
pub mod slack;
pub mod smtp;
pub mod telegram;
pub mod wait;
pub mod webhook;
