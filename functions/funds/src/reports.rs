//! Where the funds function writes reports: the reports bucket (`REPORTS_BUCKET`, created by
//! `template.yaml`: encrypted, versioned, public access blocked, with lifecycle rules, every
//! object under S3 Object Lock in compliance mode for `ReportRetentionDays`; a report is put
//! with `If-None-Match: *`, so one filed is never rewritten), or a directory where no bucket is
//! configured (`REPORTS_DIR`, default `/tmp/reports`: the only
//! writable place in Lambda; `local` writes to `reports/`).

use std::time::Duration;

use aws_sdk_s3::config::http::HttpResponse;
use aws_sdk_s3::config::timeout::TimeoutConfig;
use aws_sdk_s3::config::{BehaviorVersion, Region, SharedCredentialsProvider};
use aws_sdk_s3::error::SdkError;
use aws_sdk_s3::primitives::ByteStream;
use red_packets::adapters::dynamo::client::{https_client, Connection};
use red_packets::adapters::ReportDirectory;
use red_packets::config::ConfigError;
use red_packets::ports::{ReportSink, StoreError};

/// The reports bucket or a directory.
pub enum Reports {
    /// `s3://<bucket>/<key>`.
    Bucket {
        /// The S3 client.
        client: aws_sdk_s3::Client,
        /// The bucket.
        bucket: String,
    },
    /// A directory.
    Directory(ReportDirectory),
}

impl Reports {
    /// From the environment: `REPORTS_BUCKET` through the execution role's credentials, else
    /// `REPORTS_DIR`.
    pub fn from_env() -> Result<Self, ConfigError> {
        let Some(bucket) = std::env::var("REPORTS_BUCKET").ok().filter(|bucket| !bucket.is_empty()) else {
            let dir = std::env::var("REPORTS_DIR").unwrap_or_else(|_| "/tmp/reports".into());
            return Ok(Reports::Directory(ReportDirectory::new(dir)));
        };
        let endpoint = std::env::var("AWS_ENDPOINT_URL_S3").ok().filter(|url| !url.is_empty());
        Ok(Reports::Bucket { client: s3_client(&Connection::from_env(), endpoint.as_deref())?, bucket })
    }
}

/// An S3 client on the execution role's credentials, reaching `endpoint` path-style when one is
/// given (a local stand-in), with timeouts: an S3 that does not answer fails the report within a
/// minute instead of holding the function to its own timeout.
pub fn s3_client(connection: &Connection, endpoint: Option<&str>) -> Result<aws_sdk_s3::Client, ConfigError> {
    let credentials = connection
        .credentials
        .clone()
        .ok_or_else(|| ConfigError::new("AWS_ACCESS_KEY_ID", "", "not set: Lambda sets it"))?;
    let mut config = aws_sdk_s3::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(connection.region.clone().map(Region::new))
        .credentials_provider(SharedCredentialsProvider::new(credentials))
        .http_client(https_client(connection)?)
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(2))
                .operation_attempt_timeout(Duration::from_secs(20))
                .operation_timeout(Duration::from_secs(60))
                .build(),
        );
    if let Some(url) = endpoint {
        config = config.endpoint_url(url).force_path_style(true);
    }
    Ok(aws_sdk_s3::Client::from_conf(config.build()))
}

/// The HTTP status S3 refused a call with; 0 when it did not answer one.
fn status<E>(error: &SdkError<E, HttpResponse>) -> u16 {
    match error {
        SdkError::ServiceError(refused) => refused.raw().status().as_u16(),
        _ => 0,
    }
}

/// How many times a put refused with 409 (ConditionalRequestConflict: another conditional put
/// of the same key under way) is made.
const CONFLICT_TRIES: usize = 3;

impl ReportSink for Reports {
    async fn put(&self, key: &str, body: String) -> Result<String, StoreError> {
        let (client, bucket) = match self {
            Reports::Directory(directory) => return directory.put(key, body).await,
            Reports::Bucket { client, bucket } => (client, bucket),
        };
        let content_type = if key.ends_with(".csv") { "text/csv" } else { "application/x-ndjson" };
        let location = format!("s3://{bucket}/{key}");
        let body = body.into_bytes();
        for _ in 0..CONFLICT_TRIES {
            let put = client
                .put_object()
                .bucket(bucket)
                .key(key)
                .content_type(content_type)
                .if_none_match("*")
                .body(ByteStream::from(body.clone()))
                .send()
                .await;
            match put {
                Ok(_) => return Ok(location),
                // An object is there already (If-None-Match: *): kept as it is.
                Err(refused) if status(&refused) == 412 => {
                    tracing::info!(%location, "a report is filed there already: kept, not rewritten");
                    return Ok(location);
                }
                // Another conditional put of the key is under way: asked again, it is 412 or done.
                Err(conflict) if status(&conflict) == 409 => tokio::time::sleep(Duration::from_millis(200)).await,
                Err(error) => {
                    return Err(StoreError::Unavailable {
                        store: "s3",
                        detail: aws_sdk_s3::error::DisplayErrorContext(error).to_string(),
                    })
                }
            }
        }
        Err(StoreError::Unavailable { store: "s3", detail: format!("{location}: other puts of it kept conflicting") })
    }
}
