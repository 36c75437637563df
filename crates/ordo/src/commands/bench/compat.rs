//! `ordo bench --engine NAME ...`, the command line before the engines became subcommands:
//! rewritten to `ordo bench NAME ...` before clap parses it, so scripts and the commands in
//! README.md and BENCHMARKS.md keep working. `ordo bench ...` without an engine is the
//! pipeline, as it always was.
//!
//! ```text
//!  ordo bench --engine threads --protocol silo   ->  ordo bench threads --protocol silo
//!  ordo bench --mode srvc                        ->  ordo bench pipeline --mode srvc
//!  ordo bench pg --mode reorder                  ->  (unchanged)
//! ```

use std::ffi::OsString;

use super::ENGINES;

/// Why a command line could not be rewritten.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CompatError {
    #[error("unknown engine `{0}`; expected pipeline, threads or pg")]
    UnknownEngine(String),
    #[error("--engine needs a value: pipeline, threads or pg")]
    MissingEngine,
    #[error("--engine {given} with the subcommand {subcommand}: give one of them")]
    Both { given: String, subcommand: String },
}

/// Rewrites `args` (the whole command line, program name first) if it is the old form of
/// `ordo bench`; any other command line is returned as it is.
pub fn rewrite(args: Vec<OsString>) -> Result<Vec<OsString>, CompatError> {
    if args.get(1).and_then(|a| a.to_str()) != Some("bench") {
        return Ok(args);
    }
    let rest = &args[2..];
    let first = rest.first().and_then(|a| a.to_str());
    if let Some(subcommand) = first.filter(|&a| ENGINES.contains(&a) || a == "help") {
        // Already the new form; an `--engine` beside it is a contradiction clap would report
        // as an unknown flag, so say what it is.
        if let Some(given) = engine_flag(rest)? {
            return Err(CompatError::Both { given: given.1, subcommand: subcommand.to_owned() });
        }
        return Ok(args);
    }
    if matches!(first, Some("-h" | "--help")) && rest.len() == 1 {
        return Ok(args);
    }
    let (without, engine) = match engine_flag(rest)? {
        Some((at, engine, taken)) => {
            let mut without = rest.to_vec();
            without.drain(at..at + taken);
            (without, engine)
        }
        None => (rest.to_vec(), "pipeline".to_owned()),
    };
    let mut rewritten = args[..2].to_vec();
    rewritten.push(engine.into());
    rewritten.extend(without);
    Ok(rewritten)
}

/// Finds `--engine NAME` or `--engine=NAME`: (position, name, arguments it takes).
fn engine_flag(rest: &[OsString]) -> Result<Option<(usize, String, usize)>, CompatError> {
    for (at, arg) in rest.iter().enumerate() {
        let Some(arg) = arg.to_str() else { continue };
        if arg == "--" {
            break;
        }
        let (name, taken) = if arg == "--engine" {
            match rest.get(at + 1).and_then(|a| a.to_str()) {
                Some(name) if !name.starts_with('-') => (name.to_owned(), 2),
                _ => return Err(CompatError::MissingEngine),
            }
        } else if let Some(name) = arg.strip_prefix("--engine=") {
            (name.to_owned(), 1)
        } else {
            continue;
        };
        if !ENGINES.contains(&name.as_str()) {
            return Err(CompatError::UnknownEngine(name));
        }
        return Ok(Some((at, name, taken)));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(line: &str) -> Result<String, CompatError> {
        let args: Vec<OsString> = line.split_whitespace().map(OsString::from).collect();
        rewrite(args).map(|args| args.iter().map(|a| a.to_str().unwrap()).collect::<Vec<_>>().join(" "))
    }

    #[test]
    fn the_old_form_becomes_the_subcommand() {
        assert_eq!(
            rewritten("ordo bench --engine threads --protocol silo").unwrap(),
            "ordo bench threads --protocol silo"
        );
        assert_eq!(rewritten("ordo bench --mode srvc --engine=pg").unwrap(), "ordo bench pg --mode srvc");
        assert_eq!(rewritten("ordo bench --mode srvc").unwrap(), "ordo bench pipeline --mode srvc");
        assert_eq!(rewritten("ordo bench").unwrap(), "ordo bench pipeline");
        assert_eq!(rewritten("ordo bench --mode srvc --help").unwrap(), "ordo bench pipeline --mode srvc --help");
    }

    #[test]
    fn other_command_lines_are_left_alone() {
        for line in ["ordo bench pg --mode reorder", "ordo bench --help", "ordo bench help", "ordo check h --engine x"]
        {
            assert_eq!(rewritten(line).unwrap(), line);
        }
    }

    #[test]
    fn bad_engines_are_named() {
        assert_eq!(rewritten("ordo bench --engine quantum"), Err(CompatError::UnknownEngine("quantum".into())));
        assert_eq!(rewritten("ordo bench --engine"), Err(CompatError::MissingEngine));
        assert_eq!(rewritten("ordo bench --engine --mode srvc"), Err(CompatError::MissingEngine));
        assert!(matches!(rewritten("ordo bench pg --engine threads"), Err(CompatError::Both { .. })));
    }
}
