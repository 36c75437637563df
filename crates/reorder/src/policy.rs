//! Policies (§4.2): which transaction a greedy solver aborts next.
//!
//! A policy ranks the live vertices of the residual graph; the solvers put the top-ranked
//! vertex (or, in the sort-based solver, the top `k`) into the feedback vertex set. Ranks
//! compare a primary score, then a secondary score, then prefer the lower batch position, so
//! every policy but `random` is deterministic.
//!
//! | policy        | aborts first                                                        |
//! |---------------|---------------------------------------------------------------------|
//! | `random`      | a uniformly random vertex                                           |
//! | `max-degree`  | the largest of in-degree and out-degree                             |
//! | `sum-degree`  | the largest in-degree + out-degree                                  |
//! | `prod-degree` | the largest in-degree x out-degree (the paper's default, "mc")      |
//! | `rct`         | the fewest restarts; ties by prod-degree (tail latency)             |
//! | `rdeg`        | the largest in-degree x out-degree / 2^restarts (tail latency)      |
//! | `value`       | the lowest value; ties by prod-degree (minimum-weight FVS)          |
//!
//! The exact search minimizes the number of aborted transactions, except under `value`, where
//! it minimizes their total value.

use std::fmt;
use std::str::FromStr;

use rand::Rng;

use crate::error::ReorderError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Policy {
    Random,
    MaxDegree,
    SumDegree,
    ProdDegree,
    Rct,
    Rdeg,
    Value,
}

const POLICY_NAMES: &str = "random, max-degree, sum-degree, prod-degree (alias mc), rct, rdeg, value";

impl Policy {
    pub const ALL: [Policy; 7] = [
        Policy::Random,
        Policy::MaxDegree,
        Policy::SumDegree,
        Policy::ProdDegree,
        Policy::Rct,
        Policy::Rdeg,
        Policy::Value,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Policy::Random => "random",
            Policy::MaxDegree => "max-degree",
            Policy::SumDegree => "sum-degree",
            Policy::ProdDegree => "prod-degree",
            Policy::Rct => "rct",
            Policy::Rdeg => "rdeg",
            Policy::Value => "value",
        }
    }

    /// Rank of a live vertex: the higher, the sooner it is aborted.
    #[inline]
    pub fn score(self, in_degree: u32, out_degree: u32, meta: VertexMeta, rng: &mut impl Rng) -> Score {
        let prod = u64::from(in_degree) * u64::from(out_degree);
        match self {
            Policy::Random => Score { primary: 0.0, secondary: rng.random() },
            Policy::MaxDegree => Score { primary: f64::from(in_degree.max(out_degree)), secondary: 0 },
            Policy::SumDegree => Score { primary: f64::from(in_degree + out_degree), secondary: 0 },
            Policy::ProdDegree => Score { primary: prod as f64, secondary: 0 },
            Policy::Rct => Score { primary: -f64::from(meta.restarts), secondary: prod },
            Policy::Rdeg => Score { primary: prod as f64 / 2f64.powi(meta.restarts.min(1000) as i32), secondary: 0 },
            Policy::Value => Score { primary: -meta.value, secondary: prod },
        }
    }

    /// What aborting the vertex costs in the exact search's objective.
    #[inline]
    pub fn weight(self, meta: VertexMeta) -> f64 {
        match self {
            Policy::Value => meta.value,
            _ => 1.0,
        }
    }

    /// Whether the objective counts transactions (every weight is 1).
    pub fn is_unweighted(self) -> bool {
        self != Policy::Value
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Policy {
    type Err = ReorderError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        let normalized = name.trim().to_ascii_lowercase().replace('_', "-");
        Ok(match normalized.as_str() {
            "random" => Policy::Random,
            "max-degree" | "max" => Policy::MaxDegree,
            "sum-degree" | "sum" => Policy::SumDegree,
            "prod-degree" | "prod" | "mc" => Policy::ProdDegree,
            "rct" => Policy::Rct,
            "rdeg" => Policy::Rdeg,
            "value" => Policy::Value,
            _ => return Err(ReorderError::UnknownPolicy { name: name.to_owned(), expected: POLICY_NAMES }),
        })
    }
}

