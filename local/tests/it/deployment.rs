//! What can be checked of the deployment without AWS: template.yaml, openapi.yaml and the local
//! API serve the same routes; every function holds only the permissions it needs; the functions
//! reach the cache over TLS with the cluster client; every marker the code logs is counted,
//! alarmed and has a runbook; what must outlive the stack is retained.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_yaml::Value;

fn read(file: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().join(file);
    serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every route the template serves: the app's, as its functions' `HttpApi` events, and the
/// operators', as `AWS::ApiGatewayV2::Route` resources of their own API.
fn template_routes() -> BTreeSet<String> {
    let template = read("template.yaml");
    let mut routes = BTreeSet::new();
    for (_, resource) in template["Resources"].as_mapping().unwrap() {
        if resource["Type"].as_str() == Some("AWS::ApiGatewayV2::Route") {
            routes.insert(resource["Properties"]["RouteKey"].as_str().unwrap().to_owned());
        }
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

/// The operators' roles are declared once ([`Role`]): the template's Cognito groups,
/// openapi.yaml's `OperatorRole` and each `/ops/v1` operation's `x-roles` (what the console and
/// the generated clients read) are checked against it and each route's [`OpsAction::roles`].
///
/// [`Role`]: red_packets::domain::operators::Role
/// [`OpsAction::roles`]: red_packets::domain::operators::OpsAction::roles
#[test]
fn the_operators_roles_are_the_domains_in_the_template_and_the_contract() {
    use red_packets::domain::operators::Role;

    let roles: Vec<&str> = Role::ALL.iter().map(|role| role.as_str()).collect();
    let template = read("template.yaml");
    let mut groups: Vec<&str> = template["Resources"]
        .as_mapping()
        .unwrap()
        .values()
        .filter(|resource| resource["Type"].as_str() == Some("AWS::Cognito::UserPoolGroup"))
        .filter_map(|group| group["Properties"]["GroupName"].as_str())
        .collect();
    groups.sort();
    let mut expected = roles.clone();
    expected.sort();
    assert_eq!(groups, expected, "template.yaml's operators' groups");
    let openapi = read("openapi.yaml");
    let declared: Vec<&str> = openapi["components"]["schemas"]["OperatorRole"]["enum"]
        .as_sequence()
        .expect("openapi.yaml declares OperatorRole")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(declared, roles, "openapi.yaml's OperatorRole");
    for route in red_packets::routes::OPS_ROUTES {
        let operation = &openapi["paths"][route.path()][route.method().to_lowercase()];
        let listed: Vec<&str> = operation["x-roles"]
            .as_sequence()
            .unwrap_or_else(|| panic!("{}: no x-roles", route.key))
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let allowed: Vec<&str> = route.action.roles().iter().map(|role| role.as_str()).collect();
        assert_eq!(listed, allowed, "{}: openapi.yaml's x-roles and the server's", route.key);
    }
}

#[test]
fn template_openapi_and_local_api_list_the_same_routes() {
    let app = red_packets::routes::ROUTES.iter().map(|route| route.key.to_string());
    let operators = red_packets::routes::OPS_ROUTES.iter().map(|route| route.key.to_string());
    let local: BTreeSet<String> = app.chain(operators).collect();
    assert_eq!(local.len(), red_packets::routes::ROUTES.len() + red_packets::routes::OPS_ROUTES.len(), "no key twice");
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

/// The shape of every function's policies: inline statements of the function's own, each action
/// named whole (no wildcard: a `dynamodb:*` would pass the derived check below on any one call) and
/// each resource a resource of the stack. Which actions on which resources is not listed here: it
/// is derived from the calls the code makes (`scripts/permissions.py`, on the calls `make test`
/// records through `local::calls`, for every parameter set's transformed template).
#[test]
fn every_function_names_its_actions_whole_on_the_stacks_own_resources() {
    let template = read("template.yaml");
    let resources = template["Resources"].as_mapping().unwrap();
    let functions: Vec<&str> = resources
        .iter()
        .filter(|(_, resource)| resource["Type"].as_str() == Some("AWS::Serverless::Function"))
        .map(|(name, _)| name.as_str().unwrap())
        .collect();
    assert_eq!(functions.len(), 8, "{functions:?}");
    for function in functions {
        let policies = template["Resources"][function]["Properties"]["Policies"].as_sequence().unwrap();
        for policy in policies {
            let statements = policy["Statement"]
                .as_sequence()
                .unwrap_or_else(|| panic!("{function}: inline statements only, no managed policies"));
            for statement in statements {
                assert_eq!(statement["Effect"].as_str(), Some("Allow"));
                for action in statement["Action"].as_sequence().unwrap() {
                    let action = action.as_str().unwrap();
                    assert!(
                        !action.contains('*') && !action.contains('?'),
                        "{function}: no wildcard actions ({action})"
                    );
                }
                let resources: Vec<String> = match &statement["Resource"] {
                    Value::Sequence(list) => list.iter().map(|r| format!("{r:?}")).collect(),
                    other => vec![format!("{other:?}")],
                };
                for resource in resources {
                    let own = ["PacketsTable", "ReportsBucket", "PassphraseKey", "MembershipKeys"];
                    assert!(
                        own.iter().any(|name| resource.contains(name)),
                        "{function}: only the stack's table, its indexes, the reports' objects and its keys' secrets ({resource})"
                    );
                }
            }
        }
    }
}

/// Every variable the template sets is one the functions read, and every limit of DESIGN.md's
/// configuration is settable; the keys come from generated secrets, read at run time: only their
/// ARNs are in an environment (no `{{resolve:…}}`, which CloudFormation would resolve into the
/// function's configuration, readable by `lambda:GetFunctionConfiguration`), and only the
/// functions that use a key name its secret (send and grab the passphrase key's, grab the
/// membership keys').
#[test]
fn the_template_configures_every_limit_and_names_its_secrets_never_their_values() {
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
    let text = std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../template.yaml")).unwrap();
    assert!(!text.contains("{{resolve:"), "no dynamic reference resolves a secret into the template");
    let readers = [
        ("PASSPHRASE_KEY_SECRET", "PassphraseKey", &["SendFunction", "GrabFunction", "GrabManagedFunction"][..]),
        ("MEMBERSHIP_KEYS_SECRET", "MembershipKeys", &["GrabFunction", "GrabManagedFunction"][..]),
    ];
    for (variable, secret, functions) in readers {
        assert!(variables[variable].is_null(), "{variable} is not in every function's environment");
        for (function, resource) in template["Resources"].as_mapping().unwrap() {
            let function = function.as_str().unwrap();
            let value = format!("{:?}", resource["Properties"]["Environment"]["Variables"][variable]);
            if functions.contains(&function) {
                assert!(value.contains("Ref") && value.contains(secret), "{function}: {variable} = {value}");
            } else {
                assert_eq!(value, "Null", "{function} uses no {secret}: no {variable}");
            }
        }
        assert_eq!(
            template["Resources"][secret]["Type"].as_str(),
            Some("AWS::SecretsManager::Secret"),
            "a key of the deployment's own, generated"
        );
    }
}

/// Finance's reports outlive the stack: the bucket is retained, encrypted, private, TLS-only,
/// versioned, write-once (Object Lock), with lifecycle rules; the funds function is told its name.
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
    // Write-once: every object locked in compliance mode for the stack's retention, which
    // the lifecycle's expiry does not undercut.
    assert_eq!(properties["ObjectLockEnabled"].as_bool(), Some(true));
    let lock = &properties["ObjectLockConfiguration"];
    assert_eq!(lock["ObjectLockEnabled"].as_str(), Some("Enabled"));
    let retention = &lock["Rule"]["DefaultRetention"];
    assert_eq!(retention["Mode"].as_str(), Some("COMPLIANCE"));
    assert!(format!("{:?}", retention["Days"]).contains("ReportRetentionDays"), "{retention:?}");
    let longest = template["Parameters"]["ReportRetentionDays"]["MaxValue"].as_u64().unwrap();
    assert!(rules.iter().all(|rule| rule["ExpirationInDays"].as_u64() >= Some(longest)), "{rules:?}");
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

/// The source folders of the crates every Lambda is built from: the library and the four it
/// re-exports (the test kit is none of them).
const LIBRARY_SOURCES: [&str; 5] =
    ["shared/src", "shared/domain/src", "shared/core/src", "shared/redis/src", "shared/dynamo/src"];

fn rust_sources(dir: &std::path::Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_sources(&path, found);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            found.push(path);
        }
    }
}

/// Every ERROR line the functions and the library can log carries a marker; every marker
/// (`red_packets::telemetry::MARKERS`) is counted by a metric filter of template.yaml whose
/// metric an alarm watches, notifying the alarm topic; every schedule (a `ScheduleV2` event of
/// any function) has a did-not-run alarm, `<event>DidNotRunAlarm`, on a heartbeat its function's
/// code emits, missing data breaching; every alarm of the template, and every marker, has its
/// runbook in docs/OPERATIONS.md. A new ERROR line, marker, schedule or alarm without the rest
/// fails here.
#[test]
fn every_marker_is_counted_alarmed_and_has_a_runbook() {
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_owned();
    let mut sources = Vec::new();
    for dir in LIBRARY_SOURCES {
        rust_sources(&workspace.join(dir), &mut sources);
    }
    for function in ["send", "grab", "query", "settle", "funds", "risk"] {
        rust_sources(&workspace.join("functions").join(function).join("src"), &mut sources);
    }
    let mut error_lines = 0;
    for path in &sources {
        let text = std::fs::read_to_string(path).unwrap();
        for (at, _) in text.match_indices("tracing::error!(") {
            let call = &text[at..at + text[at..].find(");").expect("a closed macro call")];
            assert!(call.contains("marker = "), "an ERROR line without a marker in {}: {call}", path.display());
            error_lines += 1;
        }
    }
    assert!(error_lines >= 5, "the scan found the ERROR lines ({error_lines})");

    let template = read("template.yaml");
    let resources = template["Resources"].as_mapping().unwrap();
    let of_type = |kind: &'static str| {
        resources
            .iter()
            .filter(move |(_, resource)| resource["Type"].as_str() == Some(kind))
            .map(|(name, resource)| (name.as_str().unwrap().to_owned(), resource))
    };
    let alarms: Vec<(String, &Value)> = of_type("AWS::CloudWatch::Alarm").collect();
    for marker in red_packets::telemetry::MARKERS {
        let metrics: Vec<&str> = of_type("AWS::Logs::MetricFilter")
            .filter(|(_, filter)| filter["Properties"]["FilterPattern"].as_str().is_some_and(|p| p.contains(marker)))
            .map(|(_, filter)| filter["Properties"]["MetricTransformations"][0]["MetricName"].as_str().unwrap())
            .collect();
        assert!(!metrics.is_empty(), "{marker}: no metric filter counts it");
        for metric in metrics {
            // On the metric itself, or on it within metric math.
            let watched = alarms.iter().any(|(_, alarm)| {
                let properties = &alarm["Properties"];
                (properties["MetricName"].as_str() == Some(metric)
                    || format!("{:?}", properties["Metrics"]).contains(&format!("String(\"{metric}\")")))
                    && format!("{:?}", properties["AlarmActions"]).contains("AlarmTopic")
            });
            assert!(watched, "{marker}: no alarm on {metric} notifies the alarm topic");
        }
    }

    // Silence is an alarm: the heartbeat is an embedded-metric-format counter (its dimensions:
    // Function, the binary's name, and the counter's label), beaten when a run ends; the alarm
    // fires when it is missing. Its label is what the schedule sends: the shard range of
    // `{"shards": [from, to]}` as `from-to`, or else the payload's key.
    let mut schedules = 0;
    for (function, resource) in of_type("AWS::Serverless::Function") {
        let Some(events) = resource["Properties"]["Events"].as_mapping() else { continue };
        let binary = resource["Metadata"]["BuildProperties"]["Binary"]
            .as_str()
            .unwrap_or_else(|| panic!("{function}: no binary named in its Metadata"));
        let mut files = Vec::new();
        let main = binary_main(&workspace, binary);
        let crate_sources = main.ancestors().find(|dir| dir.ends_with("src")).expect("a crate's src");
        rust_sources(crate_sources, &mut files);
        let code: String = files.iter().map(|path| std::fs::read_to_string(path).unwrap()).collect();
        for (event, schedule) in events {
            if schedule["Type"].as_str() != Some("ScheduleV2") {
                continue;
            }
            schedules += 1;
            let name = format!("{}DidNotRunAlarm", event.as_str().unwrap());
            let alarm = &template["Resources"][name.as_str()];
            assert_eq!(alarm["Type"].as_str(), Some("AWS::CloudWatch::Alarm"), "{function}: a schedule without {name}");
            let properties = &alarm["Properties"];
            assert_eq!(properties["TreatMissingData"].as_str(), Some("breaching"), "{name}: a missing heartbeat pages");
            assert_eq!(properties["ComparisonOperator"].as_str(), Some("LessThanThreshold"), "{name}");
            assert!(format!("{:?}", properties["AlarmActions"]).contains("AlarmTopic"), "{name}: notifies on-call");
            let metric = properties["MetricName"].as_str().unwrap_or_else(|| panic!("{name}: on one heartbeat metric"));
            assert!(code.contains(&format!("\"{metric}\"")), "{name}: functions/{binary} emits no {metric}");
            let input: serde_json::Value =
                serde_json::from_str(schedule["Properties"]["Input"].as_str().unwrap_or("null")).unwrap();
            let beats = match input["shards"].as_array() {
                Some(range) => format!("{}-{}", range[0], range[1]),
                None => input.as_object().and_then(|payload| payload.keys().next().cloned()).unwrap_or_default(),
            };
            let dimensions = properties["Dimensions"].as_sequence().unwrap_or_else(|| panic!("{name}: no dimensions"));
            let function_dimension = dimensions
                .iter()
                .find(|dimension| dimension["Name"].as_str() == Some("Function"))
                .and_then(|dimension| dimension["Value"].as_str());
            assert_eq!(function_dimension, Some(binary), "{name}: the Function dimension is the binary's name");
            assert_eq!(dimensions.len(), 2, "{name}: Function and the heartbeat's label, as the code writes them");
            let (label, value) = dimensions
                .iter()
                .find(|dimension| dimension["Name"].as_str() != Some("Function"))
                .map(|dimension| (dimension["Name"].as_str().unwrap(), dimension["Value"].as_str().unwrap()))
                .unwrap();
            assert_eq!(value, beats, "{name}: {label} is not what schedule {event:?} ({input}) beats");
            assert!(code.contains(&format!("\"{label}\" =>")), "{name}: functions/{binary} has no label {label}");
            if input["shards"].is_null() {
                let beat = format!("\"{label}\" => \"{value}\"");
                assert!(code.contains(&beat), "{name}: functions/{binary} never beats {value}");
            }
        }
    }
    assert!(schedules >= 4, "the scan found the schedules ({schedules})");

    let operations = std::fs::read_to_string(workspace.join("docs/OPERATIONS.md")).unwrap();
    for (name, _) in &alarms {
        assert!(operations.contains(&format!("`{name}`")), "docs/OPERATIONS.md has no runbook for {name}");
    }
    for marker in red_packets::telemetry::MARKERS {
        assert!(operations.contains(marker), "docs/OPERATIONS.md does not explain {marker}");
    }
}

/// The source of the binary the template names `binary`: `functions/<binary>/src/main.rs`, or a
/// `src/bin/<binary>.rs` of a function crate (operator's is in funds).
fn binary_main(workspace: &std::path::Path, binary: &str) -> PathBuf {
    let own = workspace.join("functions").join(binary).join("src/main.rs");
    if own.exists() {
        return own;
    }
    std::fs::read_dir(workspace.join("functions"))
        .unwrap()
        .map(|entry| entry.unwrap().path().join("src/bin").join(format!("{binary}.rs")))
        .find(|path| path.exists())
        .unwrap_or_else(|| panic!("no source for the binary {binary}"))
}

/// Every entry point's failures page, derived from each shipped binary rather than a list: a
/// binary that answers HTTP (its `main` runs `lambda_http`) answers its failures itself (a 500
/// `INTERNAL_ERROR`, a 503 `DEPENDENCY_UNAVAILABLE`, logged by `error_response`), which Lambda
/// never counts as errors, so its function's log group has a metric filter counting both markers,
/// watched by an alarm that notifies the alarm topic and has a runbook; every binary's Lambda
/// errors (a crash, a timeout, an event it returns an error for) are watched too.
#[test]
fn every_entry_points_failures_page() {
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_owned();
    let template = read("template.yaml");
    let resources = template["Resources"].as_mapping().unwrap();
    let operations = std::fs::read_to_string(workspace.join("docs/OPERATIONS.md")).unwrap();
    let of_type = |kind: &'static str| {
        resources
            .iter()
            .filter(move |(_, resource)| resource["Type"].as_str() == Some(kind))
            .map(|(name, resource)| (name.as_str().unwrap().to_owned(), resource))
    };
    let paging = |metric_mentioned: &dyn Fn(&Value) -> bool| -> Vec<String> {
        of_type("AWS::CloudWatch::Alarm")
            .filter(|(_, alarm)| {
                metric_mentioned(&alarm["Properties"])
                    && format!("{:?}", alarm["Properties"]["AlarmActions"]).contains("AlarmTopic")
            })
            .map(|(name, _)| name)
            .collect()
    };
    let mut http_binaries = 0;
    for (function, resource) in of_type("AWS::Serverless::Function") {
        let binary = resource["Metadata"]["BuildProperties"]["Binary"].as_str().unwrap();
        let function_named = format!("String(\"{function}\")");
        // Lambda's own errors of this function.
        let lambda_errors = paging(&|properties| {
            let text = format!("{properties:?}");
            text.contains("String(\"Errors\")") && text.contains(&function_named)
        });
        assert!(!lambda_errors.is_empty(), "{function}: no alarm on its Lambda Errors notifies the alarm topic");

        let main = std::fs::read_to_string(binary_main(&workspace, binary)).unwrap();
        if !main.contains("lambda_http") {
            continue;
        }
        http_binaries += 1;
        let log_groups: Vec<String> = of_type("AWS::Logs::LogGroup")
            .filter(|(_, group)| {
                format!("{:?}", group["Properties"]["LogGroupName"]).contains(&format!("${{{function}}}"))
            })
            .map(|(name, _)| name)
            .collect();
        assert_eq!(log_groups.len(), 1, "{function}: one log group of its own ({log_groups:?})");
        let group_named = format!("String(\"{}\")", log_groups[0]);
        for marker in [red_packets::telemetry::INTERNAL_ERROR, red_packets::telemetry::DEPENDENCY_UNAVAILABLE] {
            let metrics: Vec<String> = of_type("AWS::Logs::MetricFilter")
                .filter(|(_, filter)| {
                    format!("{:?}", filter["Properties"]["LogGroupName"]).contains(&group_named)
                        && filter["Properties"]["FilterPattern"].as_str().is_some_and(|p| p.contains(marker))
                })
                .map(|(_, filter)| {
                    filter["Properties"]["MetricTransformations"][0]["MetricName"].as_str().unwrap().to_owned()
                })
                .collect();
            assert!(
                !metrics.is_empty(),
                "{function} answers HTTP: no metric filter on {} counts {marker}",
                log_groups[0]
            );
            let alarms = paging(&|properties| {
                metrics.iter().any(|metric| {
                    properties["MetricName"].as_str() == Some(metric.as_str())
                        || format!("{:?}", properties["Metrics"]).contains(&format!("String(\"{metric}\")"))
                })
            });
            assert!(!alarms.is_empty(), "{function}: no alarm on {metrics:?} ({marker}) notifies the alarm topic");
            for alarm in alarms.iter().chain(&lambda_errors) {
                assert!(operations.contains(&format!("`{alarm}`")), "docs/OPERATIONS.md has no runbook for {alarm}");
            }
        }
    }
    assert!(
        http_binaries >= 5,
        "the scan found the HTTP entry points ({http_binaries}: send, grab twice, query, operator)"
    );
}

