//! SmallBank (Alomari et al., ICDE 2008; the paper's §5.4): customers with a checking and a
//! savings account, and six procedures that move money between them.
//!
//! Tables, as contiguous key ranges over `n` customers:
//!
//! ```text
//!   [0, n)    ACCOUNTS   customer name -> customer id   (read-only; a lookup round)
//!   [n, 2n)   SAVINGS    customer id   -> balance in cents
//!   [2n, 3n)  CHECKING   customer id   -> balance in cents
//! ```
//!
//! Every procedure first looks its customers up by name (round 1) and then reads balances by the
//! ids it found (round 2): the keys of round 2 depend on the values of round 1.
//!
//! | procedure        | mix | effect                                                         |
//! |------------------|-----|----------------------------------------------------------------|
//! | Amalgamate       | 15% | move all of c1's savings and checking into c2's checking         |
//! | Balance          | 15% | read c's savings and checking (read-only)                       |
//! | DepositChecking  | 15% | checking(c) += 1.30                                             |
//! | SendPayment      | 25% | move 5.00 from c1's checking to c2's; user abort if short       |
//! | TransactSavings  | 15% | savings(c) -= 20.20; user abort if it would go negative         |
//! | WriteCheck       | 15% | checking(c) -= 5.00, or 6.00 if savings + checking < 5.00       |
//!
//! Customers are drawn from Zipf(θ); the two customers of a transfer are distinct. The
//! *conserved-total* mix keeps only the procedures that move money without creating or
//! destroying it (Amalgamate, SendPayment, Balance), so the sum of all balances is invariant.

use crate::WorkloadRng;
use crate::error::WorkloadError;
use crate::procedure::{KEYS_MAX, Key, Step, Txn, Value, Workload};
use crate::zipf::Zipf;
use rand::Rng;

pub const AMALGAMATE: u8 = 0;
pub const BALANCE: u8 = 1;
pub const DEPOSIT_CHECKING: u8 = 2;
pub const SEND_PAYMENT: u8 = 3;
pub const TRANSACT_SAVINGS: u8 = 4;
pub const WRITE_CHECK: u8 = 5;

pub const PROCEDURE_NAMES: [&str; 6] =
    ["Amalgamate", "Balance", "DepositChecking", "SendPayment", "TransactSavings", "WriteCheck"];

/// The usual mix, in percent, indexed by procedure.
pub const STANDARD_MIX: [u32; 6] = [15, 15, 15, 25, 15, 15];
/// Only procedures that conserve the total balance.
pub const CONSERVED_MIX: [u32; 6] = [15, 15, 0, 25, 0, 0];

/// Amounts in cents.
pub const DEPOSIT_CHECKING_CENTS: i64 = 130;
pub const TRANSACT_SAVINGS_CENTS: i64 = -2020;
pub const SEND_PAYMENT_CENTS: i64 = 500;
pub const WRITE_CHECK_CENTS: i64 = 500;
pub const OVERDRAFT_PENALTY_CENTS: i64 = 100;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SmallBankConfig {
    pub customers: u64,
    pub theta: f64,
    /// Relative weights of the six procedures (see [`PROCEDURE_NAMES`]).
    pub mix: [u32; 6],
    /// Initial balances are uniform in `[balance_cents_min, balance_cents_max)`; the default,
    /// $10,000 to $50,000, is the usual SmallBank range. Under skew the hottest accounts still
    /// run dry within seconds (withdrawals, Amalgamate zeroing them), and payments from them
    /// bounce as user aborts: that is the workload's real semantics, not a failure.
    pub balance_cents_min: i64,
    pub balance_cents_max: i64,
    /// Seeds the initial balances.
    pub seed: u64,
}

impl Default for SmallBankConfig {
    fn default() -> Self {
        SmallBankConfig {
            customers: 100_000,
            theta: 0.8,
            mix: STANDARD_MIX,
            balance_cents_min: 1_000_000,
            balance_cents_max: 5_000_000,
            seed: 0x5b,
        }
    }
}

