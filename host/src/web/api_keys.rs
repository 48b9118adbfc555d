//! `/dashboard/api-keys`: the merchant's API keys of the dashboard's environment (label,
//! prefix, created, last used, active or revoked), issuing one (the key is shown once, on the
//! answer to the form) and revoking one. Calls [`crate::api_keys`], as the CLI does.

use std::sync::Arc;

use askama::Template;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use serde::Deserialize;

use super::page::{Page, WebError, render, render_status, see_other_with};
use super::session::{Posted, Viewer};
use crate::api_keys::{self, ApiKeyError};
use crate::app::App;
use crate::policy::Action;
use crate::store::api_keys::ApiKeyRecord;

pub fn router() -> Router<Arc<App>> {
    Router::new()
        .route("/dashboard/api-keys", get(keys).post(create))
        .route("/dashboard/api-keys/{id}/revoke", post(revoke))
}

#[derive(Template)]
#[template(path = "api_keys.html")]
struct KeysPage {
    c: Page,
    keys: Vec<ApiKeyRecord>,
    can_manage: bool,
    /// The key just issued, in plaintext: on this answer only.
    new_key: Option<String>,
    /// What the person typed, kept when the form is refused.
    label: String,
    /// Catalog key of why the form was refused.
    error: Option<&'static str>,
    max_label: usize,
}

impl KeysPage {
    /// The environment's name: keys are listed and issued for the dashboard's environment.
    fn environment_name(&self) -> &'static str {
        self.c.t(if self.c.is_live() {
            "env.live"
        } else {
            "env.test"
        })
    }
}

async fn page(app: &App, viewer: &Viewer) -> Result<KeysPage, WebError> {
    let session = &viewer.signed_in.session;
    Ok(KeysPage {
        c: Page::new(viewer, "api_keys.title"),
        keys: api_keys::list(&app.store, &session.merchant_id, Some(session.environment)).await?,
        can_manage: viewer.can(Action::ManageApiKeys),
        new_key: None,
        label: String::new(),
        error: None,
        max_label: api_keys::MAX_LABEL_CHARS,
    })
}

async fn keys(State(app): State<Arc<App>>, viewer: Viewer) -> Result<Response, WebError> {
    viewer.require(Action::ViewApiKeys)?;
    render(&page(&app, &viewer).await?)
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct CreateForm {
    label: String,
}

async fn create(
    State(app): State<Arc<App>>,
    Posted { viewer, form }: Posted<CreateForm>,
) -> Result<Response, WebError> {
    viewer.require(Action::ManageApiKeys)?;
    let issued = api_keys::issue(&app.store, &viewer.caller(), Some(&form.label)).await;
    match issued {
        Ok(issued) => {
            let mut page = page(&app, &viewer).await?;
            page.new_key = Some(issued.key.as_str().to_owned());
            render(&page)
        }
        Err(ApiKeyError::Store(e)) => Err(WebError::internal(viewer.lang, e)),
        Err(ApiKeyError::PlanLimit(reached)) => Err(WebError::PlanLimit(viewer.lang, reached)),
        Err(e) => {
            let mut page = page(&app, &viewer).await?;
            page.label = form.label;
            page.error = Some(e.code());
            render_status(StatusCode::UNPROCESSABLE_ENTITY, &page)
        }
    }
}

#[derive(Deserialize, Default)]
struct Empty {}

async fn revoke(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Posted { viewer, .. }: Posted<Empty>,
) -> Result<Response, WebError> {
    viewer.require(Action::ManageApiKeys)?;
    match api_keys::revoke(&app.store, &viewer.caller(), &id).await {
        Ok(_) => Ok(see_other_with(
            "/dashboard/api-keys",
            "flash.api_keys_revoked",
        )),
        Err(ApiKeyError::NotFound(_)) => Err(WebError::NotFound(viewer.lang)),
        Err(e) => Err(WebError::internal(viewer.lang, e)),
    }
}
