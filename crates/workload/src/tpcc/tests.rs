//! TPC-C on the reference database: loading, every transaction's effects, the input rules'
//! frequencies, the consistency conditions (and that they catch a broken database), and the
//! soundness of footprints. Every randomized test names its seed in its failure message and
//! replays with `cargo test -p ordo-workload tpcc::tests::<name>`.

use std::collections::{BTreeMap, BTreeSet};

use ordo_storage::TableId;
use proptest::prelude::*;

use super::input::{ORDER_LINES_MAX, OrderLineInput};
use super::random::{LAST_NAME_NUMBER_MAX, NurandConstants, last_name, last_name_number, nurand};
use super::schema::*;
use super::*;
use crate::rng_from_seed;
use crate::tables::{Direction, Maintained, MemoryDb};

fn workload(warehouses: u32, binding: Binding, hybrid: Option<HybridConfig>, scale: TpccScale) -> Tpcc {
    Tpcc::new(TpccConfig { warehouses, binding, hybrid, scale, ..TpccConfig::default() }).unwrap()
}

fn small(warehouses: u32) -> Tpcc {
    workload(warehouses, Binding::Random, None, TpccScale::SMALL)
}

/// Draws and runs `count` transactions over `workers` workers; returns (commits, user aborts)
/// per procedure.
fn run_mix(tpcc: &Tpcc, db: &mut MemoryDb, seed: u64, count: usize, workers: usize) -> [(usize, usize); 6] {
    let (mut rng, mut txn, mut scratch) = (rng_from_seed(seed), Txn::default(), Scratch::default());
    let mut outcomes = [(0, 0); 6];
    for i in 0..count {
        tpcc.generate(&mut rng, i % workers, &mut txn);
        match db.run(tpcc, &txn, &mut scratch) {
            Outcome::Commit => outcomes[txn.procedure as usize].0 += 1,
            Outcome::UserAbort => outcomes[txn.procedure as usize].1 += 1,
        }
    }
    outcomes
}

fn snapshot(tpcc: &Tpcc, db: &MemoryDb) -> Vec<BTreeMap<u64, Vec<u64>>> {
    (0..tpcc.schema().tables().len()).map(|t| db.table(t as TableId).clone()).collect()
}

fn draw_until(tpcc: &Tpcc, rng: &mut crate::WorkloadRng, procedure: u8, txn: &mut Txn) {
    for _ in 0..100_000 {
        tpcc.generate(rng, 0, txn);
        if txn.procedure == procedure {
            return;
        }
    }
    panic!("procedure {procedure} never drawn");
}

#[test]
fn columns_match_the_built_schema() {
    let tpcc = workload(1, Binding::Fixed, Some(HybridConfig::default()), TpccScale::SMALL);
    let schema = tpcc.schema();
    let checks: [(TableId, &[ordo_storage::Column], usize); 4] = [
        (CUSTOMER, &[C_ID, C_FIRST, C_LAST, C_BALANCE, C_DATA], CUSTOMER_WORDS),
        (STOCK, &[S_QUANTITY, S_DIST[0], S_DIST[9], S_YTD, S_DATA], STOCK_WORDS),
        (ORDER_LINE, &[OL_I_ID, OL_AMOUNT, OL_DIST_INFO], ORDER_LINE_WORDS),
        (ANALYTIC_HISTORY, &[AH_W_ID, AH_DATE], ANALYTIC_HISTORY_WORDS),
    ];
    for (table, columns, words) in checks {
        let built = schema.table(table);
        assert_eq!(built.row_words, words, "{}", built.name);
        for column in columns {
            assert_eq!(built.column_named(column.name), Some(*column));
        }
    }
    assert_eq!(schema.table(CUSTOMER).columns.len(), 21, "clause 1.3.4: CUSTOMER has 21 columns");
    assert_eq!(schema.table(STOCK).columns.len(), 17);
    assert_eq!(schema.table(DISTRICT).columns.len(), 11);
    assert_eq!(schema.table(CUSTOMER_BY_LAST_NAME).index_of.map(|i| i.base), Some(CUSTOMER));
    assert_eq!(schema.table(ORDER_BY_CUSTOMER).index_of.map(|i| i.base), Some(ORDER));
    assert_eq!(small(1).schema().tables().len(), 11, "analytic_history only in the hybrid schema");
}

#[test]
fn keys_fit_footprint_identities() {
    let w = u64::from(WAREHOUSES_MAX);
    let largest = [
        customer_key(w, 10, u64::from(config::CUSTOMERS_PER_DISTRICT_MAX)),
        order_line_key(w, 10, ORDER_NUMBER_MAX, 15),
        stock_key(w, u64::from(config::ITEMS_MAX) + 1),
        sequence_key(WORKERS_MAX as u64, (1 << SEQUENCE_BITS) - 1),
        history_key(w, 10, u64::from(config::CUSTOMERS_PER_DISTRICT_MAX), PAYMENTS_PER_CUSTOMER_MAX),
        last_name_range(w, 10, LAST_NAME_NUMBER_MAX).1,
    ];
    for key in largest {
        assert!(key < 1 << crate::tables::FOOTPRINT_KEY_BITS, "{key:#x}");
    }
    assert_eq!(order_district(order_key(7, 3, 99)), (7, 3));
    assert_eq!(order_line_district(order_line_key(7, 3, 99, 15)), (7, 3));
    assert!(order_key(1, 2, ORDER_NUMBER_MAX) < order_key(1, 3, 1), "districts are contiguous ranges");
}

