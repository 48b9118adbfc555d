//! The mercadopago adapter, loaded by the real runtime, against the Mercado Pago simulator.

use crate::common;

use std::time::Duration;

use common::*;
use pixgw::runtime::{
    CallError, ChargeRequest, ChargeStatus, Limits, PayerField, PspError, WebhookAuth,
    WebhookRequest,
};
use serde_json::json;

const ID: &str = "mercadopago";

fn pix_request(amount: u64) -> ChargeRequest {
    let mut request = charge_request(amount);
    request.payer.email = Some("ana@example.com".into());
    request.payer.document = Some("12345678909".into());
    request
}

async fn next(
    deliveries: &mut tokio::sync::mpsc::UnboundedReceiver<WebhookRequest>,
) -> WebhookRequest {
    tokio::time::timeout(Duration::from_secs(10), deliveries.recv())
        .await
        .expect("a notification within 10 s")
        .unwrap()
}

#[tokio::test]
async fn create_query_pay_notify_cancel() {
    let sim = start_sim().await;
    let rt = runtime_with(&[ID], Limits::default(), Some(&sim)).await;
    let (url, mut deliveries) = webhook_receiver("/api/wh/cred-mercadopago").await;
    let psp = rt.runtime.adapter(ID).unwrap();
    let manifest = psp.manifest();
    assert_eq!(manifest.webhook_auth, WebhookAuth::PspSignature);
    assert_eq!(manifest.required_payer_fields, vec![PayerField::Email]);
    // The notification URL travels with each payment (`notification_url`).
    let cred = psp.prepare(&sim_credential(&sim, ID, Some(url.clone())));
    psp.check_credentials(&cred, "req-check").await.unwrap();

    let request = pix_request(1234);
    let charge = psp
        .create_charge(&cred, "req-create", &request)
        .await
        .unwrap();
    assert_eq!(charge.reference, request.reference);
    assert!(
        charge.psp_id.bytes().all(|b| b.is_ascii_digit()),
        "{}",
        charge.psp_id
    );
    assert_eq!(
        (charge.status, charge.amount),
        (ChargeStatus::Pending, 1234)
    );
    let code = charge.copy_paste.as_deref().unwrap();
    assert!(psp_sim::brcode::crc_is_valid(code), "{code}");
    let fields = psp_sim::brcode::parse_fields(code).unwrap();
    assert!(fields.contains(&("54".into(), "12.34".into())), "{code}");
    assert!(
        charge
            .qr_png_base64
            .as_deref()
            .is_some_and(|p| p.starts_with("iVBOR"))
    );
    let expires = charge.expires_at.as_deref().unwrap();
    assert!(expires.ends_with('Z'), "{expires}");
    let held = sim_control(&sim, "/_sim/charges?provider=mercadopago", None).await;
    assert_eq!(
        held[0]["psp"]["notification_url"],
        format!("{url}?source_news=webhooks").as_str()
    );
    assert_eq!(held[0]["psp"]["payer"]["identification"]["type"], "CPF");

    let by_reference = psp
        .query_charge(&cred, "req-q", &request.reference, None)
        .await
        .unwrap();
    assert_eq!(
        (by_reference.psp_id.as_str(), by_reference.status),
        (charge.psp_id.as_str(), ChargeStatus::Pending)
    );

    sim_control(
        &sim,
        "/_sim/pay",
        Some(json!({ "provider": ID, "reference": request.reference })),
    )
    .await;
    let delivery = next(&mut deliveries).await;
    assert_eq!(
        delivery.query,
        format!(
            "source_news=webhooks&data.id={}&type=payment",
            charge.psp_id
        )
    );
    // A payment's own notification_url is notified unsigned; the credential has a webhook
    // secret all the same, and the notification is confirmed by a query.
    assert!(
        !delivery.headers.iter().any(|(n, _)| n == "x-signature"),
        "{:?}",
        delivery.headers
    );
    assert!(cred_has_secret(&sim));
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

    let paid = psp
        .query_charge(&cred, "req-q2", &request.reference, Some(&charge.psp_id))
        .await
        .unwrap();
    assert_eq!(paid.status, ChargeStatus::Paid);
    let payment = paid.payment.unwrap();
    assert_eq!(payment.amount, 1234);
    assert_eq!(payment.end_to_end_id.map(|e| e.len()), Some(32));
    assert!(payment.paid_at.ends_with('Z'), "{}", payment.paid_at);

    let other = pix_request(500);
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

    let lapsing = pix_request(700);
    psp.create_charge(&cred, "req-c3", &lapsing).await.unwrap();
    sim_control(
        &sim,
        "/_sim/expire",
        Some(json!({ "provider": ID, "reference": lapsing.reference })),
    )
    .await;
    let expired = psp
        .query_charge(&cred, "req-q3", &lapsing.reference, None)
        .await
        .unwrap();
    assert_eq!(expired.status, ChargeStatus::Expired);
}

