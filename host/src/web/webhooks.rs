//! `/dashboard/webhooks`: the merchant's webhook endpoints of the dashboard's environment
//! (URL, events, status, failing since, why disabled) with create and edit forms, the signing
//! secret shown once on create and on rotation, enable / disable, delete; and the latest
//! deliveries (all endpoints or one) with a Redeliver button. Calls
//! [`crate::webhooks::endpoints`], as the API does.

use std::sync::Arc;

use askama::Template;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use serde::Deserialize;

use super::i18n::Lang;
use super::page::{Page, WebError, render, render_status, see_other_with};
use super::session::{Posted, Viewer};
use crate::app::App;
use crate::policy::Action;
use crate::store::events::DeliveryListing;
use crate::store::now_ms;
use crate::store::webhook_endpoints::EndpointRecord;
use crate::webhooks::endpoints::{
    self, Changes, DISABLED_BY_MERCHANT, EndpointError, EndpointUrl, EventTypes, NewEndpoint,
    Overlap,
};
use crate::webhooks::{DEFAULT_EVENT_TYPES, EVENT_TYPES};

/// Deliveries the page lists.
const DELIVERIES_SHOWN: i64 = 50;

pub fn router() -> Router<Arc<App>> {
    Router::new()
        .route("/dashboard/webhooks", get(index).post(create))
        .route("/dashboard/webhooks/{id}", get(edit).post(update))
        .route("/dashboard/webhooks/{id}/rotate", post(rotate))
        .route("/dashboard/webhooks/{id}/enable", post(enable))
        .route("/dashboard/webhooks/{id}/disable", post(disable))
        .route("/dashboard/webhooks/{id}/delete", post(delete))
        .route(
            "/dashboard/webhooks/events/{event_id}/redeliver",
            post(redeliver),
        )
}

/// The catalog key naming an event type.
fn event_label(kind: &str) -> &'static str {
    match kind {
        "charge.created" => "webhooks.event.created",
        "charge.paid" => "webhooks.event.paid",
        "charge.underpaid" => "webhooks.event.underpaid",
        "charge.expired" => "webhooks.event.expired",
        "charge.canceled" => "webhooks.event.canceled",
        "charge.failed" => "webhooks.event.failed",
        _ => "webhooks.event.other",
    }
}

/// (badge class, catalog key) of a delivery's status.
fn delivery_status(status: &str) -> (&'static str, &'static str) {
    match status {
        "delivered" => ("ok", "webhooks.delivery.delivered"),
        "pending" => ("pending", "webhooks.delivery.pending"),
        "failed" => ("failed", "webhooks.delivery.failed"),
        _ => ("canceled", "webhooks.delivery.canceled"),
    }
}

/// The endpoint form as typed, and what is wrong with it.
#[derive(Deserialize, Default)]
#[serde(from = "Vec<(String, String)>")]
struct EndpointForm {
    url: String,
    description: String,
    /// Checkboxes: one `events` field per ticked box.
    events: Vec<String>,
    /// The version the edit page showed (hidden field); empty on the create form.
    version: String,
}

impl From<Vec<(String, String)>> for EndpointForm {
    fn from(fields: Vec<(String, String)>) -> Self {
        let mut form = EndpointForm::default();
        for (name, value) in fields {
            match name.as_str() {
                "url" => form.url = value,
                "description" => form.description = value,
                "events" => form.events.push(value),
                "version" => form.version = value,
                _ => {}
            }
        }
        form
    }
}

/// The endpoint form for a template: values to show and the refusal, if any.
struct FormView {
    url: String,
    description: String,
    events: Vec<String>,
    /// The version the edit form posts back, so a change made meanwhile is refused.
    version: Option<i64>,
    /// The field at fault and the message; `conflict` for the whole form.
    error: Option<(&'static str, String)>,
}

impl FormView {
    fn empty() -> FormView {
        FormView {
            url: String::new(),
            description: String::new(),
            events: DEFAULT_EVENT_TYPES.iter().map(|t| t.to_string()).collect(),
            version: None,
            error: None,
        }
    }

