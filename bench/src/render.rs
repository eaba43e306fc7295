//! BENCHMARKS.md from its template, `bench/BENCHMARKS.md.j2` (MiniJinja: the prose, the targets and
//! the arithmetic on the figures), and the figures under `bench/results/`: the last `make bench`
//! run's (`latest.json`), the earlier runs' that the prose cites (`past.json`) and
//! `make books-scale`'s (`books-scale-p<passes>.json`). `make bench` renders it after writing
//! `latest.json`; `cargo run -p bench -- render` renders it again from the files alone.

use std::path::{Path, PathBuf};

use minijinja::syntax::SyntaxConfig;
use minijinja::value::Serde;
use minijinja::{Environment, UndefinedBehavior};
use serde_json::{json, Value};

/// The template.
pub const TEMPLATE: &str = include_str!("../BENCHMARKS.md.j2");

/// What reading the data or rendering the template can fail with.
pub type Error = Box<dyn std::error::Error>;

/// The workspace's root, where BENCHMARKS.md is.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("bench/ is in the workspace").to_owned()
}

/// What the template reads, from a results directory: `run` (`latest.json`'s details), `past`,
/// `books_scale` (the recorded runs by passes, none at all leaving their section out) and
/// `campaign_run` (`campaign.json`, `make bench-campaign`'s or the last full run's; null when none)
/// and `controls_run` (`controls.json`, `make bench-controls`'s; null when none), `kit_run`
/// (`kit.json`, `make bench-kit`'s; null when none) and `reads_run` (`reads.json`, `make
/// bench-reads`'s or the last full run's; null when none).
pub fn data(results: &Path) -> Result<Value, Error> {
    let read = |name: &str| -> Result<Value, Error> {
        let path = results.join(name);
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?)
    };
    let mut latest = read("latest.json")?;
    let run = latest.get_mut("details").ok_or("latest.json has no details")?.take();
    let books_scale = (1..=8)
        .map(|passes| format!("books-scale-p{passes}.json"))
        .filter(|name| results.join(name).exists())
        .map(|name| read(&name))
        .collect::<Result<Vec<_>, _>>()?;
    let optional = |name: &str| if results.join(name).exists() { read(name) } else { Ok(Value::Null) };
    let (campaign, controls, kit) = (optional("campaign.json")?, optional("controls.json")?, optional("kit.json")?);
    let reads = optional("reads.json")?;
    Ok(json!({
        "run": run,
        "past": read("past.json")?,
        "books_scale": books_scale,
        "campaign_run": campaign,
        "controls_run": controls,
        "kit_run": kit,
        "reads_run": reads,
    }))
}

/// BENCHMARKS.md from the template and `data`. Block tags take their line with them; a figure
/// the template names and the data lacks is an error, not an empty cell. Two filters besides
/// MiniJinja's: `fixed(n)`, a number as `{:.n}` prints it, and `next_power_of_two`, of the
/// number rounded up.
pub fn render(data: &Value) -> Result<String, Error> {
    let mut env = Environment::new();
    let mut syntax = SyntaxConfig::builder();
    syntax.trim_blocks(true).lstrip_blocks(true).keep_trailing_newline(true);
    env.set_syntax(syntax.build()?);
    env.set_undefined_behavior(UndefinedBehavior::SemiStrict);
    env.add_filter("fixed", |value: f64, digits: usize| format!("{value:.digits$}"));
    env.add_filter("next_power_of_two", |value: f64| (value.ceil() as u64).next_power_of_two());
    env.add_template("BENCHMARKS.md", TEMPLATE)?;
    Ok(env.get_template("BENCHMARKS.md")?.render(Serde(data))?)
}

/// Renders BENCHMARKS.md from the workspace's `bench/results/` into the workspace.
pub fn write(workspace: &Path) -> Result<(), Error> {
    let markdown = render(&data(&workspace.join("bench/results"))?)?;
    std::fs::write(workspace.join("BENCHMARKS.md"), markdown)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn committed_data() -> Value {
        data(&workspace().join("bench/results")).expect("the committed data files read")
    }

    #[test]
    fn the_committed_data_renders_the_committed_benchmarks_md() {
        let rendered = render(&committed_data()).unwrap_or_else(|e| panic!("{e}"));
        let committed = std::fs::read_to_string(workspace().join("BENCHMARKS.md")).expect("BENCHMARKS.md");
        let line = committed.lines().zip(rendered.lines()).position(|(a, b)| a != b);
        assert!(
            rendered == committed,
            "BENCHMARKS.md is not the template rendered with bench/results/ (first difference at line {}: \
             committed {:?}, rendered {:?}); `cargo run -p bench -- render` rewrites it",
            line.map_or(committed.lines().count().min(rendered.lines().count()), |n| n) + 1,
            line.and_then(|n| committed.lines().nth(n)),
            line.and_then(|n| rendered.lines().nth(n)),
        );
    }

    /// The branches the committed run does not take: targets met that it missed, an earlier
    /// build's cold starts beside this one's, no books-scale runs.
    #[test]
    fn the_branches_the_committed_run_skips_render() {
        let mut data = committed_data();
        let run = &mut data["run"];
        run["redis_benchmark_pipelined"] = json!(1e9);
        run["redis_benchmark_unpipelined"] = json!(1e9);
        for design in run["seeds"].as_array_mut().expect("seeds") {
            if design["design"] == "two_list" {
                design["ops_per_s"] = json!(1.0);
                design["redis_cpu_us_per_fresh_grab"] = json!(1e6);
            }
        }
        let grab = run["binaries"].as_array().expect("binaries").iter().find(|b| b["name"] == "grab");
        run["binaries_before"] = json!(["an earlier build", [grab.expect("grab's cold starts")]]);
        data["books_scale"] = json!([]);
        let markdown = render(&data).unwrap_or_else(|e| panic!("{e}"));
        for shown in [
            "- **Handler at c=64 vs redis-benchmark's pipelined EVALSHA (0.00 x, target 0.8 x).**",
            "- **Handler vs redis-benchmark (0.00 x, target 1.0 x).**",
            "*Before* is the same run on the binaries of an earlier build",
            "| grab | 2.7 ms | 5.1 ms | 1.2 ms | 2.7 ms | 5.1 ms | 1.2 ms | 11.1 MiB | not built |",
            "| send | 4.1 ms | 53.4 ms | 36.5 ms | - | - | - | 11.4 MiB | not built |",
        ] {
            assert!(markdown.contains(shown), "{shown:?} is missing");
        }
        for left_out in ["- **Ours vs two-list", "## Reconciliation at scale"] {
            assert!(!markdown.contains(left_out), "{left_out:?} is there");
        }
    }
}
