//! Splitting a packet's total into its shares, in integer cents.
//!
//! Every rule gives exactly `count` shares, each at least one cent, summing exactly to the total.
//! Lucky shares are drawn from a ChaCha RNG seeded with 256 bits stored with the packet, so the
//! shares of any packet can be recomputed from its record (audit, restore). The draws use the
//! sampling written here ([`uniform`], Floyd's distinct sample), not `rand`'s distributions,
//! which `rand` does not promise to keep across versions: the ChaCha20 stream is a published
//! cipher, and the test vectors below pin the shares of fixed seeds for every rule.

use std::collections::BTreeSet;

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde::{Deserialize, Serialize};

use super::money::Cents;

/// How a lucky packet is cut into shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SplitRule {
    /// The seeds' rule: with `m` cents and `n` shares left, a share is uniform in
    /// `[1, 2 * floor(m / n) - 1]`; the last share takes the rest.
    #[default]
    DoubleAverage,
    /// `count - 1` distinct cut points uniform in `[1, total - 1]`; the shares are the gaps.
    LineCut,
}

impl SplitRule {
    /// The rule's name in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            SplitRule::DoubleAverage => "double_average",
            SplitRule::LineCut => "line_cut",
        }
    }

    /// The rule named `name` in the API, if any.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "double_average" => Some(SplitRule::DoubleAverage),
            "line_cut" => Some(SplitRule::LineCut),
            _ => None,
        }
    }
}

/// The 256 random bits a packet's lucky shares are drawn from.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Seed(pub [u8; 32]);

impl Seed {
    /// A fresh seed from the operating system's RNG.
    pub fn random() -> Self {
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        Seed(bytes)
    }

    /// The seed as 64 lowercase hex digits, the form stored with the packet.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// Reads the stored form back.
    pub fn from_hex(text: &str) -> Option<Self> {
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(text, &mut bytes).ok()?;
        Some(Seed(bytes))
    }

    fn rng(&self) -> ChaCha20Rng {
        ChaCha20Rng::from_seed(self.0)
    }
}

impl std::fmt::Debug for Seed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Seed({})", self.to_hex())
    }
}

/// Splits `total` into `count` equal shares. The caller guarantees `total % count == 0`.
pub fn fixed(total: Cents, count: u32) -> Vec<Cents> {
    vec![total / Cents::from(count); count as usize]
}

/// Splits `total` into `count` lucky shares by `rule`, drawn from `seed`.
///
/// Requires `count >= 1` and `total >= count` (validation guarantees both).
pub fn lucky(rule: SplitRule, total: Cents, count: u32, seed: &Seed) -> Vec<Cents> {
    debug_assert!(count >= 1 && total >= Cents::from(count));
    let mut rng = seed.rng();
    match rule {
        SplitRule::DoubleAverage => double_average(total, count, &mut rng),
        SplitRule::LineCut => line_cut(total, count, &mut rng),
    }
}

/// The largest share the double-average rule may draw with `remaining` cents and `left` shares.
pub fn double_average_bound(remaining: Cents, left: u32) -> Cents {
    2 * (remaining / Cents::from(left)) - 1
}

/// A uniform draw from `low..=high` (`low <= high < u64::MAX`): Lemire's multiply-and-reject
/// on the RNG's 64-bit outputs, unbiased.
fn uniform(rng: &mut impl RngCore, low: u64, high: u64) -> u64 {
    let range = high - low + 1;
    let threshold = range.wrapping_neg() % range;
    loop {
        let product = u128::from(rng.next_u64()) * u128::from(range);
        if (product as u64) >= threshold {
            return low + (product >> 64) as u64;
        }
    }
}

fn double_average(total: Cents, count: u32, rng: &mut impl RngCore) -> Vec<Cents> {
    let mut shares = Vec::with_capacity(count as usize);
    let mut remaining = total;
    for left in (2..=count).rev() {
        let share = uniform(rng, 1, double_average_bound(remaining, left));
        shares.push(share);
        remaining -= share;
    }
    shares.push(remaining);
    shares
}

/// `wanted` distinct values uniform in `1..=last`, ascending (Floyd's algorithm: `wanted` draws).
fn distinct_cuts(rng: &mut impl RngCore, last: u64, wanted: u64) -> BTreeSet<u64> {
    let mut cuts = BTreeSet::new();
    for upper in (last - wanted + 1)..=last {
        let cut = uniform(rng, 1, upper);
        if !cuts.insert(cut) {
            cuts.insert(upper);
        }
    }
    cuts
}

