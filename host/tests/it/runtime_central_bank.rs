//! The six bank adapters on the central-bank Pix API (inter, sicredi, bb, itau, santander,
//! bradesco), each loaded by the real runtime against its simulator over mTLS. One table of
//! tests, instantiated per PSP by `central_bank_psp!`. The life of a charge (check, register,
//! create, query, pay, notify, cancel) is the conformance suite's, in `conformance.rs`.

use crate::common;

use std::time::Duration;

use common::*;
use pixgw::runtime::{
    CallError, ChargeStatus, Credential, Environment, Limits, PspError, RefusalReason,
};
use serde_json::json;

/// What the simulated token endpoints answer for a wrong id or secret.
const INVALID_CLIENT: &str = "Credenciais do cliente inválidas ou inativas";

fn with_fields(mut cred: Credential, fields: &[(&str, Option<&str>)]) -> Credential {
    for (name, value) in fields {
        match value {
            Some(v) => cred.fields.insert((*name).into(), (*v).into()),
            None => cred.fields.remove(*name),
        };
    }
    cred
}

/// The simulator's production account at `provider`, as a live credential.
fn live_credential(sim: &psp_sim::Sim, provider: &str) -> Credential {
    Credential {
        id: format!("cred-{provider}-live"),
        environment: Environment::Live,
        fields: sim.provider(provider).unwrap().live_credentials.unwrap(),
        webhook_url: None,
    }
}

/// The `bad-credentials` detail of a create with the simulator's account changed by `fields`:
/// the test account, or production's where certificates are concerned (Itaú's sandbox has none).
async fn bad_credentials(
    id: &str,
    fields: &[(&str, Option<&str>)],
) -> pixgw::runtime::PspErrorDetail {
    let certificate = fields.iter().any(|(name, _)| *name == "certificate");
    let sim = start_sim().await;
    let rt = runtime_with(&[id], Limits::default(), Some(&sim)).await;
    let psp = rt.runtime.adapter(id).unwrap();
    let account = match certificate {
        true => live_credential(&sim, id),
        false => sim_credential(&sim, id, None),
    };
    let cred = psp.prepare(&with_fields(account, fields));
    match psp.create_charge(&cred, "req", &charge_request(100)).await {
        Err(CallError::Psp {
            error: PspError::BadCredentials(detail),
            ..
        }) => detail,
        other => panic!("{id}: expected bad-credentials, got {other:?}"),
    }
}

async fn wrong_secret(id: &str) {
    let detail = bad_credentials(id, &[("client-secret", Some("wrong-secret"))]).await;
    assert!(detail.message.contains(INVALID_CLIENT), "{id}: {detail:?}");
    assert_eq!(detail.http_status, Some(401), "{id}");
    assert_eq!(detail.reason, RefusalReason::Credentials, "{id}");
}

