//! Plans and their limits: the eight plans as one table ([`PLANS`]), what each allows, the
//! refusal every creation point gives when a plan is full ([`LimitReached`]), and the services
//! around them: a merchant's usage ([`usage`]), a plan change from the dashboard ([`choose`])
//! or the operator's CLI ([`set`]).
//!
//! **Where limits are enforced.** Every creation point asks one function,
//! `store::plans::admit`, inside the transaction that inserts the new thing, so the check and
//! the creation are one step: twenty requests racing for the last place create exactly one,
//! on SQLite (one writer) and on PostgreSQL (the merchant's row locked, or the month's counter
//! row for charges), however many gateways share the database.
//!
//! **What counts.** Charges count per calendar month in São Paulo ([`month_of`]): every charge
//! written, whatever became of it, except one the PSP refused (nothing exists then). Test
//! charges have their own fair-use cap ([`test_charges`]). Things count in the environment they
//! belong to (a Free merchant has one test and one live API key): active payment links,
//! connected PSP credentials (active or paused; removing one frees its place), API keys not
//! revoked, webhook endpoints not deleted. The team counts its members and its open invitations.
//!
//! **Downgrades.** A plan change never removes anything: what exists keeps working, and nothing
//! new is created beyond the new plan's limits.

use std::fmt;
use std::str::FromStr;

use crate::app::App;
use crate::audit;
use crate::charges::Caller;
use crate::domain::Environment;
use crate::store::{Store, StoreError};

/// A plan, by its id. Ordered from the smallest to the largest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PlanId {
    Free,
    Basic,
    Pro,
    Business,
    Scale,
    Enterprise,
    Ultra,
    Ultra2,
}

impl PlanId {
    pub const ALL: [PlanId; 8] = [
        PlanId::Free,
        PlanId::Basic,
        PlanId::Pro,
        PlanId::Business,
        PlanId::Scale,
        PlanId::Enterprise,
        PlanId::Ultra,
        PlanId::Ultra2,
    ];

    /// The stored and API name: `free`, `basic`, …, `ultra_2`.
    pub fn as_str(self) -> &'static str {
        match self {
            PlanId::Free => "free",
            PlanId::Basic => "basic",
            PlanId::Pro => "pro",
            PlanId::Business => "business",
            PlanId::Scale => "scale",
            PlanId::Enterprise => "enterprise",
            PlanId::Ultra => "ultra",
            PlanId::Ultra2 => "ultra_2",
        }
    }

    pub fn plan(self) -> &'static Plan {
        &PLANS[self as usize]
    }
}

impl fmt::Display for PlanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A plan's id as people type it: `ultra_2`, `Ultra 2` and `ultra-2` are the same plan.
impl FromStr for PlanId {
    type Err = String;

    fn from_str(s: &str) -> Result<PlanId, String> {
        let normal = s.trim().to_ascii_lowercase().replace([' ', '-'], "_");
        PlanId::ALL
            .into_iter()
            .find(|p| p.as_str() == normal)
            .ok_or_else(|| {
                let names: Vec<&str> = PlanId::ALL.iter().map(|p| p.as_str()).collect();
                format!("{s:?} is not a plan: {}", names.join(", "))
            })
    }
}

/// How many of something a plan allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    AtMost(u64),
    Unlimited,
}

impl Limit {
    /// Whether a merchant that has `count` may have one more.
    pub fn admits_one_more(self, count: u64) -> bool {
        match self {
            Limit::AtMost(max) => count < max,
            Limit::Unlimited => true,
        }
    }

    /// The number, `None` when unlimited (as the API writes it: `null`).
    pub fn number(self) -> Option<u64> {
        match self {
            Limit::AtMost(max) => Some(max),
            Limit::Unlimited => None,
        }
    }
}

/// What a plan costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Price {
    /// Whole reais a month.
    Monthly(u32),
    /// Agreed with the operator, who sets the plan with `pixgw merchant set-plan`.
    OnRequest,
}

