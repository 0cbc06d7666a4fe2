//! The engine's plan-markdown reader, `plan::plan_from_markdown` (what
//! `POST /v1/.../plan` with a markdown body and the hooks' ExitPlanMode /
//! `<proposed_plan>` texts go through), fed any text.
//!
//! Beyond "no panic": a plan it returns passes `validate_plan`; the
//! document `render_markdown` makes of it reads back without a panic, and
//! (it is a plan with a valid title and steps) reads back as a plan.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plangate_engine::plan::{plan_from_markdown, render_markdown, validate_plan};

fuzz_target!(|data: &[u8]| {
    let Ok(markdown) = std::str::from_utf8(data) else { return };
    for title in [None, Some("Fuzzed title")] {
        let Ok(plan) = plan_from_markdown(markdown, title) else { continue };
        if let Err(e) = validate_plan(&plan) {
            panic!("plan_from_markdown returned a plan that validate_plan refuses ({e}): {plan:?}");
        }
        let rendered = render_markdown(&plan);
        let _ = plan_from_markdown(&rendered, None);
        let _ = plan_from_markdown(&rendered, Some(&plan.title));
    }
});
