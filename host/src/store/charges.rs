//! Charges. A row is written as `creating` before the PSP is called, so a charge the PSP made
//! can always be found by its reference; it turns `pending` once the PSP answered, and is
//! removed if the PSP refused (then no charge exists anywhere).

use sqlx::Row;

use super::batching::Values;
use super::events::{AnyQuery, EventRecord};
use super::idempotency::HeldKey;
use super::{Columns, OnDisk, Store, StoreError};
use crate::domain::{Environment, Reference};

/// Where it always was; defined with the other domain types.
pub use crate::domain::ChargeState;

#[derive(Debug, Clone, PartialEq)]
pub struct ChargeRecord {
    pub id: String,
    pub merchant_id: String,
    pub environment: Environment,
    pub credential_id: String,
    pub provider: String,
    pub reference: Reference,
    pub psp_id: Option<String>,
    pub status: ChargeState,
    pub amount: i64,
    pub description: Option<String>,
    pub payer_email: Option<String>,
    pub payer_name: Option<String>,
    pub payer_document: Option<String>,
    pub copy_paste: Option<String>,
    pub qr_png_base64: Option<String>,
    pub expires_at: Option<i64>,
    /// A JSON object, as the merchant sent it.
    pub metadata: serde_json::Value,
    pub paid_at: Option<i64>,
    pub end_to_end_id: Option<String>,
    pub amount_paid: Option<i64>,
    /// How a routed charge was placed: `{mode, selected_provider, attempted_providers}`.
    pub routing: Option<serde_json::Value>,
    /// The dashboard user who made the charge (a cashier's sale); `None` for the API's.
    pub operator_id: Option<String>,
    /// The payment link the charge was made through, and the link's name then.
    pub payment_link_id: Option<String>,
    pub payment_link_name: Option<String>,
    /// The payment arrived after the gateway had marked the charge expired or canceled.
    pub paid_late: bool,
    pub created_at: i64,
    pub updated_at: i64,
}

impl ChargeRecord {
    /// Paid, but less than the charge's amount: the merchant must not take it for a full
    /// payment (event `charge.underpaid`, field `underpaid`).
    pub fn underpaid(&self) -> bool {
        self.status == ChargeState::Paid && self.amount_paid.is_some_and(|paid| paid < self.amount)
    }
}

/// What the PSP reported, to be applied to a stored charge.
#[derive(Debug, Clone, Default)]
pub struct PspUpdate {
    pub psp_id: Option<String>,
    pub copy_paste: Option<String>,
    pub qr_png_base64: Option<String>,
    pub expires_at: Option<i64>,
    pub paid_at: Option<i64>,
    pub end_to_end_id: Option<String>,
    pub amount_paid: Option<i64>,
    /// The payment came after the gateway closed the charge (expired or canceled).
    pub paid_late: bool,
    /// The reconciler's next check: `None` keeps it, `Some(None)` clears it.
    pub next_check_at: Option<Option<i64>>,
}

/// Charges leased by one claim, and the lease's mark (to renew it).
#[derive(Debug)]
pub struct Claimed {
    pub mark: String,
    pub charges: Vec<ChargeRecord>,
}

/// See [`Store::charge_summary`].
#[derive(Debug, Clone, Default)]
pub struct ChargeSummary {
    pub created: i64,
    pub paid: i64,
    pub paid_amount: i64,
    pub ever_created: bool,
    pub ever_paid: bool,
}

/// Filters of a charge listing (`GET /v1/charges`, the dashboard's), already validated.
#[derive(Debug, Clone, Default)]
pub struct ChargeFilter {
    pub status: Option<ChargeState>,
    pub provider: Option<String>,
    /// Only this operator's charges (a cashier's own sales).
    pub operator_id: Option<String>,
    pub created_gte: Option<i64>,
    pub created_lt: Option<i64>,
    /// Charges strictly older than this id (ids sort by creation).
    pub starting_after: Option<String>,
    pub limit: u32,
}

const COLUMNS: &str = "id, merchant_id, environment, credential_id, provider, reference, psp_id, \
    status, amount, description, payer_email, payer_name, payer_document, copy_paste, \
    qr_png_base64, expires_at, metadata, paid_at, end_to_end_id, amount_paid, created_at, updated_at, \
    routing, operator_id, payment_link_id, payment_link_name, paid_late";

impl Store {
    /// Writes a `creating` charge. `false` when a charge with this reference exists already
    /// (a retry of a request that reserved it): the caller carries on with that one. `false`
    /// too when the charge's payment link takes no more charges (inactive, outside its window,
    /// used up): checked in the insert itself, so no charge is ever written for a closed link.
    /// Refused when the charge's month (São Paulo) is full for the merchant's plan: the
    /// monthly counter is advanced only while under the limit.
    ///
    /// On SQLite the counter is advanced in the insert's own transaction. On PostgreSQL it is
    /// advanced first, in a deferred transaction of its own: the counter is one row per
    /// merchant and month, and an update holds its row's lock until the commit, so in the
    /// insert's durable transaction every charge of a merchant waited for the one before it to
    /// reach the disk: one charge per WAL flush at most, whatever the server could do.
    /// A deferred commit releases the lock without waiting for the flush, and is on disk once
    /// the insert's commit is (its WAL record comes first). A charge counted and never inserted
    /// because the gateway stopped between the two costs the merchant one charge of the month;
    /// a reference already taken, or an insert that failed, gives its count back.
    pub async fn insert_creating_charge(
        &self,
        c: &ChargeRecord,
    ) -> Result<crate::plans::Admission<bool>, StoreError> {
        let (inserted, on_disk) = self.insert_creating_charge_then_sync(c, None).await?;
        on_disk.await.map_err(StoreError::Unsynced)?;
        Ok(inserted)
    }

