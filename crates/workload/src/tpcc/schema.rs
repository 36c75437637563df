//! TPC-C's nine tables (clause 1.3), the hybrid workload's `analytic_history`, the two
//! secondary indexes, and how composite keys pack into a `u64`.
//!
//! Money is in cents, tax and discount rates in basis points (1/10,000), dates are logical
//! timestamps, and a null carrier or delivery date is 0. Fixed-length strings are `chars`
//! columns of their specified length; variable-length ones take their maximum length.
//!
//! Keys (bits from the most significant end; `w` < 2^10, `d` in 1..=10, `c` < 2^12, item
//! `i` < 2^17, order `o` < 2^24, order-line number `n` in 1..=15):
//!
//! ```text
//!   WAREHOUSE    w                                   10 bits
//!   DISTRICT     w | d                               14 bits   district_key
//!   CUSTOMER     w | d | c                           26 bits
//!   ORDER        w | d | o                           38 bits   NEW-ORDER uses the same key
//!   ORDER-LINE   w | d | o | n                       42 bits
//!   ITEM         i                                   17 bits
//!   STOCK        w | i                               27 bits   (i = 0: the warehouse's stock
//!                                                              as a footprint identity)
//!   HISTORY      w | d | c | payment count           26 + 22 bits
//!   analytic_history   slot | sequence               12 + 36 bits   slot 1 + k: worker k
//!
//!   customer_by_last_name   w | d | last | first[0..2] | c     10+4+10+12+12 = 48 bits
//!   order_by_customer       w | d | c | o                      50 bits
//! ```
//!
//! Every base-table key stays below 2^48, so [`footprint_key`](crate::footprint_key) gives
//! each row its own identity. Within a district, orders are contiguous and ascending by
//! number, so "the oldest NEW-ORDER row" is an ascending scan with limit 1 and "the last 20
//! orders' lines" is one range. The last-name index orders a district's customers by last
//! name (its number 0..999, as the name is made of three syllables that decode uniquely),
//! then by the first two characters of the first name, then by customer number; Payment and
//! OrderStatus read every entry of a last name and rank them by the whole first name, as the
//! specification asks. HISTORY has no primary key in the specification: its synthetic key is
//! the paying customer's key and C_PAYMENT_CNT after the payment, unique because Payment
//! updates that count in the same transaction (two Payments of one customer conflict on the
//! customer row anyway, so the key adds no conflict), and the same whichever worker or
//! workload instance drew the payment. `analytic_history` rows, which no row determines, take
//! a per-worker sequence.

use ordo_storage::{Column, ColumnType, Schema, TableId, TableSchema};

use super::config::TpccScale;
use super::random::{FIRST_NAME_ALPHABET, last_name_number};
use ColumnType::{Chars, Int};

pub const WAREHOUSE: TableId = 0;
pub const DISTRICT: TableId = 1;
pub const CUSTOMER: TableId = 2;
pub const HISTORY: TableId = 3;
pub const NEW_ORDER: TableId = 4;
pub const ORDER: TableId = 5;
pub const ORDER_LINE: TableId = 6;
pub const ITEM: TableId = 7;
pub const STOCK: TableId = 8;
/// Secondary index: a district's customers by last name.
pub const CUSTOMER_BY_LAST_NAME: TableId = 9;
/// Secondary index: a customer's orders by number.
pub const ORDER_BY_CUSTOMER: TableId = 10;
/// The hybrid workload's log of analytic transactions (present only in the hybrid schema).
pub const ANALYTIC_HISTORY: TableId = 11;

/// Bits of a district number in a key.
const DISTRICT_BITS: u32 = 4;
/// Bits of a customer number in a key.
const CUSTOMER_BITS: u32 = 12;
/// Bits of an order number in a key.
pub const ORDER_BITS: u32 = 24;
/// Bits of an order-line number in a key.
const LINE_BITS: u32 = 4;
/// Bits of an item number in a key.
const ITEM_BITS: u32 = 17;
/// Bits of a last-name number in the last-name index.
const LAST_NAME_BITS: u32 = 10;
/// Bits of the first-name prefix in the last-name index (two characters of six bits).
const FIRST_PREFIX_BITS: u32 = 12;
/// Bits of the payment count in a HISTORY key.
const PAYMENT_COUNT_BITS: u32 = 22;
/// Most payments one customer can make (its HISTORY keys run out after).
pub const PAYMENTS_PER_CUSTOMER_MAX: u64 = (1 << PAYMENT_COUNT_BITS) - 1;
/// Bits of the per-slot sequence of an `analytic_history` key.
pub const SEQUENCE_BITS: u32 = 36;
/// Largest order number a district can reach.
pub const ORDER_NUMBER_MAX: u64 = (1 << ORDER_BITS) - 1;

