//! Drawing a transaction's inputs (clauses 2.4.1, 2.5.1, 2.6.1, 2.7.1, 2.8.1) into a [`Txn`].
//!
//! A [`Txn`] carries a procedure number, a list of `u64` parameters, an amount and flags; each
//! TPC-C transaction lays its inputs out in the list as below, so a retried attempt runs with
//! exactly the same inputs (the same items, the same customer, the same history key).
//!
//! ```text
//!   new_order     [w, d, c, date, line ...]     line = item << 32 | supply_w << 8 | quantity
//!   payment       [w, d, c_w, c_d, customer, date]   amount = cents
//!   order_status  [w, d, customer]               flags & BY_LAST_NAME: customer is a last-name
//!                                                number, else a customer number (both here
//!                                                and in payment)
//!   delivery      [w, carrier, date]
//!   stock_level   [w, d, threshold]
//!   analytic      [w, first customer position, customers, history key, date]
//! ```
//!
//! Dates are logical: each worker counts its transactions, and a transaction's date is the
//! load date plus its count; an analytic transaction's `analytic_history` key is the same
//! count in the worker's own key slot.

use rand::Rng;

use super::config::{Binding, DISTRICTS_PER_WAREHOUSE};
use super::load::LOAD_DATE;
use super::random::{A_CUSTOMER, A_ITEM, A_LAST_NAME, LAST_NAME_NUMBER_MAX, nurand};
use super::schema::sequence_key;
use super::{ANALYTIC_TX, DELIVERY_TX, NEW_ORDER_TX, ORDER_STATUS_TX, PAYMENT_TX, STOCK_LEVEL_TX, Tpcc};
use crate::WorkloadRng;
use crate::procedure::Txn;

/// Flag: the customer is chosen by last name.
pub const BY_LAST_NAME: u64 = 1;
/// Order lines of a NewOrder (clause 2.4.1.3).
pub const ORDER_LINES_MIN: u64 = 5;
pub const ORDER_LINES_MAX: usize = 15;
/// Percent of NewOrders that roll back on an unused item (clause 2.4.1.4).
pub const ROLLBACK_PERCENT: u32 = 1;
/// Percent of order lines supplied by a remote warehouse (clause 2.4.1.5).
pub const REMOTE_LINE_PERCENT: u32 = 1;
/// Percent of Payments by a customer of a remote warehouse (clause 2.5.1.2).
pub const REMOTE_PAYMENT_PERCENT: u32 = 15;
/// Percent of Payments and OrderStatuses that select the customer by last name.
pub const BY_LAST_NAME_PERCENT: u32 = 60;
/// Payment amounts in cents (1.00 to 5,000.00).
pub const PAYMENT_CENTS_MIN: i64 = 100;
pub const PAYMENT_CENTS_MAX: i64 = 500_000;

/// One line of a NewOrder's input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrderLineInput {
    pub item: u64,
    pub supply_w: u64,
    pub quantity: u64,
}

impl OrderLineInput {
    #[inline]
    pub fn pack(self) -> u64 {
        (self.item << 32) | (self.supply_w << 8) | self.quantity
    }
    #[inline]
    pub fn unpack(word: u64) -> Self {
        OrderLineInput { item: word >> 32, supply_w: (word >> 8) & 0xFF_FFFF, quantity: word & 0xFF }
    }
}

impl Tpcc {
    /// The home warehouse of `worker`'s next transaction.
    fn home_warehouse(&self, rng: &mut WorkloadRng, worker: usize) -> u64 {
        let warehouses = u64::from(self.config.warehouses);
        match self.config.binding {
            Binding::Fixed => worker as u64 % warehouses + 1,
            Binding::Random => rng.random_range(1..=warehouses),
        }
    }

    /// A warehouse other than `home`, uniformly (only called with more than one warehouse).
    fn other_warehouse(&self, rng: &mut WorkloadRng, home: u64) -> u64 {
        let pick = rng.random_range(1..u64::from(self.config.warehouses));
        if pick >= home { pick + 1 } else { pick }
    }

    /// A customer number by NURand(1023, 1, customers).
    fn customer_number(&self, rng: &mut WorkloadRng) -> u64 {
        nurand(rng, A_CUSTOMER, 1, u64::from(self.config.scale.customers_per_district), self.constants.customer)
    }