    /// [`Store::insert_creating_charge`] answered at its commit, with the [`OnDisk`] to wait
    /// for before the PSP may hear of the charge ([`Store::write_then_sync`]).
    ///
    /// With `key` (the idempotency key the request claimed), on SQLite the row is written only
    /// if the key is still held for this reference, or [`StoreError::KeyNotHeld`]: its claim
    /// may have been handed to the writer just before and not awaited
    /// ([`Store::claim_idempotency_key_now`]). On PostgreSQL the claim was awaited first.
    pub async fn insert_creating_charge_then_sync(
        &self,
        c: &ChargeRecord,
        key: Option<&std::sync::Arc<HeldKey>>,
    ) -> Result<(crate::plans::Admission<bool>, OnDisk), StoreError> {
        if self.backend == super::Backend::Postgres {
            return Ok((self.insert_counted_apart(c).await?, OnDisk::already()));
        }
        let (store, c, key) = (self.clone(), c.clone(), key.cloned());
        let (inserted, on_disk) = self
            .write_then_sync(move |conn| {
                Box::pin(async move {
                    // Not an error inside the unit: that would roll its group back and run it
                    // again, a savepoint per unit.
                    if let Some(key) = &key
                        && !key.holds_on(conn, c.reference.as_str()).await?
                    {
                        return Ok(None);
                    }
                    store.insert_creating_on(conn, &c).await.map(Some)
                })
            })
            .await?;
        Ok((inserted.ok_or(StoreError::KeyNotHeld)?, on_disk))
    }

    /// How PostgreSQL's inserts of `creating` rows went: statements, and the rows they
    /// inserted together.
    pub fn creating_insert_stats(&self) -> super::BatchStats {
        self.creating.stats()
    }

    /// How PostgreSQL's moves of charges their callers knew went ([`KnownMoves`]):
    /// statements, and the moves they wrote together.
    pub fn known_move_stats(&self) -> super::BatchStats {
        self.moves.stats()
    }

    /// [`Store::insert_creating_charge`] on PostgreSQL: the count, then the insert.
    async fn insert_counted_apart(
        &self,
        c: &ChargeRecord,
    ) -> Result<crate::plans::Admission<bool>, StoreError> {
        // The count and the insert are a statement each (the insert's lost race adds an
        // uncount that stands alone): no transaction around either (`write_autocommit`), two
        // round trips fewer apiece. The count is usually shared with other charges
        // (`plan_counter`).
        let counted = self
            .count_charge_together(&c.merchant_id, c.environment, c.created_at)
            .await?;
        let (store, c) = (self.clone(), c.clone());
        if counted.is_err() {
            // The month is full: one transaction decides, as on SQLite (a reference already
            // taken is carried on, whatever the count).
            return self
                .write(move |conn| {
                    Box::pin(async move { store.insert_creating_on(conn, &c).await })
                })
                .await;
        }
        // With the `creating` rows that wait beside it, in one statement ([`CreatingRows`]);
        // a link's charge alone: its insert checks the link in the same statement.
        if c.payment_link_id.is_none()
            && let Some(inserted) = self.creating.write((), c.clone()).await
        {
            if !inserted {
                let count = self.clone();
                self.write_autocommit(super::Durability::Deferred, move |conn| {
                    Box::pin(async move {
                        count
                            .uncount_charge(conn, &c.merchant_id, c.environment, c.created_at)
                            .await
                    })
                })
                .await?;
            }
            return Ok(Ok(inserted));
        }
        let (count, row) = (self.clone(), c.clone());
        let inserted = self
            .write_autocommit(super::Durability::Durable, move |conn| {
                Box::pin(async move {
                    let inserted = insert_creating_row(conn, &row).await?;
                    if !inserted {
                        store
                            .uncount_charge(conn, &row.merchant_id, row.environment, row.created_at)
                            .await?;
                    }
                    Ok(Ok(inserted))
                })
            })
            .await;
        if inserted.is_err() {
            // Nothing was inserted: the count goes back (a failure here leaves the merchant
            // one charge short for the month, and is logged).
            let uncounted = self
                .write_autocommit(super::Durability::Deferred, move |conn| {
                    Box::pin(async move {
                        count
                            .uncount_charge(conn, &c.merchant_id, c.environment, c.created_at)
                            .await
                    })
                })
                .await;
            if let Err(e) = uncounted {
                tracing::warn!(error = %e, "a charge's plan count could not be given back");
            }
        }
        inserted
    }

    /// [`Store::insert_creating_charge`] inside the caller's transaction. A charge the plan
    /// refuses is deleted again, so it leaves nothing (cheaper than a savepoint on the path
    /// every charge takes).
    async fn insert_creating_on(
        &self,
        tx: &mut sqlx::AnyConnection,
        c: &ChargeRecord,
    ) -> Result<crate::plans::Admission<bool>, StoreError> {
        if !insert_creating_row(tx, c).await? {
            // A resumed request (its charge was counted then) or a closed link.
            return Ok(Ok(false));
        }
        let month = crate::plans::month_of(c.created_at);
        if let Err(reached) =
            super::plans::count_charge(&mut *tx, &c.merchant_id, c.environment, &month).await?
        {
            sqlx::query("DELETE FROM charges WHERE id = $1")
                .bind(&c.id)
                .execute(&mut *tx)
                .await?;
            return Ok(Err(reached));
        }
        Ok(Ok(true))
    }