#[test]
fn last_names_round_trip() {
    let mut name = [0u8; 16];
    let mut seen = BTreeSet::new();
    for number in 0..=LAST_NAME_NUMBER_MAX {
        let len = last_name(number, &mut name);
        assert_eq!(last_name_number(&name[..len]), Some(number));
        assert!(seen.insert(name[..len].to_vec()), "names are distinct");
    }
    let len = last_name(371, &mut name);
    assert_eq!(&name[..len], b"PRICALLYOUGHT", "clause 4.3.2.3's example");
    assert_eq!(last_name_number(b"BARBAR"), None);
    assert_eq!(last_name_number(b"BARBARBARX"), None);
}

#[test]
fn nurand_stays_in_range_and_skews() {
    let seed = 11;
    let mut rng = rng_from_seed(seed);
    let mut counts = vec![0u32; 3_000];
    for _ in 0..300_000 {
        let c = nurand(&mut rng, 1023, 1, 3_000, 259);
        assert!((1..=3_000).contains(&c), "seed {seed}: {c}");
        counts[c as usize - 1] += 1;
    }
    let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
    assert!(*max > 3 * *min.max(&1), "seed {seed}: NURand is non-uniform ({min}..{max})");
    for seed in 0..200 {
        let c = NurandConstants::from_seed(seed);
        assert!(NurandConstants::valid_last_name_delta(c.last_name_load, c.last_name_run), "seed {seed}: {c:?}");
        assert!(c.customer <= 1023 && c.item <= 8191);
    }
    assert!(!NurandConstants::valid_last_name_delta(0, 96));
    assert!(!NurandConstants::valid_last_name_delta(200, 88));
}

#[test]
fn configs_and_mixes_are_checked() {
    assert_eq!(parse_mix("standard").unwrap(), STANDARD_MIX);
    assert_eq!(parse_mix("new-order,payment").unwrap(), [1, 1, 0, 0, 0]);
    assert_eq!(parse_mix("stock_level, delivery").unwrap(), [0, 0, 0, 1, 1]);
    assert_eq!(parse_mix("10,0,0,0,1").unwrap(), [10, 0, 0, 0, 1]);
    for bad in ["", "1,2,3", "0,0,0,0,0", "new-order,refund"] {
        assert!(parse_mix(bad).is_err(), "`{bad}`");
    }
    assert_eq!("random".parse::<Binding>(), Ok(Binding::Random));
    assert!("sideways".parse::<Binding>().is_err());
    for binding in [Binding::Fixed, Binding::Random] {
        assert_eq!(binding.to_string().parse::<Binding>(), Ok(binding));
    }
    let bad = [
        TpccConfig { warehouses: 0, ..TpccConfig::default() },
        TpccConfig { warehouses: WAREHOUSES_MAX + 1, ..TpccConfig::default() },
        TpccConfig { mix: [0; 5], ..TpccConfig::default() },
        TpccConfig {
            hybrid: Some(HybridConfig { analytic_range: 0.001, analytic_share: 0.2 }),
            ..TpccConfig::default()
        },
        TpccConfig { hybrid: Some(HybridConfig { analytic_range: 0.5, analytic_share: 1.0 }), ..TpccConfig::default() },
        TpccConfig { scale: TpccScale { items: 10, customers_per_district: 60 }, ..TpccConfig::default() },
        TpccConfig { scale: TpccScale { items: 1_000, customers_per_district: 5_000 }, ..TpccConfig::default() },
    ];
    for config in bad {
        assert!(matches!(Tpcc::new(config), Err(WorkloadError::InvalidConfig { .. })), "{config:?}");
    }
}

#[test]
fn loading_follows_the_specification() {
    let tpcc = small(2);
    let scale = TpccScale::SMALL;
    let db = MemoryDb::loaded(&tpcc);
    let per_district = u64::from(scale.customers_per_district);
    let districts = 2 * DISTRICTS_PER_WAREHOUSE;
    let expect = [
        (WAREHOUSE, 2),
        (DISTRICT, districts),
        (CUSTOMER, districts * per_district),
        (HISTORY, districts * per_district),
        (ORDER, districts * per_district),
        (NEW_ORDER, districts * u64::from(scale.undelivered_per_district())),
        (ITEM, u64::from(scale.items)),
        (STOCK, 2 * u64::from(scale.items)),
        (CUSTOMER_BY_LAST_NAME, districts * per_district),
        (ORDER_BY_CUSTOMER, districts * per_district),
    ];
    for (table, rows) in expect {
        assert_eq!(db.table(table).len() as u64, rows, "table {}", tpcc.schema().table(table).name);
    }
    let lines: i64 = db.table(ORDER).values().map(|o| O_OL_CNT.int(o)).sum();
    assert_eq!(db.table(ORDER_LINE).len() as i64, lines);
    // The undelivered orders are the last 30% of each district, without carrier.
    let first_undelivered = per_district - u64::from(scale.undelivered_per_district()) + 1;
    for (&key, order) in db.table(ORDER) {
        let open = order_number(key) >= first_undelivered;
        assert_eq!(O_CARRIER_ID.int(order) == 0, open);
        assert_eq!(db.table(NEW_ORDER).contains_key(&key), open);
    }
    // Every customer owns exactly one order (a permutation).
    let owners: BTreeSet<u64> = db
        .table(ORDER)
        .iter()
        .map(|(&key, o)| {
            let (w, d) = order_district(key);
            customer_key(w, d, O_C_ID.int(o) as u64)
        })
        .collect();
    assert_eq!(owners.len(), db.table(CUSTOMER).len());
    let bad_credit = db.table(CUSTOMER).values().filter(|c| C_CREDIT.chars_eq(c, b"BC")).count();
    let customers = db.table(CUSTOMER).len();
    assert!((customers / 20..customers / 5).contains(&bad_credit), "about 10% BC: {bad_credit} of {customers}");
    let mut data = [0u8; 50];
    let original =
        db.table(ITEM).values().filter(|i| I_DATA.chars(i, &mut data).windows(8).any(|w| w == b"ORIGINAL")).count();
    assert!((50..150).contains(&original), "about 10% ORIGINAL: {original} of 1000");
    tpcc.check(&mut MemoryDb::loaded(&tpcc)).expect("a freshly loaded database is consistent");
}

