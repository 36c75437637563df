//! One attempt of one transaction on one connection, in either form:
//!
//! * `functions`: one statement, `SELECT sb_<procedure>(id, ...)`, run as its own implicit
//!   transaction (one round trip; several can be pipelined on a connection);
//! * `statements`: `BEGIN`, the workload's read rounds (each round's reads pipelined), the
//!   writes, the `ordo_txn` row and `COMMIT` pipelined together: three round trips, driven by
//!   the same `Workload::step` the in-memory engines run;
//! * a group (functions only, see `group`): several transactions as one server transaction,
//!   pipelined (`BEGIN`, one `SELECT sb_<procedure>(...)` each, `COMMIT`) or as one call of
//!   `sb_group` with the members' parameters as arrays.

use futures_util::future::join_all;
use ordo_workload::smallbank::{AMALGAMATE, BALANCE, SEND_PAYMENT};
use ordo_workload::{Key, Step, Txn, Value, Workload};
use tokio_postgres::types::ToSql;

use crate::connection::{Conn, Failure, classify};
use crate::error::PgError;

/// The two ways of running the procedures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Procedures {
    Functions,
    Statements,
}

named!(Procedures { Functions => "functions", Statements => "statements" });

/// What one attempt came to.
#[derive(Debug)]
pub enum Attempt {
    /// Committed; the money it added to the bank.
    Committed { net_cents: i64 },
    /// The procedure refused; nothing written.
    UserAbort,
    /// Rolled back by the server (40001, 40P01): retry.
    Conflict(Failure),
    /// The connection broke; the transaction may or may not have committed.
    InDoubt,
    /// Not retryable.
    Fatal(PgError),
}

fn failed(error: tokio_postgres::Error, context: &str) -> Attempt {
    match classify(&error) {
        Failure::ConnectionLost => Attempt::InDoubt,
        failure @ (Failure::Serialization | Failure::Deadlock) => Attempt::Conflict(failure),
        Failure::Other => Attempt::Fatal(PgError::database(context, error)),
    }
}

/// The customer names a procedure takes (the second is empty for one-customer procedures).
fn customers(txn: &Txn) -> (String, String) {
    (txn.keys[0].to_string(), txn.keys.get(1).map(ToString::to_string).unwrap_or_default())
}

/// What a procedure's result means: its net, or NULL for its own refusal.
fn answered(net_cents: Option<i64>) -> Attempt {
    match net_cents {
        Some(net_cents) => Attempt::Committed { net_cents },
        None => Attempt::UserAbort,
    }
}

/// Runs `txn` (ordo id `txn_id`) once as a server-side function call.
pub async fn function_call(conn: &Conn, txn_id: i64, txn: &Txn) -> Attempt {
    let (first, second) = customers(txn);
    let statement = &conn.prepared.functions[usize::from(txn.procedure)];
    let params: Vec<&(dyn ToSql + Sync)> = match txn.procedure {
        AMALGAMATE => vec![&txn_id, &first, &second],
        BALANCE => vec![&txn_id, &first],
        SEND_PAYMENT => vec![&txn_id, &first, &second, &txn.amount],
        _ => vec![&txn_id, &first, &txn.amount],
    };
    match conn.client.query_one(statement, &params).await {
        Ok(row) => answered(row.get::<_, Option<i64>>(0)),
        Err(error) => failed(error, "calling a SmallBank function"),
    }
}

