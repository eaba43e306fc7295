//! What the compiler keeps out of each layer, as `Cargo.lock` resolves the dependencies however
//! deep: no crate that does I/O under the domain, no store client under the ports and use cases
//! (`red-packets-core`), and under each adapter no client of the other store. And the one door a dependency list leaves open: the domain's own code
//! names none of std's I/O modules.

use std::collections::{BTreeSet, HashMap};

/// Crates that reach a socket, a runtime or a cloud: none may be a dependency of the domain.
const IO_CRATES: [&str; 11] = [
    "tokio",
    "mio",
    "socket2",
    "redis",
    "hyper",
    "reqwest",
    "h2",
    "rustls",
    "lambda_runtime",
    "lambda_http",
    "aws-config",
];

/// Each package of the lock file, `name version`, with the packages it depends on.
fn lock_graph(lock: &str) -> HashMap<String, Vec<String>> {
    let mut graph = HashMap::new();
    for block in lock.split("[[package]]").skip(1) {
        let field = |key: &str| {
            block.lines().find_map(|line| line.strip_prefix(key)).map(|value| value.trim().trim_matches('"').to_owned())
        };
        let (Some(name), Some(version)) = (field("name = "), field("version = ")) else { continue };
        let dependencies = block
            .split_once("dependencies = [")
            .map(|(_, list)| list.split(']').next().unwrap_or(""))
            .unwrap_or("")
            .lines()
            .map(|line| line.trim().trim_end_matches(',').trim_matches('"'))
            .filter(|entry| !entry.is_empty())
            .map(|entry| entry.split(" (").next().unwrap_or(entry).to_owned())
            .collect();
        graph.insert(format!("{name} {version}"), dependencies);
    }
    graph
}

/// The names of every package `root` depends on, however deep.
fn dependencies_of(graph: &HashMap<String, Vec<String>>, root: &str) -> BTreeSet<String> {
    // A dependency written without its version names the only package of that name.
    let resolve = |entry: &str| -> Vec<String> {
        if entry.contains(' ') {
            return vec![entry.to_owned()];
        }
        graph.keys().filter(|key| key.split(' ').next() == Some(entry)).cloned().collect()
    };
    let mut reached = BTreeSet::new();
    let mut todo = resolve(root);
    assert_eq!(todo.len(), 1, "the lock file has {root}");
    while let Some(package) = todo.pop() {
        if reached.insert(package.clone()) {
            for entry in graph.get(&package).into_iter().flatten() {
                todo.extend(resolve(entry));
            }
        }
    }
    reached.iter().filter_map(|package| package.split(' ').next()).map(str::to_owned).collect()
}

/// A crate of the AWS SDK (`aws-sdk-*`, `aws-smithy-*`, `aws-types`...); not `aws-lc-*`, the
/// crypto library rustls is built on.
fn is_aws_sdk(name: &str) -> bool {
    name.starts_with("aws-") && !name.starts_with("aws-lc-")
}

/// Clients of the stores and of Lambda: none may be a dependency of the ports and use cases.
fn store_clients(names: &BTreeSet<String>) -> Vec<&str> {
    names
        .iter()
        .map(String::as_str)
        .filter(|name| ["redis", "lambda_runtime", "lambda_http"].contains(name) || is_aws_sdk(name))
        .collect()
}

fn io_crates(names: &BTreeSet<String>) -> Vec<&str> {
    names.iter().map(String::as_str).filter(|name| IO_CRATES.contains(name) || is_aws_sdk(name)).collect()
}

/// Each layer's dependencies, however deep, as the workspace's lock file resolves them.
fn workspace_layers() -> [BTreeSet<String>; 5] {
    let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.lock")).unwrap();
    let graph = lock_graph(&lock);
    ["red-packets-domain", "red-packets-core", "red-packets", "red-packets-redis", "red-packets-dynamo"]
        .map(|root| dependencies_of(&graph, root))
}

#[test]
fn the_domain_depends_on_no_crate_that_does_io() {
    let [domain, _, library, ..] = workspace_layers();
    assert!(io_crates(&library).contains(&"tokio"), "the walk finds the library's I/O: {library:?}");
    assert!(domain.contains("serde") && domain.contains("rand"), "the walk reached the domain's: {domain:?}");
    assert!(io_crates(&domain).is_empty(), "the domain depends on crates that do I/O: {:?}", io_crates(&domain));
}

#[test]
fn the_ports_and_use_cases_depend_on_no_store_client() {
    let [_, core, library, ..] = workspace_layers();
    assert!(store_clients(&library).contains(&"redis"), "the walk finds the library's store clients: {library:?}");
    assert!(core.contains("red-packets-domain"), "the walk reached the core's dependencies: {core:?}");
    assert!(store_clients(&core).is_empty(), "the use cases depend on store clients: {:?}", store_clients(&core));
}

/// The domain's code, each file's test module cut off, names no I/O module of std.
#[test]
fn the_domains_code_names_no_io_module_of_std() {
    fn sources(dir: &std::path::Path, found: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                sources(&path, found);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                found.push(path);
            }
        }
    }
    let mut files = Vec::new();
    sources(std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src")), &mut files);
    let product: Vec<_> = files
        .iter()
        .filter(|path| !path.ends_with("tests.rs") && !path.components().any(|part| part.as_os_str() == "tests"))
        .collect();
    assert!(product.len() > 20, "the scan found the domain's files: {product:?}");
    for path in product {
        let text = std::fs::read_to_string(path).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for module in ["std::fs", "std::net", "std::io", "std::process", "std::env", "std::thread"] {
            assert!(!code.contains(module), "{} names {module}", path.display());
        }
    }
}

#[test]
fn each_adapter_depends_on_its_own_store_client_alone() {
    let [.., redis, dynamo] = workspace_layers();
    assert!(store_clients(&redis).contains(&"redis"), "the walk finds the Redis adapter's client: {redis:?}");
    assert!(!store_clients(&redis).iter().any(|name| is_aws_sdk(name)), "the Redis adapter reaches AWS: {redis:?}");
    assert!(store_clients(&dynamo).contains(&"aws-sdk-dynamodb"), "the walk finds DynamoDB's client: {dynamo:?}");
    assert!(!dynamo.contains("redis"), "the DynamoDB adapter reaches Redis: {dynamo:?}");
}
