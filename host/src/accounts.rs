//! People and their sessions, without HTTP: sign-up (a merchant and its owner), sign-in with
//! throttling of failures per account and per address, sessions with idle and absolute
//! timeouts, password changes, and invitations into a merchant's team. `web` maps these to
//! pages; `store::users` and `store::sessions` keep them.

use std::net::IpAddr;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::app::App;
use crate::audit::{self, Actor};
use crate::charges::Caller;
use crate::domain::{Email, Environment};
use crate::policy::Role;
use crate::store::sessions::SessionRecord;
use crate::store::users::{InvitationRecord, UserRecord};
use crate::store::{StoreError, now_ms};

/// How long sessions last; operator settings.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// Without a request for this long, a session ends.
    pub idle: Duration,
    /// A session ends this long after sign-in, however active.
    pub absolute: Duration,
    /// Cookies get `Secure` (the dashboard is served over https).
    pub secure_cookies: bool,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            idle: Duration::from_secs(2 * 3600),
            absolute: Duration::from_secs(12 * 3600),
            secure_cookies: false,
        }
    }
}

/// Failed sign-ins: an account is locked after 5 in 15 minutes, an address after 20, each
/// for 15 minutes.
const FAILURE_WINDOW_MS: i64 = 15 * 60 * 1000;
const LOCK_MS: i64 = 15 * 60 * 1000;
const MAX_FAILURES_PER_ACCOUNT: i64 = 5;
const MAX_FAILURES_PER_IP: i64 = 20;
/// `last_seen_at` is written at most this often per session.
const TOUCH_EVERY_MS: i64 = 60 * 1000;
/// Invitation links work for 7 days.
pub const INVITATION_TTL_MS: i64 = 7 * 24 * 3600 * 1000;

pub const MIN_PASSWORD_CHARS: usize = 10;
pub const MAX_PASSWORD_CHARS: usize = 128;
pub const MAX_NAME_CHARS: usize = 100;

/// Why an account operation was refused. Each case is something the person can act on;
/// [`AccountError::code`] names the message the dashboard shows.
#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    #[error("the e-mail address is not valid")]
    EmailInvalid,
    #[error("an account with this e-mail already exists")]
    EmailTaken,
    #[error("the password must have {MIN_PASSWORD_CHARS} to {MAX_PASSWORD_CHARS} characters")]
    PasswordLength,
    #[error("a name is required, up to {MAX_NAME_CHARS} characters")]
    NameInvalid,
    #[error("e-mail or password is wrong")]
    WrongCredentials,
    #[error("the current password is wrong")]
    WrongCurrentPassword,
    #[error("too many failed sign-ins for this account; try again in {minutes} min")]
    AccountLocked { minutes: i64 },
    #[error("too many failed sign-ins from this address; try again in {minutes} min")]
    AddressLocked { minutes: i64 },
    #[error("this account belongs to no merchant any more")]
    NoMembership,
    /// The merchant requires single sign-on for everyone but its owners.
    #[error("this merchant requires signing in with SSO")]
    SsoRequired,
    #[error("this invitation link is not valid: it was used, revoked or never issued")]
    InvitationInvalid,
    #[error("this invitation expired; ask for a new one")]
    InvitationExpired,
    #[error("{0} is already a member")]
    AlreadyMember(String),
    /// The team is as large as the merchant's plan allows.
    #[error(transparent)]
    PlanLimit(#[from] crate::plans::LimitReached),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl AccountError {
    /// The catalog key of the message shown to the person.
    pub fn code(&self) -> &'static str {
        match self {
            AccountError::EmailInvalid => "error.email_invalid",
            AccountError::EmailTaken => "error.email_taken",
            AccountError::PasswordLength => "error.password_length",
            AccountError::NameInvalid => "error.name_invalid",
            AccountError::WrongCredentials => "error.wrong_credentials",
            AccountError::WrongCurrentPassword => "error.wrong_current_password",
            AccountError::AccountLocked { .. } => "error.account_locked",
            AccountError::AddressLocked { .. } => "error.address_locked",
            AccountError::NoMembership => "error.no_membership",
            AccountError::SsoRequired => "sso.error.password_refused",
            AccountError::InvitationInvalid => "error.invitation_invalid",
            AccountError::InvitationExpired => "error.invitation_expired",
            AccountError::AlreadyMember(_) => "error.already_member",
            AccountError::PlanLimit(_) => "error.plan.title",
            AccountError::Store(_) => "error.internal",
        }
    }

    /// Minutes to wait, for the locked cases.
    pub fn minutes(&self) -> Option<i64> {
        match self {
            AccountError::AccountLocked { minutes } | AccountError::AddressLocked { minutes } => {
                Some(*minutes)
            }
            _ => None,
        }
    }
}