/// What the stack must not lose on a delete or a replacement: the table (the ledger), the user
/// pool (wallets are keyed by its `sub`), the passphrase key (every phrase packet's digest) and
/// the reports; and every function's logs kept for a bounded time.
#[test]
fn what_must_outlive_the_stack_is_retained_and_logs_expire() {
    let template = read("template.yaml");
    let resources = &template["Resources"];
    for name in ["PacketsTable", "UserPool", "PassphraseKey", "ReportsBucket"] {
        assert_eq!(resources[name]["DeletionPolicy"].as_str(), Some("Retain"), "{name}");
        assert_eq!(resources[name]["UpdateReplacePolicy"].as_str(), Some("Retain"), "{name}");
    }
    assert_eq!(resources["UserPool"]["Properties"]["DeletionProtection"].as_str(), Some("ACTIVE"));
    for function in
        ["SendFunction", "GrabFunction", "GrabManagedFunction", "QueryFunction", "SettleFunction", "FundsFunction"]
    {
        let kept = resources.as_mapping().unwrap().values().any(|resource| {
            resource["Type"].as_str() == Some("AWS::Logs::LogGroup")
                && format!("{:?}", resource["Properties"]["LogGroupName"]).contains(function)
                && !resource["Properties"]["RetentionInDays"].is_null()
        });
        assert!(kept, "{function} has no log group with a retention");
    }
}

