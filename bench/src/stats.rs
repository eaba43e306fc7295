//! Latency histograms and summary figures.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

/// Throughput and latency of one measured run.
#[derive(Debug, Clone, Serialize)]
pub struct RunStats {
    /// Operations completed.
    pub operations: u64,
    /// Operations per second over the whole run.
    pub ops_per_s: f64,
    /// Median latency, microseconds.
    pub p50_us: u64,
    /// 99th percentile, microseconds.
    pub p99_us: u64,
    /// 99.9th percentile, microseconds.
    pub p999_us: u64,
}

/// A latency recorder in microseconds (1 us .. 60 s).
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("histogram bounds")
}

/// Records one latency.
pub fn record(histogram: &mut Histogram<u64>, latency: Duration) {
    let _ = histogram.record((latency.as_micros() as u64).clamp(1, 60_000_000));
}

/// The figures of a run of `histogram.len()` operations over `elapsed`.
pub fn summarize(histogram: &Histogram<u64>, elapsed: Duration) -> RunStats {
    RunStats {
        operations: histogram.len(),
        ops_per_s: histogram.len() as f64 / elapsed.as_secs_f64(),
        p50_us: histogram.value_at_quantile(0.50),
        p99_us: histogram.value_at_quantile(0.99),
        p999_us: histogram.value_at_quantile(0.999),
    }
}

/// The median of `values` (sorted in place).
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    let middle = values.len() / 2;
    if values.len().is_multiple_of(2) {
        (values[middle - 1] + values[middle]) / 2.0
    } else {
        values[middle]
    }
}

/// The `p`th percentile of `values` (nearest rank), 0 when empty.
pub fn percentile(values: &[f64], p: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.saturating_sub(1)).copied().unwrap_or(0.0)
}
