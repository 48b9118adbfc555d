//! The stripe adapter, loaded by the real runtime, against the Stripe simulator.

use crate::common;

use std::time::Duration;

use common::*;
use hmac::Mac as _;
use pixgw::runtime::{
    CallError, ChargeRequest, ChargeStatus, Limits, PspError, PspErrorDetail, RefusalReason,
    WebhookAuth, WebhookRequest,
};
use serde_json::{Value, json};

const ID: &str = "stripe";
const BASE_PATH: &str = "/api/wh/cred-stripe";

fn pix_request(amount: u64, email: &str) -> ChargeRequest {
    let mut request = charge_request(amount);
    request.payer.email = Some(email.into());
    request
}

/// The simulator with its webhook endpoint (a dashboard setting at Stripe) pointed at a local
/// receiver, and the runtime with the stripe adapter.
async fn setup() -> (
    psp_sim::Sim,
    TestRuntime,
    String,
    tokio::sync::mpsc::UnboundedReceiver<WebhookRequest>,
) {
    let sim = start_sim().await;
    let rt = runtime_with(&[ID], Limits::default(), Some(&sim)).await;
    let (url, deliveries) = webhook_receiver(BASE_PATH).await;
    sim_control(
        &sim,
        "/_sim/config",
        Some(json!({ "provider": ID, "webhook_url": url })),
    )
    .await;
    (sim, rt, url, deliveries)
}

async fn next(
    deliveries: &mut tokio::sync::mpsc::UnboundedReceiver<WebhookRequest>,
) -> WebhookRequest {
    tokio::time::timeout(Duration::from_secs(10), deliveries.recv())
        .await
        .expect("a notification within 10 s")
        .unwrap()
}

/// Sets the simulated account's settings (`pix_enabled`, `country`) on the Stripe listener.
async fn account(sim: &psp_sim::Sim, patch: Value) {
    let tls = psp_sim::tls::client_config(&sim.ca_pem(), None).unwrap();
    let client = reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .build()
        .unwrap();
    let api = &sim.provider(ID).unwrap().endpoints["api"];
    let res = client
        .post(format!("{api}/_sim/account"))
        .json(&patch)
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success());
}

fn rejected(result: Result<pixgw::runtime::Charge, CallError>) -> (&'static str, PspErrorDetail) {
    match result {
        Err(CallError::Psp { error, .. }) => match error {
            PspError::Rejected(d) => ("rejected", d),
            PspError::BadCredentials(d) => ("bad-credentials", d),
            PspError::Ambiguous(d) => ("ambiguous", d),
            other => panic!("unexpected error {other:?}"),
        },
        other => panic!("expected a PSP error, got {other:?}"),
    }
}