    /// A last-name number by NURand(255, 0, 999) with the run's constant; a scaled-down
    /// database with fewer than 1,000 customers per district draws among the names it has.
    fn last_name_number(&self, rng: &mut WorkloadRng) -> u64 {
        let max = LAST_NAME_NUMBER_MAX.min(u64::from(self.config.scale.customers_per_district) - 1);
        nurand(rng, A_LAST_NAME, 0, max, self.constants.last_name_run)
    }

    /// The customer selector: 60% a last-name number (flag set), else a customer number.
    fn customer_selector(&self, rng: &mut WorkloadRng, txn: &mut Txn) -> u64 {
        if rng.random_range(0..100) < BY_LAST_NAME_PERCENT {
            txn.flags |= BY_LAST_NAME;
            self.last_name_number(rng)
        } else {
            self.customer_number(rng)
        }
    }

    fn district(rng: &mut WorkloadRng) -> u64 {
        rng.random_range(1..=DISTRICTS_PER_WAREHOUSE)
    }

    /// The next (`analytic_history` key, date) of `worker`.
    fn next_stamp(&self, worker: usize) -> (u64, u64) {
        let sequence = self.sequences.next(worker);
        (sequence_key(worker as u64 + 1, sequence), LOAD_DATE as u64 + 1 + sequence)
    }

    pub(super) fn draw(&self, rng: &mut WorkloadRng, worker: usize, txn: &mut Txn) {
        txn.keys.clear();
        txn.flags = 0;
        txn.amount = 0;
        let analytic = self.config.hybrid.is_some_and(|h| rng.random::<f64>() < h.analytic_share);
        txn.procedure = if analytic {
            ANALYTIC_TX
        } else {
            let pick = rng.random_range(0..self.cumulative_mix[4]);
            self.cumulative_mix.iter().position(|&c| pick < c).unwrap_or(0) as u8
        };
        let w = self.home_warehouse(rng, worker);
        let (stamp_key, date) = self.next_stamp(worker);
        let many = self.config.warehouses > 1;
        match txn.procedure {
            NEW_ORDER_TX => {
                let d = Self::district(rng);
                let c = self.customer_number(rng);
                txn.keys.extend([w, d, c, date]);
                let lines = rng.random_range(ORDER_LINES_MIN..=ORDER_LINES_MAX as u64);
                let rollback = rng.random_range(0..100) < ROLLBACK_PERCENT;
                let items = u64::from(self.config.scale.items);
                for number in 1..=lines {
                    let item = if rollback && number == lines {
                        items + 1
                    } else {
                        nurand(rng, A_ITEM, 1, items, self.constants.item)
                    };
                    let remote = many && rng.random_range(0..100) < REMOTE_LINE_PERCENT;
                    let supply_w = if remote { self.other_warehouse(rng, w) } else { w };
                    let quantity = rng.random_range(1..=10);
                    txn.keys.push(OrderLineInput { item, supply_w, quantity }.pack());
                }
            }
            PAYMENT_TX => {
                let d = Self::district(rng);
                let remote = many && rng.random_range(0..100) < REMOTE_PAYMENT_PERCENT;
                let (c_w, c_d) = if remote { (self.other_warehouse(rng, w), Self::district(rng)) } else { (w, d) };
                let customer = self.customer_selector(rng, txn);
                txn.keys.extend([w, d, c_w, c_d, customer, date]);
                txn.amount = rng.random_range(PAYMENT_CENTS_MIN..=PAYMENT_CENTS_MAX);
            }
            ORDER_STATUS_TX => {
                let d = Self::district(rng);
                let customer = self.customer_selector(rng, txn);
                txn.keys.extend([w, d, customer]);
            }
            DELIVERY_TX => txn.keys.extend([w, rng.random_range(1..=10), date]),
            STOCK_LEVEL_TX => txn.keys.extend([w, Self::district(rng), rng.random_range(10..=20)]),
            _ => {
                let per_warehouse = self.customers_per_warehouse();
                let range = self.config.hybrid.map_or(1.0, |h| h.analytic_range);
                let customers = ((per_warehouse as f64 * range).round() as u64).clamp(1, per_warehouse);
                let first = rng.random_range(0..=per_warehouse - customers);
                txn.keys.extend([w, first, customers, stamp_key, date]);
            }
        }
    }

    /// Customers of one warehouse.
    pub(super) fn customers_per_warehouse(&self) -> u64 {
        DISTRICTS_PER_WAREHOUSE * u64::from(self.config.scale.customers_per_district)
    }
}
