//! Payment links, without HTTP: a merchant's public checkout page (`/p/<slug>`) where anyone
//! pays by Pix, with a fixed amount or one the payer types (within optional bounds), an
//! optional limit of paid payments, an optional validity window, a PSP (or `random`) and an
//! active flag. The API (`api::payment_links`), the dashboard (`web::links`) and the public
//! checkout (`web::checkout`) call these; every change is written to the audit log.
//!
//! Inputs are parsed first ([`Slug`], [`Price`], [`Window`], [`name`], [`usage_limit`],
//! [`provider`]) so the operations only ever see valid values.
//!
//! **What the usage limit guarantees.** It counts paid payments. A charge is written only while
//! the link takes charges: the check is part of the charge's insert (one SQL statement, see
//! `store::payment_links`), so once the limit-th payment is recorded as paid no further charge
//! is created for the link. Charges created before that moment (pending, or still being
//! created at the PSP) can still be paid: the paid count can exceed the limit by at most the
//! number of the link's charges that were open when the limit was reached, never by more.

use std::sync::Arc;

use crate::app::App;
use crate::audit;
use crate::charges::{Caller, ChargeError, ChargeInput, LinkOrigin, PayerInput, ProviderChoice};
use crate::domain::{Amount, Line, PaymentLinkId, Reference};
use crate::runtime::PayerField;
use crate::store::charges::ChargeRecord;
use crate::store::payment_links::PaymentLinkRecord;
use crate::store::{StoreError, now_ms};

pub const MAX_NAME_CHARS: usize = 100;
pub const MAX_USAGE_LIMIT: i64 = 1_000_000;
pub const MIN_SLUG_CHARS: usize = 3;
pub const MAX_SLUG_CHARS: usize = 64;
/// Random slugs: 20 characters of 36, about 103 bits, so links cannot be found by guessing.
const RANDOM_SLUG_CHARS: usize = 20;
/// How long a charge made at the checkout can be paid.
pub const CHARGE_VALIDITY_SECS: u32 = 30 * 60;

/// Why a payment link operation was refused; [`LinkError::code`] names the dashboard's message,
/// `api::payment_links` maps each case to the API's error.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("name is required: what the payer pays for")]
    NameMissing,
    #[error("name must have 1 to {MAX_NAME_CHARS} characters without line breaks")]
    NameInvalid,
    #[error(
        "amount fixes what the payer pays; min_amount and max_amount apply only to links whose amount the payer types (amount null)"
    )]
    AmountWithRange,
    #[error("min_amount must not be greater than max_amount")]
    RangeInverted,
    #[error("usage_limit must be an integer from 1 to {MAX_USAGE_LIMIT}")]
    UsageLimit,
    #[error("valid_from must be before valid_until")]
    WindowInverted,
    #[error(
        "slug must have {MIN_SLUG_CHARS} to {MAX_SLUG_CHARS} characters: lower-case letters, digits and hyphens, starting and ending with a letter or digit"
    )]
    SlugInvalid,
    #[error("the slug {0:?} is taken; choose another")]
    SlugTaken(String),
    #[error("no adapter serves provider {0:?}; use an installed adapter id or \"random\"")]
    UnknownProvider(String),
    #[error("no payment link {0:?}")]
    NotFound(String),
    /// The merchant's plan has no room for one more active link in this environment.
    #[error(transparent)]
    PlanLimit(#[from] crate::plans::LimitReached),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl LinkError {
    /// The catalog key of the message shown to the person.
    pub fn code(&self) -> &'static str {
        match self {
            LinkError::NameMissing | LinkError::NameInvalid => "links.error.name",
            LinkError::AmountWithRange => "links.error.amount_with_range",
            LinkError::RangeInverted => "links.error.range_inverted",
            LinkError::UsageLimit => "links.error.usage_limit",
            LinkError::WindowInverted => "links.error.window_inverted",
            LinkError::SlugInvalid => "links.error.slug_invalid",
            LinkError::SlugTaken(_) => "links.error.slug_taken",
            LinkError::UnknownProvider(_) => "links.error.provider",
            LinkError::NotFound(_) => "error.not_found.message",
            LinkError::PlanLimit(_) => "error.plan.title",
            LinkError::Store(_) => "error.internal",
        }
    }

    /// The input at fault, named as the API names it.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            LinkError::NameMissing | LinkError::NameInvalid => Some("name"),
            LinkError::AmountWithRange => Some("amount"),
            LinkError::RangeInverted => Some("min_amount"),
            LinkError::UsageLimit => Some("usage_limit"),
            LinkError::WindowInverted => Some("valid_until"),
            LinkError::SlugInvalid | LinkError::SlugTaken(_) => Some("slug"),
            LinkError::UnknownProvider(_) => Some("provider"),
            LinkError::NotFound(_) | LinkError::PlanLimit(_) | LinkError::Store(_) => None,
        }
    }
}

