//! The local stand-ins for API Gateway's two JWT authorizers: HS256 bearer tokens signed with
//! `LOCAL_JWT_SECRET` for the app's users, and with `LOCAL_OPS_JWT_SECRET` for operators (a
//! token of one is refused by the other, as two issuers' are); `exp` is honoured when present.
//! Claims reach the function as API Gateway hands them over: each a string, a list one as
//! `[a b]`.

use std::collections::{BTreeMap, HashSet};

use jsonwebtoken::{decode, encode, Algorithm, DecodingKey, EncodingKey, Header, Validation};
use red_packets::settings;
use serde::{Deserialize, Serialize};

/// The claim local operators' tokens carry their roles in: Cognito's, the template's default
/// `OperatorsRolesClaim`.
pub const OPS_ROLES_CLAIM: &str = "cognito:groups";

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    sub: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    exp: Option<u64>,
    #[serde(flatten)]
    other: serde_json::Map<String, serde_json::Value>,
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

    /// From `LOCAL_JWT_SECRET`, or its default.
    pub fn from_env() -> Self {
        Self::new(&settings::LOCAL_JWT_SECRET.from_env().ok().flatten().unwrap_or_default())
    }

    /// The operators' authorizer: from `LOCAL_OPS_JWT_SECRET`, or its default.
    pub fn operators_from_env() -> Self {
        Self::new(&settings::LOCAL_OPS_JWT_SECRET.from_env().ok().flatten().unwrap_or_default())
    }

    /// A token for `user`, valid for `ttl_seconds`.
    pub fn token(&self, user: &str, ttl_seconds: u64) -> String {
        self.token_with(user, serde_json::Map::new(), ttl_seconds)
    }

    /// An operator's token for `operator` with `roles` in [`OPS_ROLES_CLAIM`], valid for
    /// `ttl_seconds` (sign it with the operators' authorizer).
    pub fn operator_token(&self, operator: &str, roles: &[&str], ttl_seconds: u64) -> String {
        let mut claims = serde_json::Map::new();
        claims.insert(OPS_ROLES_CLAIM.into(), serde_json::json!(roles));
        self.token_with(operator, claims, ttl_seconds)
    }

    fn token_with(&self, sub: &str, other: serde_json::Map<String, serde_json::Value>, ttl_seconds: u64) -> String {
        let exp = chrono::Utc::now().timestamp().max(0) as u64 + ttl_seconds;
        let claims = Claims { sub: sub.to_owned(), exp: Some(exp), other };
        encode(&Header::new(Algorithm::HS256), &claims, &self.encoding).expect("HS256 signing cannot fail")
    }

    /// The `sub` of a valid `Authorization: Bearer <token>` header value, if it is one.
    pub fn verify(&self, authorization: Option<&str>) -> Option<String> {
        self.verify_claims(authorization).and_then(|mut claims| claims.remove("sub"))
    }

    /// Every claim of a valid token as API Gateway's JWT authorizer hands them to the function:
    /// strings, a list as `[a b]`.
    pub fn verify_claims(&self, authorization: Option<&str>) -> Option<BTreeMap<String, String>> {
        let token = authorization?.strip_prefix("Bearer ")?.trim();
        let claims = decode::<Claims>(token, &self.decoding, &self.validation).ok()?.claims;
        let text = |value: &serde_json::Value| match value {
            serde_json::Value::String(text) => text.clone(),
            serde_json::Value::Array(items) => {
                let items: Vec<String> =
                    items.iter().map(|item| item.as_str().map_or_else(|| item.to_string(), str::to_owned)).collect();
                format!("[{}]", items.join(" "))
            }
            other => other.to_string(),
        };
        let mut all: BTreeMap<String, String> =
            claims.other.iter().map(|(name, value)| (name.clone(), text(value))).collect();
        all.insert("sub".into(), claims.sub);
        if let Some(exp) = claims.exp {
            all.insert("exp".into(), exp.to_string());
        }
        Some(all)
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
            &Claims { sub: "alice".into(), exp: Some(1_000), other: Default::default() },
            &EncodingKey::from_secret(b"secret"),
        )
        .unwrap();
        assert_eq!(authorizer.verify(Some(&format!("Bearer {expired}"))), None);
        let no_exp = encode(
            &Header::new(Algorithm::HS256),
            &Claims { sub: "bob".into(), exp: None, other: Default::default() },
            &EncodingKey::from_secret(b"secret"),
        )
        .unwrap();
        assert_eq!(authorizer.verify(Some(&format!("Bearer {no_exp}"))).as_deref(), Some("bob"));
    }

    #[test]
    fn an_operators_roles_reach_the_function_as_api_gateway_flattens_a_list() {
        let operators = LocalAuthorizer::operators_from_env();
        let token = operators.operator_token("anna", &["support", "finance"], 60);
        let claims = operators.verify_claims(Some(&format!("Bearer {token}"))).unwrap();
        assert_eq!((claims["sub"].as_str(), claims[OPS_ROLES_CLAIM].as_str()), ("anna", "[support finance]"));
        let users = LocalAuthorizer::from_env();
        assert_eq!(users.verify(Some(&format!("Bearer {token}"))), None, "another issuer's token");
    }
}
