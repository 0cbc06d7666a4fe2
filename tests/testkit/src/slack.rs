//! Fake of the slack HTTP API (see the crate docs).
