//! How the `plangate` binary is linked.
//!
//! On Linux with glibc it is linked as a fixed-address executable
//! (`-no-pie`), not a position-independent one. Claude Code and Codex start
//! `plangate hook …` for every tool call, and a position-independent
//! `plangate` spent most of its start in the dynamic loader: 78,218
//! relative relocations written into 364 pages of `.data.rel.ro` and the
//! GOT, one copy-on-write page fault each, ≈ 1.3 ms of a ≈ 1.9 ms start on
//! this project's 2-core VM (docs/PERFORMANCE.md §21; packing them with
//! `-z pack-relative-relocs` changed nothing, the faults stay). Linked at a
//! fixed address there is nothing to relocate and those pages are read
//! from the page cache only when touched. The price: the executable's own
//! code and data are not at a random address (the stack, the heap, the
//! shared libraries and every mapping still are).
//!
//! Only the `plangate` binary, only where `-no-pie` is the gcc/clang driver
//! flag (linux-gnu); elsewhere the target's default stands.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bin=plangate=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
