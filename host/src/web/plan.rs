//! `/dashboard/plan` (the owner's): the merchant's plan, this month's usage as bars, the eight
//! plans side by side, and the change of plan (self-serve plans only; no payment is taken
//! here; "on request" plans are set by the operator with `pixgw merchant set-plan`). Calls
//! [`crate::plans`], as `GET /v1/usage` and the CLI do.
//!
//! Also [`refusal`]: a plan's refusal in the viewer's words, for every page that creates
//! something (the cashier, links, PSPs, keys, webhooks, the team).

use std::sync::Arc;

use askama::Template;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use serde::Deserialize;

use super::i18n::Lang;
use super::page::{Page, WebError, render, render_status, see_other_with};
use super::session::{Posted, Viewer};
use crate::app::App;
use crate::plans::{self, Limit, LimitReached, PLANS, Plan, PlanError, PlanId, Price, Resource};
use crate::policy::Action;
use crate::store::now_ms;

pub fn router() -> Router<Arc<App>> {
    Router::new().route("/dashboard/plan", get(show).post(choose))
}

/// A number as the language groups its thousands: `1.500` / `1,500`.
pub fn count(lang: Lang, n: u64) -> String {
    let digits = n.to_string();
    let sep = match lang {
        Lang::PtBr => '.',
        Lang::En => ',',
    };
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(sep);
        }
        out.push(ch);
    }
    out
}

/// A limit in words: a number, or "unlimited".
fn limit_text(lang: Lang, limit: Limit) -> String {
    match limit {
        Limit::AtMost(n) => count(lang, n),
        Limit::Unlimited => lang.t("plan.unlimited").to_owned(),
    }
}

/// A plan's price in words: `R$ 97/mês`, free, or on request.
fn price_text(lang: Lang, plan: &Plan) -> String {
    match plan.price {
        Price::Monthly(0) => lang.t("plan.price_free").to_owned(),
        Price::Monthly(reais) => lang.tf(
            "plan.per_month",
            &[("price", &lang.money(i64::from(reais) * 100))],
        ),
        Price::OnRequest => lang.t("plan.on_request").to_owned(),
    }
}

/// The catalog key naming a resource.
fn resource_key(resource: Resource) -> &'static str {
    match resource {
        Resource::LiveCharges => "plan.resource.live_charges",
        Resource::TestCharges => "plan.resource.test_charges",
        Resource::PaymentLinks => "plan.resource.payment_links",
        Resource::TeamMembers => "plan.resource.team_members",
        Resource::Psps => "plan.resource.psps",
        Resource::ApiKeys => "plan.resource.api_keys",
        Resource::WebhookEndpoints => "plan.resource.webhook_endpoints",
        Resource::PhoneCashier => "plan.resource.phone_cashier",
        Resource::Sso => "plan.resource.sso",
    }
}

/// A plan's refusal as the person reads it: what happened (the plan, its limit, the usage) and
/// what to do (free one, or the smallest plan that allows more).
pub fn refusal(lang: Lang, reached: &LimitReached) -> (String, String) {
    let env = reached
        .environment
        .map(|e| {
            lang.t(if e.as_str() == "live" {
                "env.live"
            } else {
                "env.test"
            })
        })
        .unwrap_or_default();
    let message = lang.tf(
        match reached.resource {
            Resource::LiveCharges => "plan.limit.live_charges",
            Resource::TestCharges => "plan.limit.test_charges",
            Resource::PaymentLinks => "plan.limit.payment_links",
            Resource::TeamMembers => "plan.limit.team_members",
            Resource::Psps => "plan.limit.psps",
            Resource::ApiKeys => "plan.limit.api_keys",
            Resource::WebhookEndpoints => "plan.limit.webhook_endpoints",
            Resource::PhoneCashier => "plan.limit.phone_cashier",
            Resource::Sso => "plan.limit.sso",
        },
        &[
            ("plan", reached.plan.plan().name),
            ("limit", &count(lang, reached.limit)),
            ("usage", &count(lang, reached.usage)),
            ("env", env),
        ],
    );
    let free_one = lang.t(match reached.resource {
        Resource::LiveCharges | Resource::TestCharges => "plan.free_one.charges",
        Resource::PaymentLinks => "plan.free_one.payment_links",
        Resource::TeamMembers => "plan.free_one.team_members",
        Resource::Psps => "plan.free_one.psps",
        Resource::ApiKeys => "plan.free_one.api_keys",
        Resource::WebhookEndpoints => "plan.free_one.webhook_endpoints",
        Resource::PhoneCashier => "plan.free_one.phone_cashier",
        Resource::Sso => "plan.free_one.sso",
    });
    let hint = match reached.upgrade() {
        None => lang.tf("plan.hint.none", &[("free_one", free_one)]),
        Some(next) => {
            let what = if reached.resource.is_feature() {
                lang.t(resource_key(reached.resource)).to_owned()
            } else {
                limit_text(lang, next.limit(reached.resource))
            };
            let key = match next.price {
                Price::Monthly(_) => "plan.hint.upgrade",
                Price::OnRequest => "plan.hint.on_request",
            };
            lang.tf(
                key,
                &[
                    ("free_one", free_one),
                    ("next", next.name),
                    ("price", &price_text(lang, next)),
                    ("what", &what),
                ],
            )
        }
    };
    (message, hint)
}

