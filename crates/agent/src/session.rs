//! Session ids: 1–128 characters of `[A-Za-z0-9._:-]` (API.md).
//!
//! Harnesses name their sessions their own way (Claude Code uses UUIDs, an
//! MCP client may use anything), so ids from outside are mapped into the
//! API's charset *deterministically*: the same harness session always lands
//! on the same plangate session, and two different ids never collide.

use sha2::{Digest, Sha256};

/// The longest session id the API accepts.
pub const MAX_SESSION_ID_CHARS: usize = 128;

/// Whether `id` is a session id the API accepts as it is.
pub fn is_valid(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_SESSION_ID_CHARS
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
}

/// `raw` if it is valid; otherwise its allowed characters (others become
/// `_`, at most 100 of them) followed by `-` and 16 hex digits of its SHA-256,
/// so that `a/b` and `a?b` stay distinct.
pub fn sanitize(raw: &str) -> String {
    if is_valid(raw) {
        return raw.to_string();
    }
    let readable: String =
        raw.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-') { c } else { '_' }).take(100).collect();
    let digest = hex::encode(Sha256::digest(raw.as_bytes()));
    format!("{readable}-{}", &digest[..16])
}

/// A new session id for a process that was given none: `<prefix>-` and 16
/// random hex digits.
pub fn fresh(prefix: &str) -> String {
    let bytes: [u8; 8] = rand::random();
    sanitize(&format!("{prefix}-{}", hex::encode(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_ids_pass_through() {
        for id in ["s1", "4f1c2a9e-0d7b-4c1e-9a55-2b8f6f0e3d11", "a.b_c:d-e", &"x".repeat(128)] {
            assert!(is_valid(id), "{id}");
            assert_eq!(sanitize(id), id);
        }
    }

    #[test]
    fn others_map_deterministically_without_collisions() {
        for raw in ["", "a/b", "a?b", "é", &"y".repeat(129), "sp ace", "..\u{202e}"] {
            let once = sanitize(raw);
            assert!(is_valid(&once), "{raw:?} -> {once:?}");
            assert_eq!(once, sanitize(raw));
        }
        assert_ne!(sanitize("a/b"), sanitize("a?b"));
        assert_ne!(sanitize(&"y".repeat(129)), sanitize(&"y".repeat(130)));
        assert!(sanitize("a/b").starts_with("a_b-"));
    }

    #[test]
    fn fresh_ids_are_valid_and_distinct() {
        let (a, b) = (fresh("mcp"), fresh("mcp"));
        assert!(is_valid(&a) && a.starts_with("mcp-"));
        assert_ne!(a, b);
    }
}
