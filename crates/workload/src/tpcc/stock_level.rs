//! StockLevel (clause 2.8.2): how many distinct items of a district's last 20 orders are low
//! in stock (read-only).
//!
//! ```text
//!   read DISTRICT (next order number o)
//!   scan ORDER-LINE of orders o-20 .. o-1 (one key range), collecting item numbers
//!   read STOCK of each distinct item; count those below the threshold
//! ```

use super::read_present;
use super::schema::{
    D_NEXT_O_ID, DISTRICT, DISTRICT_WORDS, OL_I_ID, ORDER_LINE, S_QUANTITY, STOCK, STOCK_WORDS, district_key,
    order_key, order_lines_range, stock_key,
};
use crate::procedure::Txn;
use crate::tables::{Aborted, Direction, Outcome, Scratch, Tx};

/// Orders StockLevel looks back over.
pub const RECENT_ORDERS: u64 = 20;

pub(super) fn run(txn: &Txn, tx: &mut dyn Tx, scratch: &mut Scratch) -> Result<Outcome, Aborted> {
    let &[w, d, threshold] = txn.keys.as_slice() else {
        unreachable!("a stock_level input has three words");
    };
    let mut district = [0u64; DISTRICT_WORDS];
    read_present(tx, DISTRICT, district_key(w, d), &mut district, false)?;
    let next = D_NEXT_O_ID.int(&district) as u64;
    let first = next.saturating_sub(RECENT_ORDERS).max(1);
    let items = &mut scratch.keys;
    items.clear();
    let (low, _) = order_lines_range(order_key(w, d, first));
    let (_, high) = order_lines_range(order_key(w, d, next - 1));
    tx.scan(ORDER_LINE, low, high, Direction::Ascending, usize::MAX, &mut |_, line| {
        items.push(OL_I_ID.int(line) as u64);
        true
    })?;
    items.sort_unstable();
    items.dedup();
    let mut stock = [0u64; STOCK_WORDS];
    let mut low_stock = 0;
    for &item in items.iter() {
        read_present(tx, STOCK, stock_key(w, item), &mut stock, false)?;
        low_stock += usize::from(S_QUANTITY.int(&stock) < threshold as i64);
    }
    debug_assert!(low_stock <= items.len());
    Ok(Outcome::Commit)
}
