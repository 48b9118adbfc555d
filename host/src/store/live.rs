//! What live charge screens read: the statuses of the charges someone follows, in one query
//! (see `crate::live`).

use sqlx::Row;

use super::{Store, StoreError};

impl Store {
    /// `(id, status)` of each of `ids` that exists.
    pub async fn charge_statuses(
        &self,
        ids: &[String],
    ) -> Result<Vec<(String, String)>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let placeholders: Vec<String> = (1..=ids.len()).map(|i| format!("${i}")).collect();
        let sql = format!(
            "SELECT id, status FROM charges WHERE id IN ({})",
            placeholders.join(", ")
        );
        let mut query = sqlx::query(&sql);
        for id in ids {
            query = query.bind(id);
        }
        let rows = query.fetch_all(self.pool()).await?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }
}
