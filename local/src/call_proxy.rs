//! The calls of the binaries that ship, recorded on the wire: a recording proxy in front of
//! DynamoDB Local (or any AWS endpoint of the tests), one listener per binary.
//!
//! The SDK interceptors of [`crate::calls`] see only the clients the tests build. A binary run
//! as Lambda runs it (under AWS's emulator, or in `sam local invoke`'s container) builds its own
//! clients in its `main` (grab's ledger on first use, funds' S3 client from the environment),
//! and those calls are the ones AWS will authorize. So each binary is pointed at a listener of
//! its own (`AWS_ENDPOINT_URL_DYNAMODB`), which forwards every request unchanged and records it
//! under that binary: the operation (DynamoDB's `X-Amz-Target`, S3's `x-id` or method), what IAM
//! authorizes it on (its body or path, read as [`crate::calls`] reads them), and the access key
//! id of the request's SigV4 credential scope, which [`crate::calls::record_from_binary`] writes
//! beside it. The line says `"via": "binary"`; `scripts/permissions.py` requires such calls of
//! every function the template ships, and holds each to that function's role.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::body::{to_bytes, Body};
use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, CONTENT_LENGTH, HOST, TRANSFER_ENCODING};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::Response;

/// The largest request or answer forwarded (DynamoDB's own limits are far below it).
const BODY_LIMIT: usize = 64 << 20;

/// A listener forwarding one binary's calls to one upstream, and recording them.
#[derive(Debug, Clone)]
pub struct CallProxy {
    url: String,
}

struct Upstream {
    binary: &'static str,
    service: &'static str,
    base: String,
    client: reqwest::Client,
}

impl CallProxy {
    /// A proxy for `binary`'s calls of `service` (`dynamodb`, `s3`) to `upstream`
    /// (`http://host:port`), on a free port of `bind`. It runs on a thread of its own, so it
    /// serves every test of the process, whichever runtime started it.
    pub fn start(
        binary: &'static str,
        service: &'static str,
        upstream: &str,
        bind: IpAddr,
    ) -> Result<CallProxy, String> {
        let listener = std::net::TcpListener::bind(SocketAddr::new(bind, 0)).map_err(|error| error.to_string())?;
        listener.set_nonblocking(true).map_err(|error| error.to_string())?;
        let address = listener.local_addr().map_err(|error| error.to_string())?;
        let upstream = Arc::new(Upstream {
            binary,
            service,
            base: upstream.trim_end_matches('/').to_owned(),
            client: reqwest::Client::new(),
        });
        std::thread::Builder::new()
            .name(format!("call-proxy-{binary}-{service}"))
            .spawn(move || {
                let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else { return };
                    let app = axum::Router::new().fallback(forward).with_state(upstream);
                    let _ = axum::serve(listener, app).await;
                });
            })
            .map_err(|error| error.to_string())?;
        Ok(CallProxy { url: format!("http://{address}") })
    }

    /// Where the binary's client is pointed (`http://<bind>:<port>`).
    pub fn url(&self) -> &str {
        &self.url
    }
}

async fn forward(State(upstream): State<Arc<Upstream>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(bytes) = to_bytes(body, BODY_LIMIT).await else {
        return answer(StatusCode::PAYLOAD_TOO_LARGE, HeaderMap::new(), Vec::new());
    };
    let path_and_query = parts.uri.path_and_query().map_or("/", |path| path.as_str());
    let operation = operation(upstream.service, &parts.method, &parts.headers, path_and_query);
    let resources = match upstream.service {
        "dynamodb" => crate::calls::dynamodb_resources(&bytes),
        _ => crate::calls::s3_resources(&format!("http://proxy{path_and_query}")),
    };
    let key_id = parts.headers.get(AUTHORIZATION).and_then(|value| value.to_str().ok()).and_then(credential_key_id);
    crate::calls::record_from_binary(upstream.binary, upstream.service, &operation, resources, key_id);

    let mut outgoing = upstream.client.request(parts.method.clone(), format!("{}{path_and_query}", upstream.base));
    for (name, value) in &parts.headers {
        if name != HOST && name != CONTENT_LENGTH {
            outgoing = outgoing.header(name, value);
        }
    }
    match outgoing.body(bytes.to_vec()).send().await {
        Ok(reply) => {
            let status = reply.status();
            let mut headers = reply.headers().clone();
            headers.remove(TRANSFER_ENCODING);
            headers.remove(CONTENT_LENGTH);
            let body = reply.bytes().await.map(|bytes| bytes.to_vec()).unwrap_or_default();
            answer(status, headers, body)
        }
        Err(error) => answer(StatusCode::BAD_GATEWAY, HeaderMap::new(), error.to_string().into_bytes()),
    }
}

fn answer(status: StatusCode, headers: HeaderMap, body: Vec<u8>) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// The API operation of a request: DynamoDB's from `X-Amz-Target` (`DynamoDB_20120810.PutItem`),
/// S3's from the `x-id` the SDK adds (`?x-id=PutObject`), else from the method.
fn operation(service: &str, method: &Method, headers: &HeaderMap, path_and_query: &str) -> String {
    if service == "dynamodb" {
        let target = headers.get("x-amz-target").and_then(|value| value.to_str().ok()).unwrap_or_default();
        return target.rsplit_once('.').map_or(target, |(_, operation)| operation).to_owned();
    }
    let query = path_and_query.split_once('?').map_or("", |(_, query)| query);
    if let Some(id) = query.split('&').find_map(|pair| pair.strip_prefix("x-id=")) {
        return id.to_owned();
    }
    match *method {
        Method::PUT => "PutObject",
        Method::HEAD => "HeadObject",
        Method::DELETE => "DeleteObject",
        _ => "GetObject",
    }
    .to_owned()
}

/// The access key id of a SigV4 `Authorization` header (`AWS4-HMAC-SHA256
/// Credential=<key id>/<date>/<region>/<service>/aws4_request, …`).
fn credential_key_id(authorization: &str) -> Option<String> {
    let credential = authorization.split("Credential=").nth(1)?;
    credential.split('/').next().filter(|key| !key.is_empty()).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_id_is_read_from_the_credential_scope() {
        let header = "AWS4-HMAC-SHA256 Credential=grab/20261128/us-east-1/dynamodb/aws4_request, \
                      SignedHeaders=host;x-amz-date, Signature=abc";
        assert_eq!(credential_key_id(header).as_deref(), Some("grab"));
        assert_eq!(credential_key_id("Bearer x"), None);
    }

    #[test]
    fn the_operation_is_dynamodbs_target_or_s3s_id() {
        let mut headers = HeaderMap::new();
        headers.insert("x-amz-target", "DynamoDB_20120810.TransactWriteItems".parse().unwrap());
        assert_eq!(operation("dynamodb", &Method::POST, &headers, "/"), "TransactWriteItems");
        let none = HeaderMap::new();
        assert_eq!(operation("s3", &Method::PUT, &none, "/reports/a.csv?x-id=PutObject"), "PutObject");
        assert_eq!(operation("s3", &Method::PUT, &none, "/reports/a.csv"), "PutObject");
        assert_eq!(operation("s3", &Method::GET, &none, "/reports/a.csv"), "GetObject");
    }
}
