//! The openpix adapter, loaded by the real runtime, against the OpenPix simulator.

use crate::common;

use std::time::Duration;

use common::*;
use pixgw::runtime::{CallError, ChargeStatus, Limits, PspError, WebhookAuth};
use serde_json::json;

const ID: &str = "openpix";

#[tokio::test]
async fn create_query_pay_notify_cancel() {
    let sim = start_sim().await;
    let rt = runtime_with(&[ID], Limits::default(), Some(&sim)).await;
    let (webhook_url, mut deliveries) = webhook_receiver("/api/wh/cred-openpix").await;
    // OpenPix's webhook is set in its dashboard: here, in the simulator's config.
    sim_control(
        &sim,
        "/_sim/config",
        Some(json!({ "provider": ID, "webhook_url": webhook_url })),
    )
    .await;
    let psp = rt.runtime.adapter(ID).unwrap();
    assert_eq!(psp.manifest().webhook_auth, WebhookAuth::PspSignature);
    let cred = psp.prepare(&sim_credential(&sim, ID, Some(webhook_url.clone())));

    let request = charge_request(1234);
    let charge = psp
        .create_charge(&cred, "req-create", &request)
        .await
        .unwrap();
    assert_eq!(
        (charge.reference.as_str(), charge.psp_id.as_str()),
        (request.reference.as_str(), request.reference.as_str())
    );
    assert_eq!(
        (charge.status, charge.amount),
        (ChargeStatus::Pending, 1234)
    );
    let code = charge.copy_paste.as_deref().unwrap();
    assert!(psp_sim::brcode::crc_is_valid(code), "{code}");
    let fields = psp_sim::brcode::parse_fields(code).unwrap();
    assert!(fields.contains(&("54".into(), "12.34".into())), "{code}");

    // A repeated create answers the same charge; OpenPix holds one.
    let again = psp
        .create_charge(&cred, "req-again", &request)
        .await
        .unwrap();
    assert_eq!(
        (again.psp_id, again.copy_paste),
        (charge.psp_id.clone(), charge.copy_paste)
    );
    let held = sim_control(&sim, "/_sim/charges?provider=openpix", None).await;
    assert_eq!(held.as_array().map(Vec::len), Some(1), "{held}");

    let queried = psp
        .query_charge(&cred, "req-q", &request.reference, None)
        .await
        .unwrap();
    assert_eq!(
        (queried.status, queried.payment),
        (ChargeStatus::Pending, None)
    );

    sim_control(
        &sim,
        "/_sim/pay",
        Some(json!({ "provider": ID, "reference": request.reference })),
    )
    .await;
    let delivery = tokio::time::timeout(Duration::from_secs(10), deliveries.recv())
        .await
        .expect("a notification within 10 s")
        .unwrap();
    let events = psp.parse_webhook(&cred, "req-wh", &delivery).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(
        (events[0].reference.as_deref(), events[0].status),
        (Some(request.reference.as_str()), ChargeStatus::Paid)
    );
    let payment = events[0].payment.as_ref().unwrap();
    assert_eq!(payment.amount, 1234);
    assert_eq!(payment.end_to_end_id.as_deref().map(str::len), Some(32));

    let paid = psp
        .query_charge(
            &cred,
            "req-q2",
            &request.reference,
            Some(charge.psp_id.as_str()),
        )
        .await
        .unwrap();
    assert_eq!(paid.status, ChargeStatus::Paid);
    assert_eq!(paid.payment.as_ref().map(|p| p.amount), Some(1234));
    assert_eq!(
        paid.payment.unwrap().end_to_end_id,
        payment.end_to_end_id,
        "the query and the notification agree"
    );

    // A paid charge is not canceled; an active one is, and is gone from OpenPix afterwards.
    let kept = psp
        .cancel_charge(&cred, "req-c1", &request.reference, None)
        .await
        .unwrap();
    assert_eq!(kept.status, ChargeStatus::Paid);
    let other = charge_request(500);
    psp.create_charge(&cred, "req-c2", &other).await.unwrap();
    let canceled = psp
        .cancel_charge(&cred, "req-c3", &other.reference, None)
        .await
        .unwrap();
    assert_eq!(canceled.status, ChargeStatus::Canceled);
    match psp
        .query_charge(&cred, "req-q3", &other.reference, None)
        .await
    {
        Err(CallError::Psp {
            error: PspError::NotFound(detail),
            ..
        }) => {
            assert_eq!(detail.message, "Cobrança não encontrada");
        }
        other => panic!("expected not-found, got {other:?}"),
    }
}

