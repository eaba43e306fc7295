//! `local serve` (the default) runs the local API; `local token <user>` prints a bearer token;
//! `local topup <user> <cents> [reference]` credits a wallet as the payments system would;
//! `local reconcile` checks that the books balance; `local quarantine` lists the packets settle
//! set aside and `local release <id>…` takes them out to be settled again.

use local::LocalAuthorizer;

const USAGE: &str =
    "usage: local [serve] | local token <user> [ttl-seconds] | local topup <user> <cents> [reference] | local reconcile | local quarantine | local release <packet-id>...";

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
        Some("topup") => {
            let user = args.next().ok_or(USAGE)?;
            let amount_cents: u64 = args.next().ok_or(USAGE)?.parse()?;
            let reference = args.next().unwrap_or_else(|| format!("local-{}", red_packets::domain::PacketId::random()));
            let topup = serde_json::json!({ "user": user, "amount_cents": amount_cents, "reference": reference });
            local::funds_from_env(serde_json::json!({ "topup": topup })).await
        }
        Some("reconcile") => local::funds_from_env(serde_json::json!({ "reconcile": {} })).await,
        Some("quarantine") => local::settle_from_env(serde_json::json!({})).await,
        Some("release") => local::settle_from_env(serde_json::json!({ "release": args.collect::<Vec<_>>() })).await,
        Some(_) => Err(USAGE.into()),
    }
}
