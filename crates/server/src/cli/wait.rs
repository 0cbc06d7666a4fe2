//! `plangate wait --session S [--approval ID | --accept-decided] [--timeout SECS] [--json] [--exec PROGRAM [ARGS]...]`:
//! wait for a session's decision and hand it to a local program (e.g. to
//! resume a headless agent).
//!
//! **Never a stale decision.** A runner that missed a failed `propose` (v1
//! approved, v2 refused) must not resume the agent on v1's approval. So
//! `--approval ID` binds the wait to one proposal (the id `plangate propose
//! --print-id` printed): if the session's latest proposal is another one, it
//! exits 4 and runs nothing. Without it, a decision that was already made
//! when `wait` started (seen by a first poll that does not wait) is refused
//! the same way, unless `--accept-decided` says that is what is meant.
//!
//! **Waiting.** Long-polls of at most 300 s, one after the other (the server
//! holds each until the decision, so nothing polls in between). A lost
//! connection, a timeout or a 5xx is retried with a jittered backoff of 1 s
//! doubling up to 30 s, for as long as the wait lasts: a restart of
//! `plangate serve` does not end it. Without `--timeout` it waits until the
//! latest proposal is decided; if the agent proposes again meanwhile, the
//! new version is the one waited for.
//!
//! **Running the program.** `--exec` takes the program and its arguments
//! as separate words, everything after it on the command line, and runs it
//! directly, never through a shell: the decision is agent-influenced text
//! (the feedback quotes the agent's plan) and is only ever passed as data,
//! in the environment (`PLANGATE_*`) and as the Decision JSON on stdin,
//! never spliced into a command line. Someone who wants a shell writes
//! `--exec sh -c '… "$PLANGATE_FEEDBACK" …'`, where the shell expands the
//! variable as a value. The program runs once, after the decision, with
//! plangate's own stdout and stderr.
//!
//! **Not delivered twice.** Before the program runs, the session's waiting
//! `[PLAN_DECISION]` text is taken (`POST …/injection/take`), so a hook or
//! channel that would hand it to the agent later finds nothing; the program
//! gets it in `PLANGATE_INJECTION`.

use super::{exit_code, print_decision, EXIT_NOT_APPROVED, EXIT_USAGE};
use anyhow::Result;
use plangate_agent::client::{AgentError, Timeouts, MAX_WAIT};
use plangate_agent::{session, Client};
use plangate_engine::view::DecisionView;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncWriteExt;

/// `--exec`'s program could not be started, or exited with a failure,
/// after the decision arrived (the decision is printed all the same).
pub const EXIT_EXEC_FAILED: i32 = 5;

/// The first wait after a failed connection; doubles up to [`MAX_RECONNECT`].
const FIRST_RECONNECT: Duration = Duration::from_secs(1);
const MAX_RECONNECT: Duration = Duration::from_secs(30);

/// `plangate wait`'s arguments.
pub struct WaitArgs {
    pub session: String,
    /// `None`: wait until decided.
    pub timeout: Option<Duration>,
    pub json: bool,
    /// Act only on this approval.
    pub approval: Option<String>,
    /// Without `approval`, also act on a decision made before the wait.
    pub accept_decided: bool,
    /// The program and its arguments; empty without `--exec`.
    pub exec: Vec<String>,
    pub token: String,
    pub url: String,
}