#[test]
fn loading_in_parts_emits_the_same_rows() {
    let tpcc = small(2);
    let collect = |parts: usize| {
        let mut rows = Vec::new();
        for part in 0..parts {
            tpcc.load(part, parts, &mut |table, key, row| rows.push((table, key, row.to_vec())));
        }
        rows.sort();
        rows
    };
    let whole = collect(1);
    assert_eq!(whole, collect(3));
    assert_eq!(whole, collect(64), "more parts than units");
    let keys: BTreeSet<(TableId, u64)> = whole.iter().map(|(t, k, _)| (*t, *k)).collect();
    assert_eq!(keys.len(), whole.len(), "every row once");
}

#[test]
fn the_full_mix_keeps_conditions_one_to_four() {
    for (seed, warehouses) in [(1, 1), (2, 2)] {
        let tpcc = small(warehouses);
        let mut db = MemoryDb::loaded(&tpcc);
        let outcomes = run_mix(&tpcc, &mut db, seed, 4_000, 3);
        let report = tpcc.check(&mut db).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert_eq!(report.checked.len(), 4);
        for (procedure, &(commits, _)) in outcomes[..5].iter().enumerate() {
            assert!(commits > 0, "seed {seed}: procedure {procedure} never committed: {outcomes:?}");
        }
    }
}

#[test]
fn the_hybrid_mix_keeps_conditions_and_logs_analytics() {
    let seed = 3;
    let hybrid = HybridConfig { analytic_range: 0.05, analytic_share: 0.2 };
    let tpcc = workload(2, Binding::Fixed, Some(hybrid), TpccScale::SMALL);
    assert_eq!(tpcc.procedure_names()[ANALYTIC_TX as usize], "analytic");
    let mut db = MemoryDb::loaded(&tpcc);
    let outcomes = run_mix(&tpcc, &mut db, seed, 3_000, 2);
    tpcc.check(&mut db).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    let analytic = outcomes[ANALYTIC_TX as usize].0;
    assert_eq!(db.table(ANALYTIC_HISTORY).len(), analytic, "seed {seed}: one row per analytic commit");
    assert!((450..750).contains(&analytic), "seed {seed}: about 20% analytic: {analytic}");
    let group = (0.05 * 600.0_f64).round() as i64;
    assert!(db.table(ANALYTIC_HISTORY).values().all(|row| AH_CUSTOMERS.int(row) == group));
}

#[test]
fn the_mix_follows_its_weights() {
    let seed = 4;
    for (mix, hybrid) in [(STANDARD_MIX, None), ([10, 0, 30, 0, 60], Some(HybridConfig::default()))] {
        let tpcc = Tpcc::new(TpccConfig { mix, hybrid, scale: TpccScale::SMALL, ..TpccConfig::default() }).unwrap();
        let (mut rng, mut txn) = (rng_from_seed(seed), Txn::default());
        let draws = 40_000;
        let mut counts = [0usize; 6];
        for _ in 0..draws {
            tpcc.generate(&mut rng, 0, &mut txn);
            counts[txn.procedure as usize] += 1;
        }
        let share = hybrid.map_or(0.0, |h| h.analytic_share);
        let total: u32 = mix.iter().sum();
        for (procedure, &count) in counts.iter().enumerate() {
            let expected =
                if procedure == 5 { share } else { (1.0 - share) * f64::from(mix[procedure]) / f64::from(total) };
            let observed = count as f64 / f64::from(draws);
            assert!((observed - expected).abs() < 0.01, "seed {seed}: procedure {procedure}: {observed} vs {expected}");
        }
    }
}

