//! The sum of the run's skips, in one line (see `plangate_testkit::skip`).
//! Named to run after the testkit's other tests; cargo runs the packages'
//! test binaries in name order, so it comes after every test that can skip.

#[test]
fn skips_of_this_run() {
    let summary = plangate_testkit::skip::summary();
    // Straight to stderr: libtest would hide a passing test's output.
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "{summary}");
    // Under PLANGATE_REQUIRE_ALL a missing prerequisite fails its test
    // instead of skipping, so nothing can have been logged.
    if plangate_testkit::skip::require_all() {
        assert!(summary.contains("no test was SKIPPED"), "{summary}");
    }
}
