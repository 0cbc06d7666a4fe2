//! Skipping a test whose outside prerequisite is missing: loudly, and never
//! in CI.
//!
//! A test that needs something the machine may not have (a pinned agent
//! client, chromedriver, …) asks [`require`]. When the thing is there, the
//! test goes on. When it is not, the test prints one line to stderr,
//! `SKIPPED (<what> not installed: <why>): <hint>`, and returns early —
//! unless `PLANGATE_REQUIRE_ALL` is set (CI sets it), in which case it
//! panics with `MISSING (…)` and the same words: in CI a missing
//! prerequisite is a failure, not a skip.
//!
//! Users: the pinned agent clients (`crate::clients`), PostgreSQL
//! (`crate::pg::TestSchema::create_or_skip` and `crate::pg::url_or_skip`,
//! the store crate's own tests, `plangate doctor`'s probe test),
//! chromedriver (the browser test). Nothing else may need them: the
//! README's `cargo test --workspace` passes on a machine with only Rust,
//! which `.ci/run` checks by running the whole suite once with all three
//! hidden.
//!
//! **Summed up at the end of the run.** libtest has no hook after the last
//! test of a run, and `cargo test` runs each test binary as a process of
//! its own. So every skip also appends a line to the run's log,
//! `<target>/<profile>/plangate-skips/run-<pid of cargo>.log` (the test
//! binaries of one `cargo test` share their parent, cargo), and says how
//! many the run has so far; the testkit's `zz_skip_summary` test, which
//! cargo runs after every test binary that can skip (packages run in name
//! order, `plangate-testkit`'s tests after the server's and the store's;
//! only the web crate's unit tests and the doc-tests, which never skip,
//! come later), prints the sum in one line and removes the log
//! ([`summary`]).
//!
//! ```ignore
//! let Some(claude) = plangate_testkit::clients::claude_code() else { return };
//! ```

/// The variable that turns every skip into a failure.
pub const REQUIRE_ALL_ENV: &str = "PLANGATE_REQUIRE_ALL";

/// Whether skips are failures in this run (`PLANGATE_REQUIRE_ALL` is set to
/// anything but the empty string or `0`).
pub fn require_all() -> bool {
    std::env::var(REQUIRE_ALL_ENV).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// `found` when it is `Ok`; otherwise report the skip (see the module docs)
/// and return `None`, or panic under `PLANGATE_REQUIRE_ALL`.
///
/// `what` names the prerequisite (`Claude Code 2.1.328`), `install_hint`
/// says how to get it (`run .ci/install-clients`); the error of `found`
/// says why it is not usable.
pub fn require<T>(what: &str, install_hint: &str, found: Result<T, String>) -> Option<T> {
    match found {
        Ok(found) => Some(found),
        Err(why) => {
            skip(what, &why, install_hint);
            None
        }
    }
}

/// Report that the test is skipped because `what` is missing (`why`).
/// Panics instead under `PLANGATE_REQUIRE_ALL`.
pub fn skip(what: &str, why: &str, install_hint: &str) {
    // One line, whatever the error text holds (psql's has several).
    let why = why.split_whitespace().collect::<Vec<_>>().join(" ");
    let missing = format!("{what} not installed: {why}");
    if require_all() {
        panic!("MISSING ({missing}): {install_hint}. {REQUIRE_ALL_ENV} is set, so the test fails instead of skipping");
    }
    let line = format!("SKIPPED ({missing}): {install_hint}");
    let so_far = record(&line).map(|n| format!(" [skip {n} of this run]")).unwrap_or_default();
    // Straight to the process's stderr: libtest captures `eprintln!` of a
    // passing test, and a skip nobody sees is a silent one.
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "{line}{so_far}");
}

/// The log of this `cargo test` run's skips: beside the test binaries,
/// named after their parent process (cargo). `None` when the binary's
/// place cannot be known.
pub fn run_log() -> Option<std::path::PathBuf> {
    let exe = std::env::current_exe().ok()?;
    // target/<profile>/deps/<binary>
    let profile = exe.parent()?.parent()?;
    Some(profile.join("plangate-skips").join(format!("run-{}.log", std::os::unix::process::parent_id())))
}

/// Append `line` (the test that skipped, then what was missing) to the
/// run's log; how many lines it has now.
fn record(line: &str) -> Option<usize> {
    use std::io::Write as _;
    let path = run_log()?;
    std::fs::create_dir_all(path.parent()?).ok()?;
    let test = std::thread::current().name().unwrap_or("?").to_string();
    // One `write` of a line under O_APPEND: the tests of a binary skip side by side.
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&path).ok()?;
    file.write_all(format!("{test}: {line}\n").as_bytes()).ok()?;
    Some(std::fs::read_to_string(&path).ok()?.lines().count())
}

/// The one line that sums up this run's skips (from [`run_log`]), and
/// the log removed. Every skip is listed with its test, so the line says
/// what to install.
pub fn summary() -> String {
    let Some(path) = run_log() else { return "plangate-testkit: cannot tell where this run's skips were logged".to_string() };
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let _ = std::fs::remove_file(&path);
    let mut missing: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for line in text.lines() {
        let what = line.split_once("SKIPPED (").and_then(|(_, rest)| rest.split_once(" not installed")).map(|(what, _)| what);
        *missing.entry(what.unwrap_or("?").to_string()).or_default() += 1;
    }
    let total: usize = missing.values().sum();
    if total == 0 {
        return "plangate-testkit: no test was SKIPPED in this run".to_string();
    }
    let by_what: Vec<String> = missing.iter().map(|(what, n)| format!("{n} × {what}")).collect();
    format!(
        "plangate-testkit: {total} test(s) SKIPPED in this run for a missing prerequisite ({}); the SKIPPED lines above say what to install, CONTRIBUTING.md how; {REQUIRE_ALL_ENV}=1 makes them failures",
        by_what.join(", ")
    )
}
