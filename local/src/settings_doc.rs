//! The settings' table of DEPLOY.md and DESIGN.md, generated from their declarations
//! ([`red_packets::settings::SETTINGS`]): `make settings` rewrites the block between the
//! markers, and `local/tests/it/deployment.rs` fails while a document's block differs.

use red_packets::settings::{Accepts, Deployed, Fallback, Setting, SETTINGS};

/// The line before the generated table.
pub const BEGIN: &str = "<!-- settings: generated from shared/core/src/settings.rs by `make settings`; edit there -->";
/// The line after it.
pub const END: &str = "<!-- /settings -->";

/// The documents that carry the table.
pub const DOCUMENTS: [&str; 2] = ["docs/DEPLOY.md", "docs/DESIGN.md"];

/// The table, one row per setting, in the declarations' order.
pub fn table() -> String {
    let mut table = String::from("| variable | default | deployed | accepts | meaning |\n|---|---|---|---|---|\n");
    for setting in SETTINGS {
        let row = [format!("`{}`", setting.name), default(setting), deployed(setting), accepts(setting.accepts)];
        table.push_str(&format!("| {} | {} |\n", row.join(" | "), setting.meaning));
    }
    table
}

fn default(setting: &Setting) -> String {
    match setting.default {
        Fallback::Unset => "unset".into(),
        Fallback::Text(text) => format!("`{text}`"),
        Fallback::Number(number) => format!("`{number}`"),
    }
}

fn deployed(setting: &Setting) -> String {
    let how = match setting.deployed {
        Deployed::Parameter(parameter) => format!("parameter `{parameter}`"),
        Deployed::ParameterDefaulting(parameter, default) => format!("parameter `{parameter}` (default `{default}`)"),
        Deployed::Value("") => "empty".into(),
        Deployed::Value(value) => format!("`{value}`"),
        Deployed::Computed => "the stack's own".into(),
        Deployed::Secret(secret) => format!("the ARN of the generated secret `{secret}`, read at run time"),
        Deployed::NotSet => "not set".into(),
        Deployed::ByLambda => "set by Lambda".into(),
        Deployed::Locally(None) => "local only".into(),
        Deployed::Locally(Some(parameter)) => format!("local only (in AWS: parameter `{parameter}`)"),
    };
    if setting.on.is_empty() {
        return how;
    }
    let functions: Vec<String> = setting.on.iter().map(|function| format!("`{function}`")).collect();
    format!("{how}, on {}", functions.join(", "))
}

fn accepts(accepts: Accepts) -> String {
    match accepts {
        Accepts::Text => "text".into(),
        Accepts::Flag => "`true` or `false`".into(),
        Accepts::AtLeast(min) => format!("{min} or more"),
        Accepts::Within(min, max) => format!("{min} to {max}"),
        Accepts::OneOf(words) => words.iter().map(|word| format!("`{word}`")).collect::<Vec<_>>().join(", "),
        Accepts::Described(what) => what.into(),
    }
}

/// `document` with its table replaced by [`table`]; `None` when it has no markers.
pub fn rewritten(document: &str) -> Option<String> {
    let start = document.find(BEGIN)? + BEGIN.len();
    let end = start + document[start..].find(END)?;
    Some(format!("{}\n{}{}", &document[..start], table(), &document[end..]))
}

/// Prints the table, or (`write`) rewrites it into [`DOCUMENTS`] (paths from the workspace root).
pub fn print_or_write(write: bool) -> Result<(), Box<dyn std::error::Error>> {
    if !write {
        print!("{}", table());
        return Ok(());
    }
    for document in DOCUMENTS {
        let text = std::fs::read_to_string(document)?;
        std::fs::write(document, rewritten(&text).ok_or(format!("{document}: no settings markers"))?)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_between_the_markers_is_replaced_and_nothing_else() {
        let document = format!("intro\n{BEGIN}\n| old |\n{END}\nafter\n");
        let once = rewritten(&document).unwrap();
        assert!(once.starts_with(&format!("intro\n{BEGIN}\n| variable | default |")));
        assert!(once.ends_with(&format!("{END}\nafter\n")));
        assert!(once.contains("| `MAX_COUNT` | `100` | parameter `MaxCount` | 1 to 100000 |"), "{once}");
        assert_eq!(rewritten(&once).as_deref(), Some(once.as_str()), "stable");
        assert_eq!(rewritten("no markers"), None);
    }
}
