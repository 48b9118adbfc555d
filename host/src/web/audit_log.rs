//! `/dashboard/audit`: the merchant's audit log, newest first — who changed what, when and from
//! where, whether a team member, an API key or the gateway itself — filtered by actor, by
//! family of action and by São Paulo days, a page at a time ("older" follows a cursor).
//!
//! Actions are shown in words when the catalogs name them (`audit.action.<action>`); an action
//! they do not know yet is shown as recorded.

use std::sync::Arc;

use askama::Template;
use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use serde::Deserialize;

use super::charges::{DayRange, page_href, page_size};
use super::page::{Page, WebError, render, render_status};
use super::session::Viewer;
use crate::app::App;
use crate::policy::Action;
use crate::store::audit::{AuditFilter, AuditRecord};
use crate::store::users::Member;

pub fn router() -> Router<Arc<App>> {
    Router::new().route("/dashboard/audit", get(audit))
}

/// The families of actions (an action is `<family>.<verb>`), with their names' keys.
const KINDS: [(&str, &str); 10] = [
    ("account", "audit.kind.account"),
    ("session", "audit.kind.session"),
    ("team", "audit.kind.team"),
    ("credential", "audit.kind.credential"),
    ("api_key", "audit.kind.api_key"),
    ("webhook_endpoint", "audit.kind.webhook_endpoint"),
    ("event", "audit.kind.event"),
    ("charge", "audit.kind.charge"),
    ("plan", "audit.kind.plan"),
    ("sso", "audit.kind.sso"),
];

/// The catalog key that words an action, for the actions the gateway records.
fn action_key(action: &str) -> Option<&'static str> {
    Some(match action {
        "account.sign_up" => "audit.action.account.sign_up",
        "account.password_change" => "audit.action.account.password_change",
        "session.sign_in" => "audit.action.session.sign_in",
        "session.sign_out" => "audit.action.session.sign_out",
        "team.invite" => "audit.action.team.invite",
        "team.join" => "audit.action.team.join",
        "team.role_change" => "audit.action.team.role_change",
        "team.remove" => "audit.action.team.remove",
        "team.invitation_revoke" => "audit.action.team.invitation_revoke",
        "credential.connect" => "audit.action.credential.connect",
        "credential.update" => "audit.action.credential.update",
        "credential.reorder" => "audit.action.credential.reorder",
        "credential.delete" => "audit.action.credential.delete",
        "api_key.create" => "audit.action.api_key.create",
        "api_key.revoke" => "audit.action.api_key.revoke",
        "webhook_endpoint.create" => "audit.action.webhook_endpoint.create",
        "webhook_endpoint.update" => "audit.action.webhook_endpoint.update",
        "webhook_endpoint.rotate_secret" => "audit.action.webhook_endpoint.rotate_secret",
        "webhook_endpoint.delete" => "audit.action.webhook_endpoint.delete",
        "event.redeliver" => "audit.action.event.redeliver",
        "charge.cancel" => "audit.action.charge.cancel",
        "plan.change" => "audit.action.plan.change",
        "sso.configure" => "audit.action.sso.configure",
        "sso.remove" => "audit.action.sso.remove",
        "sso.sign_in" => "audit.action.sso.sign_in",
        "sso.sign_in_refused" => "audit.action.sso.sign_in_refused",
        "sso.member_created" => "audit.action.sso.member_created",
        "sso.password_refused" => "audit.action.sso.password_refused",
        "sso.role_set" => "audit.action.sso.role_set",
        _ => return None,
    })
}

/// The catalog key that names the kind of thing an entry changed.
fn target_key(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "merchant" => "audit.target.merchant",
        "user" => "audit.target.user",
        "invitation" => "audit.target.invitation",
        "credential" => "audit.target.credential",
        "api_key" => "audit.target.api_key",
        "webhook_endpoint" => "audit.target.webhook_endpoint",
        "event" => "audit.target.event",
        "charge" => "audit.target.charge",
        _ => return None,
    })
}

