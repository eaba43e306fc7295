//! The local API for `make run`: the SAM template's routes served in one process, calling the
//! same handler functions the Lambda binaries run, with a local stand-in for the JWT authorizer
//! and for the settle schedule (every `SETTLE_EVERY_SECONDS`, default 1: a run costs only the work there is),
//! and the bus's risk function fed from the table's stream (every `WATCH_EVENTS_EVERY_SECONDS`,
//! default 1; 0 turns it off).

pub mod app;
pub mod auth;
pub mod call_proxy;
pub mod calls;
pub mod console;
pub mod cors;
pub mod gateway;
pub mod pipe;
pub mod probe;
pub mod restore_report;
pub mod rie;
pub mod sam_local;
pub mod settings_doc;
pub mod site;
pub mod throttle;
pub mod tls_front;
pub mod write_meter;

use std::sync::Arc;
use std::time::Duration;

use red_packets::adapters::{DynamoLedger, ExportFile, ExportWriter, RedisStore, ReportDirectory};
use red_packets::funds::{reconcile, Cutoff, FundsEntry};
use red_packets::keys::Keys;
use red_packets::ports::WRITES_LAND_WITHIN;
use red_packets::secrets::SecretsManager;
use red_packets::settings;
use red_packets::settle::Settler;
use red_packets::{Clock, Config, SystemClock};
use tokio::net::TcpListener;

pub use auth::LocalAuthorizer;
pub use gateway::{router, Functions};
pub use throttle::Throttle;

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
    let client = DynamoLedger::client_from_env().map_err(|error| red_packets::ApiError::Internal(error.to_string()))?;
    functions_on(config, authorizer, clock, client).await
}

/// [`functions_with_clock`] on DynamoDB through `client` (tests give one whose calls meet
/// injected faults).
pub async fn functions_on(
    config: &Config,
    authorizer: LocalAuthorizer,
    clock: Arc<dyn Clock>,
    client: aws_sdk_dynamodb::Client,
) -> Result<Functions, red_packets::ApiError> {
    DynamoLedger::new(client.clone(), config).ensure_table().await?;
    // Each function's own client, so that the calls each one makes can be recorded as its own.
    let ledger_of = |function| DynamoLedger::new(calls::dynamodb(client.clone(), function), config);
    let store = Arc::new(RedisStore::new(config));
    Ok(Functions {
        send: send::SendService::with_clock(ledger_of("send"), store.clone(), config, clock.clone())
            .with_keys(keys_of(config, "send")?),
        grab: grab::GrabService::with_clock(store.clone(), ledger_of("grab"), config, clock.clone())
            .with_keys(keys_of(config, "grab")?),
        query: query::QueryService::with_clock(store.clone(), ledger_of("query"), clock.clone()),
        settler: Settler::new(store.clone(), ledger_of("settle")).with_clock(clock.clone()),
        authorizer,
        operators: gateway::Operators {
            ledger: ledger_of("operator"),
            live: store.clone(),
            reports: ReportDirectory::new(std::env::var("REPORTS_DIR").unwrap_or_else(|_| "reports".into())),
            roles_claim: config.operator_roles_claim.clone(),
            clock: clock.clone(),
            authorizer: LocalAuthorizer::operators_from_env(),
        },
        membership_keys: config.membership_keys.clone(),
        cors: cors::Cors::from_env(),
        throttle: Throttle::from_env().map_err(|error| red_packets::ApiError::Internal(error.to_string()))?,
    })
}

/// `function`'s keys on `config`: read through Secrets Manager (`AWS_ENDPOINT_URL_SECRETS_MANAGER`:
/// moto's server in the tests) where it names their secrets, as the deployed function reads them,
/// its calls recorded as `function`'s; else the environment's.
fn keys_of(config: &Config, function: &'static str) -> Result<Arc<Keys>, red_packets::ApiError> {
    if config.passphrase_key_secret.is_none() && config.membership_keys_secret.is_none() {
        return Ok(Arc::new(Keys::fixed(config)));
    }
    let client =
        SecretsManager::client_from_env().map_err(|error| red_packets::ApiError::Internal(error.to_string()))?;
    let source = SecretsManager::with_client(calls::secretsmanager(client, function));
    Ok(Arc::new(Keys::from_config(config, Some(Arc::new(source)))))
}

/// `local topup <user> <cents>` and `local reconcile`: the `funds` function's handler on
/// `config`'s ledger, as the payments system and the daily schedule invoke it; prints its
/// answer, and fails when the books do not balance.
pub async fn funds_from_env(payload: serde_json::Value) -> Result<(), Box<dyn std::error::Error>> {
    let config = Config::from_env()?;
    let client = DynamoLedger::client_from_env()?;
    DynamoLedger::new(client.clone(), &config).ensure_table().await?;
    // Each request as the entry point that serves it in AWS, its calls charged to that binary.
    let entry =
        serde_json::from_value(payload.clone()).map_or(FundsEntry::Payments, |request| FundsEntry::serving(&request));
    let ledger = DynamoLedger::new(calls::dynamodb(client, entry.binary().unwrap_or("funds")), &config);
    let event = lambda_runtime::LambdaEvent::new(payload, lambda_runtime::Context::default());
    let reports = ReportDirectory::new(std::env::var("REPORTS_DIR").unwrap_or_else(|_| "reports".into()));
    let response = funds::handle(&ledger, &SystemClock, &reports, entry, event).await?;
    println!("{}", serde_json::to_string_pretty(&response)?);
    match response.response {
        red_packets::funds::FundsResponse::Reconcile(books) if !books.balanced() => {
            Err(format!("{} the books do not balance", red_packets::settle::RECONCILIATION_MISMATCH).into())
        }
        _ => Ok(()),
    }
}

