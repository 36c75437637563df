//! TPC-C's configuration: warehouses, how workers bind to them, the mix, the hybrid analytic
//! share, and (for tests) the scale of the tables that the specification fixes.

use std::str::FromStr;

use crate::error::WorkloadError;

/// Most warehouses: warehouse numbers take 10 bits of every composite key.
pub const WAREHOUSES_MAX: u32 = 1023;
/// Items in the catalogue (clause 4.3.3.1).
pub const ITEMS: u32 = 100_000;
/// Most items a scaled-down catalogue may hold: item numbers (and the one unused number above
/// them) take 17 bits of a stock key.
pub const ITEMS_MAX: u32 = (1 << 17) - 2;
/// Customers per district (clause 4.3.3.1); also the initial orders per district.
pub const CUSTOMERS_PER_DISTRICT: u32 = 3_000;
/// Most customers per district: customer numbers take 12 bits of a customer key.
pub const CUSTOMERS_PER_DISTRICT_MAX: u32 = (1 << 12) - 1;
/// Fewest customers per district a scaled-down database may have (a district needs a few
/// undelivered orders and a few customers per last name).
pub const CUSTOMERS_PER_DISTRICT_MIN: u32 = 10;
/// Districts per warehouse (fixed by the specification; keys give them 4 bits).
pub const DISTRICTS_PER_WAREHOUSE: u64 = 10;
/// Fewest items a scaled-down catalogue may hold (a NewOrder draws up to 15 items).
pub const ITEMS_MIN: u32 = 100;
/// Smallest contiguous fraction of a warehouse's customers the analytic transaction scans.
pub const ANALYTIC_RANGE_MIN: f64 = 0.01;

/// The five TPC-C transactions, in mix order.
pub const TRANSACTION_NAMES: [&str; 5] = ["new_order", "payment", "order_status", "delivery", "stock_level"];
/// The mix of the specification (clause 5.2.3's minimums, NewOrder taking the rest), in percent.
pub const STANDARD_MIX: [u32; 5] = [45, 43, 4, 4, 4];

/// How a worker picks the warehouse of its next transaction (seed 003's two TPC-C variants).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Binding {
    /// TPCC-fixed: worker `w` always works for home warehouse `w % warehouses + 1`.
    #[default]
    Fixed,
    /// TPCC-random: every transaction's home warehouse is drawn anew, uniformly.
    Random,
}

impl FromStr for Binding {
    type Err = WorkloadError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "fixed" => Ok(Binding::Fixed),
            "random" => Ok(Binding::Random),
            _ => Err(WorkloadError::invalid("binding", format!("`{text}`: expected fixed or random"))),
        }
    }
}

impl std::fmt::Display for Binding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Binding::Fixed => "fixed",
            Binding::Random => "random",
        })
    }
}

/// The hybrid workload's analytic transaction (seed 003's TPCE-hybrid).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HybridConfig {
    /// Fraction of one warehouse's customers one analytic transaction scans (the contention
    /// degree), in `[ANALYTIC_RANGE_MIN, 1]`.
    pub analytic_range: f64,
    /// Fraction of all transactions that are analytic, in `[0, 1)`; the rest follow the mix.
    pub analytic_share: f64,
}

impl Default for HybridConfig {
    fn default() -> Self {
        HybridConfig { analytic_range: 0.2, analytic_share: 0.2 }
    }
}

/// Table sizes the specification fixes, made adjustable so tests can load a small database.
/// Every transaction rule scales with them (NURand ranges, the undelivered 30%).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TpccScale {
    /// Items in the catalogue, and stock rows per warehouse.
    pub items: u32,
    /// Customers per district, and initial orders per district.
    pub customers_per_district: u32,
}

impl Default for TpccScale {
    fn default() -> Self {
        TpccScale { items: ITEMS, customers_per_district: CUSTOMERS_PER_DISTRICT }
    }
}

impl TpccScale {
    /// A small database for tests: 1,000 items, 60 customers per district.
    pub const SMALL: TpccScale = TpccScale { items: 1_000, customers_per_district: 60 };

    /// Orders per district loaded undelivered (with a NEW-ORDER row): the last 900 of 3,000,
    /// scaled.
    pub fn undelivered_per_district(&self) -> u32 {
        self.customers_per_district * 900 / 3_000
    }
}

