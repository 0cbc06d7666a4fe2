//! The model the engine is checked against: building the world, applying
//! one generated operation, and the invariants over every proposal seen.

use super::*;

impl World {
    pub(super) fn new() -> World {
        World {
            states: (0..SESSIONS).map(|s| State::new(key(s))).collect(),
            now: T0,
            counter: 0,
            seen: HashMap::new(),
            ids: Vec::new(),
            question_ids: BTreeSet::new(),
            proposed_hash: HashMap::new(),
            edited_hash: HashMap::new(),
            timers: Vec::new(),
            scheduled: BTreeSet::new(),
            refusals: 0,
            decisions: 0,
            expired: 0,
            cleared: 0,
            amendments: 0,
            amendments_decided: 0,
        }
    }

    fn fresh(&mut self) -> [u8; 16] {
        self.counter += 1;
        self.counter.to_be_bytes()
    }

    fn target(&self, s: usize, t: &Target) -> ApprovalId {
        match t {
            Target::Current => self.states[s].latest.as_ref().map(|p| p.approval_id).unwrap_or(ApprovalId([0xFE; 16])),
            Target::Seen(i) if !self.ids.is_empty() => self.ids[i % self.ids.len()],
            Target::Seen(_) => ApprovalId([0xFD; 16]),
            Target::Unknown(b) => {
                let mut bytes = [0xFF; 16];
                bytes[15] = *b;
                ApprovalId(bytes)
            }
        }
    }

    /// Apply one command to session `s`, check every invariant, and advance
    /// the model. Returns what `apply` returned.
    pub(super) fn apply(&mut self, s: usize, who: Who, command: Command, random: [u8; 16]) -> Result<Transition, Refusal> {
        let ctx = Ctx { now: Timestamp(self.now), random, timers: policy(), approvals: ApprovalPolicy::default() };
        let before = self.states[s].clone();
        let result = apply(&self.states[s], &who.actor(), command.clone(), &ctx);
        // The engine got a shared reference; refusals therefore change nothing,
        // and the model keeps the old state.
        assert_eq!(self.states[s], before);
        match &result {
            Err(refusal) => {
                self.refusals += 1;
                self.check_refusal(s, who, &command, refusal, &before);
            }
            Ok(t) => {
                self.check(s, who, &command, &before, t);
                self.expired += t.audit.iter().filter(|a| a.action == "subagent_expired").count();
                self.amendments += t.audit.iter().filter(|a| a.action == "amend").count();
                let amendment_decided = before.session.amendment_pending.is_some() && t.state.session.amendment_pending.is_none();
                self.amendments_decided += usize::from(amendment_decided && matches!(command, Command::Decide { .. }));
                self.cleared += usize::from(matches!(command, Command::ClearSubagents { .. }));
                self.states[s] = t.state.clone();
            }
        }
        self.check_world();
        result
    }

    /// Refusals that must happen no matter what else is true.
    fn check_refusal(&self, s: usize, who: Who, command: &Command, refusal: &Refusal, before: &State) {
        let _ = s;
        let person_only = matches!(
            command,
            Command::Decide { .. }
                | Command::Off
                | Command::CancelApproval(_)
                | Command::SetAuto(_)
                | Command::Answer { .. }
                | Command::ClearSubagents { .. }
        );
        let agent_only = matches!(
            command,
            Command::UpdatePlan { .. }
                | Command::Propose { .. }
                | Command::RegisterSubagent(_)
                | Command::UnregisterSubagent(_)
                | Command::Ask { .. }
                | Command::TakeInjection
                | Command::WidenScope { .. }
        );
        if (person_only && !who.is_person()) || (agent_only && who != Who::Agent) {
            assert!(matches!(refusal, Refusal::Forbidden(_)), "{who:?} {}: {refusal:?}", command.name());
        }
        if let Command::Decide { approval_id, .. } | Command::CancelApproval(approval_id) = command {
            let decidable = before.latest.as_ref().is_some_and(|p| p.approval_id == *approval_id && p.status == DecisionStatus::Pending);
            if who.is_person() && !decidable {
                assert!(matches!(refusal, Refusal::Stale(_)), "stale {approval_id}: {refusal:?}");
            }
        }
    }

    /// World-wide invariants over every proposal ever seen.
    pub(super) fn check_world(&self) {
        for s in 0..SESSIONS {
            let pending: Vec<&Proposal> =
                self.seen.values().filter(|(o, p)| *o == s && p.status == DecisionStatus::Pending).map(|(_, p)| p).collect();
            assert!(pending.len() <= 1, "{} pending approvals in session {s}", pending.len());
            if let Some(p) = pending.first() {
                assert_eq!(self.states[s].latest.as_ref(), Some(*p), "the pending approval is not the latest");
            }
            if let Some(latest) = &self.states[s].latest {
                assert_eq!(self.seen.get(&latest.approval_id).map(|(_, p)| p), Some(latest));
            }
        }
        for (id, (_, p)) in &self.seen {
            let view = DecisionView::of(p);
            assert_eq!(view.approval_id, id.to_string());
            match p.status {
                DecisionStatus::Approved => {
                    let proposed = &self.proposed_hash[id];
                    assert_eq!(&view.plan_hash, proposed, "approved hash is not the proposed hash");
                    assert!(p.injection.as_ref().unwrap().contains(proposed.as_str()));
                    assert!(view.plan.is_none());
                }
                DecisionStatus::Edited => {
                    let edited = &self.edited_hash[id];
                    assert_eq!(&view.plan_hash, edited, "edited hash is not the edited plan's hash");
                    assert!(p.injection.as_ref().unwrap().contains(edited.as_str()));
                    assert_eq!(view.plan.as_ref(), p.edited_plan.as_ref());
                }
                _ => assert_eq!(&view.plan_hash, &self.proposed_hash[id]),
            }
        }
    }

