//! An adapter built against contract `pixgw:psp@1.0.0` (`wit/psp.wit`, a frozen copy of that
//! release), the way an adapter compiled with `pixgw-plugin-sdk` 0.1 is: the gateway of
//! contract 2.x must refuse to load it and say to rebuild against the 2.x SDK. It imports the
//! host's `log` so that the component names the 1.0.0 interfaces it expects. Never shipped.

wit_bindgen::generate!({
    path: "wit",
    world: "adapter",
});

use pixgw::psp::log::{Level, log};
use pixgw::psp::types::{Capabilities, WebhookAuth};

struct ContractV1;

fn unsupported(operation: &str) -> Error {
    log(Level::Info, "contract 1.0.0 test adapter called", &[]);
    Error::Unsupported(format!(
        "the contract-1 test adapter does not implement {operation}"
    ))
}

impl Guest for ContractV1 {
    fn manifest() -> Manifest {
        Manifest {
            id: "contract-v1".into(),
            display_name: "Contract 1.0.0 test adapter".into(),
            kind: "test".into(),
            wit_version: "1.0.0".into(),
            credential_fields: Vec::new(),
            required_payer_fields: Vec::new(),
            endpoints: Vec::new(),
            webhook_auth: WebhookAuth::UrlToken,
            capabilities: Capabilities::empty(),
        }
    }

    fn create_charge(_: CallContext, _: ChargeRequest) -> Result<Charge, Error> {
        Err(unsupported("create-charge"))
    }

    fn query_charge(_: CallContext, _: String, _: Option<String>) -> Result<Charge, Error> {
        Err(unsupported("query-charge"))
    }

    fn parse_webhook(_: CallContext, _: WebhookRequest) -> Result<Vec<PaymentEvent>, Error> {
        Err(unsupported("parse-webhook"))
    }

    fn cancel_charge(_: CallContext, _: String, _: Option<String>) -> Result<Charge, Error> {
        Err(unsupported("cancel-charge"))
    }

    fn register_webhook(_: CallContext) -> Result<(), Error> {
        Err(unsupported("register-webhook"))
    }

    fn check_credentials(_: CallContext) -> Result<(), Error> {
        Err(unsupported("check-credentials"))
    }
}

export!(ContractV1);