    fn of(endpoint: &EndpointRecord) -> FormView {
        FormView {
            url: endpoint.url.clone(),
            description: endpoint.description.clone().unwrap_or_default(),
            events: endpoint.events.clone(),
            version: Some(endpoint.version),
            error: None,
        }
    }

    fn refused(form: EndpointForm, lang: Lang, error: &EndpointError) -> FormView {
        FormView {
            url: form.url,
            description: form.description,
            events: form.events,
            version: form.version.parse().ok(),
            error: Some((error.field().unwrap_or("url"), message(lang, error))),
        }
    }

    /// Every event type: (type, label key, ticked).
    fn choices(&self) -> Vec<(&'static str, &'static str, bool)> {
        EVENT_TYPES
            .iter()
            .map(|kind| {
                (
                    *kind,
                    event_label(kind),
                    self.events.iter().any(|e| e == kind),
                )
            })
            .collect()
    }

    fn error_for(&self, field: &str) -> Option<&str> {
        self.error
            .as_ref()
            .filter(|(f, _)| *f == field)
            .map(|(_, message)| message.as_str())
    }
}

/// What the person reads when a form is refused.
fn message(lang: Lang, error: &EndpointError) -> String {
    let detail = match error {
        EndpointError::UrlRejected(reason) => reason.clone(),
        EndpointError::UnknownEvent(kind) => kind.clone(),
        EndpointError::TooMany { limit, .. } => limit.to_string(),
        _ => String::new(),
    };
    lang.tf(
        error.code(),
        &[
            ("detail", &detail),
            ("max_url", &endpoints::MAX_URL_CHARS.to_string()),
            (
                "max_description",
                &endpoints::MAX_DESCRIPTION_CHARS.to_string(),
            ),
        ],
    )
}

/// A secret just made: shown once, above the list.
struct NewSecret {
    url: String,
    secret: String,
    /// Until then the previous secret signs too (after a rotation).
    previous_until: Option<i64>,
}

#[derive(Template)]
#[template(path = "webhooks.html")]
struct WebhooksPage {
    c: Page,
    endpoints: Vec<EndpointRecord>,
    deliveries: Vec<DeliveryListing>,
    /// The endpoint whose deliveries are listed (all when none).
    filter: Option<String>,
    can_manage: bool,
    can_redeliver: bool,
    new_secret: Option<NewSecret>,
    form: FormView,
    max_url: usize,
    max_description: usize,
}

impl WebhooksPage {
    fn event_name(&self, kind: &str) -> &'static str {
        self.c.t(event_label(kind))
    }

    /// Why an endpoint is disabled: in the person's language when the merchant did it, as
    /// the delivery worker wrote it otherwise (a 410, days of failures).
    fn disabled_reason(&self, endpoint: &EndpointRecord) -> String {
        match endpoint.disabled_reason.as_deref() {
            Some(DISABLED_BY_MERCHANT) => self.c.t("webhooks.disabled_by_merchant").to_owned(),
            Some(reason) => reason.to_owned(),
            None => String::new(),
        }
    }

    fn status_class(&self, status: &str) -> &'static str {
        delivery_status(status).0
    }

    fn status_name(&self, status: &str) -> &'static str {
        self.c.t(delivery_status(status).1)
    }

    fn is_filter(&self, endpoint_id: &str) -> bool {
        self.filter.as_deref() == Some(endpoint_id)
    }
}