/// Runs `members` (ordo id, transaction) once as one server transaction, pipelined: `BEGIN`,
/// one prepared function call per member, `COMMIT`, all in one flight. Returns one attempt per
/// member: each its own answer when the group committed; otherwise the same for all (a
/// conflict rolls the whole group back; a broken connection leaves it all in doubt).
pub async fn group_pipelined(conn: &Conn, members: &[(i64, &Txn)]) -> Vec<Attempt> {
    let names: Vec<(String, String)> = members.iter().map(|(_, txn)| customers(txn)).collect();
    let calls = members.iter().zip(&names).map(|(&(txn_id, txn), (first, second))| {
        let statement = &conn.prepared.functions[usize::from(txn.procedure)];
        async move {
            let params: Vec<&(dyn ToSql + Sync)> = match txn.procedure {
                AMALGAMATE => vec![&txn_id, first, second],
                BALANCE => vec![&txn_id, first],
                SEND_PAYMENT => vec![&txn_id, first, second, &txn.amount],
                _ => vec![&txn_id, first, &txn.amount],
            };
            conn.client.query_one(statement, &params).await
        }
    });
    // Every request of the group is queued on the connection before the first answer is read,
    // in this order (tokio-postgres sends a request when its future is first polled).
    let (begin, answers, commit) =
        tokio::join!(conn.client.batch_execute("BEGIN"), join_all(calls), conn.client.batch_execute("COMMIT"));
    let whole = |attempt: fn() -> Attempt| members.iter().map(|_| attempt()).collect();
    // A lost connection anywhere: the COMMIT may have been processed even though an earlier
    // answer was lost, so the whole group is in doubt.
    let lost = |result: &Result<(), tokio_postgres::Error>| {
        result.as_ref().is_err_and(|e| classify(e) == Failure::ConnectionLost)
    };
    if lost(&begin)
        || lost(&commit)
        || answers.iter().any(|a| a.as_ref().is_err_and(|e| classify(e) == Failure::ConnectionLost))
    {
        return whole(|| Attempt::InDoubt);
    }
    if let Err(error) = begin {
        return single_failure(members.len(), failed(error, "BEGIN of a group"));
    }
    // The first failed call decides (the ones after it fail with 25P02, "current transaction is
    // aborted", and the COMMIT then rolls back).
    let mut nets = Vec::with_capacity(members.len());
    for answer in answers {
        match answer {
            Ok(row) => nets.push(row.get::<_, Option<i64>>(0)),
            Err(error) => {
                return single_failure(members.len(), failed(error, "calling a SmallBank function in a group"));
            }
        }
    }
    if let Err(error) = commit {
        return single_failure(members.len(), failed(error, "COMMIT of a group"));
    }
    nets.into_iter().map(answered).collect()
}

/// Runs `members` once as one call of `sb_group`, its own implicit transaction. Same answers
/// as [`group_pipelined`].
pub async fn group_function(conn: &Conn, members: &[(i64, &Txn)]) -> Vec<Attempt> {
    let ids: Vec<i64> = members.iter().map(|&(txn_id, _)| txn_id).collect();
    let procedures: Vec<i32> = members.iter().map(|(_, txn)| i32::from(txn.procedure)).collect();
    let (firsts, seconds): (Vec<String>, Vec<String>) = members.iter().map(|(_, txn)| customers(txn)).unzip();
    let amounts: Vec<i64> = members.iter().map(|(_, txn)| txn.amount).collect();
    let params: [&(dyn ToSql + Sync); 5] = [&ids, &procedures, &firsts, &seconds, &amounts];
    match conn.client.query_one(&conn.prepared.group, &params).await {
        Ok(row) => {
            let nets: Vec<Option<i64>> = row.get(0);
            if nets.len() != members.len() {
                let reason = format!("sb_group answered {} results for {} transactions", nets.len(), members.len());
                return single_failure(members.len(), Attempt::Fatal(PgError::invalid("sb_group", reason)));
            }
            nets.into_iter().map(answered).collect()
        }
        Err(error) => {
            let attempt = failed(error, "calling sb_group");
            single_failure(members.len(), attempt)
        }
    }
}

/// The same failure for every member of a group (a fatal error is reported once).
fn single_failure(len: usize, attempt: Attempt) -> Vec<Attempt> {
    match attempt {
        Attempt::Conflict(failure) => (0..len).map(|_| Attempt::Conflict(failure)).collect(),
        Attempt::InDoubt => (0..len).map(|_| Attempt::InDoubt).collect(),
        other => vec![other],
    }
}

