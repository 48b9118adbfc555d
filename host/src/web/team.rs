//! `/dashboard/team`: the merchant's members and their roles, invitations (a link shown once,
//! valid for 7 days), role changes and removals. The last owner always stays.

use std::sync::Arc;

use askama::Template;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use serde::Deserialize;

use super::page::{Page, WebError, render, render_status, role_key, see_other_with};
use super::session::{Posted, Viewer};
use crate::accounts::{self, AccountError, TeamError};
use crate::app::App;
use crate::policy::{Action, Role};
use crate::store::now_ms;
use crate::store::users::{InvitationRecord, Member};

pub fn router() -> Router<Arc<App>> {
    Router::new()
        .route("/dashboard/team", get(team))
        .route("/dashboard/team/invite", post(invite))
        .route("/dashboard/team/members/{user_id}/role", post(change_role))
        .route("/dashboard/team/members/{user_id}/remove", post(remove))
        .route("/dashboard/team/invitations/{id}/revoke", post(revoke))
}

#[derive(Template)]
#[template(path = "team.html")]
struct TeamPage {
    c: Page,
    members: Vec<Member>,
    invitations: Vec<InvitationRecord>,
    can_manage: bool,
    me: String,
    now: i64,
    /// The link of the invitation just made: shown once.
    new_link: Option<String>,
    invite_email: String,
    invite_role: String,
    error: Option<String>,
}

impl TeamPage {
    fn role_name(&self, role: &Role) -> &'static str {
        self.c.t(role_key(*role))
    }

    fn roles(&self) -> [(&'static str, &'static str); 4] {
        Role::ALL.map(|r| (r.as_str(), role_key(r)))
    }
}

async fn page(app: &App, viewer: &Viewer) -> Result<TeamPage, WebError> {
    let merchant_id = &viewer.signed_in.session.merchant_id;
    Ok(TeamPage {
        c: Page::new(viewer, "team.title"),
        members: app.store.members(merchant_id).await?,
        invitations: app.store.open_invitations(merchant_id).await?,
        can_manage: viewer.can(Action::ManageTeam),
        me: viewer.user_id().to_owned(),
        now: now_ms(),
        new_link: None,
        invite_email: String::new(),
        invite_role: Role::Cashier.as_str().to_owned(),
        error: None,
    })
}

async fn team(State(app): State<Arc<App>>, viewer: Viewer) -> Result<Response, WebError> {
    viewer.require(Action::ViewTeam)?;
    render(&page(&app, &viewer).await?)
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct InviteForm {
    email: String,
    role: String,
}

async fn invite(
    State(app): State<Arc<App>>,
    Posted { viewer, form }: Posted<InviteForm>,
) -> Result<Response, WebError> {
    viewer.require(Action::ManageTeam)?;
    let role: Option<Role> = form.role.parse().ok();
    let outcome = match role {
        Some(role) => accounts::invite(&app, &viewer.signed_in, &form.email, role, viewer.ip)
            .await
            .map_err(|e| match (&e, e.minutes()) {
                (AccountError::PlanLimit(reached), _) => {
                    let (message, hint) = super::plan::refusal(viewer.lang, reached);
                    format!("{message} {hint}")
                }
                (_, Some(m)) => viewer.lang.tf(e.code(), &[("minutes", &m.to_string())]),
                (_, None) => viewer.lang.t(e.code()).to_owned(),
            }),
        None => Err(viewer.lang.t("team.error.role").to_owned()),
    };
    let mut page = page(&app, &viewer).await?;
    match outcome {
        Ok(invitation) => {
            page.new_link = Some(format!(
                "{}/dashboard/invitations/{}",
                app.config.base_url, invitation.token
            ));
            render(&page)
        }
        Err(message) => {
            page.invite_email = form.email;
            page.invite_role = form.role;
            page.error = Some(message);
            render_status(StatusCode::UNPROCESSABLE_ENTITY, &page)
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RoleForm {
    role: String,
}

async fn change_role(
    State(app): State<Arc<App>>,
    Path(user_id): Path<String>,
    Posted { viewer, form }: Posted<RoleForm>,
) -> Result<Response, WebError> {
    viewer.require(Action::ManageTeam)?;
    let role: Role = form
        .role
        .parse()
        .map_err(|_| WebError::BadRequest(viewer.lang, "team.error.role"))?;
    finish(
        &app,
        &viewer,
        accounts::change_member(&app, &viewer.signed_in, &user_id, Some(role), viewer.ip).await,
        "flash.role_changed",
    )
    .await
}

#[derive(Deserialize, Default)]
struct Empty {}

async fn remove(
    State(app): State<Arc<App>>,
    Path(user_id): Path<String>,
    Posted { viewer, .. }: Posted<Empty>,
) -> Result<Response, WebError> {
    viewer.require(Action::ManageTeam)?;
    finish(
        &app,
        &viewer,
        accounts::change_member(&app, &viewer.signed_in, &user_id, None, viewer.ip).await,
        "flash.member_removed",
    )
    .await
}

/// A team change done → back to the page; refused → the page with the reason.
async fn finish(
    app: &App,
    viewer: &Viewer,
    outcome: Result<(), TeamError>,
    flash: &'static str,
) -> Result<Response, WebError> {
    match outcome {
        Ok(()) => Ok(see_other_with("/dashboard/team", flash)),
        Err(TeamError::Store(e)) => Err(WebError::internal(viewer.lang, e)),
        Err(e) => {
            let mut page = page(app, viewer).await?;
            page.error = Some(viewer.lang.t(e.code()).to_owned());
            render_status(StatusCode::CONFLICT, &page)
        }
    }
}

async fn revoke(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Posted { viewer, .. }: Posted<Empty>,
) -> Result<Response, WebError> {
    viewer.require(Action::ManageTeam)?;
    if !accounts::revoke_invitation(&app, &viewer.signed_in, &id, viewer.ip).await? {
        return Err(WebError::NotFound(viewer.lang));
    }
    Ok(see_other_with(
        "/dashboard/team",
        "flash.invitation_revoked",
    ))
}
