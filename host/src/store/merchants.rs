//! Merchants: the accounts that own API keys, PSP credentials and charges.

use sqlx::Row;

use super::{Store, StoreError, now_ms};

#[derive(Debug, Clone, serde::Serialize)]
pub struct Merchant {
    pub id: String,
    pub name: String,
    pub created_at: i64,
}

impl Store {
    pub async fn create_merchant(&self, name: &str) -> Result<Merchant, StoreError> {
        let merchant = Merchant {
            id: format!("mer_{}", uuid::Uuid::now_v7().simple()),
            name: name.to_owned(),
            created_at: now_ms(),
        };
        sqlx::query("INSERT INTO merchants (id, name, created_at) VALUES ($1, $2, $3)")
            .bind(&merchant.id)
            .bind(&merchant.name)
            .bind(merchant.created_at)
            .execute(self.pool())
            .await?;
        Ok(merchant)
    }

    pub async fn merchant(&self, id: &str) -> Result<Option<Merchant>, StoreError> {
        let row = sqlx::query("SELECT id, name, created_at FROM merchants WHERE id = $1")
            .bind(id)
            .fetch_optional(self.pool())
            .await?;
        Ok(row.as_ref().map(merchant_of))
    }

    pub async fn merchants(&self) -> Result<Vec<Merchant>, StoreError> {
        let rows =
            sqlx::query("SELECT id, name, created_at FROM merchants ORDER BY created_at, id")
                .fetch_all(self.pool())
                .await?;
        Ok(rows.iter().map(merchant_of).collect())
    }
}

fn merchant_of(r: &sqlx::any::AnyRow) -> Merchant {
    Merchant {
        id: r.get(0),
        name: r.get(1),
        created_at: r.get(2),
    }
}
