//! Failed authentications, limited per client address (issue 26, part 3).
//!
//! Every wrong credential — an unknown bearer token on the API, a wrong
//! operator token, a bad link on the web page's sign-in or a token that
//! is no email link — takes one cell
//! of its address's budget ([`BURST`] at once, one back every
//! [`REFILL`]); once the budget is spent, further failures from that
//! address are answered `429` with `Retry-After` instead of `401`/`403`.
//! A correct credential is checked first and never takes a cell or waits,
//! so an agent or operator behind the same proxy as a guesser is never
//! locked out by the guesser (the hook fails closed: a locked-out agent
//! would be a stopped agent). What makes guessing hopeless is the token's
//! length, which `config check` enforces; the limit makes a guesser loud
//! (audited, counted in `/metrics`) and cheap to answer.
//!
//! The budget is per process (each replica keeps its own, in memory): a
//! restart refills it. GCRA through `governor`'s keyed limiter.

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use std::net::{IpAddr, Ipv6Addr};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Failures an address may make at once before it is answered `429`.
pub const BURST: NonZeroU32 = NonZeroU32::new(10).expect("ten is not zero");
/// How often one more failure is allowed once the burst is spent.
pub const REFILL: Duration = Duration::from_secs(6);
/// Per address and minute at most one `429` is audited: the audit of a
/// flood stays a line per minute, the metrics count every one.
const LIMITED_AUDIT_EVERY: Duration = Duration::from_secs(60);
/// Every this many failures, addresses whose budget is full again are
/// forgotten, so a spray from many addresses cannot grow the map forever.
const FORGET_EVERY: u64 = 1024;

/// Where a credential was presented, as the metrics and the audit name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// A bearer token on the HTTP API.
    Api,
    /// The operator token on the web page (`POST /signin/operator`).
    WebOperator,
    /// A sign-in link on the web page (`POST /signin`).
    WebLink,
    /// An email's decision link (`GET /e/<token>`, `POST /e`).
    EmailLink,
    /// A push's note id (`/push/n/<id>`, `crate::push`).
    PushNote,
}

impl Surface {
    pub fn as_str(self) -> &'static str {
        match self {
            Surface::Api => "api",
            Surface::WebOperator => "web_operator",
            Surface::WebLink => "web_link",
            Surface::EmailLink => "email_link",
            Surface::PushNote => "push_note",
        }
    }
}

/// What became of one failed authentication.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Within the address's budget: refuse as usual (401/403).
    Counted,
    /// Over budget: answer 429, retry after this long. `audit` is true for
    /// the first such answer of the address in a while.
    Limited { retry_after: Duration, audit: bool },
}

/// The per-address budgets of failed authentications.
pub struct AuthThrottle {
    failures: DefaultKeyedRateLimiter<IpAddr>,
    audits: DefaultKeyedRateLimiter<IpAddr>,
    clock: DefaultClock,
    seen: AtomicU64,
}

impl Default for AuthThrottle {
    fn default() -> Self {
        AuthThrottle::new(Quota::with_period(REFILL).unwrap_or_else(|| unreachable!("REFILL is not zero")).allow_burst(BURST))
    }
}

impl AuthThrottle {
    /// A throttle with its own quota (tests use a tiny one).
    pub fn new(quota: Quota) -> AuthThrottle {
        let audit_quota = Quota::with_period(LIMITED_AUDIT_EVERY).unwrap_or_else(|| unreachable!("not zero"));
        AuthThrottle {
            failures: RateLimiter::keyed(quota),
            audits: RateLimiter::keyed(audit_quota),
            clock: DefaultClock::default(),
            seen: AtomicU64::new(0),
        }
    }

    /// Record one failed authentication from `client`.
    pub fn fail(&self, client: IpAddr) -> Failure {
        if self.seen.fetch_add(1, Ordering::Relaxed) % FORGET_EVERY == FORGET_EVERY - 1 {
            self.failures.retain_recent();
            self.audits.retain_recent();
        }
        let key = bucket(client);
        match self.failures.check_key(&key) {
            Ok(()) => Failure::Counted,
            Err(not_until) => {
                let wait = not_until.wait_time_from(self.clock.now());
                Failure::Limited { retry_after: wait, audit: self.audits.check_key(&key).is_ok() }
            }
        }
    }
}

/// The address a budget belongs to: an IPv4 address (an IPv4-mapped IPv6
/// one included) as is, an IPv6 address by its /64, which one host usually
/// holds whole: otherwise a single machine could take a fresh budget per
/// address of its prefix.
pub fn bucket(client: IpAddr) -> IpAddr {
    match client {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

/// Seconds for a `Retry-After` header: whole, rounded up, at least 1.
pub fn retry_after_secs(wait: Duration) -> u64 {
    wait.as_millis().div_ceil(1000).max(1) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_beyond_the_burst_are_limited_per_address() {
        let throttle = AuthThrottle::default();
        let a: IpAddr = "192.0.2.1".parse().expect("ip");
        let b: IpAddr = "192.0.2.2".parse().expect("ip");
        for _ in 0..BURST.get() {
            assert_eq!(throttle.fail(a), Failure::Counted);
        }
        let Failure::Limited { retry_after, audit } = throttle.fail(a) else { panic!("limited after the burst") };
        assert!(retry_after <= REFILL && retry_after > Duration::ZERO, "{retry_after:?}");
        assert!(audit, "the first 429 is audited");
        assert!(matches!(throttle.fail(a), Failure::Limited { audit: false, .. }), "then not again for a minute");
        assert_eq!(throttle.fail(b), Failure::Counted, "another address has its own budget");
    }

    #[test]
    fn an_ipv6_host_is_one_budget_and_mapped_ipv4_is_ipv4() {
        let one: IpAddr = "2001:db8:1:2:aaaa::1".parse().expect("ip");
        let two: IpAddr = "2001:db8:1:2:bbbb::2".parse().expect("ip");
        assert_eq!(bucket(one), bucket(two));
        assert_ne!(bucket(one), bucket("2001:db8:1:3::1".parse().expect("ip")));
        assert_eq!(bucket("::ffff:192.0.2.1".parse().expect("ip")), "192.0.2.1".parse::<IpAddr>().expect("ip"));
    }

    #[test]
    fn retry_after_is_whole_seconds_rounded_up() {
        assert_eq!(retry_after_secs(Duration::ZERO), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(1)), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(5001)), 6);
    }
}
