//! The statement's queries: a merchant's paid charges of one environment by payment time,
//! served by the partial index `charges_statement` (migration 0009). A page of lines after a
//! keyset position `(paid_at, id)`, in either order; the totals of a filter; sums per local
//! day and PSP. Every query names `status = 'paid'` literally, which is what lets both
//! backends use the partial index.

use sqlx::Row;

use super::{Store, StoreError};
use crate::domain::Environment;

/// Who made a sale, as a statement filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OperatorFilter {
    /// A person at the dashboard (`usr_…`): the cashier who sold it.
    User(String),
    /// Charges created through the API.
    Api,
    /// Charges paid through one of the merchant's payment links.
    PaymentLink,
}

/// Which paid charges a statement holds, already parsed. Times are stored milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatementFilter {
    /// Paid at or after.
    pub paid_gte: Option<i64>,
    /// Paid before.
    pub paid_lt: Option<i64>,
    pub provider: Option<String>,
    pub operator: Option<OperatorFilter>,
    pub payment_link_id: Option<String>,
    /// Only this person's sales, whatever else the filter asks: a cashier's statement.
    pub own_sales_of: Option<String>,
}

/// A line's place in the statement's order, for keyset pagination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    pub paid_at: i64,
    pub charge_id: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// The dashboard's and the API's listing.
    NewestFirst,
    /// The CSV export: a statement read as a ledger.
    OldestFirst,
}

/// One paid charge as the statement shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatementLine {
    pub charge_id: String,
    pub paid_at: i64,
    /// Centavos paid: what the PSP reported, else the charge's amount.
    pub amount: i64,
    pub provider: String,
    pub operator_id: Option<String>,
    /// The operator's name as their account has it now (also for people no longer on the team).
    pub operator_name: Option<String>,
    pub payment_link_id: Option<String>,
    /// The link's name when the charge was made, as the payer saw it.
    pub payment_link_name: Option<String>,
    pub description: Option<String>,
    pub end_to_end_id: Option<String>,
}

impl StatementLine {
    pub fn position(&self) -> Position {
        Position {
            paid_at: self.paid_at,
            charge_id: self.charge_id.clone(),
        }
    }
}

/// The count and sum of a filter, and the first and last payment times it holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    pub count: i64,
    pub amount: i64,
    pub first_paid_at: Option<i64>,
    pub last_paid_at: Option<i64>,
}

/// A stretch of time `[start, end)` over which the merchant's zone keeps one UTC offset, so
/// that a local day is plain arithmetic on stored milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetSpan {
    pub start: i64,
    pub end: i64,
    pub offset_ms: i64,
}

/// The payments of one PSP on one local day.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaySum {
    /// Local days since 1970-01-01.
    pub epoch_day: i64,
    pub provider: String,
    pub count: i64,
    pub amount: i64,
}

const DAY_MS: i64 = 86_400_000;

/// A bound value of a query being built.
enum Arg {
    Text(String),
    Int(i64),
}

/// A `WHERE` clause and its arguments, numbered as they are added.
struct Where {
    sql: String,
    args: Vec<Arg>,
}

impl Where {
    /// The merchant's paid charges of one environment, narrowed by `filter`.
    fn of(merchant_id: &str, environment: Environment, filter: &StatementFilter) -> Where {
        let mut w = Where {
            sql: String::from(
                "c.merchant_id = $1 AND c.environment = $2 AND c.status = 'paid' \
                 AND c.paid_at IS NOT NULL",
            ),
            args: vec![
                Arg::Text(merchant_id.to_owned()),
                Arg::Text(environment.as_str().to_owned()),
            ],
        };
        if let Some(t) = filter.paid_gte {
            w.and("c.paid_at >= ?", [Arg::Int(t)]);
        }
        if let Some(t) = filter.paid_lt {
            w.and("c.paid_at < ?", [Arg::Int(t)]);
        }
        if let Some(provider) = &filter.provider {
            w.and("c.provider = ?", [Arg::Text(provider.clone())]);
        }
        match &filter.operator {
            None => {}
            Some(OperatorFilter::User(id)) => w.and("c.operator_id = ?", [Arg::Text(id.clone())]),
            Some(OperatorFilter::Api) => {
                w.and("c.operator_id IS NULL AND c.payment_link_id IS NULL", [])
            }
            Some(OperatorFilter::PaymentLink) => w.and("c.payment_link_id IS NOT NULL", []),
        }
        if let Some(link) = &filter.payment_link_id {
            w.and("c.payment_link_id = ?", [Arg::Text(link.clone())]);
        }
        if let Some(user) = &filter.own_sales_of {
            w.and("c.operator_id = ?", [Arg::Text(user.clone())]);
        }
        w
    }

