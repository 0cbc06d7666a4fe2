//! The `plangate` subcommands that talk to a running server over HTTP.
//!
//! They are clients of the same API as every agent, so what the CLI shows is
//! what an agent would see.

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};
use std::io::{IsTerminal, Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

/// Exit codes of `propose --wait`.
pub const EXIT_APPROVED: i32 = 0;
pub const EXIT_USAGE: i32 = 2;
pub const EXIT_REVISED: i32 = 3;
pub const EXIT_NOT_APPROVED: i32 = 4;

pub struct Client {
    base: String,
    token: Option<String>,
    http: reqwest::Client,
}

impl Client {
    pub fn new(base: &str, token: Option<String>) -> Result<Client> {
        let http = reqwest::Client::builder().no_proxy().connect_timeout(Duration::from_secs(5)).build()?;
        Ok(Client { base: base.trim_end_matches('/').to_string(), token, http })
    }

    pub async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Result<(u16, Value)> {
        let mut req = self.http.request(method, format!("{}{}", self.base, path));
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.with_context(|| format!("cannot reach plangate at {}; is `plangate serve` running?", self.base))?;
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap_or_default();
        Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
    }

    /// Call and turn an API error into a readable message.
    pub async fn ok(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Result<Value> {
        let (status, value) = self.call(method, path, body).await?;
        if (200..300).contains(&status) {
            Ok(value)
        } else {
            let code = value["error"]["code"].as_str().unwrap_or("error");
            let message = value["error"]["message"].as_str().unwrap_or("");
            bail!("{code} ({status}): {message}")
        }
    }
}

/// Read a proposal file: markdown, a JSON Plan, or a Codex transcript.
pub fn read_proposal(file: &str, title: Option<&str>, codex: bool) -> Result<Value> {
    let text = if file == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s)?;
        s
    } else {
        std::fs::read_to_string(file).with_context(|| format!("cannot read {file}"))?
    };
    if codex {
        let block = extract_codex_plan(&text).ok_or_else(|| anyhow!("no <proposed_plan>…</proposed_plan> block found in {file}"))?;
        return Ok(json!({"markdown": block, "title": title}));
    }
    let is_json = Path::new(file).extension().is_some_and(|e| e == "json") || text.trim_start().starts_with('{');
    if is_json {
        let mut plan: Value = serde_json::from_str(&text).with_context(|| format!("{file} is not valid JSON"))?;
        if let (Some(t), Some(obj)) = (title, plan.as_object_mut()) {
            obj.insert("title".into(), json!(t));
        }
        Ok(plan)
    } else {
        let mut body = json!({"markdown": text});
        if let Some(t) = title {
            body["title"] = json!(t);
        }
        Ok(body)
    }
}

/// The last `<proposed_plan>…</proposed_plan>` block of a Codex message; the
/// text outside it is not part of the plan.
pub fn extract_codex_plan(text: &str) -> Option<String> {
    let start = text.rfind("<proposed_plan>")?;
    let rest = &text[start + "<proposed_plan>".len()..];
    let end = rest.find("</proposed_plan>")?;
    let block = rest[..end].trim();
    (!block.is_empty()).then(|| block.to_string())
}

/// Propose, optionally wait, and return the process exit code.
pub async fn propose(client: &Client, session: &str, body: Value, wait: bool, json_out: bool, timeout: Duration) -> Result<i32> {
    client.ok(reqwest::Method::POST, &format!("/v1/sessions/{session}/enter"), Some(json!({"reason": "plangate propose"}))).await?;
    let decision = client.ok(reqwest::Method::POST, &format!("/v1/sessions/{session}/proposals"), Some(body)).await?;
    if !wait {
        print_decision(&decision, json_out);
        return Ok(exit_code(&decision));
    }
    let tty = std::io::stderr().is_terminal() && !json_out;
    let started = Instant::now();
    let mut current = decision;
    while current["status"] == "pending" && started.elapsed() < timeout {
        if tty {
            eprint!(
                "\r⏳ v{} {} pending for {}s  ",
                current["version"],
                current["approval_id"].as_str().unwrap_or("").get(..6).unwrap_or(""),
                started.elapsed().as_secs()
            );
            let _ = std::io::stderr().flush();
        }
        let left = timeout.saturating_sub(started.elapsed()).as_secs().clamp(1, 60);
        current = client.ok(reqwest::Method::GET, &format!("/v1/sessions/{session}/decision?wait={left}"), None).await?;
    }
    if tty {
        eprintln!();
    }
    print_decision(&current, json_out);
    Ok(exit_code(&current))
}

fn exit_code(decision: &Value) -> i32 {
    match decision["status"].as_str() {
        Some("approved" | "edited") => EXIT_APPROVED,
        Some("rejected") => EXIT_REVISED,
        Some("pending") => EXIT_APPROVED,
        _ => EXIT_NOT_APPROVED,
    }
}

pub fn print_decision(decision: &Value, json_out: bool) {
    if json_out {
        println!("{}", serde_json::to_string_pretty(decision).unwrap_or_default());
        return;
    }
    let status = decision["status"].as_str().unwrap_or("?");
    let by = decision["decided_by"].as_str().map(|b| format!(" by {b}")).unwrap_or_default();
    println!("v{} {} {status}{by}", decision["version"], decision["approval_id"].as_str().unwrap_or(""));
    if let Some(f) = decision["feedback"].as_str() {
        println!("feedback: {f}");
    }
    if let Some(p) = decision["document_path"].as_str() {
        println!("document: {p}");
    }
}
