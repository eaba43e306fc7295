//! `local serve` (the default) runs the local API; `local token <user>` prints a bearer token;
//! `local ops-token <operator> <role,role…>` prints an operator's token for the operators' API
//! (`/ops/v1`), signed as the operators' provider's stand-in signs them;
//! `local topup <user> <cents> [reference]` credits a wallet as the payments system would;
//! `local reconcile` checks that the books balance (`--file` an export, `--as-of`, `--passes`);
//! `local export <file>` writes the table as an export file; `local trial-balance [day]` and
//! `local statement <user> <day>` write reports under `reports/` (JSON lines and CSV);
//! `local funds <payload|file>` hands the funds function any payload (a withdrawal's
//! resolution, an adjustment's proposal or approval: `events/` holds samples);
//! `local quarantine` lists the packets settle set aside and `local release <id>…` takes them
//! out to be settled again; `local replay` settles every packet Redis holds again from its first
//! grab (after the ledger was restored) and `local restore-report <before> <after>` lists what
//! a restore lost (docs/OPERATIONS.md, "Restoring the ledger"); `local settings [--write]`
//! prints the settings' table (`--write`: into DEPLOY.md and DESIGN.md, `make settings`).

use local::LocalAuthorizer;
use red_packets::domain::operators::Role;

const USAGE: &str =
    "usage: local [serve] | local token <user> [ttl-seconds] | local ops-token <operator> <role,role...> [ttl-seconds] | local topup <user> <cents> [reference] | local reconcile [--file <export>] [--as-of <time>] [--passes <n>] | local export <file> | local trial-balance [day] | local statement <user> <day> | local funds <payload-json|file> | local quarantine | local release --operator <name> --reason <why> <packet-id>... | local replay | local restore-report <before-table> <after-table> | local settings [--write]";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    red_packets::telemetry::init();
    let mut args = std::env::args().skip(1);
    match args.next().as_deref() {
        None | Some("serve") => local::serve_from_env().await,
        Some("token") => {
            let user = args.next().ok_or(USAGE)?;
            let ttl: u64 = args.next().map(|t| t.parse()).transpose()?.unwrap_or(86_400);
            println!("{}", LocalAuthorizer::from_env().token(&user, ttl));
            Ok(())
        }
        Some("ops-token") => {
            let operator = args.next().ok_or(USAGE)?;
            let roles = args.next().ok_or(USAGE)?;
            let roles: Vec<&str> = roles.split(',').map(str::trim).filter(|role| !role.is_empty()).collect();
            let known: Vec<&str> = Role::ALL.iter().map(|role| role.as_str()).collect();
            if roles.is_empty() || roles.iter().any(|role| !known.contains(role)) {
                return Err(format!("ROLES must name one or more of {} (comma-separated)", known.join(", ")).into());
            }
            let ttl: u64 = args.next().map(|t| t.parse()).transpose()?.unwrap_or(28_800);
            println!("{}", LocalAuthorizer::operators_from_env().operator_token(&operator, &roles, ttl));
            Ok(())
        }
        Some("topup") => {
            let user = args.next().ok_or(USAGE)?;
            let amount_cents: u64 = args.next().ok_or(USAGE)?.parse()?;
            let reference = args.next().unwrap_or_else(|| format!("local-{}", red_packets::domain::PacketId::random()));
            let topup = serde_json::json!({ "user": user, "amount_cents": amount_cents, "reference": reference });
            local::funds_from_env(serde_json::json!({ "topup": topup })).await
        }
        Some("reconcile") => reconcile(args).await,
        Some("export") => local::export_from_env(&args.next().ok_or(USAGE)?).await,
        Some("trial-balance") => {
            let day = args.next().filter(|day| !day.is_empty());
            local::funds_from_env(serde_json::json!({ "trial_balance": { "day": day } })).await
        }
        Some("statement") => {
            let (user, day) = (args.next().ok_or(USAGE)?, args.next().ok_or(USAGE)?);
            local::funds_from_env(serde_json::json!({ "statement": { "user": user, "day": day } })).await
        }
        Some("funds") => {
            let payload = args.next().ok_or(USAGE)?;
            let text = if payload.trim_start().starts_with('{') { payload } else { std::fs::read_to_string(&payload)? };
            local::funds_from_env(serde_json::from_str(&text)?).await
        }
        Some("quarantine") => local::settle_from_env(serde_json::json!({})).await,
        Some("settings") => local::settings_doc::print_or_write(args.next().as_deref() == Some("--write")),
        Some("replay") => local::settle_from_env(serde_json::json!({ "replay": true })).await,
        Some("restore-report") => {
            let before = args.next().ok_or(USAGE)?;
            local::restore_report::run(&before, &args.next().ok_or(USAGE)?).await
        }
        Some("release") => {
            let (mut operator, mut reason, mut ids) = (None, None, Vec::new());
            while let Some(arg) = args.next() {
                match arg.as_str() {
                    "--operator" => operator = Some(args.next().ok_or(USAGE)?),
                    "--reason" => reason = Some(args.next().ok_or(USAGE)?),
                    _ => ids.push(arg),
                }
            }
            let release = serde_json::json!({ "release": ids, "operator": operator, "reason": reason });
            local::settle_from_env(release).await
        }
        Some(_) => Err(USAGE.into()),
    }
}

/// `local reconcile [--file <export>] [--as-of <time>] [--passes <n>]`.
async fn reconcile(mut args: impl Iterator<Item = String>) -> Result<(), Box<dyn std::error::Error>> {
    let (mut file, mut as_of, mut passes) = (None, None, None);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(USAGE)?;
        match flag.as_str() {
            "--file" => file = Some(value),
            "--as-of" => as_of = Some(value),
            "--passes" => passes = Some(value.parse::<u32>()?),
            _ => return Err(USAGE.into()),
        }
    }
    match file {
        Some(file) => local::reconcile_file(&file, as_of.as_deref(), passes.unwrap_or(1)).await,
        None => {
            let options = red_packets::funds::ReconcileOptions { as_of, passes };
            local::funds_from_env(serde_json::json!({ "reconcile": options })).await
        }
    }
}