    pub async fn charge_by_reference(
        &self,
        reference: &str,
    ) -> Result<Option<ChargeRecord>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM charges WHERE reference = $1"
        ))
        .bind(reference)
        .fetch_optional(self.pool())
        .await?;
        row.as_ref().map(record_of).transpose()
    }

    /// A charge the merchant may see.
    pub async fn charge(
        &self,
        merchant_id: &str,
        environment: Environment,
        id: &str,
    ) -> Result<Option<ChargeRecord>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM charges \
             WHERE id = $1 AND merchant_id = $2 AND environment = $3 AND status <> 'creating'"
        ))
        .bind(id)
        .bind(merchant_id)
        .bind(environment.as_str())
        .fetch_optional(self.pool())
        .await?;
        row.as_ref().map(record_of).transpose()
    }

    /// Counts for the dashboard's overview: charges created since `since` and, of those, the
    /// paid ones with their total; and whether the merchant ever had a charge, and a paid one.
    pub async fn charge_summary(
        &self,
        merchant_id: &str,
        environment: Environment,
        since: i64,
    ) -> Result<ChargeSummary, StoreError> {
        let row = sqlx::query(
            "SELECT \
               COUNT(CASE WHEN created_at >= $3 THEN 1 END), \
               COUNT(CASE WHEN created_at >= $3 AND status = 'paid' THEN 1 END), \
               CAST(COALESCE(SUM(CASE WHEN created_at >= $3 AND status = 'paid' \
                                 THEN COALESCE(amount_paid, amount) END), 0) AS BIGINT), \
               COUNT(*), \
               COUNT(CASE WHEN status = 'paid' THEN 1 END) \
             FROM charges WHERE merchant_id = $1 AND environment = $2 AND status <> 'creating'",
        )
        .bind(merchant_id)
        .bind(environment.as_str())
        .bind(since)
        .fetch_one(self.pool())
        .await?;
        Ok(ChargeSummary {
            created: row.get(0),
            paid: row.get(1),
            paid_amount: row.get(2),
            ever_created: row.get::<i64, _>(3) > 0,
            ever_paid: row.get::<i64, _>(4) > 0,
        })
    }

    /// Newest first, `limit + 1` rows so the caller can tell whether more follow.
    pub async fn charges(
        &self,
        merchant_id: &str,
        environment: Environment,
        filter: &ChargeFilter,
    ) -> Result<Vec<ChargeRecord>, StoreError> {
        let mut sql = format!(
            "SELECT {COLUMNS} FROM charges \
             WHERE merchant_id = $1 AND environment = $2 AND status <> 'creating'"
        );
        let mut n = 2;
        let mut next = |clause: &str, sql: &mut String| {
            n += 1;
            sql.push_str(&clause.replace('?', &format!("${n}")));
        };
        if filter.status.is_some() {
            next(" AND status = ?", &mut sql);
        }
        if filter.provider.is_some() {
            next(" AND provider = ?", &mut sql);
        }
        if filter.operator_id.is_some() {
            next(" AND operator_id = ?", &mut sql);
        }
        if filter.created_gte.is_some() {
            next(" AND created_at >= ?", &mut sql);
        }
        if filter.created_lt.is_some() {
            next(" AND created_at < ?", &mut sql);
        }
        if filter.starting_after.is_some() {
            next(" AND id < ?", &mut sql);
        }
        next(" ORDER BY id DESC LIMIT ?", &mut sql);
        let mut query = sqlx::query(&sql)
            .bind(merchant_id)
            .bind(environment.as_str());
        if let Some(status) = filter.status {
            query = query.bind(status.as_str());
        }
        if let Some(provider) = &filter.provider {
            query = query.bind(provider.as_str());
        }
        if let Some(operator) = &filter.operator_id {
            query = query.bind(operator.as_str());
        }
        if let Some(t) = filter.created_gte {
            query = query.bind(t);
        }
        if let Some(t) = filter.created_lt {
            query = query.bind(t);
        }
        if let Some(id) = &filter.starting_after {
            query = query.bind(id.as_str());
        }
        let rows = query
            .bind(i64::from(filter.limit) + 1)
            .fetch_all(self.pool())
            .await?;
        rows.iter().map(record_of).collect()
    }

    /// Moves a charge from `from` to `to` with what the PSP reported, and in the same
    /// transaction writes the event that reports the move (with its outbox deliveries) and the
    /// reconciler's next check. `None` when the charge is no longer in `from`: another request
    /// or notification moved it first, and nothing is written.
    pub async fn transition_charge(
        &self,
        id: &str,
        from: &[ChargeState],
        to: ChargeState,
        update: &PspUpdate,
        emit: Option<&(dyn Fn(&ChargeRecord) -> EventRecord + Sync)>,
    ) -> Result<Option<ChargeRecord>, StoreError> {
        let mut tx = self.pool().begin().await?;
        let asked = Move {
            from,
            to,
            update,
            attempt: None,
            emit,
            answer: None,
        };
        let (moved, _) = transition_on(&mut tx, self.backend, id, &asked).await?;
        if moved.is_some() {
            tx.commit().await?;
        } else {
            tx.rollback().await?;
        }
        Ok(moved)
    }

    /// [`Store::transition_charge`] for the charge path, as one unit of the group commit
    /// ([`Store::write_with`]), with the PSP attempt that led to the move recorded with it.
    /// With `known`, the charge as the caller knows it (the one it wrote or read), PostgreSQL
    /// moves it in one statement, with the other such moves that wait ([`KnownMoves`]), if
    /// the stored row is still that.
    #[allow(clippy::too_many_arguments)]
    pub async fn transition_charge_with(
        &self,
        id: String,
        from: Vec<ChargeState>,
        to: ChargeState,
        update: PspUpdate,
        attempt: Option<super::routing::AttemptRecord>,
        emit: Option<super::events::Emit>,
        answer: Option<AnswerWith>,
        durability: super::Durability,
        known: Option<ChargeRecord>,
    ) -> Result<Option<ChargeRecord>, StoreError> {
        let key = answer.as_ref().map(|a| a.key.clone());
        let backend = self.backend;
        let mut asked = MoveOf {
            from,
            to,
            update,
            attempt,
            emit,
            answer,
        };
        let mut together = None;
        if let (super::Backend::Postgres, Some(known)) = (backend, known.filter(|k| k.id == id)) {
            let (shape, write, predicted) = asked.known(known);
            let body = write.answer.as_ref().map(|(_, body)| body.clone());
            match self.moves.write(shape, write).await {
                Some(MoveOutcome::Moved(stored)) => {
                    if *stored != predicted {
                        // Cannot happen while `moved_by` is the `UPDATE`'s `SET`: the row was
                        // `known`.
                        tracing::error!(charge = %stored.id, "a charge moved in one statement differs from its prediction; its event and answer were rendered from the prediction");
                    }
                    together = Some((Some(*stored), body));
                }
                // Not moved, its attempt written: the transaction below decides from the row
                // as stored.
                Some(MoveOutcome::NotMoved) => asked.attempt = None,
                Some(MoveOutcome::Unread(e)) => return Err(e),
                // Nothing written: the transaction below writes it all.
                Some(MoveOutcome::Alone) | None => {}
            }
        }
        let (moved, body) = match together {
            Some(moved) => moved,
            None => {
                self.write_with_own_attempt_number(durability, move |conn| {
                    Box::pin(
                        async move { transition_on(conn, backend, &id, &asked.as_move()).await },
                    )
                })
                .await?
            }
        };
        // Known only now that the write committed (a unit may run twice, should its group
        // roll back).
        if let (Some(key), Some(body)) = (key, body) {
            key.stored(body);
        }
        Ok(moved)
    }

    /// A charge by the PSP's id for it, among one credential's charges.
    pub async fn charge_by_psp_id(
        &self,
        credential_id: &str,
        psp_id: &str,
    ) -> Result<Option<ChargeRecord>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM charges WHERE credential_id = $1 AND psp_id = $2"
        ))
        .bind(credential_id)
        .bind(psp_id)
        .fetch_optional(self.pool())
        .await?;
        row.as_ref().map(record_of).transpose()
    }

    /// Leases up to `limit` charges whose check is due (pending or processing) to `owner` (one
    /// reconciler), for `lease_ms`; the owner renews the lease while it works
    /// ([`Store::renew_check_lease`]), so a gateway that dies leaves them to others within one
    /// short lease.
    pub async fn claim_due_checks(
        &self,
        owner: &str,
        lease_ms: i64,
        limit: i64,
    ) -> Result<Claimed, StoreError> {
        self.claim_checks(
            owner,
            "status IN ('pending', 'processing') AND next_check_at <= $5",
            "status IN ('pending', 'processing')",
            super::now_ms(),
            lease_ms,
            limit,
        )
        .await
    }

    /// Leases up to `limit` charges left `creating` for longer than `age_ms` to `owner`:
    /// requests whose outcome at the PSP stayed unknown and that nobody resumed.
    pub async fn claim_stale_creating(
        &self,
        owner: &str,
        age_ms: i64,
        lease_ms: i64,
        limit: i64,
    ) -> Result<Claimed, StoreError> {
        self.claim_checks(
            owner,
            "status = 'creating' AND created_at < $5",
            "status = 'creating'",
            super::now_ms() - age_ms,
            lease_ms,
            limit,
        )
        .await
    }

    /// Leases the rows matching `due` (with `$5` = `due_before`) whose lease lapsed, and
    /// returns the ones `owner` holds that match `state`. Only rows newly leased by this call
    /// are returned: those the owner is still working on keep their lease and are not handed
    /// out twice. `due` is one of a few fixed texts, and the time a bound value: a statement
    /// text made anew each poll would be parsed, planned and cached anew on every connection.
    async fn claim_checks(
        &self,
        owner: &str,
        due: &'static str,
        state: &str,
        due_before: i64,
        lease_ms: i64,
        limit: i64,
    ) -> Result<Claimed, StoreError> {
        let now = super::now_ms();
        // A fresh mark per claim tells this claim's rows from the owner's earlier ones.
        let mark = format!("{owner}:{}", uuid::Uuid::new_v4().simple());
        let lease = format!(
            "UPDATE charges SET check_lease_until = $1, check_lease_owner = $2 \
             WHERE id IN (SELECT id FROM charges WHERE {due} AND check_lease_until < $3 \
                          ORDER BY next_check_at, created_at LIMIT $4) \
               AND check_lease_until < $3"
        );
        self.take_leases(lease, &mark, now, lease_ms, limit, Some(due_before))
            .await?;
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM charges WHERE check_lease_owner = $1 AND {state}"
        ))
        .bind(&mark)
        .fetch_all(self.pool())
        .await?;
        Ok(Claimed {
            charges: rows.iter().map(record_of).collect::<Result<_, _>>()?,
            mark,
        })
    }

    /// Extends the lease `mark` holds on a charge; `false` when it lost it (it lapsed and
    /// another reconciler took the charge): the holder should stop.
    pub async fn renew_check_lease(
        &self,
        id: &str,
        mark: &str,
        lease_ms: i64,
    ) -> Result<bool, StoreError> {
        let (id, mark) = (id.to_owned(), mark.to_owned());
        let until = super::now_ms() + lease_ms;
        self.write_with(super::Durability::Deferred, move |conn| {
            Box::pin(async move {
                let done = sqlx::query(
                    "UPDATE charges SET check_lease_until = $1 \
                     WHERE id = $2 AND check_lease_owner = $3 AND check_lease_until > 0",
                )
                .bind(until)
                .bind(&id)
                .bind(&mark)
                .execute(&mut *conn)
                .await?;
                Ok(done.rows_affected() == 1)
            })
        })
        .await
    }

    /// Sets when the reconciler asks about a charge next, and releases its lease.
    pub async fn schedule_check(
        &self,
        id: &str,
        next_check_at: Option<i64>,
    ) -> Result<(), StoreError> {
        let id = id.to_owned();
        // Deferred: a schedule lost in a crash leaves the charge due now, checked once more.
        self.write_with(super::Durability::Deferred, move |conn| {
            Box::pin(async move {
                sqlx::query(
                    "UPDATE charges SET next_check_at = $1, checks = checks + 1, \
                     check_lease_until = 0 WHERE id = $2",
                )
                .bind(next_check_at)
                .bind(&id)
                .execute(&mut *conn)
                .await?;
                Ok(())
            })
        })
        .await
    }

    /// How many checks the reconciler made of a charge.
    pub async fn check_count(&self, id: &str) -> Result<i64, StoreError> {
        Ok(sqlx::query("SELECT checks FROM charges WHERE id = $1")
            .bind(id)
            .fetch_one(self.pool())
            .await?
            .get(0))
    }

    /// Forgets a charge the PSP refused to create: nothing exists at the PSP, and it no longer
    /// counts against its month.
    pub async fn delete_creating_charge(&self, id: &str) -> Result<(), StoreError> {
        let mut tx = self.pool().begin().await?;
        let deleted = sqlx::query(
            "DELETE FROM charges WHERE id = $1 AND status = 'creating' \
             RETURNING merchant_id, environment, created_at",
        )
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(row) = deleted {
            let environment = super::environment_of(row.get(1))?;
            self.uncount_charge(&mut tx, &row.get::<String, _>(0), environment, row.get(2))
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }
}

