//! Merchants: the accounts that own API keys, PSP credentials and charges, each on a plan.

use super::{Columns, Store, StoreError, now_ms};
use crate::plans::PlanId;

#[derive(Debug, Clone)]
pub struct Merchant {
    pub id: String,
    pub name: String,
    pub created_at: i64,
    pub plan: PlanId,
}

const COLUMNS: &str = "id, name, created_at, plan";

impl Store {
    pub async fn create_merchant(&self, name: &str, plan: PlanId) -> Result<Merchant, StoreError> {
        let merchant = Merchant {
            id: format!("mer_{}", uuid::Uuid::now_v7().simple()),
            name: name.to_owned(),
            created_at: now_ms(),
            plan,
        };
        sqlx::query("INSERT INTO merchants (id, name, created_at, plan) VALUES ($1, $2, $3, $4)")
            .bind(&merchant.id)
            .bind(&merchant.name)
            .bind(merchant.created_at)
            .bind(plan.as_str())
            .execute(self.pool())
            .await?;
        Ok(merchant)
    }

    pub async fn merchant(&self, id: &str) -> Result<Option<Merchant>, StoreError> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM merchants WHERE id = $1"))
            .bind(id)
            .fetch_optional(self.pool())
            .await?;
        row.as_ref().map(merchant_of).transpose()
    }

    pub async fn merchants(&self) -> Result<Vec<Merchant>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM merchants ORDER BY created_at, id"
        ))
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(merchant_of).collect()
    }
}

fn merchant_of(r: &sqlx::any::AnyRow) -> Result<Merchant, StoreError> {
    Ok(Merchant {
        id: r.col("id")?,
        name: r.col("name")?,
        created_at: r.col("created_at")?,
        plan: r.parsed("plan")?,
    })
}
