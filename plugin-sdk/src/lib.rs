//! The crate PSP adapters are written with.
//!
//! An adapter is a type implementing [`Adapter`], exported with [`export!`]; it never touches
//! the raw [`bindings`]. Everything it does outside itself goes through a [`Host`], so the same
//! code runs in the component ([`host::WasmHost`]) and in native tests
//! ([`host::fake::FakeHost`]).
//!
//! Modules, one concept each:
//! - [`manifest`] — what the adapter declares (the SDK adds the WIT version);
//! - [`context`] — the call context, with named lookups of fields and endpoints;
//! - [`host`] — the imports behind a trait, and the fake for tests;
//! - [`http`] — request builder and response helpers: [`Request::call`](http::Request::call)
//!   sends and classifies failures, [`Response::decode`](http::Response::decode) reads the answer;
//! - [`oauth`] — client-credentials tokens, cached, with one retry on 401;
//! - [`central_bank`] — the central bank's Pix API, parameterised by per-PSP facts;
//! - [`brcode`] — Pix BR Codes built from a charge's location;
//! - [`error`] — classification into the WIT error variant, and the typed refusal [`Reason`];
//! - [`idempotency`] — creating at most once at a PSP without idempotency keys;
//! - [`money`] — centavos ⇄ wire amounts;
//! - [`time`] — RFC 3339 timestamps.
//!
//! See `README.md` for a walkthrough.

/// Raw bindings to the `pixgw:psp` world, generated from the crate's own `wit/` (the host reads the same
/// folder), so the crate builds from crates.io or a checkout alike.
#[allow(clippy::too_many_arguments)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "adapter",
        pub_export_macro: true,
        export_macro_name: "export_adapter",
        default_bindings_module: "pixgw_plugin_sdk::bindings",
    });
}

pub mod brcode;
pub mod central_bank;
pub mod context;
pub mod error;
pub mod host;
pub mod http;
pub mod idempotency;
pub mod manifest;
pub mod money;
pub mod oauth;
pub mod time;

/// The WIT types an adapter works with.
pub mod types {
    pub use crate::bindings::pixgw::psp::types::{
        Charge, ChargeRequest, ChargeStatus, Environment, Payer, Payment, PaymentEvent,
        WebhookRequest,
    };

    /// A notification's event saying what the charge now is: for PSPs whose notification names
    /// (or is) the charge. An empty reference (a charge the PSP holds without ours) is `None`.
    impl From<Charge> for PaymentEvent {
        fn from(charge: Charge) -> Self {
            PaymentEvent {
                reference: Some(charge.reference).filter(|r| !r.is_empty()),
                psp_id: Some(charge.psp_id),
                status: charge.status,
                payment: charge.payment,
            }
        }
    }
}

pub use context::Context;
pub use error::{Error, Op, PspError, Reason};
pub use host::Host;
pub use manifest::Manifest;
pub use types::*;

/// The version of the WIT package this SDK was built against; every manifest reports it.
pub const WIT_VERSION: &str = "2.0.0";

/// What an adapter does, one method per WIT export. Optional operations default to
/// `unsupported`; implement the ones the manifest's capabilities declare.
pub trait Adapter {
    fn manifest() -> Manifest;

    /// Create a charge; repeating it with the same reference must not create a second one.
    fn create(host: &dyn Host, ctx: &Context, request: &ChargeRequest) -> Result<Charge, Error>;

    fn query(
        host: &dyn Host,
        ctx: &Context,
        reference: &str,
        psp_id: Option<&str>,
    ) -> Result<Charge, Error>;

    fn parse_webhook(
        host: &dyn Host,
        ctx: &Context,
        request: &WebhookRequest,
    ) -> Result<Vec<PaymentEvent>, Error>;

    fn cancel(
        host: &dyn Host,
        ctx: &Context,
        reference: &str,
        psp_id: Option<&str>,
    ) -> Result<Charge, Error> {
        let _ = (host, ctx, reference, psp_id);
        Err(Error::unsupported("cancel-charge"))
    }

    fn register_webhook(host: &dyn Host, ctx: &Context) -> Result<(), Error> {
        let _ = (host, ctx);
        Err(Error::unsupported("register-webhook"))
    }

    fn check_credentials(host: &dyn Host, ctx: &Context) -> Result<(), Error> {
        let _ = (host, ctx);
        Err(Error::unsupported("check-credentials"))
    }
}

