//! What a write costs DynamoDB, and a pace that keeps settle's writes to one partition key
//! under a ceiling.
//!
//! DynamoDB serves at most 1,000 write units per second to one partition (and 3,000 read units),
//! whatever the table's mode: "each partition on the table can serve up to 3,000 read request
//! units or 1,000 write request units, or a linear combination of both"
//! (<https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html>).
//! Every claim of a packet's shares (`SHARE#<seq>`), and without the wallet every grab item,
//! shares the packet's partition key `PKT#<id>`: a 100,000-share packet settled at full speed
//! would pass that ceiling and be throttled. [`PartitionPace`] holds settle's writes to any one
//! partition key under `SETTLE_PARTITION_WRITE_UNITS` per second as DynamoDB sees them
//! ([`red_packets_core::settings::SETTLE_PARTITION_WRITE_UNITS`], 900: the ceiling less a tenth), by
//! letting go ten elevenths of it a second: a write let go at a second's end leaves in the next. The writes it leaves out (the
//! packet's record, a cancel, the finalisation's transaction, a casualty for each grab a
//! failover lost, the SDK's own retries) have no reserved share. The pace counts a write when it
//! is let go, which is when the request leaves but for the client's scheduling.
//!
//! The ceiling is what DynamoDB serves a partition at best. A partition split, a new table still
//! below its warm throughput, or the SDK's retries beside settle's writes can throttle a key
//! below it; then [`PartitionPace::throttled`] halves that key's share at once, and the share
//! grows back to the whole ceiling over [`RECOVERY`] without another throttle: the other
//! keys keep their pace.
//!
//! A write unit is one standard write of up to 1 KB; a transactional write costs two
//! (<https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html>).
//! [`write_units`] sizes an item as DynamoDB does: its attribute names' and values' lengths
//! (<https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html>).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::types::AttributeValue;

/// The pace's slices of a second: writes go out evenly, a slice's share at a time.
const SLICES_PER_SECOND: u64 = 10;

/// The slices whose shares add up to the ceiling: a second's ten and one more. A write is let go
/// in its slice but reaches DynamoDB a little later (the client's scheduling, the connection), so
/// the writes DynamoDB sees in one calendar second were let go in up to eleven slices: with each
/// slice an eleventh of the ceiling, no calendar second reaches DynamoDB with more than the ceiling.
const SLICES_PER_CEILING: u32 = SLICES_PER_SECOND as u32 + 1;

/// How long a throttled partition key's share takes to grow back to the whole ceiling.
pub const RECOVERY: Duration = Duration::from_secs(10);

/// Bytes in one write unit.
const WRITE_UNIT_BYTES: usize = 1024;

/// The write units one standard (not transactional) write of `item` costs: its size rounded up
/// to whole kilobytes, at least one.
pub fn write_units(item: &HashMap<String, AttributeValue>) -> u32 {
    u32::try_from(item_size(item).div_ceil(WRITE_UNIT_BYTES).max(1)).unwrap_or(u32::MAX)
}

/// An item's size in bytes as DynamoDB counts it: its attribute names and values.
pub fn item_size(item: &HashMap<String, AttributeValue>) -> usize {
    item.iter().map(|(name, value)| name.len() + value_size(value)).sum()
}

/// A value's size as DynamoDB counts it: strings and binaries their length, numbers one byte
/// per two significant digits plus one, a map or list 3 bytes plus one per element and its
/// elements (a map's names too), booleans and nulls one byte.
fn value_size(value: &AttributeValue) -> usize {
    let number = |text: &str| {
        let digits = text.trim_start_matches('-').replace('.', "");
        digits.trim_start_matches('0').trim_end_matches('0').len().div_ceil(2) + 1
    };
    match value {
        AttributeValue::S(text) => text.len(),
        AttributeValue::N(text) => number(text),
        AttributeValue::B(blob) => blob.as_ref().len(),
        AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
        AttributeValue::Ss(texts) => texts.iter().map(String::len).sum(),
        AttributeValue::Ns(numbers) => numbers.iter().map(|text| number(text)).sum(),
        AttributeValue::Bs(blobs) => blobs.iter().map(|blob| blob.as_ref().len()).sum(),
        AttributeValue::M(map) => 3 + map.iter().map(|(name, value)| 1 + name.len() + value_size(value)).sum::<usize>(),
        AttributeValue::L(list) => 3 + list.iter().map(|value| 1 + value_size(value)).sum::<usize>(),
        _ => 0,
    }
}

/// A ceiling on the write units sent to each partition key per second, shared by every write
/// of one process (one settle invocation's packets in flight): a write waits for the slice of a
/// second with room for it.
#[derive(Debug)]
pub struct PartitionPace {
    units_per_slice: u32,
    /// Per partition key: the slice it last wrote in, and the units spent in it.
    slices: Mutex<HashMap<String, (u64, u32)>>,
    /// Per throttled partition key: its share of a slice just after its last throttle, and
    /// that throttle's slice.
    throttled: Mutex<HashMap<String, (u32, u64)>>,
}

/// The slice of a second `now` falls in.
fn slice_of(now: Duration) -> u64 {
    u64::try_from(now.as_millis()).unwrap_or(u64::MAX) / (1000 / SLICES_PER_SECOND)
}

fn now() -> Duration {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default()
}

impl PartitionPace {
    /// A pace of at most `ceiling` write units per partition key in any calendar second at
    /// DynamoDB (each slice an eleventh of it, whole; at least one unit a slice).
    pub fn new(ceiling: u32) -> Self {
        let units_per_slice = (ceiling / SLICES_PER_CEILING).max(1);
        PartitionPace { units_per_slice, slices: Mutex::new(HashMap::new()), throttled: Mutex::new(HashMap::new()) }
    }

