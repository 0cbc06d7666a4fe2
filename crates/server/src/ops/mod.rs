//! Running plangate for real: what an operator uses besides the API.
//!
//! * [`explain`]: what `plangate config check` says it resolved.
pub mod explain;