/// Where a workload key lives.
enum Row {
    Account(String),
    Savings(i64),
    Checking(i64),
}

fn row_of(key: Key, customers: u64) -> Row {
    if key < customers {
        Row::Account(key.to_string())
    } else if key < 2 * customers {
        Row::Savings((key - customers) as i64)
    } else {
        Row::Checking((key - 2 * customers) as i64)
    }
}

/// Runs `txn` once as an explicit transaction of plain statements.
pub async fn statements(conn: &Conn, workload: &dyn Workload, txn_id: i64, txn: &Txn) -> Attempt {
    let customers = workload.key_count() / 3;
    let p = &conn.prepared;
    if let Err(error) = conn.client.batch_execute("BEGIN").await {
        return failed(error, "BEGIN");
    }
    let mut values: Vec<Value> = Vec::new();
    let mut read_keys: Vec<Key> = Vec::new();
    let (mut reads, mut writes) = (Vec::new(), Vec::new());
    let outcome = loop {
        reads.clear();
        match workload.step(txn, &values, &mut reads, &mut writes) {
            Step::Read => {
                let round = join_all(reads.iter().map(|&key| async move {
                    let row = match row_of(key, customers) {
                        Row::Account(name) => conn.client.query_one(&p.read_account, &[&name]).await,
                        Row::Savings(id) => conn.client.query_one(&p.read_savings, &[&id]).await,
                        Row::Checking(id) => conn.client.query_one(&p.read_checking, &[&id]).await,
                    };
                    row.map(|r| r.get::<_, i64>(0))
                }))
                .await;
                for result in round {
                    match result {
                        Ok(value) => values.push(value),
                        Err(error) => return rollback(conn, failed(error, "reading a SmallBank row")).await,
                    }
                }
                read_keys.extend_from_slice(&reads);
            }
            step => break step,
        }
    };
    if outcome == Step::UserAbort {
        return match conn.client.batch_execute("ROLLBACK").await {
            Ok(()) => Attempt::UserAbort,
            Err(error) => failed(error, "ROLLBACK"),
        };
    }
    // Every written balance was read first, so the money added is the sum of the changes.
    let net_cents: i64 =
        writes.iter().map(|&(key, new)| new - read_keys.iter().position(|&k| k == key).map_or(0, |i| values[i])).sum();
    let updates = join_all(writes.iter().map(|&(key, value)| async move {
        match row_of(key, customers) {
            Row::Savings(id) => conn.client.execute(&p.write_savings, &[&id, &value]).await,
            Row::Checking(id) => conn.client.execute(&p.write_checking, &[&id, &value]).await,
            Row::Account(_) => unreachable!("SmallBank never writes ACCOUNTS"),
        }
    }));
    let record = async {
        if writes.is_empty() { Ok(0) } else { conn.client.execute(&p.record_txn, &[&txn_id, &net_cents]).await }
    };
    // COMMIT goes out in the same flight as the writes; after a failed write it only rolls back.
    let (updates, record, commit) = tokio::join!(updates, record, conn.client.batch_execute("COMMIT"));
    let mut first_error = None;
    for result in updates.into_iter().map(|r| r.map(|_| ())).chain([record.map(|_| ())]) {
        if let Err(error) = result {
            first_error.get_or_insert(error);
        }
    }
    match (first_error, commit) {
        // A write failed: COMMIT rolled back (or the connection is gone: then nothing
        // committed either, but the answer is the same after the lookup).
        (Some(error), _) => failed(error, "writing SmallBank rows"),
        (None, Ok(())) => Attempt::Committed { net_cents },
        (None, Err(error)) => failed(error, "COMMIT"),
    }
}

async fn rollback(conn: &Conn, attempt: Attempt) -> Attempt {
    if matches!(attempt, Attempt::InDoubt) {
        return attempt;
    }
    match conn.client.batch_execute("ROLLBACK").await {
        Ok(()) => attempt,
        Err(error) => failed(error, "ROLLBACK"),
    }
}
