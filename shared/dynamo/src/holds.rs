//! Account holds in the ledger ([`Holds`]): placing and lifting each one transaction of the
//! hold's item (its condition makes the step happen once), the holds' version (plus one) and
//! the audit trail's entry. Readers ask the version, one strongly consistent item, and query
//! the holds' partition only when it moved.

use aws_sdk_dynamodb::types::{
    AttributeValue, Delete, Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};

use super::items::{hold_sk, HoldItem, HOLDS_PK, HOLDS_VERSION, HOLD_PREFIX};
use super::table::{from_item, s, to_item, unavailable, DynamoLedger};
use super::transaction::{Transaction, Write};
use red_packets_core::clock::{rfc3339, Millis};
use red_packets_core::domain::risk::{Hold, HoldRequest, HoldResult, LiftRequest};
use red_packets_core::ports::{Holds, StoreError};

impl DynamoLedger {
    /// The holds' version, plus one.
    fn bump_holds_version(&self) -> TransactWriteItem {
        let update = Update::builder()
            .table_name(&self.table)
            .key("pk", s(HOLDS_PK))
            .key("sk", s(HOLDS_VERSION))
            .update_expression("ADD version :one")
            .expression_attribute_values(":one", AttributeValue::N("1".into()))
            .build()
            .expect("holds version update");
        TransactWriteItem::builder().update(update).build()
    }
}

impl Holds for DynamoLedger {
    /// One transaction: the hold's item (unless a hold of its scope is in force, which is then
    /// handed back unchanged), the version and the audit entry.
    async fn place_hold(&self, request: &HoldRequest, now_ms: Millis) -> Result<HoldResult, StoreError> {
        request.validate(now_ms)?;
        let hold = request.hold(rfc3339(now_ms));
        // Placed unless the same hold is in force: the same scope and the same expiry.
        let same_expiry = match &hold.expires_at {
            Some(_) => "attribute_not_exists(expires_at) OR expires_at <> :expires",
            None => "attribute_exists(expires_at)",
        };
        let mut put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(to_item(&HoldItem::new(&hold))))
            .condition_expression(format!("attribute_not_exists(pk) OR #scope <> :scope OR {same_expiry}"))
            .expression_attribute_names("#scope", "scope")
            .expression_attribute_values(":scope", s(hold.scope.as_str()));
        if let Some(expires) = &hold.expires_at {
            put = put.expression_attribute_values(":expires", s(expires));
        }
        let put = put
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .expect("hold put");
        let mut items = Transaction::default();
        items.push(Write::Hold, TransactWriteItem::builder().put(put).build());
        items.push(Write::HoldsVersion, self.bump_holds_version());
        items.push(Write::Audit, self.audit_entry(hold.placed_entry(), now_ms));
        match self.transact(items).await? {
            Ok(()) => Ok(HoldResult { hold: Some(hold), changed: true }),
            Err(failed) => {
                let Some(reason) = failed.refused_by(Write::Hold) else { return Err(unavailable(failed.error)) };
                let current: Option<HoldItem> = reason.item().cloned().map(from_item).transpose()?;
                Ok(HoldResult { hold: current.map(|item| item.hold), changed: false })
            }
        }
    }

    /// One transaction: the hold's item deleted (only while in force), the version and the
    /// audit entry. Lifting a user not held changes nothing.
    async fn lift_hold(&self, request: &LiftRequest, now_ms: Millis) -> Result<HoldResult, StoreError> {
        request.validate()?;
        let delete = Delete::builder()
            .table_name(&self.table)
            .key("pk", s(HOLDS_PK))
            .key("sk", s(&hold_sk(&request.user)))
            .condition_expression("attribute_exists(pk)")
            .build()
            .expect("hold delete");
        let mut items = Transaction::default();
        items.push(Write::Hold, TransactWriteItem::builder().delete(delete).build());
        items.push(Write::HoldsVersion, self.bump_holds_version());
        items.push(Write::Audit, self.audit_entry(request.lifted_entry(rfc3339(now_ms)), now_ms));
        match self.transact(items).await? {
            Ok(()) => Ok(HoldResult { hold: None, changed: true }),
            Err(failed) if failed.refused_by(Write::Hold).is_some() => Ok(HoldResult { hold: None, changed: false }),
            Err(failed) => Err(unavailable(failed.error)),
        }
    }

    async fn holds_version(&self) -> Result<u64, StoreError> {
        #[derive(serde::Deserialize)]
        struct Version {
            version: u64,
        }
        Ok(self.get::<Version>(HOLDS_PK.into(), HOLDS_VERSION.into()).await?.map_or(0, |item| item.version))
    }

    async fn holds(&self) -> Result<Vec<Hold>, StoreError> {
        let mut pages = self
            .client()?
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :held)")
            .expression_attribute_values(":pk", s(HOLDS_PK))
            .expression_attribute_values(":held", s(HOLD_PREFIX))
            .consistent_read(true)
            .into_paginator()
            .items()
            .send();
        let mut holds = Vec::new();
        while let Some(item) = pages.next().await {
            holds.push(from_item::<HoldItem>(item.map_err(unavailable)?)?.hold);
        }
        Ok(holds)
    }
}
