//! The funds function's reports through its real S3 client: the sample trial balance and statement
//! written with `PutObject` to an S3 stand-in on 127.0.0.1 (path-style, as `AWS_ENDPOINT_URL_S3`
//! reaches one), each report as JSON lines and CSV with its content type; an S3 that refuses
//! fails the run as unavailable, naming S3. Its ledger is DynamoDB Local's. With `AWS_CALL_LOG`
//! set (`make test`), every call is recorded as the funds function's, for the permission check.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::put;
use axum::Router;
use funds::reports::{s3_client, Reports};
use lambda_runtime::{Context, Diagnostic, LambdaEvent};
use red_packets::adapters::dynamo::client::Connection;
use red_packets::adapters::DynamoLedger;
use red_packets::domain::{Funds, PacketId};
use red_packets::funds::FundsEntry;
use red_packets::{Config, SystemClock};
use serde_json::Value;

const TOPUP_EVENT: &str = include_str!("../../../events/topup.json");
const STATEMENT_EVENT: &str = include_str!("../../../events/statement.json");
const TRIAL_BALANCE_EVENT: &str = include_str!("../../../events/trial-balance.json");

/// What the stand-in received: `bucket/key` -> (content type, body).
type Objects = Arc<Mutex<BTreeMap<String, (String, String)>>>;

/// An S3 stand-in answering `PutObject` (path-style) as S3 does, `If-None-Match: *` included (412
/// where an object is), or refusing every request.
async fn s3_stand_in(refuse: bool) -> (String, Objects) {
    s3_stand_in_conflicting(refuse, 0).await
}

/// The same, answering its first `conflicts` puts with 409 ConditionalRequestConflict (another
/// conditional put of the key under way).
async fn s3_stand_in_conflicting(refuse: bool, conflicts: usize) -> (String, Objects) {
    let conflicts = Arc::new(std::sync::atomic::AtomicUsize::new(conflicts));
    let objects = Objects::default();
    let app = Router::new()
        .route(
            "/{bucket}/{*key}",
            put(
                move |State(objects): State<Objects>,
                      Path((bucket, key)): Path<(String, String)>,
                      headers: HeaderMap,
                      body: Bytes| {
                    let conflicting = conflicts
                        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| left.checked_sub(1))
                        .is_ok();
                    async move {
                    if conflicting {
                        return (
                            StatusCode::CONFLICT,
                            [("etag", "")],
                            "<Error><Code>ConditionalRequestConflict</Code></Error>",
                        );
                    }
                    if refuse {
                        return (
                            StatusCode::SERVICE_UNAVAILABLE,
                            [("etag", "")],
                            "<Error><Code>SlowDown</Code></Error>",
                        );
                    }
                    let header = |name: &str| {
                        headers.get(name).and_then(|value| value.to_str().ok()).unwrap_or_default().to_owned()
                    };
                    let body =
                        if header("content-encoding").contains("aws-chunked") { unchunk(&body) } else { body.to_vec() };
                    let body = String::from_utf8(body).expect("a report is text");
                    let mut objects = objects.lock().unwrap();
                    let path = format!("{bucket}/{key}");
                    if header("if-none-match") == "*" && objects.contains_key(&path) {
                        return (
                            StatusCode::PRECONDITION_FAILED,
                            [("etag", "")],
                            "<Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold</Message></Error>",
                        );
                    }
                    objects.insert(path, (header("content-type"), body));
                    (StatusCode::OK, [("etag", "\"stand-in\"")], "")
                    }
                },
            ),
        )
        .with_state(objects.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, objects)
}

/// The payload of an `aws-chunked` body (`<hex size>[;…]\r\n<data>\r\n`…, ending in a chunk of 0).
fn unchunk(body: &[u8]) -> Vec<u8> {
    let mut payload = Vec::new();
    let mut rest = body;
    while let Some(end) = rest.windows(2).position(|pair| pair == b"\r\n") {
        let header = std::str::from_utf8(&rest[..end]).unwrap();
        let size = usize::from_str_radix(header.split(';').next().unwrap().trim(), 16).unwrap();
        if size == 0 {
            break;
        }
        payload.extend_from_slice(&rest[end + 2..end + 2 + size]);
        rest = &rest[end + 2 + size + 2..];
    }
    payload
}

async fn funds_on(s3_url: &str) -> (DynamoLedger, Reports) {
    let mut config = Config::from_env().unwrap();
    config.funds = Funds::Wallet;
    config.table_name = format!("RedPackets-reports-{}", &PacketId::random().as_str()[..8]);
    let client = DynamoLedger::client_from_env().expect("a DynamoDB client");
    DynamoLedger::new(client.clone(), &config).ensure_table().await.expect("DynamoDB Local (make test) is reachable");
    let ledger = DynamoLedger::new(local::calls::dynamodb(client, "funds"), &config);
    let s3 = s3_client(&Connection::from_env(), Some(s3_url)).expect("an S3 client");
    let reports = Reports::Bucket { client: local::calls::s3(s3, "funds"), bucket: "reports".into() };
    (ledger, reports)
}

