//! The plangate server: the imperative shell around the pure engine.
//!
//! * [`config`]: settings, validated at start.
//! * [`core`]: load → `engine::apply` → commit → effects, with per-session
//!   locks, long-poll waiters and the card/nudge job queues.
//! * [`http`]: the agent and operator HTTP API of API.md (axum).
//! * [`hub`]: inbound chat events (buttons, `/plan` commands) → engine.
//! * [`scheduler`]: persisted timers (nudges, timeouts).
//! * [`storage`]: opening the configured store (sled, or PostgreSQL for
//!   replicas); [`replicas`]: what runs only when replicas share one store
//!   (change wake-ups, outbox claims, leases).
//! * [`web`]: the web page's backend (`plangate-web` renders and serves it).
//! * [`throttle`]: failed authentications limited per client address.
//! * [`cli`]: the `plangate` subcommands that talk to a running server.
//!
//! **Architecture invariant:** every state change goes through
//! [`core::Core::execute`], which commits (durably) before any effect is
//! performed or any caller is answered.

pub mod approvers;
pub mod audit;
pub mod channels;
pub mod cli;
pub mod clock;
pub mod config;
pub mod core;
pub mod email;
pub mod gate;
pub mod http;
pub mod hub;
pub mod metrics;
pub mod ops;
pub mod pairing;
pub mod push;
pub mod replicas;
pub mod scheduler;
pub mod storage;
pub mod throttle;
pub mod web;
