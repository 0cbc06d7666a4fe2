//! Permission rules (`plangate_engine::permission::Rule`), the
//! `Tool(pattern)` text an approver's "always allow", the configuration's
//! `allow`/`ask`/`deny` lists and the stored rules are read from.
//!
//! Beyond "no panic": a rule that parses round-trips, through its text
//! (`Display` then `parse`) and through serde (the form the store keeps).
#![no_main]

use libfuzzer_sys::fuzz_target;
use plangate_engine::permission::Rule;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(rule) = Rule::parse(text) else { return };
    let shown = rule.to_string();
    assert_eq!(Rule::parse(&shown), Ok(rule.clone()), "{text:?} parsed as {rule:?}, displayed as {shown:?}, which parses differently");
    let stored = serde_json::to_string(&rule).expect("a rule serializes");
    let back: Rule = match serde_json::from_str(&stored) {
        Ok(back) => back,
        Err(e) => panic!("{text:?} parsed as {rule:?}, stored as {stored}, which does not load: {e}"),
    };
    assert_eq!(back, rule, "{text:?} parsed as {rule:?}, stored as {stored}, which loads differently");
});
