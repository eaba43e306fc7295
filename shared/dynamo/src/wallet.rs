//! The wallet in the ledger: balances changed only together with a movement item, in one
//! transaction whose conditions make each movement happen once (see [`super::items`] for the
//! keys). Top-ups, the wallet page, and the credit and debit items other writes join.

use std::collections::HashMap;

use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::types::{AttributeValue, Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

use super::items::{
    topup_pk, wallet_pk, write_stamp, BalanceItem, MovementItem, NewMovement, TopupItem, BALANCE, MOVE_PREFIX, TOPUP,
};
use super::table::{from_item, to_item, unavailable, DynamoLedger};
use super::transaction::{Transaction, Write};
use red_packets_core::clock::{rfc3339, Millis};
use red_packets_core::domain::wallet::{MovementKind, TopUp, TopUpResult};
use red_packets_core::domain::{Cents, UserId};
use red_packets_core::ports::{StoreError, Wallets};

impl DynamoLedger {
    /// `movement` credited to its user's balance, as two transaction items: the movement only if
    /// new, the balance by `ADD` (created at 0), its count of movements with it.
    pub(super) fn credit(&self, movement: &MovementItem) -> [(Write, TransactWriteItem); 2] {
        [(Write::Movement, self.new_movement(movement)), self.balance_credit(&movement.user, movement.amount_cents)]
    }

    /// The change of `user`'s balance by a credit of `amount_cents`, as a transaction item:
    /// `ADD` (created at 0), its count of movements with it.
    pub(super) fn balance_credit(&self, user: &UserId, amount_cents: Cents) -> (Write, TransactWriteItem) {
        let balance = Update::builder()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(wallet_pk(user)))
            .key("sk", AttributeValue::S(BALANCE.into()))
            .update_expression("ADD balance_cents :amount, moves :one SET #user = :user")
            .expression_attribute_names("#user", "user")
            .expression_attribute_values(":one", AttributeValue::N("1".into()))
            .expression_attribute_values(":amount", AttributeValue::N(amount_cents.to_string()))
            .expression_attribute_values(":user", AttributeValue::S(user.to_string()))
            .build()
            .expect("credit update");
        (Write::Balance, TransactWriteItem::builder().update(balance).build())
    }

    /// `movement` (a send's) debited from its user's balance, as two transaction items: the
    /// balance change under the condition that the balance covers it (so it never goes below 0;
    /// a missing balance is 0), first, then the movement. A send's also names its packet as the
    /// user's latest send (`last_sent`).
    pub(super) fn debit(&self, movement: &MovementItem) -> [(Write, TransactWriteItem); 2] {
        let sent = movement.packet_id.as_ref().filter(|_| movement.kind == MovementKind::Send);
        let balance = Update::builder()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(wallet_pk(&movement.user)))
            .key("sk", AttributeValue::S(BALANCE.into()))
            .update_expression(match sent {
                Some(_) => "SET balance_cents = balance_cents - :amount, last_sent = :packet ADD moves :one",
                None => "SET balance_cents = balance_cents - :amount ADD moves :one",
            })
            .condition_expression("balance_cents >= :amount")
            .set_expression_attribute_values(Some(
                [
                    (":one".to_owned(), AttributeValue::N("1".into())),
                    (":amount".to_owned(), AttributeValue::N(movement.amount_cents.to_string())),
                ]
                .into_iter()
                .chain(sent.map(|id| (":packet".to_owned(), AttributeValue::S(id.to_string()))))
                .collect(),
            ))
            .build()
            .expect("debit update");
        [
            (Write::Balance, TransactWriteItem::builder().update(balance).build()),
            (Write::Movement, self.new_movement(movement)),
        ]
    }

    fn new_movement(&self, movement: &MovementItem) -> TransactWriteItem {
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(to_item(movement)))
            .condition_expression("attribute_not_exists(pk)")
            .build()
            .expect("movement put");
        TransactWriteItem::builder().put(put).build()
    }

    /// A query of `user`'s movements (`WALLET#<user>`, `MOVE#…`), oldest first.
    pub(super) fn movements_query(&self, user: &UserId) -> Result<QueryFluentBuilder, StoreError> {
        Ok(self
            .client()?
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :moves)")
            .expression_attribute_values(":pk", AttributeValue::S(wallet_pk(user)))
            .expression_attribute_values(":moves", AttributeValue::S(MOVE_PREFIX.into())))
    }

    /// `user`'s balance now (0 without a wallet item), strongly consistent.
    pub async fn balance(&self, user: &UserId) -> Result<Cents, StoreError> {
        Ok(self.balance_item(user).await?.map(|item| item.balance_cents).unwrap_or(0))
    }

    /// `user`'s balance item, strongly consistent; `None` before their first movement.
    pub(super) async fn balance_item(&self, user: &UserId) -> Result<Option<BalanceItem>, StoreError> {
        self.get(wallet_pk(user), BALANCE.into()).await
    }
}