/// One row of the table.
#[derive(Debug)]
pub struct Plan {
    pub id: PlanId,
    pub name: &'static str,
    pub price: Price,
    /// Live charges per calendar month (São Paulo).
    pub charges: u64,
    /// Active payment links, per environment.
    pub payment_links: Limit,
    /// The cashier on a phone's browser (every plan has it on a computer).
    pub phone_cashier: bool,
    /// People on the team (members and open invitations), every role included.
    pub team: Limit,
    /// Connected PSP credentials, per environment.
    pub psps: Limit,
    /// API keys not revoked, per environment.
    pub api_keys: Limit,
    /// Webhook endpoints, per environment.
    pub webhooks: Limit,
    /// Days notifications, webhook deliveries and PSP attempts stay visible.
    pub log_retention_days: u32,
    /// Single sign-on.
    pub sso: bool,
}

use Limit::{AtMost, Unlimited};

/// The plans. The issue's table gives Business `-1` webhook endpoints: read as unlimited.
pub const PLANS: [Plan; 8] = [
    Plan {
        id: PlanId::Free,
        name: "Free",
        price: Price::Monthly(0),
        charges: 10,
        payment_links: AtMost(3),
        phone_cashier: false,
        team: AtMost(1),
        psps: AtMost(1),
        api_keys: AtMost(1),
        webhooks: AtMost(1),
        log_retention_days: 1,
        sso: false,
    },
    Plan {
        id: PlanId::Basic,
        name: "Basic",
        price: Price::Monthly(47),
        charges: 500,
        payment_links: AtMost(3),
        phone_cashier: false,
        team: AtMost(1),
        psps: AtMost(1),
        api_keys: AtMost(1),
        webhooks: AtMost(2),
        log_retention_days: 3,
        sso: false,
    },
    Plan {
        id: PlanId::Pro,
        name: "Pro",
        price: Price::Monthly(97),
        charges: 1_500,
        payment_links: AtMost(50),
        phone_cashier: true,
        team: AtMost(5),
        psps: AtMost(2),
        api_keys: AtMost(2),
        webhooks: AtMost(3),
        log_retention_days: 7,
        sso: false,
    },
    Plan {
        id: PlanId::Business,
        name: "Business",
        price: Price::Monthly(197),
        charges: 5_000,
        payment_links: AtMost(3),
        phone_cashier: false,
        team: AtMost(1),
        psps: AtMost(4),
        api_keys: AtMost(4),
        webhooks: Unlimited,
        log_retention_days: 15,
        sso: false,
    },
    Plan {
        id: PlanId::Scale,
        name: "Scale",
        price: Price::Monthly(397),
        charges: 10_000,
        payment_links: AtMost(3),
        phone_cashier: false,
        team: AtMost(1),
        psps: Unlimited,
        api_keys: Unlimited,
        webhooks: Unlimited,
        log_retention_days: 30,
        sso: false,
    },
    Plan {
        id: PlanId::Enterprise,
        name: "Enterprise",
        price: Price::Monthly(597),
        charges: 20_000,
        payment_links: Unlimited,
        phone_cashier: true,
        team: Unlimited,
        psps: Unlimited,
        api_keys: Unlimited,
        webhooks: Unlimited,
        log_retention_days: 30,
        sso: true,
    },
    Plan {
        id: PlanId::Ultra,
        name: "Ultra",
        price: Price::OnRequest,
        charges: 100_000,
        payment_links: AtMost(3),
        phone_cashier: false,
        team: AtMost(1),
        psps: Unlimited,
        api_keys: Unlimited,
        webhooks: Unlimited,
        log_retention_days: 60,
        sso: false,
    },
    Plan {
        id: PlanId::Ultra2,
        name: "Ultra 2",
        price: Price::OnRequest,
        charges: 500_000,
        payment_links: AtMost(3),
        phone_cashier: false,
        team: AtMost(1),
        psps: Unlimited,
        api_keys: Unlimited,
        webhooks: Unlimited,
        log_retention_days: 60,
        sso: false,
    },
];

