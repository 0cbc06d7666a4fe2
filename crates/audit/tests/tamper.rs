//! Any single change to an exported chain fails verification at the
//! line it changed: an edited byte, a removed, inserted or moved line,
//! and a cut tail against the last checkpoint.

use plangate_audit::export::Line;
use plangate_audit::{verify, Broken, Chain, Checkpoint, Record, SigningKey, Verifier, CHECKPOINT_ACTION};
use proptest::prelude::*;
use serde_json::json;

fn key() -> SigningKey {
    SigningKey::from_bytes(&[42; 32])
}

/// `n` records, a checkpoint of the head entered in the chain after every
/// seventh (as the server does), and the checkpoint of the final head.
fn chain(n: usize) -> (Vec<Record>, Checkpoint) {
    let mut chain = Chain::genesis();
    let mut records = Vec::new();
    for i in 0..n {
        records.push(chain.append(json!({"at": i, "agent": "claude", "action": "approved", "detail": format!("record {i} é\"\\")})));
        if i % 7 == 6 {
            let (seq, hash) = chain.head().unwrap();
            let cp = Checkpoint::sign(&key(), seq, hash, i as i64);
            records.push(chain.append(json!({"at": i, "action": CHECKPOINT_ACTION, "detail": cp.to_line()})));
        }
    }
    let (seq, hash) = chain.head().unwrap();
    (records, Checkpoint::sign(&key(), seq, hash, 99))
}

/// `chain(n)` for every `n` below 40.
fn chains() -> &'static [(Vec<Record>, Checkpoint)] {
    static CHAINS: std::sync::OnceLock<Vec<(Vec<Record>, Checkpoint)>> = std::sync::OnceLock::new();
    CHAINS.get_or_init(|| (0..40).map(|n| if n == 0 { (Vec::new(), Checkpoint::sign(&key(), 0, [0; 32], 0)) } else { chain(n) }).collect())
}

fn export(records: &[Record]) -> Vec<String> {
    let mut lines = vec![Line::Header { first_seq: records[0].seq }.to_line()];
    lines.extend(records.iter().map(|r| Line::Record(r.clone()).to_line()));
    let last = records.last().unwrap();
    lines.push(Line::End { last_seq: last.seq, hash: last.hash, records: records.len() as u64 }.to_line());
    lines
}

fn check(text: &[u8], external: &[Checkpoint]) -> Result<plangate_audit::Verified, Broken> {
    let key = key().verifying_key();
    let mut verifier = Verifier::new(Some(&key));
    let body = text.strip_suffix(b"\n").unwrap_or(text);
    for line in body.split(|b| *b == b'\n') {
        if verifier.line_bytes(line).is_err() {
            break;
        }
    }
    verifier.finish(external)
}

fn joined(lines: &[String]) -> Vec<u8> {
    let mut text = lines.join("\n").into_bytes();
    text.push(b'\n');
    text
}

/// The 1-based line where `changed` first differs from `original`.
fn first_difference(original: &[u8], changed: &[u8]) -> usize {
    let a: Vec<&[u8]> = original.split(|b| *b == b'\n').collect();
    let b: Vec<&[u8]> = changed.split(|b| *b == b'\n').collect();
    (0..).find(|i| a.get(*i) != b.get(*i)).unwrap() + 1
}

#[test]
fn an_untouched_export_verifies_with_its_checkpoints() {
    let (records, head) = chain(30);
    let verified = check(&joined(&export(&records)), &[head]).unwrap();
    assert_eq!((verified.records, verified.first_seq, verified.signed), (records.len() as u64, Some(1), true));
    assert_eq!(verified.checkpoints, 4 + 1);
}

#[test]
fn a_cut_tail_with_a_new_end_line_is_caught_only_against_the_checkpoint() {
    let (records, head) = chain(30);
    let cut = export(&records[..records.len() - 3]);
    check(&joined(&cut), &[]).unwrap();
    let broken = check(&joined(&cut), std::slice::from_ref(&head)).unwrap_err();
    assert_eq!(broken, Broken::CutTail { last: head.seq - 3, signed: head.seq });
}

