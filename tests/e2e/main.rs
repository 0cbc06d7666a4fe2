//! plangate's integration tests, folded into one test binary so the whole
//! dependency graph is linked once instead of once per file.
//!
//! Most modules run the real `plangate` binary (`CARGO_BIN_EXE_plangate`)
//! against loopback fakes of the chat platforms (`plangate-testkit`); `hub`,
//! `backlog` and `failclosed` drive the server's library in process. `kit`
//! holds the helpers they share.

mod api;
mod approvals;
mod backlog;
mod channel;
mod claims;
mod codex_cli;
mod codex_hook;
mod crash;
mod discord;
mod email;
mod failclosed;
mod hook_bin;
mod hooks;
mod hooks_lifecycle;
mod hub;
mod kit;
mod ladder;
mod mcp;
mod migrate;
mod ops_backup;
mod ops_config;
mod ops_doctor;
mod ops_install;
mod ops_logs;
mod ops_metrics;
mod ops_ready;
mod ops_retention;
mod ops_shutdown;
mod paging;
mod pairing;
mod patch_differential;
mod permissions;
mod permissions_slack_discord;
mod projects;
mod push;
mod real_claude;
mod real_claude_permissions;
mod real_codex;
mod real_inputs;
mod receipts;
mod replicas;
mod sec_amend;
mod sec_audit;
mod sec_authority;
mod sec_classes;
mod sec_config;
mod sec_gate;
mod sec_hook;
mod sec_inputs;
mod sec_pair;
mod sec_passkey;
mod sec_permissions;
mod sec_policy;
mod sec_scope;
mod sec_slack;
mod sec_telegram;
mod sec_web;
mod seed_rules;
mod slack;
mod telegram;
mod threads;
mod threads_discord;
mod threads_replicas;
mod timers;
mod wait_cli;
mod web;
mod webhooks;
