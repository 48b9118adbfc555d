//! pixgw, the gateway.
//!
//! - [`runtime`]: the sandboxed PSP adapters — wasmtime engine, registry with hot reload, and the
//!   host side of the `pixgw:psp` contract (outbound HTTP, cache, crypto, log).
//! - [`api`]: the HTTP surface, one router per module.
//! - [`app`]: the running gateway's shared parts; [`config`]: operator settings parsed into types.
//! - [`domain`]: values parsed at the edge (amounts, documents, references, BR Codes, keys).
//! - [`charges`], [`credentials`]: what the API does, without HTTP; [`routing`]: `random`.
//! - [`store`]: SQLite / PostgreSQL; [`vault`]: encryption of secrets at rest.
//! - [`webhooks`]: PSP notifications in, signed events out; [`reconciler`]: asks PSPs about
//!   charges that can still change; [`live`]: status changes for live screens.
//! - [`metrics`]: Prometheus metrics; [`rate_limit`]: requests per API key.
//! - [`supervisor`]: background tasks restarted after a panic.
//! - [`web`]: the merchant dashboard (`/dashboard`); [`accounts`]: people, passwords, sessions
//!   and invitations; [`policy`]: who may do what; [`audit`]: every change with its actor.
//! - [`api_keys`]: issuing, listing and revoking merchants' API keys (CLI and dashboard).
//! - [`statement`]: paid charges by payment day in the merchant's time zone: totals, the daily
//!   series and its chart, the CSV export.
//! - [`payment_links`]: merchants' public checkout pages (`/p/<slug>`) and the charges payers
//!   make through them.
//! - [`plans`]: the eight plans as one table, their limits and usage; [`retention`]: logs
//!   swept after the plan's retention days.
//! - [`evidence`]: sale evidence, a photo and the place attached to a paid charge, kept outside
//!   the database for 180 days.
//! - [`sso`]: single sign-on to the dashboard with the merchant's OpenID Connect provider.

pub mod accounts;
pub mod adapter_tools;
pub mod api;
pub mod api_keys;
pub mod app;
pub mod audit;
pub mod charges;
pub mod config;
pub mod credentials;
pub mod domain;
pub mod evidence;
pub mod live;
pub mod metrics;
pub mod payment_links;
pub mod plans;
pub mod policy;
pub mod rate_limit;
pub mod reconciler;
pub mod retention;
pub mod routing;
pub mod runtime;
pub mod sso;
pub mod statement;
pub mod store;
pub mod supervisor;
pub mod vault;
pub mod web;
pub mod webhooks;