fn line_cut(total: Cents, count: u32, rng: &mut impl RngCore) -> Vec<Cents> {
    let cuts = distinct_cuts(rng, total - 1, u64::from(count) - 1);
    let mut shares = Vec::with_capacity(count as usize);
    let mut previous = 0;
    for cut in cuts.into_iter().chain(std::iter::once(total)) {
        shares.push(cut - previous);
        previous = cut;
    }
    shares
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn seed_from(n: u64) -> Seed {
        let mut bytes = [0u8; 32];
        bytes[..8].copy_from_slice(&n.to_le_bytes());
        Seed(bytes)
    }

    fn rule() -> impl Strategy<Value = SplitRule> {
        prop_oneof![Just(SplitRule::DoubleAverage), Just(SplitRule::LineCut)]
    }

    fn total_and_count() -> impl Strategy<Value = (Cents, u32)> {
        (1u32..=200).prop_flat_map(|count| (Cents::from(count)..=2_000_000, Just(count)))
    }

    proptest! {
        #[test]
        fn lucky_shares_are_exact_positive_and_counted(
            rule in rule(), (total, count) in total_and_count(), seed in any::<[u8; 32]>()
        ) {
            let shares = lucky(rule, total, count, &Seed(seed));
            prop_assert_eq!(shares.len(), count as usize);
            prop_assert_eq!(shares.iter().sum::<Cents>(), total);
            prop_assert!(shares.iter().all(|&s| s >= 1));
        }

        #[test]
        fn every_double_average_draw_is_within_its_bound(
            (total, count) in total_and_count(), seed in any::<[u8; 32]>()
        ) {
            let shares = lucky(SplitRule::DoubleAverage, total, count, &Seed(seed));
            let mut remaining = total;
            for (position, &share) in shares.iter().enumerate() {
                let left = count - position as u32;
                if left > 1 {
                    prop_assert!(share <= double_average_bound(remaining, left),
                        "share {} at position {} over bound {}", share, position,
                        double_average_bound(remaining, left));
                } else {
                    prop_assert_eq!(share, remaining);
                }
                remaining -= share;
            }
        }

        #[test]
        fn the_same_seed_gives_the_same_shares(
            rule in rule(), (total, count) in total_and_count(), seed in any::<[u8; 32]>()
        ) {
            prop_assert_eq!(lucky(rule, total, count, &Seed(seed)), lucky(rule, total, count, &Seed(seed)));
        }

        #[test]
        fn fixed_shares_are_equal_and_exact(count in 1u32..=100, each in 1u64..=10_000) {
            let shares = fixed(each * Cents::from(count), count);
            prop_assert_eq!(shares.len(), count as usize);
            prop_assert!(shares.iter().all(|&s| s == each));
        }
    }

    /// The shares of fixed seeds, pinned: a change to the ChaCha stream or to the sampling here
    /// would change the shares of every packet ever sent, and restore would hand out wrong ones.
    #[test]
    fn test_vectors_pin_the_shares_of_fixed_seeds() {
        let vectors: [(SplitRule, Cents, u32, u64, &[Cents]); 4] = [
            (SplitRule::DoubleAverage, 10_000, 10, 1, &[1149, 1024, 654, 1515, 1130, 1662, 1210, 831, 18, 807]),
            (SplitRule::DoubleAverage, 20_000, 7, 2024, &[5347, 4726, 1571, 3790, 89, 2662, 1815]),
            (SplitRule::LineCut, 10_000, 10, 1, &[209, 3132, 1864, 535, 248, 1405, 139, 920, 730, 818]),
            (SplitRule::LineCut, 20_000, 7, 2024, &[579, 7333, 3983, 6248, 568, 639, 650]),
        ];
        for (rule, total, count, seed, expected) in vectors {
            assert_eq!(lucky(rule, total, count, &seed_from(seed)), expected, "{rule:?} {total}/{count} seed {seed}");
        }
        assert_eq!(fixed(600, 3), vec![200, 200, 200]);
    }

    #[test]
    fn seed_round_trips_through_hex() {
        let seed = Seed::random();
        assert_eq!(Seed::from_hex(&seed.to_hex()), Some(seed));
        assert_eq!(Seed::from_hex("zz"), None);
    }

    #[test]
    fn one_share_takes_everything_and_minimal_totals_give_one_cent_each() {
        for rule in [SplitRule::DoubleAverage, SplitRule::LineCut] {
            assert_eq!(lucky(rule, 777, 1, &seed_from(1)), vec![777]);
            assert_eq!(lucky(rule, 5, 5, &seed_from(2)), vec![1; 5]);
        }
    }

    /// Every position has the same expectation: over 100,000 packets from fixed seeds the mean
    /// share at each position is within 2% of total / count, for both lucky rules.
    #[test]
    fn every_position_has_the_same_mean_share() {
        const PACKETS: u64 = 100_000;
        for rule in [SplitRule::DoubleAverage, SplitRule::LineCut] {
            for (total, count) in [(10_000u64, 10u32), (20_000, 100), (1_000, 7)] {
                let mut sums = vec![0u64; count as usize];
                for n in 0..PACKETS {
                    for (position, share) in lucky(rule, total, count, &seed_from(n)).into_iter().enumerate() {
                        sums[position] += share;
                    }
                }
                let expected = total as f64 / f64::from(count);
                for (position, sum) in sums.iter().enumerate() {
                    let mean = *sum as f64 / PACKETS as f64;
                    let drift = (mean - expected).abs() / expected;
                    assert!(
                        drift <= 0.02,
                        "{rule:?} {total}/{count}: position {position} mean {mean:.2} vs {expected:.2}"
                    );
                }
            }
        }
    }
}