/// Everything that shapes a TPC-C run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TpccConfig {
    pub warehouses: u32,
    pub binding: Binding,
    /// Relative weights of NewOrder, Payment, OrderStatus, Delivery, StockLevel.
    pub mix: [u32; 5],
    /// `Some`: the hybrid workload, with the analytic transaction.
    pub hybrid: Option<HybridConfig>,
    pub scale: TpccScale,
    /// Seeds the loaded data and the run-time constants of NURand.
    pub seed: u64,
}

impl Default for TpccConfig {
    fn default() -> Self {
        TpccConfig {
            warehouses: 1,
            binding: Binding::Fixed,
            mix: STANDARD_MIX,
            hybrid: None,
            scale: TpccScale::default(),
            seed: 0x7C_C0,
        }
    }
}

impl TpccConfig {
    /// Checks every field's range.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        if self.warehouses == 0 || self.warehouses > WAREHOUSES_MAX {
            return Err(WorkloadError::invalid(
                "warehouses",
                format!("{} warehouses: need 1 to {WAREHOUSES_MAX}", self.warehouses),
            ));
        }
        if self.mix.iter().sum::<u32>() == 0 {
            return Err(WorkloadError::invalid("mix", "at least one transaction needs a positive weight"));
        }
        if self.mix.iter().any(|&w| w > 1_000_000) {
            return Err(WorkloadError::invalid("mix", "weights are at most 1000000"));
        }
        let scale = self.scale;
        if !(ITEMS_MIN..=ITEMS_MAX).contains(&scale.items) {
            return Err(WorkloadError::invalid("items", format!("{}: need {ITEMS_MIN} to {ITEMS_MAX}", scale.items)));
        }
        if !(CUSTOMERS_PER_DISTRICT_MIN..=CUSTOMERS_PER_DISTRICT_MAX).contains(&scale.customers_per_district) {
            return Err(WorkloadError::invalid(
                "customers_per_district",
                format!(
                    "{}: need {CUSTOMERS_PER_DISTRICT_MIN} to {CUSTOMERS_PER_DISTRICT_MAX}",
                    scale.customers_per_district
                ),
            ));
        }
        if let Some(hybrid) = self.hybrid {
            if !(ANALYTIC_RANGE_MIN..=1.0).contains(&hybrid.analytic_range) {
                return Err(WorkloadError::invalid(
                    "analytic_range",
                    format!("{}: need {ANALYTIC_RANGE_MIN} to 1", hybrid.analytic_range),
                ));
            }
            if !(0.0..1.0).contains(&hybrid.analytic_share) {
                return Err(WorkloadError::invalid(
                    "analytic_share",
                    format!("{}: need at least 0 and below 1", hybrid.analytic_share),
                ));
            }
        }
        Ok(())
    }
}

/// Parses a mix: `standard`; a comma-separated list of transaction names, each weighted
/// equally (`new-order,payment`, as peers that run only those two do); or five
/// comma-separated weights in the order NewOrder, Payment, OrderStatus, Delivery, StockLevel.
pub fn parse_mix(text: &str) -> Result<[u32; 5], WorkloadError> {
    let text = text.trim();
    if text == "standard" {
        return Ok(STANDARD_MIX);
    }
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    if parts.iter().all(|p| p.parse::<u32>().is_ok()) {
        let weights: Vec<u32> = parts.iter().map(|p| p.parse().unwrap_or_default()).collect();
        let mix: [u32; 5] = weights.try_into().map_err(|w: Vec<u32>| {
            WorkloadError::invalid("mix", format!("{} weights given; a mix of weights needs exactly 5", w.len()))
        })?;
        if mix.iter().sum::<u32>() == 0 {
            return Err(WorkloadError::invalid("mix", "at least one weight must be positive"));
        }
        return Ok(mix);
    }
    let mut mix = [0; 5];
    for part in parts {
        let name = part.replace('-', "_");
        let Some(index) = TRANSACTION_NAMES.iter().position(|&n| n == name || n.replace('_', "") == name) else {
            return Err(WorkloadError::invalid(
                "mix",
                format!(
                    "`{part}`: expected `standard`, five weights, or names among new-order, payment, order-status, \
                     delivery, stock-level"
                ),
            ));
        };
        mix[index] = 1;
    }
    Ok(mix)
}
