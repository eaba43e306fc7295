//! Runs jobs with a fixed number of concurrent workers, timing each one.

use std::future::Future;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::stats::{histogram, record};

/// Runs every job with `concurrency` workers (each a tokio task working through its share in
/// order). Returns the merged latency histogram, every job's output and the wall time.
pub async fn run<T, O, F, Fut>(jobs: Vec<T>, concurrency: usize, work: F) -> (Histogram<u64>, Vec<O>, Duration)
where
    T: Send + 'static,
    O: Send + 'static,
    F: Fn(T) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = O> + Send,
{
    let mut shares: Vec<Vec<T>> = (0..concurrency).map(|_| Vec::new()).collect();
    for (n, job) in jobs.into_iter().enumerate() {
        shares[n % concurrency].push(job);
    }
    let started = Instant::now();
    let workers: Vec<_> = shares
        .into_iter()
        .map(|share| {
            let work = work.clone();
            tokio::spawn(async move {
                let mut latencies = histogram();
                let mut outputs = Vec::with_capacity(share.len());
                for job in share {
                    let began = Instant::now();
                    outputs.push(work(job).await);
                    record(&mut latencies, began.elapsed());
                }
                (latencies, outputs)
            })
        })
        .collect();
    let mut latencies = histogram();
    let mut outputs = Vec::new();
    for worker in workers {
        let (worker_latencies, worker_outputs) = worker.await.expect("worker");
        latencies.add(&worker_latencies).expect("histograms merge");
        outputs.extend(worker_outputs);
    }
    (latencies, outputs, started.elapsed())
}