#[test]
fn input_rules_have_their_percentages() {
    let seed = 5;
    let tpcc = small(4);
    let (mut rng, mut txn) = (rng_from_seed(seed), Txn::default());
    let (mut lines, mut remote_lines, mut rollbacks, mut new_orders) = (0, 0, 0, 0);
    let (mut payments, mut remote_payments, mut by_name) = (0, 0, 0);
    for _ in 0..40_000 {
        tpcc.generate(&mut rng, 0, &mut txn);
        match txn.procedure {
            NEW_ORDER_TX => {
                new_orders += 1;
                let w = txn.keys[0];
                let inputs: Vec<OrderLineInput> = txn.keys[4..].iter().map(|&l| OrderLineInput::unpack(l)).collect();
                assert!((5..=ORDER_LINES_MAX).contains(&inputs.len()));
                lines += inputs.len();
                remote_lines += inputs.iter().filter(|l| l.supply_w != w).count();
                rollbacks += usize::from(inputs.last().unwrap().item == 1_001);
                assert!(inputs.iter().all(|l| (1..=10).contains(&l.quantity) && (1..=4).contains(&l.supply_w)));
            }
            PAYMENT_TX => {
                payments += 1;
                remote_payments += usize::from(txn.keys[2] != txn.keys[0]);
                by_name += usize::from(txn.flags & BY_LAST_NAME != 0);
                assert!((100..=500_000).contains(&txn.amount));
            }
            _ => {}
        }
    }
    let percent = |part: usize, whole: usize| 100.0 * part as f64 / whole as f64;
    let checks = [
        ("remote order lines", percent(remote_lines, lines), 1.0, 0.2),
        ("rolled-back new orders", percent(rollbacks, new_orders), 1.0, 0.3),
        ("remote payments", percent(remote_payments, payments), 15.0, 1.0),
        ("payments by last name", percent(by_name, payments), 60.0, 1.5),
    ];
    for (what, observed, expected, tolerance) in checks {
        assert!((observed - expected).abs() < tolerance, "seed {seed}: {what}: {observed}% vs {expected}%");
    }
    // One warehouse: nothing is remote.
    let tpcc = small(1);
    for _ in 0..5_000 {
        tpcc.generate(&mut rng, 0, &mut txn);
        if txn.procedure == NEW_ORDER_TX {
            assert!(txn.keys[4..].iter().all(|&l| OrderLineInput::unpack(l).supply_w == 1));
        }
        if txn.procedure == PAYMENT_TX {
            assert_eq!(txn.keys[2], 1);
        }
    }
}

#[test]
fn bindings_choose_home_warehouses() {
    let (mut rng, mut txn) = (rng_from_seed(6), Txn::default());
    let fixed = workload(3, Binding::Fixed, None, TpccScale::SMALL);
    for worker in 0..7 {
        for _ in 0..50 {
            fixed.generate(&mut rng, worker, &mut txn);
            assert_eq!(txn.keys[0], worker as u64 % 3 + 1);
        }
    }
    let random = small(3);
    let homes: BTreeSet<u64> = (0..200)
        .map(|_| {
            random.generate(&mut rng, 0, &mut txn);
            txn.keys[0]
        })
        .collect();
    assert_eq!(homes, BTreeSet::from([1, 2, 3]));
}

#[test]
fn new_order_updates_stock_and_inserts_the_order() {
    let tpcc = small(2);
    let mut db = MemoryDb::loaded(&tpcc);
    let lines = [
        OrderLineInput { item: 7, supply_w: 1, quantity: 3 },
        OrderLineInput { item: 8, supply_w: 2, quantity: 10 },
        OrderLineInput { item: 9, supply_w: 1, quantity: 1 },
    ];
    let mut txn = Txn { procedure: NEW_ORDER_TX, keys: vec![1, 4, 17, 500], ..Txn::default() };
    txn.keys.extend(lines.iter().map(|l| l.pack()));
    // Ten rounds of the same order drain some stock below the reorder point (the +91 rule).
    let mut refilled = 0;
    for _ in 0..10 {
        let before = snapshot(&tpcc, &db);
        assert_eq!(db.run(&tpcc, &txn, &mut Scratch::default()), Outcome::Commit);
        let o = D_NEXT_O_ID.int(&before[DISTRICT as usize][&district_key(1, 4)]) as u64;
        assert_eq!(D_NEXT_O_ID.int(&db.table(DISTRICT)[&district_key(1, 4)]), o as i64 + 1);
        let order = &db.table(ORDER)[&order_key(1, 4, o)];
        assert_eq!((O_C_ID.int(order), O_OL_CNT.int(order), O_ALL_LOCAL.int(order)), (17, 3, 0));
        assert!(db.table(NEW_ORDER).contains_key(&order_key(1, 4, o)));
        let (low, _) = customer_orders_range(1, 4, 17);
        assert!(db.table(ORDER_BY_CUSTOMER).contains_key(&(low | o)), "the index follows the insert");
        for (number, line) in (1u64..).zip(lines) {
            let key = stock_key(line.supply_w, line.item);
            let (old, new) = (&before[STOCK as usize][&key], &db.table(STOCK)[&key]);
            let (quantity, on_hand) = (line.quantity as i64, S_QUANTITY.int(old));
            let expected = if on_hand >= quantity + 10 {
                on_hand - quantity
            } else {
                refilled += 1;
                on_hand - quantity + 91
            };
            assert_eq!(S_QUANTITY.int(new), expected);
            assert_eq!(S_ORDER_CNT.int(new), S_ORDER_CNT.int(old) + 1);
            assert_eq!(S_REMOTE_CNT.int(new) - S_REMOTE_CNT.int(old), i64::from(line.supply_w != 1));
            let ol = &db.table(ORDER_LINE)[&order_line_key(1, 4, o, number)];
            let price = I_PRICE.int(&db.table(ITEM)[&line.item]);
            assert_eq!(OL_AMOUNT.int(ol), quantity * price);
            let mut info = [0u8; 24];
            assert!(OL_DIST_INFO.chars_eq(ol, S_DIST[3].chars(old, &mut info)));
        }
    }
    assert!(refilled > 0, "the stock of some line fell below its quantity plus 10");
    tpcc.check(&mut db).unwrap();
}

