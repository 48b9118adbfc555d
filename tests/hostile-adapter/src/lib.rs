//! A purpose-built misbehaving adapter for the runtime's sandbox tests. Never shipped.
//!
//! The credential field `behaviour` picks what `create-charge` does:
//! `loop` spins forever, `alloc` allocates without bound, `egress` calls a host outside its
//! endpoints (and reports the host's answer verbatim), `panic` panics, `ok` answers a fixed
//! charge without any I/O.

use pixgw_plugin_sdk::prelude::*;

struct Hostile;

impl Adapter for Hostile {
    fn manifest() -> Manifest {
        Manifest {
            id: "hostile",
            display_name: "Hostile test adapter",
            kind: "test",
            credential_fields: vec![CredentialField::text("behaviour", "Behaviour")],
            required_payer_fields: vec![],
            endpoints: vec![Endpoint::new(
                "api",
                "https://127.0.0.1:9",
                "https://127.0.0.1:9",
            )],
            webhook_auth: WebhookAuth::HeaderToken("x-pixgw-token".into()),
            capabilities: Capabilities::empty(),
        }
    }

    fn create(host: &dyn Host, ctx: &Context, request: &ChargeRequest) -> Result<Charge, Error> {
        match ctx.field("behaviour")? {
            "loop" => {
                let mut counter: u64 = 0;
                loop {
                    counter = std::hint::black_box(counter.wrapping_add(1));
                }
            }
            "alloc" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 1 << 20]);
                    std::hint::black_box(&hoard);
                }
            }
            "egress" => {
                let answer = Request::get("https://example.com/exfiltrate").send(host);
                Err(Error::rejected(format!("{answer:?}")))
            }
            "panic" => panic!("hostile adapter panics on purpose"),
            _ => Ok(Charge {
                reference: request.reference.clone(),
                psp_id: "hostile-ok".into(),
                status: ChargeStatus::Pending,
                amount: request.amount,
                copy_paste: None,
                qr_png_base64: None,
                expires_at: None,
                payment: None,
            }),
        }
    }

    fn query(_: &dyn Host, _: &Context, reference: &str, _: Option<&str>) -> Result<Charge, Error> {
        Err(Error::NotFound(PspError::new(format!(
            "no charge {reference}"
        ))))
    }

    fn parse_webhook(
        _: &dyn Host,
        _: &Context,
        _: &WebhookRequest,
    ) -> Result<Vec<PaymentEvent>, Error> {
        Ok(vec![])
    }
}

export!(Hostile);
