//! The experiment report (`REPORT.md`): for every experiment its charts, the paper's claim and
//! what ordo measured, plus the machine, the date and the exact command.
//!
//! The report only renders; every measured number in it is computed by the caller from the data
//! files the report sits next to.

use std::fmt::Write as _;
use std::path::Path;

/// One of the paper's claims and ordo's measurement of the same quantity.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    /// What is compared, e.g. `srvc / base throughput at θ=0.8`.
    pub quantity: String,
    /// The reference value ([`Reference`]): the paper's or seed 003's as the source gives it
    /// (e.g. `~2.5x`, `3.35`), or a target of ordo's own (`at least 0.95x`).
    pub paper: String,
    /// ordo's value, computed from the data files.
    pub ordo: String,
    /// Whether ordo's effect goes the paper's way (e.g. reordering helps rather than hurts),
    /// when that is a yes/no question. Only the direction: how large the effect is, against the
    /// paper's, is for the reader to compare in the same row.
    pub agrees: Option<bool>,
}

/// What an experiment's claims are compared with: it names the claims table's second column
/// and says what a claim that `agrees` means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reference {
    /// The paper's values: ordo's effect goes the same way or the opposite way.
    #[default]
    Paper,
    /// Seed 003's values (ERMIA against Silo), read the same way as the paper's.
    Seed003,
    /// A target of ordo's own: met or not.
    Target,
}

impl Reference {
    /// The claims table's second column.
    pub fn column(self) -> &'static str {
        match self {
            Reference::Paper => "paper",
            Reference::Seed003 => "seed 003",
            Reference::Target => "target",
        }
    }

    /// What a claim's `agrees` says, in the direction column.
    pub fn verdict(self, agrees: Option<bool>) -> &'static str {
        match (self, agrees) {
            (Reference::Target, None) => "unresolved",
            (_, None) => "",
            (Reference::Paper, Some(true)) => "same as the paper's",
            (Reference::Seed003, Some(true)) => "same as seed 003's",
            (Reference::Paper | Reference::Seed003, Some(false)) => "opposite",
            (Reference::Target, Some(true)) => "met",
            (Reference::Target, Some(false)) => "not met",
        }
    }
}

/// One experiment's section.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ExperimentReport {
    pub name: String,
    pub title: String,
    /// The exact command that produced the data.
    pub command: String,
    /// `(caption, file name of the PNG, file name of the SVG)`, relative to the report.
    pub charts: Vec<(String, String, String)>,
    pub claims: Vec<Claim>,
    /// Data files next to the report.
    pub data_files: Vec<String>,
    /// Observations and caveats (how ordo's shape differs and why).
    pub notes: Vec<String>,
    /// What the claims are compared with.
    pub reference: Reference,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Report {
    pub title: String,
    pub machine: String,
    pub date: String,
    pub revision: String,
    pub command: String,
    pub preamble: Vec<String>,
    pub experiments: Vec<ExperimentReport>,
}

impl Report {
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# {}\n", self.title);
        let _ = writeln!(out, "- Machine: {}", self.machine);
        let _ = writeln!(out, "- Date: {}", self.date);
        let _ = writeln!(out, "- Revision: `{}`", self.revision);
        let _ = writeln!(out, "- Command: `{}`\n", self.command);
        for paragraph in &self.preamble {
            let _ = writeln!(out, "{paragraph}\n");
        }
        if self.experiments.len() > 1 {
            out.push_str("## Contents\n\n");
            for experiment in &self.experiments {
                let anchor: String = experiment
                    .title
                    .to_lowercase()
                    .chars()
                    .filter_map(|c| {
                        if c.is_alphanumeric() {
                            Some(c)
                        } else if c == ' ' || c == '-' {
                            Some('-')
                        } else {
                            None
                        }
                    })
                    .collect();
                let _ = writeln!(out, "- [{}](#{anchor})", experiment.title);
            }
            out.push('\n');
        }
        for experiment in &self.experiments {
            let _ = writeln!(out, "## {}\n", experiment.title);
            let _ = writeln!(out, "Command: `{}`\n", experiment.command);
            if !experiment.claims.is_empty() {
                let column = experiment.reference.column();
                let _ = writeln!(out, "| quantity | {column} | ordo | direction |\n|---|---|---|---|");
                for claim in &experiment.claims {
                    let verdict = experiment.reference.verdict(claim.agrees);
                    let _ = writeln!(out, "| {} | {} | {} | {verdict} |", claim.quantity, claim.paper, claim.ordo);
                }
                out.push('\n');
            }
            for (caption, png, svg) in &experiment.charts {
                let _ = writeln!(out, "![{caption}]({png})\n\n*{caption}* ([SVG]({svg}))\n");
            }
            for note in &experiment.notes {
                let _ = writeln!(out, "{note}\n");
            }
            if !experiment.data_files.is_empty() {
                let files: Vec<String> = experiment.data_files.iter().map(|f| format!("[{f}]({f})")).collect();
                let _ = writeln!(out, "Data: {}\n", files.join(", "));
            }
        }
        out
    }

    /// Writes `REPORT.md` into `dir`.
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        std::fs::write(dir.join("REPORT.md"), self.to_markdown())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_has_the_claims_the_charts_and_the_provenance() {
        let report = Report {
            title: "ordo results".into(),
            machine: "2 cores".into(),
            date: "2026-11-23".into(),
            revision: "abc1234".into(),
            command: "ordo figures all --quick".into(),
            preamble: vec!["Quick runs.".into()],
            experiments: vec![ExperimentReport {
                name: "modes".into(),
                title: "Figures 10-12: batching and reordering modes".into(),
                command: "ordo bench --mode base,srvc".into(),
                charts: vec![("Throughput".into(), "modes_tps.png".into(), "modes_tps.svg".into())],
                claims: vec![Claim {
                    quantity: "srvc / base at θ=0.8".into(),
                    paper: "~2.5x".into(),
                    ordo: "1.7x".into(),
                    agrees: Some(true),
                }],
                data_files: vec!["modes.json".into()],
                notes: vec!["A note.".into()],
                reference: Reference::Paper,
            }],
        };
        let text = report.to_markdown();
        for expected in [
            "- Revision: `abc1234`",
            "| quantity | paper | ordo | direction |",
            "| srvc / base at θ=0.8 | ~2.5x | 1.7x | same as the paper's |",
            "![Throughput](modes_tps.png)",
            "[modes.json](modes.json)",
            "Command: `ordo bench --mode base,srvc`",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in\n{text}");
        }
    }

    #[test]
    fn a_target_names_its_column_and_reads_as_met_or_not() {
        let claim =
            |agrees| Claim { quantity: "auto / best".into(), paper: "0.95x".into(), ordo: "0.97x".into(), agrees };
        let report = Report {
            experiments: vec![ExperimentReport {
                title: "Adaptive".into(),
                claims: vec![claim(Some(true)), claim(Some(false)), claim(None)],
                reference: Reference::Target,
                ..ExperimentReport::default()
            }],
            ..Report::default()
        };
        let text = report.to_markdown();
        for expected in [
            "| quantity | target | ordo | direction |",
            "| auto / best | 0.95x | 0.97x | met |",
            "| auto / best | 0.95x | 0.97x | not met |",
            "| auto / best | 0.95x | 0.97x | unresolved |",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in\n{text}");
        }
        assert_eq!(Reference::Seed003.verdict(Some(true)), "same as seed 003's");
        assert_eq!(Reference::Seed003.column(), "seed 003");
    }
}