#[tokio::test]
async fn create_query_pay_notify_cancel() {
    let (sim, rt, url, mut deliveries) = setup().await;
    let psp = rt.runtime.adapter(ID).unwrap();
    assert_eq!(psp.manifest().webhook_auth, WebhookAuth::PspSignature);
    let cred = psp.prepare(&sim_credential(&sim, ID, Some(url)));
    psp.check_credentials(&cred, "req-check").await.unwrap();

    let request = pix_request(1234, "ana@example.com");
    let charge = psp
        .create_charge(&cred, "req-create", &request)
        .await
        .unwrap();
    assert_eq!(charge.reference, request.reference);
    assert!(charge.psp_id.starts_with("pi_"), "{}", charge.psp_id);
    assert_eq!(
        (charge.status, charge.amount),
        (ChargeStatus::Pending, 1234)
    );
    let code = charge.copy_paste.as_deref().unwrap();
    assert!(psp_sim::brcode::crc_is_valid(code), "{code}");
    let fields = psp_sim::brcode::parse_fields(code).unwrap();
    assert!(fields.contains(&("54".into(), "12.34".into())), "{code}");
    assert_eq!(charge.qr_png_base64, None, "the host draws the QR");
    assert!(charge.expires_at.is_some());

    let by_id = psp
        .query_charge(&cred, "req-q", &request.reference, Some(&charge.psp_id))
        .await
        .unwrap();
    assert_eq!((by_id.status, by_id.payment), (ChargeStatus::Pending, None));
    let by_reference = psp
        .query_charge(&cred, "req-q2", &request.reference, None)
        .await
        .unwrap();
    assert_eq!(by_reference.psp_id, charge.psp_id);

    sim_control(
        &sim,
        "/_sim/pay",
        Some(json!({ "provider": ID, "reference": request.reference })),
    )
    .await;
    let delivery = next(&mut deliveries).await;
    assert!(
        delivery
            .headers
            .iter()
            .any(|(k, _)| k == "stripe-signature")
    );
    let events = psp.parse_webhook(&cred, "req-wh", &delivery).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(
        (
            events[0].reference.as_deref(),
            events[0].psp_id.as_deref(),
            events[0].status
        ),
        (
            Some(request.reference.as_str()),
            Some(charge.psp_id.as_str()),
            ChargeStatus::Paid
        )
    );
    assert_eq!(events[0].payment.as_ref().map(|p| p.amount), Some(1234));

    let paid = psp
        .query_charge(&cred, "req-q3", &request.reference, Some(&charge.psp_id))
        .await
        .unwrap();
    assert_eq!(paid.status, ChargeStatus::Paid);
    let payment = paid.payment.unwrap();
    assert_eq!(payment.amount, 1234);
    assert_eq!(payment.end_to_end_id.map(|e| e.len()), Some(32));

    let other = pix_request(500, "ana@example.com");
    psp.create_charge(&cred, "req-c2", &other).await.unwrap();
    let canceled = psp
        .cancel_charge(&cred, "req-cancel", &other.reference, None)
        .await
        .unwrap();
    assert_eq!(canceled.status, ChargeStatus::Canceled);
    let delivery = next(&mut deliveries).await;
    let events = psp
        .parse_webhook(&cred, "req-wh2", &delivery)
        .await
        .unwrap();
    assert_eq!(
        (events[0].reference.as_deref(), events[0].status),
        (Some(other.reference.as_str()), ChargeStatus::Canceled)
    );
}

#[tokio::test]
async fn a_wrong_key_is_bad_credentials_with_stripes_message() {
    let sim = start_sim().await;
    let rt = runtime_with(&[ID], Limits::default(), Some(&sim)).await;
    let psp = rt.runtime.adapter(ID).unwrap();
    let mut credential = sim_credential(&sim, ID, None);
    credential
        .fields
        .insert("secret-key".into(), "sk_test_notthekeyWXYZ".into());
    let cred = psp.prepare(&credential);
    let (kind, detail) = rejected(
        psp.create_charge(&cred, "req", &pix_request(1000, "ana@example.com"))
            .await,
    );
    assert_eq!(kind, "bad-credentials");
    assert_eq!(detail.message, "Invalid API Key provided: sk_test_****WXYZ");
    assert_eq!(detail.http_status, Some(401));
    assert_eq!(detail.reason, RefusalReason::Credentials);
}

#[tokio::test]
async fn a_restricted_key_works_and_a_live_key_is_refused_before_stripe_sees_it() {
    let sim = start_sim().await;
    let rt = runtime_with(&[ID], Limits::default(), Some(&sim)).await;
    let psp = rt.runtime.adapter(ID).unwrap();
    let restricted = sim.provider(ID).unwrap().other_credentials["restricted"].clone();
    assert!(restricted["secret-key"].starts_with("rk_test_"));
    let mut credential = sim_credential(&sim, ID, None);
    credential.fields = restricted;
    let cred = psp.prepare(&credential);
    psp.check_credentials(&cred, "req-check").await.unwrap();
    let charge = psp
        .create_charge(&cred, "req", &pix_request(1000, "ana@example.com"))
        .await
        .unwrap();
    assert_eq!(charge.status, ChargeStatus::Pending);

    let seen = sim_control(&sim, "/_sim/requests?provider=stripe", None)
        .await
        .as_array()
        .unwrap()
        .len();
    credential
        .fields
        .insert("secret-key".into(), "rk_live_51somethingLIVE".into());
    let cred = psp.prepare(&credential);
    let (kind, detail) = rejected(
        psp.create_charge(&cred, "req", &pix_request(1000, "ana@example.com"))
            .await,
    );
    assert_eq!(kind, "bad-credentials");
    assert!(detail.message.contains("live key"), "{}", detail.message);
    assert_eq!(detail.reason, RefusalReason::Credentials);
    let after = sim_control(&sim, "/_sim/requests?provider=stripe", None).await;
    assert_eq!(
        after.as_array().unwrap().len(),
        seen,
        "nothing reached Stripe"
    );
}

