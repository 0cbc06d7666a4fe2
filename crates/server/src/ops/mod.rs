//! Running plangate for real: what an operator uses besides the API.
//!
//! * [`explain`]: what `plangate config check` says it resolved.
//! * [`backup`]: `plangate backup` and `plangate restore`.
//! * [`retention`]: background pruning and `plangate prune`.
//! * [`doctor`]: a configuration checked against the live platform APIs.
pub mod backup;
pub mod doctor;
pub mod explain;
pub mod retention;
