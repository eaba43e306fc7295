//! Money: integer cents, everywhere.

/// An amount of money in integer cents (分). Money never touches floating point.
pub type Cents = u64;
