//! PSP credentials: a merchant's account at one PSP in one environment. Secret fields and the
//! webhook token are stored sealed by the vault; the rest as JSON text. Beside each record, the
//! outcome of its last checks at the PSP ([`CredentialChecks`]): trying the fields, registering
//! the webhook URL.
//!
//! Every change a merchant makes is a compare-and-swap on `version` ([`Store::update_credential`]
//! answers [`Saved::Conflict`] when someone else changed the row since it was read), and moves
//! the version on. Re-encryption under a new master key ([`Store::reseal_credential`]) swaps
//! on the version too but keeps it: the merchant's view did not change.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::row_cache::{Lookup, Table};
use super::{Columns, Store, StoreError};
use crate::domain::{CredentialId, Environment};

#[derive(Debug, Clone)]
pub struct CredentialRecord {
    pub id: CredentialId,
    pub merchant_id: String,
    pub environment: Environment,
    pub provider: String,
    pub label: String,
    /// Fields that are not secret, in clear.
    pub public_fields: BTreeMap<String, String>,
    /// Secret fields, each sealed by the vault.
    pub sealed_fields: BTreeMap<String, String>,
    pub webhook_id: String,
    pub webhook_token_sealed: String,
    pub active: bool,
    pub position: i64,
    /// Consecutive charges this credential takes in a round robin before the turn passes on.
    pub route_limit: i64,
    pub created_at: i64,
    pub updated_at: i64,
    /// Moves on by one with every change a merchant makes; 1 when connected.
    pub version: i64,
}

/// What a compare-and-swap write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Saved {
    Done,
    /// The row changed (or went) since it was read: nothing was written.
    Conflict,
}

/// How trying a credential at its PSP went when its fields were last saved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verification {
    pub status: VerificationStatus,
    /// Why the PSP could not be asked (`unreachable`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Unix milliseconds.
    pub at: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerificationStatus {
    /// The PSP accepted the credential.
    Ok,
    /// Saved without an answer: the PSP could not be reached.
    Unreachable,
    /// The adapter cannot check credentials.
    Unsupported,
    /// Saved without trying (`verify: false`).
    Skipped,
}

impl VerificationStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            VerificationStatus::Ok => "ok",
            VerificationStatus::Unreachable => "unreachable",
            VerificationStatus::Unsupported => "unsupported",
            VerificationStatus::Skipped => "skipped",
        }
    }
}

/// How registering the credential's webhook URL at the PSP went. Stored in the shape the API
/// shows (`webhook.registration`), `at` in RFC 3339.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registration {
    pub status: RegistrationStatus,
    /// The PSP's words for `failed`; what to set up for `manual`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The likely remedy for `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    pub at: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RegistrationStatus {
    Registered,
    Failed,
    /// The PSP takes its webhook in its own dashboard: the merchant sets it there.
    Manual,
    /// Not asked (`register_webhook: false`).
    Skipped,
}

impl RegistrationStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RegistrationStatus::Registered => "registered",
            RegistrationStatus::Failed => "failed",
            RegistrationStatus::Manual => "manual",
            RegistrationStatus::Skipped => "skipped",
        }
    }
}

/// The outcomes of a credential's last checks at its PSP; `None` when never recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CredentialChecks {
    pub verification: Option<Verification>,
    pub registration: Option<Registration>,
}

const COLUMNS: &str = "id, merchant_id, environment, provider, label, public_fields, \
    sealed_fields, webhook_id, webhook_token_sealed, active, position, created_at, updated_at, \
    route_limit, version";

impl Store {
    /// Writes a credential, if the merchant's plan has room for one more connected PSP in its
    /// environment.
    pub async fn insert_credential(
        &self,
        c: &CredentialRecord,
    ) -> Result<crate::plans::Admission<()>, StoreError> {
        let mut tx = self.begin_write().await?;
        if let Err(reached) = self
            .admit(
                &mut tx,
                &c.merchant_id,
                c.environment,
                crate::plans::Resource::Psps,
                c.created_at,
            )
            .await?
        {
            return Ok(Err(reached));
        }
        sqlx::query(&format!(
            "INSERT INTO credentials ({COLUMNS}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)"
        ))
        .bind(c.id.as_str())
        .bind(&c.merchant_id)
        .bind(c.environment.as_str())
        .bind(&c.provider)
        .bind(&c.label)
        .bind(json(&c.public_fields))
        .bind(json(&c.sealed_fields))
        .bind(&c.webhook_id)
        .bind(&c.webhook_token_sealed)
        .bind(i64::from(c.active))
        .bind(c.position)
        .bind(c.created_at)
        .bind(c.updated_at)
        .bind(c.route_limit)
        .bind(c.version)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        self.rows_changed(Table::Credentials).await;
        Ok(Ok(()))
    }

