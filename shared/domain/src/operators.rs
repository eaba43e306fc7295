//! The people behind the operators' API (`/ops/v1/…`, openapi.yaml): who they are, what roles
//! their identity provider gave them, and which roles each action needs. Each route of the API
//! is one [`OpsAction`], and [`OpsAction::roles`] is the one place its permission is written;
//! the server checks it on every request, and the console only hides what the server refuses.

use serde::{Deserialize, Serialize};

use super::adjustment::operator_ok;

/// An operator's role, as the identity provider's roles claim names it (its groups).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Support agents: read users and packets, propose adjustments.
    Support,
    /// Finance: approve adjustments, withdrawals, reports and reconciliation.
    Finance,
    /// Risk analysts: holds and flags.
    Risk,
    /// Everything.
    Admin,
}

impl Role {
    /// Every role.
    pub const ALL: [Role; 4] = [Role::Support, Role::Finance, Role::Risk, Role::Admin];

    /// `support`, `finance`, `risk` or `admin`: the group names the provider sets.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Support => "support",
            Role::Finance => "finance",
            Role::Risk => "risk",
            Role::Admin => "admin",
        }
    }

    fn parse(name: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|role| role.as_str() == name)
    }
}

/// What an operator asks of the API: one per route (`red_packets::routes::OPS_ROUTES` pairs each
/// with its route key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpsAction {
    /// A user's overview: balance, first movements, hold.
    ReadUser,
    /// A page of a user's movements.
    ReadUserMovements,
    /// A page of the packets a user sent or received.
    ReadUserPackets,
    /// A page of the flags naming a user.
    ReadUserFlags,
    /// A page of the audit entries concerning a user.
    ReadUserAudit,
    /// A packet as the ledger holds it.
    ReadPacket,
    /// A packet as Redis and the ledger each hold it, side by side.
    ReadPacketSides,
    /// The holds in force.
    ListHolds,
    /// Place or replace a hold.
    PlaceHold,
    /// Lift a hold.
    LiftHold,
    /// Propose an adjustment.
    ProposeAdjustment,
    /// Approve another operator's adjustment.
    ApproveAdjustment,
    /// Read the flags.
    ListFlags,
    /// Resolve a flag.
    ResolveFlag,
    /// Read a day's audit trail.
    ReadAudit,
    /// A user's statement of a day.
    ReadStatement,
    /// The proposals waiting for a second operator.
    ListPendingAdjustments,
    /// One adjustment by its reference, whatever its state.
    ReadAdjustment,
    /// Reject another operator's proposal.
    RejectAdjustment,
    /// Withdraw one's own proposal.
    WithdrawAdjustment,
    /// The withdrawals waiting for the payments system.
    ListPendingWithdrawals,
    /// One withdrawal by its id, whatever its state.
    ReadWithdrawal,
    /// Send an overdue withdrawal's order to the payments system again (moves no money).
    ResendWithdrawal,
    /// Assign a flag.
    AssignFlag,
    /// A day's trial balance.
    ReadTrialBalance,
    /// Reconcile the ledger now.
    Reconcile,
    /// Take a packet out of quarantine.
    ReleasePacket,
    /// A business day's hourly view: sends, grabs, refunds and withdrawals by hour.
    ReadBusinessHours,
}

impl OpsAction {
    /// The roles that may take this action (admin may take every one).
    pub fn roles(self) -> &'static [Role] {
        use Role::*;
        match self {
            OpsAction::ReadUser
            | OpsAction::ReadUserMovements
            | OpsAction::ReadUserPackets
            | OpsAction::ReadUserFlags
            | OpsAction::ReadUserAudit
            | OpsAction::ReadPacket
            | OpsAction::ReadPacketSides
            | OpsAction::ListHolds
            | OpsAction::ListFlags
            | OpsAction::ListPendingAdjustments
            | OpsAction::ReadAdjustment
            | OpsAction::ReadAudit
            | OpsAction::ReadBusinessHours => &[Support, Finance, Risk, Admin],
            OpsAction::PlaceHold | OpsAction::LiftHold | OpsAction::AssignFlag | OpsAction::ResolveFlag => {
                &[Risk, Admin]
            }
            OpsAction::ProposeAdjustment
            | OpsAction::WithdrawAdjustment
            | OpsAction::ReadStatement
            | OpsAction::ListPendingWithdrawals
            | OpsAction::ReadWithdrawal => &[Support, Finance, Admin],
            OpsAction::ApproveAdjustment
            | OpsAction::ResendWithdrawal
            | OpsAction::RejectAdjustment
            | OpsAction::ReadTrialBalance
            | OpsAction::Reconcile
            | OpsAction::ReleasePacket => &[Finance, Admin],
        }
    }
}

