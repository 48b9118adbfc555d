//! `/dashboard/adapters` (owners only): every adapter the gateway's runtime knows, with the
//! version serving (its component's SHA-256 and since when) and the reason the latest file for
//! it was refused, if one was — the same report as `GET /v1/adapters`
//! ([`crate::api::adapters::views`]).

use std::sync::Arc;

use askama::Template;
use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;

use super::page::{Page, WebError, render};
use super::session::Viewer;
use crate::api::adapters::{AdapterView, views};
use crate::app::App;
use crate::policy::Action;

pub fn router() -> Router<Arc<App>> {
    Router::new().route("/dashboard/adapters", get(adapters))
}

#[derive(Template)]
#[template(path = "adapters.html")]
struct AdaptersPage {
    c: Page,
    adapters: Vec<AdapterView>,
}

impl AdaptersPage {
    /// A runtime time as stored milliseconds, for `c.time`.
    fn ms(&self, t: &std::time::SystemTime) -> i64 {
        t.duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64)
    }
}

async fn adapters(State(app): State<Arc<App>>, viewer: Viewer) -> Result<Response, WebError> {
    viewer.require(Action::ViewAdapters)?;
    let mut adapters = views(&app.runtime);
    adapters.sort_by_key(|a| a.name().to_lowercase());
    render(&AdaptersPage {
        c: Page::new(&viewer, "adapters.title"),
        adapters,
    })
}