#[derive(Template)]
#[template(path = "webhooks_edit.html")]
struct EditPage {
    c: Page,
    endpoint: EndpointRecord,
    form: FormView,
    max_url: usize,
    max_description: usize,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct DeliveriesQuery {
    endpoint: String,
}

async fn page(
    app: &App,
    viewer: &Viewer,
    filter: Option<String>,
    form: FormView,
) -> Result<WebhooksPage, WebError> {
    let caller = viewer.caller();
    let endpoints = endpoints::list(app, &caller).await?;
    // Only one of the listed endpoints filters; anything else shows them all.
    let filter = filter.filter(|id| endpoints.iter().any(|e| &e.id == id));
    let deliveries =
        endpoints::recent_deliveries(app, &caller, filter.as_deref(), DELIVERIES_SHOWN).await?;
    Ok(WebhooksPage {
        c: Page::new(viewer, "webhooks.title"),
        endpoints,
        deliveries,
        filter,
        can_manage: viewer.can(Action::ManageWebhookEndpoints),
        can_redeliver: viewer.can(Action::RedeliverEvent),
        new_secret: None,
        form,
        max_url: endpoints::MAX_URL_CHARS,
        max_description: endpoints::MAX_DESCRIPTION_CHARS,
    })
}

async fn index(
    State(app): State<Arc<App>>,
    viewer: Viewer,
    Query(query): Query<DeliveriesQuery>,
) -> Result<Response, WebError> {
    viewer.require(Action::ViewWebhookEndpoints)?;
    let filter = Some(query.endpoint).filter(|e| !e.is_empty());
    render(&page(&app, &viewer, filter, FormView::empty()).await?)
}

/// The form's fields, parsed; the URL last, as it may need a DNS lookup.
async fn parse(
    app: &App,
    viewer: &Viewer,
    form: &EndpointForm,
) -> Result<NewEndpoint, EndpointError> {
    let description = endpoints::description(&form.description)?;
    let events = EventTypes::parse(form.events.iter().map(String::as_str))?;
    let url = EndpointUrl::parse(
        &app.config.delivery.destinations,
        viewer.signed_in.session.environment,
        &form.url,
    )
    .await?;
    Ok(NewEndpoint {
        url,
        events,
        description,
    })
}

async fn create(
    State(app): State<Arc<App>>,
    Posted { viewer, form }: Posted<EndpointForm>,
) -> Result<Response, WebError> {
    viewer.require(Action::ManageWebhookEndpoints)?;
    let created = match parse(&app, &viewer, &form).await {
        Ok(new) => endpoints::create(&app, &viewer.caller(), new).await,
        Err(e) => Err(e),
    };
    match created {
        Ok(created) => {
            let mut page = page(&app, &viewer, None, FormView::empty()).await?;
            page.new_secret = Some(NewSecret {
                url: created.endpoint.url,
                secret: created.secret,
                previous_until: None,
            });
            render(&page)
        }
        Err(EndpointError::Store(e)) => Err(WebError::internal(viewer.lang, e)),
        Err(EndpointError::PlanLimit(reached)) => Err(WebError::PlanLimit(viewer.lang, reached)),
        Err(e) => {
            let form = FormView::refused(form, viewer.lang, &e);
            render_status(
                StatusCode::UNPROCESSABLE_ENTITY,
                &page(&app, &viewer, None, form).await?,
            )
        }
    }
}

/// A failure of an action on one endpoint, as a page.
fn failed(viewer: &Viewer, error: EndpointError) -> WebError {
    match error {
        EndpointError::NotFound(_) | EndpointError::EventNotFound(_) => {
            WebError::NotFound(viewer.lang)
        }
        other => WebError::internal(viewer.lang, other),
    }
}

async fn edit(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    viewer: Viewer,
) -> Result<Response, WebError> {
    viewer.require(Action::ManageWebhookEndpoints)?;
    let endpoint = endpoints::find(&app, &viewer.caller(), &id)
        .await
        .map_err(|e| failed(&viewer, e))?;
    render(&EditPage {
        c: Page::new(&viewer, "webhooks.edit_title"),
        form: FormView::of(&endpoint),
        endpoint,
        max_url: endpoints::MAX_URL_CHARS,
        max_description: endpoints::MAX_DESCRIPTION_CHARS,
    })
}

async fn update(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Posted { viewer, form }: Posted<EndpointForm>,
) -> Result<Response, WebError> {
    viewer.require(Action::ManageWebhookEndpoints)?;
    let caller = viewer.caller();
    let endpoint = endpoints::find(&app, &caller, &id)
        .await
        .map_err(|e| failed(&viewer, e))?;
    let expected_version = match form.version.as_str() {
        "" => None,
        text => Some(
            text.parse()
                .map_err(|_| WebError::BadRequest(viewer.lang, "error.form_malformed"))?,
        ),
    };
    let updated = match parse(&app, &viewer, &form).await {
        Ok(new) => {
            let changes = Changes {
                url: Some(new.url),
                events: Some(new.events),
                description: Some(new.description),
                enabled: None,
                expected_version,
            };
            endpoints::update(&app, &caller, &id, changes).await
        }
        Err(e) => Err(e),
    };
    match updated {
        Ok(_) => Ok(see_other_with(
            "/dashboard/webhooks",
            "flash.webhooks_updated",
        )),
        Err(e @ (EndpointError::NotFound(_) | EndpointError::Store(_))) => Err(failed(&viewer, e)),
        // Someone saved it meanwhile: the form shows what is saved now, and says so.
        Err(e @ EndpointError::Conflict { .. }) => {
            let endpoint = endpoints::find(&app, &caller, &id)
                .await
                .map_err(|e| failed(&viewer, e))?;
            let mut form = FormView::of(&endpoint);
            form.error = Some(("conflict", message(viewer.lang, &e)));
            render_status(
                StatusCode::CONFLICT,
                &EditPage {
                    c: Page::new(&viewer, "webhooks.edit_title"),
                    form,
                    endpoint,
                    max_url: endpoints::MAX_URL_CHARS,
                    max_description: endpoints::MAX_DESCRIPTION_CHARS,
                },
            )
        }
        Err(e) => render_status(
            StatusCode::UNPROCESSABLE_ENTITY,
            &EditPage {
                c: Page::new(&viewer, "webhooks.edit_title"),
                form: FormView::refused(form, viewer.lang, &e),
                endpoint,
                max_url: endpoints::MAX_URL_CHARS,
                max_description: endpoints::MAX_DESCRIPTION_CHARS,
            },
        ),
    }
}

#[derive(Deserialize, Default)]
struct Empty {}

async fn rotate(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Posted { viewer, .. }: Posted<Empty>,
) -> Result<Response, WebError> {
    viewer.require(Action::ManageWebhookEndpoints)?;
    let rotated =
        match endpoints::rotate_secret(&app, &viewer.caller(), &id, Overlap::default()).await {
            Err(EndpointError::Conflict { .. }) => {
                return Ok(see_other_with(
                    "/dashboard/webhooks",
                    "flash.webhooks_conflict",
                ));
            }
            outcome => outcome.map_err(|e| failed(&viewer, e))?,
        };
    let mut page = page(&app, &viewer, None, FormView::empty()).await?;
    page.new_secret = Some(NewSecret {
        url: rotated.endpoint.url,
        secret: rotated.secret,
        previous_until: rotated
            .endpoint
            .previous_expires_at
            .filter(|t| *t > now_ms()),
    });
    render(&page)
}

async fn set_enabled(
    app: &App,
    viewer: &Viewer,
    id: &str,
    enabled: bool,
) -> Result<Response, WebError> {
    viewer.require(Action::ManageWebhookEndpoints)?;
    let changes = Changes {
        enabled: Some(enabled),
        ..Changes::default()
    };
    match endpoints::update(app, &viewer.caller(), id, changes).await {
        // A change raced this click: the list shows the endpoint as it is now.
        Err(EndpointError::Conflict { .. }) => {
            return Ok(see_other_with(
                "/dashboard/webhooks",
                "flash.webhooks_conflict",
            ));
        }
        outcome => outcome.map_err(|e| failed(viewer, e))?,
    };
    let flash = if enabled {
        "flash.webhooks_enabled"
    } else {
        "flash.webhooks_disabled"
    };
    Ok(see_other_with("/dashboard/webhooks", flash))
}

async fn enable(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Posted { viewer, .. }: Posted<Empty>,
) -> Result<Response, WebError> {
    set_enabled(&app, &viewer, &id, true).await
}

async fn disable(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Posted { viewer, .. }: Posted<Empty>,
) -> Result<Response, WebError> {
    set_enabled(&app, &viewer, &id, false).await
}

async fn delete(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Posted { viewer, .. }: Posted<Empty>,
) -> Result<Response, WebError> {
    viewer.require(Action::ManageWebhookEndpoints)?;
    endpoints::delete(&app, &viewer.caller(), &id)
        .await
        .map_err(|e| failed(&viewer, e))?;
    Ok(see_other_with(
        "/dashboard/webhooks",
        "flash.webhooks_deleted",
    ))
}

async fn redeliver(
    State(app): State<Arc<App>>,
    Path(event_id): Path<String>,
    Posted { viewer, .. }: Posted<Empty>,
) -> Result<Response, WebError> {
    viewer.require(Action::RedeliverEvent)?;
    let queued = endpoints::redeliver(&app, &viewer.caller(), &event_id)
        .await
        .map_err(|e| failed(&viewer, e))?;
    let flash = if queued == 0 {
        "flash.webhooks_redeliver_none"
    } else {
        "flash.webhooks_redelivered"
    };
    Ok(see_other_with("/dashboard/webhooks", flash))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys made in code, not written as `t("…")`, exist in both languages.
    #[test]
    fn computed_keys_exist() {
        let errors = [
            EndpointError::UrlMissing,
            EndpointError::UrlTooLong(3000),
            EndpointError::UrlRejected("x".into()),
            EndpointError::NoEvents,
            EndpointError::UnknownEvent(String::from("charge.refunded")),
            EndpointError::DescriptionTooLong(300),
            EndpointError::DescriptionControl,
            EndpointError::Overlap,
            EndpointError::Conflict {
                expected: 1,
                current: 2,
            },
            EndpointError::TooMany {
                limit: 50,
                usage: 50,
                environment: crate::domain::Environment::Test,
            },
        ];
        let keys = EVENT_TYPES
            .iter()
            .map(|k| event_label(k))
            .chain(["webhooks.event.other"])
            .chain(errors.iter().map(EndpointError::code))
            .chain(["delivered", "pending", "failed", "canceled"].map(|s| delivery_status(s).1));
        for key in keys {
            for lang in Lang::ALL {
                assert_ne!(lang.t(key), key, "{key} missing in {}", lang.tag());
            }
        }
        assert!(
            EVENT_TYPES
                .iter()
                .all(|k| event_label(k) != "webhooks.event.other")
        );
    }

    #[test]
    fn refusals_name_the_field_and_keep_what_was_typed() {
        let form = EndpointForm::from(vec![
            ("_csrf".to_string(), "t".to_string()),
            ("url".into(), "http://10.0.0.1/hook".into()),
            ("description".into(), "Loja".into()),
            ("events".into(), "charge.paid".into()),
            ("events".into(), "charge.created".into()),
        ]);
        let error = EndpointError::UrlRejected("10.0.0.1 is private".into());
        let view = FormView::refused(form, Lang::PtBr, &error);
        assert_eq!(view.url, "http://10.0.0.1/hook");
        assert_eq!(view.description, "Loja");
        let ticked: Vec<&str> = view
            .choices()
            .into_iter()
            .filter(|c| c.2)
            .map(|c| c.0)
            .collect();
        assert_eq!(ticked, ["charge.created", "charge.paid"]);
        let shown = view.error_for("url").unwrap();
        assert!(shown.contains("10.0.0.1 is private"), "{shown}");
        assert_eq!(view.error_for("events"), None);
    }
}