/// An operator as the operators' identity provider verified them: the token's subject (the
/// operator in the audit trail and in the four-eyes rule) and the roles its roles claim holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operator {
    /// The token's `sub`.
    pub subject: String,
    /// The roles it was given (unknown group names are ignored).
    pub roles: Vec<Role>,
}

impl Operator {
    /// The operator of a verified token: its `sub` and its roles claim, as API Gateway's JWT
    /// authorizer hands claims over (a list claim becomes one string, `[support finance]`; a
    /// comma- or space-separated string is read the same way). `None` when the subject is not
    /// usable as an operator's name (1..=256 of `[A-Za-z0-9_.:@/+=,-]`).
    pub fn from_claims(subject: &str, roles_claim: Option<&str>) -> Option<Operator> {
        if !operator_ok(subject) {
            return None;
        }
        let mut roles: Vec<Role> = roles_claim
            .unwrap_or_default()
            .trim_matches(|c| c == '[' || c == ']')
            .split(|c: char| c == ',' || c.is_whitespace())
            .map(|name| name.trim_matches('"'))
            .filter_map(Role::parse)
            .collect();
        roles.sort();
        roles.dedup();
        Some(Operator { subject: subject.to_owned(), roles })
    }

    /// Whether this operator may take `action`.
    pub fn may(&self, action: OpsAction) -> bool {
        self.roles.iter().any(|role| action.roles().contains(role))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_are_read_as_api_gateway_hands_a_list_claim_over() {
        let operator = Operator::from_claims("anna", Some("[support finance]")).unwrap();
        assert_eq!(operator.roles, vec![Role::Support, Role::Finance]);
        let operator = Operator::from_claims("ben", Some("risk,admin,someone-elses-group")).unwrap();
        assert_eq!(operator.roles, vec![Role::Risk, Role::Admin]);
        assert_eq!(Operator::from_claims("carol", None).unwrap().roles, vec![]);
        assert_eq!(Operator::from_claims("carol", Some("[\"risk\"]")).unwrap().roles, vec![Role::Risk]);
        assert!(Operator::from_claims("", Some("admin")).is_none());
        assert!(Operator::from_claims("<script>", Some("admin")).is_none());
    }

    #[test]
    fn each_action_is_taken_by_its_roles_and_admin() {
        let support = Operator::from_claims("s", Some("support")).unwrap();
        let finance = Operator::from_claims("f", Some("finance")).unwrap();
        let risk = Operator::from_claims("r", Some("risk")).unwrap();
        let admin = Operator::from_claims("a", Some("admin")).unwrap();
        let nobody = Operator::from_claims("n", Some("viewer")).unwrap();
        assert!(support.may(OpsAction::ProposeAdjustment) && !support.may(OpsAction::ApproveAdjustment));
        assert!(finance.may(OpsAction::ApproveAdjustment) && !finance.may(OpsAction::PlaceHold));
        assert!(risk.may(OpsAction::PlaceHold) && risk.may(OpsAction::ResolveFlag));
        assert!(!risk.may(OpsAction::ProposeAdjustment));
        for action in [OpsAction::ReadUser, OpsAction::ApproveAdjustment, OpsAction::LiftHold, OpsAction::ReadAudit] {
            assert!(admin.may(action), "{action:?}");
            assert!(!nobody.may(action), "{action:?}");
        }
    }
}
