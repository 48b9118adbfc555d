//! People who sign in to the dashboard, their membership (with a role) at merchants, and the
//! invitations that bring new members in.

use sqlx::Row;

use super::{Columns, Store, StoreError, now_ms};
use crate::policy::Role;

#[derive(Debug, Clone)]
pub struct UserRecord {
    pub id: String,
    pub email: String,
    pub name: String,
    pub password_hash: String,
    pub locale: Option<String>,
    pub created_at: i64,
}

/// A member of a merchant's team.
#[derive(Debug, Clone)]
pub struct Member {
    pub user_id: String,
    pub email: String,
    pub name: String,
    pub role: Role,
    pub since: i64,
}

#[derive(Debug, Clone)]
pub struct InvitationRecord {
    pub id: String,
    pub merchant_id: String,
    pub email: String,
    pub role: Role,
    pub invited_by: String,
    pub created_at: i64,
    pub expires_at: i64,
    pub accepted_at: Option<i64>,
    pub revoked_at: Option<i64>,
}

/// Why a membership change was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum MembershipChange {
    Done,
    NotAMember,
    /// The change would leave the merchant without an owner.
    LastOwner,
}

const USER_COLUMNS: &str = "id, email, name, password_hash, locale, created_at";
const INVITATION_COLUMNS: &str = "id, merchant_id, email, role, invited_by, created_at, \
     expires_at, accepted_at, revoked_at";

fn role_of(text: String) -> Result<Role, StoreError> {
    text.parse()
        .map_err(|_| StoreError::Corrupt(format!("role {text:?}")))
}

