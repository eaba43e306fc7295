//! The references other systems and operators give the ledger (a payment's, a payout's, a
//! withdrawal's destination, an adjustment's case): one rule for all of them.

/// True for a reference: 1..=64 of `[A-Za-z0-9_.:-]`, safe in a key, a log line and a CSV cell.
pub fn reference_ok(reference: &str) -> bool {
    (1..=64).contains(&reference.len()) && reference.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.:-".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_is_1_to_64_safe_characters() {
        assert!(reference_ok("pay-2026.11:24_1"));
        assert!(reference_ok(&"x".repeat(64)));
        for bad in ["", "has space", "a,b", "a/b", "\u{e9}"] {
            assert!(!reference_ok(bad), "{bad:?}");
        }
        assert!(!reference_ok(&"x".repeat(65)));
    }
}