#[tokio::test]
async fn pix_not_enabled_is_rejected_with_stripes_message() {
    let sim = start_sim().await;
    let rt = runtime_with(&[ID], Limits::default(), Some(&sim)).await;
    account(&sim, json!({ "pix_enabled": false })).await;
    let psp = rt.runtime.adapter(ID).unwrap();
    let cred = psp.prepare(&sim_credential(&sim, ID, None));
    let (kind, detail) = rejected(
        psp.create_charge(&cred, "req", &pix_request(1000, "ana@example.com"))
            .await,
    );
    assert_eq!(kind, "rejected");
    assert!(
        detail
            .message
            .starts_with("The payment method type \"pix\" is invalid."),
        "{detail:?}"
    );
    assert_eq!(
        detail.code.as_deref(),
        Some("payment_method_invalid_parameter")
    );
    assert_eq!(detail.http_status, Some(400));
    assert_eq!(detail.reason, RefusalReason::PixNotEnabled);
}

#[tokio::test]
async fn an_intent_without_pix_data_is_rejected_with_the_country_hint() {
    let sim = start_sim().await;
    let rt = runtime_with(&[ID], Limits::default(), Some(&sim)).await;
    account(&sim, json!({ "country": "US" })).await;
    let psp = rt.runtime.adapter(ID).unwrap();
    let cred = psp.prepare(&sim_credential(&sim, ID, None));
    let (kind, detail) = rejected(
        psp.create_charge(&cred, "req", &pix_request(1000, "ana@example.com"))
            .await,
    );
    assert_eq!(kind, "rejected");
    assert!(
        detail.message.contains("without Pix data") && detail.message.contains("country"),
        "{detail:?}"
    );
    assert_eq!(detail.reason, RefusalReason::AccountCannotTakePix);
    // The useless intent was canceled, so nobody can complete it.
    let held = sim_control(&sim, "/_sim/charges?provider=stripe", None).await;
    assert_eq!(held[0]["status"], "canceled", "{held}");
}

/// Re-signs `body` as Stripe would at time `t`.
fn stripe_signature(secret: &str, t: i64, body: &[u8]) -> String {
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.").as_bytes());
    mac.update(body);
    format!("t={t},v1={}", hex::encode(mac.finalize().into_bytes()))
}

fn with_signature(delivery: &WebhookRequest, signature: String, body: Vec<u8>) -> WebhookRequest {
    let mut forged = delivery.clone();
    forged.headers.retain(|(k, _)| k != "stripe-signature");
    forged.headers.push(("stripe-signature".into(), signature));
    forged.body = body;
    forged
}