/// `GrabCompute` picks one of two grab functions (SAM allows no VpcConfig beside a capacity
/// provider, so they are two): the same binary, environment and permissions, each under its
/// condition, so the two never drift apart. scripts/transform.py checks the route follows.
#[test]
fn the_two_grab_functions_are_one_function_on_two_computes() {
    let template = read("template.yaml");
    let (standard, managed) = (&template["Resources"]["GrabFunction"], &template["Resources"]["GrabManagedFunction"]);
    assert_eq!(standard["Condition"].as_str(), Some("GrabOnLambda"));
    assert_eq!(managed["Condition"].as_str(), Some("GrabOnManagedInstances"));
    assert_eq!(standard["Metadata"], managed["Metadata"], "one binary");
    for property in ["Environment", "Policies", "Events", "AutoPublishAlias"] {
        assert_eq!(standard["Properties"][property], managed["Properties"][property], "{property}");
    }
    assert!(managed["Properties"]["VpcConfig"].is_null(), "the capacity provider holds the VPC");
    assert_eq!(
        template["Resources"]["GrabCapacityProvider"]["Properties"]["VpcConfig"], standard["Properties"]["VpcConfig"],
        "the same subnets and security group"
    );
}

/// The API's CORS configuration in template.yaml is what the local gateway answers with
/// (`local::cors`), and it is off unless origins are given.
#[test]
fn the_template_and_the_local_gateway_answer_preflights_alike() {
    let template = read("template.yaml");
    let Value::Tagged(cors) = &template["Resources"]["HttpApi"]["Properties"]["CorsConfiguration"] else {
        panic!("CorsConfiguration is an !If on HasCors")
    };
    assert_eq!(cors.tag, "If");
    assert_eq!(cors.value[0].as_str(), Some("HasCors"), "off unless CorsAllowedOrigins names origins");
    let configured = &cors.value[1];
    let listed = |name: &str| -> Vec<String> {
        configured[name].as_sequence().unwrap().iter().map(|value| value.as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(listed("AllowHeaders"), local::cors::ALLOW_HEADERS);
    assert_eq!(listed("AllowMethods"), local::cors::ALLOW_METHODS);
    assert_eq!(listed("ExposeHeaders"), local::cors::EXPOSE_HEADERS);
    assert_eq!(configured["MaxAge"].as_u64(), Some(u64::from(local::cors::MAX_AGE_SECONDS)));
    assert!(format!("{:?}", configured["AllowOrigins"]).contains("CorsAllowedOrigins"));
}

/// `sam local invoke` sets only the variables a template declares (SAM CLI's
/// `EnvironmentVariables.resolve`), so every variable of `local-env.json` is declared by the
/// template, or it would be dropped without a word. The DynamoDB endpoint is declared for that
/// alone: empty in AWS, which the functions read as unset (DynamoDB's regional endpoint).
#[test]
fn every_variable_of_local_env_json_is_one_the_template_declares() {
    let template = read("template.yaml");
    let globals = template["Globals"]["Function"]["Environment"]["Variables"].as_mapping().unwrap();
    let mut declared: BTreeSet<String> = globals.keys().filter_map(|key| key.as_str().map(str::to_owned)).collect();
    for (_, resource) in template["Resources"].as_mapping().unwrap() {
        if let Some(variables) = resource["Properties"]["Environment"]["Variables"].as_mapping() {
            declared.extend(variables.keys().filter_map(|key| key.as_str().map(str::to_owned)));
        }
    }
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_owned();
    let local_env: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(workspace.join("local-env.json")).unwrap()).unwrap();
    let set: Vec<&String> =
        local_env.as_object().unwrap().values().flat_map(|scope| scope.as_object().unwrap().keys()).collect();
    assert!(set.len() >= 5, "{set:?}");
    for name in set {
        assert!(declared.contains(name), "local-env.json sets {name}, which no function of template.yaml declares");
    }

    assert_eq!(globals[&Value::from("AWS_ENDPOINT_URL_DYNAMODB")].as_str(), Some(""), "empty in AWS");
    let connection = red_packets::adapters::dynamo::client::Connection::from_lookup(|name| {
        (name == "AWS_ENDPOINT_URL_DYNAMODB").then(String::new)
    });
    assert_eq!(connection.endpoint_url, None, "an empty endpoint is DynamoDB's regional one");
}

/// The `Currency` parameter allows exactly the currencies of the `Currencies` mapping, and each
/// row's exponent is the one the functions use (the `iso_currency` crate's, through
/// `Currency::parse`): the events' `currency` and the answers' always agree.
#[test]
fn the_templates_currencies_are_the_functions_own() {
    let template = read("template.yaml");
    let allowed: BTreeSet<String> = template["Parameters"]["Currency"]["AllowedValues"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|code| code.as_str().unwrap().to_owned())
        .collect();
    let mapping = template["Mappings"]["Currencies"].as_mapping().unwrap();
    let mapped: BTreeSet<String> = mapping.keys().map(|code| code.as_str().unwrap().to_owned()).collect();
    assert_eq!(allowed, mapped, "every allowed currency has its exponent");
    for (code, row) in mapping {
        let code = code.as_str().unwrap();
        let currency = red_packets::domain::Currency::parse(code).unwrap_or_else(|| panic!("{code}: not ISO 4217"));
        assert_eq!(row["Exponent"].as_u64(), Some(u64::from(currency.exponent())), "{code}");
    }
    let default = template["Parameters"]["Currency"]["Default"].as_str().unwrap();
    assert_eq!(default, red_packets::domain::Currency::default().code(), "the template's default is the code's");
}

/// The `!Ref` target of a template value, if it is one.
fn reference(value: &Value) -> Option<&str> {
    match value {
        Value::Tagged(tagged) if tagged.tag == "!Ref" => tagged.value.as_str(),
        _ => None,
    }
}

/// A template scalar as the environment would hold it (`"500"`, `500`, `true` alike).
fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        Value::Bool(flag) => Some(flag.to_string()),
        _ => None,
    }
}