/// An e-mail address as the account's key: trimmed and lower-cased.
pub fn account_email(input: &str) -> Result<String, AccountError> {
    Email::parse(input)
        .map(|e| e.as_str().to_lowercase())
        .map_err(|_| AccountError::EmailInvalid)
}

pub fn check_password(password: &str) -> Result<(), AccountError> {
    let n = password.chars().count();
    if (MIN_PASSWORD_CHARS..=MAX_PASSWORD_CHARS).contains(&n) {
        Ok(())
    } else {
        Err(AccountError::PasswordLength)
    }
}

fn check_name(name: &str) -> Result<String, AccountError> {
    let name = name.trim();
    if name.is_empty()
        || name.chars().count() > MAX_NAME_CHARS
        || name.chars().any(char::is_control)
    {
        return Err(AccountError::NameInvalid);
    }
    Ok(name.to_owned())
}

/// Argon2id (the crate's defaults: 19 MiB, 2 passes, OWASP's recommendation), off the async
/// threads: a hash takes tens of milliseconds of CPU.
pub async fn hash_password(password: &str) -> String {
    let password = zeroize::Zeroizing::new(password.to_owned());
    tokio::task::spawn_blocking(move || {
        use argon2::PasswordHasher;
        let salt_bytes: [u8; 16] = rand::random();
        let salt = argon2::password_hash::SaltString::encode_b64(&salt_bytes)
            .expect("16 bytes make a valid salt");
        argon2::Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .expect("argon2 with default parameters hashes any password")
            .to_string()
    })
    .await
    .expect("hashing does not panic")
}

/// Whether `password` matches the stored hash; also off the async threads.
pub async fn verify_password(password: &str, hash: &str) -> bool {
    let password = zeroize::Zeroizing::new(password.to_owned());
    let hash = hash.to_owned();
    tokio::task::spawn_blocking(move || {
        use argon2::PasswordVerifier;
        argon2::password_hash::PasswordHash::new(&hash).is_ok_and(|parsed| {
            argon2::Argon2::default()
                .verify_password(password.as_bytes(), &parsed)
                .is_ok()
        })
    })
    .await
    .unwrap_or(false)
}

/// A hash of nothing anyone knows: unknown e-mails are checked against it so that a sign-in
/// takes as long whether or not the account exists.
static DECOY_HASH: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    use argon2::PasswordHasher;
    let salt = argon2::password_hash::SaltString::encode_b64(&rand::random::<[u8; 16]>())
        .expect("16 bytes make a valid salt");
    argon2::Argon2::default()
        .hash_password(&rand::random::<[u8; 32]>(), &salt)
        .expect("hashing a random password")
        .to_string()
});

/// Hex SHA-256 of a token: sessions and invitations are stored by it.
pub fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// 32 random bytes, URL-safe base64.
pub fn new_token() -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>())
}

/// What sign-up asks for.
pub struct SignUp<'a> {
    pub business_name: &'a str,
    pub name: &'a str,
    pub email: &'a str,
    pub password: &'a str,
}

/// A signed-in session: the cookie's token (only here, never stored) and its row.
pub struct NewSession {
    pub token: String,
    pub record: SessionRecord,
}

