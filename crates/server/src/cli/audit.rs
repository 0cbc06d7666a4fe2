//! `plangate audit`: the trail (list), `audit export` (the chain as JSONL
//! from a running server), `audit verify` (offline, no server) and
//! `audit key` (the public key checkpoints are signed with).

use super::Client;
use anyhow::{bail, Context, Result};
use plangate_audit::{Broken, Checkpoint, Verifier, VerifyingKey};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

/// `plangate audit [export|verify|key]`; without a subcommand, the trail.
#[derive(clap::Args)]
pub struct AuditArgs {
    #[command(subcommand)]
    pub command: Option<AuditCmd>,
    #[arg(long)]
    pub session: Option<String>,
    #[arg(long)]
    pub agent: Option<String>,
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    #[arg(long, env = "PLANGATE_OPERATOR_TOKEN", hide_env_values = true, global = true)]
    pub operator_token: Option<String>,
    /// Base URL of a running plangate.
    #[arg(long, env = "PLANGATE_URL", default_value = "http://127.0.0.1:8787", global = true)]
    pub url: String,
}

#[derive(clap::Subcommand)]
pub enum AuditCmd {
    /// Write the audit chain with its checkpoints as JSONL (operator token); the export is itself audited.
    Export {
        /// From the first record at or after this: RFC 3339 (2026-12-01T00:00:00Z), an age (24h, 7d) or ms since the epoch.
        #[arg(long)]
        since: Option<String>,
        /// Write here (FILE.partial until complete) instead of stdout.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Check an export offline: exit 0 when intact, 1 when not, naming the first bad line and record.
    Verify {
        file: PathBuf,
        /// The public key (64 hex digits, `plangate audit key`) or a file holding it; checks every checkpoint's signature.
        #[arg(long)]
        key: Option<String>,
        /// The checkpoint file kept off the machine (`[audit] checkpoint_file`): a cut tail is caught against it.
        #[arg(long)]
        checkpoints: Option<PathBuf>,
    },
    /// Print the public key the audit's checkpoints are signed with (from the data dir's audit-key).
    Key {
        #[arg(long)]
        config: Option<PathBuf>,
        /// The data dir (default: the config's server.data_dir).
        #[arg(long)]
        data_dir: Option<PathBuf>,
    },
}

pub async fn audit(args: AuditArgs) -> Result<i32> {
    match args.command {
        None => list(&args.url, args.operator_token, args.session, args.agent, args.limit).await,
        Some(AuditCmd::Export { since, out }) => export(&args.url, args.operator_token, since.as_deref(), out.as_deref()).await,
        Some(AuditCmd::Verify { file, key, checkpoints }) => verify(&file, key.as_deref(), checkpoints.as_deref()),
        Some(AuditCmd::Key { config, data_dir }) => key(config.as_deref(), data_dir),
    }
}

fn operator_token(token: Option<String>) -> Result<String> {
    token.context("this needs the operator token: set PLANGATE_OPERATOR_TOKEN or pass --operator-token")
}

async fn list(url: &str, token: Option<String>, session: Option<String>, agent: Option<String>, limit: usize) -> Result<i32> {
    let client = Client::new(url, Some(operator_token(token)?))?;
    let mut path = format!("/v1/audit?limit={limit}");
    if let Some(s) = session {
        path.push_str(&format!("&session={s}"));
    }
    if let Some(a) = agent {
        path.push_str(&format!("&agent={a}"));
    }
    let events = client.ok(reqwest::Method::GET, &path, None).await?;
    for e in events.as_array().into_iter().flatten() {
        let at = plangate_engine::Timestamp(e["at"].as_i64().unwrap_or(0)).rfc3339();
        println!(
            "{at}  {}/{}  {}  {}  {}",
            e["agent"].as_str().unwrap_or(""),
            e["session_id"].as_str().unwrap_or(""),
            e["actor"].as_str().unwrap_or(""),
            e["action"].as_str().unwrap_or(""),
            e["detail"].as_str().unwrap_or("")
        );
    }
    Ok(0)
}

/// `--since` as milliseconds since the epoch.
fn since_ms(text: &str) -> Result<i64> {
    if let Ok(ms) = text.parse::<i64>() {
        return Ok(ms);
    }
    let at = match humantime::parse_rfc3339_weak(text) {
        Ok(at) => at,
        Err(_) => {
            let age = humantime::parse_duration(text)
                .with_context(|| format!("--since {text:?}: expected RFC 3339, an age like 24h, or ms since the epoch"))?;
            std::time::SystemTime::now().checked_sub(age).context("--since: too far back")?
        }
    };
    let ms = at.duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
    Ok(i64::try_from(ms).unwrap_or(i64::MAX))
}

async fn export(url: &str, token: Option<String>, since: Option<&str>, out: Option<&Path>) -> Result<i32> {
    let token = operator_token(token)?;
    let mut path = format!("{}/v1/operator/audit/export", url.trim_end_matches('/'));
    if let Some(since) = since {
        path.push_str(&format!("?since={}", since_ms(since)?));
    }
    let mut resp = reqwest::Client::new()
        .get(&path)
        .bearer_auth(token)
        .send()
        .await
        .with_context(|| format!("cannot reach plangate at {url}; is `plangate serve` running there?"))?;
    let status = resp.status();
    if !status.is_success() {
        bail!("plangate refused the export ({status}): {}", resp.text().await.unwrap_or_default());
    }
    let partial = out.map(|o| o.with_extension("partial"));
    let mut sink: Box<dyn Write> = match &partial {
        Some(p) => Box::new(std::io::BufWriter::new(std::fs::File::create(p).with_context(|| format!("cannot write {}", p.display()))?)),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut bytes = 0usize;
    while let Some(chunk) = resp.chunk().await.context("the export was cut off (what was written does not verify)")? {
        sink.write_all(&chunk)?;
        bytes += chunk.len();
    }
    sink.flush()?;
    drop(sink);
    if let (Some(partial), Some(out)) = (partial, out) {
        std::fs::File::open(&partial).and_then(|f| f.sync_all()).with_context(|| format!("cannot sync {}", partial.display()))?;
        std::fs::rename(&partial, out).with_context(|| format!("cannot rename {} to {}", partial.display(), out.display()))?;
        eprintln!("audit exported to {} ({bytes} bytes); check it with `plangate audit verify {}`", out.display(), out.display());
    }
    Ok(0)
}

/// `--key`: the hex itself, or a file holding it.
fn verifying_key(arg: &str) -> Result<VerifyingKey> {
    let text = if arg.len() == 64 && arg.bytes().all(|b| b.is_ascii_hexdigit()) {
        arg.to_string()
    } else {
        std::fs::read_to_string(arg).with_context(|| format!("--key {arg:?} is neither 64 hex digits nor a readable file"))?
    };
    let mut bytes = [0u8; 32];
    hex::decode_to_slice(text.trim(), &mut bytes).context("--key: expected the 64 hex digits `plangate audit key` prints")?;
    VerifyingKey::from_bytes(&bytes).context("--key is not an Ed25519 public key")
}

fn read_checkpoints(path: &Path) -> Result<Vec<Checkpoint>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    text.lines()
        .enumerate()
        .map(|(i, line)| Checkpoint::parse(line).with_context(|| format!("{} line {}: not a checkpoint", path.display(), i + 1)))
        .collect()
}

/// Offline: no server, no store. Exit 0 intact, 1 not.
pub fn verify(file: &Path, key: Option<&str>, checkpoints: Option<&Path>) -> Result<i32> {
    let key = key.map(verifying_key).transpose()?;
    let external = checkpoints.map(read_checkpoints).transpose()?.unwrap_or_default();
    let input = std::fs::File::open(file).with_context(|| format!("cannot open {}", file.display()))?;
    let mut verifier = Verifier::new(key.as_ref());
    for line in std::io::BufReader::new(input).split(b'\n') {
        let line = line.with_context(|| format!("cannot read {}", file.display()))?;
        if verifier.line_bytes(&line).is_err() {
            break;
        }
    }
    match verifier.finish(&external) {
        Ok(v) => {
            let range = match (v.first_seq, v.last_seq) {
                (Some(first), Some(last)) => format!("records {first}–{last}"),
                _ => "no records".to_string(),
            };
            println!("intact: {} records ({range}), {} checkpoints matched", v.records, v.checkpoints);
            if !v.signed {
                println!("signatures NOT checked: pass --key (the output of `plangate audit key` on the server)");
            }
            if external.is_empty() {
                println!("a cut tail is caught only against a checkpoint kept elsewhere: pass --checkpoints FILE");
            }
            Ok(0)
        }
        Err(broken) => {
            println!("NOT intact: {broken}");
            if let Broken::CutTail { .. } = broken {
                println!("the export lacks records a checkpoint signed");
            }
            Ok(1)
        }
    }
}

fn key(config: Option<&Path>, data_dir: Option<PathBuf>) -> Result<i32> {
    let data_dir = match data_dir {
        Some(d) => d,
        None => crate::config::Settings::load(config)?.data_dir,
    };
    let key = crate::audit::read_key(&data_dir).with_context(|| "start `plangate serve` once to make the audit key")?;
    println!("{}", crate::audit::public_hex(&key));
    Ok(0)
}
