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
//! (`crate::pg::TestSchema::create_or_skip`, and the store crate's own
//! tests, which say the same), chromedriver (the browser test).
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
    // Straight to the process's stderr: libtest captures `eprintln!` of a
    // passing test, and a skip nobody sees is a silent one.
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "SKIPPED ({missing}): {install_hint}");
}
