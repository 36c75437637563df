//! Payment (clause 2.5.2): a customer pays; the warehouse's, district's and customer's
//! year-to-date totals move, and a HISTORY row records it.
//!
//! ```text
//!   read+write WAREHOUSE (w_ytd += amount)
//!   read+write DISTRICT  (d_ytd += amount)
//!   customer: by number, or (60%) by last name through the last-name index: of the n
//!             customers with that name in the district, ordered by first name, the one at
//!             position ceil(n / 2)
//!   read+write CUSTOMER  (balance -= amount, ytd payment, payment count; a bad-credit ("BC")
//!                         customer's C_DATA gains the payment's details in front, cut to 500)
//!   insert HISTORY, keyed by the customer and its new payment count
//! ```

use std::io::Write;

use super::input::BY_LAST_NAME;
use super::schema::{
    C_BALANCE, C_CREDIT, C_DATA, C_DATA_BYTES, C_FIRST, C_ID, C_PAYMENT_CNT, C_YTD_PAYMENT, CUSTOMER,
    CUSTOMER_BY_LAST_NAME, CUSTOMER_WORDS, D_NAME, D_YTD, DISTRICT, DISTRICT_WORDS, H_AMOUNT, H_C_D_ID, H_C_ID,
    H_C_W_ID, H_D_ID, H_DATA, H_DATE, H_W_ID, HISTORY, HISTORY_WORDS, PAYMENTS_PER_CUSTOMER_MAX, W_NAME, W_YTD,
    WAREHOUSE, WAREHOUSE_WORDS, customer_key, district_key, history_key, last_name_range,
};
use super::{insert_new, read_present};
use crate::procedure::Txn;
use crate::tables::{Aborted, Direction, Outcome, Scratch, Tx};

pub(super) fn run(txn: &Txn, tx: &mut dyn Tx, scratch: &mut Scratch) -> Result<Outcome, Aborted> {
    let &[w, d, c_w, c_d, selector, date] = txn.keys.as_slice() else {
        unreachable!("a payment input has six words");
    };
    let amount = txn.amount;
    let mut warehouse = [0u64; WAREHOUSE_WORDS];
    read_present(tx, WAREHOUSE, w, &mut warehouse, true)?;
    W_YTD.add_int(&mut warehouse, amount);
    tx.put(WAREHOUSE, w, &warehouse)?;
    let mut district = [0u64; DISTRICT_WORDS];
    read_present(tx, DISTRICT, district_key(w, d), &mut district, true)?;
    D_YTD.add_int(&mut district, amount);
    tx.put(DISTRICT, district_key(w, d), &district)?;

    let customer_key = if txn.flags & BY_LAST_NAME != 0 {
        select_by_last_name(tx, c_w, c_d, selector, scratch)?
    } else {
        customer_key(c_w, c_d, selector)
    };
    let mut customer = [0u64; CUSTOMER_WORDS];
    read_present(tx, CUSTOMER, customer_key, &mut customer, true)?;
    C_BALANCE.add_int(&mut customer, -amount);
    C_YTD_PAYMENT.add_int(&mut customer, amount);
    C_PAYMENT_CNT.add_int(&mut customer, 1);
    if C_CREDIT.chars_eq(&customer, b"BC") {
        let mut data = [0u8; C_DATA_BYTES + 64];
        let mut cursor: &mut [u8] = &mut data;
        let c = C_ID.int(&customer);
        let written = write!(cursor, "{c} {c_d} {c_w} {d} {w} {}.{:02} ", amount / 100, amount % 100);
        debug_assert!(written.is_ok(), "64 bytes hold the payment's details");
        let prefix = C_DATA_BYTES + 64 - cursor.len();
        let mut old = [0u8; C_DATA_BYTES];
        let old = C_DATA.chars(&customer, &mut old);
        let len = (prefix + old.len()).min(C_DATA_BYTES);
        data[prefix..len].copy_from_slice(&old[..len - prefix]);
        C_DATA.set_chars(&mut customer, &data[..len]);
    }
    tx.put(CUSTOMER, customer_key, &customer)?;

    let mut history = [0u64; HISTORY_WORDS];
    H_C_ID.set_int(&mut history, C_ID.int(&customer));
    H_C_D_ID.set_int(&mut history, c_d as i64);
    H_C_W_ID.set_int(&mut history, c_w as i64);
    H_D_ID.set_int(&mut history, d as i64);
    H_W_ID.set_int(&mut history, w as i64);
    H_DATE.set_int(&mut history, date as i64);
    H_AMOUNT.set_int(&mut history, amount);
    let (mut w_name, mut d_name) = ([0u8; 10], [0u8; 10]);
    let (w_name, d_name) = (W_NAME.chars(&warehouse, &mut w_name), D_NAME.chars(&district, &mut d_name));
    let mut h_data = [b' '; 24];
    h_data[..w_name.len()].copy_from_slice(w_name);
    h_data[w_name.len() + 4..w_name.len() + 4 + d_name.len()].copy_from_slice(d_name);
    H_DATA.set_chars(&mut history, &h_data[..w_name.len() + 4 + d_name.len()]);
    let payments = C_PAYMENT_CNT.int(&customer) as u64;
    assert!(
        payments <= PAYMENTS_PER_CUSTOMER_MAX,
        "customer {customer_key:#x} made {payments} payments, more than HISTORY keys allow"
    );
    insert_new(tx, HISTORY, history_key(c_w, c_d, C_ID.int(&customer) as u64, payments), &history)?;
    Ok(Outcome::Commit)
}

/// The key of the customer Payment and OrderStatus pick by last name `last` in district
/// (w, d): of the n customers of that name ordered by first name (then number), the one at
/// position ceil(n / 2) (clause 2.5.2.2). Reads every one of them, as the query would.
pub(super) fn select_by_last_name(
    tx: &mut dyn Tx,
    w: u64,
    d: u64,
    last: u64,
    scratch: &mut Scratch,
) -> Result<u64, Aborted> {
    let (low, high) = last_name_range(w, d, last);
    let candidates = &mut scratch.keys;
    candidates.clear();
    tx.scan(CUSTOMER_BY_LAST_NAME, low, high, Direction::Ascending, usize::MAX, &mut |_, entry| {
        candidates.push(entry[0]);
        true
    })?;
    // Every last name a run draws exists in every district; none means an inconsistent read.
    if candidates.is_empty() {
        return Err(Aborted);
    }
    // Sort keys: the first name's two words in byte order, then the customer key.
    let names = &mut scratch.more_keys;
    names.clear();
    let mut customer = [0u64; CUSTOMER_WORDS];
    for &key in candidates.iter() {
        read_present(tx, CUSTOMER, key, &mut customer, false)?;
        let first = &customer[C_FIRST.word..C_FIRST.word + 2];
        names.extend([first[0].swap_bytes(), first[1].swap_bytes(), key]);
    }
    let count = candidates.len();
    let position = count.div_ceil(2) - 1;
    let sort_key = |i: usize| (names[3 * i], names[3 * i + 1], names[3 * i + 2]);
    let chosen = (0..count)
        .find(|&i| (0..count).filter(|&j| sort_key(j) < sort_key(i)).count() == position)
        .expect("distinct sort keys give every position exactly one candidate");
    Ok(candidates[chosen])
}
