//! Single sign-on for the dashboard with OpenID Connect, without HTTP: the owner's settings
//! (parsed at the edge into [`Settings`], checked against the provider's discovery document on
//! save, the client secret sealed by the vault), the sign-in (authorization code flow with
//! PKCE, state and nonce; the state's hash, nonce and verifier kept in the database until the
//! provider sends the person back, the state itself in the browser's short-lived cookie), the
//! person found or created just in time with the default or a mapped role, and the rule that
//! can refuse password sign-in to everyone but the owners. Enterprise plan only.
//!
//! [`oidc`] talks to the provider; `store::sso` keeps the settings and the attempts;
//! `web::sso` maps all of it to pages. Every configuration change and every sign-in, done or
//! refused, goes to the audit log (a refusal before the merchant is known — an e-mail domain
//! no merchant has, a callback without its cookie — only to the gateway's log).

pub mod oidc;

use std::net::IpAddr;

use zeroize::Zeroizing;

use crate::accounts::{self, NewSession, SignedIn};
use crate::app::App;
use crate::audit::{self, Actor};
use crate::charges::Caller;
use crate::domain::Environment;
use crate::plans::{self, LimitReached, PlanId, Resource};
use crate::policy::Role;
use crate::store::sso::{RoleRule, SaveSso, SsoAttempt, SsoConfigRecord};
use crate::store::users::UserRecord;
use crate::store::{StoreError, now_ms};
use crate::vault::{Aad, VaultError};

/// Where the provider sends people back; register `{base_url}` + this at the provider.
pub const CALLBACK_PATH: &str = "/dashboard/sso/callback";
/// A sign-in must come back from the provider within 10 minutes.
pub const ATTEMPT_TTL_MS: i64 = 10 * 60 * 1000;
/// The password hash of people created by SSO: not a PHC string, so no password matches it.
const NO_PASSWORD: &str = "!sso";
const MAX_DOMAINS: usize = 50;
const MAX_RULES: usize = 50;
const MAX_TEXT: usize = 255;

