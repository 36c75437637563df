//! OrderStatus (clause 2.6.2): a customer's most recent order and its lines (read-only).
//!
//! ```text
//!   customer by number, or (60%) by last name as in Payment; read CUSTOMER
//!   order-by-customer index: descending scan of (w, d, c, *) with limit 1 -> newest order
//!   read ORDER; scan its ORDER-LINE rows
//! ```

use super::input::BY_LAST_NAME;
use super::payment::select_by_last_name;
use super::read_present;
use super::schema::{
    C_ID, CUSTOMER, CUSTOMER_WORDS, OL_QUANTITY, ORDER, ORDER_BY_CUSTOMER, ORDER_LINE, ORDER_WORDS, customer_key,
    customer_orders_range, order_lines_range,
};
use crate::procedure::Txn;
use crate::tables::{Aborted, Direction, Outcome, Scratch, Tx};

pub(super) fn run(txn: &Txn, tx: &mut dyn Tx, scratch: &mut Scratch) -> Result<Outcome, Aborted> {
    let &[w, d, selector] = txn.keys.as_slice() else {
        unreachable!("an order_status input has three words");
    };
    let customer_key = if txn.flags & BY_LAST_NAME != 0 {
        select_by_last_name(tx, w, d, selector, scratch)?
    } else {
        customer_key(w, d, selector)
    };
    let mut customer = [0u64; CUSTOMER_WORDS];
    read_present(tx, CUSTOMER, customer_key, &mut customer, false)?;
    let c = C_ID.int(&customer) as u64;

    let (low, high) = customer_orders_range(w, d, c);
    let mut newest = None;
    tx.scan(ORDER_BY_CUSTOMER, low, high, Direction::Descending, 1, &mut |_, entry| {
        newest = Some(entry[0]);
        false
    })?;
    // Every customer has an order from loading; none means an inconsistent read.
    let order_key = newest.ok_or(Aborted)?;
    let mut order = [0u64; ORDER_WORDS];
    read_present(tx, ORDER, order_key, &mut order, false)?;
    let (low, high) = order_lines_range(order_key);
    let mut lines = 0;
    tx.scan(ORDER_LINE, low, high, Direction::Ascending, usize::MAX, &mut |_, line| {
        lines += 1;
        debug_assert!(OL_QUANTITY.int(line) > 0);
        true
    })?;
    Ok(Outcome::Commit)
}