    /// Writes back what a merchant changed of `c`, if the row is still at `c.version`; the
    /// row moves to `c.version + 1`. The sealed fields are written only with `fields_changed`,
    /// so a change of label or order never puts back ciphertexts a key rotation replaced.
    pub async fn update_credential(
        &self,
        c: &CredentialRecord,
        fields_changed: bool,
    ) -> Result<Saved, StoreError> {
        let fields = if fields_changed {
            "public_fields = $8, sealed_fields = $9, "
        } else {
            ""
        };
        let sql = format!(
            "UPDATE credentials SET label = $1, active = $2, position = $3, updated_at = $4, \
             route_limit = $5, {fields}version = version + 1 \
             WHERE id = $6 AND version = $7 AND deleted_at IS NULL"
        );
        let mut query = sqlx::query(&sql)
            .bind(&c.label)
            .bind(i64::from(c.active))
            .bind(c.position)
            .bind(c.updated_at)
            .bind(c.route_limit)
            .bind(c.id.as_str())
            .bind(c.version);
        if fields_changed {
            query = query
                .bind(json(&c.public_fields))
                .bind(json(&c.sealed_fields));
        }
        let done = query.execute(self.pool()).await?;
        self.rows_changed(Table::Credentials).await;
        Ok(if done.rows_affected() == 1 {
            Saved::Done
        } else {
            Saved::Conflict
        })
    }

    /// Stores `c`'s secrets re-encrypted under a new master key, if the row is still at
    /// `c.version` (no change of the merchant's came in between); the version stays.
    pub async fn reseal_credential(&self, c: &CredentialRecord) -> Result<Saved, StoreError> {
        let done = sqlx::query(
            "UPDATE credentials SET sealed_fields = $1, webhook_token_sealed = $2, updated_at = $3 \
             WHERE id = $4 AND version = $5",
        )
        .bind(json(&c.sealed_fields))
        .bind(&c.webhook_token_sealed)
        .bind(c.updated_at)
        .bind(c.id.as_str())
        .bind(c.version)
        .execute(self.pool())
        .await?;
        self.rows_changed(Table::Credentials).await;
        Ok(if done.rows_affected() == 1 {
            Saved::Done
        } else {
            Saved::Conflict
        })
    }

