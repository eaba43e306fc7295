//! Account holds: one partition, `HOLDS`, with an item per hold in force (`USER#<user>`) and
//! the holds' version (`VERSION`), which every place and lift adds one to in its transaction.
//! A reader asks the version (one item) and reads the holds only when it moved.

use serde::{Deserialize, Serialize};

use red_packets_core::domain::risk::Hold;
use red_packets_core::domain::UserId;

/// The holds' partition.
pub const HOLDS_PK: &str = "HOLDS";

/// The sort key prefix of a hold in force.
pub const HOLD_PREFIX: &str = "USER#";

/// The sort key of the holds' version.
pub const HOLDS_VERSION: &str = "VERSION";

/// `USER#<user>`, the sort key of `user`'s hold.
pub fn hold_sk(user: &UserId) -> String {
    format!("{HOLD_PREFIX}{user}")
}

/// A hold in force (`HOLDS` / `USER#<user>`): placed under the condition that no hold of its
/// scope is, deleted when lifted (the audit trail keeps both steps). Its attributes are the
/// hold's own.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HoldItem {
    pub pk: String,
    pub sk: String,
    #[serde(flatten)]
    pub hold: Hold,
}

impl HoldItem {
    /// The item of `hold`.
    pub fn new(hold: &Hold) -> Self {
        HoldItem { pk: HOLDS_PK.into(), sk: hold_sk(&hold.user), hold: hold.clone() }
    }
}
