//! Risk flags: what a pattern rule raised (`patterns`), its id from what was found, and an
//! operator's assignment and resolution of it, each checked before it is written.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::adjustment::operator_ok;
use super::audit::{AuditAction, AuditEntry, AuditFacts};
use super::ids::{ChatId, PacketId, UserId};
use super::invalid::Invalid;
use super::money::Cents;
use super::risk::HoldScope;

/// Which rule raised a flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlagRule {
    /// A 接龙 chain in a chat.
    Chain,
    /// Money passed back and forth between two users.
    Cycle,
    /// A user grabbing in more chats in a day than the limit.
    Chats,
}

impl FlagRule {
    /// `chain`, `cycle` or `chats`, as ids, items and answers spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            FlagRule::Chain => "chain",
            FlagRule::Cycle => "cycle",
            FlagRule::Chats => "chats",
        }
    }
}

/// Where a flag stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlagStatus {
    /// Waiting for an operator.
    Open,
    /// An operator found the pattern real.
    Confirmed,
    /// An operator found it harmless.
    Dismissed,
}

impl FlagStatus {
    /// The status's name.
    pub fn as_str(self) -> &'static str {
        match self {
            FlagStatus::Open => "open",
            FlagStatus::Confirmed => "confirmed",
            FlagStatus::Dismissed => "dismissed",
        }
    }
}

/// A pattern a rule found: raised once (its id comes from what it found), listed and resolved
/// by operators, published as `RiskFlagged`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RiskFlag {
    /// `<rule>-<16 hex>`, from the rule and what it found: the same finding is the same flag.
    pub flag_id: String,
    /// The rule.
    pub rule: FlagRule,
    /// The users it names (a chain's senders, a cycle's two, the one grabbing everywhere).
    pub users: Vec<UserId>,
    /// The chat, for a chain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_id: Option<ChatId>,
    /// The packets it rests on (a chain's; the packet that tipped a cycle or a chat count).
    pub packets: Vec<PacketId>,
    /// The money it concerns.
    pub amount_cents: Cents,
    /// What was found, for the operator.
    pub detail: String,
    /// When it was raised (RFC 3339).
    pub raised_at: String,
    /// Open until an operator resolves it.
    pub status: FlagStatus,
    /// The hold it placed on the users it names, if the stack places one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold: Option<HoldScope>,
    /// The operator working it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee: Option<String>,
    /// When it was assigned to them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assigned_at: Option<String>,
    /// Who resolved it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_by: Option<String>,
    /// When.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_at: Option<String>,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What a rule found: whom, where, on the strength of which packets, how much.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The users it names.
    pub users: Vec<UserId>,
    /// The chat, for a chat's rule.
    pub chat_id: Option<ChatId>,
    /// The packets it rests on.
    pub packets: Vec<PacketId>,
    /// The money it concerns.
    pub amount_cents: Cents,
    /// What was found, for the operator.
    pub detail: String,
}

impl RiskFlag {
    /// The open flag `flag_id` of `rule` for `finding`, raised at `raised_at` (its id from
    /// [`flag_id`]: what identifies the finding, a chain's chat and first packet, say).
    pub fn raised(flag_id: String, rule: FlagRule, finding: Finding, raised_at: String) -> Self {
        let Finding { users, chat_id, packets, amount_cents, detail } = finding;
        RiskFlag {
            flag_id,
            rule,
            users,
            chat_id,
            packets,
            amount_cents,
            detail,
            raised_at,
            status: FlagStatus::Open,
            hold: None,
            assignee: None,
            assigned_at: None,
            resolved_by: None,
            resolved_at: None,
            note: None,
        }
    }
}

/// `<rule>-<first 16 hex of SHA-256 of the parts>`: a flag's id from what it found.
pub fn flag_id(rule: FlagRule, parts: &[&str]) -> String {
    let digest = Sha256::digest(parts.join("\n").as_bytes());
    format!("{}-{}", rule.as_str(), &hex::encode(digest)[..16])
}

/// An operator's word on a flag (`POST /ops/v1/flags/{flag_id}/resolve`, whose handler sets
/// `operator` to the signed-in operator).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlagResolution {
    /// The flag.
    pub flag_id: String,
    /// `confirmed` or `dismissed`.
    pub outcome: FlagStatus,
    /// Who resolves it (the signed-in operator).
    #[serde(default)]
    pub operator: String,
    /// Why (1..=500 characters).
    pub note: String,
}

