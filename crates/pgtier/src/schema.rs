//! SmallBank's tables in PostgreSQL, the six procedures as PL/pgSQL functions, the COPY loader,
//! and the bookkeeping that makes every transaction's outcome checkable:
//!
//! ```text
//!   sb_accounts (name text PK, custid bigint)     ACCOUNTS: name -> id (read-only)
//!   sb_savings  (custid bigint PK, bal bigint)    SAVINGS, cents
//!   sb_checking (custid bigint PK, bal bigint)    CHECKING, cents
//!   ordo_txn    (id bigint PK, net_cents bigint)  one row per committed writing transaction,
//!                                                 inserted by the transaction itself
//!   ordo_meta   (key text PK, value bigint)       schema_version, customers, loaded_total_cents
//!   ordo_run_seq                                  run ids (transaction ids are run << 32 | n)
//! ```
//!
//! Keys follow the workload's layout (`ordo_workload::smallbank`): customer `c` is key `c` in
//! ACCOUNTS (name = its decimal text), `n + c` in SAVINGS and `2n + c` in CHECKING, and the
//! loaded balances are the workload's `initial_value`, so the tier and the in-memory engines
//! start from the same bank.

use bytes::Bytes;
use futures_util::SinkExt;
use ordo_workload::Workload;
use tokio_postgres::Client;

use crate::error::{PgError, Result};

/// Bumped whenever the tables or the functions change (2: `sb_group`; 3: balance tables at
/// fillfactor 50).
pub const SCHEMA_VERSION: i64 = 3;

/// Older versions of ordo's schema that `load` recreates (it empties the tables anyway); any
/// other version is refused, so ordo never drops tables it does not know.
const SCHEMA_VERSIONS_UPGRADABLE: [i64; 2] = [1, 2];

/// Rows per COPY message.
const COPY_CHUNK_BYTES: usize = 1 << 20;

const DROP: &str = "
DROP TABLE IF EXISTS sb_accounts, sb_savings, sb_checking, ordo_txn, ordo_meta CASCADE;
DROP SEQUENCE IF EXISTS ordo_run_seq;
";

/// The balance tables leave half of each page free (fillfactor 50), so an update can put the
/// new row version on the same page: a HOT update, with no new index entry. At fillfactor 100
/// about 8% of SmallBank's updates were not HOT (`pg_stat_user_tables`), and each inserted an
/// entry into the primary key's index, whose leaf page every SERIALIZABLE reader of a nearby
/// customer holds a predicate lock on; at 50 all are HOT (measured in BENCHMARKS.md).
const TABLES: &str = "
CREATE TABLE ordo_meta (key text PRIMARY KEY, value bigint NOT NULL);
CREATE TABLE sb_accounts (name text PRIMARY KEY, custid bigint NOT NULL);
CREATE TABLE sb_savings (custid bigint PRIMARY KEY, bal bigint NOT NULL) WITH (fillfactor = 50);
CREATE TABLE sb_checking (custid bigint PRIMARY KEY, bal bigint NOT NULL) WITH (fillfactor = 50);
CREATE TABLE ordo_txn (id bigint PRIMARY KEY, net_cents bigint NOT NULL);
CREATE SEQUENCE ordo_run_seq;
";

