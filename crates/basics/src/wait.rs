//! A long-poll's wait: whole seconds, and the cap every side agrees on.
//!
//! The server holds a `GET …?wait=N` at most [`MAX_WAIT_SECS`]; the agent
//! side (the client, the MCP server, `plangate wait`) asks for at most that
//! and chains long-polls for a longer wait.

use std::time::Duration;

/// The longest single long-poll, in seconds.
pub const MAX_WAIT_SECS: u64 = 300;
/// [`MAX_WAIT_SECS`] as a duration.
pub const MAX_WAIT: Duration = Duration::from_secs(MAX_WAIT_SECS);

/// `text` as whole seconds from 0 to `max_secs` (as `u64` parses: digits,
/// an optional leading `+`, nothing around them; callers trim when they
/// accept white space); `None` otherwise.
pub fn parse_secs(text: &str, max_secs: u64) -> Option<Duration> {
    text.parse::<u64>().ok().and_then(|secs| secs_within(secs, max_secs))
}

/// `secs` as a duration when it is at most `max_secs`.
pub fn secs_within(secs: u64, max_secs: u64) -> Option<Duration> {
    (secs <= max_secs).then(|| Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_seconds_up_to_the_cap_parse() {
        assert_eq!(parse_secs("0", MAX_WAIT_SECS), Some(Duration::ZERO));
        assert_eq!(parse_secs("50", MAX_WAIT_SECS), Some(Duration::from_secs(50)));
        assert_eq!(parse_secs("300", MAX_WAIT_SECS), Some(MAX_WAIT));
        assert_eq!(parse_secs("+5", MAX_WAIT_SECS), Some(Duration::from_secs(5)), "as u64 parses");
        assert_eq!(parse_secs("3590", 3590), Some(Duration::from_secs(3590)));
    }

    #[test]
    fn anything_else_is_refused() {
        for bad in ["301", "-1", "5m", "1.5", " 5", "5 ", "", "abc", "99999999999999999999999"] {
            assert_eq!(parse_secs(bad, MAX_WAIT_SECS), None, "{bad:?}");
        }
        assert_eq!(secs_within(301, MAX_WAIT_SECS), None);
        assert_eq!(secs_within(300, MAX_WAIT_SECS), Some(MAX_WAIT));
    }
}