/// The last part of a link's URL: lower-case letters, digits and hyphens, starting and ending
/// with a letter or digit, [`MIN_SLUG_CHARS`] to [`MAX_SLUG_CHARS`] long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slug(String);

impl Slug {
    /// A merchant's custom slug; upper case is taken as lower case, as URLs are read aloud.
    pub fn parse(input: &str) -> Result<Slug, LinkError> {
        let slug = input.trim().to_ascii_lowercase();
        let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
        let valid = (MIN_SLUG_CHARS..=MAX_SLUG_CHARS).contains(&slug.len())
            && slug
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && edge(slug.chars().next())
            && edge(slug.chars().last());
        if valid {
            Ok(Slug(slug))
        } else {
            Err(LinkError::SlugInvalid)
        }
    }

    /// A random, unguessable slug.
    pub fn generate() -> Slug {
        use rand::Rng;
        const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
        let mut rng = rand::rng();
        Slug(
            (0..RANDOM_SLUG_CHARS)
                .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
                .collect(),
        )
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What the payer pays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Price {
    Fixed(Amount),
    /// The payer types the amount, within these bounds when set.
    Open {
        min: Option<Amount>,
        max: Option<Amount>,
    },
}

/// Why the amount a payer typed is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AmountRefused {
    Missing,
    BelowMin(Amount),
    AboveMax(Amount),
}

impl Price {
    pub fn new(
        amount: Option<Amount>,
        min: Option<Amount>,
        max: Option<Amount>,
    ) -> Result<Price, LinkError> {
        match amount {
            Some(_) if min.is_some() || max.is_some() => Err(LinkError::AmountWithRange),
            Some(amount) => Ok(Price::Fixed(amount)),
            None => match (min, max) {
                (Some(min), Some(max)) if min > max => Err(LinkError::RangeInverted),
                _ => Ok(Price::Open { min, max }),
            },
        }
    }

    /// The link's price as stored.
    pub fn of(link: &PaymentLinkRecord) -> Price {
        let amount = |centavos: Option<i64>| centavos.and_then(|c| Amount::from_centavos(c).ok());
        match amount(link.amount) {
            Some(fixed) => Price::Fixed(fixed),
            None => Price::Open {
                min: amount(link.min_amount),
                max: amount(link.max_amount),
            },
        }
    }

    /// What the payer pays: the fixed amount, or the typed one if it is within the bounds.
    pub fn charge(&self, typed: Option<Amount>) -> Result<Amount, AmountRefused> {
        match *self {
            Price::Fixed(amount) => Ok(amount),
            Price::Open { min, max } => {
                let amount = typed.ok_or(AmountRefused::Missing)?;
                match (min, max) {
                    (Some(min), _) if amount < min => Err(AmountRefused::BelowMin(min)),
                    (_, Some(max)) if amount > max => Err(AmountRefused::AboveMax(max)),
                    _ => Ok(amount),
                }
            }
        }
    }