/// `local export <file>`: every item of the configured table, in DynamoDB's export shape, each
/// partition key's items together; prints the cut-off to reconcile the copy as of (the scan's
/// start less `WRITES_LAND_WITHIN`: anything later may have been read in part).
pub async fn export_from_env(path: &str) -> Result<(), Box<dyn std::error::Error>> {
    let config = Config::from_env()?;
    let ledger = DynamoLedger::new(DynamoLedger::client_from_env()?, &config);
    let started = SystemClock.now_ms();
    let mut writer = ExportWriter::create(path)?;
    let mut failed = None;
    let count = ledger
        .export_items(|item| {
            if let Err(error) = writer.write(item) {
                failed.get_or_insert(error);
            }
        })
        .await?;
    if let Some(error) = failed {
        return Err(error.into());
    }
    writer.finish()?;
    let as_of = red_packets::clock::rfc3339(started - WRITES_LAND_WITHIN.as_millis() as i64);
    println!("{}", serde_json::json!({ "items": count, "file": path, "reconcile_as_of": as_of }));
    Ok(())
}

/// `local reconcile --file <export> [--as-of <time>] [--passes <n>]`: reconciles an export file
/// (default cut-off: everything in it, for a copy nothing wrote to while it was taken).
pub async fn reconcile_file(path: &str, as_of: Option<&str>, passes: u32) -> Result<(), Box<dyn std::error::Error>> {
    let cutoff = match as_of {
        Some(text) => Cutoff::live(red_packets::clock::parse_rfc3339(text).ok_or("--as-of: not an RFC 3339 time")?),
        None => Cutoff { as_of_ms: i64::MAX / 2, landing_ms: 0 },
    };
    let books = reconcile(&ExportFile::new(path, Config::from_env()?.currency), cutoff, passes.max(1)).await?;
    println!("{}", serde_json::to_string_pretty(&books)?);
    if !books.balanced() {
        return Err(format!("{} the books do not balance", red_packets::settle::RECONCILIATION_MISMATCH).into());
    }
    Ok(())
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

/// The risk function beside `make run`'s API: every `every`, the ledger's new events, read from
/// the table's stream through template.yaml's Pipe, go to its handler as the bus's rule would
/// deliver them; each flag raised is logged. A failed event is tried again at the next tick, three
/// tries in all as Lambda's retries give it, then logged and dropped (in AWS it would wait in the
/// dead-letter queue).
pub async fn watch_events(config: Config, every: Duration) -> Result<(), String> {
    let client = DynamoLedger::client_from_env().map_err(|error| error.to_string())?;
    let mut stream = pipe::StreamReader::enable(&client, &config.table_name).await?;
    let watch =
        risk::Watch::new(DynamoLedger::new(calls::dynamodb(client.clone(), "risk"), &config), &config, SystemClock);
    let (events_pipe, detail_types) = (pipe::Pipe::of_template(), pipe::rule_detail_types("RiskFunction"));
    // Each event with the tries it has had: three, as Lambda's two retries give it, then dropped.
    let mut pending: std::collections::VecDeque<(serde_json::Value, u32)> = Default::default();
    let mut ticks = tokio::time::interval(every);
    loop {
        ticks.tick().await;
        match stream.read_new().await {
            Ok(records) => pending.extend(records.iter().filter_map(|record| {
                let (detail_type, detail) = events_pipe.publish(record)?;
                detail_types.contains(&detail_type).then(|| (pipe::bus_event(&detail_type, &detail), 0))
            })),
            Err(error) => {
                // An iterator expired (a laptop asleep past 15 minutes, say): read the stream again
                // from its start; the rules take a repeat as nothing new.
                tracing::warn!(%error, "local events: the table's stream could not be read; reading it again");
                stream = pipe::StreamReader::of(&client, &config.table_name).await?;
            }
        }
        while let Some((event, tries)) = pending.pop_front() {
            let invocation = lambda_runtime::LambdaEvent::new(event.clone(), lambda_runtime::Context::default());
            match risk::handle(&watch, invocation).await {
                Ok(watched) => {
                    for flag in watched.flags {
                        tracing::warn!(flag_id = %flag.flag_id, rule = flag.rule.as_str(), detail = %flag.detail, "local risk flag");
                    }
                }
                Err(error) if tries < 2 => {
                    tracing::warn!(%error, "local risk function failed; the event goes again at the next tick");
                    pending.push_front((event, tries + 1));
                    break;
                }
                Err(error) => {
                    tracing::error!(%error, %event, "local risk function failed three times; the event is dropped")
                }
            }
        }
    }
}

/// Serves on 127.0.0.1:`PORT` (default 3000) until Ctrl-C or SIGTERM.
pub async fn serve_from_env() -> Result<(), Box<dyn std::error::Error>> {
    let config = Config::from_env()?;
    let port = u16::try_from(settings::PORT.number_from_env()?)?;
    let settle_every_seconds = settings::SETTLE_EVERY_SECONDS.number_from_env()?;
    let functions = Arc::new(functions(&config, LocalAuthorizer::from_env()).await?);
    tokio::spawn(settle_every(functions.clone(), Duration::from_secs(settle_every_seconds)));
    // The risk function on the bus, unless WATCH_EVENTS_EVERY_SECONDS is 0 (a stream slows
    // DynamoDB Local a little).
    let watch_every = settings::WATCH_EVENTS_EVERY_SECONDS.number_from_env()?;
    if watch_every > 0 {
        let config = config.clone();
        tokio::spawn(async move {
            if let Err(error) = watch_events(config, Duration::from_secs(watch_every)).await {
                tracing::error!(%error, "local events: the risk function does not run");
            }
        });
    }
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