/// Exports an [`Adapter`] as the component's `adapter` world: `pixgw_plugin_sdk::export!(Efi);`.
#[macro_export]
macro_rules! export {
    ($adapter:ty) => {
        const _: () = {
            use $crate::__glue as glue;
            struct PixgwGuest;
            impl $crate::bindings::Guest for PixgwGuest {
                fn manifest() -> glue::WitManifest {
                    glue::manifest::<$adapter>()
                }
                fn create_charge(
                    ctx: glue::CallContext,
                    request: glue::ChargeRequest,
                ) -> glue::Result<glue::Charge> {
                    <$adapter as $crate::Adapter>::create(&glue::HOST, &ctx.into(), &request)
                }
                fn query_charge(
                    ctx: glue::CallContext,
                    reference: glue::String,
                    psp_id: Option<glue::String>,
                ) -> glue::Result<glue::Charge> {
                    <$adapter as $crate::Adapter>::query(
                        &glue::HOST,
                        &ctx.into(),
                        &reference,
                        psp_id.as_deref(),
                    )
                }
                fn parse_webhook(
                    ctx: glue::CallContext,
                    request: glue::WebhookRequest,
                ) -> glue::Result<glue::Vec<glue::PaymentEvent>> {
                    <$adapter as $crate::Adapter>::parse_webhook(&glue::HOST, &ctx.into(), &request)
                }
                fn cancel_charge(
                    ctx: glue::CallContext,
                    reference: glue::String,
                    psp_id: Option<glue::String>,
                ) -> glue::Result<glue::Charge> {
                    <$adapter as $crate::Adapter>::cancel(
                        &glue::HOST,
                        &ctx.into(),
                        &reference,
                        psp_id.as_deref(),
                    )
                }
                fn register_webhook(ctx: glue::CallContext) -> glue::Result<()> {
                    <$adapter as $crate::Adapter>::register_webhook(&glue::HOST, &ctx.into())
                }
                fn check_credentials(ctx: glue::CallContext) -> glue::Result<()> {
                    <$adapter as $crate::Adapter>::check_credentials(&glue::HOST, &ctx.into())
                }
            }
    $crate::bindings::export_adapter!(PixgwGuest with_types_in $crate::bindings);
        };
    };
}

#[doc(hidden)]
pub mod __glue {
    pub use crate::bindings::pixgw::psp::types::{
        CallContext, Charge, ChargeRequest, Manifest as WitManifest, PaymentEvent, WebhookRequest,
    };
    pub use std::string::String;
    pub use std::vec::Vec;

    pub type Result<T> = core::result::Result<T, crate::Error>;

    pub static HOST: crate::host::WasmHost = crate::host::WasmHost;

    pub fn manifest<A: crate::Adapter>() -> WitManifest {
        A::manifest().into_wit()
    }
}

/// Everything an adapter usually imports.
pub mod prelude {
    pub use crate::central_bank::{self, CentralBankAdapter, CentralBankPsp, Source};
    pub use crate::error::{Error, Op, PspError, Reason};
    pub use crate::http::{Method, Request, Response};
    pub use crate::idempotency::CreateOnce;
    pub use crate::manifest::{
        Capabilities, CredentialField, Endpoint, Manifest, PayerField, WebhookAuth,
    };
    pub use crate::oauth::{BodyEncoding, ClientAuth};
    pub use crate::types::*;
    pub use crate::{Adapter, Context, Host, export};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_charge_as_a_notification_event() {
        let charge = |reference: &str| Charge {
            reference: reference.into(),
            psp_id: "pay_1".into(),
            status: ChargeStatus::Paid,
            amount: 1990,
            copy_paste: Some("000201…".into()),
            qr_png_base64: None,
            expires_at: None,
            payment: Some(Payment {
                end_to_end_id: Some("E123".into()),
                amount: 1990,
                paid_at: "2024-05-01T13:15:00Z".into(),
            }),
        };
        let event = PaymentEvent::from(charge("ref1"));
        assert_eq!(
            (
                event.reference.as_deref(),
                event.psp_id.as_deref(),
                event.status
            ),
            (Some("ref1"), Some("pay_1"), ChargeStatus::Paid)
        );
        let payment = event.payment.unwrap();
        assert_eq!(
            (payment.end_to_end_id.as_deref(), payment.amount),
            (Some("E123"), 1990)
        );
        assert_eq!(PaymentEvent::from(charge("")).reference, None);
    }
}
