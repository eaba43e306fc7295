//! A built single-page app served by `make run` under a path of its own (the operators'
//! console at `/console/`, the H5 app at `/app/`): its files, a page of the app (a path
//! with no file) as its `index.html`, each answer with the app's Content-Security-Policy.
//! In AWS the same files sit in a bucket behind CloudFront (docs/DEPLOY.md).

use std::path::{Component, Path, PathBuf};

use axum::body::Body;
use axum::extract::Path as UrlPath;
use axum::http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, LOCATION};
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;

/// Where a built app is, where it is served, and its policy.
pub struct Site {
    /// The path it is served under, with both slashes (`/console/`).
    pub path: &'static str,
    /// The variable naming its build's directory, when not the default.
    pub dir_variable: &'static str,
    /// Its build's directory in this checkout.
    pub default_dir: &'static str,
    /// Its Content-Security-Policy, one line.
    pub csp: &'static str,
    /// The answer when it is not built: how to build it.
    pub missing: &'static str,
}

impl Site {
    fn dir(&self) -> PathBuf {
        std::env::var_os(self.dir_variable).map(PathBuf::from).unwrap_or_else(|| PathBuf::from(self.default_dir))
    }

    /// The path without its last slash → the path.
    pub fn to_index(&self) -> Response {
        let mut response = Response::new(Body::empty());
        *response.status_mut() = StatusCode::MOVED_PERMANENTLY;
        response.headers_mut().insert(LOCATION, HeaderValue::from_static(self.path));
        response
    }

    /// A file of the build; a path without a file (a page of the single-page app) is its
    /// `index.html`. Hashed assets are immutable, everything else revalidated.
    pub async fn file(&self, path: Option<UrlPath<String>>) -> Response {
        let asked = path.map(|UrlPath(path)| path).unwrap_or_default();
        let relative = Path::new(&asked);
        if relative.components().any(|part| !matches!(part, Component::Normal(_))) {
            return answer(StatusCode::NOT_FOUND, "text/plain", self.csp, b"not found".to_vec());
        }
        let dir = self.dir();
        let candidate = dir.join(relative);
        let (path, immutable) = if candidate.is_file() {
            (candidate, asked.starts_with("assets/"))
        } else if relative.extension().is_none() {
            (dir.join("index.html"), false)
        } else {
            return answer(StatusCode::NOT_FOUND, "text/plain", self.csp, b"not found".to_vec());
        };
        match tokio::fs::read(&path).await {
            Ok(bytes) => {
                let mut response = answer(StatusCode::OK, content_type(&path), self.csp, bytes);
                let cache = if immutable { "public, max-age=31536000, immutable" } else { "no-cache" };
                response.headers_mut().insert(CACHE_CONTROL, HeaderValue::from_static(cache));
                response
            }
            Err(_) => answer(StatusCode::NOT_FOUND, "text/plain", self.csp, self.missing.as_bytes().to_vec()),
        }
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

/// An answer of a site: `body` as `content_type`, under `csp`, never sniffed, sending no referrer.
pub fn answer(status: StatusCode, content_type: &'static str, csp: &'static str, body: Vec<u8>) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_str(csp.trim()).expect("a one-line policy"));
    headers.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    headers.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    response
}