fn record_of(r: &sqlx::any::AnyRow) -> Result<ChargeRecord, StoreError> {
    Ok(ChargeRecord {
        id: r.col("id")?,
        merchant_id: r.col("merchant_id")?,
        environment: r.parsed("environment")?,
        credential_id: r.col("credential_id")?,
        provider: r.col("provider")?,
        reference: r.parsed("reference")?,
        psp_id: r.col("psp_id")?,
        status: r.parsed("status")?,
        amount: r.col("amount")?,
        description: r.col("description")?,
        payer_email: r.col("payer_email")?,
        payer_name: r.col("payer_name")?,
        payer_document: r.col("payer_document")?,
        copy_paste: r.col("copy_paste")?,
        qr_png_base64: r.col("qr_png_base64")?,
        expires_at: r.col("expires_at")?,
        metadata: r.json("metadata")?,
        paid_at: r.col("paid_at")?,
        end_to_end_id: r.col("end_to_end_id")?,
        amount_paid: r.col("amount_paid")?,
        created_at: r.col("created_at")?,
        updated_at: r.col("updated_at")?,
        routing: r.json_opt("routing")?,
        operator_id: r.col("operator_id")?,
        payment_link_id: r.col("payment_link_id")?,
        payment_link_name: r.col("payment_link_name")?,
        paid_late: r.flag("paid_late")?,
    })
}

