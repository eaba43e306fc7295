//! API Gateway HTTP API (payload v2) events as JSON: the local API builds them from real HTTP
//! requests, and tests edit the samples in `events/`, so both reach the handlers exactly as
//! Lambda would deliver them.

use lambda_http::Request;
use serde_json::{json, Map, Value};

/// The caller's verified identity, as the JWT authorizer leaves it; `None` removes it.
pub fn set_caller(event: &mut Value, sub: Option<&str>) {
    let context = object(event, "requestContext");
    match sub {
        Some(sub) => {
            context.insert("authorizer".into(), json!({ "jwt": { "claims": { "sub": sub }, "scopes": null } }));
        }
        None => {
            context.remove("authorizer");
        }
    }
}

/// Sets the `{packet_id}` path parameter, and the raw path to match.
pub fn set_packet_id(event: &mut Value, packet_id: &str) {
    object(event, "pathParameters").insert("packet_id".into(), Value::String(packet_id.to_owned()));
    let raw_path = event["rawPath"].as_str().unwrap_or("").to_owned();
    let mut segments: Vec<&str> = raw_path.split('/').collect();
    if segments.len() > 2 {
        segments[2] = packet_id;
    }
    event["rawPath"] = Value::String(segments.join("/"));
}

/// The operator the operators' authorizer verified: subject `sub`, with `roles` in claim
/// `roles_claim`, flattened as API Gateway hands a list claim over (`[support finance]`).
pub fn set_operator(event: &mut Value, sub: &str, roles_claim: &str, roles: &[&str]) {
    let claims = json!({ "sub": sub, roles_claim: format!("[{}]", roles.join(" ")) });
    object(event, "requestContext").insert("authorizer".into(), json!({ "jwt": { "claims": claims, "scopes": null } }));
}

/// Sets the route the request came by: its key (`POST /ops/v1/users/{user}/hold`), the path
/// parameters it names (`[("user", "mallory")]`), and the method and raw path to match.
pub fn set_route(event: &mut Value, key: &str, parameters: &[(&str, &str)]) {
    let (method, template) = key.split_once(' ').unwrap_or(("GET", key));
    let mut path = template.to_owned();
    for (name, value) in parameters {
        path = path.replace(&format!("{{{name}}}"), value);
    }
    event["routeKey"] = Value::String(key.to_owned());
    event["rawPath"] = Value::String(path.clone());
    let named: Map<String, Value> =
        parameters.iter().map(|(name, value)| ((*name).to_owned(), Value::String((*value).to_owned()))).collect();
    if named.is_empty() {
        event.as_object_mut().map(|fields| fields.remove("pathParameters"));
    } else {
        event["pathParameters"] = Value::Object(named);
    }
    let context = object(event, "requestContext");
    context.insert("routeKey".into(), Value::String(key.to_owned()));
    context.insert(
        "http".into(),
        json!({ "method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "198.51.100.4" }),
    );
}

/// Replaces the body (text, not base64).
pub fn set_body(event: &mut Value, body: &str) {
    event["body"] = Value::String(body.to_owned());
    event["isBase64Encoded"] = Value::Bool(false);
}

/// Sets a header; a `None` value removes it. Names are lower-cased, as API Gateway does.
pub fn set_header(event: &mut Value, name: &str, value: Option<&str>) {
    let headers = object(event, "headers");
    match value {
        Some(value) => headers.insert(name.to_ascii_lowercase(), Value::String(value.to_owned())),
        None => headers.remove(&name.to_ascii_lowercase()),
    };
}

/// The request Lambda would hand the handler for `event`.
pub fn to_request(event: &Value) -> Result<Request, serde_json::Error> {
    lambda_http::request::from_str(&event.to_string())
}

fn object<'a>(event: &'a mut Value, key: &str) -> &'a mut Map<String, Value> {
    if !event[key].is_object() {
        event[key] = Value::Object(Map::new());
    }
    event[key].as_object_mut().expect("just made an object")
}
