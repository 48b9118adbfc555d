//! The merchant dashboard, end to end: the real `pixgw` binary on SQLite and PostgreSQL,
//! driven over HTTP as a browser's forms would ([`support`]) and in headless Chromium
//! ([`browser`]). One module per area.

pub mod browser;
pub mod support;

mod accounts;
mod api_keys;
mod audit;
mod cashier;
mod charges;
mod checkout;
mod conflicts;
mod evidence;
mod links;
mod onboarding;
mod plans;
mod psps;
mod roles;
mod sso;
mod statement;
mod webhooks;