    fn columns(&self) -> (Option<i64>, Option<i64>, Option<i64>) {
        let c = |a: Amount| a.centavos() as i64;
        match *self {
            Price::Fixed(amount) => (Some(c(amount)), None, None),
            Price::Open { min, max } => (None, min.map(c), max.map(c)),
        }
    }
}

/// When a link takes payments: from and until (Unix milliseconds), either end open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Window {
    from: Option<i64>,
    until: Option<i64>,
}

impl Window {
    pub fn new(from: Option<i64>, until: Option<i64>) -> Result<Window, LinkError> {
        match (from, until) {
            (Some(from), Some(until)) if from >= until => Err(LinkError::WindowInverted),
            _ => Ok(Window { from, until }),
        }
    }

    pub fn from(&self) -> Option<i64> {
        self.from
    }

    pub fn until(&self) -> Option<i64> {
        self.until
    }
}

/// A link's name: a [`Line`] of 1 to [`MAX_NAME_CHARS`] characters (it becomes the
/// description of the link's charges, so it follows the same rule).
pub fn name(input: &str) -> Result<String, LinkError> {
    if input.trim().is_empty() {
        return Err(LinkError::NameMissing);
    }
    Line::parse("name", input, MAX_NAME_CHARS)
        .map(Line::into_string)
        .map_err(|_| LinkError::NameInvalid)
}

/// A usage limit: 1 to [`MAX_USAGE_LIMIT`] paid payments.
pub fn usage_limit(limit: i64) -> Result<i64, LinkError> {
    if (1..=MAX_USAGE_LIMIT).contains(&limit) {
        Ok(limit)
    } else {
        Err(LinkError::UsageLimit)
    }
}

/// `random` or an installed adapter's id.
pub fn provider(app: &App, id: &str) -> Result<ProviderChoice, LinkError> {
    match id.trim() {
        "random" => Ok(ProviderChoice::Random),
        id if app.runtime.adapter(id).is_some() => Ok(ProviderChoice::One(id.to_owned())),
        id => Err(LinkError::UnknownProvider(id.to_owned())),
    }
}

/// A new link's settings, parsed.
pub struct NewLink {
    pub name: String,
    pub price: Price,
    pub usage_limit: Option<i64>,
    pub window: Window,
    pub provider: ProviderChoice,
    /// A custom slug; a random one when `None`.
    pub slug: Option<Slug>,
    pub active: bool,
}

/// What an update changes: `None` keeps a setting, `Some(None)` clears an optional one.
#[derive(Default)]
pub struct Changes {
    pub name: Option<String>,
    /// `Some(Some(_))` makes the amount fixed (and drops the bounds unless given);
    /// `Some(None)` lets the payer type it.
    pub amount: Option<Option<Amount>>,
    pub min_amount: Option<Option<Amount>>,
    pub max_amount: Option<Option<Amount>>,
    pub usage_limit: Option<Option<i64>>,
    pub valid_from: Option<Option<i64>>,
    pub valid_until: Option<Option<i64>>,
    pub provider: Option<ProviderChoice>,
    pub slug: Option<Slug>,
    pub active: Option<bool>,
}

/// Whether a link takes payments now, and if not, why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Availability {
    Open,
    /// Deactivated by the merchant.
    Inactive,
    /// Its window has not begun.
    Scheduled,
    /// Its window has ended.
    Expired,
    /// Its paid payments reached its limit.
    UsedUp,
}

impl Availability {
    pub fn as_str(self) -> &'static str {
        match self {
            Availability::Open => "open",
            Availability::Inactive => "inactive",
            Availability::Scheduled => "scheduled",
            Availability::Expired => "expired",
            Availability::UsedUp => "used_up",
        }
    }
}

/// Whether `link` takes payments at `now`. The charge insert checks the same in SQL
/// (`store::payment_links`), which is what holds under concurrency; this says why not.
pub fn availability(link: &PaymentLinkRecord, now: i64) -> Availability {
    if !link.active {
        Availability::Inactive
    } else if link.valid_until.is_some_and(|until| now >= until) {
        Availability::Expired
    } else if link
        .usage_limit
        .is_some_and(|limit| link.paid_count >= limit)
    {
        Availability::UsedUp
    } else if link.valid_from.is_some_and(|from| now < from) {
        Availability::Scheduled
    } else {
        Availability::Open
    }
}

