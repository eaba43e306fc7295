//! Every route of the app's API, declared once: its method and path, the function that serves
//! it, what it does, the stage's throttle it counts against and its sample event. The handlers
//! dispatch on it (by the event's route key), the local gateway serves and throttles by it, and
//! the template's `HttpApi` events and `RouteSettings`, openapi.yaml's paths, `events/` and
//! `make verify-build`'s map of sample events are checked against it
//! (`local/tests/it/deployment.rs`). The operators' API's routes are declared here too
//! ([`OPS_ROUTES`]), each with its [`OpsAction`]: the operator function dispatches on them, the
//! local gateway registers them, and the template's route resources on the operators' own HTTP
//! API and openapi.yaml's paths and `x-roles` are checked against them.

use crate::domain::operators::OpsAction;

/// The function of the template that serves a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Function {
    /// `SendFunction` (the `send` binary).
    Send,
    /// `GrabFunction` or `GrabManagedFunction` (the `grab` binary).
    Grab,
    /// `QueryFunction` (the `query` binary).
    Query,
}

impl Function {
    /// The binary (and crate) of the function.
    pub fn binary(self) -> &'static str {
        match self {
            Function::Send => "send",
            Function::Grab => "grab",
            Function::Query => "query",
        }
    }
}

/// What a route does: the use case its function runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Send a packet.
    Send,
    /// Grab a share.
    Grab,
    /// View a packet, as its caller sees it.
    Packet,
    /// View what every viewer of a packet sees: no token, cacheable at the edge.
    SharedPacket,
    /// The caller's history.
    History,
    /// Cancel a packet.
    Cancel,
    /// The caller's wallet.
    Wallet,
    /// Ask for a withdrawal.
    Withdraw,
    /// What a sender may send: the stack's limits, for the send form.
    Limits,
}

/// The stage's throttle a route counts against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Throttle {
    /// The grab route's own `RouteSettings` (`GrabRateLimit`, `GrabBurstLimit`).
    Grab,
    /// The withdrawal route's own `RouteSettings` (`WithdrawRateLimit`, `WithdrawBurstLimit`).
    Withdraw,
    /// The limits route's own `RouteSettings`, numbers written in the template
    /// ([`LIMITS_RATE_LIMIT`], [`LIMITS_BURST_LIMIT`]): a read once a session adds little to the
    /// sum of every route at its limit that the account's quota must hold.
    Limits,
    /// `DefaultRouteSettings`, which every other route shares (`ApiRateLimit`, `ApiBurstLimit`).
    Default,
}

/// `GET /me/limits`'s rate limit, requests a second (template.yaml's `RouteSettings`).
pub const LIMITS_RATE_LIMIT: u32 = 100;
/// `GET /me/limits`'s burst limit (template.yaml's `RouteSettings`).
pub const LIMITS_BURST_LIMIT: u32 = 200;

/// One route of the app's API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    /// The route key, as API Gateway writes it (`POST /packets/{packet_id}/grab`).
    pub key: &'static str,
    /// What it does.
    pub action: Action,
    /// Who serves it.
    pub function: Function,
    /// The throttle it counts against.
    pub throttle: Throttle,
    /// Its sample event in `events/`.
    pub event: &'static str,
    /// True when the route takes no token (the template's `Authorizer: NONE`): its answer is the
    /// same for every caller, so CloudFront may keep it.
    pub public: bool,
}

impl Route {
    /// The method of the route key.
    pub fn method(&self) -> &'static str {
        self.key.split_once(' ').map_or(self.key, |(method, _)| method)
    }

    /// The path of the route key (with its `{packet_id}`).
    pub fn path(&self) -> &'static str {
        self.key.split_once(' ').map_or("", |(_, path)| path)
    }

    /// The route whose key is `key`.
    pub fn keyed(key: &str) -> Option<&'static Route> {
        ROUTES.iter().find(|route| route.key == key)
    }
}

/// `POST /packets`.
pub const SEND: Route = Route {
    key: "POST /packets",
    action: Action::Send,
    function: Function::Send,
    throttle: Throttle::Default,
    event: "send.json",
    public: false,
};
/// `POST /packets/{packet_id}/grab`.
pub const GRAB: Route = Route {
    key: "POST /packets/{packet_id}/grab",
    action: Action::Grab,
    function: Function::Grab,
    throttle: Throttle::Grab,
    event: "grab.json",
    public: false,
};
/// `GET /packets/{packet_id}`.
pub const PACKET: Route = Route {
    key: "GET /packets/{packet_id}",
    action: Action::Packet,
    function: Function::Query,
    throttle: Throttle::Default,
    event: "query.json",
    public: false,
};
/// `GET /packets/{packet_id}/shared`.
pub const SHARED_PACKET: Route = Route {
    key: "GET /packets/{packet_id}/shared",
    action: Action::SharedPacket,
    function: Function::Query,
    throttle: Throttle::Default,
    event: "shared.json",
    public: true,
};
/// `GET /me/packets`.
pub const HISTORY: Route = Route {
    key: "GET /me/packets",
    action: Action::History,
    function: Function::Query,
    throttle: Throttle::Default,
    event: "history.json",
    public: false,
};
/// `POST /packets/{packet_id}/cancel`.
pub const CANCEL: Route = Route {
    key: "POST /packets/{packet_id}/cancel",
    action: Action::Cancel,
    function: Function::Send,
    throttle: Throttle::Default,
    event: "cancel.json",
    public: false,
};
/// `GET /me/wallet`.
pub const WALLET: Route = Route {
    key: "GET /me/wallet",
    action: Action::Wallet,
    function: Function::Query,
    throttle: Throttle::Default,
    event: "wallet.json",
    public: false,
};
/// `POST /me/withdrawals`.
pub const WITHDRAW: Route = Route {
    key: "POST /me/withdrawals",
    action: Action::Withdraw,
    function: Function::Send,
    throttle: Throttle::Withdraw,
    event: "withdraw.json",
    public: false,
};