/// Creates a merchant and its owner, and signs the owner in.
pub async fn sign_up(
    app: &App,
    form: SignUp<'_>,
    ip: Option<IpAddr>,
) -> Result<NewSession, AccountError> {
    let business = check_name(form.business_name)?;
    let name = check_name(form.name)?;
    let email = account_email(form.email)?;
    check_password(form.password)?;
    let hash = hash_password(form.password).await;
    let (merchant, user) = app
        .store
        .create_merchant_with_owner(&business, &email, &name, &hash)
        .await?
        .ok_or(AccountError::EmailTaken)?;
    let caller = caller_for(&user, &merchant.id, Environment::Test, ip);
    audit::record(
        &app.store,
        &caller,
        "account.sign_up",
        Some(("merchant", &merchant.id)),
        format!("{business} created by {email}"),
    )
    .await?;
    start_session(app, &user, &merchant.id, ip).await
}

/// Checks an e-mail and password, with failures counted per account and per address.
pub async fn sign_in(
    app: &App,
    email: &str,
    password: &str,
    ip: Option<IpAddr>,
) -> Result<NewSession, AccountError> {
    let now = now_ms();
    let minutes = |until: i64| ((until - now) as f64 / 60_000.0).ceil() as i64;
    let ip_key = ip.map(|ip| format!("ip:{ip}"));
    if let Some(key) = &ip_key
        && let Some(until) = app.store.sign_in_locked_until(key, now).await?
    {
        return Err(AccountError::AddressLocked {
            minutes: minutes(until),
        });
    }
    // Malformed addresses count like unknown ones: no hint of which accounts exist.
    let email = account_email(email).unwrap_or_else(|_| email.trim().to_lowercase());
    let account_key = format!("email:{email}");
    if let Some(until) = app.store.sign_in_locked_until(&account_key, now).await? {
        return Err(AccountError::AccountLocked {
            minutes: minutes(until),
        });
    }
    let user = app.store.user_by_email(&email).await?;
    let hash = user
        .as_ref()
        .map_or(DECOY_HASH.as_str(), |u| u.password_hash.as_str());
    let matches = verify_password(password, hash).await;
    let Some(user) = user.filter(|_| matches) else {
        app.store
            .record_sign_in_failure(
                &account_key,
                now,
                FAILURE_WINDOW_MS,
                MAX_FAILURES_PER_ACCOUNT,
                LOCK_MS,
            )
            .await?;
        if let Some(key) = &ip_key {
            app.store
                .record_sign_in_failure(key, now, FAILURE_WINDOW_MS, MAX_FAILURES_PER_IP, LOCK_MS)
                .await?;
        }
        tracing::info!(email = %email, ip = ?ip, "failed dashboard sign-in");
        return Err(AccountError::WrongCredentials);
    };
    app.store.clear_sign_in_failures(&account_key).await?;
    let (merchant_id, role) = app
        .store
        .memberships_of(&user.id)
        .await?
        .into_iter()
        .next()
        .ok_or(AccountError::NoMembership)?;
    if crate::sso::password_refused(app, &merchant_id, role).await? {
        let caller = caller_for(&user, &merchant_id, Environment::Test, ip);
        audit::record(
            &app.store,
            &caller,
            "sso.password_refused",
            None,
            "password sign-in refused: this merchant requires SSO",
        )
        .await?;
        return Err(AccountError::SsoRequired);
    }
    let session = start_session(app, &user, &merchant_id, ip).await?;
    let caller = caller_for(&user, &merchant_id, session.record.environment, ip);
    audit::record(&app.store, &caller, "session.sign_in", None, "signed in").await?;
    Ok(session)
}

/// A new session of `user` at the merchant (after a password or an SSO sign-in).
pub(crate) async fn start_session(
    app: &App,
    user: &UserRecord,
    merchant_id: &str,
    ip: Option<IpAddr>,
) -> Result<NewSession, AccountError> {
    let token = new_token();
    let now = now_ms();
    let record = SessionRecord {
        id: token_hash(&token),
        user_id: user.id.clone(),
        merchant_id: merchant_id.to_owned(),
        csrf_token: new_token(),
        environment: Environment::Test,
        ip: ip.map(|ip| ip.to_string()),
        created_at: now,
        last_seen_at: now,
        expires_at: now + app.config.sessions.absolute.as_millis() as i64,
    };
    app.store.insert_session(&record).await?;
    Ok(NewSession { token, record })
}

