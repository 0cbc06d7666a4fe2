//! Fake of the telegram HTTP API (see the crate docs).
