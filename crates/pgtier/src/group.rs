//! Grouping: a connection's consecutive queued transactions run as ONE server transaction.
//!
//! With `synchronous_commit = on` every server transaction waits for its WAL flush, and with it
//! off the server spends its CPU per transaction (snapshot, SSI bookkeeping, commit record).
//! The reorder planner already puts conflicting transactions on one connection to run one after
//! another; a group of `k` of them in one SERIALIZABLE server transaction costs one flush, one
//! SSI transaction and about one round trip instead of `k`:
//!
//! ```text
//!   queue of a connection:  t1 t2 t3 t4 t5 t6 t7      (group max 4)
//!   groups:                 [t1 t2 t3 t4] [t5 t6 t7]
//!   pipelined form:         BEGIN; SELECT sb_..(t1); ... SELECT sb_..(t4); COMMIT
//!   function form:          SELECT sb_group(ids[], procedures[], ...)   -- implicit transaction
//! ```
//!
//! Each logical transaction stays atomic and serializable: the members run serially inside one
//! serializable server transaction, so the group is equivalent to running them one after another
//! with nothing in between. What changes is failure:
//!
//! * a user abort (a procedure's own refusal) returns NULL and writes nothing, so it touches no
//!   other member: it is that transaction's user abort alone;
//! * a serialization failure (40001) or deadlock (40P01) rolls the whole group back, and every
//!   member is retried (each counts one failed attempt, so abort rates stay comparable across
//!   group sizes). [`GroupRetry`] decides how large a failed member's next group may be, so a
//!   hot group cannot fail together forever;
//! * a broken connection leaves the whole group in doubt. The group commits all or nothing, so
//!   [`settle_in_doubt`] decides it from the `ordo_txn` rows of its writers: any found means
//!   the group committed (a writer without a row then returned NULL: a user abort; a read-only
//!   Balance committed too), none found means it rolled back (or committed with every writer
//!   refusing, which wrote nothing, so retrying is just as safe).
//!
//! This module is the part without I/O: splitting a queue into groups and deciding an in-doubt
//! group. `attempt` sends groups, `run` drives them.

/// How a group is sent to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GroupForm {
    /// `BEGIN`, one prepared `SELECT sb_<procedure>(...)` per member, `COMMIT`, pipelined.
    Pipelined,
    /// One call of `sb_group(...)` with the members' parameters as arrays, as its own implicit
    /// transaction.
    Function,
}

named!(GroupForm { Pipelined => "pipelined", Function => "function" });

/// How large a group the members of a group that the server rolled back (40001, 40P01) may
/// join on their retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GroupRetry {
    /// As large as before.
    Keep,
    /// Half the failed group's size (at least 1): a hot group splits until it fits.
    Halve,
    /// Alone.
    Single,
}

named!(GroupRetry { Keep => "keep", Halve => "halve", Single => "single" });

impl GroupRetry {
    /// The largest group a member of a failed group of `failed_len` may join next, given the
    /// limit `cap` it had.
    pub fn cap_after_conflict(self, failed_len: usize, cap: usize) -> usize {
        match self {
            GroupRetry::Keep => cap,
            GroupRetry::Halve => (failed_len / 2).clamp(1, cap.max(1)),
            GroupRetry::Single => 1,
        }
    }
}

/// Splits a queue into groups of consecutive transactions, in order: each group at most
/// `group_max` long and no longer than the cap of any of its members (`caps[i]`: the largest
/// group transaction `i` may join). Writes the groups' lengths into `lengths`.
pub fn split(caps: &[usize], group_max: usize, lengths: &mut Vec<usize>) {
    lengths.clear();
    let group_max = group_max.max(1);
    let (mut len, mut limit) = (0usize, 0usize);
    for &cap in caps {
        let cap = cap.clamp(1, group_max);
        if len > 0 && len < limit.min(cap) {
            len += 1;
            limit = limit.min(cap);
        } else {
            if len > 0 {
                lengths.push(len);
            }
            len = 1;
            limit = cap;
        }
    }
    if len > 0 {
        lengths.push(len);
    }
    debug_assert_eq!(lengths.iter().sum::<usize>(), caps.len());
}

