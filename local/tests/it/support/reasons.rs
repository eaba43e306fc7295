//! Why a grab answered 503: the `detail` of the warnings its own call logged, captured by a
//! tracing subscriber of that call alone (the answer itself says only `unavailable`). The fleet
//! and the storm suites tell a timeout the machine caused from a defect this way.

use std::sync::{Arc, Mutex};

use serde_json::Value;
use tracing::field::{Field, Visit};
use tracing::instrument::WithSubscriber;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::Layer;

use super::stack::Stack;

/// The `detail` of the warnings logged while one grab runs (a 503's reason), captured by a
/// subscriber of the grab's own: the answer itself says only `unavailable`.
#[derive(Clone, Default)]
pub struct Reasons(Arc<Mutex<Vec<String>>>);

impl<S: tracing::Subscriber> Layer<S> for Reasons {
    fn enabled(&self, metadata: &tracing::Metadata<'_>, _: Context<'_, S>) -> bool {
        *metadata.level() <= tracing::Level::WARN
    }

    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        struct Detail(Option<String>);
        impl Visit for Detail {
            fn record_str(&mut self, field: &Field, value: &str) {
                if field.name() == "detail" {
                    self.0 = Some(value.to_owned());
                }
            }
            fn record_debug(&mut self, _: &Field, _: &dyn std::fmt::Debug) {}
        }
        let mut detail = Detail(None);
        event.record(&mut detail);
        self.0.lock().unwrap().extend(detail.0);
    }
}

/// `user`'s grab of `id`, with the reason a 503 logged.
pub async fn grab_telling_why(stack: &Stack, id: &str, user: &str) -> (u16, Value, Option<String>) {
    let reasons = Reasons::default();
    let subscriber = tracing_subscriber::registry().with(reasons.clone());
    let (status, body) = stack.grab(id, user).with_subscriber(subscriber).await;
    let reason = reasons.0.lock().unwrap().pop();
    (status, body, reason)
}

/// True for a 503's reason that is a timeout the machine caused: Redis gave no answer within the
/// grab's limit (the store's own bound, or the client's response timeout), twice, since the grab
/// path asks a timed-out call again once.
pub fn is_machine_timeout(reason: &str) -> bool {
    reason.contains("no answer within") || reason.to_lowercase().contains("timed out")
}
