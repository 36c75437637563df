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
    /// The paper's value, as the paper gives it (e.g. `~2.5x`, `3.35`).
    pub paper: String,
    /// ordo's value, computed from the data files.
    pub ordo: String,
    /// Whether ordo's effect goes the paper's way (e.g. reordering helps rather than hurts),
    /// when that is a yes/no question. Only the direction: how large the effect is, against the
    /// paper's, is for the reader to compare in the same row.
    pub agrees: Option<bool>,
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
                out.push_str("| quantity | paper | ordo | direction |\n|---|---|---|---|\n");
                for claim in &experiment.claims {
                    let verdict = match claim.agrees {
                        Some(true) => "same as the paper's",
                        Some(false) => "opposite",
                        None => "",
                    };
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
}