/// Inserts `c` unless its reference is taken or its payment link takes no more charges: `false`
/// then, and nothing written.
async fn insert_creating_row(
    tx: &mut sqlx::AnyConnection,
    c: &ChargeRecord,
) -> Result<bool, StoreError> {
    let sql = format!(
        "INSERT INTO charges ({COLUMNS}) SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, \
         $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27 \
         WHERE $25 IS NULL OR {} \
         ON CONFLICT (reference) DO NOTHING",
        super::payment_links::link_takes_charges("$25", "$21")
    );
    let done = bind_record(sqlx::query(&sql), c).execute(&mut *tx).await?;
    Ok(done.rows_affected() == 1)
}

/// Binds every column of `c`, in [`COLUMNS`]' order, after what `query` bound.
fn bind_record<'q>(query: AnyQuery<'q>, c: &'q ChargeRecord) -> AnyQuery<'q> {
    query
        .bind(&c.id)
        .bind(&c.merchant_id)
        .bind(c.environment.as_str())
        .bind(&c.credential_id)
        .bind(&c.provider)
        .bind(c.reference.as_str())
        .bind(&c.psp_id)
        .bind(c.status.as_str())
        .bind(c.amount)
        .bind(&c.description)
        .bind(&c.payer_email)
        .bind(&c.payer_name)
        .bind(&c.payer_document)
        .bind(&c.copy_paste)
        .bind(&c.qr_png_base64)
        .bind(c.expires_at)
        .bind(c.metadata.to_string())
        .bind(c.paid_at)
        .bind(&c.end_to_end_id)
        .bind(c.amount_paid)
        .bind(c.created_at)
        .bind(c.updated_at)
        .bind(c.routing.as_ref().map(|r| r.to_string()))
        .bind(&c.operator_id)
        .bind(&c.payment_link_id)
        .bind(&c.payment_link_name)
        .bind(i64::from(c.paid_late))
}

/// An idempotency key's answer written by a move ([`Store::transition_charge_with`]): the key,
/// and the answer's body rendered from the moved charge (`None`: the move stores no answer).
#[derive(Clone)]
pub struct AnswerWith {
    pub key: std::sync::Arc<super::idempotency::HeldKey>,
    pub render: Render,
}

/// Renders a moved charge as an answer's body.
pub type Render = std::sync::Arc<dyn Fn(&ChargeRecord) -> Option<String> + Send + Sync>;

/// A move as a caller asks it: a charge in a state of `from` to `to` with what the PSP
/// reported, recording the PSP `attempt` that led to it (whether or not the charge moves),
/// reported by `emit`'s event and stored as `answer`'s key's answer.
#[derive(Clone, Copy)]
struct Move<'a> {
    from: &'a [ChargeState],
    to: ChargeState,
    update: &'a PspUpdate,
    attempt: Option<&'a super::routing::AttemptRecord>,
    emit: Option<&'a (dyn Fn(&ChargeRecord) -> EventRecord + Sync)>,
    answer: Option<&'a AnswerWith>,
}

/// A [`Move`] owning its parts, for a write unit to hold.
#[derive(Clone)]
struct MoveOf {
    from: Vec<ChargeState>,
    to: ChargeState,
    update: PspUpdate,
    attempt: Option<super::routing::AttemptRecord>,
    emit: Option<super::events::Emit>,
    answer: Option<AnswerWith>,
}

impl MoveOf {
    /// This move of the charge its caller knows as `known`, as [`KnownMoves`] writes it: the
    /// event and the answer rendered from the charge as the move will leave it.
    /// Returns the charge as the move will leave it, too.
    fn known(&self, known: ChargeRecord) -> (MoveShape, KnownMove, ChargeRecord) {
        let now = super::now_ms();
        let moved = moved_by(&known, self.to, &self.update, now);
        let event = self.emit.as_ref().map(|emit| emit(&moved));
        let answer = self
            .answer
            .as_ref()
            .and_then(|answer| (answer.render)(&moved).map(|body| (answer.key.clone(), body)));
        let shape = MoveShape {
            from: self.from.clone(),
            attempt: self.attempt.is_some(),
            event: event.is_some(),
            answer: answer.is_some(),
        };
        let write = KnownMove {
            known,
            to: self.to,
            update: self.update.clone(),
            now,
            attempt: self.attempt.clone(),
            event,
            answer,
        };
        (shape, write, moved)
    }

    fn as_move(&self) -> Move<'_> {
        Move {
            from: &self.from,
            to: self.to,
            update: &self.update,
            attempt: self.attempt.as_ref(),
            emit: self
                .emit
                .as_deref()
                .map(|f| f as &(dyn Fn(&ChargeRecord) -> EventRecord + Sync)),
            answer: self.answer.as_ref(),
        }
    }
}