#[inline]
pub const fn district_key(w: u64, d: u64) -> u64 {
    (w << DISTRICT_BITS) | d
}
#[inline]
pub const fn customer_key(w: u64, d: u64, c: u64) -> u64 {
    (district_key(w, d) << CUSTOMER_BITS) | c
}
#[inline]
pub const fn order_key(w: u64, d: u64, o: u64) -> u64 {
    (district_key(w, d) << ORDER_BITS) | o
}
#[inline]
pub const fn order_line_key(w: u64, d: u64, o: u64, number: u64) -> u64 {
    (order_key(w, d, o) << LINE_BITS) | number
}
#[inline]
pub const fn stock_key(w: u64, item: u64) -> u64 {
    (w << ITEM_BITS) | item
}
/// The HISTORY key of customer (w, d, c)'s payment number `payment_count` (1 is the loaded
/// row).
#[inline]
pub const fn history_key(w: u64, d: u64, c: u64, payment_count: u64) -> u64 {
    (customer_key(w, d, c) << PAYMENT_COUNT_BITS) | payment_count
}
/// The key of sequence number `sequence` of slot `slot` in `analytic_history`.
#[inline]
pub const fn sequence_key(slot: u64, sequence: u64) -> u64 {
    (slot << SEQUENCE_BITS) | sequence
}
/// The ORDER-LINE keys of an order (line numbers 1..=15): every line lies in `low..=high`.
#[inline]
pub const fn order_lines_range(order_key: u64) -> (u64, u64) {
    ((order_key << LINE_BITS) | 1, (order_key << LINE_BITS) | 15)
}
/// The order number of an ORDER or NEW-ORDER key.
#[inline]
pub const fn order_number(order_key: u64) -> u64 {
    order_key & ORDER_NUMBER_MAX
}
/// The (warehouse, district) of an ORDER or NEW-ORDER key.
#[inline]
pub const fn order_district(order_key: u64) -> (u64, u64) {
    let district = order_key >> ORDER_BITS;
    (district >> DISTRICT_BITS, district & ((1 << DISTRICT_BITS) - 1))
}
/// The (warehouse, district) of an ORDER-LINE key.
#[inline]
pub const fn order_line_district(line_key: u64) -> (u64, u64) {
    order_district(line_key >> LINE_BITS)
}
/// Keys of the last-name index for last name `last` in district (w, d): every entry lies in
/// `low..=high`.
pub const fn last_name_range(w: u64, d: u64, last: u64) -> (u64, u64) {
    let prefix = (district_key(w, d) << LAST_NAME_BITS) | last;
    let low = prefix << (FIRST_PREFIX_BITS + CUSTOMER_BITS);
    (low, low | ((1 << (FIRST_PREFIX_BITS + CUSTOMER_BITS)) - 1))
}
/// Keys of the order-by-customer index for customer (w, d, c): every entry lies in
/// `low..=high`.
pub const fn customer_orders_range(w: u64, d: u64, c: u64) -> (u64, u64) {
    let low = customer_key(w, d, c) << ORDER_BITS;
    (low, low | ORDER_NUMBER_MAX)
}

/// One column list per table: (name, type), in row order.
type ColumnList = &'static [(&'static str, ColumnType)];

/// The column at `index` of `columns`, with its first word computed at compile time.
const fn column(columns: ColumnList, index: usize) -> Column {
    Column { name: columns[index].0, ty: columns[index].1, word: words_before(columns, index) }
}

const fn words_before(columns: ColumnList, index: usize) -> usize {
    let mut words = 0;
    let mut i = 0;
    while i < index {
        words += match columns[i].1 {
            Int => 1,
            Chars(bytes) => (bytes as usize).div_ceil(8),
        };
        i += 1;
    }
    words
}