/// The link's public address.
pub fn url(app: &App, link: &PaymentLinkRecord) -> String {
    format!("{}/p/{}", app.config.base_url, link.slug)
}

/// How a link's settings read in the audit log.
fn describe(link: &PaymentLinkRecord) -> String {
    let reais = |c: i64| format!("R$ {}.{:02}", c / 100, c % 100);
    let price = match (link.amount, link.min_amount, link.max_amount) {
        (Some(amount), _, _) => reais(amount),
        (None, min, max) => format!(
            "amount typed by the payer{}{}",
            min.map(|m| format!(", min {}", reais(m)))
                .unwrap_or_default(),
            max.map(|m| format!(", max {}", reais(m)))
                .unwrap_or_default()
        ),
    };
    format!(
        "\"{}\" at /p/{}: {price}, provider {}",
        link.name, link.slug, link.provider
    )
}

/// Creates a link for `caller`'s merchant in `caller`'s environment.
pub async fn create(
    app: &App,
    caller: &Caller,
    new: NewLink,
) -> Result<PaymentLinkRecord, LinkError> {
    let now = now_ms();
    let (amount, min_amount, max_amount) = new.price.columns();
    let mut link = PaymentLinkRecord {
        id: PaymentLinkId::generate().to_string(),
        merchant_id: caller.merchant_id.clone(),
        environment: caller.environment,
        slug: new
            .slug
            .clone()
            .unwrap_or_else(Slug::generate)
            .as_str()
            .to_owned(),
        name: new.name,
        amount,
        min_amount,
        max_amount,
        usage_limit: new.usage_limit,
        valid_from: new.window.from,
        valid_until: new.window.until,
        provider: new.provider.as_str().to_owned(),
        active: new.active,
        created_at: now,
        updated_at: now,
        paid_count: 0,
        paid_amount: 0,
    };
    // A random slug that collides (about never) is drawn again; a custom one is refused.
    let mut tries = 0;
    while !app.store.insert_payment_link(&link).await?? {
        tries += 1;
        if new.slug.is_some() || tries == 3 {
            return Err(LinkError::SlugTaken(link.slug));
        }
        link.slug = Slug::generate().as_str().to_owned();
    }
    audit::record(
        &app.store,
        caller,
        "payment_link.create",
        Some(("payment_link", &link.id)),
        describe(&link),
    )
    .await?;
    Ok(link)
}

/// The caller's links, newest first: at most `limit`, and whether more follow.
pub async fn list(
    app: &App,
    caller: &Caller,
    starting_after: Option<&str>,
    limit: u32,
) -> Result<(Vec<PaymentLinkRecord>, bool), LinkError> {
    let mut links = app
        .store
        .payment_links(
            &caller.merchant_id,
            caller.environment,
            starting_after,
            limit,
        )
        .await?;
    let more = links.len() > limit as usize;
    links.truncate(limit as usize);
    Ok((links, more))
}

/// One of the caller's links.
pub async fn find(app: &App, caller: &Caller, id: &str) -> Result<PaymentLinkRecord, LinkError> {
    app.store
        .payment_link(&caller.merchant_id, caller.environment, id)
        .await?
        .ok_or_else(|| LinkError::NotFound(id.to_owned()))
}