#[test]
fn rolled_back_new_orders_leave_no_trace() {
    let seed = 7;
    let tpcc = small(1);
    let mut db = MemoryDb::loaded(&tpcc);
    let (mut rng, mut txn, mut scratch) = (rng_from_seed(seed), Txn::default(), Scratch::default());
    let (mut rolled_back, mut new_orders) = (0, 0);
    for _ in 0..6_000 {
        draw_until(&tpcc, &mut rng, NEW_ORDER_TX, &mut txn);
        new_orders += 1;
        let unused = OrderLineInput::unpack(*txn.keys.last().unwrap()).item == 1_001;
        let before = if unused { Some(snapshot(&tpcc, &db)) } else { None };
        let outcome = db.run(&tpcc, &txn, &mut scratch);
        assert_eq!(outcome == Outcome::UserAbort, unused, "seed {seed}: only an unused item rolls back");
        if let Some(before) = before {
            rolled_back += 1;
            assert!(before == snapshot(&tpcc, &db), "seed {seed}: a rolled-back NewOrder changed the database");
        }
    }
    assert!((30..100).contains(&rolled_back), "seed {seed}: about 1% of {new_orders}: {rolled_back}");
    tpcc.check(&mut db).unwrap();
}

#[test]
fn by_last_name_picks_the_middle_customer_by_first_name() {
    // 3,000 customers per district: most last names are shared by several customers.
    let tpcc = workload(1, Binding::Fixed, None, TpccScale { items: 1_000, customers_per_district: 3_000 });
    let mut db = MemoryDb::loaded(&tpcc);
    let mut name = [0u8; 16];
    let mut first = [0u8; 16];
    let mut shared = 0;
    for number in 0..=LAST_NAME_NUMBER_MAX {
        let len = last_name(number, &mut name);
        let mut matching: Vec<(Vec<u8>, u64)> = db
            .table(CUSTOMER)
            .range(customer_key(1, 2, 0)..customer_key(1, 3, 0))
            .filter(|(_, c)| C_LAST.chars_eq(c, &name[..len]))
            .map(|(&key, c)| (C_FIRST.chars(c, &mut first).to_vec(), key))
            .collect();
        matching.sort();
        let expected = matching[matching.len().div_ceil(2) - 1].1;
        shared += usize::from(matching.len() > 1);
        let chosen = payment::select_by_last_name(&mut db, 1, 2, number, &mut Scratch::default()).unwrap();
        assert_eq!(chosen, expected, "last name {number}: {} customers", matching.len());
    }
    assert!(shared > 500, "the test exercises shared last names: {shared}");
}

#[test]
fn payment_moves_money_and_records_history() {
    let tpcc = small(2);
    let mut db = MemoryDb::loaded(&tpcc);
    let bad_credit = *db.table(CUSTOMER).iter().find(|(_, c)| C_CREDIT.chars_eq(c, b"BC")).unwrap().0;
    let (c_w, c_d, c) = (bad_credit >> 16, (bad_credit >> 12) & 15, bad_credit & 0xFFF);
    let txn = Txn { procedure: PAYMENT_TX, keys: vec![1, 5, c_w, c_d, c, 77], amount: 12_345, flags: 0 };
    let before = snapshot(&tpcc, &db);
    assert_eq!(db.run(&tpcc, &txn, &mut Scratch::default()), Outcome::Commit);
    let ytd = |tables: &[BTreeMap<u64, Vec<u64>>]| {
        (W_YTD.int(&tables[WAREHOUSE as usize][&1]), D_YTD.int(&tables[DISTRICT as usize][&district_key(1, 5)]))
    };
    let (old, new) = (ytd(&before), ytd(&snapshot(&tpcc, &db)));
    assert_eq!((new.0 - old.0, new.1 - old.1), (12_345, 12_345));
    let customer = &db.table(CUSTOMER)[&bad_credit];
    assert_eq!(C_BALANCE.int(customer), -1_000 - 12_345);
    assert_eq!((C_PAYMENT_CNT.int(customer), C_YTD_PAYMENT.int(customer)), (2, 1_000 + 12_345));
    let mut data = [0u8; C_DATA_BYTES];
    let data = C_DATA.chars(customer, &mut data);
    let mut old = [0u8; C_DATA_BYTES];
    let old = C_DATA.chars(&before[CUSTOMER as usize][&bad_credit], &mut old);
    let mut expected = format!("{c} {c_d} {c_w} 5 1 123.45 ").into_bytes();
    expected.extend_from_slice(old);
    expected.truncate(C_DATA_BYTES);
    assert_eq!(data, expected.as_slice(), "the payment's details in front of the old data, cut to 500");
    assert!(db.table(HISTORY).contains_key(&history_key(c_w, c_d, c, 1)), "the loaded row");
    let history = &db.table(HISTORY)[&history_key(c_w, c_d, c, 2)];
    assert_eq!((H_AMOUNT.int(history), H_C_ID.int(history), H_DATE.int(history)), (12_345, c as i64, 77));
    tpcc.check(&mut db).unwrap();
}