/// One bar of this month's usage.
pub struct UsageBar {
    pub id: &'static str,
    pub label: String,
    /// `3 / 10` or `3` when unlimited.
    pub text: String,
    pub used: u64,
    /// The bar's scale; `None` when unlimited (no bar, only the number).
    pub max: Option<u64>,
    pub full: bool,
}

/// A column of the comparison.
pub struct PlanColumn {
    pub id: &'static str,
    pub name: &'static str,
    pub price: String,
    pub current: bool,
    pub self_serve: bool,
    /// The button's words: "Choose Pro".
    pub choose: String,
}

/// A row of the comparison: what, then one cell per plan.
pub struct CompareRow {
    pub label: String,
    pub cells: Vec<String>,
}

#[derive(Template)]
#[template(path = "plan.html")]
struct PlanPage {
    c: Page,
    plan_name: &'static str,
    plan_price: String,
    /// "Usage in November 2026".
    usage_title: String,
    usage: Vec<UsageBar>,
    /// "… are kept for 7 days."
    retention: String,
    columns: Vec<PlanColumn>,
    rows: Vec<CompareRow>,
    error: Option<String>,
}

/// `1 day`, `7 days`.
fn days_text(lang: Lang, days: u32) -> String {
    match days {
        1 => lang.t("plan.one_day").to_owned(),
        n => lang.tf("plan.days", &[("days", &n.to_string())]),
    }
}

/// `2026-11` as the language says it: `novembro de 2026`, `November 2026`.
fn month_text(lang: Lang, month: &str) -> String {
    let (year, number) = month.split_once('-').unwrap_or((month, "1"));
    let number: u8 = number.parse().unwrap_or(1);
    let key = [
        "plan.month_1",
        "plan.month_2",
        "plan.month_3",
        "plan.month_4",
        "plan.month_5",
        "plan.month_6",
        "plan.month_7",
        "plan.month_8",
        "plan.month_9",
        "plan.month_10",
        "plan.month_11",
        "plan.month_12",
    ][usize::from(number.clamp(1, 12) - 1)];
    lang.tf("plan.month", &[("month", lang.t(key)), ("year", year)])
}

