//! Plans in the database: each merchant's plan (`merchants.plan`), the monthly charge counter
//! (`plan_usage`), and [`Store::admit`], the one check every creation point runs inside the
//! transaction of its insert.
//!
//! How the check holds under concurrency: creations open their transaction with
//! [`Store::begin_write`] (SQLite: `BEGIN IMMEDIATE`, the single writer's lock from the first
//! statement on); `admit` then locks the merchant's row (PostgreSQL: `FOR NO KEY UPDATE`, which
//! does not block the charges and other rows that merely reference the merchant) before it
//! counts, so a second creation waits for the first to commit and counts what it wrote. Charges
//! skip the merchant's lock: their counter row is advanced by one upsert whose `WHERE` compares
//! it with the plan's limit, and PostgreSQL re-checks that `WHERE` on the row's latest version.
//! There a gateway's charges that come at once share one such statement (`plan_counter`).

use sqlx::Row;

use super::{Backend, Store, StoreError};
use crate::domain::Environment;
use crate::plans::{Admission, LimitReached, PLANS, PlanId, Resource};

/// A transaction of the `Any` driver.
pub type Tx = sqlx::Transaction<'static, sqlx::Any>;

/// How many of each counted resource a merchant has; see [`Store::plan_usage`].
#[derive(Debug, Clone, Default)]
pub struct Counts(Vec<(Resource, u64)>);

impl Counts {
    pub fn get(&self, resource: Resource) -> u64 {
        self.0
            .iter()
            .find(|(r, _)| *r == resource)
            .map_or(0, |(_, n)| *n)
    }
}

/// The SQL that counts a resource: a scalar expression over `{m}` (merchant), `{e}`
/// (environment), `{month}` and `{now}`.
fn count_sql(resource: Resource) -> Option<&'static str> {
    Some(match resource {
        Resource::LiveCharges => {
            "COALESCE((SELECT u.charges FROM plan_usage u WHERE u.merchant_id = {m} \
             AND u.environment = 'live' AND u.month = {month}), 0)"
        }
        Resource::TestCharges => {
            "COALESCE((SELECT u.charges FROM plan_usage u WHERE u.merchant_id = {m} \
             AND u.environment = 'test' AND u.month = {month}), 0)"
        }
        Resource::PaymentLinks => {
            "(SELECT COUNT(*) FROM payment_links WHERE merchant_id = {m} AND environment = {e} \
             AND active = 1)"
        }
        Resource::TeamMembers => {
            "((SELECT COUNT(*) FROM memberships WHERE merchant_id = {m}) + \
              (SELECT COUNT(*) FROM invitations WHERE merchant_id = {m} AND accepted_at IS NULL \
               AND revoked_at IS NULL AND expires_at > {now}))"
        }
        Resource::Psps => {
            "(SELECT COUNT(*) FROM credentials WHERE merchant_id = {m} AND environment = {e} \
             AND deleted_at IS NULL)"
        }
        Resource::ApiKeys => {
            "(SELECT COUNT(*) FROM api_keys WHERE merchant_id = {m} AND environment = {e} \
             AND revoked_at IS NULL)"
        }
        Resource::WebhookEndpoints => {
            "(SELECT COUNT(*) FROM webhook_endpoints WHERE merchant_id = {m} \
             AND environment = {e} AND deleted_at IS NULL)"
        }
        Resource::PhoneCashier | Resource::Sso => return None,
    })
}

/// The values a count binds.
struct Scope<'a> {
    merchant_id: &'a str,
    environment: Environment,
    month: &'a str,
    now: i64,
}

enum Value<'a> {
    Text(&'a str),
    Int(i64),
}