/// Wait, take the injection, print, run the program; the exit code is the
/// decision's (0 approved or edited, 3 changes requested, 4 not approved or
/// still pending at `--timeout`), 2 for usage errors, [`EXIT_EXEC_FAILED`]
/// when the program failed.
pub async fn wait_command(args: WaitArgs) -> Result<i32> {
    if !session::is_valid(&args.session) {
        eprintln!("plangate: --session {:?} is invalid: use 1–128 characters of A-Z a-z 0-9 . _ : -", args.session);
        return Ok(EXIT_USAGE);
    }
    if args.exec.first().is_some_and(|p| p.trim().is_empty()) {
        eprintln!("plangate: --exec needs a program to run, e.g. --exec ./resume.sh");
        return Ok(EXIT_USAGE);
    }
    if let Some(id) = &args.approval {
        if id.len() != 32 || !id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            eprintln!(
                "plangate: --approval {id:?} is not an approval id (32 lowercase hex characters, as `plangate propose --print-id` prints)"
            );
            return Ok(EXIT_USAGE);
        }
    }
    let client = Client::with_timeouts(&args.url, Some(args.token.clone()), Timeouts::CLI)?;
    let decision = match wait_for_decision(&client, &args.session, args.approval.as_deref(), args.timeout).await? {
        Waited::Decision(d) => d,
        Waited::NoProposal => {
            eprintln!(
                "plangate: session {:?} has no proposal yet; `plangate wait` follows a proposal's decision, so propose first",
                args.session
            );
            return Ok(EXIT_USAGE);
        }
        Waited::NotTheApproval(latest) => {
            eprintln!(
                "plangate: approval {} is not the latest proposal of session {:?} (that is v{} {}, {}): it was superseded or belongs to another session; nothing was run",
                args.approval.as_deref().unwrap_or_default(),
                args.session,
                latest.version,
                latest.approval_id,
                latest.status.as_str()
            );
            print_decision(&serde_json::to_value(&latest)?, args.json);
            return Ok(EXIT_NOT_APPROVED);
        }
        Waited::AlreadyDecided(d) if !args.accept_decided => {
            eprintln!(
                "plangate: plan v{} ({}) of session {:?} was already {} before `plangate wait` started; it may not be the plan you mean, so nothing was run. Pass --approval ID (the id `plangate propose --print-id` prints) to wait for one proposal, or --accept-decided to act on this decision",
                d.version,
                d.approval_id,
                args.session,
                d.status.as_str()
            );
            print_decision(&serde_json::to_value(&d)?, args.json);
            return Ok(EXIT_NOT_APPROVED);
        }
        Waited::AlreadyDecided(d) => d,
    };
    let code = exit_code(&decision, true);
    if !decision.is_final() {
        eprintln!("plangate: plan v{} still pending at --timeout; not approved", decision.version);
        print_decision(&serde_json::to_value(&decision)?, args.json);
        return Ok(EXIT_NOT_APPROVED);
    }
    let taken = take_injection(&client, &args.session).await;
    print_decision(&serde_json::to_value(&decision)?, args.json);
    if args.exec.is_empty() {
        return Ok(code);
    }
    // What is waiting for the agent: normally the decision's own text; if
    // another path delivered that already, the decision's text again.
    let injection = taken.or_else(|| decision.injection.clone()).unwrap_or_default();
    match run(&args.exec, &args.session, &decision, &injection, code).await {
        Ok(()) => Ok(code),
        Err(e) => {
            eprintln!("plangate: {e}");
            Ok(EXIT_EXEC_FAILED)
        }
    }
}

/// Whether a failed call is worth trying again: the server is unreachable,
/// slow, restarting or degraded, as opposed to refusing the call.
fn transient(e: &AgentError) -> bool {
    match e {
        AgentError::Unreachable { .. } | AgentError::Timeout { .. } => true,
        AgentError::Api { status, .. } => *status >= 500,
        AgentError::Protocol { .. } | AgentError::Usage(_) => false,
    }
}

/// How a wait ended.
#[derive(Debug)]
enum Waited {
    /// Decided while waiting (or, with `--approval`, the bound approval
    /// decided at any time); or still pending at `--timeout`.
    Decision(DecisionView),
    /// Without `--approval`: the latest proposal was already decided when
    /// the wait started.
    AlreadyDecided(DecisionView),
    /// With `--approval`: the session's latest proposal is another one.
    NotTheApproval(DecisionView),
    /// The session has no proposal.
    NoProposal,
}

