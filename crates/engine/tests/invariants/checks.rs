//! The invariants checked after every single transition: what may change,
//! who may change it, and what a decision must carry.

use super::*;

impl World {
    pub(super) fn check(&mut self, s: usize, who: Who, command: &Command, before: &State, t: &Transition) {
        let after = &t.state;
        let ctx_now = Timestamp(self.now);
        let name = command.name();

        // Allowed actors (the engine enforces what no configuration may change).
        match command {
            Command::Decide { .. }
            | Command::Off
            | Command::CancelApproval(_)
            | Command::SetAuto(_)
            | Command::Answer { .. }
            | Command::ClearSubagents { .. } => {
                assert!(who.is_person(), "{who:?} was allowed to {name}")
            }
            Command::UpdatePlan { .. }
            | Command::Propose { .. }
            | Command::RegisterSubagent(_)
            | Command::UnregisterSubagent(_)
            | Command::Ask { .. }
            | Command::TakeInjection
            | Command::WidenScope { .. } => {
                assert_eq!(who, Who::Agent, "{who:?} was allowed to {name}")
            }
            Command::Enter { .. } => assert_ne!(who, Who::Scheduler),
            _ => {}
        }

        // changed == false: nothing at all happened.
        if !t.changed {
            assert_eq!(after, before, "{name}: unchanged but the state differs");
            assert!(t.effects.is_empty(), "{name}: unchanged but effects {:?}", t.effects);
            assert!(t.audit.is_empty() && t.retired.is_none() && t.answered.is_none(), "{name}: unchanged but records");
        } else {
            assert_eq!(after.session.updated_at, ctx_now);
        }
        assert_eq!(after.session.key, key(s));

        // The session agrees with its latest proposal.
        let latest = after.latest.as_ref();
        assert_eq!(after.session.latest_approval, latest.map(|p| p.approval_id));
        assert_eq!(after.session.version, latest.map_or(0, |p| p.version));
        let status = latest.map(|p| p.status);
        // An amendment (steps added while executing) is decided while the
        // session goes on executing what was approved: the gate waits for
        // it only while it is pending.
        let amending = latest.filter(|p| p.amends.is_some() && after.session.mode == Mode::Normal);
        if let Some(p) = amending {
            assert!(matches!(after.session.approval, ApprovalState::Approved | ApprovalState::Edited | ApprovalState::None));
            let pending = (p.status == DecisionStatus::Pending).then_some(p.approval_id);
            assert_eq!(after.session.amendment_pending, pending, "the gate does not know amendment v{} waits", p.version);
            // What executes is what was approved, plus what waits for approval.
            let approved = &after.session.approved_steps;
            let added: Vec<String> = p.amends.iter().flat_map(|a| &a.added).map(|s| s.step.trim().to_string()).collect();
            let executing = matches!(after.session.approval, ApprovalState::Approved | ApprovalState::Edited);
            for step in after.session.steps.iter().filter(|_| executing) {
                let text = step.step.trim().to_string();
                assert!(approved.contains(&text) || (pending.is_some() && added.contains(&text)), "{text:?} executes unapproved");
            }
        } else {
            assert_eq!(after.session.amendment_pending, None);
        }
        match after.session.approval {
            _ if amending.is_some() => {}
            ApprovalState::Pending => {
                assert_eq!(status, Some(DecisionStatus::Pending));
                assert_eq!(after.session.mode, Mode::Plan, "pending outside plan mode");
            }
            ApprovalState::Rejected => assert_eq!((status, after.session.mode), (Some(DecisionStatus::Rejected), Mode::Plan)),
            ApprovalState::TimedOut => assert_eq!((status, after.session.mode), (Some(DecisionStatus::TimedOut), Mode::Plan)),
            ApprovalState::Approved => assert_eq!((status, after.session.mode), (Some(DecisionStatus::Approved), Mode::Normal)),
            ApprovalState::Edited => assert_eq!((status, after.session.mode), (Some(DecisionStatus::Edited), Mode::Normal)),
            ApprovalState::Cancelled => assert_eq!((status, after.session.mode), (Some(DecisionStatus::Cancelled), Mode::Halted)),
            ApprovalState::None => assert_ne!(status, Some(DecisionStatus::Pending)),
        }
        if after.session.mode == Mode::Halted {
            assert_eq!(after.session.approval, ApprovalState::Cancelled, "halted without a cancelled plan");
        }

        let auto_propose = who == Who::Agent && before.session.auto_approve && matches!(command, Command::Propose { .. });
        // The gate opens only by a person's hand: a decision, a release, or
        // auto mode a person switched on. Nothing the agent or the scheduler
        // does alone turns a denied mutation into an allowed one.
        let mutation = serde_json::json!({"command": "rm -rf /"});
        let policy = plangate_gate::Policy::default();
        for scope in [GateScope::ApprovedPlan, GateScope::PlanModeOnly] {
            let was_open = matches!(gate(&before.session, scope, &policy, "Bash", &mutation), plangate_gate::Verdict::Allow(_));
            let is_open = matches!(gate(&after.session, scope, &policy, "Bash", &mutation), plangate_gate::Verdict::Allow(_));
            // The one exception: an amendment's timeout ends its wait, and
            // the plan a person approved before it goes on (without the
            // added steps); the authority is that earlier approval.
            let amendment_lapsed = before.session.amendment_pending.is_some()
                && after.session.amendment_pending.is_none()
                && matches!(command, Command::TimerFired(Timer { kind: TimerKind::Timeout, .. }))
                && authority::holds_open(&before.session);
            if is_open && !was_open && !amendment_lapsed {
                assert!(who.is_person() || auto_propose, "{who:?} opened the gate ({scope:?}) by {name}");
            }
            if matches!(after.session.mode, Mode::Plan | Mode::Halted) {
                assert!(!is_open, "the gate is open in {:?} mode ({scope:?})", after.session.mode);
            }
        }

        // Who may change modes and switches.
        if who == Who::Agent && before.session.mode == Mode::Plan && !auto_propose {
            assert_eq!(after.session.mode, Mode::Plan, "the agent left plan mode by {name}");
        }
        if auto_propose && after.session.mode == Mode::Normal {
            assert_eq!(status, Some(DecisionStatus::Approved));
        }
        if !who.is_person() {
            assert_eq!(after.session.auto_approve, before.session.auto_approve, "{who:?} changed auto mode");
        }
        if who == Who::Scheduler {
            assert_eq!(after.session.mode, before.session.mode);
        }
        // The store keeps only the first timer of each chain, and a fired
        // one is removed with its transition: a kept timer that fires must
        // be spent, or the rest of its chain would never be stored.
        if let Command::TimerFired(timer) = command {
            if chains::kept(before).contains(timer) {
                let live = after.latest.iter().flat_map(|p| &p.timers).chain(&after.session.agent_timers);
                assert!(!live.into_iter().any(|x| x == timer), "{timer:?} fired and is still live");
                assert!(t.changed);
            }
        }

        // A proposal that stops being the latest was pending (then it is
        // retired as superseded) or already decided.
        let before_latest = before.latest.as_ref();
        if let Some(old) = before_latest.filter(|o| latest.map(|p| p.approval_id) != Some(o.approval_id)) {
            if old.status == DecisionStatus::Pending {
                let retired = t.retired.as_ref().expect("a pending proposal vanished without being retired");
                assert_eq!(retired.approval_id, old.approval_id);
            }
        }
        if let Some(r) = &t.retired {
            assert_eq!(before_latest.map(|p| (p.approval_id, p.status)), Some((r.approval_id, DecisionStatus::Pending)));
            assert_eq!(r.status, DecisionStatus::Superseded);
            assert_eq!(r.superseded_by, Some(after.session.version));
            assert!(r.timers.is_empty());
            assert_ne!(latest.map(|p| p.approval_id), Some(r.approval_id));
        }

        // Every proposal this transition hands back.
        let mut new_ids = Vec::new();
        for p in latest.into_iter().chain(t.retired.iter()) {
            let id = p.approval_id;
            assert_eq!(p.session, key(s));
            match self.seen.get(&id).cloned() {
                Some((owner, old)) => {
                    assert_eq!(owner, s, "approval id {id} reused across sessions");
                    if old.status != DecisionStatus::Pending {
                        // What ran under it is sealed onto it once, when
                        // its plan ends; nothing else about it changes.
                        let sealed = old.ran.is_none() && p.ran.as_ref().is_some_and(|r| r.intact());
                        let unsealed = Proposal { ran: if sealed { None } else { p.ran.clone() }, ..p.clone() };
                        assert_eq!(&unsealed, &old, "decided proposal {id} ({:?}) changed by {name}", old.status);
                    } else if p.status != DecisionStatus::Pending {
                        self.check_decision(who, command, before, t, &old, p);
                    } else {
                        // Still pending: only its timer list may shrink, and
                        // the count of reminders sent grow.
                        assert!(p.reminders_sent >= old.reminders_sent, "{id}: reminders sent went back");
                        assert_eq!(
                            Proposal {
                                timers: old.timers.clone(),
                                reminders_sent: old.reminders_sent,
                                escalated: old.escalated,
                                ..p.clone()
                            },
                            old
                        );
                    }
                }
                None => {
                    new_ids.push(id);
                    assert!(!self.question_ids.contains(&id));
                    if let Some(amends) = &p.amends {
                        // Steps added while executing: an amendment of the approved plan.
                        assert!(matches!(command, Command::UpdatePlan { .. }) && who == Who::Agent, "{name} minted amendment {id}");
                        assert_eq!(before.session.mode, Mode::Normal);
                        assert!(matches!(before.session.approval, ApprovalState::Approved | ApprovalState::Edited));
                        assert!(!amends.added.is_empty());
                        assert_eq!(p.version, before.session.version + 1, "versions go up by one");
                        assert_eq!(p.plan_hash, plan_hash(&p.plan, None), "the amendment is bound to the amended plan");
                        assert!(
                            p.status == DecisionStatus::Pending || (before.session.auto_approve && p.status == DecisionStatus::Approved)
                        );
                        self.proposed_hash.insert(id, p.plan_hash.clone());
                        self.ids.push(id);
                        continue;
                    }
                    let Command::Propose { plan, markdown, .. } = command else {
                        panic!("{name} minted proposal {id}");
                    };
                    assert_eq!(who, Who::Agent);
                    assert!(before.session.open_subagents.is_empty(), "proposed with subagents open");
                    assert_ne!(before.session.mode, Mode::Normal, "proposed outside plan mode (or a halted session)");
                    assert_eq!(p.version, before.session.version + 1, "versions go up by one");
                    let hash = plan_hash(plan, markdown.as_deref());
                    assert_eq!(p.plan_hash, hash, "the proposal is bound to what was proposed");
                    assert_eq!(&p.plan, plan);
                    assert_eq!(p.created_at, ctx_now);
                    match p.status {
                        DecisionStatus::Pending => {
                            assert_eq!(after.session.approval, ApprovalState::Pending)
                        }
                        DecisionStatus::Approved => {
                            assert!(before.session.auto_approve, "the agent's proposal approved itself without auto mode");
                            assert_eq!(p.decided_by.as_deref(), Some("auto"));
                        }
                        other => panic!("new proposal born {other:?}"),
                    }
                    self.proposed_hash.insert(id, hash);
                    self.ids.push(id);
                }
            }
        }
        assert!(new_ids.len() <= 1);
        if new_ids.is_empty() {
            assert_eq!(after.session.version, before.session.version);
        }

        // Decisions only ever land on the current, pending proposal.
        if let Command::Decide { approval_id, .. } | Command::CancelApproval(approval_id) = command {
            let p = before_latest.expect("decided without a proposal");
            assert_eq!(p.approval_id, *approval_id, "v{} was decided through a stale id", p.version);
            assert_eq!(p.status, DecisionStatus::Pending);
            assert_eq!(p.version, before.session.version);
        }

        // Timers: scheduled only for the new proposal, cancelled only if scheduled.
        for e in &t.effects {
            match e {
                Effect::Schedule(timer) => {
                    match timer.kind {
                        // Reminders to the agent start with a planning round.
                        TimerKind::AgentNudge(_) => {
                            assert!(matches!(command, Command::Enter { .. }), "agent nudge scheduled by {command:?}")
                        }
                        // A run's expiry: when it opens (or is first heard of
                        // after expiry came on), or again when its timer finds
                        // it was heard of since.
                        TimerKind::SubagentExpiry => {
                            assert!(
                                matches!(command, Command::RegisterSubagent(_))
                                    || matches!(command, Command::TimerFired(Timer { kind: TimerKind::SubagentExpiry, .. })),
                                "subagent expiry scheduled by {command:?}"
                            );
                            let owner =
                                after.session.open_subagents.iter().find(|(id, _)| subagents::timer_id(&key(s), id) == timer.approval_id);
                            assert!(
                                owner.is_some_and(|(_, run)| run.expires_at == Some(timer.due)),
                                "an expiry timer without its open run"
                            );
                        }
                        _ => assert!(new_ids.contains(&timer.approval_id), "timer for an old proposal"),
                    }
                    assert!(timer.due >= ctx_now);
                    assert_eq!(timer.session, key(s));
                    if self.scheduled.insert(timer.clone()) {
                        self.timers.push(timer.clone());
                    }
                }
                Effect::Cancel(timer) => {
                    assert!(self.scheduled.contains(timer), "cancelled a timer never scheduled");
                    let still_pending = !matches!(timer.kind, TimerKind::AgentNudge(_) | TimerKind::SubagentExpiry)
                        && latest.is_some_and(|p| p.approval_id == timer.approval_id && p.status == DecisionStatus::Pending);
                    assert!(!still_pending, "cancelled a timer of a pending proposal");
                }
                Effect::Nudge { approval_id, .. } | Effect::Escalate { approval_id, .. } => {
                    assert_eq!(who, Who::Scheduler);
                    assert!(latest.is_some_and(|p| p.approval_id == *approval_id && p.status == DecisionStatus::Pending));
                }
                _ => {}
            }
        }

        // Questions: ids never reused, only the agent asks, only people answer.
        if let Some(q) = &after.session.pending_question {
            if before.session.pending_question.as_ref().map(|b| b.question_id) != Some(q.question_id) {
                assert!(self.question_ids.insert(q.question_id), "question id reused");
                assert_eq!(who, Who::Agent);
            }
        }
        if let Some(a) = &t.answered {
            assert!(who.is_person());
            assert_eq!(a.answered_by.as_deref(), Some(who.actor().label().as_str()));
            assert!(after.session.pending_question.is_none());
            if !a.allow_freetext {
                assert!(a.options.contains(a.answer.as_ref().unwrap()));
            }
        }
        if let Command::TakeInjection = command {
            assert_eq!(t.taken_injection, before.session.injection);
            assert_eq!(after.session.injection, None);
        }

        // Subagent runs: only the agent opens them; a person's clear, the
        // agent's close and the scheduler's expiry close them. Every open run
        // has an expiry timer due at most `expiry` after it was last heard of,
        // and an expired run was silent for the whole expiry.
        let expiry = self::policy().subagent_expiry_ms.expect("expiry on") as i64;
        for (id, run) in &after.session.open_subagents {
            if !before.session.open_subagents.contains_key(id) {
                assert!(matches!(command, Command::RegisterSubagent(_)) && who == Who::Agent, "{who:?} opened run {id} by {name}");
            }
            let due = run.expires_at.expect("an open run without an expiry timer");
            assert!(due.0 <= run.seen_at.0 + expiry, "run {id} expires later than its heartbeat allows");
            let timer = Timer { due, session: key(s), approval_id: subagents::timer_id(&key(s), id), kind: TimerKind::SubagentExpiry };
            assert!(self.scheduled.contains(&timer), "run {id}'s expiry timer was never scheduled");
        }
        for (id, run) in &before.session.open_subagents {
            if after.session.open_subagents.contains_key(id) {
                continue;
            }
            match command {
                Command::UnregisterSubagent(_) => assert_eq!(who, Who::Agent),
                Command::ClearSubagents { .. } => assert!(who.is_person()),
                Command::TimerFired(Timer { kind: TimerKind::SubagentExpiry, .. }) => {
                    assert!(ctx_now.0 >= run.seen_at.0 + expiry, "run {id} expired while heard of recently");
                    assert!(t.audit.iter().any(|a| a.action == "subagent_expired" && a.detail.contains(id.as_str())));
                }
                other => panic!("run {id} vanished by {other:?}"),
            }
        }

        // Remember what we saw.
        for p in latest.into_iter().chain(t.retired.iter()) {
            self.seen.insert(p.approval_id, (s, p.clone()));
        }
    }

