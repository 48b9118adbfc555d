//! The efi adapter, loaded by the real runtime, against the Efí simulator over mTLS.

use crate::common;

use std::time::Duration;

use common::*;
use pixgw::runtime::{CallError, ChargeStatus, Credential, Limits, PspError, WebhookRequest};
use tokio::sync::mpsc;

/// A stand-in for the gateway's webhook route: records what the PSP POSTs.
async fn webhook_receiver() -> (String, mpsc::UnboundedReceiver<WebhookRequest>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
        let tx = tx.clone();
        async move {
            let (parts, body) = req.into_parts();
            let body = axum::body::to_bytes(body, 1 << 20).await.unwrap().to_vec();
            let _ = tx.send(WebhookRequest {
                method: parts.method.to_string(),
                path: parts
                    .uri
                    .path()
                    .trim_start_matches("/wh/cred-efi")
                    .to_owned(),
                query: parts.uri.query().unwrap_or_default().to_owned(),
                headers: parts
                    .headers
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or_default().to_owned()))
                    .collect(),
                body,
            });
            "ok"
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/wh/cred-efi", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, rx)
}

async fn sim_control(sim: &psp_sim::Sim, path: &str, body: serde_json::Value) -> serde_json::Value {
    let response = reqwest_plain()
        .post(format!("{}{path}", sim.control_url()))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(
        response.status().is_success(),
        "{path}: {}",
        response.status()
    );
    response.json().await.unwrap()
}

fn reqwest_plain() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// The host speaks HTTP/1.1 to PSPs over pooled connections, though the simulator, as PSPs
/// do, offers HTTP/2 too (`runtime/outbound`: one write a request instead of two and a task
/// hop).
#[tokio::test]
async fn psp_calls_are_http_1_1() {
    let sim = start_sim().await;
    let rt = runtime_with(&["efi"], Limits::default(), Some(&sim)).await;
    let efi = rt.runtime.adapter("efi").unwrap();
    let cred = efi.prepare(&sim_credential(&sim, "efi", None));
    for n in 0..2 {
        efi.create_charge(&cred, &format!("req-{n}"), &charge_request(1000 + n))
            .await
            .unwrap();
    }
    let requests = common::sim_control(&sim, "/_sim/requests?provider=efi", None).await;
    let versions: Vec<&str> = requests
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["version"].as_str().unwrap())
        .collect();
    // The OAuth token, then two charges.
    assert_eq!(versions, ["HTTP/1.1"; 3], "{requests}");
}

/// A create given a gate (in the gateway: the charge's `creating` row reaching the disk) runs
/// up to its first request and sends nothing until the gate opens; a gate that fails keeps
/// every request unsent, and the call is `unavailable`, nothing sent.
#[tokio::test]
async fn a_gated_create_sends_nothing_before_its_gate_opens() {
    use futures::FutureExt;
    use pixgw::runtime::{SendGate, TransportFailure};
    let sim = start_sim().await;
    let rt = runtime_with(&["efi"], Limits::default(), Some(&sim)).await;
    let efi = rt.runtime.adapter("efi").unwrap();
    let cred = efi.prepare(&sim_credential(&sim, "efi", None));
    let sent = async || {
        common::sim_control(&sim, "/_sim/requests?provider=efi", None)
            .await
            .as_array()
            .unwrap()
            .len()
    };
    // A gate that says when the call first waits on it.
    let gate = |outcome: tokio::sync::oneshot::Receiver<Result<(), String>>| {
        let (reached, waiting) = tokio::sync::oneshot::channel::<()>();
        let gate: SendGate = async move {
            let _ = reached.send(());
            outcome.await.unwrap()
        }
        .boxed()
        .shared();
        (gate, waiting)
    };

    let (open, outcome) = tokio::sync::oneshot::channel();
    let (opens, waiting) = gate(outcome);
    let request = charge_request(1990);
    let call = efi.create_charge_after(&cred, "req-gated", &request, opens);
    tokio::pin!(call);
    tokio::select! {
        result = &mut call => panic!("finished before its gate opened: {result:?}"),
        reached = waiting => reached.unwrap(),
    }
    assert_eq!(sent().await, 0, "a request went out before the gate opened");
    open.send(Ok(())).unwrap();
    let charge = call.await.unwrap();
    assert_eq!(
        (charge.status, charge.amount),
        (ChargeStatus::Pending, 1990)
    );
    // The OAuth token, then the charge.
    assert_eq!(sent().await, 2);

    let (fail, outcome) = tokio::sync::oneshot::channel();
    let (fails, _) = gate(outcome);
    fail.send(Err("the disk is on fire".into())).unwrap();
    match efi
        .create_charge_after(&cred, "req-unsynced", &charge_request(2990), fails)
        .await
    {
        Err(CallError::Psp {
            error: PspError::Unavailable(_),
            transport: Some(TransportFailure::NotSent),
            ..
        }) => {}
        other => panic!("expected unavailable, nothing sent; got {other:?}"),
    }
    assert_eq!(sent().await, 2, "a request went out through a failed gate");
}

