//! TPC-C's random inputs (clauses 2.1.6 and 4.3.2): NURand and its run-time constants, last
//! names from syllables, and random a-strings and n-strings.
//!
//! NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x skews customer
//! and item choices: the OR of two uniform draws sets more bits, so some values are far
//! likelier than others, and C (a per-run constant) shifts which. The specification requires
//! that the C used for last names while loading (`C_load`) and while running (`C_run`)
//! differ by `delta = |C_run - C_load|` in 65..=119, `delta` not 96 or 112, so the names a run
//! looks up are not exactly the loaded skew.

use rand::Rng;

use crate::{WorkloadRng, rng_from_seed};

/// The ten syllables whose three-digit combinations make last names (clause 4.3.2.3). No
/// syllable is a prefix of another, so a name decodes into its number uniquely.
pub const SYLLABLES: [&[u8]; 10] =
    [b"BAR", b"OUGHT", b"ABLE", b"PRI", b"PRES", b"ESE", b"ANTI", b"CALLY", b"ATION", b"EING"];
/// Last-name numbers are 0..=999.
pub const LAST_NAME_NUMBER_MAX: u64 = 999;

/// Characters of a-strings: the 62 letters and digits and two punctuation marks, in byte
/// order (so a character's position orders like the character). The specification asks for
/// at least the letters and digits.
pub const FIRST_NAME_ALPHABET: &[u8; 64] = b"+-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// NURand's A for customer last names, customer numbers and item numbers.
pub const A_LAST_NAME: u64 = 255;
pub const A_CUSTOMER: u64 = 1023;
pub const A_ITEM: u64 = 8191;

/// The run-time constants C of NURand, one per use, drawn once per configuration seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NurandConstants {
    /// C for last names while loading.
    pub last_name_load: u64,
    /// C for last names while running (its distance from `last_name_load` is as required).
    pub last_name_run: u64,
    pub customer: u64,
    pub item: u64,
}

impl NurandConstants {
    /// Draws the constants from `seed`.
    pub fn from_seed(seed: u64) -> Self {
        let mut rng = rng_from_seed(seed ^ 0xC0_45_7A_47);
        let last_name_load = rng.random_range(0..=A_LAST_NAME);
        let last_name_run = loop {
            let run = rng.random_range(0..=A_LAST_NAME);
            if Self::valid_last_name_delta(last_name_load, run) {
                break run;
            }
        };
        NurandConstants {
            last_name_load,
            last_name_run,
            customer: rng.random_range(0..=A_CUSTOMER),
            item: rng.random_range(0..=A_ITEM),
        }
    }

    /// Whether `run` may follow `load` (clause 2.1.6.1).
    pub fn valid_last_name_delta(load: u64, run: u64) -> bool {
        let delta = load.abs_diff(run);
        (65..=119).contains(&delta) && delta != 96 && delta != 112
    }
}

/// NURand(A, x, y) with run-time constant `c`: a value in `x..=y`.
#[inline]
pub fn nurand(rng: &mut WorkloadRng, a: u64, x: u64, y: u64, c: u64) -> u64 {
    debug_assert!(x <= y);
    (((rng.random_range(0..=a) | rng.random_range(x..=y)) + c) % (y - x + 1)) + x
}

/// Writes last name number `number` (0..=999) into `out`, returning its length (at most 15).
pub fn last_name(number: u64, out: &mut [u8; 16]) -> usize {
    debug_assert!(number <= LAST_NAME_NUMBER_MAX);
    let mut len = 0;
    for digit in [number / 100, (number / 10) % 10, number % 10] {
        let syllable = SYLLABLES[digit as usize];
        out[len..len + syllable.len()].copy_from_slice(syllable);
        len += syllable.len();
    }
    len
}

/// The number of a last name made of three syllables; `None` for anything else.
pub fn last_name_number(mut name: &[u8]) -> Option<u64> {
    let mut number = 0;
    for _ in 0..3 {
        let digit = SYLLABLES.iter().position(|s| name.starts_with(s))?;
        name = &name[SYLLABLES[digit].len()..];
        number = number * 10 + digit as u64;
    }
    name.is_empty().then_some(number)
}

/// Fills `out` with a random a-string of length `min..=max` (at most `out.len()`), returning
/// the length. Six random bits choose each character.
pub fn a_string(rng: &mut WorkloadRng, min: usize, max: usize, out: &mut [u8]) -> usize {
    let len = rng.random_range(min..=max).min(out.len());
    let mut bits = 0u64;
    for (i, byte) in out[..len].iter_mut().enumerate() {
        if i % 10 == 0 {
            bits = rng.random();
        }
        *byte = FIRST_NAME_ALPHABET[(bits & 63) as usize];
        bits >>= 6;
    }
    len
}

/// Fills `out` with a random n-string (digits) of length `min..=max`, returning the length.
pub fn n_string(rng: &mut WorkloadRng, min: usize, max: usize, out: &mut [u8]) -> usize {
    let len = rng.random_range(min..=max).min(out.len());
    for byte in &mut out[..len] {
        *byte = b'0' + rng.random_range(0..10u8);
    }
    len
}

/// The marker 10% of I_DATA and S_DATA hold (clause 4.3.3.1).
pub const ORIGINAL: &[u8] = b"ORIGINAL";

/// An a-string of 26..=50 characters for I_DATA or S_DATA, holding "ORIGINAL" at a random
/// place one time in ten. Returns the length.
pub fn data_string(rng: &mut WorkloadRng, out: &mut [u8; 50]) -> usize {
    let len = a_string(rng, 26, 50, out);
    if rng.random_range(0..10) == 0 {
        let at = rng.random_range(0..=len - ORIGINAL.len());
        out[at..at + ORIGINAL.len()].copy_from_slice(ORIGINAL);
    }
    len
}

/// A zip code: four random digits and "11111" (clause 4.3.2.7).
pub fn zip(rng: &mut WorkloadRng, out: &mut [u8; 9]) {
    n_string(rng, 4, 4, &mut out[..4]);
    out[4..].copy_from_slice(b"11111");
}