#[tokio::test]
async fn a_wrong_token_is_bad_credentials_with_the_psps_message() {
    let sim = start_sim().await;
    let rt = runtime_with(&[ID], Limits::default(), Some(&sim)).await;
    let psp = rt.runtime.adapter(ID).unwrap();
    let mut credential = sim_credential(&sim, ID, None);
    credential.fields.insert(
        "access-token".into(),
        "APP_USR-0000000000000000-000000-x-1".into(),
    );
    let cred = psp.prepare(&credential);
    match psp.create_charge(&cred, "req", &pix_request(1000)).await {
        Err(CallError::Psp {
            error: PspError::BadCredentials(detail),
            ..
        }) => {
            assert_eq!(detail.message, "invalid access token");
            assert_eq!(detail.http_status, Some(401));
        }
        other => panic!("expected bad-credentials, got {other:?}"),
    }
}

fn cred_has_secret(sim: &psp_sim::Sim) -> bool {
    sim_credential(sim, ID, None)
        .fields
        .get("webhook-secret")
        .is_some_and(|s| !s.is_empty())
}

#[tokio::test]
async fn a_forged_signature_is_refused_and_an_unsigned_notification_is_only_a_hint() {
    let sim = start_sim().await;
    let rt = runtime_with(&[ID], Limits::default(), Some(&sim)).await;
    let (url, mut deliveries) = webhook_receiver("/api/wh/cred-mercadopago").await;
    // The webhook of "Your integrations", which Mercado Pago signs; payments without a
    // notification_url are notified there.
    sim_control(
        &sim,
        "/_sim/config",
        Some(json!({ "provider": ID, "webhook_url": url })),
    )
    .await;
    let psp = rt.runtime.adapter(ID).unwrap();
    let cred = psp.prepare(&sim_credential(&sim, ID, None));
    let first = pix_request(1000);
    let second = pix_request(2000);
    psp.create_charge(&cred, "req", &first).await.unwrap();
    let other = psp.create_charge(&cred, "req2", &second).await.unwrap();
    sim_control(
        &sim,
        "/_sim/pay",
        Some(json!({ "provider": ID, "reference": first.reference })),
    )
    .await;
    let delivery = next(&mut deliveries).await;
    assert!(delivery.headers.iter().any(|(n, _)| n == "x-signature"));
    psp.parse_webhook(&cred, "req-ok", &delivery).await.unwrap();

    // Unsigned, pointed at another payment: no signature to check, so it is a hint, and the
    // query says what that payment really is (still pending), never what was claimed.
    let mut unsigned = delivery.clone();
    unsigned.headers.retain(|(k, _)| k != "x-signature");
    unsigned.query = format!("data.id={}&type=payment", other.psp_id);
    let events = psp
        .parse_webhook(&cred, "req-hint", &unsigned)
        .await
        .unwrap();
    assert_eq!(
        (events[0].psp_id.as_deref(), events[0].status),
        (Some(other.psp_id.as_str()), ChargeStatus::Pending)
    );

    // The signature covers data.id: pointing it at another payment breaks it.
    let mut redirected = delivery.clone();
    redirected.query = format!("data.id={}&type=payment", other.psp_id);
    let mut other_request = delivery.clone();
    for (k, v) in &mut other_request.headers {
        if k == "x-request-id" {
            *v = "another-request".into();
        }
    }
    for (what, forged) in [("redirected", redirected), ("request id", other_request)] {
        match psp.parse_webhook(&cred, "req-bad", &forged).await {
            Err(CallError::Psp {
                error: PspError::InvalidWebhook(reason),
                ..
            }) => assert!(reason.contains("x-signature"), "{what}: {reason}"),
            other => panic!("{what}: expected invalid-webhook, got {other:?}"),
        }
    }
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
    let request = pix_request(1000);
    match psp.create_charge(&cred, "req", &request).await {
        Err(CallError::Psp {
            error: PspError::Ambiguous(_),
            ..
        }) => {}
        other => panic!("expected ambiguous, got {other:?}"),
    }
    let found = psp
        .query_charge(&cred, "req-q", &request.reference, None)
        .await
        .unwrap();
    assert_eq!(found.status, ChargeStatus::Pending);
    // A retried create answers the same payment (same X-Idempotency-Key).
    let again = psp
        .create_charge(&cred, "req-again", &request)
        .await
        .unwrap();
    assert_eq!(again.psp_id, found.psp_id);
    let held = sim_control(&sim, "/_sim/charges?provider=mercadopago", None).await;
    assert_eq!(held.as_array().map(Vec::len), Some(1), "{held}");
}