/// Test charges a month are fair use: as many as the plan's live charges, and never fewer
/// than this, so that a Free merchant can build its integration.
pub const TEST_CHARGES_FLOOR: u64 = 1_000;

/// What a plan limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Resource {
    LiveCharges,
    TestCharges,
    PaymentLinks,
    TeamMembers,
    Psps,
    ApiKeys,
    WebhookEndpoints,
    PhoneCashier,
    Sso,
}

impl Resource {
    pub const ALL: [Resource; 9] = [
        Resource::LiveCharges,
        Resource::TestCharges,
        Resource::PaymentLinks,
        Resource::TeamMembers,
        Resource::Psps,
        Resource::ApiKeys,
        Resource::WebhookEndpoints,
        Resource::PhoneCashier,
        Resource::Sso,
    ];

    /// The API's name, as in `GET /v1/usage` and the error's `resource`.
    pub fn as_str(self) -> &'static str {
        match self {
            Resource::LiveCharges => "live_charges",
            Resource::TestCharges => "test_charges",
            Resource::PaymentLinks => "payment_links",
            Resource::TeamMembers => "team_members",
            Resource::Psps => "psps",
            Resource::ApiKeys => "api_keys",
            Resource::WebhookEndpoints => "webhook_endpoints",
            Resource::PhoneCashier => "phone_cashier",
            Resource::Sso => "sso",
        }
    }

    /// The charges of an environment.
    pub fn charges(environment: Environment) -> Resource {
        match environment {
            Environment::Live => Resource::LiveCharges,
            Environment::Test => Resource::TestCharges,
        }
    }

    /// Features a plan has or has not, rather than counts.
    pub fn is_feature(self) -> bool {
        matches!(self, Resource::PhoneCashier | Resource::Sso)
    }

    /// Counted in each environment apart (charges are apart by their own resource).
    pub fn per_environment(self) -> bool {
        matches!(
            self,
            Resource::PaymentLinks
                | Resource::Psps
                | Resource::ApiKeys
                | Resource::WebhookEndpoints
        )
    }
}

impl Plan {
    /// How many of `resource` the plan allows; a feature is unlimited when included, none
    /// when not.
    pub fn limit(&self, resource: Resource) -> Limit {
        let feature = |included: bool| if included { Unlimited } else { AtMost(0) };
        match resource {
            Resource::LiveCharges => AtMost(self.charges),
            Resource::TestCharges => AtMost(test_charges(self)),
            Resource::PaymentLinks => self.payment_links,
            Resource::TeamMembers => self.team,
            Resource::Psps => self.psps,
            Resource::ApiKeys => self.api_keys,
            Resource::WebhookEndpoints => self.webhooks,
            Resource::PhoneCashier => feature(self.phone_cashier),
            Resource::Sso => feature(self.sso),
        }
    }

    /// Whether merchants choose it themselves (on the dashboard's plan page); "on request"
    /// plans are set by the operator.
    pub fn self_serve(&self) -> bool {
        matches!(self.price, Price::Monthly(_))
    }
}

/// The fair-use cap of test charges a month.
pub fn test_charges(plan: &Plan) -> u64 {
    plan.charges.max(TEST_CHARGES_FLOOR)
}

/// Whether the plan includes single sign-on (Enterprise): the SSO sign-in asks this.
pub fn allows_sso(plan: PlanId) -> bool {
    plan.plan().sso
}

/// Whether the plan includes the cashier on a phone.
pub fn allows_phone_cashier(plan: PlanId) -> bool {
    plan.plan().phone_cashier
}