/// A user's version: their balance item's count of movements and balance, which every movement
/// changes in the same write (none before the first), and its count of revoked grabs, which
/// each revoked grab's casualty changes in the same write. Every entry of the user's wallet and
/// history is one of those writes: a send (its debit), a grab recorded (its credit), a refund, a
/// top-up, a withdrawal, an adjustment, a revoked grab.
pub(super) fn version_of(balance: Option<&BalanceItem>) -> String {
    balance.map_or_else(
        || "none".to_owned(),
        |item| format!("{}|{}|{}", item.moves.unwrap_or(0), item.balance_cents, item.revoked.unwrap_or(0)),
    )
}

impl DynamoLedger {
    /// The change of `user`'s count of revoked grabs by one, as a transaction item beside the
    /// casualty's own (the balance item created without a balance, which reads as 0).
    pub(super) fn revoked_count(&self, user: &UserId) -> (Write, TransactWriteItem) {
        let balance = Update::builder()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(wallet_pk(user)))
            .key("sk", AttributeValue::S(BALANCE.into()))
            .update_expression("ADD revoked :one SET #user = :user")
            .expression_attribute_names("#user", "user")
            .expression_attribute_values(":one", AttributeValue::N("1".into()))
            .expression_attribute_values(":user", AttributeValue::S(user.to_string()))
            .build()
            .expect("revoked count update");
        (Write::Balance, TransactWriteItem::builder().update(balance).build())
    }
}

/// The wallet's cursor: the last movement's sort key.
pub(super) fn encode_cursor(key: &HashMap<String, AttributeValue>) -> Option<String> {
    let sk = key.get("sk")?.as_s().ok()?;
    Some(URL_SAFE_NO_PAD.encode(sk))
}

/// The cursor holds the last movement's sort key; its owner is the caller, never the cursor.
pub(super) fn decode_cursor(cursor: &str, owner: &UserId) -> Result<HashMap<String, AttributeValue>, StoreError> {
    let invalid = || StoreError::invalid("cursor", "cursor is not one this endpoint returned");
    let sk = URL_SAFE_NO_PAD.decode(cursor).ok().and_then(|bytes| String::from_utf8(bytes).ok()).ok_or_else(invalid)?;
    if !sk.starts_with(MOVE_PREFIX) || sk.len() > 1024 {
        return Err(invalid());
    }
    Ok(HashMap::from([
        ("pk".to_owned(), AttributeValue::S(wallet_pk(owner))),
        ("sk".to_owned(), AttributeValue::S(sk)),
    ]))
}

impl Wallets for DynamoLedger {
    /// Applies a top-up once per reference: one transaction writes the top-up item (only if
    /// its reference is new), its movement and the balance change. A reference applied before
    /// with the same user and amount changes nothing; with another it is
    /// [`StoreError::Invalid`] naming it.
    async fn top_up(&self, topup: &TopUp, now_ms: Millis) -> Result<TopUpResult, StoreError> {
        topup.validate_in(self.funds)?;
        let stamp = write_stamp();
        let record = Put::builder()
            .table_name(&self.table)
            .set_item(Some(to_item(&TopupItem {
                pk: topup_pk(&topup.reference),
                sk: TOPUP.into(),
                user: topup.user.clone(),
                amount_cents: topup.amount_cents,
                reference: topup.reference.clone(),
                at: rfc3339(now_ms),
                written_at_ms: Some(stamp),
            })))
            .condition_expression("attribute_not_exists(pk)")
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .expect("top-up put");
        let mut items = Transaction::default();
        items.push(Write::Topup, TransactWriteItem::builder().put(record).build());
        let movement = NewMovement {
            user: &topup.user,
            kind: MovementKind::Topup,
            amount_cents: topup.amount_cents,
            packet_id: None,
            reference: Some(&topup.reference),
            chat_id: None,
            at_ms: now_ms,
        };
        items.extend(self.credit(&MovementItem::new(movement, stamp)));
        let applied = match self.transact(items).await? {
            Ok(()) => true,
            Err(failed) => {
                let Some(earlier) = failed.refused_by(Write::Topup).and_then(|reason| reason.item()) else {
                    return Err(unavailable(failed.error));
                };
                let earlier: TopupItem = from_item(earlier.clone())?;
                topup.replays(&earlier.user, earlier.amount_cents)?;
                false
            }
        };
        Ok(TopUpResult { applied, balance_cents: self.balance(&topup.user).await? })
    }
}