/// Changes a link's settings; the audit log says which (`payment_link.update`), and an
/// activation or deactivation is recorded as such.
pub async fn update(
    app: &App,
    caller: &Caller,
    id: &str,
    changes: Changes,
) -> Result<PaymentLinkRecord, LinkError> {
    let current = find(app, caller, id).await?;
    let mut link = current.clone();
    let price = Price::of(&current);
    let (mut amount, mut min, mut max) = match price {
        Price::Fixed(a) => (Some(a), None, None),
        Price::Open { min, max } => (None, min, max),
    };
    if let Some(new) = changes.amount {
        amount = new;
        if new.is_some() {
            (min, max) = (None, None);
        }
    }
    min = changes.min_amount.unwrap_or(min);
    max = changes.max_amount.unwrap_or(max);
    (link.amount, link.min_amount, link.max_amount) = Price::new(amount, min, max)?.columns();
    if let Some(name) = changes.name {
        link.name = name;
    }
    if let Some(limit) = changes.usage_limit {
        link.usage_limit = limit;
    }
    let window = Window::new(
        changes.valid_from.unwrap_or(current.valid_from),
        changes.valid_until.unwrap_or(current.valid_until),
    )?;
    (link.valid_from, link.valid_until) = (window.from, window.until);
    if let Some(provider) = changes.provider {
        link.provider = provider.as_str().to_owned();
    }
    if let Some(slug) = changes.slug {
        link.slug = slug.as_str().to_owned();
    }
    if let Some(active) = changes.active {
        link.active = active;
    }
    if link == current {
        return Ok(link);
    }
    link.updated_at = now_ms();
    let activating = link.active && !current.active;
    if !app.store.update_payment_link(&link, activating).await?? {
        return Err(LinkError::SlugTaken(link.slug));
    }
    let target = Some(("payment_link", link.id.as_str()));
    let edited: Vec<&str> = [
        ("name", link.name != current.name),
        (
            "amount",
            (link.amount, link.min_amount, link.max_amount)
                != (current.amount, current.min_amount, current.max_amount),
        ),
        ("usage limit", link.usage_limit != current.usage_limit),
        (
            "validity",
            (link.valid_from, link.valid_until) != (current.valid_from, current.valid_until),
        ),
        ("provider", link.provider != current.provider),
        ("slug", link.slug != current.slug),
    ]
    .into_iter()
    .filter_map(|(what, changed)| changed.then_some(what))
    .collect();
    if !edited.is_empty() {
        audit::record(
            &app.store,
            caller,
            "payment_link.update",
            target,
            format!("{} (changed: {})", describe(&link), edited.join(", ")),
        )
        .await?;
    }
    if link.active != current.active {
        let action = if link.active {
            "payment_link.activate"
        } else {
            "payment_link.deactivate"
        };
        audit::record(&app.store, caller, action, target, describe(&link)).await?;
    }
    Ok(link)
}

/// Activates or deactivates a link.
pub async fn set_active(
    app: &App,
    caller: &Caller,
    id: &str,
    active: bool,
) -> Result<PaymentLinkRecord, LinkError> {
    update(
        app,
        caller,
        id,
        Changes {
            active: Some(active),
            ..Changes::default()
        },
    )
    .await
}

/// The link at `/p/<slug>`, if any.
pub async fn by_slug(app: &App, slug: &str) -> Result<Option<PaymentLinkRecord>, StoreError> {
    match Slug::parse(slug) {
        Ok(slug) => app.store.payment_link_by_slug(slug.as_str()).await,
        Err(_) => Ok(None),
    }
}

/// The payer fields the checkout asks for: those the link's PSP requires; for `random`,
/// [`crate::routing::payer_fields_for_random`] over the connected PSPs.
pub async fn payer_fields(
    app: &App,
    link: &PaymentLinkRecord,
) -> Result<Vec<PayerField>, StoreError> {
    let required = |provider: &str| {
        app.runtime
            .adapter(provider)
            .map(|a| a.manifest().required_payer_fields.clone())
    };
    if link.provider != "random" {
        return Ok(required(&link.provider).unwrap_or_default());
    }
    let credentials = app
        .store
        .credentials(&link.merchant_id, link.environment)
        .await?;
    Ok(crate::routing::payer_fields_for_random(
        credentials
            .into_iter()
            .filter(|c| c.active)
            .filter_map(|c| required(&c.provider)),
    ))
}

/// Why the checkout did not make a charge.
#[derive(Debug)]
pub enum PayError {
    /// The link takes no payments now.
    Closed(Availability),
    Amount(AmountRefused),
    Charge(ChargeError),
}

