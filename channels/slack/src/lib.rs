//! plangate's slack adapter (in progress).
