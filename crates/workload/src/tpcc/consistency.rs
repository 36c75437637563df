//! TPC-C's consistency conditions 1 to 4 (clause 3.3.2.1 to 3.3.2.4), checked on a quiescent
//! database:
//!
//! ```text
//!   1  per warehouse: W_YTD = sum(D_YTD) of its districts
//!   2  per district:  D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)
//!   3  per district:  max(NO_O_ID) - min(NO_O_ID) + 1 = number of NEW-ORDER rows
//!   4  per district:  sum(O_OL_CNT) = number of ORDER-LINE rows
//! ```
//!
//! A district whose NEW-ORDER rows have all been delivered has no max(NO_O_ID); conditions 2
//! and 3 then hold on what remains (D_NEXT_O_ID - 1 = max(O_ID)). Each table is read with one
//! scan and aggregated per district.

use super::config::DISTRICTS_PER_WAREHOUSE;
use super::schema::{
    D_ID, D_NEXT_O_ID, D_W_ID, D_YTD, DISTRICT, NEW_ORDER, NO_O_ID, O_ID, O_OL_CNT, ORDER, ORDER_LINE, W_YTD,
    WAREHOUSE, order_district, order_line_district,
};
use crate::tables::{Aborted, ConsistencyError, ConsistencyReport, Direction, Tx};

pub const CONDITION_1: &str = "1: W_YTD = sum(D_YTD)";
pub const CONDITION_2: &str = "2: D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)";
pub const CONDITION_3: &str = "3: max(NO_O_ID) - min(NO_O_ID) + 1 = count(NEW-ORDER)";
pub const CONDITION_4: &str = "4: sum(O_OL_CNT) = count(ORDER-LINE)";

/// What one district's rows add up to.
#[derive(Debug, Clone, Copy, Default)]
struct DistrictTotals {
    ytd: i64,
    next_o_id: i64,
    present: bool,
    max_o_id: i64,
    order_lines_declared: i64,
    new_orders: i64,
    min_no_o_id: i64,
    max_no_o_id: i64,
    order_lines: i64,
}

fn unreadable(_: Aborted) -> ConsistencyError {
    ConsistencyError { condition: "readable".into(), detail: "the check's scan aborted".into() }
}

fn violated(condition: &str, w: u64, d: Option<u64>, detail: &str) -> ConsistencyError {
    let place = match d {
        Some(d) => format!("warehouse {w} district {d}"),
        None => format!("warehouse {w}"),
    };
    ConsistencyError { condition: condition.into(), detail: format!("{place}: {detail}") }
}