/// What an in-doubt member of a group came to, decided from its writers' `ordo_txn` rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decided {
    /// The group committed; the member added this much money.
    Committed { net_cents: i64 },
    /// The group committed; the member (a writer without a row) refused.
    UserAbort,
    /// Nothing of the group is in the database: retry.
    RolledBack,
}

/// A member of an in-doubt group: its id, and whether it writes (and so records its id in
/// `ordo_txn` when it commits without refusing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member {
    pub txn_id: i64,
    pub writer: bool,
}

/// Decides an in-doubt group from `found(id)`: the `net_cents` of the `ordo_txn` row of each
/// of its writers that has one (looked up after the old backend exited).
pub fn settle_in_doubt(members: &[Member], found: impl Fn(i64) -> Option<i64>, out: &mut Vec<Decided>) {
    out.clear();
    let committed = members.iter().any(|m| m.writer && found(m.txn_id).is_some());
    out.extend(members.iter().map(|m| match (committed, m.writer) {
        (false, _) => Decided::RolledBack,
        (true, false) => Decided::Committed { net_cents: 0 },
        (true, true) => match found(m.txn_id) {
            Some(net_cents) => Decided::Committed { net_cents },
            None => Decided::UserAbort,
        },
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lengths(caps: &[usize], group_max: usize) -> Vec<usize> {
        let mut out = Vec::new();
        split(caps, group_max, &mut out);
        out
    }

    #[test]
    fn split_fills_groups_in_order() {
        assert_eq!(lengths(&[8; 7], 4), vec![4, 3]);
        assert_eq!(lengths(&[8; 8], 4), vec![4, 4]);
        assert_eq!(lengths(&[8; 3], 1), vec![1, 1, 1]);
        assert_eq!(lengths(&[], 4), Vec::<usize>::new());
    }

    #[test]
    fn split_respects_every_members_cap() {
        // A member that may only run alone closes the group before it and runs alone.
        assert_eq!(lengths(&[8, 8, 1, 8, 8], 8), vec![2, 1, 2]);
        // A member with cap 2 joins a group only while it has at most 2 members.
        assert_eq!(lengths(&[8, 2, 8, 8], 8), vec![2, 2]);
        assert_eq!(lengths(&[8, 8, 2, 8], 8), vec![2, 2]);
        // Caps of 0 are treated as 1; caps above the maximum as the maximum.
        assert_eq!(lengths(&[0, 0], 4), vec![1, 1]);
        assert_eq!(lengths(&[100; 5], 3), vec![3, 2]);
    }

    #[test]
    fn retry_policies_shrink_failed_groups() {
        assert_eq!(GroupRetry::Keep.cap_after_conflict(8, 8), 8);
        assert_eq!(GroupRetry::Halve.cap_after_conflict(8, 8), 4);
        assert_eq!(GroupRetry::Halve.cap_after_conflict(3, 8), 1);
        assert_eq!(GroupRetry::Halve.cap_after_conflict(1, 8), 1);
        assert_eq!(GroupRetry::Single.cap_after_conflict(8, 8), 1);
    }

    #[test]
    fn an_in_doubt_group_is_decided_by_its_writers() {
        let members = [
            Member { txn_id: 1, writer: true },
            Member { txn_id: 2, writer: false },
            Member { txn_id: 3, writer: true },
        ];
        let mut out = Vec::new();
        settle_in_doubt(&members, |id| (id == 1).then_some(-500), &mut out);
        assert_eq!(
            out,
            vec![Decided::Committed { net_cents: -500 }, Decided::Committed { net_cents: 0 }, Decided::UserAbort]
        );
        settle_in_doubt(&members, |_| None, &mut out);
        assert_eq!(out, vec![Decided::RolledBack; 3]);
        // A group of readers only leaves no trace: retried, which is harmless.
        settle_in_doubt(&[Member { txn_id: 2, writer: false }], |_| Some(0), &mut out);
        assert_eq!(out, vec![Decided::RolledBack]);
    }
}
