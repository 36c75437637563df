//! A bounded record of what was chosen when, spanning the whole run at coarser grain as it
//! grows: when full it drops every other entry and from then on keeps only every other new
//! one, so `len_max` entries always cover the run from its start.

/// Entries `(t_us, value)`, oldest first, at most `len_max` of them.
#[derive(Debug, Clone)]
pub struct History<T> {
    entries: Vec<(u64, T)>,
    len_max: usize,
    /// Keep one offered entry in this many.
    stride: u64,
    offered: u64,
}

impl<T> History<T> {
    /// An empty history that keeps at most `len_max` (at least 2) entries.
    pub fn new(len_max: usize) -> Self {
        assert!(len_max >= 2, "a history keeps at least its first and its latest entry");
        History { entries: Vec::new(), len_max, stride: 1, offered: 0 }
    }

    /// Offers an entry; keeps it if it falls on the current stride, halving the history first
    /// when it is full.
    pub fn offer(&mut self, t_us: u64, value: T) {
        self.offered += 1;
        if !(self.offered - 1).is_multiple_of(self.stride) {
            return;
        }
        if self.entries.len() >= self.len_max {
            let mut index = 0;
            self.entries.retain(|_| {
                index += 1;
                index % 2 == 1
            });
            self.stride *= 2;
            if !(self.offered - 1).is_multiple_of(self.stride) {
                return;
            }
        }
        self.entries.push((t_us, value));
    }

    pub fn entries(&self) -> &[(u64, T)] {
        &self.entries
    }
}

#[cfg(test)]
mod tests {
    use super::History;

    #[test]
    fn stays_bounded_ordered_and_spans_the_run() {
        let mut history = History::new(8);
        for t in 0..1000_u64 {
            history.offer(t, t);
            assert!(history.entries().len() <= 8);
        }
        let entries = history.entries();
        assert_eq!(entries[0].0, 0, "the first entry stays");
        assert!(entries.last().unwrap().0 >= 500, "the latest entries reach the second half");
        assert!(entries.windows(2).all(|pair| pair[0].0 < pair[1].0));
        // Entries are evenly strided after halving: every gap is the same power of two.
        let gaps: Vec<u64> = entries.windows(2).map(|pair| pair[1].0 - pair[0].0).collect();
        assert!(gaps.iter().all(|&gap| gap == gaps[0] && gap.is_power_of_two()), "{gaps:?}");
    }

    #[test]
    fn keeps_everything_until_full() {
        let mut history = History::new(4);
        for t in 0..4_u64 {
            history.offer(t, ());
        }
        assert_eq!(history.entries().len(), 4);
    }
}