    /// A proposal left `pending` in this transition: check who did it and how.
    pub(super) fn check_decision(&mut self, who: Who, command: &Command, before: &State, t: &Transition, old: &Proposal, p: &Proposal) {
        let id = p.approval_id;
        let label = who.actor().label();
        self.decisions += 1;
        // One sentence for the document, the cards and the audit: the
        // document adds its RFC 3339 time, a card its mark and clock.
        let now = Timestamp(self.now);
        let sentence = Receipt::of(p).expect("a decided proposal has a receipt").sentence();
        let appended: Vec<&String> = t
            .effects
            .iter()
            .filter_map(|e| match e {
                Effect::AppendReceipt { approval_id, text } if *approval_id == id && !text.contains(" — ran: ") => Some(text),
                _ => None,
            })
            .collect();
        assert_eq!(appended.len(), 1, "one document receipt per decision: {appended:?}");
        assert_eq!(appended[0].replacen(&format!(" at {}", now.rfc3339()), "", 1), sentence);
        let on_card = card::receipt(p).expect("a decided card shows its receipt");
        let words = on_card.split_once(' ').map(|(_mark, words)| words.replacen(&format!(" · {} UTC", now.clock()), "", 1));
        assert_eq!(words, Some(reveal(&sentence).0));
        if p.status != DecisionStatus::Superseded {
            assert!(t.audit.iter().any(|a| a.detail == sentence), "the audit does not say {sentence:?}: {:?}", t.audit);
        }
        match p.status {
            DecisionStatus::Superseded if p.amends.is_some() => {
                // Extended again, or withdrawn by entering plan mode.
                assert!(
                    matches!(command, Command::UpdatePlan { .. } | Command::Enter { .. }),
                    "{} superseded amendment {id}",
                    command.name()
                );
                assert_ne!(who, Who::Scheduler);
                return;
            }
            DecisionStatus::Superseded => {
                assert!(matches!(command, Command::Propose { .. }) && who == Who::Agent);
                assert_eq!(t.retired.as_ref().map(|r| r.approval_id), Some(id));
                return;
            }
            DecisionStatus::Approved | DecisionStatus::Edited | DecisionStatus::Rejected => {
                assert!(who.is_person(), "{who:?} decided {id}: {:?}", p.status);
                let Command::Decide { approval_id, verdict } = command else { panic!("{:?} without a decision", p.status) };
                assert_eq!(*approval_id, id);
                assert_eq!(p.decided_by.as_deref(), Some(label.as_str()));
                if p.status != DecisionStatus::Rejected {
                    assert!(before.session.open_subagents.is_empty(), "approved with subagents open");
                }
                match (verdict, p.status) {
                    (Verdict::Approve, DecisionStatus::Approved) if p.amends.is_some() => {
                        // The live list keeps the agent's progress; its steps are the amended plan's.
                        let texts = |steps: &[plangate_engine::Step]| steps.iter().map(|s| s.step.trim().to_string()).collect::<Vec<_>>();
                        assert_eq!(texts(&t.state.session.steps), texts(&p.plan.steps));
                    }
                    (Verdict::Revise(_), DecisionStatus::Rejected) if p.amends.is_some() => {
                        let added: Vec<&str> = p.amends.iter().flat_map(|a| &a.added).map(|s| s.step.trim()).collect();
                        assert!(t.state.session.steps.iter().all(|s| !added.contains(&s.step.trim())), "rejected steps stayed");
                    }
                    (Verdict::Approve, DecisionStatus::Approved) => {
                        assert!(p.edited_plan.is_none());
                        assert_eq!(t.state.session.steps, p.plan.steps, "executing something other than what was approved");
                    }
                    (Verdict::Edit(plan), DecisionStatus::Edited) => {
                        assert_eq!(validate_plan(plan), Ok(()), "an invalid edited plan was approved");
                        assert_eq!(p.edited_plan.as_ref(), Some(plan));
                        assert_eq!(t.state.session.steps, plan.steps);
                        self.edited_hash.insert(id, plan_hash(plan, None));
                    }
                    (Verdict::Revise(_), DecisionStatus::Rejected) => {
                        assert!(p.feedback.as_ref().is_some_and(|f| !f.trim().is_empty()));
                        assert_eq!(t.state.session.rejection_count, before.session.rejection_count + 1);
                    }
                    (v, s) => panic!("verdict {v:?} gave {s:?}"),
                }
            }
            DecisionStatus::Cancelled => {
                assert!(who.is_person(), "{who:?} cancelled {id}");
                assert_eq!(p.decided_by.as_deref(), Some(label.as_str()));
                let session = &t.state.session;
                match command {
                    // Cancel halts: read-only until a new approval or a release.
                    Command::CancelApproval(_) => {
                        assert_eq!(
                            (session.mode, session.approval, session.released_by.as_deref()),
                            (Mode::Halted, ApprovalState::Cancelled, None)
                        )
                    }
                    // Off is the explicit release, recorded as such.
                    Command::Off => assert_eq!(
                        (session.mode, session.approval, session.released_by.as_deref()),
                        (Mode::Normal, ApprovalState::None, Some(label.as_str()))
                    ),
                    other => panic!("{other:?} cancelled {id}"),
                }
            }
            DecisionStatus::TimedOut => {
                assert_eq!(who, Who::Scheduler);
                let Command::TimerFired(timer) = command else { panic!("timed out without a timer") };
                assert_eq!((timer.approval_id, timer.kind), (id, TimerKind::Timeout));
                assert_eq!(p.decided_by.as_deref(), Some("timeout"));
            }
            DecisionStatus::Pending => unreachable!(),
        }
        // Every decision: receipt, cards, waiters, the injection, and no
        // timer of it left behind.
        assert!(t.effects.contains(&Effect::UpdateCards { approval_id: id }));
        assert!(t.effects.contains(&Effect::Wake));
        assert!(t.effects.iter().any(|e| matches!(e, Effect::AppendReceipt { approval_id, .. } if *approval_id == id)));
        assert_eq!(t.state.session.injection, p.injection);
        assert!(p.timers.is_empty());
        let fired = match command {
            Command::TimerFired(timer) => Some(timer),
            _ => None,
        };
        for timer in &old.timers {
            assert!(Some(timer) == fired || t.effects.contains(&Effect::Cancel(timer.clone())), "timer {timer:?} left behind");
        }
        assert_eq!(p.decided_at, Some(Timestamp(self.now)));
        assert_one_envelope(p.injection.as_deref().expect("a decision carries an injection"));
    }
}
