//! Role × route: every dashboard page and action, tried by each of the four roles over HTTP.
//! Each route names the action that guards it; the server must answer 403 exactly when the
//! policy denies that action to the role, and never fail otherwise. The policy's own matrix
//! is pinned in `policy.rs`; this pins that every route asks it.

use pixgw::policy::{Action, Role, allows};

use super::accounts::{gateway, join_as};
use crate::both_backends;
use crate::common::gateway::{Backend, TestDb};
use crate::dashboard::support::Visitor;

/// (method, path, the action that guards it; `None`: every signed-in person)
const ROUTES: &[(&str, &str, Option<Action>)] = &[
    ("GET", "/dashboard", Some(Action::ViewOverview)),
    ("GET", "/dashboard/account", None),
    ("GET", "/dashboard/team", Some(Action::ViewTeam)),
    ("POST", "/dashboard/team/invite", Some(Action::ManageTeam)),
    (
        "POST",
        "/dashboard/team/members/usr_unknown/role",
        Some(Action::ManageTeam),
    ),
    (
        "POST",
        "/dashboard/team/members/usr_unknown/remove",
        Some(Action::ManageTeam),
    ),
    (
        "POST",
        "/dashboard/team/invitations/inv_unknown/revoke",
        Some(Action::ManageTeam),
    ),
    ("GET", "/dashboard/cashier", Some(Action::UseCashier)),
    ("POST", "/dashboard/cashier", Some(Action::UseCashier)),
    ("GET", "/dashboard/charges", Some(Action::ViewCharges)),
    (
        "POST",
        "/dashboard/charges/chg_unknown/evidence",
        Some(Action::AttachEvidence),
    ),
    (
        "GET",
        "/dashboard/charges/chg_unknown/evidence/evi_unknown/photo",
        Some(Action::ViewEvidence),
    ),
    ("GET", "/dashboard/statement", Some(Action::ViewCharges)),
    ("GET", "/dashboard/statement.csv", Some(Action::ViewCharges)),
    ("GET", "/dashboard/links", Some(Action::ViewPaymentLinks)),
    ("POST", "/dashboard/links", Some(Action::ManagePaymentLinks)),
    (
        "POST",
        "/dashboard/links/plink_unknown",
        Some(Action::ManagePaymentLinks),
    ),
    (
        "POST",
        "/dashboard/links/plink_unknown/deactivate",
        Some(Action::ManagePaymentLinks),
    ),
    (
        "POST",
        "/dashboard/links/plink_unknown/activate",
        Some(Action::ManagePaymentLinks),
    ),
    ("GET", "/dashboard/psps", Some(Action::ViewCredentials)),
    ("GET", "/dashboard/api-keys", Some(Action::ViewApiKeys)),
    (
        "GET",
        "/dashboard/webhooks",
        Some(Action::ViewWebhookEndpoints),
    ),
    ("GET", "/dashboard/audit", Some(Action::ViewAudit)),
    ("GET", "/dashboard/adapters", Some(Action::ViewAdapters)),
    ("GET", "/dashboard/plan", Some(Action::ManagePlan)),
    ("POST", "/dashboard/plan", Some(Action::ManagePlan)),
    ("GET", "/dashboard/settings/sso", Some(Action::ManageSso)),
    ("POST", "/dashboard/settings/sso", Some(Action::ManageSso)),
    (
        "POST",
        "/dashboard/settings/sso/remove",
        Some(Action::ManageSso),
    ),
];

/// The navigation's links and the action that shows each.
const NAV: &[(&str, Action)] = &[
    ("href=\"/dashboard/cashier\"", Action::UseCashier),
    ("href=\"/dashboard/charges\"", Action::ViewCharges),
    ("href=\"/dashboard/statement\"", Action::ViewCharges),
    ("href=\"/dashboard/links\"", Action::ViewPaymentLinks),
    ("href=\"/dashboard/psps\"", Action::ViewCredentials),
    ("href=\"/dashboard/api-keys\"", Action::ViewApiKeys),
    ("href=\"/dashboard/webhooks\"", Action::ViewWebhookEndpoints),
    ("href=\"/dashboard/team\"", Action::ViewTeam),
    ("href=\"/dashboard/audit\"", Action::ViewAudit),
    ("href=\"/dashboard/adapters\"", Action::ViewAdapters),
    ("href=\"/dashboard/plan\"", Action::ManagePlan),
    ("href=\"/dashboard/settings/sso\"", Action::ManageSso),
];

both_backends!(every_route_asks_the_policy);
async fn every_route_asks_the_policy(backend: Backend) {
    let db = TestDb::new(backend).await;
    let gw = gateway(&db).await;
    let owner = Visitor::sign_up(&gw, "Loja", "dono@loja.com.br").await;
    let people = [
        (
            Role::Manager,
            join_as(&gw, &owner, "gerente@loja.com.br", "manager").await,
        ),
        (
            Role::Cashier,
            join_as(&gw, &owner, "caixa@loja.com.br", "cashier").await,
        ),
        (
            Role::ReadOnly,
            join_as(&gw, &owner, "leitura@loja.com.br", "read_only").await,
        ),
        (Role::Owner, owner),
    ];
    let mut wrong = Vec::new();
    for (role, visitor) in &people {
        let overview = visitor.get("/dashboard").await;
        overview.assert_ok();
        for (link, action) in NAV {
            if overview.body.contains(link) != allows(*role, *action) {
                wrong.push(format!(
                    "{role}: nav link {link} shown = {}",
                    !allows(*role, *action)
                ));
            }
        }
        for (method, path, action) in ROUTES {
            let answer = match *method {
                "GET" => visitor.get(path).await,
                // Empty forms: an allowed role gets a validation answer, never a change.
                _ => visitor.post(path, &[]).await,
            };
            let allowed = action.is_none_or(|a| allows(*role, a));
            let ok = if allowed {
                answer.status != 403 && answer.status < 500
            } else {
                answer.status == 403 && answer.text().contains("Access denied")
            };
            if !ok {
                wrong.push(format!(
                    "{role} {method} {path}: {} (allowed: {allowed})",
                    answer.status
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "routes that disagree with the policy:\n{}",
        wrong.join("\n")
    );
}
