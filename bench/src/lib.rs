//! What the bench binaries share: BENCHMARKS.md, rendered from its template and the figures under
//! `bench/results/`.

pub mod render;
