//! template.yaml, openapi.yaml and the local API serve the same routes.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_yaml::Value;

fn read(file: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().join(file);
    serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn template_routes() -> BTreeSet<String> {
    let template = read("template.yaml");
    let mut routes = BTreeSet::new();
    for (_, resource) in template["Resources"].as_mapping().unwrap() {
        let Some(events) = resource["Properties"]["Events"].as_mapping() else { continue };
        for (_, event) in events {
            if event["Type"].as_str() == Some("HttpApi") {
                let properties = &event["Properties"];
                routes.insert(format!("{} {}", properties["Method"].as_str().unwrap(), properties["Path"].as_str().unwrap()));
            }
        }
    }
    routes
}

fn openapi_routes() -> BTreeSet<String> {
    let openapi = read("openapi.yaml");
    let mut routes = BTreeSet::new();
    for (path, operations) in openapi["paths"].as_mapping().unwrap() {
        for (method, _) in operations.as_mapping().unwrap() {
            routes.insert(format!("{} {}", method.as_str().unwrap().to_uppercase(), path.as_str().unwrap()));
        }
    }
    routes
}

#[test]
fn template_openapi_and_local_api_list_the_same_routes() {
    let local: BTreeSet<String> = local::gateway::ROUTES.iter().map(|route| route.to_string()).collect();
    assert_eq!(local.len(), 4);
    assert_eq!(template_routes(), local, "template.yaml and the local API");
    assert_eq!(openapi_routes(), local, "openapi.yaml and the local API");
}

#[test]
fn every_error_code_of_the_api_is_in_openapi() {
    let openapi = read("openapi.yaml");
    let codes: BTreeSet<&str> = openapi["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]
        ["enum"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|code| code.as_str().unwrap())
        .collect();
    use red_packets::ApiError;
    for error in [
        ApiError::invalid("x", "y"),
        ApiError::Unauthorized("x"),
        ApiError::NotFound,
        ApiError::SoldOut,
        ApiError::Expired,
        ApiError::PayloadTooLarge { limit: 1 },
        ApiError::IdempotencyKeyReused,
        ApiError::redis_unavailable("x"),
        ApiError::Internal("x".into()),
    ] {
        assert!(codes.contains(error.code()), "{} is documented", error.code());
    }
}
