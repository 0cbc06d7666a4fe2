//! Percentiles and rates, printed the way `docs/PERFORMANCE.md` shows them.

use std::time::Duration;

/// Latency samples of one scenario.
#[derive(Debug, Clone, Default)]
pub struct Samples(pub Vec<Duration>);

impl Samples {
    pub fn push(&mut self, d: Duration) {
        self.0.push(d);
    }

    pub fn extend(&mut self, other: Samples) {
        self.0.extend(other.0);
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The `q` quantile (0.0–1.0), nearest rank; zero when empty.
    pub fn quantile(&self, q: f64) -> Duration {
        if self.0.is_empty() {
            return Duration::ZERO;
        }
        let mut sorted = self.0.clone();
        sorted.sort_unstable();
        let rank = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len());
        sorted[rank - 1]
    }

    pub fn p50(&self) -> Duration {
        self.quantile(0.50)
    }

    pub fn p99(&self) -> Duration {
        self.quantile(0.99)
    }

    pub fn max(&self) -> Duration {
        self.0.iter().max().copied().unwrap_or_default()
    }

    /// `p50 1.234 ms, p99 5.678 ms (n=200)`
    pub fn describe(&self) -> String {
        format!("p50 {}, p99 {}, max {} (n={})", fmt(self.p50()), fmt(self.p99()), fmt(self.max()), self.len())
    }
}

/// A duration in the unit that reads best: ns, µs or ms.
pub fn fmt(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.1} µs", ns as f64 / 1e3)
    } else {
        format!("{:.2} ms", ns as f64 / 1e6)
    }
}

/// Operations per second.
pub fn rate(ops: u64, elapsed: Duration) -> f64 {
    ops as f64 / elapsed.as_secs_f64().max(1e-9)
}
