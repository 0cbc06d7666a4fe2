//! Property tests of the invariants in `docs/STATE_MACHINE.md`: random
//! interleavings of agent, human, operator and scheduler commands over
//! several sessions, checked against a model after every single step.
//!
//! Ids come from a counter (the engine's "random" bytes), with deliberate
//! collisions against the session's latest proposal; stale and unknown ids
//! are aimed at on purpose.

use plangate_engine::plan::{plan_hash, render_markdown, validate_plan};
use plangate_engine::receipt::Receipt;
use plangate_engine::subagents;
use plangate_engine::text::reveal;
use plangate_engine::view::DecisionView;
use plangate_engine::*;
use plangate_engine::{card, chains};
use proptest::prelude::*;
use std::collections::{BTreeSet, HashMap};

mod checks;
mod inputs;
mod world;

use inputs::*;

// ------------------------------------------------------------------- model

struct World {
    states: Vec<State>,
    now: i64,
    counter: u128,
    /// Every proposal ever seen, as last seen, with its session.
    seen: HashMap<ApprovalId, (usize, Proposal)>,
    /// In order of first sighting, for `Target::Seen`.
    ids: Vec<ApprovalId>,
    question_ids: BTreeSet<ApprovalId>,
    /// The hash of what the agent proposed under each id.
    proposed_hash: HashMap<ApprovalId, String>,
    /// The hash of the edited plan an approver approved under each id.
    edited_hash: HashMap<ApprovalId, String>,
    /// Every timer ever scheduled (never removed: firing stale ones is the point).
    timers: Vec<Timer>,
    scheduled: BTreeSet<Timer>,
    refusals: usize,
    decisions: usize,
    /// Subagent runs that expired, and clears by a person that went through.
    expired: usize,
    cleared: usize,
    /// Amendments opened by steps added while executing, and decisions of them.
    amendments: usize,
    amendments_decided: usize,
}

fn assert_one_envelope(text: &str) {
    let lower = text.to_ascii_lowercase();
    assert!(lower.starts_with("[plan_decision]: "), "{text}");
    assert!(lower.ends_with("\n[/plan_decision]"), "{text}");
    assert_eq!(lower.matches("[plan_decision").count(), 1, "forged header in {text}");
    assert_eq!(lower.matches("[/plan_decision").count(), 1, "forged footer in {text}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold_under_random_interleavings(ops in prop::collection::vec(op(), 1..120)) {
        let mut world = World::new();
        for op in &ops {
            world.run(op);
        }
    }
}

/// The generator must actually reach the interesting states, or the property
/// above proves little: run a fixed long sequence and count what happened.
#[test]
fn the_generator_reaches_decisions_refusals_and_collisions() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    let mut runner = TestRunner::new_with_rng(Config::default(), TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let mut world = World::new();
    let mut statuses = BTreeSet::new();
    for _ in 0..4000 {
        let op = op().new_tree(&mut runner).unwrap().current();
        world.run(&op);
        for (_, p) in world.seen.values() {
            statuses.insert(p.status.as_str());
        }
    }
    assert!(world.decisions > 50, "only {} decisions", world.decisions);
    assert!(world.expired > 5, "only {} subagent runs expired", world.expired);
    assert!(world.cleared > 5, "only {} clears of subagent runs", world.cleared);
    assert!(world.refusals > 50, "only {} refusals", world.refusals);
    assert!(world.amendments > 5, "only {} amendments", world.amendments);
    // Rare (an amendment is usually superseded or withdrawn first): their
    // decisions have their rows in tests/amendments.rs.
    assert!(world.amendments_decided >= 1, "no amendment decided");
    for s in ["approved", "edited", "rejected", "timed_out", "cancelled", "superseded"] {
        assert!(statuses.contains(s), "never reached {s}: {statuses:?}");
    }
}