/// A payer pays `link` at the public checkout: `typed` is the amount they typed (open links),
/// `reference` the one their checkout session holds, so that sending the form again resumes
/// the same charge. The charge is made by the gateway itself for the link's merchant and
/// environment, and records the link.
pub async fn pay(
    app: &Arc<App>,
    link: &PaymentLinkRecord,
    typed: Option<Amount>,
    payer: PayerInput,
    reference: &Reference,
    ip: Option<std::net::IpAddr>,
) -> Result<ChargeRecord, PayError> {
    match availability(link, now_ms()) {
        Availability::Open => {}
        closed => return Err(PayError::Closed(closed)),
    }
    let amount = Price::of(link).charge(typed).map_err(PayError::Amount)?;
    let caller = Caller {
        merchant_id: link.merchant_id.clone(),
        environment: link.environment,
        actor: audit::Actor::System,
        ip,
    };
    let input = ChargeInput {
        amount,
        provider: match link.provider.as_str() {
            "random" => ProviderChoice::Random,
            id => ProviderChoice::One(id.to_owned()),
        },
        // Names are checked as lines when saved; one that is not (stored before that check)
        // only loses its place as the description.
        description: Line::parse("description", &link.name, MAX_NAME_CHARS).ok(),
        payer,
        expires_in: CHARGE_VALIDITY_SECS,
        metadata: Default::default(),
        payment_link: Some(LinkOrigin {
            id: link.id.clone(),
            name: link.name.clone(),
        }),
    };
    // A payer on a phone may drop the connection mid-request: the charge is made to the end
    // anyway, and their next visit finds it by its reference.
    let (task_app, reference) = (app.clone(), reference.clone());
    let request_id = crate::api::request_id::current();
    let created = tokio::spawn(async move {
        task_app
            .charges
            .create_charge(
                &caller,
                &input,
                crate::charges::Placement::Reserved(&reference),
                &request_id,
                None,
            )
            .await
    })
    .await
    .map_err(|e| PayError::Charge(StoreError::Corrupt(format!("charge task: {e}")).into()))?;
    match created {
        Ok(charge) => Ok(charge),
        Err(ChargeError::LinkClosed { .. }) => {
            // Closed between the page and the insert: say why, as it reads now.
            let now = app
                .store
                .payment_link(&link.merchant_id, link.environment, &link.id)
                .await
                .map_err(|e| PayError::Charge(e.into()))?
                .map(|l| availability(&l, now_ms()))
                .filter(|a| *a != Availability::Open)
                .unwrap_or(Availability::UsedUp);
            Err(PayError::Closed(now))
        }
        Err(e) => Err(PayError::Charge(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Environment;

    fn amount(c: i64) -> Amount {
        Amount::from_centavos(c).unwrap()
    }

    fn link() -> PaymentLinkRecord {
        PaymentLinkRecord {
            id: "plink_x".into(),
            merchant_id: "mer_x".into(),
            environment: Environment::Test,
            slug: "camiseta".into(),
            name: "Camiseta".into(),
            amount: Some(5000),
            min_amount: None,
            max_amount: None,
            usage_limit: None,
            valid_from: None,
            valid_until: None,
            provider: "efi".into(),
            active: true,
            created_at: 0,
            updated_at: 0,
            paid_count: 0,
            paid_amount: 0,
        }
    }

    #[test]
    fn slugs_are_lower_case_words_with_hyphens() {
        assert_eq!(
            Slug::parse(" Camiseta-Azul ").unwrap().as_str(),
            "camiseta-azul"
        );
        assert_eq!(Slug::parse("a1b").unwrap().as_str(), "a1b");
        assert!(Slug::parse(&"a".repeat(64)).is_ok());
        for bad in [
            "ab",
            "-abc",
            "abc-",
            "a b c",
            "camiseta_azul",
            "çapato",
            "a/b/c",
            "",
            &"a".repeat(65),
        ] {
            assert!(Slug::parse(bad).is_err(), "{bad:?} must be refused");
        }
        let random = Slug::generate();
        assert_eq!(random.as_str().len(), 20);
        assert_eq!(Slug::parse(random.as_str()).unwrap(), random);
        assert_ne!(Slug::generate(), random);
    }

    #[test]
    fn a_price_is_fixed_or_open_within_its_bounds() {
        assert_eq!(
            Price::new(Some(amount(500)), None, None).unwrap(),
            Price::Fixed(amount(500))
        );
        assert!(matches!(
            Price::new(Some(amount(500)), Some(amount(100)), None),
            Err(LinkError::AmountWithRange)
        ));
        assert!(matches!(
            Price::new(None, Some(amount(900)), Some(amount(100))),
            Err(LinkError::RangeInverted)
        ));
        let open = Price::new(None, Some(amount(500)), Some(amount(10_000))).unwrap();
        assert_eq!(open.charge(Some(amount(500))), Ok(amount(500)));
        assert_eq!(open.charge(Some(amount(10_000))), Ok(amount(10_000)));
        assert_eq!(
            open.charge(Some(amount(499))),
            Err(AmountRefused::BelowMin(amount(500)))
        );
        assert_eq!(
            open.charge(Some(amount(10_001))),
            Err(AmountRefused::AboveMax(amount(10_000)))
        );
        assert_eq!(open.charge(None), Err(AmountRefused::Missing));
        // A fixed price ignores whatever was typed.
        assert_eq!(
            Price::Fixed(amount(5000)).charge(Some(amount(1))),
            Ok(amount(5000))
        );
    }

    #[test]
    fn availability_says_why_a_link_is_closed() {
        let now = 1_000_000;
        assert_eq!(availability(&link(), now), Availability::Open);
        let at = |f: fn(&mut PaymentLinkRecord)| {
            let mut l = link();
            f(&mut l);
            availability(&l, now)
        };
        assert_eq!(at(|l| l.active = false), Availability::Inactive);
        assert_eq!(
            at(|l| l.valid_until = Some(1_000_000)),
            Availability::Expired
        );
        assert_eq!(at(|l| l.valid_until = Some(1_000_001)), Availability::Open);
        assert_eq!(
            at(|l| l.valid_from = Some(1_000_001)),
            Availability::Scheduled
        );
        assert_eq!(at(|l| l.valid_from = Some(1_000_000)), Availability::Open);
        assert_eq!(
            at(|l| {
                l.usage_limit = Some(2);
                l.paid_count = 2;
            }),
            Availability::UsedUp
        );
        assert_eq!(
            at(|l| {
                l.usage_limit = Some(2);
                l.paid_count = 1;
            }),
            Availability::Open
        );
        // Deactivation wins over every other reason.
        assert_eq!(
            at(|l| {
                l.active = false;
                l.valid_until = Some(1);
            }),
            Availability::Inactive
        );
    }

    #[test]
    fn names_windows_and_limits_are_checked() {
        assert_eq!(name("  Camiseta azul ").unwrap(), "Camiseta azul");
        assert!(matches!(name("  "), Err(LinkError::NameMissing)));
        assert!(matches!(name("a\nb"), Err(LinkError::NameInvalid)));
        assert!(matches!(
            name(&"é".repeat(101)),
            Err(LinkError::NameInvalid)
        ));
        assert!(name(&"é".repeat(100)).is_ok());
        assert!(matches!(
            Window::new(Some(5), Some(5)),
            Err(LinkError::WindowInverted)
        ));
        assert!(Window::new(Some(4), Some(5)).is_ok());
        assert!(Window::new(None, Some(5)).is_ok());
        assert!(matches!(usage_limit(0), Err(LinkError::UsageLimit)));
        assert_eq!(usage_limit(1).unwrap(), 1);
        assert!(matches!(
            usage_limit(MAX_USAGE_LIMIT + 1),
            Err(LinkError::UsageLimit)
        ));
    }
}