impl SmallBankConfig {
    pub fn validate(&self) -> Result<(), WorkloadError> {
        if self.customers < 2 {
            return Err(WorkloadError::invalid("customers", "SmallBank needs at least 2 customers"));
        }
        if self.customers > KEYS_MAX / 2 {
            return Err(WorkloadError::invalid(
                "customers",
                format!("{}: at most {} (two accounts each, at most {KEYS_MAX} keys)", self.customers, KEYS_MAX / 2),
            ));
        }
        if self.mix.iter().sum::<u32>() == 0 {
            return Err(WorkloadError::invalid("mix", "at least one procedure needs a positive weight"));
        }
        if self.balance_cents_min < 0 || self.balance_cents_max <= self.balance_cents_min {
            return Err(WorkloadError::invalid("balances", "need 0 <= min < max"));
        }
        Ok(())
    }
}

/// The SmallBank workload.
#[derive(Debug, Clone)]
pub struct SmallBank {
    config: SmallBankConfig,
    zipf: Zipf,
    /// Cumulative mix weights.
    cumulative: [u32; 6],
}

impl SmallBank {
    pub fn new(config: SmallBankConfig) -> Result<Self, WorkloadError> {
        config.validate()?;
        let mut cumulative = [0; 6];
        let mut sum = 0;
        for (slot, weight) in cumulative.iter_mut().zip(config.mix) {
            sum += weight;
            *slot = sum;
        }
        Ok(SmallBank { config, zipf: Zipf::new(config.customers, config.theta)?, cumulative })
    }

    pub fn config(&self) -> &SmallBankConfig {
        &self.config
    }

    pub fn account_key(&self, customer: u64) -> Key {
        customer
    }

    pub fn savings_key(&self, customer: u64) -> Key {
        self.config.customers + customer
    }

    pub fn checking_key(&self, customer: u64) -> Key {
        2 * self.config.customers + customer
    }

    /// Every balance key (savings and checking).
    pub fn balance_keys(&self) -> std::ops::Range<Key> {
        self.config.customers..3 * self.config.customers
    }

    /// The money `txn` adds to (positive) or removes from (negative) the bank when it commits
    /// with `writes` after reading `values` (every balance written was read first).
    pub fn net_deposit(&self, values: &[Value], writes: &[(Key, Value)], txn: &Txn) -> i64 {
        let customers = Self::customers_of(txn);
        let balances = &values[customers.min(values.len())..];
        let mut keys = Vec::with_capacity(3);
        self.balance_keys_of(txn, &values[..customers.min(values.len())], &mut keys);
        writes
            .iter()
            .map(|&(key, new)| {
                let old = keys.iter().position(|&k| k == key).map_or(0, |i| balances[i]);
                new - old
            })
            .sum()
    }

    fn customers_of(txn: &Txn) -> usize {
        match txn.procedure {
            AMALGAMATE | SEND_PAYMENT => 2,
            _ => 1,
        }
    }

    /// Round-two keys, given the customer ids found in round one.
    fn balance_keys_of(&self, txn: &Txn, ids: &[Value], keys: &mut Vec<Key>) {
        let id = |i: usize| ids[i] as u64;
        match txn.procedure {
            AMALGAMATE => keys.extend([self.savings_key(id(0)), self.checking_key(id(0)), self.checking_key(id(1))]),
            BALANCE | WRITE_CHECK => keys.extend([self.savings_key(id(0)), self.checking_key(id(0))]),
            DEPOSIT_CHECKING => keys.push(self.checking_key(id(0))),
            SEND_PAYMENT => keys.extend([self.checking_key(id(0)), self.checking_key(id(1))]),
            _ => keys.push(self.savings_key(id(0))),
        }
    }

    fn draw_procedure(&self, rng: &mut WorkloadRng) -> u8 {
        let total = self.cumulative[5];
        let pick = rng.random_range(0..total);
        self.cumulative.iter().position(|&c| pick < c).unwrap_or(5) as u8
    }
}

fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl Workload for SmallBank {
    fn name(&self) -> &'static str {
        "smallbank"
    }

    fn procedure_names(&self) -> &'static [&'static str] {
        &PROCEDURE_NAMES
    }

    fn key_count(&self) -> u64 {
        3 * self.config.customers
    }

    fn initial_value(&self, key: Key) -> Value {
        let n = self.config.customers;
        if key < n {
            return key as Value;
        }
        let span = (self.config.balance_cents_max - self.config.balance_cents_min) as u64;
        self.config.balance_cents_min + (splitmix64(key ^ self.config.seed.rotate_left(32)) % span) as i64
    }

    /// Transactions are drawn from the random stream alone.
    fn replayable(&self) -> bool {
        true
    }

    fn generate(&self, rng: &mut WorkloadRng, txn: &mut Txn) {
        txn.procedure = self.draw_procedure(rng);
        txn.flags = 0;
        txn.keys.clear();
        let first = self.zipf.sample(rng);
        txn.keys.push(first);
        if Self::customers_of(txn) == 2 {
            loop {
                let second = self.zipf.sample(rng);
                if second != first {
                    txn.keys.push(second);
                    break;
                }
            }
        }
        txn.amount = match txn.procedure {
            DEPOSIT_CHECKING => DEPOSIT_CHECKING_CENTS,
            SEND_PAYMENT => SEND_PAYMENT_CENTS,
            TRANSACT_SAVINGS => TRANSACT_SAVINGS_CENTS,
            WRITE_CHECK => WRITE_CHECK_CENTS,
            _ => 0,
        };
    }

    fn step(&self, txn: &Txn, values: &[Value], reads: &mut Vec<Key>, writes: &mut Vec<(Key, Value)>) -> Step {
        let customers = Self::customers_of(txn);
        if values.is_empty() {
            reads.extend(txn.keys.iter().map(|&c| self.account_key(c)));
            return Step::Read;
        }
        if values.len() == customers {
            self.balance_keys_of(txn, values, reads);
            return Step::Read;
        }
        let mut keys = Vec::with_capacity(3);
        self.balance_keys_of(txn, &values[..customers], &mut keys);
        let balances = &values[customers..];
        match txn.procedure {
            AMALGAMATE => {
                let total = balances[0] + balances[1];
                writes.extend([(keys[0], 0), (keys[1], 0), (keys[2], balances[2] + total)]);
            }
            BALANCE => {}
            DEPOSIT_CHECKING => {
                if txn.amount < 0 {
                    return Step::UserAbort;
                }
                writes.push((keys[0], balances[0] + txn.amount));
            }
            SEND_PAYMENT => {
                if balances[0] < txn.amount {
                    return Step::UserAbort;
                }
                writes.extend([(keys[0], balances[0] - txn.amount), (keys[1], balances[1] + txn.amount)]);
            }
            TRANSACT_SAVINGS => {
                let updated = balances[0] + txn.amount;
                if updated < 0 {
                    return Step::UserAbort;
                }
                writes.push((keys[0], updated));
            }
            _ => {
                let penalty = if balances[0] + balances[1] < txn.amount { OVERDRAFT_PENALTY_CENTS } else { 0 };
                writes.push((keys[1], balances[1] - txn.amount - penalty));
            }
        }
        Step::Commit
    }

    fn footprint(&self, txn: &Txn, reads: &mut Vec<Key>, writes: &mut Vec<Key>) {
        // Account ids equal customer numbers (ACCOUNTS is never written), so round two's keys
        // are known in advance.
        let ids: Vec<Value> = txn.keys.iter().map(|&c| c as Value).collect();
        reads.extend(txn.keys.iter().map(|&c| self.account_key(c)));
        let start = reads.len();
        self.balance_keys_of(txn, &ids, reads);
        let written: &[usize] = match txn.procedure {
            AMALGAMATE => &[0, 1, 2],
            BALANCE => &[],
            DEPOSIT_CHECKING | TRANSACT_SAVINGS => &[0],
            SEND_PAYMENT => &[0, 1],
            _ => &[1],
        };
        writes.extend(written.iter().map(|&i| reads[start + i]));
    }

    fn conserved_keys(&self) -> Option<std::ops::Range<Key>> {
        let creates_or_destroys = [DEPOSIT_CHECKING, TRANSACT_SAVINGS, WRITE_CHECK];
        creates_or_destroys.iter().all(|&p| self.config.mix[p as usize] == 0).then(|| self.balance_keys())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procedure::execute;
    use crate::rng_from_seed;

    fn bank(mix: [u32; 6]) -> SmallBank {
        SmallBank::new(SmallBankConfig { customers: 50, theta: 0.9, mix, ..SmallBankConfig::default() }).unwrap()
    }

    /// Runs `count` transactions one after another on a plain array.
    fn run_serially(bank: &SmallBank, count: usize, seed: u64) -> (Vec<Value>, [u64; 6], u64) {
        let mut store: Vec<Value> = (0..bank.key_count()).map(|k| bank.initial_value(k)).collect();
        let mut rng = rng_from_seed(seed);
        let mut txn = Txn::default();
        let (mut values, mut reads, mut writes) = (Vec::new(), Vec::new(), Vec::new());
        let mut per_procedure = [0u64; 6];
        let mut user_aborts = 0;
        for _ in 0..count {
            bank.generate(&mut rng, &mut txn);
            per_procedure[txn.procedure as usize] += 1;
            match execute(bank, &txn, |k| store[k as usize], &mut values, &mut reads, &mut writes) {
                Step::Commit => {
                    let (mut declared_reads, mut declared_writes) = (Vec::new(), Vec::new());
                    bank.footprint(&txn, &mut declared_reads, &mut declared_writes);
                    for &(key, value) in &writes {
                        assert!(declared_writes.contains(&key), "{txn:?} wrote undeclared key {key}");
                        store[key as usize] = value;
                    }
                }
                Step::UserAbort => user_aborts += 1,
                Step::Read => unreachable!(),
            }
        }
        (store, per_procedure, user_aborts)
    }

    #[test]
    fn conserved_mix_keeps_the_total() {
        let bank = bank(CONSERVED_MIX);
        let range = bank.conserved_keys().expect("conserved mix");
        let initial: i64 = range.clone().map(|k| bank.initial_value(k)).sum();
        let (store, _, user_aborts) = run_serially(&bank, 20_000, 1);
        let total: i64 = store[range.start as usize..range.end as usize].iter().sum();
        assert_eq!(total, initial);
        assert!(user_aborts > 0, "hot accounts run dry, so some payments bounce");
    }

    #[test]
    fn standard_mix_follows_its_weights() {
        let bank = bank(STANDARD_MIX);
        assert!(bank.conserved_keys().is_none());
        let (_, per_procedure, _) = run_serially(&bank, 100_000, 2);
        for (count, weight) in per_procedure.iter().zip(STANDARD_MIX) {
            let share = *count as f64 / 100_000.0;
            assert!((share - f64::from(weight) / 100.0).abs() < 0.01, "{per_procedure:?}");
        }
    }

    #[test]
    fn net_deposit_matches_the_balance_change() {
        let bank = bank(STANDARD_MIX);
        let mut store: Vec<Value> = (0..bank.key_count()).map(|k| bank.initial_value(k)).collect();
        let mut rng = rng_from_seed(5);
        let mut txn = Txn::default();
        let (mut values, mut reads, mut writes) = (Vec::new(), Vec::new(), Vec::new());
        let total = |store: &[Value]| store[50..150].iter().sum::<i64>();
        for _ in 0..5000 {
            bank.generate(&mut rng, &mut txn);
            let before = total(&store);
            if execute(&bank, &txn, |k| store[k as usize], &mut values, &mut reads, &mut writes) == Step::Commit {
                let net = bank.net_deposit(&values, &writes, &txn);
                for &(key, value) in &writes {
                    store[key as usize] = value;
                }
                assert_eq!(total(&store) - before, net, "{txn:?}");
            }
        }
    }

    #[test]
    fn the_second_round_depends_on_the_first() {
        let bank = bank(STANDARD_MIX);
        let txn = Txn { procedure: BALANCE, keys: vec![7], amount: 0, flags: 0 };
        let (mut reads, mut writes) = (Vec::new(), Vec::new());
        assert_eq!(bank.step(&txn, &[], &mut reads, &mut writes), Step::Read);
        assert_eq!(reads, vec![7]);
        reads.clear();
        // Pretend ACCOUNTS maps customer 7 to id 9: round two must follow the value.
        assert_eq!(bank.step(&txn, &[9], &mut reads, &mut writes), Step::Read);
        assert_eq!(reads, vec![bank.savings_key(9), bank.checking_key(9)]);
    }

    #[test]
    fn bad_configuration_is_an_error() {
        let bad = SmallBankConfig { customers: 1, ..SmallBankConfig::default() };
        assert!(SmallBank::new(bad).is_err());
        let bad = SmallBankConfig { mix: [0; 6], ..SmallBankConfig::default() };
        assert!(SmallBank::new(bad).is_err());
        let bad = SmallBankConfig { theta: 1.2, ..SmallBankConfig::default() };
        assert!(SmallBank::new(bad).is_err());
    }
}