pub const WAREHOUSE_COLUMNS: ColumnList = &[
    ("w_id", Int),
    ("w_name", Chars(10)),
    ("w_street_1", Chars(20)),
    ("w_street_2", Chars(20)),
    ("w_city", Chars(20)),
    ("w_state", Chars(2)),
    ("w_zip", Chars(9)),
    ("w_tax", Int),
    ("w_ytd", Int),
];
pub const W_ID: Column = column(WAREHOUSE_COLUMNS, 0);
pub const W_NAME: Column = column(WAREHOUSE_COLUMNS, 1);
pub const W_STREET_1: Column = column(WAREHOUSE_COLUMNS, 2);
pub const W_STREET_2: Column = column(WAREHOUSE_COLUMNS, 3);
pub const W_CITY: Column = column(WAREHOUSE_COLUMNS, 4);
pub const W_STATE: Column = column(WAREHOUSE_COLUMNS, 5);
pub const W_ZIP: Column = column(WAREHOUSE_COLUMNS, 6);
pub const W_TAX: Column = column(WAREHOUSE_COLUMNS, 7);
pub const W_YTD: Column = column(WAREHOUSE_COLUMNS, 8);
pub const WAREHOUSE_WORDS: usize = words_before(WAREHOUSE_COLUMNS, WAREHOUSE_COLUMNS.len());

pub const DISTRICT_COLUMNS: ColumnList = &[
    ("d_id", Int),
    ("d_w_id", Int),
    ("d_name", Chars(10)),
    ("d_street_1", Chars(20)),
    ("d_street_2", Chars(20)),
    ("d_city", Chars(20)),
    ("d_state", Chars(2)),
    ("d_zip", Chars(9)),
    ("d_tax", Int),
    ("d_ytd", Int),
    ("d_next_o_id", Int),
];
pub const D_ID: Column = column(DISTRICT_COLUMNS, 0);
pub const D_W_ID: Column = column(DISTRICT_COLUMNS, 1);
pub const D_NAME: Column = column(DISTRICT_COLUMNS, 2);
pub const D_STREET_1: Column = column(DISTRICT_COLUMNS, 3);
pub const D_STREET_2: Column = column(DISTRICT_COLUMNS, 4);
pub const D_CITY: Column = column(DISTRICT_COLUMNS, 5);
pub const D_STATE: Column = column(DISTRICT_COLUMNS, 6);
pub const D_ZIP: Column = column(DISTRICT_COLUMNS, 7);
pub const D_TAX: Column = column(DISTRICT_COLUMNS, 8);
pub const D_YTD: Column = column(DISTRICT_COLUMNS, 9);
pub const D_NEXT_O_ID: Column = column(DISTRICT_COLUMNS, 10);
pub const DISTRICT_WORDS: usize = words_before(DISTRICT_COLUMNS, DISTRICT_COLUMNS.len());

/// Length of C_DATA.
pub const C_DATA_BYTES: usize = 500;

pub const CUSTOMER_COLUMNS: ColumnList = &[
    ("c_id", Int),
    ("c_d_id", Int),
    ("c_w_id", Int),
    ("c_first", Chars(16)),
    ("c_middle", Chars(2)),
    ("c_last", Chars(16)),
    ("c_street_1", Chars(20)),
    ("c_street_2", Chars(20)),
    ("c_city", Chars(20)),
    ("c_state", Chars(2)),
    ("c_zip", Chars(9)),
    ("c_phone", Chars(16)),
    ("c_since", Int),
    ("c_credit", Chars(2)),
    ("c_credit_lim", Int),
    ("c_discount", Int),
    ("c_balance", Int),
    ("c_ytd_payment", Int),
    ("c_payment_cnt", Int),
    ("c_delivery_cnt", Int),
    ("c_data", Chars(C_DATA_BYTES as u16)),
];
pub const C_ID: Column = column(CUSTOMER_COLUMNS, 0);
pub const C_D_ID: Column = column(CUSTOMER_COLUMNS, 1);
pub const C_W_ID: Column = column(CUSTOMER_COLUMNS, 2);
pub const C_FIRST: Column = column(CUSTOMER_COLUMNS, 3);
pub const C_MIDDLE: Column = column(CUSTOMER_COLUMNS, 4);
pub const C_LAST: Column = column(CUSTOMER_COLUMNS, 5);
pub const C_STREET_1: Column = column(CUSTOMER_COLUMNS, 6);
pub const C_STREET_2: Column = column(CUSTOMER_COLUMNS, 7);
pub const C_CITY: Column = column(CUSTOMER_COLUMNS, 8);
pub const C_STATE: Column = column(CUSTOMER_COLUMNS, 9);
pub const C_ZIP: Column = column(CUSTOMER_COLUMNS, 10);
pub const C_PHONE: Column = column(CUSTOMER_COLUMNS, 11);
pub const C_SINCE: Column = column(CUSTOMER_COLUMNS, 12);
pub const C_CREDIT: Column = column(CUSTOMER_COLUMNS, 13);
pub const C_CREDIT_LIM: Column = column(CUSTOMER_COLUMNS, 14);
pub const C_DISCOUNT: Column = column(CUSTOMER_COLUMNS, 15);
pub const C_BALANCE: Column = column(CUSTOMER_COLUMNS, 16);
pub const C_YTD_PAYMENT: Column = column(CUSTOMER_COLUMNS, 17);
pub const C_PAYMENT_CNT: Column = column(CUSTOMER_COLUMNS, 18);
pub const C_DELIVERY_CNT: Column = column(CUSTOMER_COLUMNS, 19);
pub const C_DATA: Column = column(CUSTOMER_COLUMNS, 20);
pub const CUSTOMER_WORDS: usize = words_before(CUSTOMER_COLUMNS, CUSTOMER_COLUMNS.len());