async fn page(app: &App, viewer: &Viewer, error: Option<String>) -> Result<PlanPage, WebError> {
    let lang = viewer.lang;
    let caller = viewer.caller();
    let usage = plans::usage(
        &app.store,
        &caller.merchant_id,
        caller.environment,
        now_ms(),
    )
    .await?;
    let plan = usage.plan.plan();
    let env = lang.t(if caller.environment.as_str() == "live" {
        "env.live"
    } else {
        "env.test"
    });
    let bars = usage
        .used
        .iter()
        .map(|u| {
            let mut label = lang.t(resource_key(u.resource)).to_owned();
            if u.resource.per_environment() {
                label = lang.tf("plan.in_env", &[("what", &label), ("env", env)]);
            }
            UsageBar {
                id: u.resource.as_str(),
                label,
                text: match u.limit {
                    Limit::AtMost(max) => format!("{} / {}", count(lang, u.used), count(lang, max)),
                    Limit::Unlimited => {
                        lang.tf("plan.used_unlimited", &[("used", &count(lang, u.used))])
                    }
                },
                used: u.used,
                max: u.limit.number(),
                full: !u.limit.admits_one_more(u.used),
            }
        })
        .collect();
    let yes_no = |b: bool| lang.t(if b { "plan.yes" } else { "plan.no" }).to_owned();
    let row = |key: &str, cell: &dyn Fn(&Plan) -> String| CompareRow {
        label: lang.t(key).to_owned(),
        cells: PLANS.iter().map(cell).collect(),
    };
    let rows = vec![
        row("plan.row.price", &|p| price_text(lang, p)),
        row("plan.resource.live_charges", &|p| count(lang, p.charges)),
        row("plan.resource.test_charges", &|p| {
            count(lang, plans::test_charges(p))
        }),
        row("plan.resource.payment_links", &|p| {
            limit_text(lang, p.payment_links)
        }),
        row("plan.row.cashier", &|p| {
            lang.t(if p.phone_cashier {
                "plan.cashier.phone"
            } else {
                "plan.cashier.computer"
            })
            .to_owned()
        }),
        row("plan.resource.team_members", &|p| limit_text(lang, p.team)),
        row("plan.resource.psps", &|p| limit_text(lang, p.psps)),
        row("plan.resource.api_keys", &|p| limit_text(lang, p.api_keys)),
        row("plan.resource.webhook_endpoints", &|p| {
            limit_text(lang, p.webhooks)
        }),
        row("plan.row.retention", &|p| {
            days_text(lang, p.log_retention_days)
        }),
        row("plan.resource.sso", &|p| yes_no(p.sso)),
    ];
    Ok(PlanPage {
        c: Page::new(viewer, "plan.title"),
        plan_name: plan.name,
        plan_price: price_text(lang, plan),
        usage_title: lang.tf(
            "plan.usage_title",
            &[("month", &month_text(lang, &usage.month))],
        ),
        usage: bars,
        retention: lang.tf(
            "plan.retention",
            &[("days", &days_text(lang, plan.log_retention_days))],
        ),
        columns: PLANS
            .iter()
            .map(|p| PlanColumn {
                id: p.id.as_str(),
                name: p.name,
                price: price_text(lang, p),
                current: p.id == usage.plan,
                self_serve: p.self_serve(),
                choose: lang.tf("plan.choose", &[("plan", p.name)]),
            })
            .collect(),
        rows,
        error,
    })
}

async fn show(State(app): State<Arc<App>>, viewer: Viewer) -> Result<Response, WebError> {
    viewer.require(Action::ManagePlan)?;
    render(&page(&app, &viewer, None).await?)
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ChooseForm {
    plan: String,
}

async fn choose(
    State(app): State<Arc<App>>,
    Posted { viewer, form }: Posted<ChooseForm>,
) -> Result<Response, WebError> {
    viewer.require(Action::ManagePlan)?;
    let lang = viewer.lang;
    let refuse = async |message: String| {
        render_status(
            StatusCode::UNPROCESSABLE_ENTITY,
            &page(&app, &viewer, Some(message)).await?,
        )
    };
    let Ok(plan) = form.plan.parse::<PlanId>() else {
        return refuse(lang.t("plan.error.choose").to_owned()).await;
    };
    match plans::choose(&app, &viewer.caller(), plan).await {
        Ok(_) => Ok(see_other_with("/dashboard/plan", "flash.plan_changed")),
        Err(PlanError::OnRequest(plan)) => {
            refuse(lang.tf("plan.error.on_request", &[("plan", plan.plan().name)])).await
        }
        Err(e) => Err(WebError::internal(lang, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Environment;

    #[test]
    fn numbers_group_thousands_as_each_language_writes_them() {
        assert_eq!(count(Lang::PtBr, 500_000), "500.000");
        assert_eq!(count(Lang::En, 1_500), "1,500");
        assert_eq!(count(Lang::En, 10), "10");
    }

    #[test]
    fn a_refusal_says_the_plan_the_limit_the_usage_and_the_next_plan() {
        let reached = LimitReached {
            plan: PlanId::Free,
            resource: Resource::LiveCharges,
            environment: Some(Environment::Live),
            limit: 10,
            usage: 10,
        };
        let (message, hint) = refusal(Lang::En, &reached);
        assert!(
            message.contains("Free") && message.contains("10"),
            "{message}"
        );
        assert!(hint.contains("Basic") && hint.contains("500"), "{hint}");
        let (message, hint) = refusal(Lang::PtBr, &reached);
        assert!(
            message.contains("Free") && message.contains("10"),
            "{message}"
        );
        assert!(
            hint.contains("Basic") && hint.contains("R$ 47,00"),
            "{hint}"
        );
        assert_eq!(month_text(Lang::PtBr, "2026-11"), "novembro de 2026");
        assert_eq!(month_text(Lang::En, "2026-05"), "May 2026");
    }
}