/// The six procedures. Each returns the money it added to the bank (negative: removed), or
/// NULL when its own logic refuses (a user abort: nothing written). Every writing procedure
/// records its transaction id in `ordo_txn` in the same transaction, so a lost COMMIT reply
/// can be resolved by looking the id up. The logic mirrors `SmallBank::step` exactly.
const FUNCTIONS: &str = r"
CREATE OR REPLACE FUNCTION sb_id(who text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE id bigint;
BEGIN
  SELECT custid INTO STRICT id FROM sb_accounts WHERE name = who;
  RETURN id;
END $$;

CREATE OR REPLACE FUNCTION sb_amalgamate(txn bigint, who1 text, who2 text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE c1 bigint := sb_id(who1); c2 bigint := sb_id(who2); s1 bigint; k1 bigint; k2 bigint;
BEGIN
  SELECT bal INTO STRICT s1 FROM sb_savings WHERE custid = c1;
  SELECT bal INTO STRICT k1 FROM sb_checking WHERE custid = c1;
  SELECT bal INTO STRICT k2 FROM sb_checking WHERE custid = c2;
  UPDATE sb_savings SET bal = 0 WHERE custid = c1;
  UPDATE sb_checking SET bal = 0 WHERE custid = c1;
  UPDATE sb_checking SET bal = k2 + s1 + k1 WHERE custid = c2;
  INSERT INTO ordo_txn VALUES (txn, 0);
  RETURN 0;
END $$;

CREATE OR REPLACE FUNCTION sb_balance(txn bigint, who text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE c bigint := sb_id(who); s bigint; k bigint;
BEGIN
  SELECT bal INTO STRICT s FROM sb_savings WHERE custid = c;
  SELECT bal INTO STRICT k FROM sb_checking WHERE custid = c;
  RETURN 0;
END $$;

CREATE OR REPLACE FUNCTION sb_deposit_checking(txn bigint, who text, amount bigint) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE c bigint := sb_id(who); k bigint;
BEGIN
  SELECT bal INTO STRICT k FROM sb_checking WHERE custid = c;
  IF amount < 0 THEN RETURN NULL; END IF;
  UPDATE sb_checking SET bal = k + amount WHERE custid = c;
  INSERT INTO ordo_txn VALUES (txn, amount);
  RETURN amount;
END $$;

CREATE OR REPLACE FUNCTION sb_send_payment(txn bigint, who1 text, who2 text, amount bigint) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE c1 bigint := sb_id(who1); c2 bigint := sb_id(who2); k1 bigint; k2 bigint;
BEGIN
  SELECT bal INTO STRICT k1 FROM sb_checking WHERE custid = c1;
  SELECT bal INTO STRICT k2 FROM sb_checking WHERE custid = c2;
  IF k1 < amount THEN RETURN NULL; END IF;
  UPDATE sb_checking SET bal = k1 - amount WHERE custid = c1;
  UPDATE sb_checking SET bal = k2 + amount WHERE custid = c2;
  INSERT INTO ordo_txn VALUES (txn, 0);
  RETURN 0;
END $$;

CREATE OR REPLACE FUNCTION sb_transact_savings(txn bigint, who text, amount bigint) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE c bigint := sb_id(who); s bigint;
BEGIN
  SELECT bal INTO STRICT s FROM sb_savings WHERE custid = c;
  IF s + amount < 0 THEN RETURN NULL; END IF;
  UPDATE sb_savings SET bal = s + amount WHERE custid = c;
  INSERT INTO ordo_txn VALUES (txn, amount);
  RETURN amount;
END $$;

CREATE OR REPLACE FUNCTION sb_write_check(txn bigint, who text, amount bigint) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE c bigint := sb_id(who); s bigint; k bigint; penalty bigint := 0;
BEGIN
  SELECT bal INTO STRICT s FROM sb_savings WHERE custid = c;
  SELECT bal INTO STRICT k FROM sb_checking WHERE custid = c;
  IF s + k < amount THEN penalty := 100; END IF;
  UPDATE sb_checking SET bal = k - amount - penalty WHERE custid = c;
  INSERT INTO ordo_txn VALUES (txn, -(amount + penalty));
  RETURN -(amount + penalty);
END $$;

-- Several transactions in one call and one (implicit) server transaction, run one after
-- another; element i of the answer is what procedure i returned (NULL: it refused). An error
-- in any of them rolls them all back.
CREATE OR REPLACE FUNCTION sb_group(txns bigint[], procedures int[], who1 text[], who2 text[], amounts bigint[])
RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE nets bigint[] := '{}'; net bigint;
BEGIN
  FOR i IN 1 .. coalesce(cardinality(txns), 0) LOOP
    CASE procedures[i]
      WHEN 0 THEN net := sb_amalgamate(txns[i], who1[i], who2[i]);
      WHEN 1 THEN net := sb_balance(txns[i], who1[i]);
      WHEN 2 THEN net := sb_deposit_checking(txns[i], who1[i], amounts[i]);
      WHEN 3 THEN net := sb_send_payment(txns[i], who1[i], who2[i], amounts[i]);
      WHEN 4 THEN net := sb_transact_savings(txns[i], who1[i], amounts[i]);
      WHEN 5 THEN net := sb_write_check(txns[i], who1[i], amounts[i]);
    END CASE;
    nets := array_append(nets, net);
  END LOOP;
  RETURN nets;
END $$;
";

/// What `ordo_meta` says about the loaded bank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loaded {
    pub customers: i64,
    /// Sum of all savings and checking balances right after loading, in cents.
    pub loaded_total_cents: i64,
}

/// Reads the schema version and the loaded bank; clear errors when missing or stale.
pub async fn inspect(client: &Client) -> Result<Loaded> {
    let row = client
        .query_one("SELECT to_regclass('ordo_meta') IS NOT NULL", &[])
        .await
        .map_err(|e| PgError::database("looking for ordo's schema", e))?;
    if !row.get::<_, bool>(0) {
        return Err(PgError::SchemaMissing);
    }
    let rows = client
        .query("SELECT key, value FROM ordo_meta", &[])
        .await
        .map_err(|e| PgError::database("reading ordo_meta", e))?;
    let get = |name: &str| rows.iter().find(|r| r.get::<_, &str>(0) == name).map(|r| r.get::<_, i64>(1));
    let version = get("schema_version").ok_or(PgError::SchemaMissing)?;
    if version != SCHEMA_VERSION {
        return Err(PgError::SchemaVersion { found: version, expected: SCHEMA_VERSION });
    }
    Ok(Loaded {
        customers: get("customers").ok_or(PgError::SchemaMissing)?,
        loaded_total_cents: get("loaded_total_cents").ok_or(PgError::SchemaMissing)?,
    })
}

/// Drops and recreates ordo's tables and functions (not the data of anything else).
pub async fn create(client: &Client) -> Result<()> {
    client.batch_execute(DROP).await.map_err(|e| PgError::database("dropping ordo's old tables", e))?;
    client.batch_execute(TABLES).await.map_err(|e| PgError::database("creating ordo's tables", e))?;
    client.batch_execute(FUNCTIONS).await.map_err(|e| PgError::database("creating the SmallBank functions", e))?;
    client
        .execute("INSERT INTO ordo_meta VALUES ('schema_version', $1)", &[&SCHEMA_VERSION])
        .await
        .map_err(|e| PgError::database("writing the schema version", e))?;
    Ok(())
}

/// Empties the tables and loads `workload`'s initial bank with COPY; returns what was loaded.
/// Creates the schema when it is missing or from an older ordo; refuses any other version.
pub async fn load(client: &Client, workload: &dyn Workload) -> Result<Loaded> {
    if workload.name() != "smallbank" {
        return Err(PgError::invalid(
            "workload",
            format!("the PostgreSQL tier runs smallbank, not {}", workload.name()),
        ));
    }
    match inspect(client).await {
        Ok(_) => {}
        Err(PgError::SchemaMissing) => create(client).await?,
        Err(PgError::SchemaVersion { found, .. }) if SCHEMA_VERSIONS_UPGRADABLE.contains(&found) => {
            create(client).await?;
        }
        Err(e) => return Err(e),
    }
    let customers = workload.key_count() / 3;
    client
        .batch_execute("TRUNCATE sb_accounts, sb_savings, sb_checking, ordo_txn")
        .await
        .map_err(|e| PgError::database("emptying the SmallBank tables", e))?;
    copy_rows(client, "COPY sb_accounts (name, custid) FROM STDIN", customers, |c, out| {
        out.push_str(&format!("{c}\t{}\n", workload.initial_value(c)));
    })
    .await?;
    copy_rows(client, "COPY sb_savings (custid, bal) FROM STDIN", customers, |c, out| {
        out.push_str(&format!("{c}\t{}\n", workload.initial_value(customers + c)));
    })
    .await?;
    copy_rows(client, "COPY sb_checking (custid, bal) FROM STDIN", customers, |c, out| {
        out.push_str(&format!("{c}\t{}\n", workload.initial_value(2 * customers + c)));
    })
    .await?;
    let loaded_total_cents: i64 = (customers..3 * customers).map(|k| workload.initial_value(k)).sum();
    let customers = customers as i64;
    client
        .execute(
            "INSERT INTO ordo_meta VALUES ('customers', $1), ('loaded_total_cents', $2) \
             ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            &[&customers, &loaded_total_cents],
        )
        .await
        .map_err(|e| PgError::database("recording the loaded bank", e))?;
    client
        .batch_execute("ANALYZE sb_accounts, sb_savings, sb_checking, ordo_txn")
        .await
        .map_err(|e| PgError::database("analyzing the SmallBank tables", e))?;
    Ok(Loaded { customers, loaded_total_cents })
}

async fn copy_rows(client: &Client, statement: &str, rows: u64, mut row: impl FnMut(u64, &mut String)) -> Result<()> {
    let context = || format!("loading with `{statement}`");
    let sink = client.copy_in::<_, Bytes>(statement).await.map_err(|e| PgError::database(context(), e))?;
    futures_util::pin_mut!(sink);
    let mut chunk = String::with_capacity(COPY_CHUNK_BYTES + 64);
    for r in 0..rows {
        row(r, &mut chunk);
        if chunk.len() >= COPY_CHUNK_BYTES {
            sink.send(Bytes::from(std::mem::take(&mut chunk))).await.map_err(|e| PgError::database(context(), e))?;
        }
    }
    if !chunk.is_empty() {
        sink.send(Bytes::from(chunk)).await.map_err(|e| PgError::database(context(), e))?;
    }
    sink.finish().await.map_err(|e| PgError::database(context(), e))?;
    Ok(())
}

/// What the database holds now: the sum of all balances and of `ordo_txn.net_cents`, and
/// the ids recorded there for run `run_id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BankAudit {
    pub total_cents: i64,
    pub recorded_net_cents: i64,
    pub run_txn_ids: Vec<i64>,
}

/// Sums the bank (used by `ordo pg status`, the benchmark's post-run check and the tests).
pub async fn audit(client: &Client, run_id: Option<i64>) -> Result<BankAudit> {
    let row = client
        .query_one(
            "SELECT (SELECT coalesce(sum(bal), 0)::bigint FROM sb_savings) + \
                    (SELECT coalesce(sum(bal), 0)::bigint FROM sb_checking), \
                    (SELECT coalesce(sum(net_cents), 0)::bigint FROM ordo_txn)",
            &[],
        )
        .await
        .map_err(|e| PgError::database("summing the balances", e))?;
    let mut run_txn_ids = Vec::new();
    if let Some(run_id) = run_id {
        let (low, high) = (run_id << 32, (run_id + 1) << 32);
        for row in client
            .query("SELECT id FROM ordo_txn WHERE id >= $1 AND id < $2 ORDER BY id", &[&low, &high])
            .await
            .map_err(|e| PgError::database("reading ordo_txn", e))?
        {
            run_txn_ids.push(row.get(0));
        }
    }
    Ok(BankAudit { total_cents: row.get(0), recorded_net_cents: row.get(1), run_txn_ids })
}