#[test]
fn delivery_empties_the_oldest_new_orders_first() {
    let tpcc = small(1);
    let mut db = MemoryDb::loaded(&tpcc);
    let oldest = |db: &MemoryDb, d: u64| {
        db.table(NEW_ORDER).range(order_key(1, d, 0)..=order_key(1, d, ORDER_NUMBER_MAX)).next().map(|(&k, _)| k)
    };
    let undelivered = u64::from(TpccScale::SMALL.undelivered_per_district());
    for round in 0..=undelivered {
        let before = snapshot(&tpcc, &db);
        let firsts: Vec<Option<u64>> = (1..=10).map(|d| oldest(&db, d)).collect();
        let txn = Txn { procedure: DELIVERY_TX, keys: vec![1, 4, 900 + round], ..Txn::default() };
        assert_eq!(db.run(&tpcc, &txn, &mut Scratch::default()), Outcome::Commit);
        for (d, first) in (1..=10).zip(firsts) {
            let Some(first) = first else {
                assert_eq!(round, undelivered, "districts run dry together");
                continue;
            };
            assert_eq!(oldest(&db, d), (first < order_key(1, d, 60)).then_some(first + 1), "district {d}");
            let order = &db.table(ORDER)[&first];
            assert_eq!(O_CARRIER_ID.int(order), 4);
            let (low, high) = order_lines_range(first);
            let lines: Vec<&Vec<u64>> = db.table(ORDER_LINE).range(low..=high).map(|(_, l)| l).collect();
            assert!(lines.iter().all(|l| OL_DELIVERY_D.int(l) == (900 + round) as i64));
            let amount: i64 = lines.iter().map(|l| OL_AMOUNT.int(l)).sum();
            let customer = customer_key(1, d, O_C_ID.int(order) as u64);
            let (old, new) = (&before[CUSTOMER as usize][&customer], &db.table(CUSTOMER)[&customer]);
            assert_eq!(C_BALANCE.int(new) - C_BALANCE.int(old), amount);
            assert_eq!(C_DELIVERY_CNT.int(new) - C_DELIVERY_CNT.int(old), 1);
        }
        tpcc.check(&mut db).unwrap();
    }
    assert!(db.table(NEW_ORDER).is_empty());
}

#[test]
fn analytic_sums_its_customers_balances_and_open_orders() {
    let seed = 8;
    let hybrid = HybridConfig { analytic_range: 0.3, analytic_share: 0.1 };
    let tpcc = workload(1, Binding::Fixed, Some(hybrid), TpccScale::SMALL);
    let mut db = MemoryDb::loaded(&tpcc);
    run_mix(&tpcc, &mut db, seed, 1_000, 1);
    let (mut rng, mut txn) = (rng_from_seed(seed), Txn::default());
    draw_until(&tpcc, &mut rng, ANALYTIC_TX, &mut txn);
    let (first, customers, key) = (txn.keys[1], txn.keys[2], txn.keys[3]);
    assert_eq!(customers, 180, "30% of 600 customers");
    let group: Vec<u64> = (first..first + customers)
        .map(|p| {
            let (d, c) = analytic::customer_at(p, 60);
            customer_key(1, d, c)
        })
        .collect();
    let balances: i64 = group.iter().map(|k| C_BALANCE.int(&db.table(CUSTOMER)[k])).sum();
    let (mut open_orders, mut open_amount) = (0, 0);
    for (&order_key, order) in db.table(ORDER) {
        let (w, d) = order_district(order_key);
        if O_CARRIER_ID.int(order) == 0 && group.contains(&customer_key(w, d, O_C_ID.int(order) as u64)) {
            open_orders += 1;
            let (low, high) = order_lines_range(order_key);
            open_amount += db.table(ORDER_LINE).range(low..=high).map(|(_, l)| OL_AMOUNT.int(l)).sum::<i64>();
        }
    }
    assert!(open_orders > 0, "seed {seed}: the group has open orders");
    assert_eq!(db.run(&tpcc, &txn, &mut Scratch::default()), Outcome::Commit);
    let row = &db.table(ANALYTIC_HISTORY)[&key];
    assert_eq!(
        (AH_CUSTOMERS.int(row), AH_BALANCE_SUM.int(row), AH_OPEN_ORDERS.int(row), AH_OPEN_AMOUNT_SUM.int(row)),
        (customers as i64, balances, open_orders, open_amount),
        "seed {seed}"
    );
}

