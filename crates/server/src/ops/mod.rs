//! Running plangate for real: what an operator uses besides the API.
//!
//! * [`explain`]: what `plangate config check` says it resolved.
//! * [`backup`]: `plangate backup` and `plangate restore`.
pub mod backup;
pub mod explain;
