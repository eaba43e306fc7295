//! Money: integer minor units of the stack's one currency, everywhere.

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

/// An amount of money in integer minor units of the stack's currency (分 of CNY, yen of JPY, fils
/// of BHD). The name says cents, as the API's fields do; the [`Currency`] says what a unit is.
/// Money never touches floating point.
pub type Cents = u64;

/// The stack's currency (`CURRENCY`, default `CNY`): an ISO 4217 code with the exponent of its
/// minor unit, from the `iso_currency` crate's table. Every amount of the ledger is in its minor
/// units, and every answer, event, report and statement that carries an amount names it, as
/// `{"code": "CNY", "exponent": 2}`: 1234 is 12.34 CNY, or 1,234 JPY.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Currency(iso_currency::Currency);

impl Currency {
    /// The currency of an ISO 4217 code (`CNY`, `JPY`, …); `None` for an unknown code or one
    /// without a minor unit of its own (gold, SDRs, testing codes).
    pub fn parse(code: &str) -> Option<Self> {
        let currency = iso_currency::Currency::from_code(code)?;
        currency.exponent()?;
        Some(Currency(currency))
    }

    /// The ISO 4217 code.
    pub fn code(self) -> &'static str {
        self.0.code()
    }

    /// How many decimal places a major unit has: 2 for CNY, 0 for JPY, 3 for BHD.
    pub fn exponent(self) -> u16 {
        self.0.exponent().unwrap_or(0)
    }
}

impl Default for Currency {
    fn default() -> Self {
        Currency(iso_currency::Currency::CNY)
    }
}

impl Serialize for Currency {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut currency = serializer.serialize_struct("Currency", 2)?;
        currency.serialize_field("code", self.code())?;
        currency.serialize_field("exponent", &self.exponent())?;
        currency.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_currency_is_its_code_and_the_exponent_of_its_minor_unit() {
        let exponent = |code| Currency::parse(code).map(Currency::exponent);
        assert_eq!(
            [exponent("CNY"), exponent("JPY"), exponent("BHD"), exponent("USD")],
            [Some(2), Some(0), Some(3), Some(2)]
        );
        assert_eq!(Currency::default().code(), "CNY");
        assert_eq!(Currency::parse("XAU"), None, "gold has no minor unit");
        assert_eq!(Currency::parse("ABC"), None);
        assert_eq!(Currency::parse("cny"), None, "codes are upper case");
        let json = serde_json::to_value(Currency::parse("JPY").unwrap()).unwrap();
        assert_eq!(json, serde_json::json!({ "code": "JPY", "exponent": 0 }));
    }
}