/// An operator assigning an open flag to an operator (themselves, or another).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlagAssignment {
    /// The flag.
    pub flag_id: String,
    /// Who it goes to.
    pub assignee: String,
    /// Who assigns it (the signed-in operator).
    pub operator: String,
}

impl FlagAssignment {
    /// Refuses a missing flag id and names that are not operators'.
    pub fn validate(&self) -> Result<(), Invalid> {
        if self.flag_id.is_empty() || self.flag_id.len() > 64 {
            return Err(Invalid::field("flag_id", "flag_id must be a flag's id"));
        }
        if !operator_ok(&self.assignee) {
            return Err(Invalid::field("assignee", "assignee must be 1..=256 of [A-Za-z0-9_.:@/+=,-]"));
        }
        if !operator_ok(&self.operator) {
            return Err(Invalid::field("operator", "operator must name the operator assigning it"));
        }
        Ok(())
    }

    /// The audit trail's entry of this assignment at `at` (RFC 3339).
    pub fn entry(&self, at: String) -> AuditEntry {
        AuditEntry {
            at,
            action: AuditAction::FlagAssigned,
            subject: self.flag_id.clone(),
            actor: self.operator.clone(),
            reason: format!("to {}", self.assignee),
            user: None,
            facts: AuditFacts { assignee: Some(self.assignee.clone()), ..AuditFacts::default() },
        }
    }
}

impl FlagResolution {
    /// Refuses an outcome that is not one, and a missing operator or note.
    pub fn validate(&self) -> Result<(), Invalid> {
        if self.outcome == FlagStatus::Open {
            return Err(Invalid::field("outcome", "outcome must be \"confirmed\" or \"dismissed\""));
        }
        if self.flag_id.is_empty() || self.flag_id.len() > 64 {
            return Err(Invalid::field("flag_id", "flag_id must be a flag's id"));
        }
        if !operator_ok(&self.operator) {
            return Err(Invalid::field("operator", "operator must name the operator resolving it"));
        }
        if !(1..=500).contains(&self.note.chars().count()) {
            return Err(Invalid::field("note", "note must be 1 to 500 characters"));
        }
        Ok(())
    }

    /// The audit trail's entry of this resolution at `at` (RFC 3339).
    pub fn entry(&self, at: String) -> AuditEntry {
        AuditEntry {
            at,
            action: AuditAction::FlagResolved,
            subject: self.flag_id.clone(),
            actor: self.operator.clone(),
            reason: format!("{}: {}", self.outcome.as_str(), self.note),
            user: None,
            facts: AuditFacts { outcome: Some(self.outcome.as_str().to_owned()), ..AuditFacts::words(&self.note) },
        }
    }
}

/// Which flags to list (`{"flags": {"status": "open", "limit": 20}}`): a page of one status
/// (default open), oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListFlags {
    /// Their status (default open).
    #[serde(default)]
    pub status: Option<FlagStatus>,
    /// The most the page holds: 1..=100 (default 20).
    #[serde(default)]
    pub limit: Option<u32>,
    /// The page before's `next_cursor`.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// What resolving a flag did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlagResolved {
    /// The flag as it stands now (`None`: no such flag).
    pub flag: Option<RiskFlag>,
    /// False when it was resolved before (nothing written).
    pub changed: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_ids_come_from_what_was_found_and_resolutions_name_what_is_wrong() {
        assert_eq!(flag_id(FlagRule::Chain, &["c", "p"]), flag_id(FlagRule::Chain, &["c", "p"]));
        assert_ne!(flag_id(FlagRule::Chain, &["c", "p"]), flag_id(FlagRule::Chain, &["c", "q"]));
        assert!(flag_id(FlagRule::Cycle, &["a"]).starts_with("cycle-"));
        let resolution = |outcome, note: &str| FlagResolution {
            flag_id: "chain-0011223344556677".into(),
            outcome,
            operator: "arn:aws:sts::1:assumed-role/o/anna".into(),
            note: note.into(),
        };
        assert!(resolution(FlagStatus::Dismissed, "a family's habit").validate().is_ok());
        assert_eq!(resolution(FlagStatus::Open, "x").validate().unwrap_err().field.as_deref(), Some("outcome"));
        assert_eq!(resolution(FlagStatus::Confirmed, "").validate().unwrap_err().field.as_deref(), Some("note"));
    }
}
