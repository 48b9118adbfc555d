//! Every PSP adapter through the real gateway and its simulator: connect (with the webhook
//! registered at the PSP, or configured there as a merchant would in the PSP's dashboard),
//! create, read, pay at the simulator → the PSP's notification → `paid`, and cancel where the
//! PSP can. Then the credential failures every PSP shares: a wrong secret and the wrong
//! environment's key each give a 502 with the PSP's own message and the hint.

mod common;

use common::gateway::{Backend, Gateway, GatewayOptions, TestDb, create_merchant};
use common::{poll, sim_control, start_sim};
use serde_json::{Value, json};

/// Every adapter, with the credential field that holds its secret.
const ADAPTERS: [(&str, &str); 13] = [
    ("efi", "client-secret"),
    ("inter", "client-secret"),
    ("sicredi", "client-secret"),
    ("bb", "client-secret"),
    ("itau", "client-secret"),
    ("santander", "client-secret"),
    ("bradesco", "client-secret"),
    ("stripe", "secret-key"),
    ("mercadopago", "access-token"),
    ("pagbank", "token"),
    ("openpix", "app-id"),
    ("iugu", "api-token"),
    ("asaas", "api-key"),
];

fn ids() -> Vec<&'static str> {
    ADAPTERS.iter().map(|(id, _)| *id).collect()
}

fn options() -> GatewayOptions {
    GatewayOptions {
        env: vec![
            ("PIXGW_RATE_LIMIT".into(), "0".into()),
            // Only the PSPs' notifications may move charges here.
            ("PIXGW_RECONCILE_SCHEDULE".into(), "1h".into()),
        ],
    }
}

/// Connects the simulator's test account; where the PSP takes its webhook from a dashboard,
/// sets it there the way the credential's answer tells the merchant to.
async fn connect(gw: &Gateway, sim: &psp_sim::Sim, key: &str, provider: &str) -> Value {
    let credential = gw.connect(sim, key, provider, &[]).await;
    let registration = &credential["webhook"]["registration"]["status"];
    match registration.as_str() {
        Some("registered") => {}
        Some("manual") => {
            let mut headers = serde_json::Map::new();
            if let Some(header) = credential["webhook"]["header"].as_str() {
                headers.insert(header.to_owned(), credential["webhook"]["token"].clone());
            }
            sim_control(
                sim,
                "/_sim/config",
                Some(json!({
                    "provider": provider,
                    "webhook_url": credential["webhook"]["url"],
                    "webhook_headers": headers,
                })),
            )
            .await;
        }
        other => panic!("{provider}: webhook registration {other:?}: {credential}"),
    }
    credential
}

fn charge_body(provider: &str) -> Value {
    json!({
        "amount": 1990,
        "provider": provider,
        "description": "Pedido 42",
        "payer": {"name": "Fulana de Tal", "email": "fulana@example.com", "document": "52998224725"},
        "expires_in": 3600,
    })
}

async fn every_adapter_end_to_end(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let m = create_merchant(&db, "Loja A");
    let gw = Gateway::start(&db, &sim, &ids(), options()).await;
    for (provider, _) in ADAPTERS {
        connect(&gw, &sim, &m.test_key, provider).await;
        let (status, charge) = gw
            .post("/v1/charges", &m.test_key, charge_body(provider))
            .await;
        assert_eq!(status, 201, "{provider}: {charge}");
        assert_eq!(charge["status"], "pending", "{provider}: {charge}");
        assert_eq!(charge["provider"], provider);
        assert!(
            charge["pix"]["copy_paste"]
                .as_str()
                .unwrap()
                .starts_with("000201"),
            "{provider}"
        );
        assert!(
            !charge["pix"]["qr_code_base64"].as_str().unwrap().is_empty(),
            "{provider}"
        );
        let id = charge["id"].as_str().unwrap().to_owned();
        let (status, read) = gw.get(&format!("/v1/charges/{id}"), &m.test_key).await;
        assert_eq!(
            (status, &read["reference"]),
            (200, &charge["reference"]),
            "{provider}"
        );

        sim_control(
            &sim,
            "/_sim/pay",
            Some(json!({"provider": provider, "reference": charge["reference"]})),
        )
        .await;
        let paid = poll(
            std::time::Duration::from_secs(20),
            &format!("{provider}: paid by its notification"),
            async || {
                let (_, c) = gw.get(&format!("/v1/charges/{id}"), &m.test_key).await;
                (c["status"] == "paid").then_some(c)
            },
        )
        .await;
        assert_eq!(paid["amount_paid"], 1990, "{provider}: {paid}");
        assert!(paid["paid_at"].is_string(), "{provider}: {paid}");

        let adapters: Value = gw
            .http
            .get(format!("{}/v1/adapters", gw.url))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let cancels = adapters["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["id"] == provider)
            .is_some_and(|a| {
                a["manifest"]["capabilities"]
                    .as_array()
                    .is_some_and(|c| c.contains(&json!("cancel-charge")))
            });
        if cancels {
            let (_, second) = gw
                .post("/v1/charges", &m.test_key, charge_body(provider))
                .await;
            let id = second["id"].as_str().unwrap();
            let (status, canceled) = gw
                .post(&format!("/v1/charges/{id}/cancel"), &m.test_key, json!({}))
                .await;
            assert_eq!(
                (status, &canceled["status"]),
                (200, &json!("canceled")),
                "{provider}: {canceled}"
            );
        }
    }
}
both_backends!(every_adapter_end_to_end);

/// A wrong secret: the PSP's own refusal, verbatim, and the credential hint — for every PSP.
async fn every_adapter_wrong_secret(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let gw = Gateway::start(&db, &sim, &ids(), options()).await;
    for (provider, secret_field) in ADAPTERS {
        // A merchant of its own per PSP, so each charge goes to the one credential.
        let m = create_merchant(&db, provider);
        let real = sim.provider(provider).unwrap().credentials[secret_field].clone();
        // Same shape (and environment prefix), other value.
        let wrong: String = real
            .char_indices()
            .map(|(i, c)| {
                if i + 4 >= real.len() && c.is_ascii_alphanumeric() {
                    if c == 'x' { 'y' } else { 'x' }
                } else {
                    c
                }
            })
            .collect();
        gw.connect(&sim, &m.test_key, provider, &[(secret_field, &wrong)])
            .await;
        let (status, e) = gw
            .post("/v1/charges", &m.test_key, charge_body(provider))
            .await;
        assert_eq!(status, 502, "{provider}: {e}");
        assert_eq!(
            e["error"]["code"], "psp_authentication_failed",
            "{provider}: {e}"
        );
        assert_eq!(e["error"]["provider"], provider);
        let psp_message = e["error"]["psp_message"].as_str().unwrap_or_default();
        assert!(!psp_message.is_empty(), "{provider}: {e}");
        assert!(
            e["error"]["hint"].as_str().unwrap().contains("credential"),
            "{provider}: {e}"
        );
    }
}
both_backends!(every_adapter_wrong_secret);
