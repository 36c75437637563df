//! Typed values of `ordo bench`'s flags that are not plain numbers or names (`auto|N` batch
//! sizes, `unbounded|N`, `server|N`), and the range check every numeric flag goes through
//! before anything runs.
//!
//! No flag gives `0` a special meaning: a knob whose default is worked out from other knobs is
//! left out (an `Option`, or an empty list), and a knob that may be unbounded or left to the
//! server says so by name.

use std::fmt;
use std::num::{NonZeroU64, NonZeroUsize};
use std::str::FromStr;

use anyhow::{Result, bail};

pub use ordo_batching::BatchSize;

/// What `ordo bench` checks of a [`BatchSize`] flag before anything runs.
pub trait BatchSizeArg: Sized {
    /// A fixed size (`n` from 1 to [`ordo_batching::BATCH_SIZE_MAX`]).
    fn of(n: u32) -> Self;
    /// `auto`, or a fixed size checked against `max` (`flag` names the knob in the error).
    fn within(self, flag: &str, max: usize) -> Result<Self>;
    /// A fixed size checked against `max`, for a knob that has no controller: `auto` is
    /// refused with a clear error.
    fn fixed_only(self, flag: &str, max: usize) -> Result<usize>;
}

impl BatchSizeArg for BatchSize {
    fn of(n: u32) -> BatchSize {
        BatchSize::fixed(n).expect("a batch size within the controller's bounds")
    }

    fn within(self, flag: &str, max: usize) -> Result<BatchSize> {
        if let Some(n) = self.get()
            && n as usize > max
        {
            bail!("{flag} {n}: must be in 1..={max}");
        }
        Ok(self)
    }

    fn fixed_only(self, flag: &str, max: usize) -> Result<usize> {
        match self.within(flag, max)?.get() {
            Some(n) => Ok(n as usize),
            None => bail!(
                "{flag} auto: this knob has no batch-size controller; give a number of transactions (at most {max})"
            ),
        }
    }
}

/// `--storage-batch-size`: a size (`auto` or a number), or `same`, the validator batch's size
/// of each configuration, so that one list of sizes sweeps both batches together instead of
/// every pair of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageBatch {
    /// The configuration's `--batch-size`.
    Same,
    Size(BatchSize),
}

impl StorageBatch {
    /// The storage batch of a configuration whose validator batch is `validator`.
    pub fn resolve(self, validator: BatchSize) -> BatchSize {
        match self {
            StorageBatch::Same => validator,
            StorageBatch::Size(size) => size,
        }
    }
}

impl Default for StorageBatch {
    fn default() -> Self {
        StorageBatch::Size(BatchSize::Auto)
    }
}

impl fmt::Display for StorageBatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StorageBatch::Same => f.write_str("same"),
            StorageBatch::Size(size) => size.fmt(f),
        }
    }
}

impl FromStr for StorageBatch {
    type Err = String;

    /// `same` (any case, surrounding spaces ignored), or a [`BatchSize`].
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text.trim().eq_ignore_ascii_case("same") {
            return Ok(StorageBatch::Same);
        }
        text.parse().map(StorageBatch::Size).map_err(|e: ordo_batching::BatchSizeError| format!("{e}, or `same`"))
    }
}

/// A bound that may be lifted: `unbounded` or at most `n` (at least 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Bound {
    Unbounded,
    AtMost(NonZeroUsize),
}

impl Bound {
    pub fn limit(self) -> Option<usize> {
        match self {
            Bound::Unbounded => None,
            Bound::AtMost(n) => Some(n.get()),
        }
    }
}

impl FromStr for Bound {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s.trim() == "unbounded" {
            return Ok(Bound::Unbounded);
        }
        s.trim()
            .parse::<NonZeroUsize>()
            .map(Bound::AtMost)
            .map_err(|_| format!("`{s}`: expected unbounded or a number of at least 1"))
    }
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Bound::Unbounded => f.write_str("unbounded"),
            Bound::AtMost(n) => write!(f, "{n}"),
        }
    }
}

/// `--pregenerate`: transactions each worker draws before the clock starts, or `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Pregenerate(pub Option<usize>);

impl FromStr for Pregenerate {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let max = ordo_workload::POOL_TRANSACTIONS_MAX;
        if s.trim() == "off" {
            return Ok(Pregenerate(None));
        }
        match s.trim().parse::<usize>() {
            Ok(n) if (1..=max).contains(&n) => Ok(Pregenerate(Some(n))),
            _ => Err(format!("`{s}`: expected off or a number of transactions per worker in 1..={max}")),
        }
    }
}

impl fmt::Display for Pregenerate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            None => f.write_str("off"),
            Some(n) => write!(f, "{n}"),
        }
    }
}

