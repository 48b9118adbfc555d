//! `/dashboard`: the overview. Today's numbers, and the onboarding checklist (connect a PSP →
//! first Pix charge → first payment in the statement) that ticks itself from the merchant's
//! data in the environment being viewed.

use std::sync::Arc;

use askama::Template;
use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;

use super::page::{Page, WebError, render};
use super::session::Viewer;
use crate::app::App;
use crate::policy::Action;
use crate::store::charges::ChargeSummary;

pub fn router() -> Router<Arc<App>> {
    Router::new().route("/dashboard", get(overview))
}

/// One step of the checklist.
pub struct Step {
    pub label: &'static str,
    pub hint: &'static str,
    pub href: &'static str,
    pub done: bool,
}

#[derive(Template)]
#[template(path = "overview.html")]
struct OverviewPage {
    c: Page,
    today: ChargeSummary,
    steps: Vec<Step>,
    connected: usize,
    show_checklist: bool,
}

impl OverviewPage {
    fn steps_done(&self) -> usize {
        self.steps.iter().filter(|s| s.done).count()
    }
}

/// Midnight in São Paulo (UTC−3), in stored milliseconds.
fn start_of_today(now_ms: i64) -> i64 {
    const DAY: i64 = 86_400_000;
    const OFFSET: i64 = 3 * 3_600_000;
    (now_ms - OFFSET).div_euclid(DAY) * DAY + OFFSET
}

async fn overview(State(app): State<Arc<App>>, viewer: Viewer) -> Result<Response, WebError> {
    viewer.require(Action::ViewOverview)?;
    let caller = viewer.caller();
    let today = app
        .store
        .charge_summary(
            &caller.merchant_id,
            caller.environment,
            start_of_today(crate::store::now_ms()),
        )
        .await?;
    let connected = app
        .store
        .credentials(&caller.merchant_id, caller.environment)
        .await?
        .len();
    let steps = vec![
        Step {
            label: "overview.step.connect",
            hint: "overview.step.connect_hint",
            href: "/dashboard/psps",
            done: connected > 0,
        },
        Step {
            label: "overview.step.first_charge",
            hint: "overview.step.first_charge_hint",
            href: "/dashboard/api-keys",
            done: today.ever_created,
        },
        Step {
            label: "overview.step.first_payment",
            hint: "overview.step.first_payment_hint",
            href: "/dashboard/charges?status=paid",
            done: today.ever_paid,
        },
    ];
    let show_checklist = viewer.can(Action::ViewCredentials) && steps.iter().any(|s| !s.done);
    render(&OverviewPage {
        c: Page::new(&viewer, "overview.title"),
        today,
        steps,
        connected,
        show_checklist,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn today_starts_at_midnight_in_sao_paulo() {
        // 2026-11-23 02:30 UTC is 23:30 on the 22nd in São Paulo.
        let t = 1_795_401_000_000; // 2026-11-23T02:30:00Z
        assert_eq!(super::start_of_today(t), 1_795_316_400_000); // 2026-11-22T03:00:00Z
    }
}