/// Whether a session may still be used at `now`: before its absolute end, and used within the
/// idle timeout.
pub fn is_live(session: &SessionRecord, now: i64, config: &SessionConfig) -> bool {
    let idle_ms = config.idle.as_millis() as i64;
    now < session.expires_at && now < session.last_seen_at + idle_ms
}

/// Who a session belongs to, as the dashboard needs it on every request.
#[derive(Debug, Clone)]
pub struct SignedIn {
    pub session: SessionRecord,
    pub user: UserRecord,
    pub role: Role,
    pub merchant_name: String,
    /// The merchant's plan, as of this request.
    pub plan: crate::plans::PlanId,
}

/// The live session behind a cookie's token, if any: not expired, not idle too long, and its
/// user still a member of its merchant.
pub async fn session(app: &App, token: &str) -> Result<Option<SignedIn>, StoreError> {
    let Some(session) = app.store.session(&token_hash(token)).await? else {
        return Ok(None);
    };
    let now = now_ms();
    if !is_live(&session, now, &app.config.sessions) {
        app.store.delete_session(&session.id).await?;
        return Ok(None);
    }
    let Some(role) = app
        .store
        .role_of(&session.merchant_id, &session.user_id)
        .await?
    else {
        app.store.delete_session(&session.id).await?;
        return Ok(None);
    };
    let (Some(user), Some(merchant)) = (
        app.store.user(&session.user_id).await?,
        app.store.merchant(&session.merchant_id).await?,
    ) else {
        return Ok(None);
    };
    if now - session.last_seen_at >= TOUCH_EVERY_MS {
        app.store.touch_session(&session.id, now).await?;
    }
    Ok(Some(SignedIn {
        session,
        user,
        role,
        merchant_name: merchant.name,
        plan: merchant.plan,
    }))
}

pub async fn sign_out(
    app: &App,
    signed_in: &SignedIn,
    ip: Option<IpAddr>,
) -> Result<(), StoreError> {
    app.store.delete_session(&signed_in.session.id).await?;
    audit::record(
        &app.store,
        &signed_in.caller(ip),
        "session.sign_out",
        None,
        "signed out",
    )
    .await
}

/// Changes the password and ends the user's other sessions.
pub async fn change_password(
    app: &App,
    signed_in: &SignedIn,
    current: &str,
    new: &str,
    ip: Option<IpAddr>,
) -> Result<(), AccountError> {
    if !verify_password(current, &signed_in.user.password_hash).await {
        return Err(AccountError::WrongCurrentPassword);
    }
    check_password(new)?;
    let hash = hash_password(new).await;
    app.store
        .set_password_hash(&signed_in.user.id, &hash)
        .await?;
    let ended = app
        .store
        .delete_user_sessions(&signed_in.user.id, &signed_in.session.id)
        .await?;
    audit::record(
        &app.store,
        &signed_in.caller(ip),
        "account.password_change",
        Some(("user", &signed_in.user.id)),
        format!("password changed; {ended} other sessions ended"),
    )
    .await?;
    Ok(())
}

impl SignedIn {
    /// The caller the services see: this person, at this merchant, in the dashboard's
    /// environment.
    pub fn caller(&self, ip: Option<IpAddr>) -> Caller {
        caller_for(
            &self.user,
            &self.session.merchant_id,
            self.session.environment,
            ip,
        )
    }
}

fn caller_for(
    user: &UserRecord,
    merchant_id: &str,
    environment: Environment,
    ip: Option<IpAddr>,
) -> Caller {
    Caller {
        merchant_id: merchant_id.to_owned(),
        environment,
        actor: Actor::User {
            id: user.id.clone(),
            email: user.email.clone(),
        },
        ip,
    }
}

