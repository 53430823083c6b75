//! Exact money: [`Money`], an amount of US dollars in integer pico-dollars.
//!
//! The bottom of the vocabulary: it depends on nothing else in the crate, so the chat
//! shape, the error taxonomy and the attempt trail can all carry amounts. Prices, the
//! price table and budget arithmetic are `cost`'s (which re-exports [`Money`]).

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

use serde::{Deserialize, Serialize, Serializer};

/// An exact amount of US dollars, in pico-dollars (10⁻¹² USD).
///
/// A price of `p` micro-dollars per million tokens costs exactly `p` pico-dollars per
/// token, so every cost is an integer and sums never drift. An `i64` holds ±$9.2 million.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
pub struct Money(i64);

const PICOS_PER_USD: f64 = 1e12;

impl Money {
    /// Zero dollars.
    pub const ZERO: Money = Money(0);

    /// From pico-dollars.
    #[must_use]
    pub const fn from_picos(picos: i64) -> Self {
        Self(picos)
    }

    /// The amount in pico-dollars.
    #[must_use]
    pub const fn picos(self) -> i64 {
        self.0
    }

    /// From a dollar amount, rounded to the nearest pico-dollar (config and reports).
    #[must_use]
    #[allow(clippy::cast_possible_truncation)] // saturating float-to-int is the intent
    pub fn from_usd(usd: f64) -> Self {
        Self((usd * PICOS_PER_USD).round() as i64)
    }

    /// The nearest `f64` dollar amount (for display and JSON only; never summed).
    #[must_use]
    #[allow(clippy::cast_precision_loss)]
    pub fn to_usd(self) -> f64 {
        self.0 as f64 / PICOS_PER_USD
    }

    /// `self - other`, never below zero.
    #[must_use]
    pub fn saturating_sub(self, other: Money) -> Money {
        Money(self.0.saturating_sub(other.0).max(0))
    }
}

impl Add for Money {
    type Output = Money;
    fn add(self, rhs: Money) -> Money {
        Money(self.0.saturating_add(rhs.0))
    }
}

impl AddAssign for Money {
    fn add_assign(&mut self, rhs: Money) {
        *self = *self + rhs;
    }
}

impl Sub for Money {
    type Output = Money;
    fn sub(self, rhs: Money) -> Money {
        Money(self.0.saturating_sub(rhs.0))
    }
}

impl std::iter::Sum for Money {
    fn sum<I: Iterator<Item = Money>>(iter: I) -> Money {
        iter.fold(Money::ZERO, Add::add)
    }
}

impl fmt::Display for Money {
    /// `$` and the exact decimal amount, trailing zeros trimmed (`$0.0004`, `$12`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_amount(f, "$")
    }
}

/// [`Money::decimal`]: the amount without the `$`.
#[derive(Debug, Clone, Copy)]
pub struct Decimal(Money);

impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.write_amount(f, "")
    }
}

impl Money {
    /// The exact decimal amount without the `$`, trailing zeros trimmed (`0.0004`, `12`),
    /// formatted without allocating.
    #[must_use]
    pub fn decimal(self) -> Decimal {
        Decimal(self)
    }

    fn write_amount(self, f: &mut fmt::Formatter<'_>, unit: &str) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        let whole = abs / 1_000_000_000_000;
        let mut frac = abs % 1_000_000_000_000;
        if frac == 0 {
            return write!(f, "{sign}{unit}{whole}");
        }
        let mut width = 12;
        while frac % 10 == 0 {
            frac /= 10;
            width -= 1;
        }
        write!(f, "{sign}{unit}{whole}.{frac:0width$}")
    }
}

impl Serialize for Money {
    /// Serialized as a dollar number (reports, logs); the exact value is `picos()`.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.to_usd())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn money_prints_exactly_with_trailing_zeros_trimmed() {
        let cases = [
            (0, "$0", "0"),
            (12_000_000_000_000, "$12", "12"),
            (400_000_000, "$0.0004", "0.0004"),
            (1, "$0.000000000001", "0.000000000001"),
            (1_500_000_000_010, "$1.50000000001", "1.50000000001"),
            (-3_500_000_000_000, "-$3.5", "-3.5"),
        ];
        for (picos, dollars, decimal) in cases {
            let m = Money::from_picos(picos);
            assert_eq!(m.to_string(), dollars, "{picos}");
            assert_eq!(m.decimal().to_string(), decimal, "{picos}");
        }
    }
}
