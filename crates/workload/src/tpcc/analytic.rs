//! The hybrid workload's analytic transaction (seed 003's TPCE-hybrid, on TPC-C's schema):
//! the assets of a contiguous group of one warehouse's customers, read-mostly and long.
//!
//! ```text
//!   CUSTOMER: one ascending scan over `customers` consecutive customers of warehouse w
//!             (in key order: district by district), summing their balances
//!   per customer: order-by-customer index, newest first, one order at a time while the
//!             order is open (carrier 0): read ORDER, scan its ORDER-LINE rows, summing
//!             amounts (Delivery delivers a district's orders oldest first, so a customer's
//!             open orders are its newest ones)
//!   insert one analytic_history row with the sums
//! ```
//!
//! Its reads overlap what the short transactions write: Payment and Delivery update the
//! customers it sums, NewOrder inserts orders into the index ranges it scans, Delivery closes
//! the orders it reads. The wider the group (`analytic_range`), the likelier an optimistic
//! attempt is to be invalidated, while a snapshot reader is not.

use super::config::DISTRICTS_PER_WAREHOUSE;
use super::schema::{
    AH_BALANCE_SUM, AH_CUSTOMERS, AH_DATE, AH_FIRST_CUSTOMER, AH_OPEN_AMOUNT_SUM, AH_OPEN_ORDERS, AH_W_ID,
    ANALYTIC_HISTORY, ANALYTIC_HISTORY_WORDS, C_BALANCE, CUSTOMER, O_CARRIER_ID, OL_AMOUNT, ORDER, ORDER_BITS,
    ORDER_BY_CUSTOMER, ORDER_LINE, ORDER_NUMBER_MAX, ORDER_WORDS, customer_key, order_lines_range,
};
use super::{insert_new, read_present};
use crate::procedure::Txn;
use crate::tables::{Aborted, Direction, Outcome, Scratch, Tx};

/// The (district, customer) at position `position` of a warehouse's customers in key order.
pub(super) fn customer_at(position: u64, customers_per_district: u64) -> (u64, u64) {
    (position / customers_per_district + 1, position % customers_per_district + 1)
}

pub(super) fn run(
    txn: &Txn,
    tx: &mut dyn Tx,
    scratch: &mut Scratch,
    customers_per_district: u64,
) -> Result<Outcome, Aborted> {
    let &[w, first, customers, history_key, date] = txn.keys.as_slice() else {
        unreachable!("an analytic input has five words");
    };
    let (first_d, first_c) = customer_at(first, customers_per_district);
    let (last_d, last_c) = customer_at(first + customers - 1, customers_per_district);
    debug_assert!(last_d <= DISTRICTS_PER_WAREHOUSE);
    let group = &mut scratch.keys;
    group.clear();
    let mut balance_sum = 0i64;
    tx.scan(
        CUSTOMER,
        customer_key(w, first_d, first_c),
        customer_key(w, last_d, last_c),
        Direction::Ascending,
        usize::MAX,
        &mut |key, customer| {
            balance_sum += C_BALANCE.int(customer);
            group.push(key);
            true
        },
    )?;

    let mut order = [0u64; ORDER_WORDS];
    let (mut open_orders, mut open_amount_sum) = (0i64, 0i64);
    for &customer in group.iter() {
        let low = customer << ORDER_BITS;
        let mut high = low | ORDER_NUMBER_MAX;
        loop {
            let mut newest = None;
            tx.scan(ORDER_BY_CUSTOMER, low, high, Direction::Descending, 1, &mut |key, entry| {
                newest = Some((key, entry[0]));
                false
            })?;
            let Some((entry_key, order_key)) = newest else { break };
            read_present(tx, ORDER, order_key, &mut order, false)?;
            if O_CARRIER_ID.int(&order) != 0 {
                break;
            }
            open_orders += 1;
            let (lines_low, lines_high) = order_lines_range(order_key);
            tx.scan(ORDER_LINE, lines_low, lines_high, Direction::Ascending, usize::MAX, &mut |_, line| {
                open_amount_sum += OL_AMOUNT.int(line);
                true
            })?;
            if entry_key == low {
                break;
            }
            high = entry_key - 1;
        }
    }

    let mut row = [0u64; ANALYTIC_HISTORY_WORDS];
    AH_W_ID.set_int(&mut row, w as i64);
    AH_FIRST_CUSTOMER.set_int(&mut row, first as i64);
    AH_CUSTOMERS.set_int(&mut row, group.len() as i64);
    AH_BALANCE_SUM.set_int(&mut row, balance_sum);
    AH_OPEN_AMOUNT_SUM.set_int(&mut row, open_amount_sum);
    AH_OPEN_ORDERS.set_int(&mut row, open_orders);
    AH_DATE.set_int(&mut row, date as i64);
    insert_new(tx, ANALYTIC_HISTORY, history_key, &row)?;
    Ok(Outcome::Commit)
}
