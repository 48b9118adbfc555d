//! The pagbank adapter, loaded by the real runtime, against the PagBank simulator.

use crate::common;

use std::time::Duration;

use common::*;
use pixgw::runtime::{CallError, ChargeRequest, ChargeStatus, Limits, Payer, PspError};
use serde_json::json;

const ID: &str = "pagbank";

fn with_cpf(mut request: ChargeRequest) -> ChargeRequest {
    request.payer = Payer {
        email: Some("ana@example.com".into()),
        name: Some("Ana Souza".into()),
        document: Some("12345678909".into()),
    };
    request
}

#[tokio::test]
async fn create_query_pay_notify() {
    let sim = start_sim().await;
    let rt = runtime_with(&[ID], Limits::default(), Some(&sim)).await;
    let base_path = "/api/wh/cred-pagbank";
    let (webhook_url, mut deliveries) = webhook_receiver(base_path).await;
    let psp = rt.runtime.adapter(ID).unwrap();
    let cred = psp.prepare(&sim_credential(
        &sim,
        ID,
        Some(format!("{webhook_url}?token=t")),
    ));

    let request = with_cpf(charge_request(1234));
    let charge = psp
        .create_charge(&cred, "req-create", &request)
        .await
        .unwrap();
    assert_eq!(charge.reference, request.reference);
    assert!(charge.psp_id.starts_with("ORDE_"), "{}", charge.psp_id);
    assert_eq!(
        (charge.status, charge.amount),
        (ChargeStatus::Pending, 1234)
    );
    let code = charge.copy_paste.as_deref().unwrap();
    assert!(psp_sim::brcode::crc_is_valid(code), "{code}");
    let fields = psp_sim::brcode::parse_fields(code).unwrap();
    assert!(fields.contains(&("54".into(), "12.34".into())), "{code}");
    assert_eq!(charge.qr_png_base64, None, "the host draws the QR code");
    assert!(charge.expires_at.as_deref().unwrap().ends_with('Z'));

    // By id, and by reference alone (as after a lost create answer).
    for psp_id in [Some(charge.psp_id.as_str()), None] {
        let queried = psp
            .query_charge(&cred, "req-q", &request.reference, psp_id)
            .await
            .unwrap();
        assert_eq!(
            (queried.psp_id.as_str(), queried.status),
            (charge.psp_id.as_str(), ChargeStatus::Pending)
        );
    }

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
    assert_eq!(
        (delivery.method.as_str(), delivery.query.as_str()),
        ("POST", "token=t")
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
        .query_charge(
            &cred,
            "req-q2",
            &request.reference,
            Some(charge.psp_id.as_str()),
        )
        .await
        .unwrap();
    assert_eq!(paid.status, ChargeStatus::Paid);
    let payment = paid.payment.unwrap();
    assert_eq!(payment.amount, 1234);
    assert_eq!(payment.end_to_end_id.as_deref().map(str::len), Some(32));

    // A forged authenticity token is refused; the genuine delivery still parses.
    let mut forged = delivery.clone();
    for (name, value) in &mut forged.headers {
        if name == "x-authenticity-token" {
            *value = "0".repeat(64);
        }
    }
    match psp.parse_webhook(&cred, "req-forged", &forged).await {
        Err(CallError::Psp {
            error: PspError::InvalidWebhook(_),
            ..
        }) => {}
        other => panic!("expected invalid-webhook, got {other:?}"),
    }
    let mut tampered = delivery.clone();
    tampered.body = String::from_utf8(tampered.body)
        .unwrap()
        .replace("PAID", "PAlD")
        .into_bytes();
    assert!(matches!(
        psp.parse_webhook(&cred, "req-tampered", &tampered).await,
        Err(CallError::Psp {
            error: PspError::InvalidWebhook(_),
            ..
        })
    ));
    // Without the header the URL's token authenticated the call; the host confirms by query.
    let mut unsigned = delivery.clone();
    unsigned
        .headers
        .retain(|(name, _)| name != "x-authenticity-token");
    assert_eq!(
        psp.parse_webhook(&cred, "req-unsigned", &unsigned)
            .await
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn a_wrong_token_is_bad_credentials_with_pagbanks_message() {
    let sim = start_sim().await;
    let rt = runtime_with(&[ID], Limits::default(), Some(&sim)).await;
    let psp = rt.runtime.adapter(ID).unwrap();
    let mut credential = sim_credential(&sim, ID, None);
    credential
        .fields
        .insert("token".into(), "wrong-token".into());
    let cred = psp.prepare(&credential);
    match psp
        .create_charge(&cred, "req", &with_cpf(charge_request(100)))
        .await
    {
        Err(CallError::Psp {
            error: PspError::BadCredentials(detail),
            ..
        }) => {
            assert_eq!(
                detail.message,
                "Invalid credential. Review AUTHORIZATION header"
            );
            assert_eq!(detail.code.as_deref(), Some("UNAUTHORIZED"));
            assert_eq!(detail.http_status, Some(401));
        }
        other => panic!("expected bad-credentials, got {other:?}"),
    }
}

#[tokio::test]
async fn a_missing_cpf_is_refused_before_calling_pagbank() {
    let sim = start_sim().await;
    let rt = runtime_with(&[ID], Limits::default(), Some(&sim)).await;
    let psp = rt.runtime.adapter(ID).unwrap();
    assert_eq!(
        psp.manifest().required_payer_fields,
        vec![pixgw::runtime::PayerField::Document]
    );
    let cred = psp.prepare(&sim_credential(&sim, ID, None));
    match psp.create_charge(&cred, "req", &charge_request(100)).await {
        Err(CallError::Psp {
            error: PspError::Rejected(detail),
            ..
        }) => {
            assert!(detail.message.contains("CPF or CNPJ"), "{detail:?}");
            assert_eq!(detail.http_status, None, "PagBank was not called");
        }
        other => panic!("expected rejected, got {other:?}"),
    }
    let requests = sim_control(&sim, "/_sim/requests?provider=pagbank", None).await;
    assert_eq!(requests, json!([]));
}

/// PagBank's public API has no lookup by reference_id and no idempotency key: an order whose
/// create answer was lost cannot be found, and the retry makes another (the first one's code
/// was never shown to anyone; it lapses unpaid). An order the adapter did see is found by
/// reference alone, and a retried create carries on with it.
#[tokio::test]
async fn a_lost_create_answer_is_not_found_and_the_retry_makes_a_second_order() {
    let sim = start_sim().await;
    let rt = runtime_with(&[ID], Limits::default(), Some(&sim)).await;
    let psp = rt.runtime.adapter(ID).unwrap();
    let cred = psp.prepare(&sim_credential(&sim, ID, None));
    sim_control(
        &sim,
        "/_sim/faults",
        Some(json!({ "provider": ID, "drop_reply_after_create": 1 })),
    )
    .await;
    let request = with_cpf(charge_request(990));
    match psp.create_charge(&cred, "req-1", &request).await {
        Err(CallError::Psp {
            error: PspError::Ambiguous(_),
            ..
        }) => {}
        other => panic!("expected ambiguous, got {other:?}"),
    }
    match psp
        .query_charge(&cred, "req-q", &request.reference, None)
        .await
    {
        Err(CallError::Psp {
            error: PspError::NotFound(detail),
            ..
        }) => assert!(detail.message.contains("by id only"), "{detail:?}"),
        other => panic!("expected not-found, got {other:?}"),
    }
    let second = psp.create_charge(&cred, "req-2", &request).await.unwrap();
    let again = psp.create_charge(&cred, "req-3", &request).await.unwrap();
    assert_eq!(again.psp_id, second.psp_id, "the order it saw, not a third");
    let found = psp
        .query_charge(&cred, "req-q2", &request.reference, None)
        .await
        .unwrap();
    assert_eq!(found.psp_id, second.psp_id);
    let held = sim_control(&sim, "/_sim/charges?provider=pagbank", None).await;
    assert_eq!(held.as_array().map(Vec::len), Some(2), "{held}");
    let requests = sim_control(&sim, "/_sim/requests?provider=pagbank", None).await;
    assert!(
        requests
            .as_array()
            .unwrap()
            .iter()
            .all(|r| !r["path"].as_str().unwrap().contains("reference_id")),
        "{requests}"
    );
}
