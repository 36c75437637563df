//! Footprints of TPC-C transactions for reordering before execution: coarse identities that
//! two transactions share whenever they can conflict.
//!
//! Every row a transaction touches belongs to one of these groups, and the group's identity
//! stands for all of it:
//!
//! ```text
//!   identity                          stands for
//!   WAREHOUSE w                       the warehouse row
//!   DISTRICT (w, d)                   the district row and every CUSTOMER, ORDER, NEW-ORDER,
//!                                     ORDER-LINE row (and index entry) of the district
//!   STOCK (w, 0)                      all of warehouse w's stock (item 0 does not exist)
//!   STOCK (w, i)                      one stock row, when its item is in the input
//!   analytic_history key              the row inserted (never read by a transaction)
//! ```
//!
//! | transaction  | reads                         | writes                                    |
//! |--------------|-------------------------------|-------------------------------------------|
//! | new_order    | WAREHOUSE w                   | DISTRICT (w,d); STOCK (s,0), (s,i) per line |
//! | payment      |                               | WAREHOUSE w; DISTRICT (w,d), (c_w,c_d)    |
//! | order_status | DISTRICT (w,d)                |                                           |
//! | delivery     |                               | DISTRICT (w,1..=10)                       |
//! | stock_level  | DISTRICT (w,d); STOCK (w,0)   |                                           |
//! | analytic     | DISTRICT (w,d) per district its customer group spans | its analytic_history key |
//!
//! Why this is sound (a conflict needs one side to write a row, or to insert or delete into
//! a range, that the other reads or writes):
//! * The warehouse row is written only by Payment, which writes WAREHOUSE w; NewOrder, its
//!   only other user, reads it.
//! * A district's rows are written (or inserted into, or deleted from) only by NewOrder (its
//!   district), Payment (its district row and its customer's district) and Delivery (all ten
//!   districts), and each writes DISTRICT (w,d) for every district it changes. Every
//!   transaction that reads a district's rows, or scans a range inside one (new orders,
//!   order lines, a customer's orders, a last name, the analytic group's customers), lists
//!   that district. Scans never cross warehouses, and the analytic scan's range covers only
//!   the districts it lists.
//! * Stock is written only by NewOrder, which writes STOCK (s,0) for each supplying warehouse
//!   s; StockLevel, which reads stock items it learns only while running, reads STOCK (w,0).
//! * Items are never written. History rows are inserted, never read: a HISTORY key is the
//!   paying customer's (in DISTRICT (c_w,c_d)); `analytic_history` keys are unique.

use super::config::DISTRICTS_PER_WAREHOUSE;
use super::input::OrderLineInput;
use super::schema::{ANALYTIC_HISTORY, DISTRICT, STOCK, WAREHOUSE, district_key, stock_key};
use super::{ANALYTIC_TX, DELIVERY_TX, NEW_ORDER_TX, ORDER_STATUS_TX, PAYMENT_TX, STOCK_LEVEL_TX};
use crate::procedure::Txn;
use crate::tables::footprint_key;

fn district(w: u64, d: u64) -> u64 {
    footprint_key(DISTRICT, district_key(w, d))
}

fn all_stock(w: u64) -> u64 {
    footprint_key(STOCK, stock_key(w, 0))
}

/// Appends `txn`'s footprint identities to `reads` and `writes`.
pub(super) fn footprint(txn: &Txn, customers_per_district: u64, reads: &mut Vec<u64>, writes: &mut Vec<u64>) {
    let keys = txn.keys.as_slice();
    match txn.procedure {
        NEW_ORDER_TX => {
            let (w, d) = (keys[0], keys[1]);
            reads.push(footprint_key(WAREHOUSE, w));
            writes.extend([district(w, d), all_stock(w)]);
            for &line in &keys[4..] {
                let line = OrderLineInput::unpack(line);
                if line.supply_w != w && !writes.contains(&all_stock(line.supply_w)) {
                    writes.push(all_stock(line.supply_w));
                }
                writes.push(footprint_key(STOCK, stock_key(line.supply_w, line.item)));
            }
        }
        PAYMENT_TX => {
            let (w, d, c_w, c_d) = (keys[0], keys[1], keys[2], keys[3]);
            writes.extend([footprint_key(WAREHOUSE, w), district(w, d)]);
            if (c_w, c_d) != (w, d) {
                writes.push(district(c_w, c_d));
            }
        }
        ORDER_STATUS_TX => reads.push(district(keys[0], keys[1])),
        DELIVERY_TX => writes.extend((1..=DISTRICTS_PER_WAREHOUSE).map(|d| district(keys[0], d))),
        STOCK_LEVEL_TX => reads.extend([district(keys[0], keys[1]), all_stock(keys[0])]),
        ANALYTIC_TX => {
            let (w, first, customers) = (keys[0], keys[1], keys[2]);
            let first_d = first / customers_per_district + 1;
            let last_d = (first + customers - 1) / customers_per_district + 1;
            reads.extend((first_d..=last_d).map(|d| district(w, d)));
            writes.push(footprint_key(ANALYTIC_HISTORY, keys[3]));
        }
        other => unreachable!("TPC-C has no procedure {other}"),
    }
}