/// The page's address, as typed.
#[derive(Deserialize, Default)]
#[serde(default)]
struct AuditQuery {
    /// `user:<id>`, `api_key` or `system`.
    actor: String,
    /// An action family of [`KINDS`].
    kind: String,
    from: String,
    to: String,
    /// The last entry of the previous page: list older ones.
    before: String,
    limit: String,
}

/// The actor filter: (actor kind, actor id).
fn actor_of(value: &str) -> Result<(Option<String>, Option<String>), &'static str> {
    match value {
        "" => Ok((None, None)),
        "api_key" | "system" => Ok((Some(value.to_owned()), None)),
        _ => match value.strip_prefix("user:") {
            Some(id) if !id.is_empty() && id.len() <= 64 => {
                Ok((Some("user".into()), Some(id.to_owned())))
            }
            _ => Err("audit.filter.actor_invalid"),
        },
    }
}

/// The filters of a request, parsed; the error is a catalog key.
fn filter_of(query: &AuditQuery, limit: u32) -> Result<AuditFilter, &'static str> {
    let (actor_kind, actor_id) = actor_of(&query.actor)?;
    let action = match query.kind.as_str() {
        "" => None,
        kind if KINDS.iter().any(|(k, _)| *k == kind) => Some(kind.to_owned()),
        _ => return Err("audit.filter.kind_invalid"),
    };
    let range = DayRange::parse(&query.from, &query.to)?;
    Ok(AuditFilter {
        actor_kind,
        actor_id,
        action,
        created_gte: range.created_gte(),
        created_lt: range.created_lt(),
        before_id: Some(query.before.clone()).filter(|b| !b.is_empty()),
        // One more than shown, to tell whether older entries follow.
        limit: i64::from(limit) + 1,
    })
}

#[derive(Template)]
#[template(path = "audit.html")]
struct AuditPage {
    c: Page,
    query: AuditQuery,
    members: Vec<Member>,
    entries: Vec<AuditRecord>,
    error: Option<&'static str>,
    filtered: bool,
    older: Option<String>,
    newest: Option<String>,
}

impl AuditPage {
    fn kinds(&self) -> [(&'static str, &'static str); 10] {
        KINDS
    }

    fn member_value(&self, member: &Member) -> String {
        format!("user:{}", member.user_id)
    }

    /// Who acted, in words: a person's e-mail, an API key's prefix, or the gateway.
    fn actor(&self, entry: &AuditRecord) -> String {
        match entry.actor_kind.as_str() {
            "system" => self.c.t("audit.actor.system").to_owned(),
            "api_key" => {
                // The label is recorded as "API key <prefix>…"; the prefix is what people know.
                let prefix = entry
                    .actor_label
                    .strip_prefix("API key ")
                    .unwrap_or(&entry.actor_label);
                self.c.tf("audit.actor.api_key", &[("prefix", prefix)])
            }
            _ => entry.actor_label.clone(),
        }
    }

    fn action<'a>(&self, entry: &'a AuditRecord) -> &'a str {
        match action_key(&entry.action) {
            Some(key) => self.c.t(key),
            None => &entry.action,
        }
    }

    fn target_name<'a>(&self, kind: &'a str) -> &'a str {
        match target_key(kind) {
            Some(key) => self.c.t(key),
            None => kind,
        }
    }
}

