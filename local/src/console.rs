//! The operators' console on `make run`: its built pages (`console/dist`, `npm run build` in
//! `console/`) under `/console/`, each answer with the console's Content-Security-Policy
//! (`console/csp.txt`, the one place it is written), and `POST /local/ops-token`, the local
//! sign-in: an operator's token for a named operator and roles, signed by the operators'
//! authorizer's stand-in. Neither exists in AWS, where the operators' provider signs people in.

use axum::extract::Path as UrlPath;
use axum::http::StatusCode;
use axum::response::Response;
use red_packets::domain::operators::{Operator, Role};
use serde::Deserialize;
use serde_json::json;

use crate::auth::LocalAuthorizer;
use crate::site::{answer, Site};

/// The console's Content-Security-Policy: scripts, styles' files, images and calls from its own
/// origin only (styles inline too, which its components set), never framed.
pub const CSP: &str = include_str!("../../console/csp.txt");

/// How long a local operator's token lasts: a working day.
const TOKEN_SECONDS: u64 = 8 * 3600;

/// The built console: `CONSOLE_DIR`, else `console/dist` of this checkout, under `/console/`.
pub const SITE: Site = Site {
    path: "/console/",
    dir_variable: "CONSOLE_DIR",
    default_dir: concat!(env!("CARGO_MANIFEST_DIR"), "/../console/dist"),
    csp: CSP,
    missing: "the console is not built: npm ci && npm run build in console/",
};

/// `/console` → `/console/`.
pub async fn to_index() -> Response {
    SITE.to_index()
}

/// A file of the built console (`SITE`).
pub async fn file(path: Option<UrlPath<String>>) -> Response {
    SITE.file(path).await
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
        return answer(StatusCode::BAD_REQUEST, "application/json", CSP, error.to_string().into_bytes());
    }
    let token = authorizer.operator_token(&sign_in.operator, &roles, TOKEN_SECONDS);
    answer(StatusCode::OK, "application/json", CSP, json!({ "token": token }).to_string().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::header::CONTENT_SECURITY_POLICY;

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