/// `template` with its `{name}`s numbered `$first`, `$first + 1`, … in order of first use, and
/// the values to bind in that order: PostgreSQL refuses parameters a statement never uses.
fn numbered<'a>(template: &str, scope: &Scope<'a>, first: usize) -> (String, Vec<Value<'a>>) {
    let mut sql = template.to_owned();
    let mut values = Vec::new();
    let mut names: Vec<(usize, &str)> = ["{m}", "{e}", "{month}", "{now}"]
        .into_iter()
        .filter_map(|name| template.find(name).map(|at| (at, name)))
        .collect();
    names.sort();
    for (i, (_, name)) in names.into_iter().enumerate() {
        sql = sql.replace(name, &format!("${}", first + i));
        values.push(match name {
            "{m}" => Value::Text(scope.merchant_id),
            "{e}" => Value::Text(scope.environment.as_str()),
            "{month}" => Value::Text(scope.month),
            _ => Value::Int(scope.now),
        });
    }
    (sql, values)
}

fn bind_all<'q>(
    mut query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    values: Vec<Value<'q>>,
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    for value in values {
        query = match value {
            Value::Text(text) => query.bind(text),
            Value::Int(n) => query.bind(n),
        };
    }
    query
}

/// A stored plan.
fn plan_of(text: String) -> Result<PlanId, StoreError> {
    text.parse()
        .map_err(|_| StoreError::Corrupt(format!("plan {text:?}")))
}

/// A count read back (never negative).
fn count_of(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// The plan's monthly charge limit of a charge's environment, as SQL over the columns
/// `m.plan` and `u.environment`: the table in `plans.rs`, written out once.
pub(super) fn charge_limit_sql() -> String {
    let case = |resource: Resource| {
        let arms: String = PLANS
            .iter()
            .map(|p| {
                format!(
                    " WHEN '{}' THEN {}",
                    p.id.as_str(),
                    p.limit(resource).number().unwrap_or(i64::MAX as u64)
                )
            })
            .collect();
        format!("CASE m.plan{arms} ELSE 0 END")
    };
    format!(
        "CASE WHEN u.environment = 'live' THEN {} ELSE {} END",
        case(Resource::LiveCharges),
        case(Resource::TestCharges)
    )
}

/// Counts one charge against `month` ([`crate::plans::month_of`]), unless that month is full for
/// the merchant's plan: one upsert (inside the charge insert's transaction on SQLite; on
/// PostgreSQL through [`super::plan_counter`]).
pub(super) async fn count_charge(
    tx: &mut sqlx::AnyConnection,
    merchant_id: &str,
    environment: Environment,
    month: &str,
) -> Result<Admission<()>, StoreError> {
    // The first charge of a month inserts 1: every plan allows at least one. Written once:
    // every charge runs it.
    static COUNT: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        format!(
            "INSERT INTO plan_usage AS u (merchant_id, environment, month, charges) \
             VALUES ($1, $2, $3, 1) \
             ON CONFLICT (merchant_id, environment, month) DO UPDATE SET charges = u.charges + 1 \
             WHERE u.charges < (SELECT {} FROM merchants m WHERE m.id = u.merchant_id)",
            charge_limit_sql()
        )
    });
    let counted = sqlx::query(&COUNT)
        .bind(merchant_id)
        .bind(environment.as_str())
        .bind(month)
        .execute(&mut *tx)
        .await?;
    if counted.rows_affected() == 1 {
        return Ok(Ok(()));
    }
    let row = sqlx::query(
        "SELECT m.plan, u.charges FROM merchants m JOIN plan_usage u ON u.merchant_id = m.id \
         WHERE m.id = $1 AND u.environment = $2 AND u.month = $3",
    )
    .bind(merchant_id)
    .bind(environment.as_str())
    .bind(month)
    .fetch_one(&mut *tx)
    .await?;
    let plan = plan_of(row.get(0))?;
    let resource = Resource::charges(environment);
    Ok(Err(LimitReached {
        plan,
        resource,
        environment: Some(environment),
        limit: plan.plan().limit(resource).number().unwrap_or(0),
        usage: count_of(row.get(1)),
    }))
}

impl Store {
    /// A transaction that may write from its first statement on: SQLite's `BEGIN IMMEDIATE`
    /// takes the writer's lock at once, so what it reads stays true until it commits.
    pub async fn begin_write(&self) -> Result<Tx, StoreError> {
        Ok(match self.backend {
            Backend::Sqlite => self.pool().begin_with("BEGIN IMMEDIATE").await?,
            Backend::Postgres => self.pool().begin().await?,
        })
    }