    /// Adds ` AND (clause)`, each `?` taking the next argument.
    fn and<const N: usize>(&mut self, clause: &str, args: [Arg; N]) {
        self.sql.push_str(" AND (");
        let mut args = args.into_iter();
        for (i, piece) in clause.split('?').enumerate() {
            if i > 0 {
                self.args
                    .push(args.next().expect("one argument per placeholder"));
                self.sql.push_str(&format!("${}", self.args.len()));
            }
            self.sql.push_str(piece);
        }
        assert!(args.next().is_none(), "one placeholder per argument");
        self.sql.push(')');
    }

    /// The next placeholder for an argument added outside the clause (`LIMIT`, an offset).
    fn arg(&mut self, arg: Arg) -> String {
        self.args.push(arg);
        format!("${}", self.args.len())
    }

    fn bind(self, sql: &str) -> sqlx::query::Query<'_, sqlx::Any, sqlx::any::AnyArguments<'_>> {
        let mut query = sqlx::query(sql);
        for arg in self.args {
            query = match arg {
                Arg::Text(s) => query.bind(s),
                Arg::Int(n) => query.bind(n),
            };
        }
        query
    }
}

impl Store {
    /// Up to `limit` lines in `order`, after `after` when given.
    pub async fn statement_lines(
        &self,
        merchant_id: &str,
        environment: Environment,
        filter: &StatementFilter,
        order: Order,
        after: Option<&Position>,
        limit: u32,
    ) -> Result<Vec<StatementLine>, StoreError> {
        let mut w = Where::of(merchant_id, environment, filter);
        let (cmp, dir) = match order {
            Order::NewestFirst => ("<", "DESC"),
            Order::OldestFirst => (">", "ASC"),
        };
        if let Some(p) = after {
            // The first bound alone is what PostgreSQL seeks the index with; without it every
            // page would scan past all the lines before it.
            w.and(&format!("c.paid_at {cmp}= ?"), [Arg::Int(p.paid_at)]);
            w.and(
                &format!("c.paid_at {cmp} ? OR (c.paid_at = ? AND c.id {cmp} ?)"),
                [
                    Arg::Int(p.paid_at),
                    Arg::Int(p.paid_at),
                    Arg::Text(p.charge_id.clone()),
                ],
            );
        }
        let limit = w.arg(Arg::Int(i64::from(limit)));
        let sql = format!(
            "SELECT c.id, c.paid_at, COALESCE(c.amount_paid, c.amount), c.provider, \
               c.operator_id, u.name, c.payment_link_id, c.payment_link_name, c.description, \
               c.end_to_end_id \
             FROM charges c LEFT JOIN users u ON u.id = c.operator_id \
             WHERE {} ORDER BY c.paid_at {dir}, c.id {dir} LIMIT {limit}",
            w.sql
        );
        let rows = w.bind(&sql).fetch_all(self.pool()).await?;
        Ok(rows
            .iter()
            .map(|r| StatementLine {
                charge_id: r.get(0),
                paid_at: r.get(1),
                amount: r.get(2),
                provider: r.get(3),
                operator_id: r.get(4),
                operator_name: r.get(5),
                payment_link_id: r.get(6),
                payment_link_name: r.get(7),
                description: r.get(8),
                end_to_end_id: r.get(9),
            })
            .collect())
    }