/// How many values a move takes ([`bind_move`] binds them).
const MOVE_PARAMETERS: usize = 13;

/// Where among a move's values the charge's id is (from 0).
const MOVE_ID_AT: usize = 9;

/// A charge's move: its `UPDATE` of a charge in a state of `from`, its values `values` in
/// [`bind_move`]'s order ($1 to $13 for a move alone), taken `source` (a batch's `FROM v`),
/// ending in its `WHERE` clause. [`moved_by`] says the same in Rust.
fn move_sql(from: &[ChargeState], values: Values, source: &str) -> String {
    let from_list = from
        .iter()
        .map(|s| format!("'{}'", s.as_str()))
        .collect::<Vec<_>>()
        .join(", ");
    let [
        status,
        now,
        psp_id,
        copy_paste,
        qr,
        expires_at,
        paid_at,
        end_to_end_id,
        amount_paid,
        id,
        check_set,
        check_at,
        paid_late,
    ] = std::array::from_fn(|i| values.at(i));
    format!(
        "UPDATE charges SET status = {status}, updated_at = {now}, \
           psp_id = COALESCE({psp_id}, psp_id), copy_paste = COALESCE({copy_paste}, copy_paste), \
           qr_png_base64 = COALESCE({qr}, qr_png_base64), \
           expires_at = COALESCE({expires_at}, expires_at), \
           paid_at = COALESCE({paid_at}, paid_at), \
           end_to_end_id = COALESCE({end_to_end_id}, end_to_end_id), \
           amount_paid = COALESCE({amount_paid}, amount_paid), \
           next_check_at = CASE WHEN {check_set} = 1 THEN {check_at} ELSE next_check_at END, \
           paid_late = CASE WHEN {paid_late} = 1 THEN 1 ELSE paid_late END \
         {source} WHERE id = {id} AND status IN ({from_list})"
    )
}

/// Binds [`move_sql`]'s parameters.
fn bind_move<'q>(
    query: AnyQuery<'q>,
    id: &'q str,
    update: &'q PspUpdate,
    to: ChargeState,
    now: i64,
) -> AnyQuery<'q> {
    query
        .bind(to.as_str())
        .bind(now)
        .bind(&update.psp_id)
        .bind(&update.copy_paste)
        .bind(&update.qr_png_base64)
        .bind(update.expires_at)
        .bind(update.paid_at)
        .bind(&update.end_to_end_id)
        .bind(update.amount_paid)
        .bind(id)
        .bind(i64::from(update.next_check_at.is_some()))
        .bind(update.next_check_at.flatten())
        .bind(i64::from(update.paid_late))
}

/// Moves a charge inside the caller's transaction, with the PSP `attempt` that led to the move
/// recorded first (whether or not the charge moves), and the moved charge stored as `answer`'s
/// key's answer, which it returns; see [`Store::transition_charge`]. On PostgreSQL the
/// attempt's insert rides in the move's `WITH`, and the answer in the event's statement
/// ([`super::events::insert_event`]): a round trip fewer each.
async fn transition_on(
    conn: &mut sqlx::AnyConnection,
    backend: super::Backend,
    id: &str,
    asked: &Move<'_>,
) -> Result<(Option<ChargeRecord>, Option<String>), StoreError> {
    let Move {
        from,
        to,
        update,
        attempt,
        emit,
        answer,
    } = *asked;
    // SQLite has no `INSERT` in `WITH`: the attempt is a statement of its own, first.
    if let (Some(attempt), super::Backend::Sqlite) = (attempt, backend) {
        super::routing::insert_attempt(conn, attempt).await?;
    }
    // The move binds $1 to $13; an attempt in its `WITH`, the ones after.
    let with_attempt = match (attempt, backend) {
        (Some(_), super::Backend::Postgres) => format!(
            "WITH attempt AS ({}) ",
            super::routing::insert_attempt_sql(14)
        ),
        _ => String::new(),
    };
    let now = super::now_ms();
    let sql = format!(
        "{with_attempt}{} RETURNING {COLUMNS}",
        move_sql(from, Values::Parameters(1), "")
    );
    let query = bind_move(sqlx::query(&sql), id, update, to, now);
    let query = match (attempt, backend) {
        (Some(attempt), super::Backend::Postgres) => super::routing::bind_attempt(query, attempt),
        _ => query,
    };
    let row = query.fetch_optional(&mut *conn).await?;
    let Some(row) = row else {
        return Ok((None, None));
    };
    let charge = record_of(&row)?;
    let body = answer.and_then(|answer| (answer.render)(&charge));
    let store_answer = answer
        .zip(body.as_deref())
        .map(|(answer, body)| answer.key.store_created(body));
    match (emit, store_answer) {
        (Some(emit), store_answer) => {
            super::events::insert_event(conn, backend, &emit(&charge), store_answer).await?
        }
        (None, Some(store_answer)) => store_answer.run(conn).await?,
        (None, None) => {}
    }
    Ok((Some(charge), body))
}

/// The charge `known` becomes when [`transition_on`]'s `UPDATE` moves it to `to` at `now` with
/// `update`: its `SET` clause, column by column (a value the PSP did not report keeps the
/// stored one).
fn moved_by(known: &ChargeRecord, to: ChargeState, update: &PspUpdate, now: i64) -> ChargeRecord {
    let mut c = known.clone();
    c.status = to;
    c.updated_at = now;
    let keep = |reported: &Option<String>, stored: &mut Option<String>| {
        if reported.is_some() {
            stored.clone_from(reported);
        }
    };
    keep(&update.psp_id, &mut c.psp_id);
    keep(&update.copy_paste, &mut c.copy_paste);
    keep(&update.qr_png_base64, &mut c.qr_png_base64);
    keep(&update.end_to_end_id, &mut c.end_to_end_id);
    c.expires_at = update.expires_at.or(c.expires_at);
    c.paid_at = update.paid_at.or(c.paid_at);
    c.amount_paid = update.amount_paid.or(c.amount_paid);
    c.paid_late |= update.paid_late;
    c
}