/// Why something was not created: the merchant's plan is full (or lacks the feature).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.message())]
pub struct LimitReached {
    pub plan: PlanId,
    pub resource: Resource,
    /// For things counted per environment, the environment that is full.
    pub environment: Option<Environment>,
    /// The plan's limit (`0` for a feature the plan lacks).
    pub limit: u64,
    /// How many the merchant has (this month, for charges).
    pub usage: u64,
}

impl LimitReached {
    /// A plan without a feature.
    pub fn feature(plan: PlanId, resource: Resource) -> LimitReached {
        LimitReached {
            plan,
            resource,
            environment: None,
            limit: 0,
            usage: 0,
        }
    }

    /// The smallest plan that allows one more (or has the feature); `None` when none does.
    pub fn upgrade(&self) -> Option<&'static Plan> {
        PLANS
            .iter()
            .find(|p| p.id > self.plan && p.limit(self.resource).admits_one_more(self.usage))
    }

    /// What happened, in the API's words.
    pub fn message(&self) -> String {
        let plan = self.plan.plan().name;
        let env = self.environment.map(Environment::as_str).unwrap_or("");
        let (limit, usage) = (self.limit, self.usage);
        match self.resource {
            Resource::LiveCharges => format!(
                "The {plan} plan allows {limit} live charges per month (São Paulo time) and this month has {usage}."
            ),
            Resource::TestCharges => format!(
                "The {plan} plan allows {limit} test charges per month (fair use) and this month has {usage}."
            ),
            Resource::PaymentLinks => format!(
                "The {plan} plan allows {limit} active payment links in {env} and {usage} are active."
            ),
            Resource::TeamMembers => format!(
                "The {plan} plan allows {limit} people on the team and it has {usage} (members and open invitations)."
            ),
            Resource::Psps => format!(
                "The {plan} plan allows {limit} connected PSP credentials in {env} and {usage} are connected."
            ),
            Resource::ApiKeys => format!(
                "The {plan} plan allows {limit} active API keys in {env} and {usage} are active."
            ),
            Resource::WebhookEndpoints => format!(
                "The {plan} plan allows {limit} webhook endpoints in {env} and {usage} exist."
            ),
            Resource::PhoneCashier => {
                format!("The {plan} plan does not include the cashier on a phone.")
            }
            Resource::Sso => format!("The {plan} plan does not include single sign-on."),
        }
    }

    /// What to do, naming the smallest plan that allows it, in the API's words.
    pub fn hint(&self) -> String {
        let free_one = match self.resource {
            Resource::LiveCharges | Resource::TestCharges => {
                "The count starts again on the 1st of next month (São Paulo time)"
            }
            Resource::PaymentLinks => "Deactivate a payment link",
            Resource::TeamMembers => "Remove a member or revoke an open invitation",
            Resource::Psps => "Remove a PSP credential",
            Resource::ApiKeys => "Revoke an API key",
            Resource::WebhookEndpoints => "Delete a webhook endpoint",
            Resource::PhoneCashier => "Use the cashier on a computer",
            Resource::Sso => "Sign in with a password",
        };
        let Some(next) = self.upgrade() else {
            return format!("{free_one}; no plan allows more.");
        };
        let what = match self.resource {
            Resource::PhoneCashier => "the cashier on a phone".to_owned(),
            Resource::Sso => "single sign-on".to_owned(),
            resource => match next.limit(resource) {
                AtMost(n) => format!("{n}"),
                Unlimited => "no limit".to_owned(),
            },
        };
        match next.price {
            Price::Monthly(reais) => format!(
                "{free_one}, or move to the {} plan (R$ {reais}/month: {what}) on the dashboard's Plan page.",
                next.name
            ),
            Price::OnRequest => format!(
                "{free_one}, or ask the operator for the {} plan (on request: {what}).",
                next.name
            ),
        }
    }
}

/// A plan's refusal as `Ok`/`Err`: store functions that create answer `Admission<T>` inside
/// their `Result`, so every caller has to say what a full plan means to it.
pub type Admission<T> = Result<T, LimitReached>;

