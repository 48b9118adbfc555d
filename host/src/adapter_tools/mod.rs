//! The `pixgw plugins` commands, for adapter authors and operators:
//! - [`check`] — load adapter files exactly as `serve` would, print each manifest whole, and fail
//!   on anything that would not serve;
//! - [`scaffold`] — `plugins new`: a new adapter crate that builds outside this repository;
//! - [`build`] — `plugins build`: compile a crate to a component, check it, and only then put
//!   `<id>.wasm` in place atomically (a running gateway hot-reloads it);
//! - [`conformance`] — `plugins conformance`: a charge's whole life through one adapter against
//!   the PSP simulator, as the gateway drives it.

pub mod build;
pub mod check;
pub mod conformance;
pub mod scaffold;