#[tokio::test]
async fn create_query_notify_pay_and_cancel() {
    let sim = start_sim().await;
    let rt = runtime_with(&["efi"], Limits::default(), Some(&sim)).await;
    let (webhook_url, mut deliveries) = webhook_receiver().await;
    let efi = rt.runtime.adapter("efi").unwrap();
    let cred = efi.prepare(&sim_credential(&sim, "efi", Some(webhook_url.clone())));

    efi.check_credentials(&cred, "req-check").await.unwrap();
    efi.register_webhook(&cred, "req-wh").await.unwrap();

    let request = charge_request(1234);
    let charge = efi
        .create_charge(&cred, "req-create", &request)
        .await
        .unwrap();
    assert_eq!(charge.reference, request.reference);
    assert_eq!(
        charge.psp_id, request.reference,
        "Efí's id is the txid the gateway chose"
    );
    assert_eq!(
        (charge.status, charge.amount),
        (ChargeStatus::Pending, 1234)
    );
    let copy_paste = charge.copy_paste.as_deref().unwrap();
    assert!(copy_paste.starts_with("000201010212"), "{copy_paste}");
    assert!(
        copy_paste.contains("54051"),
        "amount 12.34 is in the BR Code: {copy_paste}"
    );
    assert_eq!(charge.qr_png_base64, None, "the host draws the QR code");
    assert!(charge.expires_at.is_some());

    let queried = efi
        .query_charge(&cred, "req-q", &request.reference, None)
        .await
        .unwrap();
    assert_eq!(
        (queried.status, queried.payment),
        (ChargeStatus::Pending, None)
    );

    // Repeating the create with the same reference does not make a second charge.
    let again = efi
        .create_charge(&cred, "req-create-2", &request)
        .await
        .unwrap();
    assert_eq!(again.psp_id, charge.psp_id);
    let held = reqwest_plain()
        .get(format!("{}/_sim/charges?provider=efi", sim.control_url()))
        .send()
        .await
        .unwrap();
    let held: serde_json::Value = held.json().await.unwrap();
    assert_eq!(held.as_array().map(Vec::len), Some(1), "{held}");

    sim_control(
        &sim,
        "/_sim/pay",
        serde_json::json!({"provider": "efi", "reference": request.reference}),
    )
    .await;
    let delivery = tokio::time::timeout(Duration::from_secs(10), deliveries.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (delivery.method.as_str(), delivery.path.as_str()),
        ("POST", "/pix")
    );
    let events = efi
        .parse_webhook(&cred, "req-wh-in", &delivery)
        .await
        .unwrap();
    assert_eq!(events.len(), 1);
    let event = &events[0];
    assert_eq!(
        (event.reference.as_deref(), event.status),
        (Some(request.reference.as_str()), ChargeStatus::Paid)
    );
    let payment = event.payment.as_ref().unwrap();
    assert_eq!(payment.amount, 1234);
    assert_eq!(payment.end_to_end_id.as_ref().map(String::len), Some(32));

    let paid = efi
        .query_charge(&cred, "req-q2", &request.reference, None)
        .await
        .unwrap();
    assert_eq!(paid.status, ChargeStatus::Paid);
    assert_eq!(paid.payment.as_ref().map(|p| p.amount), Some(1234));

    let other = charge_request(500);
    efi.create_charge(&cred, "req-c3", &other).await.unwrap();
    let canceled = efi
        .cancel_charge(&cred, "req-cancel", &other.reference, None)
        .await
        .unwrap();
    assert_eq!(canceled.status, ChargeStatus::Canceled);
}

fn with_field(mut cred: Credential, name: &str, value: Option<&str>) -> Credential {
    match value {
        Some(v) => cred.fields.insert(name.into(), v.into()),
        None => cred.fields.remove(name),
    };
    cred
}

