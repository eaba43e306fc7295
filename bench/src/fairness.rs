//! Fairness by grab position: mean, standard deviation and best-luck probability of each
//! position over 100,000 packets, per lucky rule and split version (1: the draw order; 2: the
//! seeded permutation every packet is sent under now, `docs/FAIRNESS.md`), with the sampling
//! error of each figure; a table and a PNG.

use std::path::Path;

use plotters::prelude::*;
use red_packets::domain::split::{lucky_pool, Seed, SplitRule, SplitVersion};
use serde::Serialize;

/// Packets simulated per rule.
pub const PACKETS: u64 = 100_000;
/// The seeds' example shape.
pub const TOTAL: u64 = 10_000;
/// Shares per packet.
pub const COUNT: u32 = 10;

/// One rule's figures by position (index 0 = the first grabber) under one split version.
#[derive(Debug, Clone, Serialize)]
pub struct Fairness {
    /// The rule.
    pub rule: &'static str,
    /// The split version (1 or 2).
    pub split_version: u8,
    /// Mean share, cents.
    pub mean: Vec<f64>,
    /// Standard deviation, cents.
    pub std_dev: Vec<f64>,
    /// Probability of having the best luck (largest share, earliest on a tie).
    pub best_luck: Vec<f64>,
    /// The standard error of a best-luck probability of 1 / count over [`PACKETS`] packets:
    /// `sqrt(p (1 - p) / PACKETS)`.
    pub best_luck_standard_error: f64,
    /// The largest distance of a position's best-luck probability from 1 / count, in standard
    /// errors.
    pub best_luck_max_deviation_in_standard_errors: f64,
    /// The largest standard error of a position's mean share: its standard deviation over
    /// `sqrt(PACKETS)`.
    pub mean_standard_error: f64,
}

/// Simulates [`PACKETS`] packets of `rule` under `version` from fixed seeds.
pub fn simulate(rule: SplitRule, version: SplitVersion) -> Fairness {
    let positions = COUNT as usize;
    let (mut sum, mut squares, mut best) = (vec![0f64; positions], vec![0f64; positions], vec![0u64; positions]);
    for n in 0..PACKETS {
        let mut bytes = [7u8; 32];
        bytes[..8].copy_from_slice(&n.to_le_bytes());
        let shares = lucky_pool(version, rule, TOTAL, COUNT, &Seed(bytes));
        let mut winner = 0;
        for (position, &share) in shares.iter().enumerate() {
            sum[position] += share as f64;
            squares[position] += (share * share) as f64;
            if share > shares[winner] {
                winner = position;
            }
        }
        best[winner] += 1;
    }
    let count = PACKETS as f64;
    let mean: Vec<f64> = sum.iter().map(|s| s / count).collect();
    let std_dev: Vec<f64> = squares.iter().zip(&mean).map(|(sq, m)| (sq / count - m * m).max(0.0).sqrt()).collect();
    let best_luck: Vec<f64> = best.iter().map(|&b| b as f64 / count).collect();
    let fair = 1.0 / f64::from(COUNT);
    let best_luck_standard_error = (fair * (1.0 - fair) / count).sqrt();
    Fairness {
        rule: rule.as_str(),
        split_version: version.number(),
        best_luck_max_deviation_in_standard_errors: best_luck
            .iter()
            .map(|p| (p - fair).abs() / best_luck_standard_error)
            .fold(0.0, f64::max),
        best_luck_standard_error,
        mean_standard_error: std_dev.iter().map(|sd| sd / count.sqrt()).fold(0.0, f64::max),
        mean,
        std_dev,
        best_luck,
    }
}

/// Both lucky rules under both split versions.
pub fn all() -> Vec<Fairness> {
    [SplitVersion::V2, SplitVersion::V1]
        .into_iter()
        .flat_map(|version| [SplitRule::DoubleAverage, SplitRule::LineCut].map(|rule| simulate(rule, version)))
        .collect()
}

/// Registers DejaVu Sans (Debian's fonts-dejavu-core) as plotters' sans-serif.
fn register_font() -> bool {
    let Ok(bytes) = std::fs::read("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf") else { return false };
    plotters::style::register_font("sans-serif", FontStyle::Normal, Box::leak(bytes.into_boxed_slice())).is_ok()
}

/// Three charts (mean, standard deviation, best-luck probability by position) in one PNG.
pub fn chart(results: &[Fairness], path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    if !register_font() {
        return Err("DejaVuSans.ttf not found (Debian package fonts-dejavu-core)".into());
    }
    let root = BitMapBackend::new(path, (900, 1200)).into_drawing_area();
    root.fill(&WHITE)?;
    let panels = root.split_evenly((3, 1));
    let colors = [RGBColor(200, 30, 40), RGBColor(30, 90, 200), RGBColor(240, 170, 170), RGBColor(160, 190, 240)];
    type Metric = fn(&Fairness) -> &Vec<f64>;
    let metrics: [(&str, Metric); 3] = [
        ("mean share by position (cents)", |f| &f.mean),
        ("standard deviation by position (cents)", |f| &f.std_dev),
        ("best-luck probability by position", |f| &f.best_luck),
    ];
    for (panel, (title, metric)) in panels.iter().zip(metrics) {
        let top = results.iter().flat_map(|f| metric(f).iter().copied()).fold(0.0, f64::max) * 1.15;
        let mut chart = ChartBuilder::on(panel)
            .caption(format!("{title}, {PACKETS} packets of {TOTAL} cents in {COUNT}"), ("sans-serif", 18))
            .margin(15)
            .x_label_area_size(35)
            .y_label_area_size(60)
            .build_cartesian_2d(0.5f64..(COUNT as f64 + 0.5), 0.0..top)?;
        chart.configure_mesh().x_desc("grab position").x_labels(COUNT as usize).draw()?;
        for (fairness, color) in results.iter().zip(colors) {
            let points: Vec<(f64, f64)> =
                metric(fairness).iter().enumerate().map(|(i, v)| (i as f64 + 1.0, *v)).collect();
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?
                .label(format!("{} v{}", fairness.rule, fairness.split_version))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
            chart.draw_series(points.into_iter().map(|point| Circle::new(point, 4, color.filled())))?;
        }
        chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
    }
    root.present()?;
    Ok(())
}
