//! Grab coalescing: concurrent calls for one key (a packet) go to Redis together, as one call
//! that carries them all. No timer: while a call for the key is in flight, the next requests
//! queue; when it returns, the queued ones go together (up to [`MAX_BATCH`]), led by the first
//! of them. A lone request goes alone, at once: on standard Lambda, one request per execution
//! environment, nothing ever queues.
//!
//! Each answer goes back to its own request. A failure of the batch is that failure for each
//! request in it, never another's answer. A leader dropped mid-call (its client gone, its
//! invocation timed out) answers its batch [`Unanswered`] and hands the queue on; a request
//! dropped just as the lead reaches it hands that batch on; so a key never stalls.

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::sync::Mutex;

use tokio::sync::oneshot;

/// The most requests one call carries; more wait for the next turn. A batch holds Redis for
/// its whole run (a few microseconds a grab), so this bounds how long any other key waits.
pub const MAX_BATCH: usize = 128;

/// A request's batch ended without its answer (its leader was dropped, or the call answered
/// fewer requests than it carried).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unanswered;

/// One queued request and where its turn reaches it.
struct Waiter<Req, Resp, E> {
    request: Req,
    turn: oneshot::Sender<Turn<Req, Resp, E>>,
}

/// What reaches a queued request: its answer, or the lead of the next batch (itself first).
enum Turn<Req, Resp, E> {
    Answer(Result<Resp, E>),
    Lead(Req, Vec<Waiter<Req, Resp, E>>),
}

/// For each key with a call in flight, the requests queued behind it.
type Lanes<K, Req, Resp, E> = HashMap<K, Vec<Waiter<Req, Resp, E>>>;

/// The per-environment coalescer.
pub struct Coalescer<K, Req, Resp, E> {
    lanes: Mutex<Lanes<K, Req, Resp, E>>,
}

impl<K, Req, Resp, E> Default for Coalescer<K, Req, Resp, E> {
    fn default() -> Self {
        Coalescer { lanes: Mutex::new(HashMap::new()) }
    }
}

impl<K, Req, Resp, E> Coalescer<K, Req, Resp, E>
where
    K: Hash + Eq + Clone,
    E: Clone + From<Unanswered>,
{
    /// `request`'s answer: `call` runs a batch of requests for `key` (this one among them) and
    /// answers each, in order.
    pub async fn call<F, Fut>(&self, key: &K, request: Req, call: F) -> Result<Resp, E>
    where
        F: Fn(Vec<Req>) -> Fut,
        Fut: Future<Output = Result<Vec<Resp>, E>>,
    {
        let queued = {
            let mut lanes = self.lanes();
            match lanes.get_mut(key) {
                Some(queue) => {
                    let (sender, receiver) = oneshot::channel();
                    queue.push(Waiter { request, turn: sender });
                    Err(receiver)
                }
                None => {
                    lanes.insert(key.clone(), Vec::new());
                    Ok(request)
                }
            }
        };
        let (own, followers) = match queued {
            Ok(request) => (request, Vec::new()),
            Err(receiver) => {
                let mut waiting = Waiting { coalescer: self, key, receiver };
                match (&mut waiting.receiver).await {
                    Ok(Turn::Answer(answer)) => return answer,
                    Ok(Turn::Lead(own, followers)) => (own, followers),
                    Err(_) => return Err(Unanswered.into()),
                }
            }
        };
        self.lead(key, own, followers, call).await
    }

    /// Runs one batch, led by `own`'s request, then hands the queue on.
    async fn lead<F, Fut>(&self, key: &K, own: Req, followers: Vec<Waiter<Req, Resp, E>>, call: F) -> Result<Resp, E>
    where
        F: Fn(Vec<Req>) -> Fut,
        Fut: Future<Output = Result<Vec<Resp>, E>>,
    {
        let hand_off = HandOff { coalescer: self, key };
        let (requests, turns): (Vec<Req>, Vec<_>) =
            std::iter::once((own, None)).chain(followers.into_iter().map(|w| (w.request, Some(w.turn)))).unzip();
        let carried = requests.len();
        let answers = call(requests).await;
        drop(hand_off);
        match answers {
            Ok(answers) if answers.len() == carried => {
                let mut answers = answers.into_iter();
                let own = answers.next().ok_or_else(|| E::from(Unanswered));
                for (turn, answer) in turns.into_iter().skip(1).zip(answers) {
                    if let Some(turn) = turn {
                        let _ = turn.send(Turn::Answer(Ok(answer)));
                    }
                }
                own
            }
            Ok(_) => Err(Unanswered.into()),
            Err(error) => {
                for turn in turns.into_iter().flatten() {
                    let _ = turn.send(Turn::Answer(Err(error.clone())));
                }
                Err(error)
            }
        }
    }

    fn lanes(&self) -> std::sync::MutexGuard<'_, Lanes<K, Req, Resp, E>> {
        self.lanes.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Gives the lead of `key`'s queue to its first request still waiting, with up to
    /// [`MAX_BATCH`] - 1 followers; with none waiting, the key has no call in flight any more.
    fn hand_on(&self, key: &K) {
        self.hand_on_with(key, Vec::new());
    }

    /// [`Coalescer::hand_on`], with `front` (a batch whose leader is gone) first in the queue.
    fn hand_on_with(&self, key: &K, front: Vec<Waiter<Req, Resp, E>>) {
        let mut lanes = self.lanes();
        let Some(queue) = lanes.get_mut(key) else { return };
        queue.splice(0..0, front);
        while !queue.is_empty() {
            let mut batch: Vec<_> = queue.drain(..queue.len().min(MAX_BATCH)).collect();
            let first = batch.remove(0);
            match first.turn.send(Turn::Lead(first.request, batch)) {
                Ok(()) => return,
                // That request is gone: its followers go back to the front of the queue.
                Err(returned) => {
                    if let Turn::Lead(_, followers) = returned {
                        queue.splice(0..0, followers);
                    }
                }
            }
        }
        lanes.remove(key);
    }
}

