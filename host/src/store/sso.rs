//! Single sign-on: each merchant's OpenID Connect settings (`sso_configs`, the client secret
//! sealed), the e-mail domains its provider vouches for (`sso_domains`, one merchant per
//! domain), the sign-ins sent to the provider and not back yet (`sso_attempts`), and the
//! member a first sign-in creates.

use sqlx::Row;

use super::users::UserRecord;
use super::{Columns, Store, StoreError};
use crate::policy::Role;

/// A merchant's identity provider, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SsoConfigRecord {
    pub merchant_id: String,
    pub issuer_url: String,
    pub client_id: String,
    pub client_secret_sealed: String,
    pub default_role: Role,
    /// The ID token claim whose values choose a role, with its rules in order.
    pub role_claim: Option<String>,
    pub role_mapping: Vec<RoleRule>,
    pub require_sso: bool,
    /// The e-mail domains, sorted.
    pub domains: Vec<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// One line of the claim → role mapping: a member whose claim holds `value` gets `role`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RoleRule {
    pub value: String,
    #[serde(with = "role_name")]
    pub role: Role,
}

mod role_name {
    use crate::policy::Role;

    pub fn serialize<S: serde::Serializer>(role: &Role, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(role.as_str())
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Role, D::Error> {
        let text: String = serde::Deserialize::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Why saving a configuration was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum SaveSso {
    Saved,
    /// Another merchant's provider already signs people in for this domain.
    DomainTaken(String),
    /// The merchant's plan has no single sign-on.
    Plan(crate::plans::LimitReached),
}

/// A sign-in under way at the provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SsoAttempt {
    pub state_hash: String,
    pub merchant_id: String,
    pub nonce: String,
    pub pkce_verifier: String,
    /// The dashboard path to open once signed in.
    pub next_path: String,
    pub created_at: i64,
    pub expires_at: i64,
}

const CONFIG_COLUMNS: &str = "merchant_id, issuer_url, client_id, client_secret_sealed, \
     default_role, role_claim, role_mapping, require_sso, created_at, updated_at";
const ATTEMPT_COLUMNS: &str =
    "state_hash, merchant_id, nonce, pkce_verifier, next_path, created_at, expires_at";

impl Store {
    /// The merchant's SSO settings, if its owner configured them.
    pub async fn sso_config(
        &self,
        merchant_id: &str,
    ) -> Result<Option<SsoConfigRecord>, StoreError> {
        let Some(row) = sqlx::query(&format!(
            "SELECT {CONFIG_COLUMNS} FROM sso_configs WHERE merchant_id = $1"
        ))
        .bind(merchant_id)
        .fetch_optional(self.pool())
        .await?
        else {
            return Ok(None);
        };
        let domains =
            sqlx::query("SELECT domain FROM sso_domains WHERE merchant_id = $1 ORDER BY domain")
                .bind(merchant_id)
                .fetch_all(self.pool())
                .await?
                .into_iter()
                .map(|r| r.get::<String, _>(0))
                .collect();
        config_of(&row, domains).map(Some)
    }

    /// Writes the merchant's settings and replaces its domains, in one transaction, if the
    /// plan has single sign-on and no other merchant holds one of the domains. The unique
    /// domain is the database's to keep: two merchants claiming one domain at once cannot both
    /// succeed.
    pub async fn save_sso_config(&self, config: &SsoConfigRecord) -> Result<SaveSso, StoreError> {
        let mut tx = self.begin_write().await?;
        if let Err(reached) = self
            .admit(
                &mut tx,
                &config.merchant_id,
                crate::domain::Environment::Test,
                crate::plans::Resource::Sso,
                config.updated_at,
            )
            .await?
        {
            return Ok(SaveSso::Plan(reached));
        }
        let mapping = serde_json::to_string(&config.role_mapping)
            .map_err(|e| StoreError::Corrupt(format!("role mapping: {e}")))?;
        sqlx::query(&format!(
            "INSERT INTO sso_configs ({CONFIG_COLUMNS}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
             ON CONFLICT (merchant_id) DO UPDATE SET issuer_url = excluded.issuer_url, \
               client_id = excluded.client_id, \
               client_secret_sealed = excluded.client_secret_sealed, \
               default_role = excluded.default_role, role_claim = excluded.role_claim, \
               role_mapping = excluded.role_mapping, require_sso = excluded.require_sso, \
               updated_at = excluded.updated_at"
        ))
        .bind(&config.merchant_id)
        .bind(&config.issuer_url)
        .bind(&config.client_id)
        .bind(&config.client_secret_sealed)
        .bind(config.default_role.as_str())
        .bind(&config.role_claim)
        .bind(mapping)
        .bind(i64::from(config.require_sso))
        .bind(config.created_at)
        .bind(config.updated_at)
        .execute(&mut *tx)
        .await?;
        sqlx::query("DELETE FROM sso_domains WHERE merchant_id = $1")
            .bind(&config.merchant_id)
            .execute(&mut *tx)
            .await?;
        for domain in &config.domains {
            let inserted = sqlx::query(
                "INSERT INTO sso_domains (domain, merchant_id) VALUES ($1, $2) \
                 ON CONFLICT (domain) DO NOTHING",
            )
            .bind(domain)
            .bind(&config.merchant_id)
            .execute(&mut *tx)
            .await?;
            if inserted.rows_affected() == 0 {
                // Dropping the transaction rolls everything back.
                return Ok(SaveSso::DomainTaken(domain.clone()));
            }
        }
        tx.commit().await?;
        Ok(SaveSso::Saved)
    }

    /// Removes the merchant's settings and domains (and sign-ins under way); `false` when
    /// there were none.
    pub async fn delete_sso_config(&self, merchant_id: &str) -> Result<bool, StoreError> {
        let mut tx = self.pool().begin().await?;
        for table in ["sso_domains", "sso_attempts"] {
            sqlx::query(&format!("DELETE FROM {table} WHERE merchant_id = $1"))
                .bind(merchant_id)
                .execute(&mut *tx)
                .await?;
        }
        let done = sqlx::query("DELETE FROM sso_configs WHERE merchant_id = $1")
            .bind(merchant_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(done.rows_affected() == 1)
    }

    /// Every merchant's sealed client secret, for `pixgw vault rotate`.
    pub async fn sso_sealed_secrets(&self) -> Result<Vec<(String, String)>, StoreError> {
        let rows = sqlx::query(
            "SELECT merchant_id, client_secret_sealed FROM sso_configs ORDER BY merchant_id",
        )
        .fetch_all(self.pool())
        .await?;
        Ok(rows.into_iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    /// Replaces a sealed client secret re-encrypted by a key rotation, unless the owner saved
    /// another one meanwhile (compare and swap); `true` when replaced.
    pub async fn reseal_sso_secret(
        &self,
        merchant_id: &str,
        old: &str,
        new: &str,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE sso_configs SET client_secret_sealed = $1 \
             WHERE merchant_id = $2 AND client_secret_sealed = $3",
        )
        .bind(new)
        .bind(merchant_id)
        .bind(old)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// The merchant whose provider signs people in for `domain` (lower-case).
    pub async fn sso_merchant_for_domain(
        &self,
        domain: &str,
    ) -> Result<Option<String>, StoreError> {
        let row = sqlx::query("SELECT merchant_id FROM sso_domains WHERE domain = $1")
            .bind(domain)
            .fetch_optional(self.pool())
            .await?;
        Ok(row.map(|r| r.get(0)))
    }

    /// Records a sign-in sent to the provider; attempts past their end are swept on the way.
    pub async fn insert_sso_attempt(&self, attempt: &SsoAttempt) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM sso_attempts WHERE expires_at <= $1")
            .bind(attempt.created_at)
            .execute(self.pool())
            .await?;
        sqlx::query(&format!(
            "INSERT INTO sso_attempts ({ATTEMPT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)"
        ))
        .bind(&attempt.state_hash)
        .bind(&attempt.merchant_id)
        .bind(&attempt.nonce)
        .bind(&attempt.pkce_verifier)
        .bind(&attempt.next_path)
        .bind(attempt.created_at)
        .bind(attempt.expires_at)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Takes the attempt behind a state's hash: it is gone afterwards, so a callback replayed
    /// (or raced by a second tab) finds nothing. Expired ones are returned too: the caller
    /// tells the person it took too long.
    pub async fn take_sso_attempt(
        &self,
        state_hash: &str,
    ) -> Result<Option<SsoAttempt>, StoreError> {
        let row = sqlx::query(&format!(
            "DELETE FROM sso_attempts WHERE state_hash = $1 RETURNING {ATTEMPT_COLUMNS}"
        ))
        .bind(state_hash)
        .fetch_optional(self.pool())
        .await?;
        Ok(row.map(|r| SsoAttempt {
            state_hash: r.get(0),
            merchant_id: r.get(1),
            nonce: r.get(2),
            pkce_verifier: r.get(3),
            next_path: r.get(4),
            created_at: r.get(5),
            expires_at: r.get(6),
        }))
    }

    /// Creates a person at their first SSO sign-in: a user without a password and their
    /// membership with `role`, in one transaction, if the plan's team has room. `None` when the
    /// e-mail got an account in the meantime.
    pub async fn create_sso_member(
        &self,
        merchant_id: &str,
        user: &UserRecord,
        role: Role,
    ) -> Result<crate::plans::Admission<Option<()>>, StoreError> {
        let mut tx = self.begin_write().await?;
        if let Err(reached) = self
            .admit(
                &mut tx,
                merchant_id,
                crate::domain::Environment::Test,
                crate::plans::Resource::TeamMembers,
                user.created_at,
            )
            .await?
        {
            return Ok(Err(reached));
        }
        let inserted = sqlx::query(
            "INSERT INTO users (id, email, name, password_hash, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT (email) DO NOTHING",
        )
        .bind(&user.id)
        .bind(&user.email)
        .bind(&user.name)
        .bind(&user.password_hash)
        .bind(user.created_at)
        .execute(&mut *tx)
        .await?;
        if inserted.rows_affected() == 0 {
            return Ok(Ok(None));
        }
        sqlx::query(
            "INSERT INTO memberships (merchant_id, user_id, role, created_at) \
             VALUES ($1, $2, $3, $4)",
        )
        .bind(merchant_id)
        .bind(&user.id)
        .bind(role.as_str())
        .bind(user.created_at)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Ok(Some(())))
    }
}

fn config_of(r: &sqlx::any::AnyRow, domains: Vec<String>) -> Result<SsoConfigRecord, StoreError> {
    Ok(SsoConfigRecord {
        merchant_id: r.col("merchant_id")?,
        issuer_url: r.col("issuer_url")?,
        client_id: r.col("client_id")?,
        client_secret_sealed: r.col("client_secret_sealed")?,
        default_role: r.parsed("default_role")?,
        role_claim: r.col("role_claim")?,
        role_mapping: r.json("role_mapping")?,
        require_sso: r.flag("require_sso")?,
        domains,
        created_at: r.col("created_at")?,
        updated_at: r.col("updated_at")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::now_ms;

    /// The SSO tables on SQLite here; `host/tests/it/dashboard/sso.rs` runs the same paths on
    /// PostgreSQL through the binary.
    async fn store() -> (Store, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::connect(&format!("sqlite://{}/t.db", dir.path().display()))
            .await
            .unwrap();
        store.migrate().await.unwrap();
        (store, dir)
    }

    async fn merchant(store: &Store, name: &str, plan: &str) -> String {
        let (merchant, _) = store
            .create_merchant_with_owner(name, &format!("owner@{name}.test"), "Owner", "x")
            .await
            .unwrap()
            .unwrap();
        sqlx::query("UPDATE merchants SET plan = $1 WHERE id = $2")
            .bind(plan)
            .bind(&merchant.id)
            .execute(store.pool())
            .await
            .unwrap();
        merchant.id
    }

    fn config(merchant_id: &str, domains: &[&str]) -> SsoConfigRecord {
        let now = now_ms();
        SsoConfigRecord {
            merchant_id: merchant_id.into(),
            issuer_url: "https://id.example.com".into(),
            client_id: "pixgw".into(),
            client_secret_sealed: "v1:sealed".into(),
            default_role: Role::ReadOnly,
            role_claim: Some("groups".into()),
            role_mapping: vec![RoleRule {
                value: "finance".into(),
                role: Role::Manager,
            }],
            require_sso: true,
            domains: domains.iter().map(|d| d.to_string()).collect(),
            created_at: now,
            updated_at: now,
        }
    }

    #[tokio::test]
    async fn a_configuration_round_trips_and_a_domain_has_one_merchant() {
        let (store, _dir) = store().await;
        let acme = merchant(&store, "acme", "enterprise").await;
        let other = merchant(&store, "other", "enterprise").await;
        let saved = config(&acme, &["acme.test", "acme.example"]);
        assert_eq!(store.save_sso_config(&saved).await.unwrap(), SaveSso::Saved);
        let mut read = store.sso_config(&acme).await.unwrap().unwrap();
        assert_eq!(read.domains, ["acme.example", "acme.test"]);
        read.domains = saved.domains.clone();
        assert_eq!(read, saved);
        assert_eq!(
            store.sso_merchant_for_domain("acme.test").await.unwrap(),
            Some(acme.clone())
        );
        // Another merchant cannot take the domain; nothing of its save is kept.
        assert_eq!(
            store
                .save_sso_config(&config(&other, &["other.test", "acme.test"]))
                .await
                .unwrap(),
            SaveSso::DomainTaken("acme.test".into())
        );
        assert_eq!(store.sso_config(&other).await.unwrap(), None);
        assert_eq!(
            store.sso_merchant_for_domain("other.test").await.unwrap(),
            None
        );
        // Saving again replaces the domains.
        store
            .save_sso_config(&config(&acme, &["acme.example"]))
            .await
            .unwrap();
        assert_eq!(
            store.sso_merchant_for_domain("acme.test").await.unwrap(),
            None
        );
        assert!(store.delete_sso_config(&acme).await.unwrap());
        assert_eq!(store.sso_config(&acme).await.unwrap(), None);
        assert!(!store.delete_sso_config(&acme).await.unwrap());
    }

    #[tokio::test]
    async fn only_plans_with_sso_save_it() {
        let (store, _dir) = store().await;
        let pro = merchant(&store, "pro", "pro").await;
        match store
            .save_sso_config(&config(&pro, &["pro.test"]))
            .await
            .unwrap()
        {
            SaveSso::Plan(reached) => assert_eq!(reached.resource, crate::plans::Resource::Sso),
            other => panic!("{other:?}"),
        }
        assert_eq!(store.sso_config(&pro).await.unwrap(), None);
    }

    /// `pixgw vault rotate`'s part for SSO: secrets under an old key move to the current one
    /// and still open for their merchant.
    #[tokio::test]
    async fn client_secrets_move_to_the_current_key() {
        use crate::vault::{Aad, MasterKey, Vault};
        use base64::Engine;
        let key = |byte: u8| {
            MasterKey::from_base64(&base64::engine::general_purpose::STANDARD.encode([byte; 32]))
                .unwrap()
        };
        let (store, _dir) = store().await;
        let acme = merchant(&store, "acme", "enterprise").await;
        let aad = Aad::new("sso_configs", &acme, "client_secret");
        let old = Vault::new(key(1), vec![]);
        let mut saved = config(&acme, &["acme.test"]);
        saved.client_secret_sealed = old.seal(b"s3cret", &aad);
        store.save_sso_config(&saved).await.unwrap();
        let new = Vault::new(key(2), vec![key(1)]);
        assert_eq!(crate::sso::reseal_secrets(&store, &new).await.unwrap(), 1);
        let sealed = store
            .sso_config(&acme)
            .await
            .unwrap()
            .unwrap()
            .client_secret_sealed;
        assert!(!new.needs_rotation(&sealed));
        assert_eq!(new.open_string(&sealed, &aad).unwrap().as_str(), "s3cret");
        assert_eq!(crate::sso::reseal_secrets(&store, &new).await.unwrap(), 0);
    }

    #[tokio::test]
    async fn an_attempt_is_taken_once() {
        let (store, _dir) = store().await;
        let acme = merchant(&store, "acme", "enterprise").await;
        let now = now_ms();
        let attempt = SsoAttempt {
            state_hash: "h1".into(),
            merchant_id: acme,
            nonce: "n".into(),
            pkce_verifier: "v".into(),
            next_path: "/dashboard".into(),
            created_at: now,
            expires_at: now + 600_000,
        };
        store.insert_sso_attempt(&attempt).await.unwrap();
        assert_eq!(store.take_sso_attempt("h1").await.unwrap(), Some(attempt));
        assert_eq!(store.take_sso_attempt("h1").await.unwrap(), None);
    }
}