pub const HISTORY_COLUMNS: ColumnList = &[
    ("h_c_id", Int),
    ("h_c_d_id", Int),
    ("h_c_w_id", Int),
    ("h_d_id", Int),
    ("h_w_id", Int),
    ("h_date", Int),
    ("h_amount", Int),
    ("h_data", Chars(24)),
];
pub const H_C_ID: Column = column(HISTORY_COLUMNS, 0);
pub const H_C_D_ID: Column = column(HISTORY_COLUMNS, 1);
pub const H_C_W_ID: Column = column(HISTORY_COLUMNS, 2);
pub const H_D_ID: Column = column(HISTORY_COLUMNS, 3);
pub const H_W_ID: Column = column(HISTORY_COLUMNS, 4);
pub const H_DATE: Column = column(HISTORY_COLUMNS, 5);
pub const H_AMOUNT: Column = column(HISTORY_COLUMNS, 6);
pub const H_DATA: Column = column(HISTORY_COLUMNS, 7);
pub const HISTORY_WORDS: usize = words_before(HISTORY_COLUMNS, HISTORY_COLUMNS.len());

pub const NEW_ORDER_COLUMNS: ColumnList = &[("no_o_id", Int), ("no_d_id", Int), ("no_w_id", Int)];
pub const NO_O_ID: Column = column(NEW_ORDER_COLUMNS, 0);
pub const NO_D_ID: Column = column(NEW_ORDER_COLUMNS, 1);
pub const NO_W_ID: Column = column(NEW_ORDER_COLUMNS, 2);
pub const NEW_ORDER_WORDS: usize = words_before(NEW_ORDER_COLUMNS, NEW_ORDER_COLUMNS.len());

pub const ORDER_COLUMNS: ColumnList = &[
    ("o_id", Int),
    ("o_d_id", Int),
    ("o_w_id", Int),
    ("o_c_id", Int),
    ("o_entry_d", Int),
    ("o_carrier_id", Int),
    ("o_ol_cnt", Int),
    ("o_all_local", Int),
];
pub const O_ID: Column = column(ORDER_COLUMNS, 0);
pub const O_D_ID: Column = column(ORDER_COLUMNS, 1);
pub const O_W_ID: Column = column(ORDER_COLUMNS, 2);
pub const O_C_ID: Column = column(ORDER_COLUMNS, 3);
pub const O_ENTRY_D: Column = column(ORDER_COLUMNS, 4);
pub const O_CARRIER_ID: Column = column(ORDER_COLUMNS, 5);
pub const O_OL_CNT: Column = column(ORDER_COLUMNS, 6);
pub const O_ALL_LOCAL: Column = column(ORDER_COLUMNS, 7);
pub const ORDER_WORDS: usize = words_before(ORDER_COLUMNS, ORDER_COLUMNS.len());

