//! The iugu adapter, loaded by the real runtime, against the iugu simulator.

use crate::common;

use std::time::Duration;

use common::*;
use pixgw::runtime::{
    CallError, ChargeStatus, Credential, Limits, Payer, PspError, PspErrorDetail, RefusalReason,
    WebhookAuth,
};
use serde_json::{Value, json};

const ID: &str = "iugu";
const TOKEN: &str = "whtok_iugu_0123456789";

async fn held(sim: &psp_sim::Sim) -> Vec<Value> {
    let held = sim_control(sim, "/_sim/charges?provider=iugu", None).await;
    held.as_array().unwrap().clone()
}

#[tokio::test]
async fn create_query_pay_notify_cancel() {
    let sim = start_sim().await;
    let rt = runtime_with(&[ID], Limits::default(), Some(&sim)).await;
    let (receiver_url, mut deliveries) = webhook_receiver("/api/wh/cred-iugu").await;
    // iugu's trigger is an event and a URL (set in its dashboard): no custom header can carry
    // a token, so the URL the merchant registers carries it, as the manifest tells the host.
    let psp = rt.runtime.adapter(ID).unwrap();
    assert_eq!(psp.manifest().webhook_auth, WebhookAuth::UrlToken);
    let webhook_url = format!("{receiver_url}?token={TOKEN}");
    sim_control(
        &sim,
        "/_sim/config",
        Some(json!({ "provider": ID, "webhook_url": webhook_url,
                     "webhook_headers": { "x-pixgw-token": TOKEN } })),
    )
    .await;
    let credential = sim_credential(&sim, ID, Some(webhook_url.clone()));
    let default_email = credential.fields["default-email"].clone();
    let cred = psp.prepare(&credential);
    psp.check_credentials(&cred, "req-check").await.unwrap();

    // No payer e-mail: the credential's default address goes to iugu.
    let request = charge_request(1234);
    let charge = psp
        .create_charge(&cred, "req-create", &request)
        .await
        .unwrap();
    assert_eq!(charge.reference, request.reference);
    assert!(
        charge.psp_id.len() == 32 && charge.psp_id.chars().all(|c| c.is_ascii_hexdigit()),
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
    assert!(charge.qr_png_base64.is_none(), "iugu's image is a URL");
    assert!(charge.expires_at.is_some());
    let invoice = &held(&sim).await[0]["psp"];
    assert_eq!(invoice["email"], default_email.as_str());
    assert_eq!(invoice["payable_with"], "pix");

    for psp_id in [None, Some(charge.psp_id.as_str())] {
        let queried = psp
            .query_charge(&cred, "req-q", &request.reference, psp_id)
            .await
            .unwrap();
        assert_eq!(
            (queried.psp_id.as_str(), queried.status, queried.payment),
            (charge.psp_id.as_str(), ChargeStatus::Pending, None)
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
        .expect("a trigger within 10 s")
        .unwrap();
    let header = |name: &str| {
        delivery
            .headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(header("x-pixgw-token"), None, "iugu sends no custom header");
    assert_eq!(delivery.query, format!("token={TOKEN}"));
    assert_eq!(
        header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    let events = psp.parse_webhook(&cred, "req-wh", &delivery).await.unwrap();
    assert_eq!(
        events.len(),
        1,
        "{}",
        String::from_utf8_lossy(&delivery.body)
    );
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
        .query_charge(&cred, "req-q2", &request.reference, Some(&charge.psp_id))
        .await
        .unwrap();
    assert_eq!(paid.status, ChargeStatus::Paid);
    let payment = paid.payment.unwrap();
    assert_eq!(payment.amount, 1234);
    assert!(payment.paid_at.ends_with('Z'), "{}", payment.paid_at);

    // A payer e-mail wins over the default; a pending invoice can be canceled.
    let mut other = charge_request(500);
    other.payer.email = Some("comprador@example.com".into());
    let second = psp.create_charge(&cred, "req-c2", &other).await.unwrap();
    assert_eq!(held(&sim).await[1]["psp"]["email"], "comprador@example.com");
    let canceled = psp
        .cancel_charge(&cred, "req-cancel", &other.reference, Some(&second.psp_id))
        .await
        .unwrap();
    assert_eq!(canceled.status, ChargeStatus::Canceled);
    assert_eq!(held(&sim).await[1]["status"], "canceled");
}

#[tokio::test]
async fn a_retried_create_finds_the_invoice_whose_answer_was_lost() {
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
    let request = charge_request(990);
    // The invoice is visible right after the lost answer, so the adapter carries on with it.
    let first = psp.create_charge(&cred, "req-1", &request).await.unwrap();
    let again = psp.create_charge(&cred, "req-2", &request).await.unwrap();
    assert_eq!(first.psp_id, again.psp_id);
    assert_eq!(held(&sim).await.len(), 1);
}

fn with_fields(mut cred: Credential, fields: &[(&str, Option<&str>)]) -> Credential {
    for (name, value) in fields {
        match value {
            Some(v) => cred.fields.insert((*name).into(), (*v).into()),
            None => cred.fields.remove(*name),
        };
    }
    cred
}

/// The error of a create with the simulator's account changed by `fields` and `flags`.
async fn create_error(fields: &[(&str, Option<&str>)], flags: Value) -> (PspError, usize) {
    let sim = start_sim().await;
    let rt = runtime_with(&[ID], Limits::default(), Some(&sim)).await;
    sim_control(
        &sim,
        "/_sim/config",
        Some(json!({ "provider": ID, "flags": flags })),
    )
    .await;
    let psp = rt.runtime.adapter(ID).unwrap();
    let cred = psp.prepare(&with_fields(sim_credential(&sim, ID, None), fields));
    let error = match psp.create_charge(&cred, "req", &charge_request(100)).await {
        Err(CallError::Psp { error, .. }) => error,
        other => panic!("expected a PSP error, got {other:?}"),
    };
    let requests = sim_control(&sim, "/_sim/requests?provider=iugu", None).await;
    (error, requests.as_array().unwrap().len())
}

fn detail(error: &PspError, kind: &str) -> PspErrorDetail {
    match (kind, error) {
        ("bad-credentials", PspError::BadCredentials(d)) | ("rejected", PspError::Rejected(d)) => {
            d.clone()
        }
        _ => panic!("expected {kind}, got {error:?}"),
    }
}

#[tokio::test]
async fn a_wrong_token_is_bad_credentials_with_iugus_message() {
    let (error, _) = create_error(&[("api-token", Some("0123456789ABCDEF"))], json!({})).await;
    let d = detail(&error, "bad-credentials");
    assert_eq!(
        (d.message.as_str(), d.http_status),
        ("Unauthorized", Some(401))
    );
}

#[tokio::test]
async fn pix_not_enabled_is_rejected_with_iugus_portuguese_message() {
    let (error, _) = create_error(&[], json!({ "pix_disabled": true })).await;
    let d = detail(&error, "rejected");
    assert_eq!(
        (d.message.as_str(), d.http_status),
        (
            "payable_with: Pix não está habilitado para esta conta",
            Some(422)
        )
    );
    assert_eq!(
        d.reason,
        RefusalReason::PixNotEnabled,
        "the field iugu names"
    );
}

#[tokio::test]
async fn an_invoice_without_pix_is_rejected_and_canceled() {
    let sim = start_sim().await;
    let rt = runtime_with(&[ID], Limits::default(), Some(&sim)).await;
    sim_control(
        &sim,
        "/_sim/config",
        Some(json!({ "provider": ID, "flags": { "pix_missing": true } })),
    )
    .await;
    let psp = rt.runtime.adapter(ID).unwrap();
    let cred = psp.prepare(&sim_credential(&sim, ID, None));
    let error = match psp.create_charge(&cred, "req", &charge_request(100)).await {
        Err(CallError::Psp { error, .. }) => error,
        other => panic!("expected a PSP error, got {other:?}"),
    };
    let d = detail(&error, "rejected");
    assert!(
        d.message.contains("Pix was not among the payable methods")
            && d.message.contains("not enabled"),
        "{}",
        d.message
    );
    assert_eq!(d.reason, RefusalReason::PixNotOffered);
    let held = held(&sim).await;
    assert_eq!(held.len(), 1);
    assert_eq!(held[0]["status"], "canceled", "nobody can pay it");
}

#[tokio::test]
async fn without_any_email_nothing_reaches_iugu() {
    let (error, requests) = create_error(&[("default-email", None)], json!({})).await;
    let d = detail(&error, "rejected");
    assert!(d.message.contains("payer.email"), "{}", d.message);
    assert_eq!(requests, 0);
    // With the payer's own e-mail it works without a default.
    let sim = start_sim().await;
    let rt = runtime_with(&[ID], Limits::default(), Some(&sim)).await;
    let psp = rt.runtime.adapter(ID).unwrap();
    let cred = psp.prepare(&with_fields(
        sim_credential(&sim, ID, None),
        &[("default-email", None)],
    ));
    let mut request = charge_request(100);
    request.payer = Payer {
        email: Some("a@example.com".into()),
        name: None,
        document: None,
    };
    psp.create_charge(&cred, "req", &request).await.unwrap();
}
