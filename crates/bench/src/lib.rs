//! plangate's benchmarks, and the seed's file store to compare against.
//!
//! Everything here measures; nothing here is used by plangate itself. The
//! figures and the commands that produce them are in `docs/PERFORMANCE.md`.
//!
//! * `benches/engine.rs` (criterion): `engine::apply` of every command kind.
//! * `src/bin/durable.rs`: durable transitions per second at 1, 16 and 64
//!   concurrent sessions, plangate against [`baseline::PlanStore`], beside a
//!   bare append+fsync loop on the same disk.
//! * `src/bin/e2e.rs`: the real `plangate` binary with the real teloxide
//!   client against the loopback fake Telegram: propose → card, tap → agent
//!   released, `POST /v1/gate`, the in-process gate, and memory.
//! * `src/bin/startup.rs`: 100,000 pending approvals on disk, time to ready
//!   (and, with `--web`, the web inbox and a plan page at that size).
//! * `src/bin/audit.rs`: one approval's audit trail out of a million sled
//!   audit entries, read from the end against a seek to its time.
//! * `src/bin/storm.rs`: a 10,000-nudge storm drained through the real
//!   Telegram, Slack and Discord clients against loopback fakes that enforce
//!   each platform's send limits (429s counted).
//!
//! * `src/bin/replicas.rs`: sled against PostgreSQL with one and three
//!   replicas through the real binary, and the wake-up across replicas.
//! * `src/bin/hook.rs`: `plangate hook claude` from spawn to exit, the
//!   process Claude Code starts for every tool call, beside an older build
//!   (`--baseline-bin`).
//!
//! **`--smoke`**: every benchmark takes it (`engine` too, under `cargo
//! test`): each part once, at tiny sizes, in seconds, on the build beside
//! the benchmark's own binary: to show it still runs, not to measure.
//! `bash crates/bench/run-all.sh --smoke` runs them all (debug build), and
//! so does `.ci/run`, so a benchmark cannot rot unnoticed.
//!
//! The shared pieces: [`workload`] (the plans and commands every benchmark
//! uses), [`baseline`], [`stats`] (percentiles and rates), [`sys`]
//! (machine description, RSS, raw sync rates) and [`server`] (start the
//! binary, wait for ready).

pub mod baseline;
pub mod server;
pub mod stats;
pub mod sys;
pub mod workload;

/// The `plangate` binary to run: `$PLANGATE_BIN`, else the release build in
/// `$CARGO_TARGET_DIR` (or `target`), else the debug build. A `--smoke`
/// run takes the one beside its own binary first (`target/debug/plangate`
/// for `target/debug/e2e`): it checks what was built with it, never a
/// stale release build.
pub fn plangate_bin() -> String {
    if let Ok(bin) = std::env::var("PLANGATE_BIN") {
        return bin;
    }
    if smoke() {
        let beside = std::env::current_exe().ok().and_then(|exe| Some(exe.parent()?.join("plangate")));
        if let Some(bin) = beside.filter(|bin| bin.is_file()) {
            return bin.display().to_string();
        }
    }
    let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../target").to_string());
    let release = format!("{target}/release/plangate");
    if std::path::Path::new(&release).exists() {
        return release;
    }
    format!("{target}/debug/plangate")
}

/// `--name value` from the command line, parsed, or `default`.
pub fn arg<T: std::str::FromStr>(name: &str, default: T) -> T {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Whether `--name` is on the command line.
pub fn flag(name: &str) -> bool {
    std::env::args().any(|a| a == name)
}

/// Whether this is a `--smoke` run: every part once at tiny sizes (see the
/// crate docs).
pub fn smoke() -> bool {
    flag("--smoke")
}

/// `--name value` from the command line, parsed, or `full`; `smoke` instead
/// of `full` in a `--smoke` run.
pub fn sized<T: std::str::FromStr>(name: &str, full: T, smoke: T) -> T {
    arg(name, if self::smoke() { smoke } else { full })
}

/// Every approval `GET /v1/approvals?status=<status>` lists, page after page
/// of `limit` (docs/API.md: each full page's `Link: <path>; rel="next"`
/// names the next): how many there are, and in how many pages.
pub async fn count_approvals(http: &reqwest::Client, base: &str, operator_token: &str, status: &str, limit: usize) -> (usize, usize) {
    let (mut listed, mut pages) = (0, 0);
    let mut next = Some(format!("/v1/approvals?status={status}&limit={limit}"));
    while let Some(path) = next.take() {
        let r = http.get(format!("{base}{path}")).bearer_auth(operator_token).send().await.expect("GET /v1/approvals");
        assert!(r.status().is_success(), "GET {path}: {}", r.status());
        next = r.headers().get(reqwest::header::LINK).and_then(|v| v.to_str().ok()).and_then(next_page);
        let page: Vec<serde_json::Value> = r.json().await.expect("a page of approvals");
        listed += page.len();
        pages += 1;
    }
    (listed, pages)
}

/// The path of `<path>; rel="next"` (the one link plangate sends).
fn next_page(link: &str) -> Option<String> {
    let (path, rel) = link.trim().strip_prefix('<')?.split_once('>')?;
    (rel.trim() == "; rel=\"next\"" && path.starts_with('/')).then(|| path.to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_next_page_is_the_path_of_the_next_link() {
        let link = "</v1/approvals?status=pending&limit=100&after=00ab>; rel=\"next\"";
        assert_eq!(super::next_page(link).as_deref(), Some("/v1/approvals?status=pending&limit=100&after=00ab"));
        assert_eq!(super::next_page("</a>; rel=\"prev\""), None);
        assert_eq!(super::next_page("<https://elsewhere/a>; rel=\"next\""), None);
    }
}