/// `--policy` on the command line: the names of [`Policy::name`], with the aliases `FromStr`
/// accepts.
#[cfg(feature = "clap")]
impl clap::ValueEnum for Policy {
    fn value_variants<'a>() -> &'a [Self] {
        &Policy::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let value = clap::builder::PossibleValue::new(self.name());
        Some(match self {
            Policy::MaxDegree => value.aliases(["max", "max_degree"]),
            Policy::SumDegree => value.aliases(["sum", "sum_degree"]),
            Policy::ProdDegree => value.aliases(["prod", "prod_degree", "mc"]),
            _ => value,
        })
    }
}

/// Per-transaction facts a policy may use besides the degrees.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VertexMeta {
    pub restarts: u32,
    pub value: f64,
}

impl Default for VertexMeta {
    fn default() -> Self {
        VertexMeta { restarts: 0, value: 1.0 }
    }
}

/// A policy's rank of one vertex; compare with [`Score::outranks`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Score {
    pub primary: f64,
    pub secondary: u64,
}

impl Score {
    pub const LOWEST: Score = Score { primary: f64::NEG_INFINITY, secondary: 0 };

    /// Strictly higher rank. Callers scan vertices in increasing order and replace their best
    /// only on a strictly higher rank, so ties go to the lower batch position.
    #[inline]
    pub fn outranks(self, other: Score) -> bool {
        self.primary > other.primary || (self.primary == other.primary && self.secondary > other.secondary)
    }

    /// Total order (higher first) for sorting candidates; ties broken by the caller.
    #[inline]
    pub fn cmp_desc(self, other: Score) -> std::cmp::Ordering {
        other.primary.total_cmp(&self.primary).then_with(|| other.secondary.cmp(&self.secondary))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    #[test]
    fn names_round_trip_and_aliases_parse() {
        for policy in Policy::ALL {
            assert_eq!(policy.name().parse::<Policy>().unwrap(), policy);
        }
        assert_eq!("mc".parse::<Policy>().unwrap(), Policy::ProdDegree);
        assert_eq!("prod_degree".parse::<Policy>().unwrap(), Policy::ProdDegree);
        assert!(matches!("fastest".parse::<Policy>(), Err(ReorderError::UnknownPolicy { .. })));
    }

    /// The command line's names and aliases are the ones `FromStr` accepts, for the same policy.
    #[cfg(feature = "clap")]
    #[test]
    fn command_line_names_are_the_parsers() {
        use clap::ValueEnum;
        for policy in Policy::ALL {
            let value = policy.to_possible_value().unwrap();
            assert_eq!(value.get_name(), policy.name());
            for name in value.get_name_and_aliases() {
                assert_eq!(name.parse::<Policy>().unwrap(), policy, "{name}");
            }
        }
    }

    #[test]
    fn latency_policies_spare_restarted_transactions() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let fresh = VertexMeta { restarts: 0, value: 1.0 };
        let veteran = VertexMeta { restarts: 3, value: 1.0 };
        // The veteran has four times the degree product but three restarts.
        let fresh_rdeg = Policy::Rdeg.score(1, 1, fresh, &mut rng);
        let veteran_rdeg = Policy::Rdeg.score(2, 2, veteran, &mut rng);
        assert!(fresh_rdeg.outranks(veteran_rdeg), "4 / 2^3 < 1");
        let fresh_rct = Policy::Rct.score(1, 1, fresh, &mut rng);
        let veteran_rct = Policy::Rct.score(9, 9, veteran, &mut rng);
        assert!(fresh_rct.outranks(veteran_rct));
        let cheap = Policy::Value.score(1, 1, VertexMeta { restarts: 0, value: 0.5 }, &mut rng);
        let dear = Policy::Value.score(5, 5, VertexMeta { restarts: 0, value: 2.0 }, &mut rng);
        assert!(cheap.outranks(dear));
    }
}
