//! How to reorder a batch, from the command line: the algorithm, the policy, the sort-based
//! greedy's k, the minimality pass, the exact search's budget and the random policy's seed.
//!
//! Every default is [`FvsConfig::default`]'s, the one the library, every engine and every
//! command share, so `ordo fvs`, `ordo bench pipeline` and the PostgreSQL tier reorder alike
//! unless told otherwise.

use std::fmt;
use std::str::FromStr;

use anyhow::{Result, bail};
use clap::Args;
use ordo_reorder::{FvsConfig, Policy};

/// Largest `--multi-factor`: the sort-based greedy never aborts more vertices per round than a
/// batch holds.
pub const MULTI_FACTOR_MAX: usize = ordo_pipeline::BATCH_SIZE_MAX;
/// Most search-tree nodes the exact search may visit per batch (a billion: seconds per batch).
pub const SEARCH_BUDGET_MAX: u64 = 1_000_000_000;

/// One `--algorithm` value, checked when parsed: `<name>[[<policy>]][_k<k>][+min]`, e.g.
/// `greedy_sort`, `greedy_prod`, `hybrid_sort_32+min`, `greedy_sort_k1`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AlgorithmLabel(String);

impl AlgorithmLabel {
    /// The default algorithm's name (without `+min`, which `--minimize` adds).
    pub fn default_label() -> AlgorithmLabel {
        let default = FvsConfig::default();
        AlgorithmLabel(FvsConfig { minimize: false, ..default }.label())
    }

    /// The configuration this label names under `policy` (unless the name fixes one), with
    /// `multi_factor` unless the label fixes k, and the minimality pass if the label (`+min`)
    /// or `minimize` asks for it; budget and seed as given.
    pub fn config(&self, policy: Policy, multi_factor: usize, minimize: bool) -> Result<FvsConfig> {
        let mut config = FvsConfig::from_label(&self.0, policy)?;
        if !self.fixes_k() {
            config.multi_factor = multi_factor;
        }
        config.minimize |= minimize;
        config.validate()?;
        Ok(config)
    }

    /// Whether the name fixes the policy (`greedy_prod`, `random`, `greedy_sort[rct]`).
    pub fn implied_policy(&self) -> Option<Policy> {
        let with = |policy| FvsConfig::from_label(&self.0, policy).map(|c| c.policy).ok();
        let (a, b) = (with(Policy::ProdDegree), with(Policy::Rct));
        if a == b { a } else { None }
    }

    fn fixes_k(&self) -> bool {
        let name = self.0.trim().trim_end_matches("+min");
        name.rsplit_once("_k").is_some_and(|(_, k)| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
    }
}

impl FromStr for AlgorithmLabel {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        FvsConfig::from_label(s, Policy::ProdDegree).map_err(|e| e.to_string())?;
        Ok(AlgorithmLabel(s.trim().to_owned()))
    }
}

impl fmt::Display for AlgorithmLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// How to reorder one batch (`ordo fvs`).
#[derive(Debug, Clone, PartialEq, Args)]
pub struct ReorderArgs {
    /// Feedback vertex set algorithm: search, greedy_scc, greedy_max, greedy_sum, greedy_prod,
    /// greedy_sort, hybrid_<m>, hybrid_sort_<m>, random, random_<n>, with `_k<k>` and `+min`
    /// suffixes as results print them.
    #[arg(long, default_value_t = AlgorithmLabel::default_label())]
    pub algorithm: AlgorithmLabel,
    /// Which transaction to abort first. Defaults to what the algorithm implies, else
    /// prod-degree.
    #[arg(long, value_enum)]
    pub policy: Option<Policy>,
    /// Vertices the sort-based greedy aborts per round (k), 1..=10000.
    #[arg(long, default_value_t = FvsConfig::default().multi_factor)]
    pub multi_factor: usize,
    /// Return aborted transactions whose return keeps the graph acyclic (minimal FVS).
    #[arg(long, default_value_t = FvsConfig::default().minimize, action = clap::ArgAction::Set)]
    pub minimize: bool,
    /// Search-tree nodes the exact search may visit before falling back to greedy,
    /// 1..=1000000000.
    #[arg(long, default_value_t = FvsConfig::default().search_node_budget)]
    pub search_budget: u64,
    /// Seed for the random policy.
    #[arg(long, default_value_t = FvsConfig::default().seed)]
    pub reorder_seed: u64,
}

impl ReorderArgs {
    pub fn config(&self) -> Result<FvsConfig> {
        check_ranges(self.multi_factor, self.search_budget)?;
        let implied = self.algorithm.implied_policy();
        let policy = match (self.policy, implied) {
            (Some(policy), Some(implied)) if policy != implied => bail!(
                "--algorithm {} fixes the policy to {implied}; use --algorithm greedy_scc --policy {policy}",
                self.algorithm
            ),
            (Some(policy), _) => policy,
            (None, implied) => implied.unwrap_or(FvsConfig::default().policy),
        };
        let config = self.algorithm.config(policy, self.multi_factor, self.minimize)?;
        Ok(FvsConfig { search_node_budget: self.search_budget, seed: self.reorder_seed, ..config })
    }
}

/// Checks `--multi-factor` and `--search-budget`.
pub fn check_ranges(multi_factor: usize, search_budget: u64) -> Result<()> {
    super::bench::values::within("--multi-factor", [multi_factor], 1, MULTI_FACTOR_MAX)?;
    super::bench::values::within("--search-budget", [search_budget], 1, SEARCH_BUDGET_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_defaults_are_the_librarys() {
        let args: ReorderArgs = crate::commands::bench::defaults();
        assert_eq!(args.config().unwrap(), FvsConfig::default());
    }

    #[test]
    fn labels_fix_what_they_name() {
        let label: AlgorithmLabel = "greedy_prod".parse().unwrap();
        assert_eq!(label.implied_policy(), Some(Policy::ProdDegree));
        assert_eq!(label.config(Policy::Rct, 2, false).unwrap().policy, Policy::ProdDegree);
        let label: AlgorithmLabel = "greedy_sort_k1+min".parse().unwrap();
        let config = label.config(Policy::Rct, 3, false).unwrap();
        assert_eq!((config.multi_factor, config.minimize, config.policy), (1, true, Policy::Rct));
        assert_eq!("hybrid_sort_32".parse::<AlgorithmLabel>().unwrap().implied_policy(), None);
        assert!("greedy_fast".parse::<AlgorithmLabel>().is_err());
    }
}