    /// Where a paid charge of the merchant and environment sits in the statement's order: the
    /// cursor a page after it starts from. `None` for any other charge.
    pub async fn statement_position(
        &self,
        merchant_id: &str,
        environment: Environment,
        charge_id: &str,
    ) -> Result<Option<Position>, StoreError> {
        let row = sqlx::query(
            "SELECT paid_at, id FROM charges WHERE id = $1 AND merchant_id = $2 \
             AND environment = $3 AND status = 'paid' AND paid_at IS NOT NULL",
        )
        .bind(charge_id)
        .bind(merchant_id)
        .bind(environment.as_str())
        .fetch_optional(self.pool())
        .await?;
        Ok(row.map(|r| Position {
            paid_at: r.get(0),
            charge_id: r.get(1),
        }))
    }

    pub async fn statement_totals(
        &self,
        merchant_id: &str,
        environment: Environment,
        filter: &StatementFilter,
    ) -> Result<Totals, StoreError> {
        let w = Where::of(merchant_id, environment, filter);
        let sql = format!(
            "SELECT COUNT(*), CAST(COALESCE(SUM(COALESCE(c.amount_paid, c.amount)), 0) AS BIGINT), \
               MIN(c.paid_at), MAX(c.paid_at) \
             FROM charges c WHERE {}",
            w.sql
        );
        let row = w.bind(&sql).fetch_one(self.pool()).await?;
        Ok(Totals {
            count: row.get(0),
            amount: row.get(1),
            first_paid_at: row.get(2),
            last_paid_at: row.get(3),
        })
    }

    /// Count and sum per local day and PSP of the payments inside `spans`; a local day is
    /// `(paid_at + offset) / day` within a span of one offset. Days without payments are absent.
    pub async fn statement_days(
        &self,
        merchant_id: &str,
        environment: Environment,
        filter: &StatementFilter,
        spans: &[OffsetSpan],
    ) -> Result<Vec<DaySum>, StoreError> {
        let mut sums = Vec::new();
        for span in spans {
            let mut w = Where::of(merchant_id, environment, filter);
            w.and(
                "c.paid_at >= ? AND c.paid_at < ?",
                [Arg::Int(span.start), Arg::Int(span.end)],
            );
            let offset = w.arg(Arg::Int(span.offset_ms));
            let sql = format!(
                "SELECT (c.paid_at + {offset}) / {DAY_MS}, c.provider, COUNT(*), \
                   CAST(SUM(COALESCE(c.amount_paid, c.amount)) AS BIGINT) \
                 FROM charges c WHERE {} GROUP BY 1, 2",
                w.sql
            );
            let rows = w.bind(&sql).fetch_all(self.pool()).await?;
            sums.extend(rows.iter().map(|r| DaySum {
                epoch_day: r.get(0),
                provider: r.get(1),
                count: r.get(2),
                amount: r.get(3),
            }));
        }
        Ok(sums)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clauses_number_their_arguments_in_order() {
        let filter = StatementFilter {
            paid_gte: Some(10),
            provider: Some("efi".into()),
            operator: Some(OperatorFilter::Api),
            own_sales_of: Some("usr_1".into()),
            ..Default::default()
        };
        let mut w = Where::of("mer_1", Environment::Test, &filter);
        w.and(
            "c.paid_at < ? OR (c.paid_at = ? AND c.id < ?)",
            [Arg::Int(5), Arg::Int(5), Arg::Text("chg_1".into())],
        );
        let limit = w.arg(Arg::Int(26));
        assert_eq!(
            w.sql,
            "c.merchant_id = $1 AND c.environment = $2 AND c.status = 'paid' \
             AND c.paid_at IS NOT NULL AND (c.paid_at >= $3) AND (c.provider = $4) \
             AND (c.operator_id IS NULL AND c.payment_link_id IS NULL) AND (c.operator_id = $5) \
             AND (c.paid_at < $6 OR (c.paid_at = $7 AND c.id < $8))"
        );
        assert_eq!(limit, "$9");
        assert_eq!(w.args.len(), 9);
    }
}