/// Moves of charges their callers know, on PostgreSQL, many in one statement; see
/// [`KnownMoves`].
pub(super) type KnownMoveWrites = super::batching::Batcher<KnownMoves>;

/// Statements moving known charges that one PostgreSQL gateway runs at once for one
/// [`MoveShape`]: each is a durable commit its charges' callers wait for. One, so that the
/// moves that come meanwhile share the next (`store/batching.rs`, "One statement at a time").
pub const MOVE_STATEMENTS_AT_ONCE: usize = 1;

/// What rides with the moves of one statement, the same for all of them: the states they
/// move from, and whether each records an attempt, reports an event and stores an answer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct MoveShape {
    from: Vec<ChargeState>,
    attempt: bool,
    event: bool,
    answer: bool,
}

/// A move of a charge its caller knows as `known`, with the event and the key's answer
/// rendered from the charge as the move will leave it ([`moved_by`]).
pub(super) struct KnownMove {
    known: ChargeRecord,
    to: ChargeState,
    update: PspUpdate,
    now: i64,
    attempt: Option<super::routing::AttemptRecord>,
    event: Option<EventRecord>,
    answer: Option<(std::sync::Arc<super::idempotency::HeldKey>, String)>,
}

/// Charges' moves on PostgreSQL for callers that know the stored row ([`KnownMove`]): the
/// attempt, the move, its event with the event's deliveries, and the key's answer, each a
/// data-modifying `WITH` of one statement over a `VALUES` list with a row per move, in one
/// round trip and one commit for as many moves as wait (a transaction of a move alone took
/// four round trips). The event and the answer are rendered before the statement runs, and a
/// charge moves only if its stored row is exactly the `known` one (every column compared):
/// what was rendered is then what was stored. A charge that does not move (moved by another
/// request first, or changed since its caller read it) gets only its attempt written, and its
/// caller decides from the stored row ([`transition_on`]).
pub(super) struct KnownMoves {
    pool: sqlx::AnyPool,
    /// Statement texts by shape and number of moves, built once each.
    texts: parking_lot::Mutex<std::collections::HashMap<(MoveShape, usize), std::sync::Arc<str>>>,
}

impl KnownMoves {
    pub(super) fn new(pool: sqlx::AnyPool) -> Self {
        KnownMoves {
            pool,
            texts: Default::default(),
        }
    }

    /// The connections the moves run on.
    pub(super) fn pool(&self) -> &sqlx::AnyPool {
        &self.pool
    }

    fn text(&self, shape: &MoveShape, n: usize) -> std::sync::Arc<str> {
        let mut texts = self.texts.lock();
        texts
            .entry((shape.clone(), n))
            .or_insert_with(|| known_moves_sql(shape, n).into())
            .clone()
    }

    /// [`KnownMoves::write_all`] for moves of distinct charges.
    async fn write_together(
        &self,
        shape: &MoveShape,
        moves: Vec<KnownMove>,
    ) -> Option<Vec<MoveOutcome>> {
        let sql = self.text(shape, moves.len());
        let mut query = sqlx::query(&sql);
        let mut answered = Vec::with_capacity(moves.len());
        for m in &moves {
            query = bind_record(
                bind_move(query, &m.known.id, &m.update, m.to, m.now),
                &m.known,
            );
            if let Some(attempt) = &m.attempt {
                query = super::routing::bind_attempt(query, attempt);
            }
            if let Some(event) = &m.event {
                query = super::events::bind_columns(query, event);
            }
            let mut done = None;
            if let Some((key, body)) = &m.answer {
                let rider = key.store_created(body);
                query = (rider.bind)(query);
                done = Some(rider.done);
            }
            answered.push(done);
        }
        if shape.event {
            query = query.bind(super::events::delivery_id_prefix());
        }
        let rows = query
            .fetch_all(&self.pool)
            .await
            .inspect_err(
                |e| tracing::debug!(error = %e, moves = moves.len(), "moves not written together"),
            )
            .ok()?;
        // Written: from here on every move has its outcome, whatever the rows say.
        let mut moved = std::collections::HashMap::with_capacity(rows.len());
        for row in &rows {
            let answers = if shape.answer {
                row.try_get::<i64, _>("answered")
            } else {
                Ok(0)
            };
            match (record_of(row), answers) {
                (Ok(charge), Ok(answers)) => {
                    moved.insert(charge.id.clone(), (charge, answers));
                }
                (Err(e), _) => {
                    tracing::error!(error = %e, "a charge moved together could not be read back")
                }
                (_, Err(e)) => {
                    tracing::error!(error = %e, "a move's answer count could not be read back")
                }
            }
        }
        let unread = rows.len() - moved.len();
        let outcomes = moves
            .iter()
            .zip(answered)
            .map(|(m, done)| match moved.remove(&m.known.id) {
                Some((charge, answers)) => {
                    if let Some(done) = done {
                        done(u64::try_from(answers).unwrap_or(0));
                    }
                    MoveOutcome::Moved(Box::new(charge))
                }
                // Not moved, unless it is among the rows that could not be read.
                None if unread == 0 => MoveOutcome::NotMoved,
                None => MoveOutcome::Unread(StoreError::Corrupt(format!(
                    "charge {} was written with others and could not be read back",
                    m.known.id
                ))),
            })
            .collect();
        Some(outcomes)
    }
}

/// What became of a move given to [`KnownMoves`].
pub(super) enum MoveOutcome {
    /// Moved: the charge as stored.
    Moved(Box<ChargeRecord>),
    /// Not moved (the stored row was not the one known, or not in a state moved from); its
    /// attempt is written.
    NotMoved,
    /// Nothing written: its charge was in the statement already. Written alone.
    Alone,
    /// Written, but its row could not be read back.
    Unread(StoreError),
}

impl super::batching::Batch for KnownMoves {
    type Key = MoveShape;
    type Write = KnownMove;
    type Outcome = MoveOutcome;
    const NAME: &'static str = "known_move";
    const AT_ONCE: usize = MOVE_STATEMENTS_AT_ONCE;
    /// About 60 parameters a move.
    const MAX_WRITES: usize = 32;