#[tokio::test]
async fn unsigned_or_forged_notifications_are_refused() {
    let sim = start_sim().await;
    let rt = runtime_with(&[ID], Limits::default(), Some(&sim)).await;
    let (webhook_url, mut deliveries) = webhook_receiver("/api/wh/cred-openpix").await;
    sim_control(
        &sim,
        "/_sim/config",
        Some(json!({ "provider": ID, "webhook_url": webhook_url })),
    )
    .await;
    let psp = rt.runtime.adapter(ID).unwrap();
    let cred = psp.prepare(&sim_credential(&sim, ID, None));
    let request = charge_request(700);
    psp.create_charge(&cred, "req", &request).await.unwrap();
    sim_control(
        &sim,
        "/_sim/pay",
        Some(json!({ "provider": ID, "reference": request.reference })),
    )
    .await;
    let delivery = tokio::time::timeout(Duration::from_secs(10), deliveries.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        psp.parse_webhook(&cred, "ok", &delivery)
            .await
            .unwrap()
            .len(),
        1
    );

    let mut unsigned = delivery.clone();
    unsigned
        .headers
        .retain(|(name, _)| name != "x-webhook-signature");
    let mut tampered = delivery.clone();
    tampered.body = String::from_utf8(tampered.body)
        .unwrap()
        .replace("\"value\":700", "\"value\":7")
        .into_bytes();
    assert_ne!(tampered.body, delivery.body);
    let mut forged = delivery.clone();
    for (name, value) in &mut forged.headers {
        if name == "x-webhook-signature" {
            *value = "c2lnbmF0dXJl".into();
        }
    }
    for (what, request) in [
        ("unsigned", unsigned),
        ("tampered", tampered),
        ("forged", forged),
    ] {
        match psp.parse_webhook(&cred, what, &request).await {
            Err(CallError::Psp {
                error: PspError::InvalidWebhook(_),
                ..
            }) => {}
            other => panic!("{what}: expected invalid-webhook, got {other:?}"),
        }
    }

    // Another key than OpenPix's: the genuine notification does not verify.
    let mut foreign = sim_credential(&sim, ID, None);
    let key = rsa::RsaPrivateKey::new(&mut rand_core::OsRng, 1024).unwrap();
    let pem = rsa::pkcs8::EncodePublicKey::to_public_key_pem(
        &key.to_public_key(),
        rsa::pkcs8::LineEnding::LF,
    )
    .unwrap();
    foreign.fields.insert("webhook-public-key".into(), pem);
    let foreign = psp.prepare(&foreign);
    assert!(matches!(
        psp.parse_webhook(&foreign, "foreign", &delivery).await,
        Err(CallError::Psp {
            error: PspError::InvalidWebhook(_),
            ..
        })
    ));
}

#[tokio::test]
async fn a_bearer_prefixed_app_id_is_bad_credentials_with_openpixs_message() {
    let sim = start_sim().await;
    let rt = runtime_with(&[ID], Limits::default(), Some(&sim)).await;
    let psp = rt.runtime.adapter(ID).unwrap();
    let mut credential = sim_credential(&sim, ID, None);
    let app_id = credential.fields["app-id"].clone();
    credential
        .fields
        .insert("app-id".into(), format!("Bearer {app_id}"));
    let cred = psp.prepare(&credential);
    match psp.create_charge(&cred, "req", &charge_request(100)).await {
        Err(CallError::Psp {
            error: PspError::BadCredentials(detail),
            ..
        }) => {
            assert_eq!(detail.message, "appID inválido");
            assert_eq!(detail.http_status, Some(401));
        }
        other => panic!("expected bad-credentials, got {other:?}"),
    }
}