pub const ORDER_LINE_COLUMNS: ColumnList = &[
    ("ol_o_id", Int),
    ("ol_d_id", Int),
    ("ol_w_id", Int),
    ("ol_number", Int),
    ("ol_i_id", Int),
    ("ol_supply_w_id", Int),
    ("ol_delivery_d", Int),
    ("ol_quantity", Int),
    ("ol_amount", Int),
    ("ol_dist_info", Chars(24)),
];
pub const OL_O_ID: Column = column(ORDER_LINE_COLUMNS, 0);
pub const OL_D_ID: Column = column(ORDER_LINE_COLUMNS, 1);
pub const OL_W_ID: Column = column(ORDER_LINE_COLUMNS, 2);
pub const OL_NUMBER: Column = column(ORDER_LINE_COLUMNS, 3);
pub const OL_I_ID: Column = column(ORDER_LINE_COLUMNS, 4);
pub const OL_SUPPLY_W_ID: Column = column(ORDER_LINE_COLUMNS, 5);
pub const OL_DELIVERY_D: Column = column(ORDER_LINE_COLUMNS, 6);
pub const OL_QUANTITY: Column = column(ORDER_LINE_COLUMNS, 7);
pub const OL_AMOUNT: Column = column(ORDER_LINE_COLUMNS, 8);
pub const OL_DIST_INFO: Column = column(ORDER_LINE_COLUMNS, 9);
pub const ORDER_LINE_WORDS: usize = words_before(ORDER_LINE_COLUMNS, ORDER_LINE_COLUMNS.len());

pub const ITEM_COLUMNS: ColumnList =
    &[("i_id", Int), ("i_im_id", Int), ("i_name", Chars(24)), ("i_price", Int), ("i_data", Chars(50))];
pub const I_ID: Column = column(ITEM_COLUMNS, 0);
pub const I_IM_ID: Column = column(ITEM_COLUMNS, 1);
pub const I_NAME: Column = column(ITEM_COLUMNS, 2);
pub const I_PRICE: Column = column(ITEM_COLUMNS, 3);
pub const I_DATA: Column = column(ITEM_COLUMNS, 4);
pub const ITEM_WORDS: usize = words_before(ITEM_COLUMNS, ITEM_COLUMNS.len());

pub const STOCK_COLUMNS: ColumnList = &[
    ("s_i_id", Int),
    ("s_w_id", Int),
    ("s_quantity", Int),
    ("s_dist_01", Chars(24)),
    ("s_dist_02", Chars(24)),
    ("s_dist_03", Chars(24)),
    ("s_dist_04", Chars(24)),
    ("s_dist_05", Chars(24)),
    ("s_dist_06", Chars(24)),
    ("s_dist_07", Chars(24)),
    ("s_dist_08", Chars(24)),
    ("s_dist_09", Chars(24)),
    ("s_dist_10", Chars(24)),
    ("s_ytd", Int),
    ("s_order_cnt", Int),
    ("s_remote_cnt", Int),
    ("s_data", Chars(50)),
];
pub const S_I_ID: Column = column(STOCK_COLUMNS, 0);
pub const S_W_ID: Column = column(STOCK_COLUMNS, 1);
pub const S_QUANTITY: Column = column(STOCK_COLUMNS, 2);
/// S_DIST_01 .. S_DIST_10, by district number minus one.
pub const S_DIST: [Column; 10] = [
    column(STOCK_COLUMNS, 3),
    column(STOCK_COLUMNS, 4),
    column(STOCK_COLUMNS, 5),
    column(STOCK_COLUMNS, 6),
    column(STOCK_COLUMNS, 7),
    column(STOCK_COLUMNS, 8),
    column(STOCK_COLUMNS, 9),
    column(STOCK_COLUMNS, 10),
    column(STOCK_COLUMNS, 11),
    column(STOCK_COLUMNS, 12),
];
pub const S_YTD: Column = column(STOCK_COLUMNS, 13);
pub const S_ORDER_CNT: Column = column(STOCK_COLUMNS, 14);
pub const S_REMOTE_CNT: Column = column(STOCK_COLUMNS, 15);
pub const S_DATA: Column = column(STOCK_COLUMNS, 16);
pub const STOCK_WORDS: usize = words_before(STOCK_COLUMNS, STOCK_COLUMNS.len());