/// A session setting ordo may set or leave to the server: `server` or a number of
/// milliseconds (at least 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServerOrMs {
    Server,
    Ms(NonZeroU64),
}

impl ServerOrMs {
    pub fn ms(self) -> Option<u64> {
        match self {
            ServerOrMs::Server => None,
            ServerOrMs::Ms(ms) => Some(ms.get()),
        }
    }
}

impl FromStr for ServerOrMs {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s.trim() == "server" {
            return Ok(ServerOrMs::Server);
        }
        s.trim()
            .parse::<NonZeroU64>()
            .map(ServerOrMs::Ms)
            .map_err(|_| format!("`{s}`: expected server or a number of milliseconds of at least 1"))
    }
}

impl fmt::Display for ServerOrMs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerOrMs::Server => f.write_str("server"),
            ServerOrMs::Ms(ms) => write!(f, "{ms}"),
        }
    }
}

/// Checks that every value of `flag` is in `min..=max`, naming the flag and the limit.
pub fn within<T: PartialOrd + fmt::Display + Copy>(
    flag: &str,
    values: impl IntoIterator<Item = T>,
    min: T,
    max: T,
) -> Result<()> {
    for value in values {
        if !(min..=max).contains(&value) {
            bail!("{flag} {value}: must be in {min}..={max}");
        }
    }
    Ok(())
}

/// Checks that a list flag has at least one value.
pub fn not_empty<T>(flag: &str, values: &[T]) -> Result<()> {
    if values.is_empty() {
        bail!("{flag} needs at least one value");
    }
    Ok(())
}

/// `on` or `off`, as the command line writes booleans.
pub fn on_off(on: bool) -> &'static str {
    if on { "on" } else { "off" }
}

/// Parses `on` or `off` (also `true` or `false`) into a boolean, listing those in `--help`.
pub fn on_off_parser() -> impl clap::builder::TypedValueParser<Value = bool> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new([PossibleValue::new("on").alias("true"), PossibleValue::new("off").alias("false")])
        .map(|value| value == "on" || value == "true")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_parse_and_print_back() {
        for text in ["auto", "1", "40", "100000"] {
            assert_eq!(text.parse::<BatchSize>().unwrap().to_string(), text);
        }
        for bad in ["0", "-1", "", "100001", "4294967296", "forty", "1e3"] {
            assert!(bad.parse::<BatchSize>().is_err(), "{bad}");
        }
        assert_eq!("unbounded".parse::<Bound>().unwrap().limit(), None);
        assert_eq!("32".parse::<Bound>().unwrap().limit(), Some(32));
        assert!("0".parse::<Bound>().is_err(), "0 is no longer a way to say unbounded");
        assert_eq!("server".parse::<ServerOrMs>().unwrap().ms(), None);
        assert_eq!("20".parse::<ServerOrMs>().unwrap().to_string(), "20");
        assert!("0".parse::<ServerOrMs>().is_err(), "0 is no longer a way to say the server's");
        for text in ["same", "auto", "40"] {
            assert_eq!(text.parse::<StorageBatch>().unwrap().to_string(), text);
        }
        assert_eq!(" Same ".parse::<StorageBatch>(), Ok(StorageBatch::Same));
        let error = "0".parse::<StorageBatch>().unwrap_err();
        assert!(error.contains("`same`") && error.contains("auto"), "{error}");
        assert_eq!(StorageBatch::Same.resolve(BatchSize::of(60)), BatchSize::of(60));
        assert_eq!(StorageBatch::default().resolve(BatchSize::of(60)), BatchSize::Auto);
    }

    #[test]
    fn fixed_sizes_are_checked_and_auto_only_where_a_controller_runs() {
        assert_eq!(BatchSize::of(40).within("--batch-size", 100).unwrap(), BatchSize::of(40));
        assert_eq!(BatchSize::Auto.within("--batch-size", 100).unwrap(), BatchSize::Auto);
        let error = BatchSize::of(400).within("--batch-size", 100).unwrap_err().to_string();
        assert!(error.contains("1..=100"), "{error}");
        assert_eq!(BatchSize::of(40).fixed_only("--batch", 100).unwrap(), 40);
        let error = BatchSize::Auto.fixed_only("--batch", 100).unwrap_err().to_string();
        assert!(error.contains("--batch auto"), "{error}");
    }

    #[test]
    fn ranges_name_the_flag_and_the_limit() {
        assert!(within("--runs", [1, 5], 1, 10).is_ok());
        let error = within("--runs", [1, 50], 1, 10).unwrap_err().to_string();
        assert_eq!(error, "--runs 50: must be in 1..=10");
        assert!(not_empty::<u8>("--theta", &[]).is_err());
    }
}
