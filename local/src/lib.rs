//! The local API for `make run`: the SAM template's routes served in one process, calling the
//! same handler functions the Lambda binaries run, with a local stand-in for the JWT authorizer.

pub mod auth;
pub mod gateway;

use std::sync::Arc;

use red_packets::adapters::{DynamoLedger, RedisStore};
use red_packets::Config;
use tokio::net::TcpListener;

pub use auth::LocalAuthorizer;
pub use gateway::{router, Functions};

/// Builds every function from `config` (creating the table if needed), as the Lambdas would.
pub async fn functions(
    config: &Config,
    authorizer: LocalAuthorizer,
) -> Result<Functions, red_packets::ApiError> {
    let ledger = DynamoLedger::new(DynamoLedger::client_from_env().await, &config.table_name);
    ledger.ensure_table().await?;
    let store = Arc::new(RedisStore::new(config));
    Ok(Functions {
        send: send::SendService::new(ledger, store.clone(), config.limits),
        grab: grab::GrabService::new(store),
        authorizer,
    })
}

/// Serves on 127.0.0.1:`PORT` (default 3000) until Ctrl-C or SIGTERM.
pub async fn serve_from_env() -> Result<(), Box<dyn std::error::Error>> {
    let config = Config::from_env()?;
    let port: u16 = std::env::var("PORT")
        .ok()
        .map(|p| p.parse())
        .transpose()?
        .unwrap_or(3000);
    let functions = functions(&config, LocalAuthorizer::from_env()).await?;
    let listener = TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on http://{}", listener.local_addr()?);
    axum::serve(listener, router(Arc::new(functions)))
        .with_graceful_shutdown(shutdown_signal())
        .await?;
    Ok(())
}

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("SIGTERM handler");
    tokio::select! {
        _ = interrupt => {},
        _ = terminate.recv() => {},
    }
    tracing::info!("shutting down");
}
