//! Who may do what: the one place where a role meets an action. Dashboard pages, dashboard
//! forms and the API all ask [`allows`]; nothing else decides.
//!
//! - **owner**: everything.
//! - **manager**: sees everything but the adapters, the plan and single sign-on, runs the day
//!   (cashier, cancel a charge, redeliver an event), changes no configuration.
//! - **cashier**: the cashier, and only the sales they made (with their evidence).
//! - **read-only**: sees what a manager sees, changes nothing.
//!
//! An API key acts for its merchant as the owner's integration: it may do every API action
//! (the API has no team, adapter or audit management).

use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Owner,
    Manager,
    Cashier,
    ReadOnly,
}

impl Role {
    pub const ALL: [Role; 4] = [Role::Owner, Role::Manager, Role::Cashier, Role::ReadOnly];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Manager => "manager",
            Role::Cashier => "cashier",
            Role::ReadOnly => "read_only",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Role {
    type Err = String;

    fn from_str(s: &str) -> Result<Role, String> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| format!("{s:?} is not a role: owner, manager, cashier or read_only"))
    }
}

/// Everything a signed-in person can ask for. Views are separate from changes so that the
/// read-only role is a plain row of the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// The overview and its onboarding checklist.
    ViewOverview,
    /// Charges of every operator (a cashier sees only their own).
    ViewAllCharges,
    /// Charges at all, own or every operator's.
    ViewCharges,
    /// Create charges from the cashier screen.
    UseCashier,
    CancelCharge,
    ViewCredentials,
    /// Connect, change, reorder, deactivate PSP credentials.
    ManageCredentials,
    /// Read a credential's webhook token (a secret).
    RevealWebhookToken,
    ViewApiKeys,
    ManageApiKeys,
    ViewWebhookEndpoints,
    ManageWebhookEndpoints,
    RedeliverEvent,
    ViewTeam,
    ManageTeam,
    ViewAudit,
    ViewAdapters,
    /// Payment links (public checkout pages) and what they took.
    ViewPaymentLinks,
    /// Create, change, deactivate payment links.
    ManagePaymentLinks,
    /// A sale's evidence (photo, place) on the charges the viewer sees.
    ViewEvidence,
    /// Attach a photo and the place to a paid charge the viewer sees (a cashier: their own).
    AttachEvidence,
    /// The plan page: the plan, its usage, the change of plan.
    ManagePlan,
    /// Single sign-on: the identity provider, its domains and roles, requiring it.
    ManageSso,
}

impl Action {
    pub const ALL: [Action; 23] = [
        Action::ViewOverview,
        Action::ViewAllCharges,
        Action::ViewCharges,
        Action::UseCashier,
        Action::CancelCharge,
        Action::ViewCredentials,
        Action::ManageCredentials,
        Action::RevealWebhookToken,
        Action::ViewApiKeys,
        Action::ManageApiKeys,
        Action::ViewWebhookEndpoints,
        Action::ManageWebhookEndpoints,
        Action::RedeliverEvent,
        Action::ViewTeam,
        Action::ManageTeam,
        Action::ViewAudit,
        Action::ViewAdapters,
        Action::ViewPaymentLinks,
        Action::ManagePaymentLinks,
        Action::ViewEvidence,
        Action::AttachEvidence,
        Action::ManagePlan,
        Action::ManageSso,
    ];
}

/// Whether `role` may do `action`.
pub fn allows(role: Role, action: Action) -> bool {
    use Action::*;
    match role {
        Role::Owner => true,
        Role::Manager => !matches!(
            action,
            ManageCredentials
                | RevealWebhookToken
                | ManageApiKeys
                | ManageWebhookEndpoints
                | ManageTeam
                | ViewAdapters
                | ManagePaymentLinks
                | ManagePlan
                | ManageSso
        ),
        Role::Cashier => matches!(
            action,
            ViewOverview | ViewCharges | UseCashier | CancelCharge | ViewEvidence | AttachEvidence
        ),
        Role::ReadOnly => matches!(
            action,
            ViewOverview
                | ViewAllCharges
                | ViewCharges
                | ViewCredentials
                | ViewApiKeys
                | ViewWebhookEndpoints
                | ViewTeam
                | ViewAudit
                | ViewPaymentLinks
                | ViewEvidence
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Action::*;

    /// The whole matrix, row by row: a change to the policy shows up here as a diff.
    #[test]
    fn the_matrix() {
        let rows: [(Action, [bool; 4]); 23] = [
            //                        owner  manager cashier read-only
            (ViewOverview, [true, true, true, true]),
            (ViewAllCharges, [true, true, false, true]),
            (ViewCharges, [true, true, true, true]),
            (UseCashier, [true, true, true, false]),
            (CancelCharge, [true, true, true, false]),
            (ViewCredentials, [true, true, false, true]),
            (ManageCredentials, [true, false, false, false]),
            (RevealWebhookToken, [true, false, false, false]),
            (ViewApiKeys, [true, true, false, true]),
            (ManageApiKeys, [true, false, false, false]),
            (ViewWebhookEndpoints, [true, true, false, true]),
            (ManageWebhookEndpoints, [true, false, false, false]),
            (RedeliverEvent, [true, true, false, false]),
            (ViewTeam, [true, true, false, true]),
            (ManageTeam, [true, false, false, false]),
            (ViewAudit, [true, true, false, true]),
            (ViewAdapters, [true, false, false, false]),
            (ViewPaymentLinks, [true, true, false, true]),
            (ManagePaymentLinks, [true, false, false, false]),
            (ViewEvidence, [true, true, true, true]),
            (AttachEvidence, [true, true, true, false]),
            (ManagePlan, [true, false, false, false]),
            (ManageSso, [true, false, false, false]),
        ];
        assert_eq!(rows.len(), Action::ALL.len(), "every action has a row");
        for (action, expected) in rows {
            for (role, allowed) in Role::ALL.into_iter().zip(expected) {
                assert_eq!(allows(role, action), allowed, "{role} × {action:?}");
            }
        }
    }

    #[test]
    fn read_only_changes_nothing() {
        for action in [
            UseCashier,
            CancelCharge,
            ManageCredentials,
            ManageApiKeys,
            ManageWebhookEndpoints,
            RedeliverEvent,
            ManageTeam,
            ManagePaymentLinks,
            AttachEvidence,
            ManagePlan,
            ManageSso,
        ] {
            assert!(!allows(Role::ReadOnly, action), "{action:?}");
        }
    }

    #[test]
    fn roles_parse_from_their_names_only() {
        for role in Role::ALL {
            assert_eq!(role.as_str().parse::<Role>(), Ok(role));
        }
        assert!("admin".parse::<Role>().is_err());
        assert!("Owner".parse::<Role>().is_err());
    }
}