async fn audit(
    State(app): State<Arc<App>>,
    viewer: Viewer,
    query: Result<Query<AuditQuery>, QueryRejection>,
) -> Result<Response, WebError> {
    viewer.require(Action::ViewAudit)?;
    let Query(query) =
        query.map_err(|_| WebError::BadRequest(viewer.lang, "error.form_malformed"))?;
    let limit = page_size(viewer.lang, &query.limit)?;
    let merchant_id = &viewer.signed_in.session.merchant_id;
    let filtered = [&query.actor, &query.kind, &query.from, &query.to]
        .iter()
        .any(|v| !v.trim().is_empty());
    let mut page = AuditPage {
        c: Page::new(&viewer, "audit.title"),
        members: app.store.members(merchant_id).await?,
        entries: Vec::new(),
        error: None,
        filtered,
        older: None,
        newest: None,
        query,
    };
    let filter = match filter_of(&page.query, limit) {
        Ok(filter) => filter,
        Err(key) => {
            page.error = Some(key);
            return render_status(StatusCode::UNPROCESSABLE_ENTITY, &page);
        }
    };
    let mut entries = app.store.audit_entries(merchant_id, &filter).await?;
    let has_more = entries.len() > limit as usize;
    entries.truncate(limit as usize);
    let q = &page.query;
    let keep = |before: &str| {
        page_href(
            "/dashboard/audit",
            &[
                ("actor", &q.actor),
                ("kind", &q.kind),
                ("from", &q.from),
                ("to", &q.to),
                ("before", before),
                ("limit", &q.limit),
            ],
        )
    };
    page.older = entries
        .last()
        .filter(|_| has_more)
        .map(|last| keep(&last.id));
    page.newest = (!q.before.is_empty()).then(|| keep(""));
    page.entries = entries;
    render(&page)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web::i18n::Lang;

    #[test]
    fn the_actor_filter_names_a_person_api_keys_or_the_gateway() {
        assert_eq!(actor_of(""), Ok((None, None)));
        assert_eq!(actor_of("api_key"), Ok((Some("api_key".into()), None)));
        assert_eq!(actor_of("system"), Ok((Some("system".into()), None)));
        assert_eq!(
            actor_of("user:usr_1"),
            Ok((Some("user".into()), Some("usr_1".into())))
        );
        for bad in ["user:", "user", "admin", "API_KEY"] {
            assert_eq!(actor_of(bad), Err("audit.filter.actor_invalid"), "{bad:?}");
        }
    }

    #[test]
    fn filters_parse_at_the_edge() {
        let query = AuditQuery {
            kind: "team".into(),
            to: "2026-11-22".into(),
            before: "aud_9".into(),
            ..Default::default()
        };
        let filter = filter_of(&query, 25).unwrap();
        assert_eq!(filter.action.as_deref(), Some("team"));
        assert_eq!(filter.created_gte, None);
        assert_eq!(filter.created_lt, Some(1_795_402_800_000)); // 2026-11-23T03:00:00Z
        assert_eq!(filter.before_id.as_deref(), Some("aud_9"));
        assert_eq!(filter.limit, 26);
        let unknown = AuditQuery {
            kind: "team.invite".into(),
            ..Default::default()
        };
        assert_eq!(
            filter_of(&unknown, 25).err(),
            Some("audit.filter.kind_invalid")
        );
    }

    #[test]
    fn every_named_action_kind_and_target_has_words() {
        let actions = [
            "account.sign_up",
            "account.password_change",
            "session.sign_in",
            "session.sign_out",
            "team.invite",
            "team.join",
            "team.role_change",
            "team.remove",
            "team.invitation_revoke",
            "credential.connect",
            "credential.update",
            "credential.reorder",
            "credential.delete",
            "api_key.create",
            "api_key.revoke",
            "webhook_endpoint.create",
            "webhook_endpoint.update",
            "webhook_endpoint.rotate_secret",
            "webhook_endpoint.delete",
            "event.redeliver",
            "charge.cancel",
            "sso.configure",
            "sso.remove",
            "sso.sign_in",
            "sso.sign_in_refused",
            "sso.member_created",
            "sso.password_refused",
        ];
        let mut keys: Vec<&str> = actions.iter().map(|a| action_key(a).unwrap()).collect();
        keys.extend(KINDS.iter().map(|(_, key)| *key));
        keys.extend(
            [
                "merchant",
                "user",
                "invitation",
                "credential",
                "api_key",
                "webhook_endpoint",
                "event",
                "charge",
            ]
            .iter()
            .map(|k| target_key(k).unwrap()),
        );
        for key in keys {
            for lang in Lang::ALL {
                assert_ne!(lang.t(key), key, "{key} in {}", lang.tag());
            }
        }
        // Every action's family is one of the filter's kinds.
        for action in actions {
            let family = action.split('.').next().unwrap();
            assert!(KINDS.iter().any(|(k, _)| *k == family), "{action}");
        }
        assert_eq!(action_key("charge.teleport"), None);
    }
}