/// One row per committed analytic transaction: what it scanned and what it summed.
pub const ANALYTIC_HISTORY_COLUMNS: ColumnList = &[
    ("ah_w_id", Int),
    ("ah_first_customer", Int),
    ("ah_customers", Int),
    ("ah_balance_sum", Int),
    ("ah_open_amount_sum", Int),
    ("ah_open_orders", Int),
    ("ah_date", Int),
];
pub const AH_W_ID: Column = column(ANALYTIC_HISTORY_COLUMNS, 0);
pub const AH_FIRST_CUSTOMER: Column = column(ANALYTIC_HISTORY_COLUMNS, 1);
pub const AH_CUSTOMERS: Column = column(ANALYTIC_HISTORY_COLUMNS, 2);
pub const AH_BALANCE_SUM: Column = column(ANALYTIC_HISTORY_COLUMNS, 3);
pub const AH_OPEN_AMOUNT_SUM: Column = column(ANALYTIC_HISTORY_COLUMNS, 4);
pub const AH_OPEN_ORDERS: Column = column(ANALYTIC_HISTORY_COLUMNS, 5);
pub const AH_DATE: Column = column(ANALYTIC_HISTORY_COLUMNS, 6);
pub const ANALYTIC_HISTORY_WORDS: usize = words_before(ANALYTIC_HISTORY_COLUMNS, ANALYTIC_HISTORY_COLUMNS.len());

/// The last-name index's key of a customer row.
fn customer_by_last_name_key(_primary_key: u64, row: &[u64]) -> u64 {
    let mut last = [0u8; 16];
    let number = last_name_number(C_LAST.chars(row, &mut last)).unwrap_or(0);
    let mut first = [0u8; 16];
    let first = C_FIRST.chars(row, &mut first);
    let code = |i: usize| first.get(i).and_then(|b| FIRST_NAME_ALPHABET.iter().position(|a| a == b)).unwrap_or(0);
    let prefix = (code(0) << 6 | code(1)) as u64;
    let (low, _) = last_name_range(C_W_ID.int(row) as u64, C_D_ID.int(row) as u64, number);
    low | (prefix << CUSTOMER_BITS) | C_ID.int(row) as u64
}

/// The order-by-customer index's key of an order row.
fn order_by_customer_key(_primary_key: u64, row: &[u64]) -> u64 {
    let (low, _) = customer_orders_range(O_W_ID.int(row) as u64, O_D_ID.int(row) as u64, O_C_ID.int(row) as u64);
    low | O_ID.int(row) as u64
}

fn table(name: &'static str, columns: ColumnList, rows: u64) -> TableSchema {
    columns.iter().fold(TableSchema::new(name), |table, &(column, ty)| table.column(column, ty)).rows_hint(rows)
}

/// The schema of `warehouses` warehouses at `scale`; with `analytic_history` when `hybrid`.
pub fn build(warehouses: u32, scale: TpccScale, hybrid: bool) -> Schema {
    let w = u64::from(warehouses);
    let customers = w * super::config::DISTRICTS_PER_WAREHOUSE * u64::from(scale.customers_per_district);
    let undelivered = w * super::config::DISTRICTS_PER_WAREHOUSE * u64::from(scale.undelivered_per_district());
    let mut schema = Schema::new();
    let tables = [
        (WAREHOUSE, table("warehouse", WAREHOUSE_COLUMNS, w)),
        (DISTRICT, table("district", DISTRICT_COLUMNS, w * super::config::DISTRICTS_PER_WAREHOUSE)),
        (CUSTOMER, table("customer", CUSTOMER_COLUMNS, customers)),
        (HISTORY, table("history", HISTORY_COLUMNS, customers)),
        (NEW_ORDER, table("new_order", NEW_ORDER_COLUMNS, undelivered)),
        (ORDER, table("order", ORDER_COLUMNS, customers)),
        (ORDER_LINE, table("order_line", ORDER_LINE_COLUMNS, customers * 10)),
        (ITEM, table("item", ITEM_COLUMNS, u64::from(scale.items))),
        (STOCK, table("stock", STOCK_COLUMNS, w * u64::from(scale.items))),
    ];
    for (id, table) in tables {
        assert_eq!(schema.add(table), Ok(id), "TPC-C's tables take their fixed ids");
    }
    assert_eq!(
        schema.add_index("customer_by_last_name", CUSTOMER, customer_by_last_name_key),
        Ok(CUSTOMER_BY_LAST_NAME)
    );
    assert_eq!(schema.add_index("order_by_customer", ORDER, order_by_customer_key), Ok(ORDER_BY_CUSTOMER));
    if hybrid {
        assert_eq!(schema.add(table("analytic_history", ANALYTIC_HISTORY_COLUMNS, 0)), Ok(ANALYTIC_HISTORY));
    }
    schema
}
