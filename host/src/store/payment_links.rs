//! Payment links: a merchant's public checkout pages. Each read carries the link's paid
//! payments (count and total), counted from its charges; [`link_takes_charges`] is the same
//! rule as SQL, which the charge insert uses so that no charge is written once a link closed.

use super::{Columns, Store, StoreError};
use crate::domain::Environment;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentLinkRecord {
    pub id: String,
    pub merchant_id: String,
    pub environment: Environment,
    pub slug: String,
    pub name: String,
    /// A fixed amount in centavos; `None` when the payer types it.
    pub amount: Option<i64>,
    pub min_amount: Option<i64>,
    pub max_amount: Option<i64>,
    /// Paid payments the link takes.
    pub usage_limit: Option<i64>,
    pub valid_from: Option<i64>,
    pub valid_until: Option<i64>,
    /// An adapter id, or `random`.
    pub provider: String,
    pub active: bool,
    pub created_at: i64,
    pub updated_at: i64,
    /// Paid charges made through the link, and their total: read with the link, never written.
    pub paid_count: i64,
    pub paid_amount: i64,
}

const COLUMNS: &str = "id, merchant_id, environment, slug, name, amount, min_amount, max_amount, \
    usage_limit, valid_from, valid_until, provider, active, created_at, updated_at";

/// The columns of a read: the link's, then its paid count and total.
fn select() -> String {
    format!(
        "SELECT {COLUMNS}, \
           (SELECT COUNT(*) FROM charges c \
            WHERE c.payment_link_id = payment_links.id AND c.status = 'paid') AS paid_count, \
           (SELECT CAST(COALESCE(SUM(COALESCE(c.amount_paid, c.amount)), 0) AS BIGINT) \
            FROM charges c WHERE c.payment_link_id = payment_links.id AND c.status = 'paid') \
           AS paid_amount \
         FROM payment_links"
    )
}

/// Whether link `link` takes a new charge at time `now` (both SQL expressions, e.g. `$25`):
/// active, inside its validity window, and with fewer paid payments than its limit. The SQL
/// twin of `payment_links::availability`; the two must say the same.
pub(super) fn link_takes_charges(link: &str, now: &str) -> String {
    format!(
        "EXISTS (SELECT 1 FROM payment_links l WHERE l.id = {link} AND l.active = 1 \
           AND (l.valid_from IS NULL OR l.valid_from <= {now}) \
           AND (l.valid_until IS NULL OR l.valid_until > {now}) \
           AND (l.usage_limit IS NULL OR l.usage_limit > \
                (SELECT COUNT(*) FROM charges p WHERE p.payment_link_id = l.id AND p.status = 'paid')))"
    )
}

/// Whether an insert or update failed on a unique constraint (the slug's).
fn slug_taken(result: &Result<sqlx::any::AnyQueryResult, sqlx::Error>) -> bool {
    matches!(result, Err(sqlx::Error::Database(e)) if e.is_unique_violation())
}

impl Store {
    /// Writes a new link. `false` when its slug is taken (by any merchant's link); refused
    /// when it is active and the merchant's plan has no room for one more active link.
    pub async fn insert_payment_link(
        &self,
        l: &PaymentLinkRecord,
    ) -> Result<crate::plans::Admission<bool>, StoreError> {
        let mut tx = self.begin_write().await?;
        if l.active
            && let Err(reached) = self
                .admit(
                    &mut tx,
                    &l.merchant_id,
                    l.environment,
                    crate::plans::Resource::PaymentLinks,
                    l.created_at,
                )
                .await?
        {
            return Ok(Err(reached));
        }
        let result = sqlx::query(&format!(
            "INSERT INTO payment_links ({COLUMNS}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)"
        ))
        .bind(&l.id)
        .bind(&l.merchant_id)
        .bind(l.environment.as_str())
        .bind(&l.slug)
        .bind(&l.name)
        .bind(l.amount)
        .bind(l.min_amount)
        .bind(l.max_amount)
        .bind(l.usage_limit)
        .bind(l.valid_from)
        .bind(l.valid_until)
        .bind(&l.provider)
        .bind(i64::from(l.active))
        .bind(l.created_at)
        .bind(l.updated_at)
        .execute(&mut *tx)
        .await;
        if slug_taken(&result) {
            return Ok(Ok(false));
        }
        result?;
        tx.commit().await?;
        Ok(Ok(true))
    }

