//! The H5 red packet app on `make run`: its built pages (`app/dist`, `npm run build` in `app/`)
//! under `/app/`, and two stand-ins for what the host app does in production:
//! `POST /local/app-token` signs a user in (a token from the JWT authorizer's stand-in, as
//! `make token` prints) and `POST /local/membership-ticket` is the host's chat server, which
//! signs a membership ticket for a chat and a user with the stack's first membership key.
//! Neither exists in AWS, where the host app signs users in and its chat server knows who is in
//! which chat (docs/CLIENTS.md, "Chat packets").

use axum::extract::Path as UrlPath;
use axum::http::StatusCode;
use axum::response::Response;
use red_packets::domain::membership::MembershipKeys;
use red_packets::domain::{ChatId, UserId};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::auth::LocalAuthorizer;
use crate::site::{answer, Site};

/// The app's Content-Security-Policy (`app/csp.txt`, the one place it is written).
pub const CSP: &str = include_str!("../../app/csp.txt");

/// The built app: `APP_DIR`, else `app/dist` of this checkout, under `/app/`.
pub const SITE: Site = Site {
    path: "/app/",
    dir_variable: "APP_DIR",
    default_dir: concat!(env!("CARGO_MANIFEST_DIR"), "/../app/dist"),
    csp: CSP,
    missing: "the app is not built: npm ci in sdk/ and app/, then npm run build in app/",
};

/// How long a local user's token lasts: a day.
const TOKEN_SECONDS: u64 = 24 * 3600;

/// How long a local membership ticket lasts unless asked: ten minutes, as a chat server would.
const TICKET_SECONDS: u64 = 600;

/// `/app` → `/app/`.
pub async fn to_index() -> Response {
    SITE.to_index()
}

/// A file of the built app (`SITE`).
pub async fn file(path: Option<UrlPath<String>>) -> Response {
    SITE.file(path).await
}

/// The local sign-in's request.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignIn {
    user: String,
}

/// `POST /local/app-token`: `{"token"}` for the user asked; 400 naming `user` when the name is
/// not one a token's `sub` may carry.
pub fn app_token(authorizer: &LocalAuthorizer, sign_in: SignIn) -> Response {
    match UserId::from_claim(&sign_in.user) {
        Some(user) => json_answer(StatusCode::OK, json!({ "token": authorizer.token(user.as_str(), TOKEN_SECONDS) })),
        None => invalid("user", "user must be a token subject: 1 to 256 characters, no control characters"),
    }
}

/// The chat server stand-in's request: the chat, the member, and for how long (seconds).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TicketRequest {
    chat_id: String,
    user: String,
    seconds: Option<u64>,
}

/// `POST /local/membership-ticket`: `{"ticket", "expires_at"}` for the user in the chat; 400
/// naming the field that is not a chat id, a user or a lifetime of 1 to 86,400 seconds.
pub fn membership_ticket(keys: &MembershipKeys, now_s: u64, request: TicketRequest) -> Response {
    let Some(chat) = ChatId::parse(&request.chat_id) else {
        return invalid("chat_id", "chat_id must be 1 to 128 of A-Z a-z 0-9 _ . : @ -");
    };
    let Some(user) = UserId::from_claim(&request.user) else {
        return invalid("user", "user must be a token subject: 1 to 256 characters, no control characters");
    };
    let seconds = request.seconds.unwrap_or(TICKET_SECONDS);
    if !(1..=red_packets::domain::membership::MAX_TICKET_SECONDS).contains(&seconds) {
        return invalid("seconds", "seconds must be 1 to 86400");
    }
    let expires_at = now_s + seconds;
    json_answer(StatusCode::OK, json!({ "ticket": keys.sign(&chat, &user, expires_at), "expires_at": expires_at }))
}

fn invalid(field: &str, message: &str) -> Response {
    json_answer(
        StatusCode::BAD_REQUEST,
        json!({ "error": { "code": "invalid_request", "field": field, "message": message } }),
    )
}

fn json_answer(status: StatusCode, body: Value) -> Response {
    answer(status, "application/json", CSP, body.to_string().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::to_bytes;

    async fn body(response: Response) -> Value {
        serde_json::from_slice(&to_bytes(response.into_body(), 1 << 16).await.unwrap()).unwrap()
    }

    #[tokio::test]
    async fn the_chat_servers_stand_in_signs_tickets_the_grab_function_accepts() {
        let keys = MembershipKeys::parse(red_packets::config::LOCAL_MEMBERSHIP_KEY).unwrap();
        let now_s = 1_800_000_000;
        let request = TicketRequest { chat_id: "family".into(), user: "bob".into(), seconds: None };
        let answer = body(membership_ticket(&keys, now_s, request)).await;
        let ticket = answer["ticket"].as_str().unwrap();
        let bob = UserId::from_claim("bob").unwrap();
        assert_eq!(keys.verify(ticket, &bob, now_s as i64 * 1000).unwrap().as_str(), "family");
        assert_eq!(answer["expires_at"], now_s + TICKET_SECONDS);
        let bad = TicketRequest { chat_id: "a chat".into(), user: "bob".into(), seconds: None };
        assert_eq!(body(membership_ticket(&keys, now_s, bad)).await["error"]["field"], "chat_id");
        let long = TicketRequest { chat_id: "family".into(), user: "bob".into(), seconds: Some(86_401) };
        assert_eq!(body(membership_ticket(&keys, now_s, long)).await["error"]["field"], "seconds");
    }

    #[test]
    fn the_policy_allows_only_the_apps_own_origin_and_is_one_line() {
        let csp = CSP.trim();
        assert!(!csp.contains('\n'), "{csp}");
        for directive in ["default-src 'self'", "script-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"] {
            assert!(csp.contains(directive), "{directive} in {csp}");
        }
    }
}