impl Store {
    /// A merchant, its first user and that user's owner membership, in one transaction.
    /// `None` when the e-mail already has an account.
    pub async fn create_merchant_with_owner(
        &self,
        merchant_name: &str,
        email: &str,
        name: &str,
        password_hash: &str,
    ) -> Result<Option<(super::merchants::Merchant, UserRecord)>, StoreError> {
        let now = now_ms();
        let merchant = super::merchants::Merchant {
            id: format!("mer_{}", uuid::Uuid::now_v7().simple()),
            name: merchant_name.to_owned(),
            created_at: now,
            // New sign-ups start on Free (the column's default).
            plan: crate::plans::PlanId::Free,
        };
        let user = UserRecord {
            id: format!("usr_{}", uuid::Uuid::now_v7().simple()),
            email: email.to_owned(),
            name: name.to_owned(),
            password_hash: password_hash.to_owned(),
            locale: None,
            created_at: now,
        };
        let mut tx = self.pool().begin().await?;
        let inserted = sqlx::query(
            "INSERT INTO users (id, email, name, password_hash, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT (email) DO NOTHING",
        )
        .bind(&user.id)
        .bind(&user.email)
        .bind(&user.name)
        .bind(&user.password_hash)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        if inserted.rows_affected() == 0 {
            return Ok(None);
        }
        sqlx::query("INSERT INTO merchants (id, name, created_at) VALUES ($1, $2, $3)")
            .bind(&merchant.id)
            .bind(&merchant.name)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO memberships (merchant_id, user_id, role, created_at) \
             VALUES ($1, $2, 'owner', $3)",
        )
        .bind(&merchant.id)
        .bind(&user.id)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Some((merchant, user)))
    }

    /// Makes `email` a member of a merchant with `role`: a new user with `name` and
    /// `password_hash`, or the existing one (whose password stays). For operators' CLI. A new
    /// member must fit the merchant's plan; a member's role change always does.
    pub async fn add_member(
        &self,
        merchant_id: &str,
        email: &str,
        name: &str,
        password_hash: &str,
        role: Role,
    ) -> Result<crate::plans::Admission<UserRecord>, StoreError> {
        let now = now_ms();
        let mut tx = self.begin_write().await?;
        sqlx::query(
            "INSERT INTO users (id, email, name, password_hash, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT (email) DO NOTHING",
        )
        .bind(format!("usr_{}", uuid::Uuid::now_v7().simple()))
        .bind(email)
        .bind(name)
        .bind(password_hash)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        let row = sqlx::query(&format!(
            "SELECT {USER_COLUMNS} FROM users WHERE email = $1"
        ))
        .bind(email)
        .fetch_one(&mut *tx)
        .await?;
        let user = user_of(&row)?;
        if !is_member(&mut tx, merchant_id, &user.id).await?
            && let Err(reached) = self
                .admit(
                    &mut tx,
                    merchant_id,
                    crate::domain::Environment::Test,
                    crate::plans::Resource::TeamMembers,
                    now,
                )
                .await?
        {
            return Ok(Err(reached));
        }
        sqlx::query(
            "INSERT INTO memberships (merchant_id, user_id, role, created_at) \
             VALUES ($1, $2, $3, $4) \
             ON CONFLICT (merchant_id, user_id) DO UPDATE SET role = excluded.role",
        )
        .bind(merchant_id)
        .bind(&user.id)
        .bind(role.as_str())
        .bind(now)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Ok(user))
    }

    pub async fn user_by_email(&self, email: &str) -> Result<Option<UserRecord>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {USER_COLUMNS} FROM users WHERE email = $1"
        ))
        .bind(email)
        .fetch_optional(self.pool())
        .await?;
        row.as_ref().map(user_of).transpose()
    }

    pub async fn user(&self, id: &str) -> Result<Option<UserRecord>, StoreError> {
        let row = sqlx::query(&format!("SELECT {USER_COLUMNS} FROM users WHERE id = $1"))
            .bind(id)
            .fetch_optional(self.pool())
            .await?;
        row.as_ref().map(user_of).transpose()
    }

    pub async fn set_password_hash(&self, user_id: &str, hash: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE users SET password_hash = $1, updated_at = $2 WHERE id = $3")
            .bind(hash)
            .bind(now_ms())
            .bind(user_id)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    pub async fn set_user_locale(&self, user_id: &str, locale: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE users SET locale = $1, updated_at = $2 WHERE id = $3")
            .bind(locale)
            .bind(now_ms())
            .bind(user_id)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// The user's role at the merchant, if they are a member.
    pub async fn role_of(
        &self,
        merchant_id: &str,
        user_id: &str,
    ) -> Result<Option<Role>, StoreError> {
        let row =
            sqlx::query("SELECT role FROM memberships WHERE merchant_id = $1 AND user_id = $2")
                .bind(merchant_id)
                .bind(user_id)
                .fetch_optional(self.pool())
                .await?;
        row.map(|r| role_of(r.get(0))).transpose()
    }

    /// The merchants a user belongs to, oldest membership first.
    pub async fn memberships_of(&self, user_id: &str) -> Result<Vec<(String, Role)>, StoreError> {
        let rows = sqlx::query(
            "SELECT merchant_id, role FROM memberships WHERE user_id = $1 \
             ORDER BY created_at, merchant_id",
        )
        .bind(user_id)
        .fetch_all(self.pool())
        .await?;
        rows.into_iter()
            .map(|r| Ok((r.get(0), role_of(r.get(1))?)))
            .collect()
    }

    pub async fn members(&self, merchant_id: &str) -> Result<Vec<Member>, StoreError> {
        let rows = sqlx::query(
            "SELECT u.id, u.email, u.name, m.role, m.created_at FROM memberships m \
             JOIN users u ON u.id = m.user_id WHERE m.merchant_id = $1 \
             ORDER BY m.created_at, u.email",
        )
        .bind(merchant_id)
        .fetch_all(self.pool())
        .await?;
        rows.into_iter()
            .map(|r| {
                Ok(Member {
                    user_id: r.get(0),
                    email: r.get(1),
                    name: r.get(2),
                    role: role_of(r.get(3))?,
                    since: r.get(4),
                })
            })
            .collect()
    }

    /// Changes a member's role, or removes them (`role: None`), unless that leaves no owner.
    /// The owner count is read and changed in one statement, so two owners demoting each
    /// other at once cannot both succeed.
    pub async fn change_membership(
        &self,
        merchant_id: &str,
        user_id: &str,
        role: Option<Role>,
    ) -> Result<MembershipChange, StoreError> {
        // Allowed when the member is not an owner, stays an owner, or another owner remains.
        let keeps_an_owner = "(role <> 'owner' OR $3 = 'owner' OR (SELECT COUNT(*) FROM \
             memberships o WHERE o.merchant_id = $1 AND o.role = 'owner' AND o.user_id <> $2) > 0)";
        let mut tx = self.pool().begin().await?;
        let done = match role {
            Some(role) => {
                sqlx::query(&format!(
                    "UPDATE memberships SET role = $3 WHERE merchant_id = $1 AND user_id = $2 \
                     AND {keeps_an_owner}"
                ))
                .bind(merchant_id)
                .bind(user_id)
                .bind(role.as_str())
                .execute(&mut *tx)
                .await?
            }
            None => {
                sqlx::query(&format!(
                    "DELETE FROM memberships WHERE merchant_id = $1 AND user_id = $2 \
                     AND {keeps_an_owner}"
                ))
                .bind(merchant_id)
                .bind(user_id)
                .bind("")
                .execute(&mut *tx)
                .await?
            }
        };
        if done.rows_affected() == 1 {
            if role.is_none() {
                sqlx::query("DELETE FROM sessions WHERE merchant_id = $1 AND user_id = $2")
                    .bind(merchant_id)
                    .bind(user_id)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            return Ok(MembershipChange::Done);
        }
        let exists =
            sqlx::query("SELECT 1 FROM memberships WHERE merchant_id = $1 AND user_id = $2")
                .bind(merchant_id)
                .bind(user_id)
                .fetch_optional(&mut *tx)
                .await?
                .is_some();
        Ok(if exists {
            MembershipChange::LastOwner
        } else {
            MembershipChange::NotAMember
        })
    }

    /// Sets a member's role from their identity provider's claims; an owner keeps theirs.
    /// `true` when the role changed.
    pub async fn set_role_by_sso(
        &self,
        merchant_id: &str,
        user_id: &str,
        role: Role,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE memberships SET role = $3 WHERE merchant_id = $1 AND user_id = $2 \
             AND role <> 'owner' AND role <> $3",
        )
        .bind(merchant_id)
        .bind(user_id)
        .bind(role.as_str())
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Writes an invitation, if the team has room for one more person in the merchant's plan
    /// (members and open invitations count).
    pub async fn insert_invitation(
        &self,
        invitation: &InvitationRecord,
        token_hash: &str,
    ) -> Result<crate::plans::Admission<()>, StoreError> {
        let mut tx = self.begin_write().await?;
        if let Err(reached) = self
            .admit(
                &mut tx,
                &invitation.merchant_id,
                crate::domain::Environment::Test,
                crate::plans::Resource::TeamMembers,
                invitation.created_at,
            )
            .await?
        {
            return Ok(Err(reached));
        }
        sqlx::query(&format!(
            "INSERT INTO invitations ({INVITATION_COLUMNS}, token_hash) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, NULL, NULL, $8)"
        ))
        .bind(&invitation.id)
        .bind(&invitation.merchant_id)
        .bind(&invitation.email)
        .bind(invitation.role.as_str())
        .bind(&invitation.invited_by)
        .bind(invitation.created_at)
        .bind(invitation.expires_at)
        .bind(token_hash)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Ok(()))
    }

    pub async fn invitation_by_token_hash(
        &self,
        token_hash: &str,
    ) -> Result<Option<InvitationRecord>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {INVITATION_COLUMNS} FROM invitations WHERE token_hash = $1"
        ))
        .bind(token_hash)
        .fetch_optional(self.pool())
        .await?;
        row.as_ref().map(invitation_of).transpose()
    }

    /// Invitations neither accepted nor revoked, newest first (expired ones included: the team
    /// page says they expired).
    pub async fn open_invitations(
        &self,
        merchant_id: &str,
    ) -> Result<Vec<InvitationRecord>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {INVITATION_COLUMNS} FROM invitations WHERE merchant_id = $1 \
             AND accepted_at IS NULL AND revoked_at IS NULL ORDER BY created_at DESC"
        ))
        .bind(merchant_id)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(invitation_of).collect()
    }

    pub async fn revoke_invitation(&self, merchant_id: &str, id: &str) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE invitations SET revoked_at = $1 WHERE merchant_id = $2 AND id = $3 \
             AND accepted_at IS NULL AND revoked_at IS NULL",
        )
        .bind(now_ms())
        .bind(merchant_id)
        .bind(id)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Accepts an open, unexpired invitation for `user_id` (an existing account) or for a new
    /// account (`new_user`), in one transaction. `false` when the invitation was used, revoked
    /// or expired in the meantime; refused when the merchant's plan has no room for one more
    /// person any longer (a downgrade since the invitation).
    pub async fn accept_invitation(
        &self,
        invitation: &InvitationRecord,
        user_id: &str,
        new_user: Option<&UserRecord>,
    ) -> Result<crate::plans::Admission<bool>, StoreError> {
        let now = now_ms();
        let mut tx = self.begin_write().await?;
        if let Some(user) = new_user {
            sqlx::query(
                "INSERT INTO users (id, email, name, password_hash, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $5)",
            )
            .bind(&user.id)
            .bind(&user.email)
            .bind(&user.name)
            .bind(&user.password_hash)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        }
        let taken = sqlx::query(
            "UPDATE invitations SET accepted_at = $1, accepted_by = $2 WHERE id = $3 \
             AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > $1",
        )
        .bind(now)
        .bind(user_id)
        .bind(&invitation.id)
        .execute(&mut *tx)
        .await?;
        if taken.rows_affected() == 0 {
            return Ok(Ok(false));
        }
        // Counted with this invitation accepted: the members and the other open invitations.
        if !is_member(&mut tx, &invitation.merchant_id, user_id).await?
            && let Err(reached) = self
                .admit(
                    &mut tx,
                    &invitation.merchant_id,
                    crate::domain::Environment::Test,
                    crate::plans::Resource::TeamMembers,
                    now,
                )
                .await?
        {
            return Ok(Err(reached));
        }
        sqlx::query(
            "INSERT INTO memberships (merchant_id, user_id, role, created_at) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (merchant_id, user_id) DO NOTHING",
        )
        .bind(&invitation.merchant_id)
        .bind(user_id)
        .bind(invitation.role.as_str())
        .bind(now)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Ok(true))
    }
}