    /// `None`, writing nothing, when the statement failed: each is then moved alone, attempt
    /// and all. A charge's second move among `moves` is left out of the statement (it would
    /// move the charge once) and written alone after it.
    async fn write_all(
        &self,
        shape: &MoveShape,
        moves: Vec<KnownMove>,
    ) -> Option<Vec<MoveOutcome>> {
        let mut seen = std::collections::HashSet::with_capacity(moves.len());
        let (moves, again): (Vec<_>, Vec<_>) = moves
            .into_iter()
            .enumerate()
            .partition(|(_, m)| seen.insert(m.known.id.clone()));
        let moves = moves.into_iter().map(|(_, m)| m).collect();
        let mut outcomes = self.write_together(shape, moves).await?;
        for (i, _) in again {
            outcomes.insert(i, MoveOutcome::Alone);
        }
        Some(outcomes)
    }
}

/// [`KnownMoves`]' statement for `n` moves of `shape`: each move's row of the `VALUES` list
/// `v` holds the move's values (`v.m0`…, [`bind_move`]), the row it expects (`v.k0`…,
/// [`bind_record`]), then its attempt (`v.a0`…), its event's columns (`v.e0`…) and its answer
/// (`v.r0`…) as the shape has them; the deliveries' id prefix is the last parameter.
fn known_moves_sql(shape: &MoveShape, n: usize) -> String {
    let known_columns = COLUMNS.split(',').count();
    // Each part's columns are `v.<prefix>0`, `v.<prefix>1`, … (`Values::Columns`).
    let mut parts = vec![("m", MOVE_PARAMETERS), ("k", known_columns)];
    if shape.attempt {
        parts.push(("a", super::routing::ATTEMPT_PARAMETERS));
    }
    if shape.event {
        parts.push(("e", super::events::EVENT_COLUMN_COUNT));
    }
    if shape.answer {
        parts.push(("r", super::idempotency::ANSWER_PARAMETERS));
    }
    let names = parts
        .iter()
        .flat_map(|(prefix, count)| (0..*count).map(move |i| format!("{prefix}{i}")))
        .collect::<Vec<_>>()
        .join(", ");
    let per_move: usize = parts.iter().map(|(_, count)| count).sum();
    let id = Values::Columns("m").at(MOVE_ID_AT);
    let mut with = vec![format!(
        "v ({names}) AS (VALUES {})",
        super::batching::values(n, per_move)
    )];
    if shape.attempt {
        with.push(format!(
            "attempt AS ({})",
            super::routing::insert_attempts_sql(Values::Columns("a"), "FROM v")
        ));
    }
    with.push(format!(
        "moved AS ({} AND ({COLUMNS}) IS NOT DISTINCT FROM ({}) RETURNING {COLUMNS})",
        move_sql(&shape.from, Values::Columns("m"), "FROM v"),
        Values::Columns("k").list(known_columns),
    ));
    let of_moved = format!("{id} IN (SELECT id FROM moved)");
    if shape.event {
        with.push(super::events::events_with(
            Values::Columns("e"),
            &format!("FROM v WHERE {of_moved}"),
            &format!("${}", n * per_move + 1),
        ));
    }
    let mut answered = String::new();
    if shape.answer {
        with.push(format!(
            "answered AS ({} AND {of_moved} RETURNING {id} AS id)",
            super::idempotency::answers_sql(Values::Columns("r"), "FROM v")
        ));
        answered = ", (SELECT COUNT(*) FROM answered a WHERE a.id = moved.id) AS answered".into();
    }
    format!(
        "WITH {} SELECT {COLUMNS}{answered} FROM moved",
        with.join(", ")
    )
}

/// Inserts charges' `creating` rows on PostgreSQL, many in one statement; see [`CreatingRows`].
pub(super) type CreatingInserts = super::batching::Batcher<CreatingRows>;

/// Statements inserting `creating` rows that one PostgreSQL gateway runs at once: each is a
/// durable commit a charge waits for before its PSP hears of it. One (`store/batching.rs`,
/// "One statement at a time").
pub const CREATING_STATEMENTS_AT_ONCE: usize = 1;

/// Charges' `creating` rows on PostgreSQL (charges of payment links aside), as many as wait
/// in one `INSERT … VALUES (…), (…) ON CONFLICT (reference) DO NOTHING`: a statement and a
/// durable commit a charge before. Measured (`cargo xtask load --compare`, PostgreSQL, four
/// runs): 331, 359, 306, 328 charges a second against 307, 345, 295, 298 (+6.5 %), 2.2 rows a
/// statement alone.
pub(super) struct CreatingRows {
    pub pool: sqlx::AnyPool,
}

impl super::batching::Batch for CreatingRows {
    type Key = ();
    type Write = ChargeRecord;
    type Outcome = bool;
    const NAME: &'static str = "creating_charge";
    const AT_ONCE: usize = CREATING_STATEMENTS_AT_ONCE;
    /// 27 parameters a row; a statement's text for each number of rows.
    const MAX_WRITES: usize = 32;

    /// Whether each row was inserted: `false` when its reference was taken (a retry of a
    /// request that reserved it, as alone).
    async fn write_all(&self, _: &(), rows: Vec<ChargeRecord>) -> Option<Vec<bool>> {
        let mut query = sqlx::query(creating_rows_sql(rows.len()));
        for r in &rows {
            query = bind_record(query, r);
        }
        let inserted = super::batching::returned_keys(&self.pool, query);
        super::batching::written_by_key("creating rows", &rows, |r| r.reference.as_str(), inserted)
            .await
    }
}

/// [`CreatingRows`]' statement for `n` rows, built once per number.
fn creating_rows_sql(n: usize) -> &'static str {
    static TEXTS: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(|| {
        (1..=<CreatingRows as super::batching::Batch>::MAX_WRITES)
            .map(|n| {
                format!(
                    "INSERT INTO charges ({COLUMNS}) VALUES {} \
                     ON CONFLICT (reference) DO NOTHING RETURNING reference",
                    super::batching::values(n, 27)
                )
            })
            .collect()
    });
    &TEXTS[n - 1]
}
