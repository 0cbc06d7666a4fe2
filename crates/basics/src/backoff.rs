//! Doubling backoff: how long to pause before trying again.
//!
//! Every retry loop in plangate (a chat send, a webhook delivery, a
//! reconnecting `plangate wait`, an agent's long-poll across a restart)
//! doubles its pause up to a cap; the ones many clients run at once take
//! a random point of the upper half, so they do not come back in lockstep.

use std::time::Duration;

/// The pause after `previous`: twice as long, at most `max`.
pub fn doubled(previous: Duration, max: Duration) -> Duration {
    previous.saturating_mul(2).min(max)
}

/// The pause after failure number `failures` (1-based): `first` doubled
/// `failures - 1` times, at most `max`.
pub fn after(failures: u32, first: Duration, max: Duration) -> Duration {
    let mut pause = first.min(max);
    for _ in 1..failures {
        if pause >= max || pause.is_zero() {
            break;
        }
        pause = doubled(pause, max);
    }
    pause
}

/// A point of the upper half of `ceiling`: `jitter` (0..1, clamped) of the
/// way from half of it to all of it.
pub fn jittered(ceiling: Duration, jitter: f64) -> Duration {
    ceiling.mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn a_pause_doubles_up_to_its_cap() {
        assert_eq!(doubled(Duration::from_millis(100), 2 * S), Duration::from_millis(200));
        assert_eq!(doubled(1500 * Duration::from_millis(1), 2 * S), 2 * S);
        assert_eq!(doubled(Duration::MAX, 2 * S), 2 * S, "never overflows");
        assert_eq!(doubled(Duration::ZERO, 2 * S), Duration::ZERO);
    }

    #[test]
    fn the_nth_failure_waits_first_doubled_n_minus_one_times() {
        assert_eq!(after(0, S, 30 * S), S);
        assert_eq!(after(1, S, 30 * S), S);
        assert_eq!(after(2, S, 30 * S), 2 * S);
        assert_eq!(after(5, S, 30 * S), 16 * S);
        assert_eq!(after(6, S, 30 * S), 30 * S);
        assert_eq!(after(u32::MAX, S, 15 * 60 * S), 15 * 60 * S, "capped, and quickly");
        assert_eq!(after(3, 60 * S, 30 * S), 30 * S, "a first pause above the cap is the cap");
        assert_eq!(after(u32::MAX, Duration::ZERO, S), Duration::ZERO);
        // The old closed form: first × 2^(n−1), capped.
        for n in 1..=40u32 {
            let closed = S.saturating_mul(1u32 << (n - 1).min(20)).min(15 * 60 * S);
            assert_eq!(after(n, S, 15 * 60 * S), closed, "failure {n}");
        }
    }

    #[test]
    fn jitter_picks_a_point_of_the_upper_half() {
        assert_eq!(jittered(2 * S, 1.0), 2 * S);
        assert_eq!(jittered(2 * S, 0.0), S);
        assert_eq!(jittered(2 * S, 0.5), Duration::from_millis(1500));
        assert_eq!(jittered(2 * S, -3.0), S, "clamped");
        assert_eq!(jittered(2 * S, 7.0), 2 * S, "clamped");
    }
}