async fn foreign_certificate(id: &str) {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["merchant".into()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let (cert, key) = (cert.pem(), key.serialize_pem());
    let detail = bad_credentials(
        id,
        &[("certificate", Some(&cert)), ("private-key", Some(&key))],
    )
    .await;
    assert!(
        detail
            .message
            .contains("refused the TLS client certificate"),
        "{id}: {detail:?}"
    );
    assert_eq!(detail.reason, RefusalReason::Certificate, "{id}");
}

async fn missing_certificate(id: &str) {
    let detail = bad_credentials(id, &[("certificate", None)]).await;
    assert!(
        detail.message.contains("no client certificate"),
        "{id}: {detail:?}"
    );
    assert_eq!(detail.reason, RefusalReason::Certificate, "{id}");
}

/// `pixCopiaECola` is optional in the standard: a create answered without it is read back; with
/// no code in any answer, the code is built from the charge's location; BB's homologation calls
/// it `textoImagemQRcode`. The charge is never refused for it.
async fn a_missing_code_is_read_back_built_or_renamed(id: &str) {
    let sim = start_sim().await;
    let rt = runtime_with(&[id], Limits::default(), Some(&sim)).await;
    let psp = rt.runtime.adapter(id).unwrap();
    let cred = psp.prepare(&sim_credential(&sim, id, None));
    for flag in [
        "create_without_pix_copia_e_cola",
        "without_pix_copia_e_cola",
        "texto_imagem_qrcode",
    ] {
        sim_control(
            &sim,
            "/_sim/config",
            Some(json!({"provider": id, "flags": {flag: true}})),
        )
        .await;
        let request = charge_request(4321);
        let charge = psp.create_charge(&cred, "req", &request).await.unwrap();
        sim_control(
            &sim,
            "/_sim/config",
            Some(json!({"provider": id, "flags": {flag: false}})),
        )
        .await;
        let held = sim_control(&sim, &format!("/_sim/charges?provider={id}"), None).await;
        let at_psp = held
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["reference"] == request.reference.as_str())
            .unwrap()["psp"]
            .clone();
        let code = charge
            .copy_paste
            .unwrap_or_else(|| panic!("{id} {flag}: no code"));
        assert!(psp_sim::brcode::crc_is_valid(&code), "{id} {flag}: {code}");
        let fields = psp_sim::brcode::parse_fields(&code).unwrap();
        assert!(
            fields.contains(&("54".into(), "43.21".into())),
            "{id} {flag}: {code}"
        );
        if flag == "without_pix_copia_e_cola" {
            // Built here: a dynamic code naming the PSP's location.
            let location = at_psp["location"].as_str().unwrap();
            assert!(code.starts_with("000201010212"), "{code}");
            assert!(code.contains(location), "{id}: {code} lacks {location}");
            assert!(
                fields.contains(&("59".into(), "RECEBEDOR PIX".into())),
                "{id}: {code}"
            );
        } else {
            assert_eq!(
                code,
                at_psp["pixCopiaECola"].as_str().unwrap(),
                "{id} {flag}"
            );
        }
    }
}

/// A notification of one bare Pix object (as Inter may send) is read like the array.
async fn a_single_pix_object_notification(id: &str) {
    let sim = start_sim().await;
    let rt = runtime_with(&[id], Limits::default(), Some(&sim)).await;
    let base_path = format!("/api/wh/cred-{id}");
    let (webhook_url, mut deliveries) = webhook_receiver(&base_path).await;
    let psp = rt.runtime.adapter(id).unwrap();
    let cred = psp.prepare(&sim_credential(&sim, id, Some(webhook_url)));
    psp.register_webhook(&cred, "req-wh").await.unwrap();
    let request = charge_request(700);
    psp.create_charge(&cred, "req", &request).await.unwrap();
    sim_control(
        &sim,
        "/_sim/config",
        Some(json!({"provider": id, "flags": {"single_object_notifications": true}})),
    )
    .await;
    sim_control(
        &sim,
        "/_sim/pay",
        Some(json!({"provider": id, "reference": request.reference})),
    )
    .await;
    let delivery = tokio::time::timeout(Duration::from_secs(10), deliveries.recv())
        .await
        .expect("a notification within 10 s")
        .unwrap();
    let body: serde_json::Value = serde_json::from_slice(&delivery.body).unwrap();
    assert!(body.is_object() && body.get("pix").is_none(), "{body}");
    let events = psp.parse_webhook(&cred, "req-in", &delivery).await.unwrap();
    assert_eq!(events.len(), 1, "{body}");
    assert_eq!(
        (events[0].reference.as_deref(), events[0].status),
        (Some(request.reference.as_str()), ChargeStatus::Paid)
    );
    assert_eq!(events[0].payment.as_ref().map(|p| p.amount), Some(700));
}

macro_rules! central_bank_psp {
    ($($id:ident),*) => {$(
        mod $id {
            #[tokio::test]
            async fn a_wrong_secret_is_bad_credentials_with_the_psps_message() {
                super::wrong_secret(stringify!($id)).await
            }
            #[tokio::test]
            async fn a_certificate_from_a_foreign_ca_is_refused() {
                super::foreign_certificate(stringify!($id)).await
            }
            #[tokio::test]
            async fn a_missing_certificate_is_named() {
                super::missing_certificate(stringify!($id)).await
            }
            #[tokio::test]
            async fn a_missing_code_is_read_back_built_or_renamed() {
                super::a_missing_code_is_read_back_built_or_renamed(stringify!($id)).await
            }
            #[tokio::test]
            async fn a_single_pix_object_notification() {
                super::a_single_pix_object_notification(stringify!($id)).await
            }
        }
    )*};
}

central_bank_psp!(inter, sicredi, bb, itau, santander, bradesco);
