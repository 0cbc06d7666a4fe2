//! The agent HTTP API of API.md against the real binary.
