//! The floor for cold starts: a minimal lambda_runtime function, built like the real ones.

use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::run(service_fn(|event: LambdaEvent<Value>| async move { Ok::<Value, Error>(event.payload) })).await
}
