//! `local serve` (the default) runs the local API; `local token <user>` prints a bearer token.

use local::LocalAuthorizer;

const USAGE: &str = "usage: local [serve] | local token <user> [ttl-seconds]";

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
        Some(_) => Err(USAGE.into()),
    }
}