async fn call(ledger: &DynamoLedger, reports: &Reports, event: &str) -> Result<Value, Diagnostic> {
    let event = LambdaEvent::new(serde_json::from_str(event).unwrap(), Context::default());
    funds::handle(ledger, &SystemClock, reports, FundsEntry::Payments, event)
        .await
        .map(|response| serde_json::to_value(response).unwrap())
        .map_err(Diagnostic::from)
}

#[tokio::test]
async fn the_sample_reports_land_in_the_bucket_as_json_lines_and_csv() {
    let (url, objects) = s3_stand_in(false).await;
    let (ledger, reports) = funds_on(&url).await;
    call(&ledger, &reports, TOPUP_EVENT).await.unwrap();

    let trial = call(&ledger, &reports, TRIAL_BALANCE_EVENT).await.unwrap();
    let statement = call(&ledger, &reports, STATEMENT_EVENT).await.unwrap();
    let written: Vec<String> = [&trial["trial_balance"]["written"], &statement["statement"]["written"]]
        .into_iter()
        .flat_map(|list| list.as_array().unwrap().iter().map(|uri| uri.as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(written.len(), 4, "{trial} {statement}");
    let objects = objects.lock().unwrap();
    for uri in &written {
        let path = uri.strip_prefix("s3://").unwrap_or_else(|| panic!("{uri} is an S3 location"));
        let (content_type, body) = objects.get(path).unwrap_or_else(|| panic!("{path} reached S3: {objects:?}"));
        if path.ends_with(".csv") {
            assert_eq!(content_type, "text/csv");
            assert!(body.lines().count() >= 2, "a header and rows: {body}");
        } else {
            assert_eq!(content_type, "application/x-ndjson");
            for line in body.lines() {
                serde_json::from_str::<Value>(line).unwrap_or_else(|error| panic!("{path}: {error}: {line}"));
            }
        }
    }
    assert_eq!(objects.len(), 4, "nothing else written: {:?}", objects.keys());
}

/// A report filed is never rewritten: the same closed day's statement made again answers the
/// same locations and leaves what was filed as it was (the bucket is Object Lock'd; the put
/// carries `If-None-Match: *`). An open day's statement is filed under its cut-off, a report of
/// its own.
#[tokio::test]
async fn a_closed_days_report_is_filed_once_and_never_rewritten() {
    let (url, objects) = s3_stand_in(false).await;
    let (ledger, reports) = funds_on(&url).await;
    call(&ledger, &reports, TOPUP_EVENT).await.unwrap();
    let first = call(&ledger, &reports, STATEMENT_EVENT).await.unwrap();
    // What is filed is marked, so a rewrite, even with the same text, would show.
    for (_, body) in objects.lock().unwrap().values_mut() {
        body.push_str("filed first");
    }
    let filed = objects.lock().unwrap().clone();
    let again = call(&ledger, &reports, STATEMENT_EVENT).await.unwrap();
    assert_eq!(again["statement"]["written"], first["statement"]["written"], "{again}");
    assert_eq!(*objects.lock().unwrap(), filed, "the first statement kept, byte for byte");

    let today = red_packets::domain::BusinessDay::default().day_of(red_packets::Clock::now_ms(&SystemClock));
    let open = STATEMENT_EVENT.replace("2026-11-23", &today);
    let provisional = call(&ledger, &reports, &open).await.unwrap();
    let written = provisional["statement"]["written"].as_array().unwrap();
    assert!(
        written.iter().all(|uri| uri.as_str().unwrap().contains(&format!("/{today}/alice.as-of-"))),
        "{provisional}"
    );
}

/// A put refused with 409 (another conditional put of the key under way) is made again, and
/// the report lands.
#[tokio::test]
async fn a_conflicting_put_is_made_again() {
    let (url, objects) = s3_stand_in_conflicting(false, 2).await;
    let (ledger, reports) = funds_on(&url).await;
    let trial = call(&ledger, &reports, TRIAL_BALANCE_EVENT).await.unwrap();
    assert_eq!(trial["trial_balance"]["written"].as_array().unwrap().len(), 2, "{trial}");
    assert_eq!(objects.lock().unwrap().len(), 2, "both landed after the conflicts");
}

#[tokio::test]
async fn an_s3_that_refuses_fails_the_report_as_unavailable() {
    let (url, _) = s3_stand_in(true).await;
    let (ledger, reports) = funds_on(&url).await;
    let failure = call(&ledger, &reports, TRIAL_BALANCE_EVENT).await.unwrap_err();
    assert!(failure.error_message.contains("s3"), "{failure:?}");
    assert_ne!(failure.error_type, "InvalidFundsRequest", "the store's fault, not the caller's: {failure:?}");
}