    /// Whether the merchant may create one more of `resource` (in `environment` for things
    /// counted per environment). Run inside the transaction of the insert, opened with
    /// [`Store::begin_write`]: the merchant's row stays locked until it ends, so concurrent
    /// creations are counted one after the other.
    pub async fn admit(
        &self,
        tx: &mut sqlx::AnyConnection,
        merchant_id: &str,
        environment: Environment,
        resource: Resource,
        now: i64,
    ) -> Result<Admission<()>, StoreError> {
        let lock = match self.backend {
            Backend::Sqlite => "SELECT plan FROM merchants WHERE id = $1",
            Backend::Postgres => "SELECT plan FROM merchants WHERE id = $1 FOR NO KEY UPDATE",
        };
        let plan = sqlx::query(lock)
            .bind(merchant_id)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or_else(|| StoreError::Corrupt(format!("no merchant {merchant_id:?}")))?;
        let plan = plan_of(plan.get(0))?;
        let limit = plan.plan().limit(resource);
        let Some(template) = count_sql(resource) else {
            // A feature: the plan has it or not.
            return Ok(match limit.admits_one_more(0) {
                true => Ok(()),
                false => Err(LimitReached::feature(plan, resource)),
            });
        };
        // Counted after the lock, in a statement of its own: its snapshot sees what the
        // transactions that held the lock before committed.
        let month = crate::plans::month_of(now);
        let scope = Scope {
            merchant_id,
            environment,
            month: &month,
            now,
        };
        let (sql, values) = numbered(&format!("SELECT {template}"), &scope, 1);
        let used = count_of(
            bind_all(sqlx::query(&sql), values)
                .fetch_one(&mut *tx)
                .await?
                .get(0),
        );
        if limit.admits_one_more(used) {
            return Ok(Ok(()));
        }
        Ok(Err(LimitReached {
            plan,
            resource,
            environment: resource.per_environment().then_some(environment),
            limit: limit.number().unwrap_or(0),
            usage: used,
        }))
    }

    /// The same question outside a transaction, to refuse early before slow work (a PSP
    /// call); the insert still asks [`Store::admit`].
    pub async fn admits(
        &self,
        merchant_id: &str,
        environment: Environment,
        resource: Resource,
    ) -> Result<Admission<()>, StoreError> {
        let mut conn = self.pool().acquire().await?;
        self.admit(
            &mut conn,
            merchant_id,
            environment,
            resource,
            super::now_ms(),
        )
        .await
    }

    /// Counts a charge created at `created_at` against its month on PostgreSQL, in one
    /// statement with the charges that wait beside it (`plan_counter`), or alone when they
    /// could not be counted together. Deferred (`synchronous_commit = off`): the charge's
    /// durable insert, which comes after, takes the count to disk with it.
    pub(super) async fn count_charge_together(
        &self,
        merchant_id: &str,
        environment: Environment,
        created_at: i64,
    ) -> Result<Admission<()>, StoreError> {
        let month = crate::plans::month_of(created_at);
        let key = super::plan_counter::Month {
            merchant_id: merchant_id.to_owned(),
            environment,
            month: month.clone(),
        };
        if let Some(admission) = self.counter.write(key, ()).await {
            return Ok(admission);
        }
        let merchant_id = merchant_id.to_owned();
        self.write_autocommit(super::Durability::Deferred, move |conn| {
            Box::pin(async move { count_charge(conn, &merchant_id, environment, &month).await })
        })
        .await
    }

    /// How PostgreSQL's plan counts went: statements, and the charges they counted together.
    pub fn plan_count_stats(&self) -> super::BatchStats {
        self.counter.stats()
    }

