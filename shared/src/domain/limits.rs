//! The per-packet limits a deployment sets, with DESIGN.md's defaults.

use super::Cents;

/// What a packet may be: amounts, share counts and lifetimes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest `total_cents` of one packet.
    pub max_total_cents: Cents,
    /// Most shares in one packet.
    pub max_count: u32,
    /// Shortest lifetime a sender may ask for.
    pub min_expires_in_seconds: u32,
    /// Longest lifetime a sender may ask for.
    pub max_expires_in_seconds: u32,
    /// Lifetime when the sender does not say.
    pub default_expires_in_seconds: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_total_cents: 20_000,
            max_count: 100,
            min_expires_in_seconds: 60,
            max_expires_in_seconds: 86_400,
            default_expires_in_seconds: 86_400,
        }
    }
}

/// Longest greeting, in characters.
pub const MAX_GREETING_CHARS: usize = 64;

/// Largest request body accepted, in bytes (16 KiB).
pub const MAX_BODY_BYTES: usize = 16 * 1024;
