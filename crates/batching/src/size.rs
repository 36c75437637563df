//! The knob type every batching point is configured with: `auto` (the controller chooses) or a
//! fixed positive size.
//!
//! It parses from the command line (`"auto"` or a whole number), prints back the same way, and
//! travels through JSON as the string `"auto"` or as a plain number, so a result written with a
//! fixed size reads exactly as it did before the knob could be `auto`.

use std::fmt;
use std::num::NonZeroU32;
use std::str::FromStr;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use thiserror::Error;

use crate::BATCH_SIZE_MAX;

/// A batch-size knob: chosen online by the controller, or fixed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum BatchSize {
    /// The engine's controller chooses the size while the engine runs.
    #[default]
    Auto,
    /// This size, always.
    Fixed(NonZeroU32),
}

/// Why a string or number is not a [`BatchSize`].
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("`{given}` is not a batch size: expected `auto` or a whole number from 1 to {BATCH_SIZE_MAX}")]
pub struct BatchSizeError {
    /// What was given, as text.
    pub given: String,
}

impl BatchSize {
    /// A fixed size; `None` for 0 or above [`BATCH_SIZE_MAX`].
    pub fn fixed(size: u32) -> Option<Self> {
        NonZeroU32::new(size).filter(|size| size.get() <= BATCH_SIZE_MAX).map(BatchSize::Fixed)
    }

    /// The fixed size, or `None` for `auto`.
    pub fn get(self) -> Option<u32> {
        match self {
            BatchSize::Auto => None,
            BatchSize::Fixed(size) => Some(size.get()),
        }
    }

    /// The fixed size, or `auto_start` for `auto` (where the controller starts).
    pub fn or(self, auto_start: u32) -> u32 {
        self.get().unwrap_or(auto_start)
    }

    pub fn is_auto(self) -> bool {
        self == BatchSize::Auto
    }
}

impl fmt::Display for BatchSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BatchSize::Auto => f.write_str("auto"),
            BatchSize::Fixed(size) => write!(f, "{size}"),
        }
    }
}

impl FromStr for BatchSize {
    type Err = BatchSizeError;

    /// `auto` (any case, surrounding spaces ignored) or a whole number in `1..=BATCH_SIZE_MAX`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let trimmed = text.trim();
        if trimmed.eq_ignore_ascii_case("auto") {
            return Ok(BatchSize::Auto);
        }
        let error = || BatchSizeError { given: text.to_owned() };
        // Digits only: `+5`, `1e3` and `0x10` are refused rather than guessed at.
        if trimmed.is_empty() || !trimmed.bytes().all(|b| b.is_ascii_digit()) {
            return Err(error());
        }
        trimmed.parse::<u32>().ok().and_then(BatchSize::fixed).ok_or_else(error)
    }
}

impl From<NonZeroU32> for BatchSize {
    fn from(size: NonZeroU32) -> Self {
        BatchSize::Fixed(size)
    }
}

impl Serialize for BatchSize {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            BatchSize::Auto => serializer.serialize_str("auto"),
            BatchSize::Fixed(size) => serializer.serialize_u32(size.get()),
        }
    }
}

impl<'de> Deserialize<'de> for BatchSize {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct BatchSizeVisitor;

        impl Visitor<'_> for BatchSizeVisitor {
            type Value = BatchSize;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "\"auto\" or a whole number from 1 to {BATCH_SIZE_MAX}")
            }

            fn visit_u64<E: de::Error>(self, value: u64) -> Result<BatchSize, E> {
                u32::try_from(value)
                    .ok()
                    .and_then(BatchSize::fixed)
                    .ok_or_else(|| E::custom(BatchSizeError { given: value.to_string() }))
            }

            fn visit_i64<E: de::Error>(self, value: i64) -> Result<BatchSize, E> {
                u64::try_from(value)
                    .map_err(|_| E::custom(BatchSizeError { given: value.to_string() }))
                    .and_then(|value| self.visit_u64(value))
            }

            fn visit_str<E: de::Error>(self, value: &str) -> Result<BatchSize, E> {
                value.parse().map_err(E::custom)
            }
        }

        deserializer.deserialize_any(BatchSizeVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_auto_and_positive_whole_numbers() {
        assert_eq!("auto".parse(), Ok(BatchSize::Auto));
        assert_eq!(" AUTO ".parse(), Ok(BatchSize::Auto));
        assert_eq!("40".parse(), Ok(BatchSize::fixed(40).unwrap()));
        assert_eq!(format!("{BATCH_SIZE_MAX}").parse::<BatchSize>().unwrap().get(), Some(BATCH_SIZE_MAX));
    }

    #[test]
    fn refuses_everything_else_with_a_message_that_says_what_is_allowed() {
        for bad in ["0", "-3", "+5", "1e3", "0x10", "", "  ", "4 0", "automatic", "1000000000000", "100001"] {
            let error = bad.parse::<BatchSize>().expect_err(bad);
            assert_eq!(error.given, bad);
            let message = error.to_string();
            assert!(message.contains("expected `auto` or a whole number from 1 to 100000"), "{message}");
        }
    }

    #[test]
    fn display_round_trips_through_parse() {
        for size in [BatchSize::Auto, BatchSize::fixed(1).unwrap(), BatchSize::fixed(150).unwrap()] {
            assert_eq!(size.to_string().parse(), Ok(size));
        }
        assert_eq!(BatchSize::Auto.to_string(), "auto");
        assert_eq!(BatchSize::fixed(7).unwrap().to_string(), "7");
    }

    #[test]
    fn json_is_the_string_auto_or_a_plain_number() {
        assert_eq!(serde_json::to_string(&BatchSize::Auto).unwrap(), "\"auto\"");
        assert_eq!(serde_json::to_string(&BatchSize::fixed(40).unwrap()).unwrap(), "40");
        assert_eq!(serde_json::from_str::<BatchSize>("40").unwrap(), BatchSize::fixed(40).unwrap());
        assert_eq!(serde_json::from_str::<BatchSize>("\"auto\"").unwrap(), BatchSize::Auto);
        assert_eq!(serde_json::from_str::<BatchSize>("\"12\"").unwrap(), BatchSize::fixed(12).unwrap());
        for bad in ["0", "-1", "1.5", "\"zero\"", "null", "4294967296"] {
            assert!(serde_json::from_str::<BatchSize>(bad).is_err(), "{bad} must be refused");
        }
    }

    #[test]
    fn accessors() {
        assert_eq!(BatchSize::Auto.get(), None);
        assert_eq!(BatchSize::Auto.or(40), 40);
        assert_eq!(BatchSize::fixed(9).unwrap().or(40), 9);
        assert!(BatchSize::Auto.is_auto());
        assert!(BatchSize::fixed(0).is_none());
        assert!(BatchSize::fixed(BATCH_SIZE_MAX + 1).is_none());
        assert_eq!(BatchSize::default(), BatchSize::Auto);
    }
}