    pub async fn credential(
        &self,
        merchant_id: &str,
        environment: Environment,
        id: &str,
    ) -> Result<Option<CredentialRecord>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM credentials \
             WHERE id = $1 AND merchant_id = $2 AND environment = $3 AND deleted_at IS NULL"
        ))
        .bind(id)
        .bind(merchant_id)
        .bind(environment.as_str())
        .fetch_optional(self.pool())
        .await?;
        row.as_ref().map(record_of).transpose()
    }

    /// The merchant's credentials in one environment, in routing order.
    pub async fn credentials(
        &self,
        merchant_id: &str,
        environment: Environment,
    ) -> Result<Vec<CredentialRecord>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM credentials \
             WHERE merchant_id = $1 AND environment = $2 AND deleted_at IS NULL \
             ORDER BY position, created_at, id"
        ))
        .bind(merchant_id)
        .bind(environment.as_str())
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(record_of).collect()
    }

    /// The credential a charge for `provider` uses: the first active one in routing order.
    /// Kept in memory on PostgreSQL while no change is heard (`row_cache`).
    pub async fn active_credential(
        &self,
        merchant_id: &str,
        environment: Environment,
        provider: &str,
    ) -> Result<Option<CredentialRecord>, StoreError> {
        let ticket = match self.rows.credential(merchant_id, environment, provider) {
            Lookup::Kept(credential) => return Ok(Some(credential)),
            Lookup::Read(ticket) => ticket,
        };
        let row = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM credentials \
             WHERE merchant_id = $1 AND environment = $2 AND provider = $3 \
               AND active = 1 AND deleted_at IS NULL \
             ORDER BY position, created_at, id LIMIT 1"
        ))
        .bind(merchant_id)
        .bind(environment.as_str())
        .bind(provider)
        .fetch_optional(self.reads())
        .await?;
        let found = row.as_ref().map(record_of).transpose()?;
        if let Some(credential) = &found {
            self.rows.keep_credential(ticket, credential);
        }
        Ok(found)
    }

    /// A credential by id alone, deleted ones included: for charges that name it.
    pub async fn credential_by_id(&self, id: &str) -> Result<Option<CredentialRecord>, StoreError> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM credentials WHERE id = $1"))
            .bind(id)
            .fetch_optional(self.reads())
            .await?;
        row.as_ref().map(record_of).transpose()
    }

    /// The credential a PSP notification is addressed to (`/api/wh/<webhook id>`).
    pub async fn credential_by_webhook_id(
        &self,
        webhook_id: &str,
    ) -> Result<Option<CredentialRecord>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM credentials WHERE webhook_id = $1 AND deleted_at IS NULL"
        ))
        .bind(webhook_id)
        .fetch_optional(self.pool())
        .await?;
        row.as_ref().map(record_of).transpose()
    }

    /// Records how registering the webhook at the PSP went.
    pub async fn set_webhook_registration(
        &self,
        id: &str,
        outcome: &Registration,
    ) -> Result<(), StoreError> {
        sqlx::query("UPDATE credentials SET webhook_registration = $1 WHERE id = $2")
            .bind(to_json(outcome))
            .bind(id)
            .execute(self.pool())
            .await?;
        self.rows_changed(Table::Credentials).await;
        Ok(())
    }

    /// Records how trying the credential's fields at the PSP went.
    pub async fn set_verification(
        &self,
        id: &str,
        outcome: &Verification,
    ) -> Result<(), StoreError> {
        sqlx::query("UPDATE credentials SET verification = $1 WHERE id = $2")
            .bind(to_json(outcome))
            .bind(id)
            .execute(self.pool())
            .await?;
        self.rows_changed(Table::Credentials).await;
        Ok(())
    }

    pub async fn credential_checks(&self, id: &str) -> Result<CredentialChecks, StoreError> {
        let row =
            sqlx::query("SELECT verification, webhook_registration FROM credentials WHERE id = $1")
                .bind(id)
                .fetch_optional(self.pool())
                .await?;
        Ok(row.as_ref().map(checks_of).transpose()?.unwrap_or_default())
    }

    /// The checks of every credential [`Store::credentials`] lists, by credential id.
    pub async fn credentials_checks(
        &self,
        merchant_id: &str,
        environment: Environment,
    ) -> Result<HashMap<String, CredentialChecks>, StoreError> {
        let rows = sqlx::query(
            "SELECT verification, webhook_registration, id FROM credentials \
             WHERE merchant_id = $1 AND environment = $2 AND deleted_at IS NULL",
        )
        .bind(merchant_id)
        .bind(environment.as_str())
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|r| Ok((r.col("id")?, checks_of(r)?)))
            .collect()
    }

    /// Gives the merchant's credentials in `ordered` positions 0, 1, 2… in one transaction;
    /// ids of other merchants or environments change nothing.
    pub async fn reorder_credentials(
        &self,
        merchant_id: &str,
        environment: Environment,
        ordered: &[&str],
        updated_at: i64,
    ) -> Result<(), StoreError> {
        let mut tx = self.pool().begin().await?;
        for (position, id) in ordered.iter().enumerate() {
            sqlx::query(
                "UPDATE credentials SET position = $1, updated_at = $2, version = version + 1 \
                 WHERE id = $3 AND merchant_id = $4 AND environment = $5 AND position <> $1",
            )
            .bind(position as i64)
            .bind(updated_at)
            .bind(*id)
            .bind(merchant_id)
            .bind(environment.as_str())
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        self.rows_changed(Table::Credentials).await;
        Ok(())
    }

    /// Every credential, deleted ones included: for re-encryption under a new master key.
    pub async fn all_credentials(&self) -> Result<Vec<CredentialRecord>, StoreError> {
        let rows = sqlx::query(&format!("SELECT {COLUMNS} FROM credentials ORDER BY id"))
            .fetch_all(self.pool())
            .await?;
        rows.iter().map(record_of).collect()
    }

    /// Hides a credential from the API and from charge creation; its charges keep naming it.
    pub async fn delete_credential(
        &self,
        merchant_id: &str,
        environment: Environment,
        id: &str,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE credentials SET deleted_at = $1, active = 0 \
             WHERE id = $2 AND merchant_id = $3 AND environment = $4 AND deleted_at IS NULL",
        )
        .bind(super::now_ms())
        .bind(id)
        .bind(merchant_id)
        .bind(environment.as_str())
        .execute(self.pool())
        .await?;
        self.rows_changed(Table::Credentials).await;
        Ok(done.rows_affected() == 1)
    }
}

fn json(fields: &BTreeMap<String, String>) -> String {
    serde_json::to_string(fields).expect("a map of strings serialises")
}

fn to_json(value: &impl Serialize) -> String {
    serde_json::to_string(value).expect("check outcomes serialise")
}

/// The `verification` and `webhook_registration` columns of a row. A value that no longer
/// parses is shown as never recorded rather than failing the page.
fn checks_of(r: &sqlx::any::AnyRow) -> Result<CredentialChecks, StoreError> {
    fn parse<T: for<'de> Deserialize<'de>>(text: Option<String>) -> Option<T> {
        text.and_then(|t| serde_json::from_str(&t).ok())
    }
    Ok(CredentialChecks {
        verification: parse(r.col("verification")?),
        registration: parse(r.col("webhook_registration")?),
    })
}

fn record_of(r: &sqlx::any::AnyRow) -> Result<CredentialRecord, StoreError> {
    Ok(CredentialRecord {
        id: r.parsed("id")?,
        merchant_id: r.col("merchant_id")?,
        environment: r.parsed("environment")?,
        provider: r.col("provider")?,
        label: r.col("label")?,
        public_fields: r.json("public_fields")?,
        sealed_fields: r.json("sealed_fields")?,
        webhook_id: r.col("webhook_id")?,
        webhook_token_sealed: r.col("webhook_token_sealed")?,
        active: r.flag("active")?,
        position: r.col("position")?,
        created_at: r.col("created_at")?,
        updated_at: r.col("updated_at")?,
        route_limit: r.col("route_limit")?,
        version: r.col("version")?,
    })
}