/// An invitation and the token of its link, which exists only here.
pub struct NewInvitation {
    pub record: InvitationRecord,
    pub token: String,
}

/// Invites `email` into the caller's team with `role`.
pub async fn invite(
    app: &App,
    signed_in: &SignedIn,
    email: &str,
    role: Role,
    ip: Option<IpAddr>,
) -> Result<NewInvitation, AccountError> {
    let email = account_email(email)?;
    let merchant_id = &signed_in.session.merchant_id;
    if app
        .store
        .members(merchant_id)
        .await?
        .iter()
        .any(|m| m.email == email)
    {
        return Err(AccountError::AlreadyMember(email));
    }
    let token = new_token();
    let now = now_ms();
    let record = InvitationRecord {
        id: format!("inv_{}", uuid::Uuid::now_v7().simple()),
        merchant_id: merchant_id.clone(),
        email: email.clone(),
        role,
        invited_by: signed_in.user.id.clone(),
        created_at: now,
        expires_at: now + INVITATION_TTL_MS,
        accepted_at: None,
        revoked_at: None,
    };
    app.store
        .insert_invitation(&record, &token_hash(&token))
        .await??;
    audit::record(
        &app.store,
        &signed_in.caller(ip),
        "team.invite",
        Some(("invitation", &record.id)),
        format!("invited {email} as {role}"),
    )
    .await?;
    Ok(NewInvitation { record, token })
}

/// The open invitation behind a link's token.
pub async fn invitation(app: &App, token: &str) -> Result<InvitationRecord, AccountError> {
    let record = app
        .store
        .invitation_by_token_hash(&token_hash(token))
        .await?
        .filter(|i| i.accepted_at.is_none() && i.revoked_at.is_none())
        .ok_or(AccountError::InvitationInvalid)?;
    if record.expires_at <= now_ms() {
        return Err(AccountError::InvitationExpired);
    }
    Ok(record)
}

/// Accepts an invitation: a new account is created with `name` and `password`, or, when the
/// invited address already has one, `password` must be its password. Signs the person in at
/// the inviting merchant.
pub async fn accept_invitation(
    app: &App,
    token: &str,
    name: &str,
    password: &str,
    ip: Option<IpAddr>,
) -> Result<NewSession, AccountError> {
    let invitation = invitation(app, token).await?;
    let existing = app.store.user_by_email(&invitation.email).await?;
    let (user, new_user) = match existing {
        Some(user) => {
            if !verify_password(password, &user.password_hash).await {
                return Err(AccountError::WrongCredentials);
            }
            (user, false)
        }
        None => {
            let name = check_name(name)?;
            check_password(password)?;
            let now = now_ms();
            let user = UserRecord {
                id: format!("usr_{}", uuid::Uuid::now_v7().simple()),
                email: invitation.email.clone(),
                name,
                password_hash: hash_password(password).await,
                locale: None,
                created_at: now,
            };
            (user, true)
        }
    };
    if !app
        .store
        .accept_invitation(&invitation, &user.id, new_user.then_some(&user))
        .await??
    {
        return Err(AccountError::InvitationInvalid);
    }
    let session = start_session(app, &user, &invitation.merchant_id, ip).await?;
    audit::record(
        &app.store,
        &caller_for(&user, &invitation.merchant_id, Environment::Test, ip),
        "team.join",
        Some(("user", &user.id)),
        format!("{} joined as {}", user.email, invitation.role),
    )
    .await?;
    Ok(session)
}

/// Why a team change was refused.
#[derive(Debug, thiserror::Error)]
pub enum TeamError {
    #[error("no such member")]
    NotAMember,
    #[error("the last owner cannot be removed or demoted")]
    LastOwner,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl TeamError {
    pub fn code(&self) -> &'static str {
        match self {
            TeamError::NotAMember => "team.error.not_a_member",
            TeamError::LastOwner => "team.error.last_owner",
            TeamError::Store(_) => "error.internal",
        }
    }
}

