//! plangate's telegram adapter (in progress).