/// A calendar month in São Paulo, where charges are counted: `2026-11`.
pub fn month_of(ms: i64) -> String {
    let local = crate::statement::local(ms, crate::statement::time_zone());
    format!("{:04}-{:02}", local.year(), local.month())
}

/// Usage of one limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Used {
    pub resource: Resource,
    pub used: u64,
    pub limit: Limit,
}

/// A merchant's plan and what it uses of it, this month, in one environment.
#[derive(Debug, Clone)]
pub struct Usage {
    pub plan: PlanId,
    /// `2026-11`.
    pub month: String,
    pub environment: Environment,
    /// Every counted resource, in [`Resource::ALL`]'s order (features are not counted).
    pub used: Vec<Used>,
}

impl Usage {
    pub fn of(&self, resource: Resource) -> Option<Used> {
        self.used.iter().copied().find(|u| u.resource == resource)
    }
}

/// The merchant's plan and usage this month (São Paulo), in `environment` for the things
/// counted per environment.
pub async fn usage(
    store: &Store,
    merchant_id: &str,
    environment: Environment,
    now: i64,
) -> Result<Usage, StoreError> {
    let month = month_of(now);
    let (plan, counts) = store
        .plan_usage(merchant_id, environment, &month, now)
        .await?;
    let used = Resource::ALL
        .into_iter()
        .filter(|r| !r.is_feature())
        .map(|resource| Used {
            resource,
            used: counts.get(resource),
            limit: plan.plan().limit(resource),
        })
        .collect();
    Ok(Usage {
        plan,
        month,
        environment,
        used,
    })
}