/// Gives a member another role, or removes them (`None`); the last owner stays.
pub async fn change_member(
    app: &App,
    signed_in: &SignedIn,
    user_id: &str,
    role: Option<Role>,
    ip: Option<IpAddr>,
) -> Result<(), TeamError> {
    use crate::store::users::MembershipChange;
    let merchant_id = &signed_in.session.merchant_id;
    let email = app
        .store
        .members(merchant_id)
        .await?
        .into_iter()
        .find(|m| m.user_id == user_id)
        .map(|m| m.email)
        .ok_or(TeamError::NotAMember)?;
    match app
        .store
        .change_membership(merchant_id, user_id, role)
        .await?
    {
        MembershipChange::Done => {}
        MembershipChange::NotAMember => return Err(TeamError::NotAMember),
        MembershipChange::LastOwner => return Err(TeamError::LastOwner),
    }
    let (action, summary) = match role {
        Some(role) => ("team.role_change", format!("{email} is now {role}")),
        None => ("team.remove", format!("{email} removed from the team")),
    };
    audit::record(
        &app.store,
        &signed_in.caller(ip),
        action,
        Some(("user", user_id)),
        summary,
    )
    .await?;
    Ok(())
}

/// Cancels an invitation that was not accepted yet; `false` when there is none open.
pub async fn revoke_invitation(
    app: &App,
    signed_in: &SignedIn,
    id: &str,
    ip: Option<IpAddr>,
) -> Result<bool, StoreError> {
    if !app
        .store
        .revoke_invitation(&signed_in.session.merchant_id, id)
        .await?
    {
        return Ok(false);
    }
    audit::record(
        &app.store,
        &signed_in.caller(ip),
        "team.invitation_revoke",
        Some(("invitation", id)),
        "invitation revoked",
    )
    .await?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn passwords_hash_with_argon2id_and_verify() {
        let hash = hash_password("correct horse battery").await;
        assert!(hash.starts_with("$argon2id$v=19$"), "{hash}");
        assert!(verify_password("correct horse battery", &hash).await);
        assert!(!verify_password("correct horse batterY", &hash).await);
        assert!(!verify_password("anything", "not a hash").await);
        assert_ne!(hash, hash_password("correct horse battery").await, "salted");
    }

    #[test]
    fn sessions_end_when_idle_or_at_their_absolute_end() {
        let config = SessionConfig {
            idle: Duration::from_secs(3600),
            absolute: Duration::from_secs(12 * 3600),
            secure_cookies: false,
        };
        let session = SessionRecord {
            id: "h".into(),
            user_id: "usr_1".into(),
            merchant_id: "mer_1".into(),
            csrf_token: "t".into(),
            environment: Environment::Test,
            ip: None,
            created_at: 0,
            last_seen_at: 5_000_000,
            expires_at: 12 * 3_600_000,
        };
        assert!(is_live(&session, 5_000_000 + 3_599_999, &config));
        assert!(
            !is_live(&session, 5_000_000 + 3_600_000, &config),
            "idle for an hour"
        );
        let busy = SessionRecord {
            last_seen_at: 12 * 3_600_000 - 1,
            ..session
        };
        assert!(
            !is_live(&busy, 12 * 3_600_000, &config),
            "past the absolute end"
        );
    }

    #[test]
    fn account_emails_are_lower_cased_and_checked() {
        assert_eq!(
            account_email("  Ana@Loja.COM.br ").unwrap(),
            "ana@loja.com.br"
        );
        assert!(matches!(
            account_email("ana@"),
            Err(AccountError::EmailInvalid)
        ));
        assert!(matches!(account_email(""), Err(AccountError::EmailInvalid)));
    }

    #[test]
    fn passwords_and_names_have_bounds() {
        assert!(check_password("123456789").is_err());
        assert!(check_password("1234567890").is_ok());
        assert!(check_password(&"x".repeat(129)).is_err());
        assert!(check_name("   ").is_err());
        assert!(check_name("Loja\u{7}").is_err());
        assert_eq!(check_name(" Loja da Ana ").unwrap(), "Loja da Ana");
    }
}