/// Every setting is declared once, in `shared/core/src/settings.rs`, and every copy follows it in
/// full: where the template sets it (the `Globals` or the functions the setting names), with
/// the value, parameter, secret or expression it declares; each parameter's `Default`, bounds
/// and allowed values; the template sets nothing that is not a setting, nor any setting it says
/// it leaves alone; `local-env.json` and `make run`'s script set only settings, at their
/// defaults; every variable the product's code reads by name is one; and the docs' tables are
/// the generated one.
#[test]
fn every_setting_is_declared_once_and_the_template_docs_and_local_env_follow_it() {
    use red_packets::settings::{named, Accepts, Deployed, SETTINGS};

    let template = read("template.yaml");
    let parameters = &template["Parameters"];
    let globals = &template["Globals"]["Function"]["Environment"]["Variables"];
    let mut set_in_template: Vec<(String, String)> = Vec::new();
    for (key, variables) in std::iter::once((Value::from("Globals"), globals.clone())).chain(
        template["Resources"]
            .as_mapping()
            .unwrap()
            .iter()
            .map(|(id, resource)| (id.clone(), resource["Properties"]["Environment"]["Variables"].clone())),
    ) {
        for (name, _) in variables.as_mapping().into_iter().flatten() {
            set_in_template.push((key.as_str().unwrap().to_owned(), name.as_str().unwrap().to_owned()));
        }
    }
    for (place, name) in &set_in_template {
        let setting = named(name).unwrap_or_else(|| panic!("{place} sets {name}, which is no setting"));
        let expected: Vec<&str> = if setting.on.is_empty() { vec!["Globals"] } else { setting.on.to_vec() };
        assert!(expected.contains(&place.as_str()), "{name} is set on {place}, the table says {expected:?}");
    }

    for setting in SETTINGS {
        let name = setting.name;
        let places: Vec<&Value> = if setting.on.is_empty() {
            vec![&globals[name]]
        } else {
            setting
                .on
                .iter()
                .map(|function| &template["Resources"][*function]["Properties"]["Environment"]["Variables"][name])
                .collect()
        };
        let parameter_default = |parameter: &str| scalar(&parameters[parameter]["Default"]);
        match setting.deployed {
            Deployed::Parameter(parameter) | Deployed::ParameterDefaulting(parameter, _) => {
                for place in &places {
                    assert_eq!(reference(place), Some(parameter), "{name} comes from the parameter {parameter}");
                }
                let default = match setting.deployed {
                    Deployed::ParameterDefaulting(_, default) => Some(default.to_owned()),
                    _ => setting.default_text(),
                };
                assert_eq!(parameter_default(parameter), default, "{parameter}'s Default is {name}'s");
                let declared = &parameters[parameter];
                let (min, max, allowed) = (&declared["MinValue"], &declared["MaxValue"], &declared["AllowedValues"]);
                let allowed: Option<BTreeSet<String>> =
                    allowed.as_sequence().map(|values| values.iter().filter_map(scalar).collect());
                match setting.accepts {
                    Accepts::AtLeast(least) => {
                        assert_eq!(
                            (min.as_u64(), max.as_u64(), &allowed),
                            (Some(least), None, &None),
                            "{parameter}'s bounds"
                        )
                    }
                    Accepts::Within(least, most) => {
                        let listed: BTreeSet<String> = (least..=most).map(|n| n.to_string()).collect();
                        let bounded = (min.as_u64(), max.as_u64()) == (Some(least), Some(most));
                        assert!(bounded || allowed == Some(listed), "{parameter} allows {least} to {most}");
                    }
                    Accepts::OneOf(words) => {
                        let words: BTreeSet<String> = words.iter().map(|word| word.to_string()).collect();
                        assert_eq!(allowed, Some(words), "{parameter}'s AllowedValues are {name}'s words");
                    }
                    Accepts::Text | Accepts::Flag | Accepts::Described(_) => {
                        assert!(min.is_null() && max.is_null(), "{parameter}: no numeric bounds on a text")
                    }
                }
            }
            Deployed::Value(value) => {
                for place in &places {
                    assert_eq!(scalar(place).as_deref(), Some(value), "the template sets {name} to {value}");
                }
            }
            Deployed::Computed => {
                for place in &places {
                    assert!(matches!(place, Value::Tagged(_)), "{name} is an expression of the stack's: {place:?}");
                }
            }
            Deployed::Secret(secret) => {
                for place in &places {
                    let text = format!("{place:?}");
                    assert!(
                        text.contains("Ref") && text.contains(secret) && !text.contains("resolve:"),
                        "{name}: {text}"
                    );
                }
            }
            Deployed::Locally(parameter) => {
                assert!(set_in_template.iter().all(|(_, set)| set != name), "the template leaves {name} alone");
                if let Some(parameter) = parameter {
                    let default = setting.default_text().unwrap_or_default();
                    assert_eq!(parameter_default(parameter), Some(default), "{name} stands for {parameter}");
                }
            }
            Deployed::NotSet | Deployed::ByLambda => {
                assert!(set_in_template.iter().all(|(_, set)| set != name), "the template leaves {name} alone");
            }
        }
    }

    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_owned();
    let local_env: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(workspace.join("local-env.json")).unwrap()).unwrap();
    for (name, _) in local_env.as_object().unwrap().values().flat_map(|scope| scope.as_object().unwrap()) {
        assert!(named(name).is_some(), "local-env.json sets {name}, which is no setting");
    }
    let run_local = std::fs::read_to_string(workspace.join("scripts/run-local.sh")).unwrap();
    for setting in [red_packets::settings::LOCAL_REDIS_PORT, red_packets::settings::LOCAL_DYNAMODB_PORT] {
        let read = format!("${{{}:-{}}}", setting.name, setting.default_text().unwrap());
        assert!(run_local.contains(&read), "scripts/run-local.sh reads {read}");
    }

    let mut sources = Vec::new();
    for dir in LIBRARY_SOURCES.into_iter().chain(["functions", "local/src"]) {
        rust_sources(&workspace.join(dir), &mut sources);
    }
    let mut read_by_name = BTreeSet::new();
    for source in sources {
        let text = std::fs::read_to_string(&source).unwrap();
        for call in ["var(\"", "var_os(\"", "get(\""] {
            for (at, _) in text.match_indices(call) {
                let rest = &text[at + call.len()..];
                let name = &rest[..rest.find('"').unwrap()];
                if name.len() > 3
                    && name.contains('_')
                    && name.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
                {
                    read_by_name.insert(name.to_owned());
                }
            }
        }
    }
    assert!(read_by_name.len() >= 15, "{read_by_name:?}");
    for name in &read_by_name {
        assert!(named(name).is_some(), "the code reads {name}, which is no setting of shared/core/src/settings.rs");
    }

    for document in local::settings_doc::DOCUMENTS {
        let text = std::fs::read_to_string(workspace.join(document)).unwrap();
        let generated =
            local::settings_doc::rewritten(&text).unwrap_or_else(|| panic!("{document}: no settings markers"));
        assert!(generated == text, "{document}'s settings table is not the generated one: run `make settings`");
    }
}

