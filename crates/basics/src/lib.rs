//! Small rules that several of plangate's crates need, each written once:
//! cutting text to a size with "…" ([`text`]), doubling backoff
//! ([`backoff`]), an error and its causes as one line ([`errors`]), and a
//! long-poll's wait with its 300 s cap ([`wait`]).
//!
//! A rule written twice drifts; these were each written three to six times
//! (a toast, a button label, a thread name…). Each module is one job; a
//! helper that only one crate uses stays in that crate.
//!
//! **Architecture invariant:** no dependency (not even on another plangate
//! crate), no I/O, no async, no clock: plain functions of their arguments,
//! so that every crate, the pure engine included, may depend on this one.

pub mod backoff;
pub mod errors;
pub mod text;
pub mod wait;
