//! The initial database (clause 4.3.3.1), generated in independent units so that loading runs
//! on as many threads as the engine likes.
//!
//! ```text
//!   unit 0..10                      items, in ten chunks
//!   per warehouse w (21 units):     the warehouse row and its ten district rows
//!                                   its stock, in ten chunks
//!                                   one unit per district: customers, their history rows,
//!                                   orders, order lines and the undelivered NEW-ORDER rows
//! ```
//!
//! Unit `u` goes to part `u % parts`, and draws from its own generator seeded by the
//! configuration's seed and `u`, so the database is the same whatever the number of parts.

use rand::Rng;
use rand::seq::SliceRandom;

use super::config::{DISTRICTS_PER_WAREHOUSE, TpccConfig};
use super::random::{
    A_LAST_NAME, LAST_NAME_NUMBER_MAX, NurandConstants, a_string, data_string, last_name, n_string, nurand, zip,
};
use super::schema::{
    C_BALANCE, C_CITY, C_CREDIT, C_CREDIT_LIM, C_D_ID, C_DATA, C_DATA_BYTES, C_DELIVERY_CNT, C_DISCOUNT, C_FIRST, C_ID,
    C_LAST, C_MIDDLE, C_PAYMENT_CNT, C_PHONE, C_SINCE, C_STATE, C_STREET_1, C_STREET_2, C_W_ID, C_YTD_PAYMENT, C_ZIP,
    CUSTOMER, CUSTOMER_WORDS, D_CITY, D_ID, D_NAME, D_NEXT_O_ID, D_STATE, D_STREET_1, D_STREET_2, D_TAX, D_W_ID, D_YTD,
    D_ZIP, DISTRICT, DISTRICT_WORDS, H_AMOUNT, H_C_D_ID, H_C_ID, H_C_W_ID, H_D_ID, H_DATA, H_DATE, H_W_ID, HISTORY,
    HISTORY_WORDS, I_DATA, I_ID, I_IM_ID, I_NAME, I_PRICE, ITEM, ITEM_WORDS, NEW_ORDER, NEW_ORDER_WORDS, NO_D_ID,
    NO_O_ID, NO_W_ID, O_ALL_LOCAL, O_C_ID, O_CARRIER_ID, O_D_ID, O_ENTRY_D, O_ID, O_OL_CNT, O_W_ID, OL_AMOUNT, OL_D_ID,
    OL_DELIVERY_D, OL_DIST_INFO, OL_I_ID, OL_NUMBER, OL_O_ID, OL_QUANTITY, OL_SUPPLY_W_ID, OL_W_ID, ORDER, ORDER_LINE,
    ORDER_LINE_WORDS, ORDER_WORDS, S_DATA, S_DIST, S_I_ID, S_ORDER_CNT, S_QUANTITY, S_REMOTE_CNT, S_W_ID, S_YTD, STOCK,
    STOCK_WORDS, W_CITY, W_ID, W_NAME, W_STATE, W_STREET_1, W_STREET_2, W_TAX, W_YTD, W_ZIP, WAREHOUSE,
    WAREHOUSE_WORDS, customer_key, district_key, history_key, order_key, order_line_key, stock_key,
};
use crate::{WorkloadRng, rng_from_seed};
use ordo_storage::TableId;

/// The logical date of every loaded row; transactions stamp later dates.
pub const LOAD_DATE: i64 = 1;
/// Item chunks (units of loading).
const ITEM_CHUNKS: usize = 10;
/// Stock chunks per warehouse.
const STOCK_CHUNKS: usize = 10;
/// Units per warehouse: its rows, its stock chunks, its districts.
const UNITS_PER_WAREHOUSE: usize = 1 + STOCK_CHUNKS + DISTRICTS_PER_WAREHOUSE as usize;

/// Y2K-style money: W_YTD starts at 300,000.00 and each D_YTD at 30,000.00 (in cents).
pub const WAREHOUSE_YTD_CENTS: i64 = 30_000_000;
pub const DISTRICT_YTD_CENTS: i64 = 3_000_000;

/// What a unit of loading produces.
#[derive(Debug, Clone, Copy)]
enum Unit {
    Items { chunk: usize },
    Warehouse { w: u64 },
    Stock { w: u64, chunk: usize },
    District { w: u64, d: u64 },
}