/// Checks conditions 1 to 4 over `warehouses` warehouses.
pub(super) fn check(tx: &mut dyn Tx, warehouses: u64) -> Result<ConsistencyReport, ConsistencyError> {
    let per_warehouse = DISTRICTS_PER_WAREHOUSE as usize;
    let slot = |w: u64, d: u64| -> Option<usize> {
        ((1..=warehouses).contains(&w) && (1..=DISTRICTS_PER_WAREHOUSE).contains(&d))
            .then(|| (w - 1) as usize * per_warehouse + (d - 1) as usize)
    };
    let mut districts = vec![DistrictTotals::default(); warehouses as usize * per_warehouse];
    let mut warehouse_ytd = vec![None; warehouses as usize];
    let mut stray = None;

    tx.scan(WAREHOUSE, 0, u64::MAX, Direction::Ascending, usize::MAX, &mut |w, row| {
        match warehouse_ytd.get_mut((w as usize).wrapping_sub(1)) {
            Some(ytd) => *ytd = Some(W_YTD.int(row)),
            None => stray = Some(format!("warehouse {w} beyond the configured {warehouses}")),
        }
        true
    })
    .map_err(unreadable)?;
    tx.scan(DISTRICT, 0, u64::MAX, Direction::Ascending, usize::MAX, &mut |_, row| {
        match slot(D_W_ID.int(row) as u64, D_ID.int(row) as u64) {
            Some(i) => {
                districts[i].ytd = D_YTD.int(row);
                districts[i].next_o_id = D_NEXT_O_ID.int(row);
                districts[i].present = true;
            }
            None => stray = Some(format!("district row {row:?} outside the configured warehouses")),
        }
        true
    })
    .map_err(unreadable)?;
    tx.scan(ORDER, 0, u64::MAX, Direction::Ascending, usize::MAX, &mut |key, row| {
        let (w, d) = order_district(key);
        if let Some(i) = slot(w, d) {
            districts[i].max_o_id = districts[i].max_o_id.max(O_ID.int(row));
            districts[i].order_lines_declared += O_OL_CNT.int(row);
        }
        true
    })
    .map_err(unreadable)?;
    tx.scan(NEW_ORDER, 0, u64::MAX, Direction::Ascending, usize::MAX, &mut |key, row| {
        let (w, d) = order_district(key);
        if let Some(i) = slot(w, d) {
            let o = NO_O_ID.int(row);
            let totals = &mut districts[i];
            totals.min_no_o_id = if totals.new_orders == 0 { o } else { totals.min_no_o_id.min(o) };
            totals.max_no_o_id = totals.max_no_o_id.max(o);
            totals.new_orders += 1;
        }
        true
    })
    .map_err(unreadable)?;
    tx.scan(ORDER_LINE, 0, u64::MAX, Direction::Ascending, usize::MAX, &mut |key, _| {
        let (w, d) = order_line_district(key);
        if let Some(i) = slot(w, d) {
            districts[i].order_lines += 1;
        }
        true
    })
    .map_err(unreadable)?;
    if let Some(detail) = stray {
        return Err(ConsistencyError { condition: "rows within the configuration".into(), detail });
    }

    for w in 1..=warehouses {
        let Some(ytd) = warehouse_ytd[(w - 1) as usize] else {
            return Err(violated(CONDITION_1, w, None, "the warehouse row is missing"));
        };
        let of_warehouse = &districts[(w - 1) as usize * per_warehouse..w as usize * per_warehouse];
        if let Some(d) = of_warehouse.iter().position(|t| !t.present) {
            return Err(violated(CONDITION_1, w, Some(d as u64 + 1), "the district row is missing"));
        }
        let sum: i64 = of_warehouse.iter().map(|t| t.ytd).sum();
        if ytd != sum {
            return Err(violated(CONDITION_1, w, None, &format!("W_YTD {ytd} but the districts' D_YTD sum to {sum}")));
        }
    }
    for (i, t) in districts.iter().enumerate() {
        let (w, d) = ((i / per_warehouse) as u64 + 1, Some((i % per_warehouse) as u64 + 1));
        let newest_no = if t.new_orders > 0 { t.max_no_o_id } else { t.next_o_id - 1 };
        if t.next_o_id - 1 != t.max_o_id || t.max_o_id != newest_no {
            let detail = format!(
                "D_NEXT_O_ID - 1 = {}, max(O_ID) = {}, max(NO_O_ID) = {}",
                t.next_o_id - 1,
                t.max_o_id,
                if t.new_orders > 0 { t.max_no_o_id.to_string() } else { "none".into() }
            );
            return Err(violated(CONDITION_2, w, d, &detail));
        }
        if t.new_orders > 0 && t.max_no_o_id - t.min_no_o_id + 1 != t.new_orders {
            let detail = format!(
                "NO_O_ID spans {}..={} but {} NEW-ORDER rows exist",
                t.min_no_o_id, t.max_no_o_id, t.new_orders
            );
            return Err(violated(CONDITION_3, w, d, &detail));
        }
        if t.order_lines_declared != t.order_lines {
            let detail =
                format!("sum(O_OL_CNT) = {} but {} ORDER-LINE rows exist", t.order_lines_declared, t.order_lines);
            return Err(violated(CONDITION_4, w, d, &detail));
        }
    }
    Ok(ConsistencyReport { checked: [CONDITION_1, CONDITION_2, CONDITION_3, CONDITION_4].map(String::from).to_vec() })
}
