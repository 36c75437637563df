//! Word-slice bitsets: the adjacency rows and vertex sets every solver works on.
//!
//! A set over `n` vertices is `n.div_ceil(64)` consecutive `u64` words; bit `v % 64` of word
//! `v / 64` is vertex `v`. Batches hold 10 to 1000 transactions, so a row is 1 to 16 words and
//! a degree is a handful of `popcount`s. These are free functions over slices rather than a
//! type so that rows can live inside one flat matrix allocation.

/// Number of words needed for a set over `len` vertices.
#[inline]
pub fn words_for(len: usize) -> usize {
    len.div_ceil(64)
}

#[inline]
pub fn contains(set: &[u64], v: usize) -> bool {
    set[v / 64] & (1u64 << (v % 64)) != 0
}

#[inline]
pub fn insert(set: &mut [u64], v: usize) {
    set[v / 64] |= 1u64 << (v % 64);
}

#[inline]
pub fn remove(set: &mut [u64], v: usize) {
    set[v / 64] &= !(1u64 << (v % 64));
}

#[inline]
pub fn count(set: &[u64]) -> usize {
    set.iter().map(|w| w.count_ones() as usize).sum()
}

#[inline]
pub fn is_empty(set: &[u64]) -> bool {
    set.iter().all(|&w| w == 0)
}

/// `|a ∩ b|` without materializing the intersection.
#[inline]
pub fn count_and(a: &[u64], b: &[u64]) -> usize {
    a.iter().zip(b).map(|(x, y)| (x & y).count_ones() as usize).sum()
}

/// Whether `a ∩ b` is non-empty.
#[inline]
pub fn intersects(a: &[u64], b: &[u64]) -> bool {
    a.iter().zip(b).any(|(x, y)| x & y != 0)
}

/// Fills `set` with the vertices `0..len` (and clears the padding bits above `len`).
pub fn fill(set: &mut [u64], len: usize) {
    set.fill(0);
    for (i, word) in set.iter_mut().enumerate() {
        let start = i * 64;
        if start >= len {
            break;
        }
        let bits = (len - start).min(64);
        *word = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
    }
}

/// The lowest member of `set` at or above `from`, if any.
#[inline]
pub fn next_at_or_after(set: &[u64], from: usize) -> Option<usize> {
    let mut word_index = from / 64;
    if word_index >= set.len() {
        return None;
    }
    let mut word = set[word_index] & (u64::MAX << (from % 64));
    loop {
        if word != 0 {
            return Some(word_index * 64 + word.trailing_zeros() as usize);
        }
        word_index += 1;
        if word_index == set.len() {
            return None;
        }
        word = set[word_index];
    }
}

/// Iterates the members of a set in increasing order.
#[derive(Debug, Clone)]
pub struct Ones<'a> {
    words: &'a [u64],
    index: usize,
    current: u64,
}

impl<'a> Ones<'a> {
    pub fn new(words: &'a [u64]) -> Self {
        Ones { words, index: 0, current: words.first().copied().unwrap_or(0) }
    }
}

impl Iterator for Ones<'_> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        while self.current == 0 {
            self.index += 1;
            if self.index >= self.words.len() {
                return None;
            }
            self.current = self.words[self.index];
        }
        let bit = self.current.trailing_zeros() as usize;
        self.current &= self.current - 1;
        Some(self.index * 64 + bit)
    }
}

/// Iterates `a ∩ b` in increasing order without materializing it.
#[derive(Debug, Clone)]
pub struct OnesAnd<'a> {
    a: &'a [u64],
    b: &'a [u64],
    index: usize,
    current: u64,
}

impl<'a> OnesAnd<'a> {
    pub fn new(a: &'a [u64], b: &'a [u64]) -> Self {
        debug_assert_eq!(a.len(), b.len());
        let current = match (a.first(), b.first()) {
            (Some(x), Some(y)) => x & y,
            _ => 0,
        };
        OnesAnd { a, b, index: 0, current }
    }
}

impl Iterator for OnesAnd<'_> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        while self.current == 0 {
            self.index += 1;
            if self.index >= self.a.len() {
                return None;
            }
            self.current = self.a[self.index] & self.b[self.index];
        }
        let bit = self.current.trailing_zeros() as usize;
        self.current &= self.current - 1;
        Some(self.index * 64 + bit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_sets_exactly_the_prefix() {
        for len in [0, 1, 63, 64, 65, 130] {
            let mut set = vec![0u64; words_for(len).max(1) + 1];
            fill(&mut set, len);
            assert_eq!(count(&set), len);
            assert_eq!(Ones::new(&set).collect::<Vec<_>>(), (0..len).collect::<Vec<_>>());
        }
    }

    #[test]
    fn iteration_and_search_agree() {
        let mut set = vec![0u64; 3];
        for v in [0, 5, 63, 64, 100, 191] {
            insert(&mut set, v);
        }
        let members: Vec<_> = Ones::new(&set).collect();
        assert_eq!(members, vec![0, 5, 63, 64, 100, 191]);
        assert_eq!(next_at_or_after(&set, 6), Some(63));
        assert_eq!(next_at_or_after(&set, 101), Some(191));
        assert_eq!(next_at_or_after(&set, 192), None);
        let mut other = vec![0u64; 3];
        insert(&mut other, 64);
        insert(&mut other, 191);
        insert(&mut other, 2);
        assert_eq!(OnesAnd::new(&set, &other).collect::<Vec<_>>(), vec![64, 191]);
        assert_eq!(count_and(&set, &other), 2);
        remove(&mut set, 64);
        assert!(!contains(&set, 64));
    }
}
