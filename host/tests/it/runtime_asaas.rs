//! The asaas adapter, loaded by the real runtime, against the Asaas simulator.

use crate::common;

use std::time::Duration;

use common::*;
use pixgw::runtime::{
    CallError, ChargeRequest, ChargeStatus, Limits, Payer, PspError, WebhookAuth,
};
use serde_json::{Value, json};

const ID: &str = "asaas";
const TOKEN: &str = "whtok_asaas_0123456789";
const CPF: &str = "12345678909";

fn request(amount: u64) -> ChargeRequest {
    ChargeRequest {
        payer: Payer {
            email: None,
            name: Some("Fulano de Tal".into()),
            document: Some(CPF.into()),
        },
        ..charge_request(amount)
    }
}

async fn list(sim: &psp_sim::Sim, what: &str) -> Vec<Value> {
    let held = sim_control(sim, &format!("/_sim/{what}?provider=asaas"), None).await;
    held.as_array().unwrap().clone()
}

/// How many requests the simulator saw with this method and path prefix.
async fn requests(sim: &psp_sim::Sim, method: &str, path: &str) -> usize {
    list(sim, "requests")
        .await
        .iter()
        .filter(|r| r["method"] == method && r["path"].as_str().unwrap().starts_with(path))
        .count()
}

#[tokio::test]
async fn create_query_pay_notify_cancel_with_one_customer() {
    let sim = start_sim().await;
    let rt = runtime_with(&[ID], Limits::default(), Some(&sim)).await;
    let (webhook_url, mut deliveries) = webhook_receiver("/api/wh/cred-asaas").await;
    // Set in Asaas's dashboard: the URL, and pixgw's token as the webhook's auth token.
    sim_control(
        &sim,
        "/_sim/config",
        Some(json!({ "provider": ID, "webhook_url": webhook_url,
                     "webhook_headers": { "asaas-access-token": TOKEN } })),
    )
    .await;
    let psp = rt.runtime.adapter(ID).unwrap();
    assert_eq!(
        psp.manifest().webhook_auth,
        WebhookAuth::HeaderToken("asaas-access-token".into())
    );
    let cred = psp.prepare(&sim_credential(&sim, ID, Some(webhook_url.clone())));
    psp.check_credentials(&cred, "req-check").await.unwrap();

    let request = request(1234);
    let charge = psp
        .create_charge(&cred, "req-create", &request)
        .await
        .unwrap();
    assert_eq!(charge.reference, request.reference);
    assert!(charge.psp_id.starts_with("pay_"), "{}", charge.psp_id);
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
        .expect("a notification within 10 s")
        .unwrap();
    assert!(
        delivery
            .headers
            .iter()
            .any(|(n, v)| n == "asaas-access-token" && v == TOKEN),
        "{:?}",
        delivery.headers
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
    assert_eq!(paid.payment.as_ref().map(|p| p.amount), Some(1234));

    // The same CPF again: the cached customer, no customer call at all.
    let customer_calls = requests(&sim, "GET", "/v3/customers?cpfCnpj").await;
    let other = self::request(500);
    let second = psp.create_charge(&cred, "req-c2", &other).await.unwrap();
    assert_eq!(list(&sim, "customers").await.len(), 1);
    assert_eq!(requests(&sim, "POST", "/v3/customers").await, 1);
    assert_eq!(
        requests(&sim, "GET", "/v3/customers?cpfCnpj").await,
        customer_calls
    );
    let held = list(&sim, "charges").await;
    assert_eq!(held[0]["customer"], held[1]["customer"]);

    let canceled = psp
        .cancel_charge(&cred, "req-cancel", &other.reference, Some(&second.psp_id))
        .await
        .unwrap();
    assert_eq!(canceled.status, ChargeStatus::Canceled);
    assert_eq!(list(&sim, "charges").await[1]["status"], "DELETED");

    // A repeated create returns the payment that exists; Asaas still holds two.
    let again = psp
        .create_charge(&cred, "req-again", &request)
        .await
        .unwrap();
    assert_eq!(
        (again.psp_id.as_str(), again.status),
        (charge.psp_id.as_str(), ChargeStatus::Paid)
    );
    assert_eq!(list(&sim, "charges").await.len(), 2);
}

#[tokio::test]
async fn after_a_restart_the_customer_is_found_not_created_again() {
    let sim = start_sim().await;
    for run in 0..2 {
        // A fresh runtime: nothing in the adapter's cache.
        let rt = runtime_with(&[ID], Limits::default(), Some(&sim)).await;
        let psp = rt.runtime.adapter(ID).unwrap();
        let cred = psp.prepare(&sim_credential(&sim, ID, None));
        psp.create_charge(&cred, &format!("req-{run}"), &request(700))
            .await
            .unwrap();
    }
    assert_eq!(list(&sim, "customers").await.len(), 1);
    assert_eq!(list(&sim, "charges").await.len(), 2);
}

#[tokio::test]
async fn a_retried_create_finds_the_payment_whose_answer_was_lost() {
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
    let request = request(990);
    let first = psp.create_charge(&cred, "req-1", &request).await.unwrap();
    let again = psp.create_charge(&cred, "req-2", &request).await.unwrap();
    assert_eq!(first.psp_id, again.psp_id);
    assert!(again.copy_paste.is_some());
    assert_eq!(list(&sim, "charges").await.len(), 1);
}

#[tokio::test]
async fn a_wrong_key_is_bad_credentials_with_asaas_message() {
    let sim = start_sim().await;
    let rt = runtime_with(&[ID], Limits::default(), Some(&sim)).await;
    let psp = rt.runtime.adapter(ID).unwrap();
    let mut credential = sim_credential(&sim, ID, None);
    credential
        .fields
        .insert("api-key".into(), "$aact_hmlg_wrong".into());
    let cred = psp.prepare(&credential);
    match psp.create_charge(&cred, "req", &request(100)).await {
        Err(CallError::Psp {
            error: PspError::BadCredentials(d),
            ..
        }) => {
            assert_eq!(
                (d.message.as_str(), d.code.as_deref(), d.http_status),
                (
                    "A chave de API fornecida é inválida",
                    Some("invalid_access_token"),
                    Some(401)
                )
            );
        }
        other => panic!("expected bad-credentials, got {other:?}"),
    }
    assert!(list(&sim, "customers").await.is_empty());
}

#[tokio::test]
async fn an_older_key_without_a_prefix_works_and_a_production_key_is_refused_unsent() {
    let sim = start_sim().await;
    let rt = runtime_with(&[ID], Limits::default(), Some(&sim)).await;
    let psp = rt.runtime.adapter(ID).unwrap();
    // The host must not refuse the older format when the credential is saved.
    assert!(psp.manifest().credential_fields[0].value_prefix.is_none());
    let mut credential = sim_credential(&sim, ID, None);
    credential.fields = sim.provider(ID).unwrap().other_credentials["legacy"].clone();
    let cred = psp.prepare(&credential);
    psp.check_credentials(&cred, "req-check").await.unwrap();
    let charge = psp
        .create_charge(&cred, "req", &request(300))
        .await
        .unwrap();
    assert_eq!(charge.status, ChargeStatus::Pending);

    let seen = list(&sim, "requests").await.len();
    credential
        .fields
        .insert("api-key".into(), "$aact_prod_000somekey".into());
    let cred = psp.prepare(&credential);
    match psp.check_credentials(&cred, "req-check").await {
        Err(CallError::Psp {
            error: PspError::BadCredentials(d),
            ..
        }) => assert!(d.message.contains("$aact_prod_"), "{}", d.message),
        other => panic!("expected bad-credentials, got {other:?}"),
    }
    assert_eq!(
        list(&sim, "requests").await.len(),
        seen,
        "nothing reached Asaas"
    );
}

#[tokio::test]
async fn an_overdue_payment_stays_payable_until_the_charge_expires() {
    let sim = start_sim().await;
    let rt = runtime_with(&[ID], Limits::default(), Some(&sim)).await;
    let psp = rt.runtime.adapter(ID).unwrap();
    let cred = psp.prepare(&sim_credential(&sim, ID, None));
    let request = request(450);
    let charge = psp.create_charge(&cred, "req", &request).await.unwrap();
    // Asaas marks it overdue; its Pix QR code stays payable, and the charge has an hour left.
    sim_control(
        &sim,
        "/_sim/expire",
        Some(json!({ "provider": ID, "reference": request.reference })),
    )
    .await;
    let overdue = psp
        .query_charge(&cred, "req-q", &request.reference, Some(&charge.psp_id))
        .await
        .unwrap();
    assert_eq!(overdue.status, ChargeStatus::Pending);
    assert!(overdue.copy_paste.is_some());
    sim_control(
        &sim,
        "/_sim/pay",
        Some(json!({ "provider": ID, "reference": request.reference })),
    )
    .await;
    let paid = psp
        .query_charge(&cred, "req-q", &request.reference, Some(&charge.psp_id))
        .await
        .unwrap();
    assert_eq!(paid.status, ChargeStatus::Paid);
}

#[tokio::test]
async fn past_its_expiry_a_charge_is_deleted_at_asaas_before_it_is_called_expired() {
    let sim = start_sim().await;
    let rt = runtime_with(&[ID], Limits::default(), Some(&sim)).await;
    let psp = rt.runtime.adapter(ID).unwrap();
    let cred = psp.prepare(&sim_credential(&sim, ID, None));
    let request = ChargeRequest {
        expires_in: 1,
        ..request(450)
    };
    let charge = psp.create_charge(&cred, "req", &request).await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let expired = loop {
        let now = psp
            .query_charge(&cred, "req-q", &request.reference, Some(&charge.psp_id))
            .await
            .unwrap();
        if now.status != ChargeStatus::Pending {
            break now;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "still pending after its expiry"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(expired.status, ChargeStatus::Expired);
    // Deleted at Asaas: nobody can pay the QR code any more.
    assert_eq!(list(&sim, "charges").await[0]["status"], "DELETED");
    let refused = psp_sim_pay_status(&sim, &request.reference).await;
    assert_eq!(refused, 409);
}

/// The control API's status for paying a charge at the simulated Asaas.
async fn psp_sim_pay_status(sim: &psp_sim::Sim, reference: &str) -> u16 {
    reqwest::Client::new()
        .post(format!("{}/_sim/pay", sim.control_url()))
        .json(&json!({ "provider": ID, "reference": reference }))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn without_a_document_nothing_reaches_asaas() {
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
            error: PspError::Rejected(d),
            ..
        }) => assert!(d.message.contains("payer.document"), "{}", d.message),
        other => panic!("expected rejected, got {other:?}"),
    }
    assert!(list(&sim, "requests").await.is_empty());
}