#[test]
fn a_cut_without_the_end_line_is_caught_by_itself() {
    let (records, _) = chain(10);
    let mut lines = export(&records);
    lines.truncate(5);
    assert_eq!(check(&joined(&lines), &[]).unwrap_err(), Broken::NoEnd { line: 6 });
}

#[test]
fn a_checkpoint_from_another_key_is_refused() {
    let (records, head) = chain(10);
    let forged = Checkpoint::sign(&SigningKey::from_bytes(&[1; 32]), head.seq, head.hash, 1);
    assert_eq!(check(&joined(&export(&records)), &[forged]).unwrap_err(), Broken::ForeignCheckpoint { seq: head.seq });
}

#[test]
fn verify_over_records_names_the_first_bad_one() {
    let (records, head) = chain(10);
    verify(&records, std::slice::from_ref(&head), Some(&key().verifying_key())).unwrap();
    let mut edited = records.clone();
    edited[3].event["detail"] = json!("changed");
    assert_eq!(verify(&edited, &[], None).unwrap_err(), Broken::Altered { line: 4, seq: 4 });
    let mut removed = records.clone();
    removed.remove(5);
    assert_eq!(verify(&removed, &[], None).unwrap_err(), Broken::OutOfSequence { line: 6, expected: 6, found: 7 });
    let mut swapped = records.clone();
    swapped.swap(2, 3);
    assert_eq!(verify(&swapped, &[], None).unwrap_err(), Broken::OutOfSequence { line: 3, expected: 3, found: 4 });
}

#[derive(Debug, Clone)]
enum Change {
    Byte { at: usize, to: u8 },
    Delete(usize),
    Insert { from: usize, at: usize },
    Swap(usize, usize),
}

fn apply(lines: &[String], change: &Change) -> Vec<u8> {
    let mut lines: Vec<Vec<u8>> = lines.iter().map(|l| l.clone().into_bytes()).collect();
    let n = lines.len();
    match *change {
        Change::Byte { at, to } => {
            let mut text = joined_bytes(&lines);
            let at = at % text.len();
            text[at] = if text[at] == to { to.wrapping_add(1) } else { to };
            return text;
        }
        Change::Delete(i) => {
            lines.remove(i % n);
        }
        Change::Insert { from, at } => {
            let copy = lines[from % n].clone();
            lines.insert(at % (n + 1), copy);
        }
        Change::Swap(i, j) => {
            let (i, j) = (i % n, j % n);
            let j = if i == j { (j + 1) % n } else { j };
            lines.swap(i, j);
        }
    }
    joined_bytes(&lines)
}

fn joined_bytes(lines: &[Vec<u8>]) -> Vec<u8> {
    let mut text = lines.join(&b'\n');
    text.push(b'\n');
    text
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(at, to)| Change::Byte { at, to }),
        any::<usize>().prop_map(Change::Delete),
        (any::<usize>(), any::<usize>()).prop_map(|(from, at)| Change::Insert { from, at }),
        (any::<usize>(), any::<usize>()).prop_map(|(i, j)| Change::Swap(i, j)),
    ]
}

proptest! {
    // Signatures are slow in a debug build: the chains are made once.
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn any_single_change_fails_at_the_line_it_changed(n in 1usize..40, change in change()) {
        let (records, head) = &chains()[n];
        let lines = export(records);
        let original = joined(&lines);
        let changed = apply(&lines, &change);
        prop_assume!(changed != original);
        let broken = check(&changed, std::slice::from_ref(head)).unwrap_err();
        let expected = first_difference(&original, &changed);
        prop_assert_eq!(broken.line(), Some(expected), "{:?}: {}", change, broken);
    }
}