/// Why a plan change was refused.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// Ultra and Ultra 2 are agreed with the operator, not chosen in the dashboard.
    #[error("the {0} plan is on request: the operator sets it")]
    OnRequest(PlanId),
    #[error("no merchant {0:?}")]
    NoMerchant(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The merchant's owner chooses a plan on the dashboard (no payment is taken here). "On
/// request" plans are refused: the operator sets those ([`set`]).
pub async fn choose(app: &App, caller: &Caller, plan: PlanId) -> Result<PlanId, PlanError> {
    if !plan.plan().self_serve() {
        return Err(PlanError::OnRequest(plan));
    }
    set(&app.store, caller, plan).await
}

/// Puts the caller's merchant on `plan`, any plan (the operator's CLI calls this with a
/// system caller); recorded in the audit log as `plan.change`. Nothing the merchant has is
/// removed. Returns the previous plan.
pub async fn set(store: &Store, caller: &Caller, plan: PlanId) -> Result<PlanId, PlanError> {
    let previous = store
        .set_plan(&caller.merchant_id, plan)
        .await?
        .ok_or_else(|| PlanError::NoMerchant(caller.merchant_id.clone()))?;
    if previous != plan {
        audit::record(
            store,
            caller,
            "plan.change",
            Some(("merchant", &caller.merchant_id)),
            format!(
                "plan changed from {} to {}",
                previous.plan().name,
                plan.plan().name
            ),
        )
        .await?;
    }
    Ok(previous)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_order_and_each_row_is_its_own_id() {
        for (i, plan) in PLANS.iter().enumerate() {
            assert_eq!(plan.id as usize, i, "{}", plan.name);
            assert_eq!(plan.id.plan().name, plan.name);
            assert_eq!(plan.id.as_str().parse::<PlanId>(), Ok(plan.id));
        }
        // Charges grow with the plan: "smallest plan that allows more" is the next that does.
        for pair in PLANS.windows(2) {
            assert!(pair[0].charges < pair[1].charges);
        }
    }

    #[test]
    fn plans_parse_as_people_type_them() {
        assert_eq!("Ultra 2".parse::<PlanId>(), Ok(PlanId::Ultra2));
        assert_eq!("ultra-2".parse::<PlanId>(), Ok(PlanId::Ultra2));
        assert_eq!(" PRO ".parse::<PlanId>(), Ok(PlanId::Pro));
        let refused = "gold".parse::<PlanId>().unwrap_err();
        assert!(refused.contains("free, basic, pro"), "{refused}");
    }

    #[test]
    fn the_issue_table() {
        let row = |id: PlanId| {
            let p = id.plan();
            (
                p.price,
                p.charges,
                p.payment_links,
                p.phone_cashier,
                p.team,
                p.psps,
                p.api_keys,
                p.webhooks,
                p.log_retention_days,
                p.sso,
            )
        };
        use Price::*;
        assert_eq!(
            row(PlanId::Free),
            (
                Monthly(0),
                10,
                AtMost(3),
                false,
                AtMost(1),
                AtMost(1),
                AtMost(1),
                AtMost(1),
                1,
                false
            )
        );
        assert_eq!(
            row(PlanId::Basic),
            (
                Monthly(47),
                500,
                AtMost(3),
                false,
                AtMost(1),
                AtMost(1),
                AtMost(1),
                AtMost(2),
                3,
                false
            )
        );
        assert_eq!(
            row(PlanId::Pro),
            (
                Monthly(97),
                1500,
                AtMost(50),
                true,
                AtMost(5),
                AtMost(2),
                AtMost(2),
                AtMost(3),
                7,
                false
            )
        );
        assert_eq!(
            row(PlanId::Business),
            (
                Monthly(197),
                5000,
                AtMost(3),
                false,
                AtMost(1),
                AtMost(4),
                AtMost(4),
                Unlimited,
                15,
                false
            )
        );
        assert_eq!(
            row(PlanId::Scale),
            (
                Monthly(397),
                10000,
                AtMost(3),
                false,
                AtMost(1),
                Unlimited,
                Unlimited,
                Unlimited,
                30,
                false
            )
        );
        assert_eq!(
            row(PlanId::Enterprise),
            (
                Monthly(597),
                20000,
                Unlimited,
                true,
                Unlimited,
                Unlimited,
                Unlimited,
                Unlimited,
                30,
                true
            )
        );
        assert_eq!(
            row(PlanId::Ultra),
            (
                OnRequest,
                100000,
                AtMost(3),
                false,
                AtMost(1),
                Unlimited,
                Unlimited,
                Unlimited,
                60,
                false
            )
        );
        assert_eq!(
            row(PlanId::Ultra2),
            (
                OnRequest,
                500000,
                AtMost(3),
                false,
                AtMost(1),
                Unlimited,
                Unlimited,
                Unlimited,
                60,
                false
            )
        );
    }

    #[test]
    fn test_charges_are_the_live_ones_and_at_least_a_thousand() {
        assert_eq!(
            PlanId::Free.plan().limit(Resource::TestCharges),
            AtMost(1000)
        );
        assert_eq!(
            PlanId::Pro.plan().limit(Resource::TestCharges),
            AtMost(1500)
        );
        assert_eq!(
            PlanId::Ultra2.plan().limit(Resource::TestCharges),
            AtMost(500_000)
        );
    }

    fn reached(plan: PlanId, resource: Resource, usage: u64) -> LimitReached {
        LimitReached {
            plan,
            resource,
            environment: Some(Environment::Live),
            limit: plan.plan().limit(resource).number().unwrap_or(0),
            usage,
        }
    }

    #[test]
    fn the_upgrade_is_the_smallest_plan_that_allows_one_more() {
        let next = |plan, resource, usage| reached(plan, resource, usage).upgrade().map(|p| p.id);
        assert_eq!(
            next(PlanId::Free, Resource::LiveCharges, 10),
            Some(PlanId::Basic)
        );
        assert_eq!(
            next(PlanId::Free, Resource::PaymentLinks, 3),
            Some(PlanId::Pro)
        );
        assert_eq!(
            next(PlanId::Free, Resource::TeamMembers, 1),
            Some(PlanId::Pro)
        );
        // Pro's five people are the most below Enterprise.
        assert_eq!(
            next(PlanId::Pro, Resource::TeamMembers, 5),
            Some(PlanId::Enterprise)
        );
        assert_eq!(
            next(PlanId::Free, Resource::WebhookEndpoints, 1),
            Some(PlanId::Basic)
        );
        assert_eq!(
            next(PlanId::Pro, Resource::WebhookEndpoints, 3),
            Some(PlanId::Business)
        );
        assert_eq!(next(PlanId::Pro, Resource::Psps, 2), Some(PlanId::Business));
        assert_eq!(
            next(PlanId::Business, Resource::ApiKeys, 4),
            Some(PlanId::Scale)
        );
        // Business's links are 3: a merchant on it with 3 needs Enterprise, not Scale.
        assert_eq!(
            next(PlanId::Business, Resource::PaymentLinks, 3),
            Some(PlanId::Enterprise)
        );
        assert_eq!(
            next(PlanId::Enterprise, Resource::LiveCharges, 20_000),
            Some(PlanId::Ultra)
        );
        assert_eq!(next(PlanId::Ultra2, Resource::LiveCharges, 500_000), None);
        let phone = LimitReached::feature(PlanId::Basic, Resource::PhoneCashier);
        assert_eq!(phone.upgrade().map(|p| p.id), Some(PlanId::Pro));
        let sso = LimitReached::feature(PlanId::Pro, Resource::Sso);
        assert_eq!(sso.upgrade().map(|p| p.id), Some(PlanId::Enterprise));
        assert!(allows_sso(PlanId::Enterprise) && !allows_sso(PlanId::Ultra2));
        assert!(allows_phone_cashier(PlanId::Pro) && !allows_phone_cashier(PlanId::Free));
    }

    #[test]
    fn the_words_name_the_limit_the_usage_and_the_next_plan() {
        let free = reached(PlanId::Free, Resource::LiveCharges, 10);
        assert_eq!(
            free.message(),
            "The Free plan allows 10 live charges per month (São Paulo time) and this month has 10."
        );
        assert_eq!(
            free.hint(),
            "The count starts again on the 1st of next month (São Paulo time), or move to the \
             Basic plan (R$ 47/month: 500) on the dashboard's Plan page."
        );
        let on_request = reached(PlanId::Enterprise, Resource::LiveCharges, 20_000);
        assert!(
            on_request
                .hint()
                .contains("ask the operator for the Ultra plan (on request: 100000)")
        );
        let top = reached(PlanId::Ultra2, Resource::LiveCharges, 500_000);
        assert!(
            top.hint().ends_with("no plan allows more."),
            "{}",
            top.hint()
        );
        let phone = LimitReached::feature(PlanId::Free, Resource::PhoneCashier);
        assert_eq!(
            phone.hint(),
            "Use the cashier on a computer, or move to the Pro plan (R$ 97/month: the cashier on a phone) on the dashboard's Plan page."
        );
    }

    #[test]
    fn months_are_sao_paulo_months() {
        let ms = |text: &str| crate::store::parse_rfc3339(text).unwrap();
        // 02:59 UTC on the 1st is still the last day of the month before in São Paulo.
        assert_eq!(month_of(ms("2026-12-01T02:59:59.999Z")), "2026-11");
        assert_eq!(month_of(ms("2026-12-01T03:00:00Z")), "2026-12");
        assert_eq!(month_of(ms("2027-01-01T02:00:00Z")), "2026-12");
        // In 2018 São Paulo kept daylight-saving time (UTC−2) until 17 February 2019.
        assert_eq!(month_of(ms("2019-02-01T01:59:00Z")), "2019-01");
        assert_eq!(month_of(ms("2019-02-01T02:00:00Z")), "2019-02");
    }
}
