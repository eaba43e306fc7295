//! The local stand-in for API Gateway's JWT authorizer: HS256 bearer tokens signed with
//! `LOCAL_JWT_SECRET`; `exp` is honoured when present.

use std::collections::HashSet;

use jsonwebtoken::{decode, encode, Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

/// The secret used when `LOCAL_JWT_SECRET` is unset.
pub const DEFAULT_SECRET: &str = "local-dev-secret";

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    sub: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    exp: Option<u64>,
}

/// Signs and verifies local tokens.
#[derive(Clone)]
pub struct LocalAuthorizer {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
}

impl LocalAuthorizer {
    /// An authorizer for `secret`.
    pub fn new(secret: &str) -> Self {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.required_spec_claims = HashSet::new();
        validation.validate_exp = true;
        validation.leeway = 0;
        LocalAuthorizer {
            encoding: EncodingKey::from_secret(secret.as_bytes()),
            decoding: DecodingKey::from_secret(secret.as_bytes()),
            validation,
        }
    }

    /// From `LOCAL_JWT_SECRET`, or the documented default.
    pub fn from_env() -> Self {
        Self::new(&std::env::var("LOCAL_JWT_SECRET").unwrap_or_else(|_| DEFAULT_SECRET.to_owned()))
    }

    /// A token for `user`, valid for `ttl_seconds`.
    pub fn token(&self, user: &str, ttl_seconds: u64) -> String {
        let exp = chrono::Utc::now().timestamp().max(0) as u64 + ttl_seconds;
        encode(&Header::new(Algorithm::HS256), &Claims { sub: user.to_owned(), exp: Some(exp) }, &self.encoding)
            .expect("HS256 signing cannot fail")
    }

    /// The `sub` of a valid `Authorization: Bearer <token>` header value, if it is one.
    pub fn verify(&self, authorization: Option<&str>) -> Option<String> {
        let token = authorization?.strip_prefix("Bearer ")?.trim();
        decode::<Claims>(token, &self.decoding, &self.validation).ok().map(|data| data.claims.sub)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_forgeries_fail() {
        let authorizer = LocalAuthorizer::new("secret");
        let token = authorizer.token("alice", 60);
        assert_eq!(authorizer.verify(Some(&format!("Bearer {token}"))).as_deref(), Some("alice"));
        assert_eq!(LocalAuthorizer::new("other").verify(Some(&format!("Bearer {token}"))), None);
        assert_eq!(authorizer.verify(Some(&token)), None, "the Bearer scheme is required");
        assert_eq!(authorizer.verify(None), None);
        let mut tampered = token.clone();
        tampered.insert(token.len() - 3, 'x');
        assert_eq!(authorizer.verify(Some(&format!("Bearer {tampered}"))), None);
    }

    #[test]
    fn expired_tokens_fail() {
        let authorizer = LocalAuthorizer::new("secret");
        let expired = encode(
            &Header::new(Algorithm::HS256),
            &Claims { sub: "alice".into(), exp: Some(1_000) },
            &EncodingKey::from_secret(b"secret"),
        )
        .unwrap();
        assert_eq!(authorizer.verify(Some(&format!("Bearer {expired}"))), None);
        let no_exp = encode(
            &Header::new(Algorithm::HS256),
            &Claims { sub: "bob".into(), exp: None },
            &EncodingKey::from_secret(b"secret"),
        )
        .unwrap();
        assert_eq!(authorizer.verify(Some(&format!("Bearer {no_exp}"))).as_deref(), Some("bob"));
    }
}
