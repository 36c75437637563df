//! NewOrder (clause 2.4.2): enter an order of 5 to 15 lines for a customer.
//!
//! ```text
//!   read WAREHOUSE (w_tax)
//!   read+write DISTRICT: o = d_next_o_id, d_next_o_id += 1
//!   read CUSTOMER (discount, credit)
//!   insert ORDER o and NEW-ORDER o
//!   per line: read ITEM (absent: the 1% rollback, Outcome::UserAbort)
//!             read+write STOCK (quantity, ytd, order and remote counts)
//!             insert ORDER-LINE
//! ```
//!
//! The stock rule: if the quantity is at least the ordered quantity plus 10, subtract the
//! ordered quantity; otherwise subtract it and add 91. A rolled-back NewOrder has done
//! everything up to its unused item, and the engine discards it all (writes are buffered).
//! The brand/generic flag and the order total are terminal output only and are not computed.

use super::input::OrderLineInput;
use super::schema::{
    CUSTOMER, CUSTOMER_WORDS, D_NEXT_O_ID, DISTRICT, DISTRICT_WORDS, I_PRICE, ITEM, ITEM_WORDS, NEW_ORDER, O_ALL_LOCAL,
    O_C_ID, O_CARRIER_ID, O_D_ID, O_ENTRY_D, O_ID, O_OL_CNT, O_W_ID, OL_AMOUNT, OL_D_ID, OL_DELIVERY_D, OL_DIST_INFO,
    OL_I_ID, OL_NUMBER, OL_O_ID, OL_QUANTITY, OL_SUPPLY_W_ID, OL_W_ID, ORDER, ORDER_LINE, ORDER_LINE_WORDS,
    ORDER_NUMBER_MAX, ORDER_WORDS, S_DIST, S_ORDER_CNT, S_QUANTITY, S_REMOTE_CNT, S_YTD, STOCK, STOCK_WORDS, WAREHOUSE,
    WAREHOUSE_WORDS, customer_key, district_key, order_key, order_line_key, stock_key,
};
use super::{insert_new, read_present};
use crate::procedure::Txn;
use crate::tables::{Aborted, Outcome, Tx};

#[allow(clippy::many_single_char_names)] // w, d, c, o, i: the specification's names
pub(super) fn run(txn: &Txn, tx: &mut dyn Tx) -> Result<Outcome, Aborted> {
    let &[w, d, c, date, ref lines @ ..] = txn.keys.as_slice() else {
        unreachable!("a new_order input has at least four words");
    };
    let mut warehouse = [0u64; WAREHOUSE_WORDS];
    read_present(tx, WAREHOUSE, w, &mut warehouse, false)?;
    let mut district = [0u64; DISTRICT_WORDS];
    read_present(tx, DISTRICT, district_key(w, d), &mut district, true)?;
    let o = D_NEXT_O_ID.int(&district) as u64;
    assert!(o < ORDER_NUMBER_MAX, "district ({w}, {d}) has used all {ORDER_NUMBER_MAX} order numbers");
    D_NEXT_O_ID.add_int(&mut district, 1);
    tx.put(DISTRICT, district_key(w, d), &district)?;
    let mut customer = [0u64; CUSTOMER_WORDS];
    read_present(tx, CUSTOMER, customer_key(w, d, c), &mut customer, false)?;

    let all_local = lines.iter().all(|&line| OrderLineInput::unpack(line).supply_w == w);
    let mut order = [0u64; ORDER_WORDS];
    O_ID.set_int(&mut order, o as i64);
    O_D_ID.set_int(&mut order, d as i64);
    O_W_ID.set_int(&mut order, w as i64);
    O_C_ID.set_int(&mut order, c as i64);
    O_ENTRY_D.set_int(&mut order, date as i64);
    O_CARRIER_ID.set_int(&mut order, 0);
    O_OL_CNT.set_int(&mut order, lines.len() as i64);
    O_ALL_LOCAL.set_int(&mut order, i64::from(all_local));
    insert_new(tx, ORDER, order_key(w, d, o), &order)?;
    let new_order = [o, d, w];
    insert_new(tx, NEW_ORDER, order_key(w, d, o), &new_order)?;

    let mut item = [0u64; ITEM_WORDS];
    let mut stock = [0u64; STOCK_WORDS];
    let mut line = [0u64; ORDER_LINE_WORDS];
    let mut dist_info = [0u8; 24];
    for (number, &input) in (1u64..).zip(lines) {
        let OrderLineInput { item: i, supply_w, quantity } = OrderLineInput::unpack(input);
        if !tx.get(ITEM, i, &mut item, false)? {
            return Ok(Outcome::UserAbort);
        }
        read_present(tx, STOCK, stock_key(supply_w, i), &mut stock, true)?;
        let quantity = quantity as i64;
        let on_hand = S_QUANTITY.int(&stock);
        S_QUANTITY
            .set_int(&mut stock, if on_hand >= quantity + 10 { on_hand - quantity } else { on_hand - quantity + 91 });
        S_YTD.add_int(&mut stock, quantity);
        S_ORDER_CNT.add_int(&mut stock, 1);
        if supply_w != w {
            S_REMOTE_CNT.add_int(&mut stock, 1);
        }
        tx.put(STOCK, stock_key(supply_w, i), &stock)?;

        OL_O_ID.set_int(&mut line, o as i64);
        OL_D_ID.set_int(&mut line, d as i64);
        OL_W_ID.set_int(&mut line, w as i64);
        OL_NUMBER.set_int(&mut line, number as i64);
        OL_I_ID.set_int(&mut line, i as i64);
        OL_SUPPLY_W_ID.set_int(&mut line, supply_w as i64);
        OL_DELIVERY_D.set_int(&mut line, 0);
        OL_QUANTITY.set_int(&mut line, quantity);
        OL_AMOUNT.set_int(&mut line, quantity * I_PRICE.int(&item));
        let info = S_DIST[d as usize - 1].chars(&stock, &mut dist_info);
        OL_DIST_INFO.set_chars(&mut line, info);
        insert_new(tx, ORDER_LINE, order_line_key(w, d, o, number), &line)?;
    }
    Ok(Outcome::Commit)
}