/// Chained long-polls until the latest proposal is decided or `timeout`
/// has passed, reconnecting after transient failures. The first poll does
/// not wait, so a decision made before the wait is told apart from one made
/// during it. With `approval`, a latest proposal that is not that one ends
/// the wait at once.
async fn wait_for_decision(
    client: &Client,
    session: &str,
    approval: Option<&str>,
    timeout: Option<Duration>,
) -> Result<Waited, AgentError> {
    let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
    let left = || deadline.map(|d| d.saturating_duration_since(tokio::time::Instant::now()));
    let mut failures = 0u32;
    let mut first = true;
    loop {
        // Whole seconds, rounded up: the server's `wait` is in seconds.
        let wait = left().map_or(MAX_WAIT, |l| Duration::from_secs(l.as_millis().div_ceil(1000) as u64).min(MAX_WAIT));
        let wait = if first { Duration::ZERO } else { wait };
        match client.decision(session, wait).await {
            Ok(Some(d)) if approval.is_some_and(|id| id != d.approval_id) => return Ok(Waited::NotTheApproval(d)),
            Ok(Some(d)) if d.is_final() && first && approval.is_none() => return Ok(Waited::AlreadyDecided(d)),
            Ok(Some(d)) if d.is_final() => return Ok(Waited::Decision(d)),
            Ok(Some(d)) if !first && left().is_some_and(|l| l < Duration::from_millis(100)) => return Ok(Waited::Decision(d)),
            Ok(Some(_)) => {
                failures = 0;
                first = false;
            }
            Ok(None) => return Ok(Waited::NoProposal),
            Err(e) if transient(&e) => {
                failures += 1;
                let pause = reconnect_pause(failures, rand::random::<f64>());
                let pause = left().map_or(pause, |l| pause.min(l));
                if left().is_some_and(|l| l.is_zero()) {
                    return Err(e);
                }
                eprintln!("plangate: {e} (trying again in {:.1} s)", pause.as_secs_f64());
                tokio::time::sleep(pause).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// 1 s doubling up to 30 s, at a random point of its upper half.
fn reconnect_pause(failures: u32, jitter: f64) -> Duration {
    use plangate_basics::backoff::{after, jittered};
    jittered(after(failures, FIRST_RECONNECT, MAX_RECONNECT), jitter)
}

/// Take the session's waiting `[PLAN_DECISION]` text, retrying a transient
/// failure a few times. A failure is reported and not fatal: at worst the
/// agent is told the decision a second time by another path.
async fn take_injection(client: &Client, session: &str) -> Option<String> {
    for failures in 1..=5 {
        match client.take_injection(session).await {
            Ok(taken) => return taken,
            Err(e) if transient(&e) && failures < 5 => tokio::time::sleep(reconnect_pause(failures, rand::random::<f64>())).await,
            Err(e) => {
                eprintln!("plangate: could not take the decision text ({e}); another path may deliver it again");
                return None;
            }
        }
    }
    None
}

/// The decision as `PLANGATE_*` variables (empty when absent).
fn environment(session: &str, d: &DecisionView, injection: &str, code: i32) -> Vec<(&'static str, String)> {
    vec![
        ("PLANGATE_SESSION", session.to_string()),
        ("PLANGATE_DECISION_STATUS", d.status.as_str().to_string()),
        ("PLANGATE_APPROVAL_ID", d.approval_id.clone()),
        ("PLANGATE_VERSION", d.version.to_string()),
        ("PLANGATE_PLAN_HASH", d.plan_hash.clone()),
        ("PLANGATE_DECIDED_BY", d.decided_by.clone().unwrap_or_default()),
        ("PLANGATE_DECIDED_AT", d.decided_at.clone().unwrap_or_default()),
        ("PLANGATE_FEEDBACK", d.feedback.clone().unwrap_or_default()),
        ("PLANGATE_INJECTION", injection.to_string()),
        ("PLANGATE_EXIT_CODE", code.to_string()),
    ]
}

/// Run `argv` once with the decision in its environment and on its stdin.
async fn run(argv: &[String], session: &str, d: &DecisionView, injection: &str, code: i32) -> Result<(), String> {
    let program = &argv[0];
    // Values with a NUL byte cannot be in an environment; none of plangate's
    // texts carry one, but a clear refusal beats a confusing spawn error.
    let env = environment(session, d, injection, code);
    if let Some((name, _)) = env.iter().find(|(_, v)| v.contains('\0')) {
        return Err(format!("{name} contains a NUL byte, which cannot be passed in the environment; {program} was not run"));
    }
    let mut child = tokio::process::Command::new(program)
        .args(&argv[1..])
        .envs(env)
        .stdin(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {program:?}: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        let mut json = serde_json::to_vec(d).unwrap_or_default();
        json.push(b'\n');
        // A program that does not read its stdin closes it: not an error.
        let _ = stdin.write_all(&json).await;
    }
    let status = child.wait().await.map_err(|e| format!("waiting for {program:?} failed: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{program:?} exited with {status}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconnect_pauses_double_up_to_thirty_seconds() {
        assert_eq!(reconnect_pause(1, 1.0), Duration::from_secs(1));
        assert_eq!(reconnect_pause(2, 1.0), Duration::from_secs(2));
        assert_eq!(reconnect_pause(6, 1.0), Duration::from_secs(30));
        assert_eq!(reconnect_pause(u32::MAX, 0.0), Duration::from_secs(15));
    }

    #[test]
    fn only_an_unreachable_slow_or_failing_server_is_retried() {
        let api = |status| AgentError::Api { status, code: "x".into(), message: "m".into(), details: serde_json::Value::Null };
        assert!(transient(&AgentError::Unreachable { url: "u".into(), reason: "refused".into() }));
        assert!(transient(&AgentError::Timeout { url: "u".into(), secs: 1 }));
        assert!(transient(&api(503)));
        assert!(!transient(&api(401)));
        assert!(!transient(&api(404)));
        assert!(!transient(&AgentError::Usage("bad".into())));
    }
}
