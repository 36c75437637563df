//! Delivery (clause 2.7.4): deliver the oldest undelivered order of each of a warehouse's ten
//! districts, in one transaction.
//!
//! ```text
//!   per district d = 1..=10:
//!     NEW-ORDER: ascending scan of (w, d, *) with limit 1 -> the oldest; none: skip d
//!     delete that NEW-ORDER row
//!     read+write ORDER (carrier)
//!     read+write its ORDER-LINE rows (delivery date), summing their amounts
//!     read+write CUSTOMER (balance += sum, delivery count += 1)
//! ```

use super::config::DISTRICTS_PER_WAREHOUSE;
use super::input::ORDER_LINES_MAX;
use super::read_present;
use super::schema::{
    C_BALANCE, C_DELIVERY_CNT, CUSTOMER, CUSTOMER_WORDS, NEW_ORDER, O_C_ID, O_CARRIER_ID, OL_AMOUNT, OL_DELIVERY_D,
    OL_NUMBER, ORDER, ORDER_LINE, ORDER_LINE_WORDS, ORDER_NUMBER_MAX, ORDER_WORDS, customer_key, order_key,
    order_lines_range,
};
use crate::procedure::Txn;
use crate::tables::{Aborted, Direction, Outcome, Tx};

pub(super) fn run(txn: &Txn, tx: &mut dyn Tx) -> Result<Outcome, Aborted> {
    let &[w, carrier, date] = txn.keys.as_slice() else {
        unreachable!("a delivery input has three words");
    };
    let mut order = [0u64; ORDER_WORDS];
    let mut lines = [[0u64; ORDER_LINE_WORDS]; ORDER_LINES_MAX];
    let mut customer = [0u64; CUSTOMER_WORDS];
    for d in 1..=DISTRICTS_PER_WAREHOUSE {
        let mut oldest = None;
        tx.scan(
            NEW_ORDER,
            order_key(w, d, 0),
            order_key(w, d, ORDER_NUMBER_MAX),
            Direction::Ascending,
            1,
            &mut |key, _| {
                oldest = Some(key);
                false
            },
        )?;
        let Some(order_key) = oldest else { continue };
        if !tx.delete(NEW_ORDER, order_key)? {
            return Err(Aborted);
        }
        read_present(tx, ORDER, order_key, &mut order, true)?;
        O_CARRIER_ID.set_int(&mut order, carrier as i64);
        tx.put(ORDER, order_key, &order)?;

        let (low, high) = order_lines_range(order_key);
        let mut count = 0;
        tx.scan(ORDER_LINE, low, high, Direction::Ascending, ORDER_LINES_MAX, &mut |_, line| {
            lines[count].copy_from_slice(line);
            count += 1;
            true
        })?;
        let mut amount = 0;
        for line in &mut lines[..count] {
            amount += OL_AMOUNT.int(line);
            OL_DELIVERY_D.set_int(line, date as i64);
            let number = OL_NUMBER.int(line) as u64;
            tx.put(ORDER_LINE, low - 1 + number, line)?;
        }

        let customer_key = customer_key(w, d, O_C_ID.int(&order) as u64);
        read_present(tx, CUSTOMER, customer_key, &mut customer, true)?;
        C_BALANCE.add_int(&mut customer, amount);
        C_DELIVERY_CNT.add_int(&mut customer, 1);
        tx.put(CUSTOMER, customer_key, &customer)?;
    }
    Ok(Outcome::Commit)
}