fn unit(index: usize) -> Unit {
    if index < ITEM_CHUNKS {
        return Unit::Items { chunk: index };
    }
    let rest = index - ITEM_CHUNKS;
    let w = (rest / UNITS_PER_WAREHOUSE) as u64 + 1;
    match rest % UNITS_PER_WAREHOUSE {
        0 => Unit::Warehouse { w },
        k if k <= STOCK_CHUNKS => Unit::Stock { w, chunk: k - 1 },
        k => Unit::District { w, d: (k - STOCK_CHUNKS) as u64 },
    }
}

/// The sub-range `chunk` of `chunks` of `1..=count`.
fn chunk_range(count: u64, chunk: usize, chunks: usize) -> std::ops::RangeInclusive<u64> {
    let size = count.div_ceil(chunks as u64);
    let first = chunk as u64 * size + 1;
    first..=((chunk as u64 + 1) * size).min(count)
}

fn unit_rng(seed: u64, unit: usize) -> WorkloadRng {
    rng_from_seed(seed.rotate_left(17) ^ (unit as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// Emits part `part` of `parts` of the database of `config`.
pub fn load(config: &TpccConfig, part: usize, parts: usize, sink: &mut dyn FnMut(TableId, u64, &[u64])) {
    let parts = parts.max(1);
    let constants = NurandConstants::from_seed(config.seed);
    let units = ITEM_CHUNKS + config.warehouses as usize * UNITS_PER_WAREHOUSE;
    for index in (part..units).step_by(parts) {
        let mut rng = unit_rng(config.seed, index);
        match unit(index) {
            Unit::Items { chunk } => load_items(config, chunk, &mut rng, sink),
            Unit::Warehouse { w } => load_warehouse(w, &mut rng, sink),
            Unit::Stock { w, chunk } => load_stock(config, w, chunk, &mut rng, sink),
            Unit::District { w, d } => load_district(config, &constants, w, d, &mut rng, sink),
        }
    }
}

/// Sets a character column to a random a-string of `min..=max` characters.
fn set_a_string(column: ordo_storage::Column, rng: &mut WorkloadRng, min: usize, max: usize, row: &mut [u64]) {
    let mut bytes = [0u8; C_DATA_BYTES];
    let len = a_string(rng, min, max, &mut bytes);
    column.set_chars(row, &bytes[..len]);
}

fn set_zip(column: ordo_storage::Column, rng: &mut WorkloadRng, row: &mut [u64]) {
    let mut bytes = [0u8; 9];
    zip(rng, &mut bytes);
    column.set_chars(row, &bytes);
}

fn set_state(column: ordo_storage::Column, rng: &mut WorkloadRng, row: &mut [u64]) {
    let state = [rng.random_range(b'A'..=b'Z'), rng.random_range(b'A'..=b'Z')];
    column.set_chars(row, &state);
}

fn load_items(config: &TpccConfig, chunk: usize, rng: &mut WorkloadRng, sink: &mut dyn FnMut(TableId, u64, &[u64])) {
    let mut row = [0u64; ITEM_WORDS];
    let mut data = [0u8; 50];
    for i in chunk_range(u64::from(config.scale.items), chunk, ITEM_CHUNKS) {
        I_ID.set_int(&mut row, i as i64);
        I_IM_ID.set_int(&mut row, rng.random_range(1..=10_000));
        set_a_string(I_NAME, rng, 14, 24, &mut row);
        I_PRICE.set_int(&mut row, rng.random_range(100..=10_000));
        let len = data_string(rng, &mut data);
        I_DATA.set_chars(&mut row, &data[..len]);
        sink(ITEM, i, &row);
    }
}

fn load_warehouse(w: u64, rng: &mut WorkloadRng, sink: &mut dyn FnMut(TableId, u64, &[u64])) {
    let mut row = [0u64; WAREHOUSE_WORDS];
    W_ID.set_int(&mut row, w as i64);
    set_a_string(W_NAME, rng, 6, 10, &mut row);
    set_a_string(W_STREET_1, rng, 10, 20, &mut row);
    set_a_string(W_STREET_2, rng, 10, 20, &mut row);
    set_a_string(W_CITY, rng, 10, 20, &mut row);
    set_state(W_STATE, rng, &mut row);
    set_zip(W_ZIP, rng, &mut row);
    W_TAX.set_int(&mut row, rng.random_range(0..=2_000));
    W_YTD.set_int(&mut row, WAREHOUSE_YTD_CENTS);
    sink(WAREHOUSE, w, &row);
}

fn load_stock(
    config: &TpccConfig,
    w: u64,
    chunk: usize,
    rng: &mut WorkloadRng,
    sink: &mut dyn FnMut(TableId, u64, &[u64]),
) {
    let mut row = [0u64; STOCK_WORDS];
    let mut data = [0u8; 50];
    for i in chunk_range(u64::from(config.scale.items), chunk, STOCK_CHUNKS) {
        S_I_ID.set_int(&mut row, i as i64);
        S_W_ID.set_int(&mut row, w as i64);
        S_QUANTITY.set_int(&mut row, rng.random_range(10..=100));
        for column in S_DIST {
            set_a_string(column, rng, 24, 24, &mut row);
        }
        S_YTD.set_int(&mut row, 0);
        S_ORDER_CNT.set_int(&mut row, 0);
        S_REMOTE_CNT.set_int(&mut row, 0);
        let len = data_string(rng, &mut data);
        S_DATA.set_chars(&mut row, &data[..len]);
        sink(STOCK, stock_key(w, i), &row);
    }
}

fn load_district(
    config: &TpccConfig,
    constants: &NurandConstants,
    w: u64,
    d: u64,
    rng: &mut WorkloadRng,
    sink: &mut dyn FnMut(TableId, u64, &[u64]),
) {
    let customers = u64::from(config.scale.customers_per_district);
    let first_undelivered = customers - u64::from(config.scale.undelivered_per_district()) + 1;

    let mut row = [0u64; DISTRICT_WORDS];
    D_ID.set_int(&mut row, d as i64);
    D_W_ID.set_int(&mut row, w as i64);
    set_a_string(D_NAME, rng, 6, 10, &mut row);
    set_a_string(D_STREET_1, rng, 10, 20, &mut row);
    set_a_string(D_STREET_2, rng, 10, 20, &mut row);
    set_a_string(D_CITY, rng, 10, 20, &mut row);
    set_state(D_STATE, rng, &mut row);
    set_zip(D_ZIP, rng, &mut row);
    D_TAX.set_int(&mut row, rng.random_range(0..=2_000));
    D_YTD.set_int(&mut row, DISTRICT_YTD_CENTS);
    D_NEXT_O_ID.set_int(&mut row, customers as i64 + 1);
    sink(DISTRICT, district_key(w, d), &row);

    let mut row = [0u64; CUSTOMER_WORDS];
    let mut history = [0u64; HISTORY_WORDS];
    let mut name = [0u8; 16];
    let mut phone = [0u8; 16];
    for c in 1..=customers {
        C_ID.set_int(&mut row, c as i64);
        C_D_ID.set_int(&mut row, d as i64);
        C_W_ID.set_int(&mut row, w as i64);
        // The first 1,000 customers take every last name once; the rest are skewed.
        let number = if c <= LAST_NAME_NUMBER_MAX + 1 {
            c - 1
        } else {
            nurand(rng, A_LAST_NAME, 0, LAST_NAME_NUMBER_MAX, constants.last_name_load)
        };
        let len = last_name(number, &mut name);
        C_LAST.set_chars(&mut row, &name[..len]);
        C_MIDDLE.set_chars(&mut row, b"OE");
        set_a_string(C_FIRST, rng, 8, 16, &mut row);
        set_a_string(C_STREET_1, rng, 10, 20, &mut row);
        set_a_string(C_STREET_2, rng, 10, 20, &mut row);
        set_a_string(C_CITY, rng, 10, 20, &mut row);
        set_state(C_STATE, rng, &mut row);
        set_zip(C_ZIP, rng, &mut row);
        n_string(rng, 16, 16, &mut phone);
        C_PHONE.set_chars(&mut row, &phone);
        C_SINCE.set_int(&mut row, LOAD_DATE);
        C_CREDIT.set_chars(&mut row, if rng.random_range(0..10) == 0 { b"BC" } else { b"GC" });
        C_CREDIT_LIM.set_int(&mut row, 5_000_000);
        C_DISCOUNT.set_int(&mut row, rng.random_range(0..=5_000));
        C_BALANCE.set_int(&mut row, -1_000);
        C_YTD_PAYMENT.set_int(&mut row, 1_000);
        C_PAYMENT_CNT.set_int(&mut row, 1);
        C_DELIVERY_CNT.set_int(&mut row, 0);
        set_a_string(C_DATA, rng, 300, 500, &mut row);
        sink(CUSTOMER, customer_key(w, d, c), &row);

        H_C_ID.set_int(&mut history, c as i64);
        H_C_D_ID.set_int(&mut history, d as i64);
        H_C_W_ID.set_int(&mut history, w as i64);
        H_D_ID.set_int(&mut history, d as i64);
        H_W_ID.set_int(&mut history, w as i64);
        H_DATE.set_int(&mut history, LOAD_DATE);
        H_AMOUNT.set_int(&mut history, 1_000);
        set_a_string(H_DATA, rng, 12, 24, &mut history);
        sink(HISTORY, history_key(w, d, c, 1), &history);
    }

    let mut owners: Vec<u64> = (1..=customers).collect();
    owners.shuffle(rng);
    let mut order = [0u64; ORDER_WORDS];
    let mut line = [0u64; ORDER_LINE_WORDS];
    let mut new_order = [0u64; NEW_ORDER_WORDS];
    for (o, &owner) in (1..=customers).zip(&owners) {
        let delivered = o < first_undelivered;
        let lines = rng.random_range(5..=15u64);
        O_ID.set_int(&mut order, o as i64);
        O_D_ID.set_int(&mut order, d as i64);
        O_W_ID.set_int(&mut order, w as i64);
        O_C_ID.set_int(&mut order, owner as i64);
        O_ENTRY_D.set_int(&mut order, LOAD_DATE);
        O_CARRIER_ID.set_int(&mut order, if delivered { rng.random_range(1..=10) } else { 0 });
        O_OL_CNT.set_int(&mut order, lines as i64);
        O_ALL_LOCAL.set_int(&mut order, 1);
        sink(ORDER, order_key(w, d, o), &order);
        for number in 1..=lines {
            OL_O_ID.set_int(&mut line, o as i64);
            OL_D_ID.set_int(&mut line, d as i64);
            OL_W_ID.set_int(&mut line, w as i64);
            OL_NUMBER.set_int(&mut line, number as i64);
            OL_I_ID.set_int(&mut line, rng.random_range(1..=i64::from(config.scale.items)));
            OL_SUPPLY_W_ID.set_int(&mut line, w as i64);
            OL_DELIVERY_D.set_int(&mut line, if delivered { LOAD_DATE } else { 0 });
            OL_QUANTITY.set_int(&mut line, 5);
            OL_AMOUNT.set_int(&mut line, if delivered { 0 } else { rng.random_range(1..=999_999) });
            set_a_string(OL_DIST_INFO, rng, 24, 24, &mut line);
            sink(ORDER_LINE, order_line_key(w, d, o, number), &line);
        }
        if !delivered {
            NO_O_ID.set_int(&mut new_order, o as i64);
            NO_D_ID.set_int(&mut new_order, d as i64);
            NO_W_ID.set_int(&mut new_order, w as i64);
            sink(NEW_ORDER, order_key(w, d, o), &new_order);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_every_number_once() {
        for count in [1u64, 9, 10, 11, 100_000] {
            let all: Vec<u64> = (0..ITEM_CHUNKS).flat_map(|c| chunk_range(count, c, ITEM_CHUNKS)).collect();
            assert_eq!(all, (1..=count).collect::<Vec<_>>(), "count {count}");
        }
    }

    #[test]
    fn units_cover_every_warehouse_and_district() {
        let units: Vec<String> = (0..ITEM_CHUNKS + 2 * UNITS_PER_WAREHOUSE).map(|u| format!("{:?}", unit(u))).collect();
        assert!(units.contains(&"Warehouse { w: 2 }".to_owned()));
        assert!(units.contains(&"District { w: 2, d: 10 }".to_owned()));
        assert!(units.contains(&"Stock { w: 1, chunk: 9 }".to_owned()));
        assert_eq!(units.iter().filter(|u| u.starts_with("District")).count(), 20);
    }
}