    /// DynamoDB throttled a write to `partition`: its share halves from what it is now (a unit
    /// a slice at least), and grows back linearly over [`RECOVERY`].
    pub fn throttled(&self, partition: &str) {
        let slice = slice_of(now());
        let halved = (self.share(partition, slice) / 2).max(1);
        let mut throttled = self.throttled.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if throttled.len() > 4096 {
            let recovered = slice.saturating_sub(recovery_slices());
            throttled.retain(|_, (_, at)| *at > recovered);
        }
        throttled.insert(partition.to_owned(), (halved, slice));
    }

    /// `partition`'s share of slice `slice`: the ceiling's eleventh, less while it recovers
    /// from a throttle.
    pub fn share(&self, partition: &str, slice: u64) -> u32 {
        let throttled = self.throttled.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let Some(&(halved, at)) = throttled.get(partition) else { return self.units_per_slice };
        let elapsed = slice.saturating_sub(at).min(recovery_slices());
        let regained = u64::from(self.units_per_slice.saturating_sub(halved)) * elapsed / recovery_slices();
        halved + u32::try_from(regained).unwrap_or(u32::MAX)
    }

    /// What the pace lets go in one second, steadily: ten slices' shares (ten elevenths of the
    /// ceiling, rounded down to whole slices).
    pub fn units_per_second(&self) -> u32 {
        self.units_per_slice * SLICES_PER_SECOND as u32
    }

    /// Waits until `units` more fit under the ceiling of `partition` in the current slice of a
    /// second, and spends them. A write larger than a slice's share goes into an empty slice and
    /// its excess is owed by the slices after it, so no eleven slices in a row spend more than
    /// the ceiling, except by one such write's excess.
    pub async fn take(&self, partition: &str, units: u32) {
        loop {
            let now = now();
            let slice_ms = 1000 / SLICES_PER_SECOND;
            let slice = slice_of(now);
            let share = self.share(partition, slice);
            {
                let mut slices = self.slices.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                if slices.len() > 4096 {
                    slices.retain(|_, (last, spent)| *last >= slice || *spent > self.units_per_slice);
                }
                let (last, spent) = slices.entry(partition.to_owned()).or_insert((slice, 0));
                // What earlier slices spent beyond their share, less what the slices since repaid.
                let repaid = u64::from(share).saturating_mul(slice.saturating_sub(*last));
                let owed = u32::try_from(u64::from(*spent).saturating_sub(repaid)).unwrap_or(u32::MAX);
                if owed == 0 || owed + units <= share {
                    (*last, *spent) = (slice, owed + units);
                    return;
                }
            }
            let next = Duration::from_millis((slice + 1) * slice_ms);
            tokio::time::sleep(next.saturating_sub(now)).await;
        }
    }
}

/// [`RECOVERY`] in slices.
fn recovery_slices() -> u64 {
    RECOVERY.as_secs() * SLICES_PER_SECOND
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_item_costs_a_unit_per_started_kilobyte() {
        let small = HashMap::from([
            ("pk".to_owned(), AttributeValue::S("PKT#0123456789abcdef0123456789abcdef".into())),
            ("seq".to_owned(), AttributeValue::N("12345".into())),
        ]);
        assert_eq!(write_units(&small), 1);
        let large = HashMap::from([("greeting".to_owned(), AttributeValue::S("x".repeat(1_100)))]);
        assert_eq!(write_units(&large), 2);
        assert_eq!(value_size(&AttributeValue::N("12345".into())), 4, "5 digits: 3 bytes and 1");
        let map = AttributeValue::M(HashMap::from([("a".to_owned(), AttributeValue::Bool(true))]));
        assert_eq!(value_size(&map), 3 + 1 + 1 + 1);
    }

    #[tokio::test]
    async fn a_key_gets_a_slice_of_the_ceiling_at_a_time() {
        let pace = PartitionPace::new(110);
        assert_eq!(pace.units_per_second(), 100, "ten slices of an eleventh of 110");
        let started = std::time::Instant::now();
        for _ in 0..25 {
            pace.take("PKT#a", 10).await;
            pace.take("PKT#b", 10).await;
        }
        // 25 slices of 100 ms on each key, side by side: the first may begin late in its slice.
        assert!(started.elapsed() >= Duration::from_millis(2_300), "{:?}", started.elapsed());
    }

    #[test]
    fn a_throttled_key_halves_its_share_and_grows_it_back() {
        let pace = PartitionPace::new(1_100);
        let at = slice_of(now());
        assert_eq!(pace.share("PKT#hot", at), 100);
        pace.throttled("PKT#hot");
        let halved = pace.share("PKT#hot", at);
        assert!((50..=55).contains(&halved), "halved at once: {halved}");
        pace.throttled("PKT#hot");
        assert!(pace.share("PKT#hot", at) <= 28, "halved again on a second throttle");
        assert_eq!(pace.share("PKT#cold", at), 100, "another key keeps its pace");
        let later = slice_of(now()) + recovery_slices() / 2;
        assert!((55..=70).contains(&pace.share("PKT#hot", later)), "half way back: {}", pace.share("PKT#hot", later));
        assert_eq!(pace.share("PKT#hot", slice_of(now()) + recovery_slices()), 100, "whole again after RECOVERY");
    }

    #[tokio::test]
    async fn a_throttled_key_is_let_go_more_slowly() {
        let pace = PartitionPace::new(110);
        for _ in 0..8 {
            pace.throttled("PKT#a");
        }
        let started = std::time::Instant::now();
        for _ in 0..5 {
            pace.take("PKT#a", 2).await;
        }
        // A unit a slice now: five writes of two units span at least eight slices.
        assert!(started.elapsed() >= Duration::from_millis(700), "{:?}", started.elapsed());
    }
}