    /// Takes back the count of a charge that no longer exists (the PSP refused it).
    pub(super) async fn uncount_charge(
        &self,
        tx: &mut sqlx::AnyConnection,
        merchant_id: &str,
        environment: Environment,
        created_at: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE plan_usage SET charges = charges - 1 \
             WHERE merchant_id = $1 AND environment = $2 AND month = $3 AND charges > 0",
        )
        .bind(merchant_id)
        .bind(environment.as_str())
        .bind(crate::plans::month_of(created_at))
        .execute(&mut *tx)
        .await?;
        Ok(())
    }

    /// The merchant's plan, `None` when there is no such merchant.
    pub async fn plan_of(&self, merchant_id: &str) -> Result<Option<PlanId>, StoreError> {
        sqlx::query("SELECT plan FROM merchants WHERE id = $1")
            .bind(merchant_id)
            .fetch_optional(self.pool())
            .await?
            .map(|r| plan_of(r.get(0)))
            .transpose()
    }

    /// Puts a merchant on `plan`; the plan it had, or `None` when there is no such merchant.
    pub async fn set_plan(
        &self,
        merchant_id: &str,
        plan: PlanId,
    ) -> Result<Option<PlanId>, StoreError> {
        let mut tx = self.begin_write().await?;
        let lock = match self.backend {
            Backend::Sqlite => "SELECT plan FROM merchants WHERE id = $1",
            Backend::Postgres => "SELECT plan FROM merchants WHERE id = $1 FOR NO KEY UPDATE",
        };
        let Some(row) = sqlx::query(lock)
            .bind(merchant_id)
            .fetch_optional(&mut *tx)
            .await?
        else {
            return Ok(None);
        };
        let previous = plan_of(row.get(0))?;
        sqlx::query("UPDATE merchants SET plan = $1 WHERE id = $2")
            .bind(plan.as_str())
            .bind(merchant_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(Some(previous))
    }

    /// The merchant's plan and how much it uses of each counted resource: charges of `month`,
    /// the rest now (in `environment` where counted per environment). One statement.
    pub async fn plan_usage(
        &self,
        merchant_id: &str,
        environment: Environment,
        month: &str,
        now: i64,
    ) -> Result<(PlanId, Counts), StoreError> {
        let counted: Vec<Resource> = Resource::ALL
            .into_iter()
            .filter(|r| count_sql(*r).is_some())
            .collect();
        let columns: Vec<&str> = counted.iter().filter_map(|r| count_sql(*r)).collect();
        let template = format!(
            "SELECT plan, {} FROM merchants WHERE id = {{m}}",
            columns.join(", ")
        );
        let scope = Scope {
            merchant_id,
            environment,
            month,
            now,
        };
        let (sql, values) = numbered(&template, &scope, 1);
        let row = bind_all(sqlx::query(&sql), values)
            .fetch_optional(self.pool())
            .await?
            .ok_or_else(|| StoreError::Corrupt(format!("no merchant {merchant_id:?}")))?;
        let plan = plan_of(row.get(0))?;
        let counts = counted
            .into_iter()
            .enumerate()
            .map(|(i, r)| (r, count_of(row.get(i + 1))))
            .collect();
        Ok((plan, Counts(counts)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_in_order_of_first_use() {
        let scope = Scope {
            merchant_id: "mer_1",
            environment: Environment::Live,
            month: "2026-11",
            now: 7,
        };
        let (sql, values) = numbered("a = {now} AND b = {m} AND c = {m}", &scope, 1);
        assert_eq!(sql, "a = $1 AND b = $2 AND c = $2");
        assert!(matches!(values[..], [Value::Int(7), Value::Text("mer_1")]));
        let (sql, values) = numbered(count_sql(Resource::ApiKeys).unwrap(), &scope, 3);
        assert!(sql.contains("merchant_id = $3") && sql.contains("environment = $4"));
        assert_eq!(values.len(), 2);
    }

    #[test]
    fn the_charge_limit_is_the_table() {
        let sql = charge_limit_sql();
        assert!(sql.contains("WHEN 'free' THEN 10 "), "{sql}");
        assert!(sql.contains("WHEN 'ultra_2' THEN 500000 "), "{sql}");
        // Test charges: the fair-use cap.
        assert!(sql.contains("WHEN 'free' THEN 1000 "), "{sql}");
    }
}