#[test]
fn order_status_reads_the_customers_newest_order() {
    let tpcc = small(1);
    let mut db = MemoryDb::loaded(&tpcc);
    let (mut scratch, mut row) = (Scratch::default(), Vec::new());
    let order = Txn {
        procedure: NEW_ORDER_TX,
        keys: vec![1, 2, 33, 600, OrderLineInput { item: 5, supply_w: 1, quantity: 2 }.pack()],
        ..Txn::default()
    };
    let mut newest = 0;
    for _ in 0..2 {
        newest = D_NEXT_O_ID.int(&db.table(DISTRICT)[&district_key(1, 2)]) as u64;
        assert_eq!(db.run(&tpcc, &order, &mut scratch), Outcome::Commit);
    }
    let status = Txn { procedure: ORDER_STATUS_TX, keys: vec![1, 2, 33], ..Txn::default() };
    let mut recorder = Recorder { db: &mut db, accesses: Accesses::default() };
    let outcome = tpcc.run(&status, &mut Maintained::new(tpcc.schema(), &mut recorder, &mut row), &mut scratch);
    assert_eq!(outcome, Ok(Outcome::Commit));
    let orders: Vec<u64> = recorder.accesses.reads.iter().filter(|(t, _)| *t == ORDER).map(|(_, k)| *k).collect();
    assert_eq!(orders, vec![order_key(1, 2, newest)], "only the newest of the customer's orders is read");
    assert!(recorder.accesses.scans.contains(&(
        ORDER_LINE,
        order_lines_range(order_key(1, 2, newest)).0,
        order_lines_range(order_key(1, 2, newest)).1
    )));
    assert!(recorder.accesses.writes.is_empty(), "OrderStatus is read-only");
}

#[test]
fn check_catches_broken_conditions() {
    let tpcc = small(1);
    let fresh = || {
        let mut db = MemoryDb::loaded(&tpcc);
        run_mix(&tpcc, &mut db, 9, 300, 1);
        tpcc.check(&mut db).unwrap();
        db
    };
    let expect_broken = |db: &mut MemoryDb, condition: &str, place: &str| {
        let error = tpcc.check(db).expect_err(condition);
        assert_eq!(error.condition, condition);
        assert!(error.detail.contains(place), "{error}");
    };
    // 1: a district's year-to-date total moves alone.
    let mut db = fresh();
    let mut district = db.table(DISTRICT)[&district_key(1, 3)].clone();
    D_YTD.add_int(&mut district, 1);
    db.put(DISTRICT, district_key(1, 3), &district).unwrap();
    expect_broken(&mut db, CONDITION_1, "warehouse 1");
    // 2: the next order number skips one.
    let mut db = fresh();
    let mut district = db.table(DISTRICT)[&district_key(1, 6)].clone();
    D_NEXT_O_ID.add_int(&mut district, 1);
    db.put(DISTRICT, district_key(1, 6), &district).unwrap();
    expect_broken(&mut db, CONDITION_2, "warehouse 1 district 6");
    // 3: a NEW-ORDER row in the middle disappears.
    let mut db = fresh();
    let middle = *db.table(NEW_ORDER).range(order_key(1, 2, 0)..order_key(1, 3, 0)).nth(3).unwrap().0;
    db.delete(NEW_ORDER, middle).unwrap();
    expect_broken(&mut db, CONDITION_3, "warehouse 1 district 2");
    // 4: an order line disappears.
    let mut db = fresh();
    let line = *db.table(ORDER_LINE).range(order_key(1, 9, 0) << 4..).next().unwrap().0;
    db.delete(ORDER_LINE, line).unwrap();
    expect_broken(&mut db, CONDITION_4, "warehouse 1 district 9");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Any mix, binding, warehouse count and hybrid share keeps conditions 1 to 4.
    #[test]
    fn any_run_keeps_conditions_one_to_four(
        seed in any::<u64>(),
        warehouses in 1u32..=3,
        mix in proptest::array::uniform5(0u32..10).prop_filter("a positive weight", |m| m.iter().sum::<u32>() > 0),
        random in any::<bool>(),
        analytic in proptest::option::of((0.01f64..=1.0, 0.0f64..0.5)),
    ) {
        let binding = if random { Binding::Random } else { Binding::Fixed };
        let hybrid = analytic.map(|(analytic_range, analytic_share)| HybridConfig { analytic_range, analytic_share });
        let config = TpccConfig { warehouses, binding, mix, hybrid, scale: TpccScale::SMALL, seed };
        let tpcc = Tpcc::new(config).unwrap();
        let mut db = MemoryDb::loaded(&tpcc);
        run_mix(&tpcc, &mut db, seed, 400, 3);
        prop_assert!(tpcc.check(&mut db).is_ok(), "{config:?}: {:?}", tpcc.check(&mut db));
    }

    /// Five weights parse back to themselves.
    #[test]
    fn weights_parse_back(mix in proptest::array::uniform5(0u32..1_000).prop_filter("positive", |m| m.iter().sum::<u32>() > 0)) {
        let text = mix.map(|w| w.to_string()).join(",");
        prop_assert_eq!(parse_mix(&text).unwrap(), mix);
    }
}

/// What one transaction touched.
#[derive(Debug, Default)]
struct Accesses {
    reads: BTreeSet<(TableId, u64)>,
    writes: BTreeSet<(TableId, u64)>,
    scans: Vec<(TableId, u64, u64)>,
}

/// Records a transaction's accesses, under [`Maintained`] so index entries count too.
#[derive(Debug)]
struct Recorder<'a> {
    db: &'a mut MemoryDb,
    accesses: Accesses,
}