/// `GET /me/limits`.
pub const LIMITS: Route = Route {
    key: "GET /me/limits",
    action: Action::Limits,
    function: Function::Send,
    throttle: Throttle::Limits,
    event: "limits.json",
    public: false,
};

/// Every route of the app's API.
pub const ROUTES: &[Route] = &[SEND, GRAB, PACKET, SHARED_PACKET, HISTORY, CANCEL, WALLET, WITHDRAW, LIMITS];

/// One route of the operators' API (`/ops/v1`): its key, and the one action it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpsRoute {
    /// The route key, as API Gateway writes it (`POST /ops/v1/users/{user}/hold`).
    pub key: &'static str,
    /// What it does, and so which roles may call it ([`OpsAction::roles`]).
    pub action: OpsAction,
}

impl OpsRoute {
    /// The method of the route key.
    pub fn method(&self) -> &'static str {
        self.key.split_once(' ').map_or(self.key, |(method, _)| method)
    }

    /// The path of the route key (with its parameters, `{user}`).
    pub fn path(&self) -> &'static str {
        self.key.split_once(' ').map_or("", |(_, path)| path)
    }

    /// The route whose key is `key`.
    pub fn keyed(key: &str) -> Option<&'static OpsRoute> {
        OPS_ROUTES.iter().find(|route| route.key == key)
    }
}

/// The prefix of every route of the operators' API.
pub const OPS_PREFIX: &str = "/ops/v1";

const fn ops(key: &'static str, action: OpsAction) -> OpsRoute {
    OpsRoute { key, action }
}

/// Every route of the operators' API, one per [`OpsAction`].
pub const OPS_ROUTES: &[OpsRoute] = &[
    ops("GET /ops/v1/users/{user}", OpsAction::ReadUser),
    ops("GET /ops/v1/users/{user}/movements", OpsAction::ReadUserMovements),
    ops("GET /ops/v1/users/{user}/packets", OpsAction::ReadUserPackets),
    ops("GET /ops/v1/users/{user}/flags", OpsAction::ReadUserFlags),
    ops("GET /ops/v1/users/{user}/audit", OpsAction::ReadUserAudit),
    ops("POST /ops/v1/users/{user}/hold", OpsAction::PlaceHold),
    ops("POST /ops/v1/users/{user}/hold/lift", OpsAction::LiftHold),
    ops("GET /ops/v1/users/{user}/statements/{day}", OpsAction::ReadStatement),
    ops("GET /ops/v1/packets/{packet_id}", OpsAction::ReadPacket),
    ops("GET /ops/v1/packets/{packet_id}/sides", OpsAction::ReadPacketSides),
    ops("POST /ops/v1/packets/{packet_id}/release", OpsAction::ReleasePacket),
    ops("GET /ops/v1/holds", OpsAction::ListHolds),
    ops("POST /ops/v1/adjustments", OpsAction::ProposeAdjustment),
    ops("GET /ops/v1/adjustments/pending", OpsAction::ListPendingAdjustments),
    ops("GET /ops/v1/adjustments/{reference}", OpsAction::ReadAdjustment),
    ops("POST /ops/v1/adjustments/{reference}/approve", OpsAction::ApproveAdjustment),
    ops("POST /ops/v1/adjustments/{reference}/reject", OpsAction::RejectAdjustment),
    ops("POST /ops/v1/adjustments/{reference}/withdraw", OpsAction::WithdrawAdjustment),
    ops("GET /ops/v1/withdrawals/pending", OpsAction::ListPendingWithdrawals),
    ops("GET /ops/v1/withdrawals/{withdrawal_id}", OpsAction::ReadWithdrawal),
    ops("POST /ops/v1/withdrawals/{withdrawal_id}/resend", OpsAction::ResendWithdrawal),
    ops("GET /ops/v1/flags", OpsAction::ListFlags),
    ops("POST /ops/v1/flags/{flag_id}/assign", OpsAction::AssignFlag),
    ops("POST /ops/v1/flags/{flag_id}/resolve", OpsAction::ResolveFlag),
    ops("GET /ops/v1/audit/{day}", OpsAction::ReadAudit),
    ops("GET /ops/v1/reports/trial-balance/{day}", OpsAction::ReadTrialBalance),
    ops("GET /ops/v1/reports/hours/{day}", OpsAction::ReadBusinessHours),
    ops("POST /ops/v1/reconciliations", OpsAction::Reconcile),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_is_keyed_once_and_read_back_by_its_key() {
        for route in ROUTES {
            assert_eq!(Route::keyed(route.key), Some(route));
            assert_eq!(format!("{} {}", route.method(), route.path()), route.key);
            assert_eq!(ROUTES.iter().filter(|other| other.event == route.event).count(), 1, "{}", route.event);
        }
        assert_eq!(Route::keyed("GET /packets"), None);
        assert_eq!(GRAB.path(), "/packets/{packet_id}/grab");
    }

    #[test]
    fn every_operators_route_is_one_action_under_the_prefix() {
        for route in OPS_ROUTES {
            assert_eq!(OpsRoute::keyed(route.key), Some(route));
            assert!(route.path().starts_with(OPS_PREFIX), "{}", route.key);
            let actions = OPS_ROUTES.iter().filter(|other| other.action == route.action).count();
            assert_eq!(actions, 1, "{:?} is one route", route.action);
        }
    }
}
