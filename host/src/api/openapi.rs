//! `GET /v1/openapi.json`: the OpenAPI 3.1 document, generated from the handlers' annotations
//! and the response types, so it cannot drift from the code.

use std::sync::Arc;

use axum::routing::get;
use axum::{Json, Router};
use utoipa::OpenApi;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};

use super::{
    adapters, charges, credentials, error, events, evidence, health, payment_links, statement,
    usage, webhook_endpoints,
};
use crate::app::App;
use crate::charges::object::{ChargeObject, ChargePaymentLink, PayerSchema, PixData};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "pixgw",
        description = "One API for Pix charges across Brazilian PSPs. Amounts are integer centavos; \
            times are RFC 3339 UTC. Authenticate with `Authorization: Bearer pgw_test_…` (or \
            `pgw_live_…`): the key's environment decides which credentials and charges you see. \
            Every response carries `x-request-id`; every error is `{\"error\": {type, code, \
            message, param?, provider?, psp_message?, psp_code?, hint?, request_id}}`; a plan's \
            limit answers 403 `plan_limit_reached` (see `GET /v1/usage`)."
    ),
    paths(
        charges::create, charges::read, charges::list, charges::cancel, charges::stream,
        evidence::attach, evidence::list, evidence::photo,
        webhook_endpoints::create, webhook_endpoints::list, webhook_endpoints::read,
        webhook_endpoints::update, webhook_endpoints::remove, webhook_endpoints::rotate,
        events::list, events::read, events::redeliver,
        credentials::create, credentials::list, credentials::read, credentials::update,
        credentials::remove, payment_links::create, payment_links::list, payment_links::read,
        payment_links::update, payment_links::deactivate, statement::list, statement::csv, usage::read, adapters::list, health::live, health::ready, health::metrics,
    ),
    components(schemas(
        ChargeObject, charges::ChargeList, charges::CreateChargeRequest,
        PayerSchema, PixData, ChargePaymentLink, payment_links::PaymentLinkObject,
        payment_links::PaymentLinkList, payment_links::CreatePaymentLinkRequest,
        payment_links::UpdatePaymentLinkRequest, credentials::CredentialObject, webhook_endpoints::EndpointObject,
        credentials::WebhookInfo, credentials::Verification, error::ErrorResponse,
        error::ErrorBody, error::ErrorType, statement::StatementList,
        statement::StatementLineObject, statement::StatementTotals, statement::Operator,
        statement::OperatorType, statement::LinkRef,
        evidence::EvidenceObject, evidence::EvidenceList, evidence::AttachEvidenceRequest,
        evidence::PhotoInfo, evidence::LocationInfo, evidence::Uploader,
        usage::UsageObject, usage::PlanObject, usage::UsageCounts, usage::UsageItem,
    )),
    modifiers(&ApiKeyAuth),
    tags(
        (name = "charges", description = "Pix charges at the merchant's PSPs"),
        (name = "credentials", description = "The merchant's accounts at PSPs"),
        (name = "payment_links", description = "Public pages (`/p/<slug>`) where anyone pays the merchant by Pix; each payment is a charge that names its link"),
        (name = "statement", description = "Paid charges by payment time, in the merchant's days (America/Sao_Paulo), with totals, and as CSV for Brazilian spreadsheets"),
        (name = "webhooks", description = "Events of the merchant's charges, delivered to its endpoints signed per the Standard Webhooks specification (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256 of id.timestamp.body>`)"),
        (name = "plans", description = "The merchant's plan and its limits. A creation beyond a limit answers 403 `permission_error` with code `plan_limit_reached`, `plan`, `resource`, `limit`, `usage`, `upgrade_to` and a `hint` naming the smallest plan that allows it"),
        (name = "operations", description = "Adapters, health and metrics"),
    )
)]
pub struct ApiDoc;

struct ApiKeyAuth;

impl utoipa::Modify for ApiKeyAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("A pixgw API key: pgw_test_… or pgw_live_…"))
                    .build(),
            ),
        );
    }
}

pub fn router() -> Router<Arc<App>> {
    Router::new().route(
        "/v1/openapi.json",
        get(|| async { Json(ApiDoc::openapi()) }),
    )
}
