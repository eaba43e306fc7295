//! The operators' console on `make run`: its built pages (`console/dist`, `npm run build` in
//! `console/`) under `/console/`, each answer with the console's Content-Security-Policy
//! (`console/csp.txt`, the one place it is written), and `POST /local/ops-token`, the local
//! sign-in: an operator's token for a named operator and roles, signed by the operators'
//! authorizer's stand-in. Neither exists in AWS, where the operators' provider signs people in.

use std::path::{Component, Path, PathBuf};

use axum::body::Body;
use axum::extract::Path as UrlPath;
use axum::http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, LOCATION};
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use red_packets::domain::operators::{Operator, Role};
use serde::Deserialize;
use serde_json::json;

use crate::auth::LocalAuthorizer;

/// The console's Content-Security-Policy: scripts, styles' files, images and calls from its own
/// origin only (styles inline too, which its components set), never framed.
pub const CSP: &str = include_str!("../../console/csp.txt");

/// How long a local operator's token lasts: a working day.
const TOKEN_SECONDS: u64 = 8 * 3600;

/// Where the built console is: `CONSOLE_DIR`, else `console/dist` of this checkout.
fn console_dir() -> PathBuf {
    std::env::var_os("CONSOLE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../console/dist"))
}

/// `/console` → `/console/`.
pub async fn to_index() -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::MOVED_PERMANENTLY;
    response.headers_mut().insert(LOCATION, HeaderValue::from_static("/console/"));
    response
}

/// A file of the built console; a path without a file (a page of the single-page app) is its
/// `index.html`.
pub async fn file(path: Option<UrlPath<String>>) -> Response {
    let asked = path.map(|UrlPath(path)| path).unwrap_or_default();
    let relative = Path::new(&asked);
    if relative.components().any(|part| !matches!(part, Component::Normal(_))) {
        return answer(StatusCode::NOT_FOUND, "text/plain", b"not found".to_vec());
    }
    let dir = console_dir();
    let candidate = dir.join(relative);
    let (path, immutable) = if candidate.is_file() {
        (candidate, asked.starts_with("assets/"))
    } else if relative.extension().is_none() {
        (dir.join("index.html"), false)
    } else {
        return answer(StatusCode::NOT_FOUND, "text/plain", b"not found".to_vec());
    };
    match tokio::fs::read(&path).await {
        Ok(bytes) => {
            let mut response = answer(StatusCode::OK, content_type(&path), bytes);
            let cache = if immutable { "public, max-age=31536000, immutable" } else { "no-cache" };
            response.headers_mut().insert(CACHE_CONTROL, HeaderValue::from_static(cache));
            response
        }
        Err(_) => answer(
            StatusCode::NOT_FOUND,
            "text/plain",
            b"the console is not built: npm ci && npm run build in console/".to_vec(),
        ),
    }
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|extension| extension.to_str()).unwrap_or_default() {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "woff" => "font/woff",
        "map" => "application/json",
        _ => "application/octet-stream",
    }
}

fn answer(status: StatusCode, content_type: &'static str, body: Vec<u8>) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP.trim()));
    headers.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    headers.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    response
}

/// The local sign-in's request: who, with which roles.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignIn {
    operator: String,
    roles: Vec<Role>,
}

/// `POST /local/ops-token`: `{"token"}` for the operator and roles asked, signed by the operators'
/// authorizer's stand-in; 400 naming `operator` when the name is not one an operator may have.
pub fn ops_token(authorizer: &LocalAuthorizer, sign_in: SignIn) -> Response {
    let roles: Vec<&str> = sign_in.roles.iter().map(|role| role.as_str()).collect();
    if Operator::from_claims(&sign_in.operator, None).is_none() {
        let error = json!({ "error": { "code": "invalid_request", "field": "operator",
                                       "message": "operator must be 1..=256 of [A-Za-z0-9_.:@/+=,-]" } });
        return answer(StatusCode::BAD_REQUEST, "application/json", error.to_string().into_bytes());
    }
    let token = authorizer.operator_token(&sign_in.operator, &roles, TOKEN_SECONDS);
    answer(StatusCode::OK, "application/json", json!({ "token": token }).to_string().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_allows_only_the_consoles_own_origin_and_is_one_line() {
        let csp = CSP.trim();
        assert!(!csp.contains('\n'), "{csp}");
        for directive in ["default-src 'self'", "script-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"] {
            assert!(csp.contains(directive), "{directive} in {csp}");
        }
        assert!(!csp.contains("unsafe-eval") && !csp.contains("script-src 'self' 'unsafe-inline'"), "{csp}");
    }

    #[tokio::test]
    async fn a_path_out_of_the_console_is_not_served() {
        let response = file(Some(UrlPath("../Cargo.toml".into()))).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
        assert!(response.headers().contains_key(CONTENT_SECURITY_POLICY));
    }
}