/// Whether `user_id` is a member of the merchant already (a role change, not a new person).
async fn is_member(
    tx: &mut sqlx::AnyConnection,
    merchant_id: &str,
    user_id: &str,
) -> Result<bool, StoreError> {
    Ok(
        sqlx::query("SELECT 1 FROM memberships WHERE merchant_id = $1 AND user_id = $2")
            .bind(merchant_id)
            .bind(user_id)
            .fetch_optional(&mut *tx)
            .await?
            .is_some(),
    )
}

fn user_of(r: &sqlx::any::AnyRow) -> Result<UserRecord, StoreError> {
    Ok(UserRecord {
        id: r.col("id")?,
        email: r.col("email")?,
        name: r.col("name")?,
        password_hash: r.col("password_hash")?,
        locale: r.col("locale")?,
        created_at: r.col("created_at")?,
    })
}

fn invitation_of(r: &sqlx::any::AnyRow) -> Result<InvitationRecord, StoreError> {
    Ok(InvitationRecord {
        id: r.col("id")?,
        merchant_id: r.col("merchant_id")?,
        email: r.col("email")?,
        role: role_of(r.col("role")?)?,
        invited_by: r.col("invited_by")?,
        created_at: r.col("created_at")?,
        expires_at: r.col("expires_at")?,
        accepted_at: r.col("accepted_at")?,
        revoked_at: r.col("revoked_at")?,
    })
}
