//! plangate's discord adapter (in progress).
