//! Fairness by grab position: mean, standard deviation and best-luck probability of each
//! position over 100,000 packets, per lucky rule; a table and a PNG.

use std::path::Path;

use plotters::prelude::*;
use red_packets::domain::split::{lucky, Seed, SplitRule};
use serde::Serialize;

/// Packets simulated per rule.
pub const PACKETS: u64 = 100_000;
/// The seeds' example shape.
pub const TOTAL: u64 = 10_000;
/// Shares per packet.
pub const COUNT: u32 = 10;

/// One rule's figures by position (index 0 = the first grabber).
#[derive(Debug, Clone, Serialize)]
pub struct Fairness {
    /// The rule.
    pub rule: &'static str,
    /// Mean share, cents.
    pub mean: Vec<f64>,
    /// Standard deviation, cents.
    pub std_dev: Vec<f64>,
    /// Probability of having the best luck (largest share, earliest on a tie).
    pub best_luck: Vec<f64>,
}

/// Simulates [`PACKETS`] packets of `rule` from fixed seeds.
pub fn simulate(rule: SplitRule) -> Fairness {
    let positions = COUNT as usize;
    let (mut sum, mut squares, mut best) = (vec![0f64; positions], vec![0f64; positions], vec![0u64; positions]);
    for n in 0..PACKETS {
        let mut bytes = [7u8; 32];
        bytes[..8].copy_from_slice(&n.to_le_bytes());
        let shares = lucky(rule, TOTAL, COUNT, &Seed(bytes));
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
    let std_dev = squares.iter().zip(&mean).map(|(sq, m)| (sq / count - m * m).max(0.0).sqrt()).collect();
    Fairness { rule: rule.as_str(), mean, std_dev, best_luck: best.iter().map(|&b| b as f64 / count).collect() }
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
    let colors = [RGBColor(200, 30, 40), RGBColor(30, 90, 200)];
    type Metric = fn(&Fairness) -> &Vec<f64>;
    let metrics: [(&str, Metric); 3] = [
        ("mean share by position (cents)", |f| &f.mean),
        ("standard deviation by position (cents)", |f| &f.std_dev),
        ("best-luck probability by position", |f| &f.best_luck),
    ];
    for (panel, (title, metric)) in panels.iter().zip(metrics) {
        let top = results.iter().flat_map(|f| metric(f).iter().copied()).fold(0.0, f64::max) * 1.15;
        let mut chart = ChartBuilder::on(panel)
            .caption(format!("{title}, {PACKETS} packets of {TOTAL} cents in {COUNT}"), ("sans-serif", 20))
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
                .label(fairness.rule)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
            chart.draw_series(points.into_iter().map(|point| Circle::new(point, 4, color.filled())))?;
        }
        chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
    }
    root.present()?;
    Ok(())
}