    pub(super) fn run(&mut self, op: &Op) {
        self.now += i64::from(op.dt);
        let s = op.session;
        match &op.act {
            Act::Enter(who) => {
                let random = self.fresh();
                let _ = self.apply(s, *who, Command::Enter { reason: Some("look around".into()) }, random);
            }
            Act::Update { steps, merge, who } => {
                let random = self.fresh();
                let cmd = Command::UpdatePlan {
                    steps: step_list(*steps).into_iter().map(StepUpdate::from).collect(),
                    merge: *merge,
                    explanation: None,
                };
                let _ = self.apply(s, *who, cmd, random);
            }
            Act::Propose { plan, markdown, collide, who } => {
                let plan = proposal_plan(*plan);
                let markdown = markdown.then(|| render_markdown(&plan));
                let latest = self.states[s].latest.as_ref().map(|p| p.approval_id);
                let random = match latest {
                    Some(id) if *collide => id.0,
                    _ => self.fresh(),
                };
                let result = self.apply(
                    s,
                    *who,
                    Command::Propose { plan, markdown, requested_by: None, harness: plangate_engine::Harness::Api, project: None },
                    random,
                );
                if let (Some(id), true, Ok(t)) = (latest, *collide, &result) {
                    // A colliding id is either refused or the idempotent no-op.
                    assert!(!t.changed, "a proposal was minted with the latest id {id}");
                }
            }
            Act::Decide { who, target, verdict } => {
                let id = self.target(s, target);
                let random = self.fresh();
                let _ = self.apply(s, *who, Command::Decide { approval_id: id, verdict: verdict_of(verdict) }, random);
            }
            Act::Race { target, first, second } => {
                let id = self.target(s, target);
                let random = self.fresh();
                let won = self.apply(s, Who::Alice, Command::Decide { approval_id: id, verdict: verdict_of(first) }, random);
                let random = self.fresh();
                let lost = self.apply(s, Who::Bob, Command::Decide { approval_id: id, verdict: verdict_of(second) }, random);
                if won.is_ok() {
                    match lost {
                        Err(Refusal::Stale(message)) => {
                            assert!(message.contains("telegram:@alice"), "the loser is not told who won: {message}")
                        }
                        other => panic!("both approvers won: {other:?}"),
                    }
                }
            }
            Act::Off(who) => {
                let random = self.fresh();
                let _ = self.apply(s, *who, Command::Off, random);
            }
            Act::CancelButton { who, target } => {
                let id = self.target(s, target);
                let random = self.fresh();
                let _ = self.apply(s, *who, Command::CancelApproval(id), random);
            }
            Act::Auto { who, on } => {
                let random = self.fresh();
                let _ = self.apply(s, *who, Command::SetAuto(*on), random);
            }
            Act::Subagent { who, run, open } => {
                let run = format!("run-{run}");
                let cmd = if *open { Command::RegisterSubagent(run) } else { Command::UnregisterSubagent(run) };
                let random = self.fresh();
                let _ = self.apply(s, *who, cmd, random);
            }
            Act::ClearSubagents { who, run } => {
                let run_id = run.map(|r| format!("run-{r}"));
                let random = self.fresh();
                let _ = self.apply(s, *who, Command::ClearSubagents { run_id }, random);
            }
            Act::Ask { who, options, freetext } => {
                let options = (0..*options).map(|i| format!("option {i}")).collect();
                let random = self.fresh();
                let _ = self.apply(s, *who, Command::Ask { question: "Which?".into(), options, allow_freetext: *freetext }, random);
            }
            Act::Answer { who, pick, right_id } => {
                let q = self.states[s].session.pending_question.as_ref();
                let question_id = match (q, right_id) {
                    (Some(q), true) => Some(q.question_id),
                    (_, true) => None,
                    (_, false) => Some(ApprovalId([0xFC; 16])),
                };
                let answer = format!("option {pick}");
                let random = self.fresh();
                let _ = self.apply(s, *who, Command::Answer { question_id, answer }, random);
            }
            Act::Take(who) => {
                let random = self.fresh();
                let _ = self.apply(s, *who, Command::TakeInjection, random);
            }
            Act::Fire { recent, index } => {
                let n = self.timers.len();
                if n == 0 {
                    return;
                }
                let timer = if *recent { self.timers[n - 1 - index % n.min(6)].clone() } else { self.timers[index % n].clone() };
                let s = (0..SESSIONS).find(|s| key(*s) == timer.session).expect("a timer of a known session");
                self.now = self.now.max(timer.due.0);
                let current = match timer.kind {
                    // Agent nudges belong to the planning round, not a proposal.
                    TimerKind::AgentNudge(_) => self.states[s].session.agent_timers.contains(&timer),
                    TimerKind::SubagentExpiry => self.states[s]
                        .session
                        .open_subagents
                        .iter()
                        .any(|(id, run)| subagents::timer_id(&key(s), id) == timer.approval_id && run.expires_at == Some(timer.due)),
                    _ => self.states[s].latest.as_ref().map(|p| p.approval_id) == Some(timer.approval_id),
                };
                let random = self.fresh();
                let result = self.apply(s, Who::Scheduler, Command::TimerFired(timer.clone()), random);
                let t = result.expect("the scheduler's timers are never refused");
                if !current {
                    assert!(!t.changed, "a stale timer changed something");
                }
            }
        }
    }
}
