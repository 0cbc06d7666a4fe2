//! The store against its contract, on both backends (sled and PostgreSQL),
//! plus what only one of them has: sled's snapshots and flush sharing,
//! PostgreSQL's replica machinery, and the migration from one to the other.
//!
//! The PostgreSQL tests need a server at 127.0.0.1:5432 (trust auth, user
//! `postgres`, database `test`); each uses a schema of its own, dropped when
//! it passed. They fail, never skip, when the server is not there.

mod common;
mod contract;
mod migrate;
mod pg;
mod sled_only;