impl Tx for Recorder<'_> {
    fn get(&mut self, table: TableId, key: u64, row: &mut [u64], for_update: bool) -> Result<bool, Aborted> {
        self.accesses.reads.insert((table, key));
        self.db.get(table, key, row, for_update)
    }
    fn put(&mut self, table: TableId, key: u64, row: &[u64]) -> Result<bool, Aborted> {
        self.accesses.writes.insert((table, key));
        self.db.put(table, key, row)
    }
    fn insert(&mut self, table: TableId, key: u64, row: &[u64]) -> Result<bool, Aborted> {
        self.accesses.writes.insert((table, key));
        self.db.insert(table, key, row)
    }
    fn delete(&mut self, table: TableId, key: u64) -> Result<bool, Aborted> {
        self.accesses.writes.insert((table, key));
        self.db.delete(table, key)
    }
    fn scan(
        &mut self,
        table: TableId,
        low: u64,
        high: u64,
        direction: Direction,
        limit: usize,
        visit: &mut dyn FnMut(u64, &[u64]) -> bool,
    ) -> Result<usize, Aborted> {
        self.accesses.scans.push((table, low, high));
        self.db.scan(table, low, high, direction, limit, visit)
    }
}

impl Accesses {
    /// Whether `self`'s writes meet `other`'s reads, writes or scanned ranges.
    fn writes_into(&self, other: &Accesses) -> bool {
        self.writes.iter().any(|access| {
            other.reads.contains(access)
                || other.writes.contains(access)
                || other.scans.iter().any(|&(t, low, high)| t == access.0 && (low..=high).contains(&access.1))
        })
    }
}

#[test]
fn footprints_share_an_identity_whenever_transactions_conflict() {
    let seed = 10;
    let hybrid = HybridConfig { analytic_range: 0.05, analytic_share: 0.1 };
    for warehouses in [1, 2] {
        let tpcc = workload(warehouses, Binding::Random, Some(hybrid), TpccScale::SMALL);
        let mut db = MemoryDb::loaded(&tpcc);
        let (mut rng, mut scratch, mut row) = (rng_from_seed(seed), Scratch::default(), Vec::new());
        let (mut conflicts, mut pairs_by_kind) = (0, BTreeSet::new());
        for _ in 0..1_500 {
            let mut recorded = Vec::new();
            let mut txns = [Txn::default(), Txn::default()];
            for (worker, txn) in txns.iter_mut().enumerate() {
                // Rolled-back NewOrders are left out: the recorder cannot undo them.
                loop {
                    tpcc.generate(&mut rng, worker, txn);
                    let unused = |l: &u64| OrderLineInput::unpack(*l).item > 1_000;
                    if txn.procedure != NEW_ORDER_TX || !txn.keys[4..].iter().any(unused) {
                        break;
                    }
                }
                let mut recorder = Recorder { db: &mut db, accesses: Accesses::default() };
                let outcome = tpcc.run(txn, &mut Maintained::new(tpcc.schema(), &mut recorder, &mut row), &mut scratch);
                assert_eq!(outcome, Ok(Outcome::Commit));
                recorded.push(recorder.accesses);
            }
            if !(recorded[0].writes_into(&recorded[1]) || recorded[1].writes_into(&recorded[0])) {
                continue;
            }
            conflicts += 1;
            pairs_by_kind.insert((txns[0].procedure.min(txns[1].procedure), txns[0].procedure.max(txns[1].procedure)));
            let prints: Vec<(Vec<u64>, Vec<u64>)> = txns
                .iter()
                .map(|txn| {
                    let (mut reads, mut writes) = (Vec::new(), Vec::new());
                    tpcc.footprint(txn, &mut reads, &mut writes);
                    (reads, writes)
                })
                .collect();
            let meets = |a: &(Vec<u64>, Vec<u64>), b: &(Vec<u64>, Vec<u64>)| {
                a.1.iter().any(|id| b.0.contains(id) || b.1.contains(id))
            };
            assert!(
                meets(&prints[0], &prints[1]) || meets(&prints[1], &prints[0]),
                "seed {seed}, {warehouses} warehouses: {:?} and {:?} conflict but their footprints {prints:?} do not",
                txns[0],
                txns[1]
            );
        }
        assert!(conflicts > 200, "seed {seed}: the test saw conflicts ({conflicts})");
        assert!(pairs_by_kind.len() > 10, "seed {seed}: many kinds of pairs conflict: {pairs_by_kind:?}");
        tpcc.check(&mut db).unwrap();
    }
}

/// Measures loading (not a test of speed: it prints). Replay:
/// `TPCC_WAREHOUSES=8 cargo test --release -p ordo-workload tpcc::tests::load_time -- --ignored --nocapture`
#[test]
#[ignore = "a measurement, run by hand"]
fn load_time() {
    let warehouses = std::env::var("TPCC_WAREHOUSES").ok().and_then(|w| w.parse().ok()).unwrap_or(8);
    let tpcc = Tpcc::new(TpccConfig { warehouses, ..TpccConfig::default() }).unwrap();
    let parts = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
    let start = std::time::Instant::now();
    let rows: usize = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..parts)
            .map(|part| {
                let tpcc = &tpcc;
                scope.spawn(move || {
                    let mut rows = 0usize;
                    tpcc.load(part, parts, &mut |_, _, row| rows += usize::from(!row.is_empty()));
                    rows
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    println!("generated {rows} rows of {warehouses} warehouses on {parts} threads in {:?}", start.elapsed());
    let start = std::time::Instant::now();
    let mut db = MemoryDb::loaded(&tpcc);
    println!("MemoryDb::loaded ({warehouses} warehouses, one thread, indexes included) in {:?}", start.elapsed());
    let start = std::time::Instant::now();
    tpcc.check(&mut db).unwrap();
    println!("check in {:?}", start.elapsed());
}