async fn create_error(sim: &psp_sim::Sim, rt: &TestRuntime, cred: Credential) -> PspError {
    let _ = sim;
    let efi = rt.runtime.adapter("efi").unwrap();
    match efi
        .create_charge(&efi.prepare(&cred), "req", &charge_request(100))
        .await
    {
        Err(CallError::Psp { error, .. }) => error,
        other => panic!("expected a PSP error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_wrong_secret_is_bad_credentials_with_the_psps_message() {
    let sim = start_sim().await;
    let rt = runtime_with(&["efi"], Limits::default(), Some(&sim)).await;
    let cred = with_field(
        sim_credential(&sim, "efi", None),
        "client-secret",
        Some("Client_Secret_wrong"),
    );
    match create_error(&sim, &rt, cred).await {
        PspError::BadCredentials(detail) => {
            assert!(
                detail.message.contains("Invalid or inactive credentials"),
                "{detail:?}"
            );
            assert_eq!(detail.http_status, Some(401));
        }
        other => panic!("expected bad-credentials, got {other:?}"),
    }
}

#[tokio::test]
async fn a_missing_certificate_is_named_as_the_problem() {
    let sim = start_sim().await;
    let rt = runtime_with(&["efi"], Limits::default(), Some(&sim)).await;
    let cred = with_field(sim_credential(&sim, "efi", None), "certificate", None);
    match create_error(&sim, &rt, cred).await {
        PspError::BadCredentials(detail) => {
            assert!(detail.message.contains("certificate"), "{detail:?}")
        }
        other => panic!("expected bad-credentials, got {other:?}"),
    }
}

#[tokio::test]
async fn a_certificate_the_psp_did_not_issue_is_named_as_the_problem() {
    let sim = start_sim().await;
    let rt = runtime_with(&["efi"], Limits::default(), Some(&sim)).await;
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["merchant".into()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let foreign = format!("{}{}", cert.pem(), key.serialize_pem());
    let cred = with_field(
        sim_credential(&sim, "efi", None),
        "certificate",
        Some(&foreign),
    );
    match create_error(&sim, &rt, cred).await {
        PspError::BadCredentials(detail) => {
            assert!(
                detail
                    .message
                    .contains("refused the TLS client certificate"),
                "{detail:?}"
            )
        }
        other => panic!("expected bad-credentials, got {other:?}"),
    }
}

#[tokio::test]
async fn a_garbled_certificate_says_it_does_not_parse() {
    let sim = start_sim().await;
    let rt = runtime_with(&["efi"], Limits::default(), Some(&sim)).await;
    let cred = with_field(
        sim_credential(&sim, "efi", None),
        "certificate",
        Some("-----BEGIN CERTIFICATE-----\nnot base64\n"),
    );
    match create_error(&sim, &rt, cred).await {
        PspError::BadCredentials(detail) => {
            assert!(detail.message.contains("certificate"), "{detail:?}")
        }
        other => panic!("expected bad-credentials, got {other:?}"),
    }
}

async fn fault(sim: &psp_sim::Sim, body: serde_json::Value) {
    sim_control(sim, "/_sim/faults", body).await;
}

#[tokio::test]
async fn a_refused_connection_is_unavailable_because_nothing_was_sent() {
    let sim = start_sim().await;
    let rt = runtime_with(&["efi"], Limits::default(), Some(&sim)).await;
    fault(
        &sim,
        serde_json::json!({"provider": "efi", "refuse_connections": true}),
    )
    .await;
    match create_error(&sim, &rt, sim_credential(&sim, "efi", None)).await {
        PspError::Unavailable(detail) => assert_eq!(detail.http_status, None, "{detail:?}"),
        other => panic!("expected unavailable, got {other:?}"),
    }
}

#[tokio::test]
async fn a_reply_lost_after_the_create_is_ambiguous_and_the_charge_is_found_by_reference() {
    let sim = start_sim().await;
    let rt = runtime_with(&["efi"], Limits::default(), Some(&sim)).await;
    let efi = rt.runtime.adapter("efi").unwrap();
    let cred = efi.prepare(&sim_credential(&sim, "efi", None));
    fault(
        &sim,
        serde_json::json!({"provider": "efi", "drop_reply_after_create": 1}),
    )
    .await;
    let request = charge_request(4321);
    match efi.create_charge(&cred, "req", &request).await {
        Err(CallError::Psp {
            error: PspError::Ambiguous(_),
            ..
        }) => {}
        other => panic!("expected ambiguous, got {other:?}"),
    }
    let found = efi
        .query_charge(&cred, "req-q", &request.reference, None)
        .await
        .unwrap();
    assert_eq!((found.status, found.amount), (ChargeStatus::Pending, 4321));
    // Retrying the create with the same reference returns that charge; still one at the PSP.
    let retried = efi
        .create_charge(&cred, "req-retry", &request)
        .await
        .unwrap();
    assert_eq!(retried.psp_id, found.psp_id);
    let held = reqwest_plain()
        .get(format!("{}/_sim/charges?provider=efi", sim.control_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(
        held.json::<serde_json::Value>()
            .await
            .unwrap()
            .as_array()
            .map(Vec::len),
        Some(1)
    );
}

#[tokio::test]
async fn a_psp_server_error_on_create_keeps_the_psps_words() {
    let sim = start_sim().await;
    let rt = runtime_with(&["efi"], Limits::default(), Some(&sim)).await;
    fault(&sim, serde_json::json!({"provider": "efi", "fail_next": {"count": 1, "status": 503, "path_contains": "/v2/cob"}})).await;
    match create_error(&sim, &rt, sim_credential(&sim, "efi", None)).await {
        PspError::Unavailable(detail) => assert_eq!(
            (detail.http_status, detail.code.as_deref()),
            (Some(503), Some("servico_indisponivel")),
            "{detail:?}"
        ),
        other => panic!("expected unavailable for a 503, got {other:?}"),
    }
}
