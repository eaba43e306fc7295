//! What can be checked of the deployment without AWS: template.yaml, openapi.yaml and the local
//! API serve the same routes; every function holds only the permissions it needs; the functions
//! reach the cache over TLS with the cluster client.

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
                routes.insert(format!(
                    "{} {}",
                    properties["Method"].as_str().unwrap(),
                    properties["Path"].as_str().unwrap()
                ));
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
    assert_eq!(local.len(), 6);
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
        ApiError::Forbidden,
        ApiError::NotEligible,
        ApiError::WrongPassphrase,
        ApiError::NotFound,
        ApiError::SoldOut,
        ApiError::NotOpen,
        ApiError::Expired,
        ApiError::Cancelled,
        ApiError::TooManyAttempts,
        ApiError::LimitExceeded { field: "max_sends_per_day" },
        ApiError::PayloadTooLarge { limit: 1 },
        ApiError::IdempotencyKeyReused,
        ApiError::redis_unavailable("x"),
        ApiError::Internal("x".into()),
    ] {
        assert!(codes.contains(error.code()), "{} is documented", error.code());
    }
}

/// The DynamoDB actions each function needs, and nothing more.
const NEEDED_ACTIONS: &[(&str, &[&str])] = &[
    ("SendFunction", &["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"]),
    ("GrabFunction", &["dynamodb:Query"]),
    ("QueryFunction", &["dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:Query"]),
    (
        "FundsFunction",
        &[
            "dynamodb:GetItem",
            "dynamodb:PutItem",
            "dynamodb:Query",
            "dynamodb:Scan",
            "dynamodb:UpdateItem",
            "s3:PutObject",
        ],
    ),
    ("SettleFunction", &["dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"]),
];

#[test]
fn every_function_holds_only_the_permissions_it_needs() {
    let template = read("template.yaml");
    let resources = template["Resources"].as_mapping().unwrap();
    let functions: BTreeSet<&str> = resources
        .iter()
        .filter(|(_, resource)| resource["Type"].as_str() == Some("AWS::Serverless::Function"))
        .map(|(name, _)| name.as_str().unwrap())
        .collect();
    assert_eq!(functions, NEEDED_ACTIONS.iter().map(|(name, _)| *name).collect(), "every function is checked");
    for (function, needed) in NEEDED_ACTIONS {
        let policies = template["Resources"][*function]["Properties"]["Policies"].as_sequence().unwrap();
        let mut granted = BTreeSet::new();
        for policy in policies {
            let statements = policy["Statement"]
                .as_sequence()
                .unwrap_or_else(|| panic!("{function}: inline statements only, no managed policies"));
            for statement in statements {
                assert_eq!(statement["Effect"].as_str(), Some("Allow"));
                for action in statement["Action"].as_sequence().unwrap() {
                    let action = action.as_str().unwrap();
                    assert!(!action.contains('*'), "{function}: no wildcard actions ({action})");
                    granted.insert(action.to_owned());
                }
                let resources: Vec<String> = match &statement["Resource"] {
                    Value::Sequence(list) => list.iter().map(|r| format!("{r:?}")).collect(),
                    other => vec![format!("{other:?}")],
                };
                for resource in resources {
                    let reports = *function == "FundsFunction" && resource.contains("ReportsBucket.Arn}/*");
                    assert!(
                        resource.contains("PacketsTable") || reports,
                        "{function}: only the table and its indexes, and funds the reports' objects ({resource})"
                    );
                }
            }
        }
        let needed: BTreeSet<String> = needed.iter().map(|action| action.to_string()).collect();
        assert_eq!(granted, needed, "{function} holds exactly what it needs");
    }
}

/// Every variable the template sets is one the functions read, and every limit of DESIGN.md's
/// configuration is settable; the passphrase key comes from a generated secret, never a default.
#[test]
fn the_template_configures_every_limit_and_a_secret_passphrase_key() {
    let template = read("template.yaml");
    let variables = &template["Globals"]["Function"]["Environment"]["Variables"];
    let parameters = template["Parameters"].as_mapping().unwrap();
    for (name, parameter) in [
        ("MAX_RECIPIENTS", "MaxRecipients"),
        ("MAX_SENDS_PER_DAY", "MaxSendsPerDay"),
        ("MAX_SENT_CENTS_PER_DAY", "MaxSentCentsPerDay"),
    ] {
        let value = format!("{:?}", variables[name]);
        assert!(value.contains("Ref") && value.contains(parameter), "{name} comes from {parameter}: {value}");
        assert!(parameters.contains_key(parameter), "{parameter} is a parameter");
    }
    let key = format!("{:?}", variables["PASSPHRASE_KEY"]);
    assert!(key.contains("resolve:secretsmanager") && key.contains("PassphraseKey"), "{key}");
    assert_eq!(
        template["Resources"]["PassphraseKey"]["Type"].as_str(),
        Some("AWS::SecretsManager::Secret"),
        "a key of the deployment's own, generated"
    );
}

/// Finance's reports outlive the stack: the bucket is retained, encrypted, private, TLS-only,
/// versioned, with lifecycle rules; the funds function is told its name.
#[test]
fn the_reports_bucket_is_encrypted_private_retained_and_expires_by_rule() {
    let template = read("template.yaml");
    let bucket = &template["Resources"]["ReportsBucket"];
    assert_eq!(bucket["DeletionPolicy"].as_str(), Some("Retain"));
    let properties = &bucket["Properties"];
    let encryption = format!("{:?}", properties["BucketEncryption"]);
    assert!(encryption.contains("aws:kms"), "{encryption}");
    let block = &properties["PublicAccessBlockConfiguration"];
    for setting in ["BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"] {
        assert_eq!(block[setting].as_bool(), Some(true), "{setting}");
    }
    let rules = properties["LifecycleConfiguration"]["Rules"].as_sequence().unwrap();
    assert!(rules.iter().all(|rule| rule["ExpirationInDays"].as_u64().is_some()), "{rules:?}");
    let policy = format!("{:?}", template["Resources"]["ReportsBucketPolicy"]);
    assert!(policy.contains("aws:SecureTransport"), "TLS only");
    let variables = &template["Resources"]["FundsFunction"]["Properties"]["Environment"]["Variables"];
    assert!(format!("{:?}", variables["REPORTS_BUCKET"]).contains("ReportsBucket"));
    let reports = PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().join("functions/funds/src/reports.rs");
    assert!(std::fs::read_to_string(reports).unwrap().contains("\"REPORTS_BUCKET\""), "the funds function reads it");
}

#[test]
fn functions_reach_the_cache_over_tls_with_the_cluster_client() {
    let template = read("template.yaml");
    let variables = &template["Globals"]["Function"]["Environment"]["Variables"];
    assert_eq!(variables["REDIS_CLUSTER"].as_str(), Some("true"));
    let url = format!("{:?}", variables["REDIS_URL"]);
    assert!(url.matches("rediss://").count() == 2, "both cache modes use TLS: {url}");
}
