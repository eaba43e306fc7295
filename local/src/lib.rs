//! The local API for `make run`: the SAM template's routes served in one process, calling the
//! same handler functions the Lambda binaries run, with a local stand-in for the JWT authorizer
//! and for the settle schedule (every `SETTLE_EVERY_SECONDS`, default 1: a run costs only the work there is).

pub mod auth;
pub mod gateway;
pub mod probe;
pub mod rie;
pub mod tls_front;

use std::sync::Arc;
use std::time::Duration;

use red_packets::adapters::{DynamoLedger, RedisStore};
use red_packets::settle::Settler;
use red_packets::{Clock, Config, SystemClock};
use tokio::net::TcpListener;

pub use auth::LocalAuthorizer;
pub use gateway::{router, Functions};

/// Builds every function from `config` (creating the table if needed), as the Lambdas would.
pub async fn functions(config: &Config, authorizer: LocalAuthorizer) -> Result<Functions, red_packets::ApiError> {
    functions_with_clock(config, authorizer, Arc::new(SystemClock)).await
}

/// [`functions`], every one of them reading time from `clock` (tests move it).
pub async fn functions_with_clock(
    config: &Config,
    authorizer: LocalAuthorizer,
    clock: Arc<dyn Clock>,
) -> Result<Functions, red_packets::ApiError> {
    let ledger = DynamoLedger::new(
        DynamoLedger::client_from_env().map_err(|error| red_packets::ApiError::Internal(error.to_string()))?,
        config,
    );
    ledger.ensure_table().await?;
    let store = Arc::new(RedisStore::new(config));
    Ok(Functions {
        send: send::SendService::with_clock(ledger.clone(), store.clone(), config, clock.clone()),
        grab: grab::GrabService::with_clock(
            store.clone(),
            ledger.clone(),
            config.passphrase_key.clone(),
            clock.clone(),
        ),
        query: query::QueryService::with_clock(store.clone(), ledger.clone(), clock.clone()),
        settler: Settler::new(store, ledger).with_clock(clock),
        authorizer,
    })
}

/// `local topup <user> <cents>` and `local reconcile`: the `funds` function's handler on
/// `config`'s ledger, as the payments system and the daily schedule invoke it; prints its
/// answer, and fails when the books do not balance.
pub async fn funds_from_env(payload: serde_json::Value) -> Result<(), Box<dyn std::error::Error>> {
    let config = Config::from_env()?;
    let ledger = DynamoLedger::new(DynamoLedger::client_from_env()?, &config);
    ledger.ensure_table().await?;
    let event = lambda_runtime::LambdaEvent::new(payload, lambda_runtime::Context::default());
    let response = funds::handle(&ledger, &SystemClock, event).await?;
    println!("{}", serde_json::to_string_pretty(&response)?);
    match response {
        red_packets::funds::FundsResponse::Reconcile(books) if !books.balanced() => {
            Err(format!("{} the books do not balance", red_packets::settle::RECONCILIATION_MISMATCH).into())
        }
        _ => Ok(()),
    }
}

/// `local quarantine` and `local release <id>…`: one settle run through its handler on the
/// configured stack (`{"release": [ids]}` first takes those packets out of quarantine); prints
/// the run's summary, whose `in_quarantine` lists what is still set aside.
pub async fn settle_from_env(payload: serde_json::Value) -> Result<(), Box<dyn std::error::Error>> {
    let config = Config::from_env()?;
    let functions = functions(&config, LocalAuthorizer::from_env()).await?;
    let event = lambda_runtime::LambdaEvent::new(payload, lambda_runtime::Context::default());
    let summary = settle::handle(&functions.settler, event).await?;
    println!("{}", serde_json::to_string_pretty(&summary)?);
    Ok(())
}

/// Runs settle through its handler every `every`, as the schedule would, for ever.
pub async fn settle_every(functions: Arc<Functions>, every: Duration) {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let mut context = lambda_runtime::Context::default();
        context.deadline = (SystemClock.now_ms() + 60_000) as u64;
        let event = lambda_runtime::LambdaEvent::new(serde_json::Value::Null, context);
        if let Err(error) = settle::handle(&functions.settler, event).await {
            tracing::error!(%error, "local settle run failed");
        }
    }
}

/// Serves on 127.0.0.1:`PORT` (default 3000) until Ctrl-C or SIGTERM.
pub async fn serve_from_env() -> Result<(), Box<dyn std::error::Error>> {
    let config = Config::from_env()?;
    let port: u16 = std::env::var("PORT").ok().map(|p| p.parse()).transpose()?.unwrap_or(3000);
    let settle_every_seconds: u64 =
        std::env::var("SETTLE_EVERY_SECONDS").ok().map(|s| s.parse()).transpose()?.unwrap_or(1).max(1);
    let functions = Arc::new(functions(&config, LocalAuthorizer::from_env()).await?);
    tokio::spawn(settle_every(functions.clone(), Duration::from_secs(settle_every_seconds)));
    let listener = TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on http://{}", listener.local_addr()?);
    axum::serve(listener, router(functions)).with_graceful_shutdown(shutdown_signal()).await?;
    Ok(())
}

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    let mut terminate =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = interrupt => {},
        _ = terminate.recv() => {},
    }
    tracing::info!("shutting down");
}