/// A queued request's wait. Dropped with a lead delivered but not taken up (the request gone at
/// that very moment), it hands that batch on, so the key never stalls behind a leader that
/// will not run.
struct Waiting<'a, K, Req, Resp, E>
where
    K: Hash + Eq + Clone,
    E: Clone + From<Unanswered>,
{
    coalescer: &'a Coalescer<K, Req, Resp, E>,
    key: &'a K,
    receiver: oneshot::Receiver<Turn<Req, Resp, E>>,
}

impl<K, Req, Resp, E> Drop for Waiting<'_, K, Req, Resp, E>
where
    K: Hash + Eq + Clone,
    E: Clone + From<Unanswered>,
{
    fn drop(&mut self) {
        self.receiver.close();
        if let Ok(Turn::Lead(_, followers)) = self.receiver.try_recv() {
            self.coalescer.hand_on_with(self.key, followers);
        }
    }
}

/// Hands `key`'s queue on when the leader's call ends, or when the leader is dropped mid-call.
struct HandOff<'a, K, Req, Resp, E>
where
    K: Hash + Eq + Clone,
    E: Clone + From<Unanswered>,
{
    coalescer: &'a Coalescer<K, Req, Resp, E>,
    key: &'a K,
}

impl<K, Req, Resp, E> Drop for HandOff<'_, K, Req, Resp, E>
where
    K: Hash + Eq + Clone,
    E: Clone + From<Unanswered>,
{
    fn drop(&mut self) {
        self.coalescer.hand_on(self.key);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    #[derive(Debug, Clone, PartialEq, Eq)]
    enum Failure {
        Down,
        Unanswered,
    }

    impl From<Unanswered> for Failure {
        fn from(_: Unanswered) -> Self {
            Failure::Unanswered
        }
    }

    type Doubler = Coalescer<&'static str, u32, u32, Failure>;

    /// A call that takes a while, records each batch's size, and doubles every request.
    async fn slow_double(batches: &Mutex<Vec<usize>>, requests: Vec<u32>) -> Result<Vec<u32>, Failure> {
        tokio::time::sleep(Duration::from_millis(5)).await;
        batches.lock().unwrap().push(requests.len());
        Ok(requests.into_iter().map(|n| n * 2).collect())
    }

    #[tokio::test]
    async fn a_lone_request_goes_alone_and_at_once() {
        let coalescer = Doubler::default();
        let batches = Mutex::new(Vec::new());
        for n in 0..3 {
            assert_eq!(coalescer.call(&"p", n, |r| slow_double(&batches, r)).await, Ok(n * 2));
        }
        assert_eq!(*batches.lock().unwrap(), [1, 1, 1]);
        assert!(coalescer.lanes().is_empty(), "no call in flight, no lane left");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_requests_share_calls_and_each_gets_its_own_answer() {
        let coalescer = Arc::new(Doubler::default());
        let batches = Arc::new(Mutex::new(Vec::new()));
        let tasks: Vec<_> = (0..200u32)
            .map(|n| {
                let (coalescer, batches) = (coalescer.clone(), batches.clone());
                tokio::spawn(async move { (n, coalescer.call(&"p", n, |r| slow_double(&batches, r)).await) })
            })
            .collect();
        for task in tasks {
            let (n, answer) = task.await.unwrap();
            assert_eq!(answer, Ok(n * 2), "request {n} got another's answer");
        }
        let batches = batches.lock().unwrap();
        assert_eq!(batches.iter().sum::<usize>(), 200, "every request carried once");
        assert!(batches.len() < 200, "some calls carried several: {batches:?}");
        assert!(batches.iter().all(|&size| size <= MAX_BATCH), "{batches:?}");
        assert!(coalescer.lanes().is_empty());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn other_keys_never_wait_for_a_busy_one() {
        let coalescer = Arc::new(Doubler::default());
        let slow = {
            let coalescer = coalescer.clone();
            tokio::spawn(async move {
                coalescer
                    .call(&"hot", 1, |r| async move {
                        tokio::time::sleep(Duration::from_millis(300)).await;
                        Ok(r)
                    })
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        let other =
            tokio::time::timeout(Duration::from_millis(200), coalescer.call(&"cold", 7, |r| async move { Ok(r) }));
        assert_eq!(other.await, Ok(Ok(7)), "another key goes at once");
        assert_eq!(slow.await.unwrap(), Ok(1));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_batch_fails_each_request_in_it_and_the_next_goes_on() {
        let coalescer = Arc::new(Doubler::default());
        let calls = Arc::new(AtomicUsize::new(0));
        let call = {
            let calls = calls.clone();
            move |requests: Vec<u32>| {
                let first = calls.fetch_add(1, Ordering::SeqCst) == 0;
                async move {
                    tokio::time::sleep(Duration::from_millis(30)).await;
                    if first {
                        Err(Failure::Down)
                    } else {
                        Ok(requests)
                    }
                }
            }
        };
        let leader = {
            let (coalescer, call) = (coalescer.clone(), call.clone());
            tokio::spawn(async move { coalescer.call(&"p", 0, call).await })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        let queued: Vec<_> = (1..5u32)
            .map(|n| {
                let (coalescer, call) = (coalescer.clone(), call.clone());
                tokio::spawn(async move { coalescer.call(&"p", n, call).await })
            })
            .collect();
        assert_eq!(leader.await.unwrap(), Err(Failure::Down));
        for (n, task) in (1..5u32).zip(queued) {
            assert_eq!(task.await.unwrap(), Ok(n), "the queued batch ran after the failed one");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_leader_dropped_mid_call_leaves_its_batch_unanswered_and_the_queue_moving() {
        let coalescer = Arc::new(Doubler::default());
        let stuck = {
            let coalescer = coalescer.clone();
            tokio::spawn(async move {
                coalescer
                    .call(&"p", 0, |r| async move {
                        tokio::time::sleep(Duration::from_secs(3600)).await;
                        Ok(r)
                    })
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        let queued = {
            let coalescer = coalescer.clone();
            tokio::spawn(async move { coalescer.call(&"p", 5, |r| async move { Ok(r) }).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        stuck.abort();
        let answer = tokio::time::timeout(Duration::from_secs(5), queued).await.expect("the queue moved on");
        assert_eq!(answer.unwrap(), Ok(5), "the waiter led the next call");
        assert!(coalescer.lanes().is_empty());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_waiter_dropped_as_its_lead_arrives_hands_its_batch_on() {
        let coalescer = Arc::new(Doubler::default());
        let release = Arc::new(tokio::sync::Notify::new());
        let leader = {
            let (coalescer, release) = (coalescer.clone(), release.clone());
            tokio::spawn(async move {
                coalescer
                    .call(&"p", 0, |r| {
                        let release = release.clone();
                        async move {
                            release.notified().await;
                            Ok(r)
                        }
                    })
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        // The next leader queues, then its future is polled no more (its client gone) while the
        // lead reaches it; a follower queues behind it.
        let mut next = Box::pin(coalescer.call(&"p", 1, |r| async move { Ok(r) }));
        assert!(futures::poll!(next.as_mut()).is_pending());
        let follower = {
            let coalescer = coalescer.clone();
            tokio::spawn(async move { coalescer.call(&"p", 2, |r| async move { Ok(r) }).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        release.notify_one();
        assert_eq!(leader.await.unwrap(), Ok(0));
        drop(next);
        let answer = tokio::time::timeout(Duration::from_secs(5), follower).await.expect("the queue moved on");
        assert_eq!(answer.unwrap(), Ok(2), "the follower led the batch its dropped leader left");
        assert!(coalescer.lanes().is_empty());
    }

    #[tokio::test]
    async fn a_call_that_answers_too_few_leaves_its_requests_unanswered() {
        let coalescer = Doubler::default();
        let answer = coalescer.call(&"p", 3, |_| async { Ok(Vec::new()) }).await;
        assert_eq!(answer, Err(Failure::Unanswered));
    }
}