/// Why a single sign-on step was refused. Each case says what happened; `web::sso` words it
/// with what to do.
#[derive(Debug, thiserror::Error)]
pub enum SsoError {
    #[error("the issuer URL must be an https address, like https://login.example.com")]
    IssuerInvalid,
    #[error("the client ID is required (up to {MAX_TEXT} characters)")]
    ClientIdInvalid,
    #[error("the client secret is required")]
    SecretMissing,
    #[error("give at least one e-mail domain")]
    DomainsMissing,
    #[error("{0:?} is not an e-mail domain like example.com")]
    DomainInvalid(String),
    #[error("at most {MAX_DOMAINS} e-mail domains")]
    TooManyDomains,
    #[error("the domain {0} already signs in with another merchant's identity provider")]
    DomainTaken(String),
    #[error("the default role must be manager, cashier or read-only")]
    RoleInvalid,
    #[error("the claim name may hold letters, digits and _ - . : / (up to 100)")]
    ClaimInvalid,
    #[error("the role mapping line {0:?} must read `value = role` (manager, cashier or read_only)")]
    MappingInvalid(String),
    #[error("a role mapping needs the name of the claim it reads")]
    MappingWithoutClaim,
    #[error(transparent)]
    Provider(#[from] oidc::OidcError),
    #[error("{0:?} is not an e-mail address")]
    EmailInvalid(String),
    #[error("no merchant signs in with SSO for {0}")]
    UnknownDomain(String),
    #[error("this merchant has no single sign-on")]
    NotConfigured,
    #[error(transparent)]
    Plan(LimitReached),
    #[error("the sign-in did not start in this browser (its state does not match)")]
    StateMismatch,
    #[error("the sign-in took longer than 10 minutes or was already used")]
    AttemptExpired,
    #[error("the identity provider's sign-in was cancelled or consent was denied")]
    Denied,
    #[error("the identity provider refused the sign-in: {0}")]
    ProviderRefused(String),
    #[error("the identity provider sent no code")]
    CodeMissing,
    #[error("the ID token has no e-mail address")]
    EmailMissing,
    #[error("the identity provider has not verified {0}")]
    EmailUnverified(String),
    #[error("{0} is not in one of the e-mail domains this merchant signs in with SSO")]
    DomainNotAllowed(String),
    #[error("{0} has a pixgw account that is not on this merchant's team")]
    NotAMember(String),
    #[error("the client secret cannot be opened: {0}")]
    Vault(#[from] VaultError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The settings form as typed.
#[derive(Debug, Default, Clone)]
pub struct SettingsForm {
    pub issuer_url: String,
    pub client_id: String,
    /// Empty keeps the saved secret.
    pub client_secret: Zeroizing<String>,
    /// Separated by commas, spaces or lines.
    pub domains: String,
    pub default_role: String,
    pub role_claim: String,
    /// One `value = role` a line.
    pub role_mapping: String,
    pub require_sso: bool,
}

/// Settings that parsed: every value is one the gateway can use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub issuer_url: String,
    pub client_id: String,
    /// `None`: keep the saved one.
    pub client_secret: Option<Zeroizing<String>>,
    /// Lower-case, sorted, without repeats.
    pub domains: Vec<String>,
    pub default_role: Role,
    pub role_claim: Option<String>,
    pub role_mapping: Vec<RoleRule>,
    pub require_sso: bool,
}

/// The roles SSO may give: never owner (owners are named by owners, on the team page).
fn member_role(text: &str) -> Option<Role> {
    text.trim().parse().ok().filter(|role| *role != Role::Owner)
}

fn short_text(text: &str, max: usize) -> Option<String> {
    let text = text.trim();
    (!text.is_empty() && text.chars().count() <= max && !text.chars().any(char::is_control))
        .then(|| text.to_owned())
}

/// An e-mail domain, lower-cased: labels of letters, digits and inner hyphens, at least two.
pub fn parse_domain(text: &str) -> Option<String> {
    let domain = text.trim().trim_start_matches('@').to_ascii_lowercase();
    let labels: Vec<&str> = domain.split('.').collect();
    let label_ok = |l: &&str| {
        (1..=63).contains(&l.len())
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    (domain.len() <= 253 && labels.len() >= 2 && labels.iter().all(label_ok)).then_some(domain)
}

impl Settings {
    /// Parses the form; the first problem found is the error.
    pub fn parse(form: &SettingsForm) -> Result<Settings, SsoError> {
        let issuer_url = form.issuer_url.trim();
        match url::Url::parse(issuer_url) {
            Ok(url)
                if url.scheme() == "https"
                    && url.host().is_some()
                    && url.query().is_none()
                    && url.fragment().is_none()
                    && issuer_url.len() <= MAX_TEXT => {}
            _ => return Err(SsoError::IssuerInvalid),
        }
        let client_id = short_text(&form.client_id, MAX_TEXT).ok_or(SsoError::ClientIdInvalid)?;
        let secret = form.client_secret.trim();
        let client_secret = (!secret.is_empty()).then(|| Zeroizing::new(secret.to_owned()));
        let mut domains = Vec::new();
        for text in form
            .domains
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|t| !t.is_empty())
        {
            domains.push(parse_domain(text).ok_or_else(|| SsoError::DomainInvalid(text.into()))?);
        }
        domains.sort();
        domains.dedup();
        if domains.is_empty() {
            return Err(SsoError::DomainsMissing);
        }
        if domains.len() > MAX_DOMAINS {
            return Err(SsoError::TooManyDomains);
        }
        let default_role = member_role(&form.default_role).ok_or(SsoError::RoleInvalid)?;
        let claim = form.role_claim.trim();
        let role_claim = if claim.is_empty() {
            None
        } else if claim.len() <= 100
            && claim
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-.:/".contains(&b))
        {
            Some(claim.to_owned())
        } else {
            return Err(SsoError::ClaimInvalid);
        };
        let mut role_mapping = Vec::new();
        for line in form
            .role_mapping
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
        {
            let invalid = || SsoError::MappingInvalid(line.chars().take(80).collect());
            let (value, role) = line.rsplit_once('=').ok_or_else(invalid)?;
            let value = short_text(value, MAX_TEXT).ok_or_else(invalid)?;
            let role = member_role(role).ok_or_else(invalid)?;
            role_mapping.push(RoleRule { value, role });
        }
        if role_mapping.len() > MAX_RULES {
            return Err(SsoError::MappingInvalid(format!(
                "more than {MAX_RULES} lines"
            )));
        }
        if !role_mapping.is_empty() && role_claim.is_none() {
            return Err(SsoError::MappingWithoutClaim);
        }
        Ok(Settings {
            issuer_url: issuer_url.to_owned(),
            client_id,
            client_secret,
            domains,
            default_role,
            role_claim,
            role_mapping,
            require_sso: form.require_sso,
        })
    }
}

/// The mapping as the form shows it: `value = role`, a line each.
pub fn mapping_text(rules: &[RoleRule]) -> String {
    rules
        .iter()
        .map(|r| format!("{} = {}", r.value, r.role))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The role a person gets at their first sign-in: the first rule whose value the claim holds
/// (a string, or a list of them), else the default.
pub fn role_for(
    config: &SsoConfigRecord,
    claims: &serde_json::Map<String, serde_json::Value>,
) -> Role {
    let values: Vec<String> = match config.role_claim.as_ref().and_then(|c| claims.get(c)) {
        Some(serde_json::Value::Array(items)) => items.iter().filter_map(claim_text).collect(),
        Some(value) => claim_text(value).into_iter().collect(),
        None => Vec::new(),
    };
    config
        .role_mapping
        .iter()
        .find(|rule| values.contains(&rule.value))
        .map_or(config.default_role, |rule| rule.role)
}

fn claim_text(value: &serde_json::Value) -> Option<String> {
    match value {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The callback URL to register at the provider.
pub fn redirect_uri(app: &App) -> String {
    format!("{}{CALLBACK_PATH}", app.config.base_url)
}

/// The address employees can bookmark to sign in with the merchant's provider.
pub fn sign_in_link(app: &App, merchant_id: &str) -> String {
    format!("{}/dashboard/sso/{merchant_id}", app.config.base_url)
}

fn client_secret_aad(merchant_id: &str) -> Aad {
    Aad::new("sso_configs", merchant_id, "client_secret")
}

fn refused_by_plan(plan: PlanId) -> Option<LimitReached> {
    (!plans::allows_sso(plan)).then(|| LimitReached::feature(plan, Resource::Sso))
}

/// Saves the owner's settings: the plan must include SSO, the provider must answer discovery
/// as the issuer typed, the domains must be no other merchant's.
pub async fn save(
    app: &App,
    signed_in: &SignedIn,
    settings: Settings,
    ip: Option<IpAddr>,
) -> Result<(), SsoError> {
    if let Some(reached) = refused_by_plan(signed_in.plan) {
        return Err(SsoError::Plan(reached));
    }
    let merchant_id = &signed_in.session.merchant_id;
    let existing = app.store.sso_config(merchant_id).await?;
    let sealed = match (&settings.client_secret, &existing) {
        (Some(secret), _) => app
            .vault
            .seal(secret.as_bytes(), &client_secret_aad(merchant_id)),
        (None, Some(saved)) => saved.client_secret_sealed.clone(),
        (None, None) => return Err(SsoError::SecretMissing),
    };
    oidc::discover(
        &settings.issuer_url,
        &app.runtime.config().trusted_ca_pem,
        app.config.delivery.destinations,
    )
    .await?;
    let now = now_ms();
    let record = SsoConfigRecord {
        merchant_id: merchant_id.clone(),
        issuer_url: settings.issuer_url,
        client_id: settings.client_id,
        client_secret_sealed: sealed,
        default_role: settings.default_role,
        role_claim: settings.role_claim,
        role_mapping: settings.role_mapping,
        require_sso: settings.require_sso,
        domains: settings.domains,
        created_at: existing.as_ref().map_or(now, |e| e.created_at),
        updated_at: now,
    };
    match app.store.save_sso_config(&record).await? {
        SaveSso::Saved => {}
        SaveSso::DomainTaken(domain) => return Err(SsoError::DomainTaken(domain)),
        SaveSso::Plan(reached) => return Err(SsoError::Plan(reached)),
    }
    let mut summary = format!(
        "issuer {}, client {}, domains {}; new members are {}",
        record.issuer_url,
        record.client_id,
        record.domains.join(", "),
        record.default_role
    );
    if let Some(claim) = &record.role_claim {
        summary.push_str(&format!(
            "; {} role rules on the claim {claim}",
            record.role_mapping.len()
        ));
    }
    if record.require_sso {
        // Password sign-in is refused from now on: sessions it opened earlier end too.
        let ended = app.store.end_password_sessions(merchant_id).await?;
        summary.push_str(&format!(
            "; SSO required for everyone but the owners (password sessions ended: {ended})"
        ));
    } else {
        summary.push_str("; password sign-in allowed");
    }
    if settings.client_secret.is_some() {
        summary.push_str("; client secret set");
    }
    audit::record(
        &app.store,
        &signed_in.caller(ip),
        "sso.configure",
        Some(("merchant", merchant_id)),
        summary,
    )
    .await?;
    Ok(())
}

/// Turns single sign-on off; `false` when it was not on.
pub async fn remove(app: &App, signed_in: &SignedIn, ip: Option<IpAddr>) -> Result<bool, SsoError> {
    let merchant_id = &signed_in.session.merchant_id;
    if !app.store.delete_sso_config(merchant_id).await? {
        return Ok(false);
    }
    audit::record(
        &app.store,
        &signed_in.caller(ip),
        "sso.remove",
        Some(("merchant", merchant_id)),
        "single sign-on removed; everyone signs in with a password",
    )
    .await?;
    Ok(true)
}

/// Re-encrypts every merchant's client secret that is not under the vault's current key (for
/// `pixgw vault rotate`); a secret the owner replaced meanwhile is left as saved, already under
/// the current key. Returns how many were re-encrypted.
pub async fn reseal_secrets(
    store: &crate::store::Store,
    vault: &crate::vault::Vault,
) -> Result<usize, SsoError> {
    let mut resealed = 0;
    for (merchant_id, sealed) in store.sso_sealed_secrets().await? {
        if !vault.needs_rotation(&sealed) {
            continue;
        }
        let new = vault.reseal(&sealed, &client_secret_aad(&merchant_id))?;
        if store.reseal_sso_secret(&merchant_id, &sealed, &new).await? {
            resealed += 1;
        }
    }
    Ok(resealed)
}

/// Whether password sign-in is refused to this member: their merchant requires SSO (and its
/// plan still includes it) and they are not an owner.
pub async fn password_refused(
    app: &App,
    merchant_id: &str,
    role: Role,
) -> Result<bool, StoreError> {
    if role == Role::Owner {
        return Ok(false);
    }
    let Some(config) = app.store.sso_config(merchant_id).await? else {
        return Ok(false);
    };
    if !config.require_sso {
        return Ok(false);
    }
    let plan = app.store.merchant(merchant_id).await?.map(|m| m.plan);
    Ok(plan.is_some_and(plans::allows_sso))
}

/// The merchant whose provider signs `email` in, by its domain.
pub async fn merchant_for_email(app: &App, email: &str) -> Result<String, SsoError> {
    let email =
        accounts::account_email(email).map_err(|_| SsoError::EmailInvalid(email.trim().into()))?;
    let domain = email.rsplit_once('@').map(|(_, d)| d).unwrap_or_default();
    app.store
        .sso_merchant_for_domain(domain)
        .await?
        .ok_or_else(|| SsoError::UnknownDomain(domain.to_owned()))
}

/// A sign-in sent to the provider: where to send the browser, and the state its cookie keeps.
pub struct Started {
    pub url: String,
    pub state: String,
}

/// Starts a sign-in with the merchant's provider; `next` is the dashboard path to open after.
pub async fn begin(app: &App, merchant_id: &str, next: &str) -> Result<Started, SsoError> {
    let config = app
        .store
        .sso_config(merchant_id)
        .await?
        .ok_or(SsoError::NotConfigured)?;
    let merchant = app
        .store
        .merchant(merchant_id)
        .await?
        .ok_or(SsoError::NotConfigured)?;
    if let Some(reached) = refused_by_plan(merchant.plan) {
        return Err(SsoError::Plan(reached));
    }
    let provider = oidc::discover(
        &config.issuer_url,
        &app.runtime.config().trusted_ca_pem,
        app.config.delivery.destinations,
    )
    .await?;
    let authorization = oidc::authorize(&provider, &config.client_id, &redirect_uri(app))?;
    let now = now_ms();
    app.store
        .insert_sso_attempt(&SsoAttempt {
            state_hash: accounts::token_hash(&authorization.state),
            merchant_id: merchant_id.to_owned(),
            nonce: authorization.nonce,
            pkce_verifier: authorization.pkce_verifier,
            next_path: next.to_owned(),
            created_at: now,
            expires_at: now + ATTEMPT_TTL_MS,
        })
        .await?;
    Ok(Started {
        url: authorization.url,
        state: authorization.state,
    })
}

/// What the provider sent back on the callback's query.
#[derive(Debug, Default, Clone, serde::Deserialize)]
#[serde(default)]
pub struct Callback {
    pub state: String,
    pub code: String,
    pub error: String,
    pub error_description: String,
}

/// A sign-in that came back: the session, and the dashboard path to open.
pub struct SignedInWithSso {
    pub session: NewSession,
    pub next: String,
}

/// Finishes a sign-in: the browser's state must be the one sent, the attempt fresh, the code
/// good, the ID token valid, the e-mail in the merchant's domains; the person is then found,
/// or created with the default or mapped role, and signed in. Refusals of a known merchant's
/// sign-in are in its audit log.
pub async fn finish(
    app: &App,
    cookie_state: Option<&str>,
    callback: &Callback,
    ip: Option<IpAddr>,
) -> Result<SignedInWithSso, SsoError> {
    let Some(cookie_state) = cookie_state.filter(|s| !s.is_empty()) else {
        tracing::warn!(ip = ?ip, "SSO callback without the browser's state cookie");
        return Err(SsoError::StateMismatch);
    };
    let Some(attempt) = app
        .store
        .take_sso_attempt(&accounts::token_hash(cookie_state))
        .await?
    else {
        return Err(SsoError::AttemptExpired);
    };
    let merchant_id = attempt.merchant_id.clone();
    match complete(app, cookie_state, attempt, callback, ip).await {
        Ok(done) => Ok(done),
        Err((email, error)) => {
            if !matches!(error, SsoError::Store(_)) {
                let who = email.as_deref().unwrap_or("someone");
                let caller = Caller {
                    merchant_id: merchant_id.clone(),
                    environment: Environment::Test,
                    actor: Actor::System,
                    ip,
                };
                audit::record(
                    &app.store,
                    &caller,
                    "sso.sign_in_refused",
                    None,
                    format!("SSO sign-in of {who} refused: {error}"),
                )
                .await?;
            }
            tracing::info!(merchant = %merchant_id, error = %error, "SSO sign-in refused");
            Err(error)
        }
    }
}

/// The steps after the attempt is known; an error carries the e-mail when the token gave one.
async fn complete(
    app: &App,
    cookie_state: &str,
    attempt: SsoAttempt,
    callback: &Callback,
    ip: Option<IpAddr>,
) -> Result<SignedInWithSso, (Option<String>, SsoError)> {
    use subtle::ConstantTimeEq;
    let nobody = |e: SsoError| (None, e);
    let same_state = callback.state.len() == cookie_state.len()
        && bool::from(callback.state.as_bytes().ct_eq(cookie_state.as_bytes()));
    if !same_state {
        return Err(nobody(SsoError::StateMismatch));
    }
    if attempt.expires_at <= now_ms() {
        return Err(nobody(SsoError::AttemptExpired));
    }
    match callback.error.as_str() {
        "" => {}
        "access_denied" => return Err(nobody(SsoError::Denied)),
        error => {
            let mut detail: String = error.chars().take(100).collect();
            if !callback.error_description.is_empty() {
                detail.push_str(": ");
                detail.extend(callback.error_description.chars().take(300));
            }
            return Err(nobody(SsoError::ProviderRefused(detail)));
        }
    }
    if callback.code.is_empty() {
        return Err(nobody(SsoError::CodeMissing));
    }
    let merchant_id = attempt.merchant_id.as_str();
    let config = app
        .store
        .sso_config(merchant_id)
        .await
        .map_err(|e| nobody(e.into()))?
        .ok_or(nobody(SsoError::NotConfigured))?;
    let plan = app
        .store
        .merchant(merchant_id)
        .await
        .map_err(|e| nobody(e.into()))?
        .map_or(PlanId::Free, |m| m.plan);
    if let Some(reached) = refused_by_plan(plan) {
        return Err(nobody(SsoError::Plan(reached)));
    }
    let secret = app
        .vault
        .open_string(
            &config.client_secret_sealed,
            &client_secret_aad(merchant_id),
        )
        .map_err(|e| nobody(e.into()))?;
    let provider = oidc::discover(
        &config.issuer_url,
        &app.runtime.config().trusted_ca_pem,
        app.config.delivery.destinations,
    )
    .await
    .map_err(|e| nobody(e.into()))?;
    let identity = oidc::exchange(
        &provider,
        oidc::Exchange {
            client_id: &config.client_id,
            client_secret: &secret,
            redirect_uri: &redirect_uri(app),
            code: &callback.code,
            pkce_verifier: &attempt.pkce_verifier,
            nonce: &attempt.nonce,
        },
    )
    .await
    .map_err(|e| nobody(e.into()))?;
    let raw_email = identity
        .email
        .clone()
        .ok_or(nobody(SsoError::EmailMissing))?;
    let email = accounts::account_email(&raw_email).map_err(|_| {
        (
            Some(raw_email.clone()),
            SsoError::EmailInvalid(raw_email.clone()),
        )
    })?;
    let with_email = |e: SsoError| (Some(email.clone()), e);
    if identity.email_verified == Some(false) {
        return Err(with_email(SsoError::EmailUnverified(email.clone())));
    }
    let domain = email.rsplit_once('@').map(|(_, d)| d).unwrap_or_default();
    if !config.domains.iter().any(|d| d == domain) {
        return Err(with_email(SsoError::DomainNotAllowed(email.clone())));
    }
    let (user, joined) = member(app, &config, &email, &identity)
        .await
        .map_err(with_email)?;
    let session = accounts::start_session(app, &user, merchant_id, ip)
        .await
        .map_err(|e| match e {
            accounts::AccountError::Store(e) => with_email(e.into()),
            other => with_email(SsoError::Store(StoreError::Corrupt(other.to_string()))),
        })?;
    app.store
        .mark_sso_session(&session.record.id)
        .await
        .map_err(|e| with_email(e.into()))?;
    let caller = Caller {
        merchant_id: merchant_id.to_owned(),
        environment: session.record.environment,
        actor: Actor::User {
            id: user.id.clone(),
            email: user.email.clone(),
        },
        ip,
    };
    let joined = match joined {
        Joined::Created(role) => Some((
            "sso.member_created",
            format!("{email} joined as {role} at their first SSO sign-in"),
        )),
        Joined::Invited(role) => Some((
            "team.join",
            format!("{email} joined as {role}, accepting an invitation with SSO"),
        )),
        Joined::RoleSet(role) => Some((
            "sso.role_set",
            format!("{email} is {role} by the role rules, at an SSO sign-in"),
        )),
        Joined::AsBefore => None,
    };
    if let Some((action, summary)) = joined {
        audit::record(
            &app.store,
            &caller,
            action,
            Some(("user", &user.id)),
            summary,
        )
        .await
        .map_err(|e| with_email(e.into()))?;
    }
    audit::record(
        &app.store,
        &caller,
        "sso.sign_in",
        None,
        format!(
            "signed in with SSO ({}, subject {})",
            config.issuer_url, identity.subject
        ),
    )
    .await
    .map_err(|e| with_email(e.into()))?;
    Ok(SignedInWithSso {
        session,
        next: attempt.next_path,
    })
}

/// How the person behind an SSO sign-in is on the team.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Joined {
    /// No account yet: made now, with the mapped or default role.
    Created(Role),
    /// An account not on the team, with an open invitation to it: accepted now, the provider
    /// having vouched for the invited address (an account made by SSO has no password to give).
    Invited(Role),
    /// On the team; the role rules gave them another role than they had.
    RoleSet(Role),
    /// On the team, role unchanged.
    AsBefore,
}

/// Whether the settings map claims to roles: then every sign-in applies them, not only the
/// first (the settings page says so).
fn has_rules(config: &SsoConfigRecord) -> bool {
    config.role_claim.is_some() && !config.role_mapping.is_empty()
}

/// The member behind a verified e-mail (see [`Joined`]); an account that is neither on the
/// team nor invited to it is refused.
async fn member(
    app: &App,
    config: &SsoConfigRecord,
    email: &str,
    identity: &oidc::Identity,
) -> Result<(UserRecord, Joined), SsoError> {
    let merchant_id = &config.merchant_id;
    // Twice at most: a first sign-in racing another one for the same person finds it made.
    for _ in 0..2 {
        if let Some(user) = app.store.user_by_email(email).await? {
            if app.store.role_of(merchant_id, &user.id).await?.is_none() {
                let role = accept_invitation(app, merchant_id, &user).await?;
                return Ok((user, Joined::Invited(role)));
            }
            if has_rules(config) {
                let role = role_for(config, &identity.claims);
                if app
                    .store
                    .set_role_by_sso(merchant_id, &user.id, role)
                    .await?
                {
                    return Ok((user, Joined::RoleSet(role)));
                }
            }
            return Ok((user, Joined::AsBefore));
        }
        let role = role_for(config, &identity.claims);
        let name: String = identity
            .name
            .as_deref()
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| email.split('@').next().unwrap_or(email))
            .chars()
            .filter(|c| !c.is_control())
            .take(accounts::MAX_NAME_CHARS)
            .collect();
        let now = now_ms();
        let user = UserRecord {
            id: format!("usr_{}", uuid::Uuid::now_v7().simple()),
            email: email.to_owned(),
            name,
            password_hash: NO_PASSWORD.to_owned(),
            locale: None,
            created_at: now,
        };
        match app
            .store
            .create_sso_member(merchant_id, &user, role)
            .await?
        {
            Ok(Some(())) => return Ok((user, Joined::Created(role))),
            Ok(None) => continue,
            Err(reached) => return Err(SsoError::Plan(reached)),
        }
    }
    Err(SsoError::NotAMember(email.to_owned()))
}

/// Accepts the newest open, unexpired invitation of `user`'s address to the merchant; the role
/// it gives. None → [`SsoError::NotAMember`].
async fn accept_invitation(
    app: &App,
    merchant_id: &str,
    user: &UserRecord,
) -> Result<Role, SsoError> {
    let now = now_ms();
    let invitation = app
        .store
        .open_invitations(merchant_id)
        .await?
        .into_iter()
        .find(|i| i.email == user.email && i.expires_at > now)
        .ok_or_else(|| SsoError::NotAMember(user.email.clone()))?;
    match app
        .store
        .accept_invitation(&invitation, &user.id, None)
        .await?
    {
        Ok(true) => Ok(invitation.role),
        Ok(false) => Err(SsoError::NotAMember(user.email.clone())),
        Err(reached) => Err(SsoError::Plan(reached)),
    }
}

/// Whether `user` has no password (made by SSO): an invitation then asks them to accept with
/// single sign-on instead.
pub fn has_no_password(user: &UserRecord) -> bool {
    user.password_hash == NO_PASSWORD
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form() -> SettingsForm {
        SettingsForm {
            issuer_url: " https://login.acme.com/realms/acme ".into(),
            client_id: "pixgw".into(),
            client_secret: Zeroizing::new("s3cret".into()),
            domains: "Acme.com, @acme.com.br\nacme.com".into(),
            default_role: "read_only".into(),
            role_claim: "groups".into(),
            role_mapping: "finance = manager\n\n  store staff = cashier ".into(),
            require_sso: true,
        }
    }

    #[test]
    fn settings_parse_into_values_the_gateway_can_use() {
        let settings = Settings::parse(&form()).unwrap();
        assert_eq!(settings.issuer_url, "https://login.acme.com/realms/acme");
        assert_eq!(settings.domains, ["acme.com", "acme.com.br"]);
        assert_eq!(settings.default_role, Role::ReadOnly);
        assert_eq!(
            settings.role_mapping,
            [
                RoleRule {
                    value: "finance".into(),
                    role: Role::Manager
                },
                RoleRule {
                    value: "store staff".into(),
                    role: Role::Cashier
                }
            ]
        );
        assert_eq!(
            mapping_text(&settings.role_mapping),
            "finance = manager\nstore staff = cashier"
        );
        let keep = SettingsForm {
            client_secret: Zeroizing::new("  ".into()),
            ..form()
        };
        assert_eq!(Settings::parse(&keep).unwrap().client_secret, None);
    }

    #[test]
    fn bad_settings_say_what_to_fix() {
        let with = |change: fn(&mut SettingsForm)| {
            let mut f = form();
            change(&mut f);
            Settings::parse(&f).unwrap_err().to_string()
        };
        let http = with(|f| f.issuer_url = "http://login.acme.com".into());
        assert!(http.contains("https"), "{http}");
        assert!(with(|f| f.issuer_url = "https://x/?a=1".into()).contains("https"));
        assert!(with(|f| f.client_id = " ".into()).contains("client ID"));
        assert_eq!(
            with(|f| f.domains = "acme.com, acme".into()),
            "\"acme\" is not an e-mail domain like example.com"
        );
        assert!(with(|f| f.domains = "a_b.com".into()).contains("a_b.com"));
        assert_eq!(
            with(|f| f.domains = " ".into()),
            "give at least one e-mail domain"
        );
        assert!(with(|f| f.default_role = "owner".into()).contains("default role"));
        assert!(with(|f| f.role_mapping = "finance = owner".into()).contains("finance = owner"));
        assert!(with(|f| f.role_mapping = "finance".into()).contains("value = role"));
        assert_eq!(
            with(|f| f.role_claim = String::new()),
            "a role mapping needs the name of the claim it reads"
        );
        assert!(with(|f| f.role_claim = "grou ps".into()).contains("claim name"));
    }

    #[test]
    fn the_first_rule_the_claim_holds_chooses_the_role() {
        let config = SsoConfigRecord {
            merchant_id: "mer_1".into(),
            issuer_url: "https://id".into(),
            client_id: "c".into(),
            client_secret_sealed: "s".into(),
            default_role: Role::ReadOnly,
            role_claim: Some("groups".into()),
            role_mapping: vec![
                RoleRule {
                    value: "finance".into(),
                    role: Role::Manager,
                },
                RoleRule {
                    value: "staff".into(),
                    role: Role::Cashier,
                },
            ],
            require_sso: false,
            domains: vec!["acme.com".into()],
            created_at: 0,
            updated_at: 0,
        };
        let claims = |v: serde_json::Value| v.as_object().unwrap().clone();
        let both = claims(serde_json::json!({"groups": ["staff", "finance"]}));
        assert_eq!(
            role_for(&config, &both),
            Role::Manager,
            "rule order, not claim order"
        );
        let one = claims(serde_json::json!({"groups": "staff"}));
        assert_eq!(role_for(&config, &one), Role::Cashier);
        let none = claims(serde_json::json!({"groups": ["sales"], "other": "finance"}));
        assert_eq!(role_for(&config, &none), Role::ReadOnly);
        assert_eq!(
            role_for(&config, &claims(serde_json::json!({}))),
            Role::ReadOnly
        );
    }

    #[test]
    fn domains_are_plain_host_names() {
        assert_eq!(parse_domain("@Acme.COM"), Some("acme.com".into()));
        assert_eq!(
            parse_domain("loja-da-ana.com.br"),
            Some("loja-da-ana.com.br".into())
        );
        for bad in [
            "acme",
            "-acme.com",
            "acme-.com",
            "acme..com",
            "ac me.com",
            "*.acme.com",
        ] {
            assert_eq!(parse_domain(bad), None, "{bad}");
        }
    }

    #[test]
    fn people_made_by_sso_have_no_password() {
        assert!(argon2::password_hash::PasswordHash::new(NO_PASSWORD).is_err());
    }
}
