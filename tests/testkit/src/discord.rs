//! Fake of the discord HTTP API (see the crate docs).
