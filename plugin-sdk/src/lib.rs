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
//! - [`http`] — request builder and response helpers;
//! - [`oauth`] — client-credentials tokens, cached, with one retry on 401;
//! - [`central_bank`] — the central bank's Pix API, parameterised by per-PSP facts;
//! - [`error`] — classification into the WIT error variant;
//! - [`money`] — centavos ⇄ wire amounts;
//! - [`time`] — RFC 3339 timestamps.
//!
//! See `README.md` for a walkthrough.

/// Raw bindings to the `pixgw:psp` world, generated from `wit/`.
#[allow(clippy::too_many_arguments)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../wit",
        world: "adapter",
        pub_export_macro: true,
        export_macro_name: "export_adapter",
        default_bindings_module: "pixgw_plugin_sdk::bindings",
    });
}

pub mod central_bank;
pub mod context;
pub mod error;
pub mod host;
pub mod http;
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
}

pub use context::Context;
pub use error::{Error, Op, PspError};
pub use host::Host;
pub use manifest::Manifest;
pub use types::*;

/// The version of the WIT package this SDK was built against; every manifest reports it.
pub const WIT_VERSION: &str = "1.0.0";

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
    pub use crate::central_bank::{self, CentralBankPsp, Source};
    pub use crate::error::{Error, Op, PspError};
    pub use crate::http::{Method, Request, Response};
    pub use crate::manifest::{
        Capabilities, CredentialField, Endpoint, Manifest, PayerField, WebhookAuth,
    };
    pub use crate::oauth::{BodyEncoding, ClientAuth};
    pub use crate::types::*;
    pub use crate::{Adapter, Context, Host, export};
}
