//! Log retention in the database: the merchant-visible logs older than their plan keeps them —
//! PSP notifications, events with their webhook deliveries and delivery attempts, and the
//! record of attempts at PSPs — deleted in batches. What is still needed stays: a
//! notification not yet processed, an event with a delivery still pending, the attempts of a
//! charge still being created.

use sqlx::Row;

use super::{Store, StoreError};
use crate::plans::PlanId;

/// What one sweep deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Swept {
    pub notifications: u64,
    pub events: u64,
    pub deliveries: u64,
    pub delivery_attempts: u64,
    /// Rows of attempts at PSPs (`charge_attempts`).
    pub psp_attempts: u64,
}

impl Swept {
    pub fn total(&self) -> u64 {
        self.notifications
            + self.events
            + self.deliveries
            + self.delivery_attempts
            + self.psp_attempts
    }

    pub fn add(&mut self, other: Swept) {
        self.notifications += other.notifications;
        self.events += other.events;
        self.deliveries += other.deliveries;
        self.delivery_attempts += other.delivery_attempts;
        self.psp_attempts += other.psp_attempts;
    }
}

/// Rows deleted per statement, so a long backlog never holds the database for long.
const BATCH: i64 = 500;

/// `sql` with `ids` bound as `$1`, `$2`, ….
fn bind_ids<'q>(
    sql: &'q str,
    ids: &'q [String],
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    let mut query = sqlx::query(sql);
    for id in ids {
        query = query.bind(id.as_str());
    }
    query
}

/// `m.plan IN ('free', 'basic')`: plan ids are the table's own words, safe as literals.
fn plans_in(plans: &[PlanId]) -> String {
    let list: Vec<String> = plans.iter().map(|p| format!("'{}'", p.as_str())).collect();
    format!("m.plan IN ({})", list.join(", "))
}

impl Store {
    /// Deletes the logs of merchants on `plans` that are older than `cutoff` (Unix ms).
    pub async fn sweep_logs(&self, plans: &[PlanId], cutoff: i64) -> Result<Swept, StoreError> {
        let mut swept = Swept::default();
        if plans.is_empty() {
            return Ok(swept);
        }
        let on_plans = plans_in(plans);
        loop {
            let batch = self.sweep_batch(&on_plans, cutoff).await?;
            swept.add(batch);
            if batch.total() == 0 {
                return Ok(swept);
            }
        }
    }

    async fn sweep_batch(&self, on_plans: &str, cutoff: i64) -> Result<Swept, StoreError> {
        // Notifications still `received` wait for (another) processing: they stay.
        let notifications = sqlx::query(&format!(
            "DELETE FROM inbound_notifications WHERE id IN (\
               SELECT n.id FROM inbound_notifications n \
               JOIN credentials c ON c.id = n.credential_id JOIN merchants m ON m.id = c.merchant_id \
               WHERE n.received_at < $1 AND n.status <> 'received' AND {on_plans} LIMIT $2)"
        ))
        .bind(cutoff)
        .bind(BATCH)
        .execute(self.pool())
        .await?
        .rows_affected();

        // A reference's attempts go together (they are numbered), and only once the charge
        // is no longer being created.
        let psp_attempts = sqlx::query(&format!(
            "DELETE FROM charge_attempts WHERE reference IN (\
               SELECT DISTINCT a.reference FROM charge_attempts a \
               JOIN credentials c ON c.id = a.credential_id JOIN merchants m ON m.id = c.merchant_id \
               WHERE a.at < $1 AND {on_plans} \
                 AND NOT EXISTS (SELECT 1 FROM charge_attempts b \
                                 WHERE b.reference = a.reference AND b.at >= $1) \
                 AND NOT EXISTS (SELECT 1 FROM charges ch \
                                 WHERE ch.reference = a.reference AND ch.status = 'creating') \
               LIMIT $2)"
        ))
        .bind(cutoff)
        .bind(BATCH)
        .execute(self.pool())
        .await?
        .rows_affected();

        let mut swept = Swept {
            notifications,
            psp_attempts,
            ..Swept::default()
        };
        // Events whose deliveries are all over (delivered, failed, canceled).
        let ids: Vec<String> = sqlx::query(&format!(
            "SELECT e.id FROM events e JOIN merchants m ON m.id = e.merchant_id \
             WHERE e.created_at < $1 AND {on_plans} \
               AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d \
                               WHERE d.event_id = e.id AND d.status = 'pending') \
             ORDER BY e.created_at LIMIT $2"
        ))
        .bind(cutoff)
        .bind(BATCH)
        .fetch_all(self.pool())
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
        if ids.is_empty() {
            return Ok(swept);
        }
        let list = (1..=ids.len())
            .map(|i| format!("${i}"))
            .collect::<Vec<_>>()
            .join(", ");
        let mut tx = self.begin_write().await?;
        // A delivery queued again meanwhile (a redelivery) is pending: it, its attempts and its
        // event stay.
        let finished = format!(
            "SELECT id FROM webhook_deliveries WHERE event_id IN ({list}) AND status <> 'pending'"
        );
        swept.delivery_attempts = bind_ids(
            &format!("DELETE FROM delivery_attempts WHERE delivery_id IN ({finished})"),
            &ids,
        )
        .execute(&mut *tx)
        .await?
        .rows_affected();
        swept.deliveries = bind_ids(
            &format!(
                "DELETE FROM webhook_deliveries WHERE event_id IN ({list}) AND status <> 'pending'"
            ),
            &ids,
        )
        .execute(&mut *tx)
        .await?
        .rows_affected();
        swept.events = bind_ids(
            &format!(
                "DELETE FROM events WHERE id IN ({list}) AND NOT EXISTS \
                 (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = events.id)"
            ),
            &ids,
        )
        .execute(&mut *tx)
        .await?
        .rows_affected();
        tx.commit().await?;
        Ok(swept)
    }
}