#[tokio::test]
async fn bad_or_stale_signatures_are_refused() {
    let (sim, rt, url, mut deliveries) = setup().await;
    let psp = rt.runtime.adapter(ID).unwrap();
    let credential = sim_credential(&sim, ID, Some(url));
    let secret = credential.fields["webhook-secret"].clone();
    let cred = psp.prepare(&credential);
    let request = pix_request(1000, "ana@example.com");
    psp.create_charge(&cred, "req", &request).await.unwrap();
    sim_control(
        &sim,
        "/_sim/pay",
        Some(json!({ "provider": ID, "reference": request.reference })),
    )
    .await;
    let delivery = next(&mut deliveries).await;
    psp.parse_webhook(&cred, "req-ok", &delivery).await.unwrap();

    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let tampered = String::from_utf8(delivery.body.clone())
        .unwrap()
        .replace("1000", "9000")
        .into_bytes();
    let cases = [
        (
            "tampered body",
            with_signature(
                &delivery,
                delivery
                    .headers
                    .iter()
                    .find(|(k, _)| k == "stripe-signature")
                    .unwrap()
                    .1
                    .clone(),
                tampered,
            ),
        ),
        (
            "another secret",
            with_signature(
                &delivery,
                stripe_signature("whsec_other", now, &delivery.body),
                delivery.body.clone(),
            ),
        ),
        (
            "stale",
            with_signature(
                &delivery,
                stripe_signature(&secret, now - 600, &delivery.body),
                delivery.body.clone(),
            ),
        ),
    ];
    for (what, forged) in cases {
        match psp.parse_webhook(&cred, "req-bad", &forged).await {
            Err(CallError::Psp {
                error: PspError::InvalidWebhook(reason),
                ..
            }) => assert!(reason.contains("Stripe-Signature"), "{what}: {reason}"),
            other => panic!("{what}: expected invalid-webhook, got {other:?}"),
        }
    }
    // Several v1 values, one right, as during a secret rotation.
    let good = stripe_signature(&secret, now, &delivery.body);
    let rotated = with_signature(
        &delivery,
        format!("{good},v1={}", "0".repeat(64)),
        delivery.body.clone(),
    );
    psp.parse_webhook(&cred, "req-rot", &rotated).await.unwrap();
}

#[tokio::test]
async fn the_sandbox_email_pays_with_no_control_call() {
    let (sim, rt, url, mut deliveries) = setup().await;
    let psp = rt.runtime.adapter(ID).unwrap();
    let cred = psp.prepare(&sim_credential(&sim, ID, Some(url)));
    let request = pix_request(1500, "paid@example.com");
    let charge = psp.create_charge(&cred, "req", &request).await.unwrap();
    assert_eq!(charge.status, ChargeStatus::Pending);
    let delivery = tokio::time::timeout(Duration::from_secs(5), deliveries.recv())
        .await
        .expect("paid within seconds")
        .unwrap();
    let events = psp.parse_webhook(&cred, "req-wh", &delivery).await.unwrap();
    assert_eq!(events[0].status, ChargeStatus::Paid);
    let paid = psp
        .query_charge(&cred, "req-q", &request.reference, Some(&charge.psp_id))
        .await
        .unwrap();
    assert_eq!(paid.status, ChargeStatus::Paid);
}

#[tokio::test]
async fn an_ambiguous_create_is_found_by_reference() {
    let sim = start_sim().await;
    let rt = runtime_with(&[ID], Limits::default(), Some(&sim)).await;
    sim_control(
        &sim,
        "/_sim/faults",
        Some(json!({ "provider": ID, "drop_reply_after_create": 1 })),
    )
    .await;
    let psp = rt.runtime.adapter(ID).unwrap();
    let cred = psp.prepare(&sim_credential(&sim, ID, None));
    let request = pix_request(1000, "ana@example.com");
    let (kind, _) = rejected(psp.create_charge(&cred, "req", &request).await);
    assert_eq!(kind, "ambiguous");
    let found = psp
        .query_charge(&cred, "req-q", &request.reference, None)
        .await
        .unwrap();
    assert_eq!(found.status, ChargeStatus::Pending);
    assert!(found.copy_paste.is_some());
    // A retried create replays the same intent (same Idempotency-Key and parameters).
    let again = psp
        .create_charge(&cred, "req-again", &request)
        .await
        .unwrap();
    assert_eq!(again.psp_id, found.psp_id);
    let held = sim_control(&sim, "/_sim/charges?provider=stripe", None).await;
    assert_eq!(held.as_array().map(Vec::len), Some(1), "{held}");
}