    /// Writes back a link's settings. `false` when its new slug is taken; refused when it is
    /// `activating` (inactive until now) and the merchant's plan has no room for one more
    /// active link.
    pub async fn update_payment_link(
        &self,
        l: &PaymentLinkRecord,
        activating: bool,
    ) -> Result<crate::plans::Admission<bool>, StoreError> {
        let mut tx = self.begin_write().await?;
        if activating
            && let Err(reached) = self
                .admit(
                    &mut tx,
                    &l.merchant_id,
                    l.environment,
                    crate::plans::Resource::PaymentLinks,
                    l.updated_at,
                )
                .await?
        {
            return Ok(Err(reached));
        }
        let result = sqlx::query(
            "UPDATE payment_links SET slug = $1, name = $2, amount = $3, min_amount = $4, \
             max_amount = $5, usage_limit = $6, valid_from = $7, valid_until = $8, provider = $9, \
             active = $10, updated_at = $11 WHERE id = $12",
        )
        .bind(&l.slug)
        .bind(&l.name)
        .bind(l.amount)
        .bind(l.min_amount)
        .bind(l.max_amount)
        .bind(l.usage_limit)
        .bind(l.valid_from)
        .bind(l.valid_until)
        .bind(&l.provider)
        .bind(i64::from(l.active))
        .bind(l.updated_at)
        .bind(&l.id)
        .execute(&mut *tx)
        .await;
        if slug_taken(&result) {
            return Ok(Ok(false));
        }
        result?;
        tx.commit().await?;
        Ok(Ok(true))
    }

    /// One of the merchant's links in `environment`.
    pub async fn payment_link(
        &self,
        merchant_id: &str,
        environment: Environment,
        id: &str,
    ) -> Result<Option<PaymentLinkRecord>, StoreError> {
        let row = sqlx::query(&format!(
            "{} WHERE id = $1 AND merchant_id = $2 AND environment = $3",
            select()
        ))
        .bind(id)
        .bind(merchant_id)
        .bind(environment.as_str())
        .fetch_optional(self.pool())
        .await?;
        row.as_ref().map(record_of).transpose()
    }

    /// The link at `/p/<slug>`, whoever's it is.
    pub async fn payment_link_by_slug(
        &self,
        slug: &str,
    ) -> Result<Option<PaymentLinkRecord>, StoreError> {
        let row = sqlx::query(&format!("{} WHERE slug = $1", select()))
            .bind(slug)
            .fetch_optional(self.pool())
            .await?;
        row.as_ref().map(record_of).transpose()
    }

    /// The merchant's links in `environment`, newest first, older than `starting_after` when
    /// given; `limit + 1` rows so the caller can tell whether more follow.
    pub async fn payment_links(
        &self,
        merchant_id: &str,
        environment: Environment,
        starting_after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<PaymentLinkRecord>, StoreError> {
        let rows = sqlx::query(&format!(
            "{} WHERE merchant_id = $1 AND environment = $2 AND ($3 IS NULL OR id < $3) \
             ORDER BY id DESC LIMIT $4",
            select()
        ))
        .bind(merchant_id)
        .bind(environment.as_str())
        .bind(starting_after)
        .bind(i64::from(limit) + 1)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(record_of).collect()
    }
}

fn record_of(r: &sqlx::any::AnyRow) -> Result<PaymentLinkRecord, StoreError> {
    Ok(PaymentLinkRecord {
        id: r.col("id")?,
        merchant_id: r.col("merchant_id")?,
        environment: r.parsed("environment")?,
        slug: r.col("slug")?,
        name: r.col("name")?,
        amount: r.col("amount")?,
        min_amount: r.col("min_amount")?,
        max_amount: r.col("max_amount")?,
        usage_limit: r.col("usage_limit")?,
        valid_from: r.col("valid_from")?,
        valid_until: r.col("valid_until")?,
        provider: r.col("provider")?,
        active: r.flag("active")?,
        created_at: r.col("created_at")?,
        updated_at: r.col("updated_at")?,
        paid_count: r.col("paid_count")?,
        paid_amount: r.col("paid_amount")?,
    })
}