/// Every route of the app's API is declared once (`shared/src/routes.rs`) and the copies follow
/// it: the template's function serving each `HttpApi` event is the route's (both grab functions
/// for the grab route), its `RouteSettings` are the throttled routes' with their parameters, the
/// route's sample event carries its key (by which `make verify-build` runs it on the binary of
/// the function serving the route).
#[test]
fn every_route_is_declared_once_and_the_template_events_and_verify_build_follow_it() {
    use red_packets::routes::{Function, Throttle, LIMITS_BURST_LIMIT, LIMITS_RATE_LIMIT, ROUTES};

    let template = read("template.yaml");
    let mut served: BTreeSet<(String, String)> = BTreeSet::new();
    let mut public: BTreeSet<String> = BTreeSet::new();
    for (id, resource) in template["Resources"].as_mapping().unwrap() {
        for (_, event) in resource["Properties"]["Events"].as_mapping().into_iter().flatten() {
            if event["Type"].as_str() == Some("HttpApi") {
                let properties = &event["Properties"];
                let key =
                    format!("{} {}", properties["Method"].as_str().unwrap(), properties["Path"].as_str().unwrap());
                if properties["Auth"]["Authorizer"].as_str() == Some("NONE") {
                    public.insert(key.clone());
                }
                served.insert((key, id.as_str().unwrap().to_owned()));
            }
        }
    }
    let settings = template["Resources"]["HttpApi"]["Properties"]["RouteSettings"].as_mapping().unwrap();
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_owned();
    for route in ROUTES {
        let functions: &[&str] = match route.function {
            Function::Send => &["SendFunction"],
            Function::Grab => &["GrabFunction", "GrabManagedFunction"],
            Function::Query => &["QueryFunction"],
        };
        for function in functions {
            assert!(served.contains(&(route.key.to_owned(), function.to_string())), "{function} serves {}", route.key);
        }
        let no_authorizer = public.contains(route.key);
        assert_eq!(no_authorizer, route.public, "{}: Authorizer NONE in the template exactly when public", route.key);
        let parameters = match route.throttle {
            Throttle::Grab => Some(("GrabRateLimit", "GrabBurstLimit")),
            Throttle::Withdraw => Some(("WithdrawRateLimit", "WithdrawBurstLimit")),
            Throttle::Limits | Throttle::Default => None,
        };
        let setting = settings.get(route.key);
        assert_eq!(
            setting.is_some(),
            route.throttle != Throttle::Default,
            "{}: RouteSettings of its own or the default",
            route.key
        );
        if let (Some(setting), Some((rate, burst))) = (setting, parameters) {
            assert_eq!(reference(&setting["ThrottlingRateLimit"]), Some(rate), "{}", route.key);
            assert_eq!(reference(&setting["ThrottlingBurstLimit"]), Some(burst), "{}", route.key);
        }
        if let (Some(setting), Throttle::Limits) = (setting, route.throttle) {
            assert_eq!(setting["ThrottlingRateLimit"].as_u64(), Some(u64::from(LIMITS_RATE_LIMIT)), "{}", route.key);
            assert_eq!(setting["ThrottlingBurstLimit"].as_u64(), Some(u64::from(LIMITS_BURST_LIMIT)), "{}", route.key);
        }
        let event: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(workspace.join("events").join(route.event)).unwrap())
                .unwrap();
        assert_eq!(event["routeKey"].as_str(), Some(route.key), "events/{} is the route's", route.event);
    }
    assert_eq!(
        settings.len(),
        ROUTES.iter().filter(|route| route.throttle != Throttle::Default).count(),
        "no other RouteSettings"
    );
}
