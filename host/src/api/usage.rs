//! `GET /v1/usage`: the merchant's plan, its limits and this month's usage (São Paulo), as
//! [`crate::plans::usage`] reads them; the dashboard's plan page shows the same.

use std::sync::Arc;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use utoipa::ToSchema;

use super::error::{ApiError, ErrorResponse};
use crate::app::App;
use crate::charges::Caller;
use crate::plans::{self, Price};
use crate::store::now_ms;

pub fn router() -> Router<Arc<App>> {
    Router::new().route("/v1/usage", get(read))
}

/// The merchant's plan.
#[derive(Serialize, ToSchema)]
pub struct PlanObject {
    /// `free`, `basic`, `pro`, `business`, `scale`, `enterprise`, `ultra`, `ultra_2`.
    #[schema(example = "free")]
    pub id: &'static str,
    #[schema(example = "Free")]
    pub name: &'static str,
    /// Whole reais a month; `null` for plans on request (Ultra, Ultra 2).
    pub monthly_price_brl: Option<u32>,
    /// Whether the cashier works on a phone's browser.
    pub phone_cashier: bool,
    pub sso: bool,
    /// Days notifications, webhook deliveries and PSP attempts are kept.
    pub log_retention_days: u32,
}

/// One limit and its use.
#[derive(Serialize, ToSchema)]
pub struct UsageItem {
    pub used: u64,
    /// `null`: unlimited.
    pub limit: Option<u64>,
}

/// What the merchant uses of each limit. Charges count this calendar month in São Paulo;
/// payment links, PSPs, API keys and webhook endpoints count in the key's environment; the
/// team counts members and open invitations.
#[derive(Serialize, ToSchema)]
pub struct UsageCounts {
    pub live_charges: UsageItem,
    /// Fair use: as many as the plan's live charges, and at least 1,000.
    pub test_charges: UsageItem,
    pub payment_links: UsageItem,
    pub team_members: UsageItem,
    pub psps: UsageItem,
    pub api_keys: UsageItem,
    pub webhook_endpoints: UsageItem,
}

#[derive(Serialize, ToSchema)]
pub struct UsageObject {
    pub plan: PlanObject,
    /// The month charges count in, in São Paulo: `2026-11`.
    #[schema(example = "2026-11")]
    pub month: String,
    /// The environment of the API key: `test` or `live`.
    pub environment: &'static str,
    pub usage: UsageCounts,
}

/// The plan, its limits and this month's usage.
#[utoipa::path(get, path = "/v1/usage", tag = "plans", operation_id = "get_usage",
    responses(
        (status = 200, body = UsageObject),
        (status = 401, description = "No valid API key", body = ErrorResponse),
    ),
    security(("api_key" = [])))]
pub async fn read(
    State(app): State<Arc<App>>,
    caller: Caller,
) -> Result<Json<UsageObject>, ApiError> {
    let usage = plans::usage(
        &app.store,
        &caller.merchant_id,
        caller.environment,
        now_ms(),
    )
    .await?;
    let plan = usage.plan.plan();
    let item = |resource| {
        let used = usage
            .of(resource)
            .expect("every counted resource is in the usage");
        UsageItem {
            used: used.used,
            limit: used.limit.number(),
        }
    };
    use plans::Resource as R;
    Ok(Json(UsageObject {
        plan: PlanObject {
            id: plan.id.as_str(),
            name: plan.name,
            monthly_price_brl: match plan.price {
                Price::Monthly(reais) => Some(reais),
                Price::OnRequest => None,
            },
            phone_cashier: plan.phone_cashier,
            sso: plan.sso,
            log_retention_days: plan.log_retention_days,
        },
        month: usage.month.clone(),
        environment: caller.environment.as_str(),
        usage: UsageCounts {
            live_charges: item(R::LiveCharges),
            test_charges: item(R::TestCharges),
            payment_links: item(R::PaymentLinks),
            team_members: item(R::TeamMembers),
            psps: item(R::Psps),
            api_keys: item(R::ApiKeys),
            webhook_endpoints: item(R::WebhookEndpoints),
        },
    }))
}
