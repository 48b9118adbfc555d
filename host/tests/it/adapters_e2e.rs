//! Every PSP adapter through the real gateway and its simulator: connect (with the webhook
//! registered at the PSP, or configured there as a merchant would in the PSP's dashboard),
//! create, read, pay at the simulator → the PSP's notification → `paid`, and cancel where the
//! PSP can. Then the failures every PSP shares — a wrong secret, an untrusted certificate, the
//! other environment's account or charge — each with the PSP's own message and the hint; the
//! central-bank PSPs are simulated with homologation and production apart.

use crate::both_backends;
use crate::common;

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
        ..Default::default()
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

/// Connects one PSP for a fresh merchant; returns its test key.
async fn merchant_at(db: &TestDb, gw: &Gateway, sim: &psp_sim::Sim, provider: &str) -> String {
    let m = create_merchant(db, provider);
    connect(gw, sim, &m.test_key, provider).await;
    m.test_key
}

/// The PSPs' own refusals, each a 502 with the PSP's words and the hint that fixes it.
async fn psp_specific_errors_carry_their_hints(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let gw = Gateway::start(&db, &sim, &ids(), options()).await;
    let expect = |provider: &str, e: &Value, code: &str, hint_words: &str| {
        assert_eq!(e["error"]["code"], code, "{provider}: {e}");
        assert!(
            !e["error"]["psp_message"]
                .as_str()
                .unwrap_or_default()
                .is_empty(),
            "{provider}: {e}"
        );
        assert!(
            e["error"]["hint"].as_str().unwrap().contains(hint_words),
            "{provider}: {e}"
        );
    };

    // Stripe: Pix not activated, then an account whose country cannot take Pix.
    let key = merchant_at(&db, &gw, &sim, "stripe").await;
    let api = sim.provider("stripe").unwrap().endpoints["api"].clone();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let tls = psp_sim::tls::client_config(&sim.ca_pem(), None).unwrap();
    let stripe = reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .build()
        .unwrap();
    let account = |body: Value| {
        stripe
            .post(format!("{api}/_sim/account"))
            .json(&body)
            .send()
    };
    assert!(
        account(json!({"pix_enabled": false}))
            .await
            .unwrap()
            .status()
            .is_success()
    );
    let (status, e) = gw.post("/v1/charges", &key, charge_body("stripe")).await;
    assert_eq!(status, 502);
    expect("stripe", &e, "psp_pix_not_enabled", "Activate Pix");
    assert!(
        account(json!({"pix_enabled": true, "country": "US"}))
            .await
            .unwrap()
            .status()
            .is_success()
    );
    let (status, e) = gw.post("/v1/charges", &key, charge_body("stripe")).await;
    assert_eq!(status, 502);
    expect("stripe", &e, "psp_pix_unavailable_for_account", "country");
    assert!(
        account(json!({"country": "BR"}))
            .await
            .unwrap()
            .status()
            .is_success()
    );
    // The sandbox's designated e-mail pays by itself, with no control call.
    let mut body = charge_body("stripe");
    body["payer"]["email"] = json!("paid@example.com");
    let (status, charge) = gw.post("/v1/charges", &key, body).await;
    assert_eq!(status, 201, "{charge}");
    let id = charge["id"].as_str().unwrap().to_owned();
    poll(
        std::time::Duration::from_secs(20),
        "stripe's test e-mail to pay",
        async || {
            let (_, c) = gw.get(&format!("/v1/charges/{id}"), &key).await;
            (c["status"] == "paid").then_some(())
        },
    )
    .await;

    // iugu: Pix not enabled (Portuguese), then an invoice without Pix.
    let key = merchant_at(&db, &gw, &sim, "iugu").await;
    sim_control(
        &sim,
        "/_sim/config",
        Some(json!({"provider": "iugu", "flags": {"pix_disabled": true}})),
    )
    .await;
    let (status, e) = gw.post("/v1/charges", &key, charge_body("iugu")).await;
    assert_eq!(status, 502);
    expect("iugu", &e, "psp_pix_not_enabled", "payment methods");
    assert!(
        e["error"]["psp_message"]
            .as_str()
            .unwrap()
            .contains("não está habilitado"),
        "{e}"
    );
    sim_control(
        &sim,
        "/_sim/config",
        Some(json!({"provider": "iugu", "flags": {"pix_disabled": false, "pix_missing": true}})),
    )
    .await;
    let (status, e) = gw.post("/v1/charges", &key, charge_body("iugu")).await;
    assert_eq!(status, 502);
    expect(
        "iugu",
        &e,
        "psp_pix_not_payable",
        "not among the account's payable methods",
    );
    sim_control(
        &sim,
        "/_sim/config",
        Some(json!({"provider": "iugu", "flags": {"pix_missing": false}})),
    )
    .await;
    // Without a payer e-mail, the credential's default address goes to iugu.
    let (status, charge) = gw
        .post(
            "/v1/charges",
            &key,
            json!({"amount": 1990, "provider": "iugu"}),
        )
        .await;
    assert_eq!(status, 201, "{charge}");
    let invoices = sim_control(&sim, "/_sim/charges?provider=iugu", None).await;
    let invoice = invoices
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["reference"] == charge["reference"])
        .unwrap();
    assert_eq!(
        invoice["psp"]["email"], "pagamentos@loja.pixgw-sim.example",
        "{invoice}"
    );
}
both_backends!(psp_specific_errors_carry_their_hints);

/// Asaas: a second charge for the same CPF reuses the customer, also after a restart.
async fn asaas_reuses_its_customer_across_restarts(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let gw = Gateway::start(&db, &sim, &["asaas"], options()).await;
    let key = merchant_at(&db, &gw, &sim, "asaas").await;
    for _ in 0..2 {
        let (status, charge) = gw.post("/v1/charges", &key, charge_body("asaas")).await;
        assert_eq!(status, 201, "{charge}");
    }
    gw.kill().await;
    let gw = Gateway::start(&db, &sim, &["asaas"], options()).await;
    let (status, charge) = gw.post("/v1/charges", &key, charge_body("asaas")).await;
    assert_eq!(status, 201, "{charge}");
    let customers = sim_control(&sim, "/_sim/customers?provider=asaas", None).await;
    assert_eq!(customers.as_array().unwrap().len(), 1, "{customers}");
    // Only the first charge looked the customer up and created it; the later ones, the one after
    // the restart included, found it in the adapter's (durable) cache.
    let requests = sim_control(&sim, "/_sim/requests?provider=asaas", None).await;
    let requests = requests.as_array().unwrap();
    let path = |r: &Value| r["path"].as_str().unwrap_or("").to_owned();
    let first_payment = requests
        .iter()
        .position(|r| path(r) == "/v3/payments")
        .unwrap();
    let customer_calls: Vec<String> = requests
        .iter()
        .map(path)
        .filter(|p| p.contains("cpfCnpj") || p == "/v3/customers")
        .collect();
    assert_eq!(
        customer_calls,
        ["/v3/customers?cpfCnpj=52998224725", "/v3/customers"],
        "{requests:?}"
    );
    assert!(
        requests[first_payment..]
            .iter()
            .all(|r| !path(r).contains("/customers")),
        "{requests:?}"
    );
}
both_backends!(asaas_reuses_its_customer_across_restarts);

const CENTRAL_BANK: [&str; 7] = [
    "efi",
    "inter",
    "sicredi",
    "bb",
    "itau",
    "santander",
    "bradesco",
];

/// The central-bank PSPs: the webhook registered on save (at the PSP and on the credential), and
/// a certificate the PSP does not trust — a 502 with the PSP's words and the certificate hint.
async fn central_bank_registration_and_certificates(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let gw = Gateway::start(&db, &sim, &CENTRAL_BANK, options()).await;
    for provider in CENTRAL_BANK {
        let m = create_merchant(&db, provider);
        let credential = connect(&gw, &sim, &m.test_key, provider).await;
        assert_eq!(
            credential["webhook"]["registration"]["status"], "registered",
            "{provider}"
        );
        let registered =
            sim_control(&sim, &format!("/_sim/webhooks?provider={provider}"), None).await;
        assert!(
            registered
                .as_array()
                .unwrap()
                .iter()
                .any(|w| w["webhookUrl"] == credential["webhook"]["url"]),
            "{provider}: {registered}"
        );

        // A certificate from a CA the PSP does not trust: at production for Itaú, whose sandbox
        // asks for no certificate at all.
        let live = provider == "itau";
        let info = sim.provider(provider).unwrap();
        let account = match live {
            true => info.live_credentials.clone().unwrap(),
            false => info.credentials.clone(),
        };
        let foreign = sim_control(
            &sim,
            "/_sim/certificates",
            Some(json!({"provider": provider, "foreign_ca": true, "cn": account["client-id"]})),
        )
        .await;
        let other = create_merchant(&db, &format!("{provider}-cert"));
        let key = if live {
            &other.live_key
        } else {
            &other.test_key
        };
        let mut fields = account.clone();
        if account.contains_key("private-key") {
            fields.insert(
                "certificate".into(),
                foreign["certificate_pem"].as_str().unwrap().into(),
            );
            fields.insert(
                "private-key".into(),
                foreign["private_key_pem"].as_str().unwrap().into(),
            );
        } else {
            fields.insert(
                "certificate".into(),
                foreign["certificate"].as_str().unwrap().into(),
            );
        }
        let (status, saved) = gw
            .post(
                "/v1/credentials",
                key,
                json!({"provider": provider, "fields": fields, "verify": false}),
            )
            .await;
        assert_eq!(status, 201, "{provider}: {saved}");
        let (status, e) = gw.post("/v1/charges", key, charge_body(provider)).await;
        assert_eq!(status, 502, "{provider}: {e}");
        assert_eq!(
            e["error"]["code"], "psp_certificate_invalid",
            "{provider}: {e}"
        );
        assert!(
            e["error"]["hint"].as_str().unwrap().contains("certificate"),
            "{provider}: {e}"
        );
    }
}
both_backends!(central_bank_registration_and_certificates);

/// The central-bank PSPs refuse a Pix key that is not the account's, and the account's key
/// once inactive: the PSP's Portuguese message and the Pix key hint, for each.
async fn central_bank_pix_key_refusals(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let gw = Gateway::start(&db, &sim, &CENTRAL_BANK, options()).await;
    let flag = async |provider: &str, on: bool| {
        sim_control(
            &sim,
            "/_sim/config",
            Some(json!({"provider": provider, "flags": {"pix_key_inactive": on}})),
        )
        .await;
    };
    for provider in CENTRAL_BANK {
        let other_key = create_merchant(&db, &format!("{provider}-other-key"));
        gw.connect(
            &sim,
            &other_key.test_key,
            provider,
            &[("pix-key", "00000000-0000-4000-8000-000000000000")],
        )
        .await;
        let inactive = create_merchant(&db, &format!("{provider}-inactive"));
        connect(&gw, &sim, &inactive.test_key, provider).await;
        flag(provider, true).await;
        for (key, words) in [
            (
                &other_key.test_key,
                "A chave Pix informada não pertence a esta conta",
            ),
            (
                &inactive.test_key,
                "A chave Pix informada está inativa: reative-a ou cadastre outra chave",
            ),
        ] {
            let (status, e) = gw.post("/v1/charges", key, charge_body(provider)).await;
            assert_eq!(status, 502, "{provider}: {e}");
            assert_eq!(e["error"]["code"], "psp_pix_key_invalid", "{provider}: {e}");
            let psp_message = e["error"]["psp_message"].as_str().unwrap();
            assert!(psp_message.contains(words), "{provider}: {e}");
            assert!(
                e["error"]["hint"].as_str().unwrap().contains("Pix key"),
                "{provider}: {e}"
            );
        }
        flag(provider, false).await;
        let (status, charge) = gw
            .post("/v1/charges", &inactive.test_key, charge_body(provider))
            .await;
        assert_eq!(status, 201, "{provider}: reactivated: {charge}");
    }
}
both_backends!(central_bank_pix_key_refusals);

/// Saves `account` as a `provider` credential for `key`; returns (status, body).
async fn save_account(
    gw: &Gateway,
    key: &str,
    provider: &str,
    account: &std::collections::BTreeMap<String, String>,
) -> (u16, Value) {
    gw.post(
        "/v1/credentials",
        key,
        json!({"provider": provider, "fields": account}),
    )
    .await
}

/// Test and live are the PSP's homologation and production, apart as at the PSP: each
/// environment's account works only at its own hosts, charges and notifications stay in their
/// environment, and a charge asked of the other environment is unknown there.
async fn central_bank_environments_are_apart(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let gw = Gateway::start(&db, &sim, &CENTRAL_BANK, options()).await;
    let mut test_charges = Vec::new();
    for provider in CENTRAL_BANK {
        let info = sim.provider(provider).unwrap();
        let (homologation, production) =
            (&info.credentials, info.live_credentials.as_ref().unwrap());
        let m = create_merchant(&db, provider);

        // Test and live mixed: the PSP's OAuth refusal, in its words, and nothing saved.
        for (key, account, environment) in [
            (&m.live_key, homologation, "production"),
            (&m.test_key, production, "sandbox (homologation)"),
        ] {
            let (status, e) = save_account(&gw, key, provider, account).await;
            assert_eq!(status, 422, "{provider}: {e}");
            let hint = e["error"]["hint"].as_str().unwrap();
            if provider == "itau" && environment == "production" {
                // Itaú's sandbox account has no certificate for production's mTLS.
                assert_eq!(e["error"]["code"], "psp_certificate_invalid", "{e}");
                assert!(hint.contains("production"), "{hint}");
                continue;
            }
            assert_eq!(
                e["error"]["code"], "psp_authentication_failed",
                "{provider}: {e}"
            );
            let expected = if provider == "efi" {
                "Invalid or inactive credentials"
            } else {
                "Credenciais do cliente inválidas ou inativas"
            };
            assert_eq!(e["error"]["psp_message"], expected, "{provider}: {e}");
            assert!(hint.contains(environment), "{provider}: {hint}");
            let (_, listed) = gw.get("/v1/credentials", key).await;
            assert_eq!(listed["data"], json!([]), "{provider}");
        }

        // Each environment with its own account.
        let (status, live) = save_account(&gw, &m.live_key, provider, production).await;
        assert_eq!(status, 201, "{provider}: {live}");
        assert_eq!(live["verification"]["status"], "ok", "{provider}: {live}");
        assert_eq!(
            live["webhook"]["registration"]["status"], "registered",
            "{provider}: {live}"
        );
        let (status, test) = save_account(&gw, &m.test_key, provider, homologation).await;
        assert_eq!(status, 201, "{provider}: {test}");
        let webhooks =
            sim_control(&sim, &format!("/_sim/webhooks?provider={provider}"), None).await;
        let registered_in = |credential: &Value| -> Vec<Value> {
            webhooks
                .as_array()
                .unwrap()
                .iter()
                .filter(|w| w["webhookUrl"] == credential["webhook"]["url"])
                .map(|w| w["environment"].clone())
                .collect()
        };
        assert_eq!(
            registered_in(&live),
            [json!("production")],
            "{provider}: {webhooks}"
        );
        assert_eq!(
            registered_in(&test),
            [json!("homologation")],
            "{provider}: {webhooks}"
        );

        // New fields are tried before they replace the old: the production account pasted into
        // the test credential is refused, and the test charge below still goes through.
        let path = format!("/v1/credentials/{}", test["id"].as_str().unwrap());
        let (status, e) = gw
            .send(
                gw.request(reqwest::Method::PATCH, &path, Some(&m.test_key))
                    .json(&json!({"fields": production})),
            )
            .await;
        assert_eq!(status, 422, "{provider}: {e}");
        assert_eq!(
            e["error"]["code"], "psp_authentication_failed",
            "{provider}: {e}"
        );

        // A live charge is created, paid and notified in production.
        let (status, charge) = gw
            .post("/v1/charges", &m.live_key, charge_body(provider))
            .await;
        assert_eq!(status, 201, "{provider}: {charge}");
        assert_eq!(charge["livemode"], true, "{provider}: {charge}");
        let at_psp = sim_control(&sim, &format!("/_sim/charges?provider={provider}"), None).await;
        let environment_of = |reference: &Value| {
            at_psp
                .as_array()
                .unwrap()
                .iter()
                .find(|c| &c["reference"] == reference)
                .map(|c| c["environment"].clone())
        };
        assert_eq!(
            environment_of(&charge["reference"]),
            Some(json!("production")),
            "{provider}: {at_psp}"
        );
        sim_control(
            &sim,
            "/_sim/pay",
            Some(json!({"provider": provider, "reference": charge["reference"]})),
        )
        .await;
        let id = charge["id"].as_str().unwrap().to_owned();
        poll(
            std::time::Duration::from_secs(20),
            &format!("{provider}: live charge paid by production's notification"),
            async || {
                let (_, c) = gw.get(&format!("/v1/charges/{id}"), &m.live_key).await;
                (c["status"] == "paid").then_some(c)
            },
        )
        .await;

        let (status, charge) = gw
            .post("/v1/charges", &m.test_key, charge_body(provider))
            .await;
        assert_eq!(status, 201, "{provider}: {charge}");
        // Itaú's sandbox is another dialect (paths, token, no mTLS): test traffic pointed at
        // production's hosts cannot reach anything there, so it sits out what follows.
        if provider != "itau" {
            test_charges.push((provider, m, test["id"].clone(), charge));
        }
    }

    // The operator points test traffic at production's hosts, and the merchant, seeing the
    // sandbox account refused there, pastes the production account into the test credential.
    // The test charges were created in homologation: production does not know them.
    gw.kill().await;
    let mut to_production = options();
    for provider in CENTRAL_BANK.into_iter().filter(|p| *p != "itau") {
        let info = sim.provider(provider).unwrap();
        for (endpoint, url) in &info.live_endpoints {
            to_production
                .endpoint_overrides
                .push(format!("{provider}.{endpoint}.test={url}"));
        }
    }
    let gw = Gateway::start(&db, &sim, &CENTRAL_BANK, to_production).await;
    for (provider, m, credential, charge) in test_charges {
        let info = sim.provider(provider).unwrap();
        let path = format!("/v1/credentials/{}", credential.as_str().unwrap());
        let (status, patched) = gw
            .send(
                gw.request(reqwest::Method::PATCH, &path, Some(&m.test_key))
                    .json(&json!({"fields": info.live_credentials.unwrap()})),
            )
            .await;
        assert_eq!(status, 200, "{provider}: {patched}");
        assert_eq!(
            patched["verification"]["status"], "ok",
            "{provider}: {patched}"
        );
        let id = charge["id"].as_str().unwrap();
        let (status, e) = gw
            .post(&format!("/v1/charges/{id}/cancel"), &m.test_key, json!({}))
            .await;
        assert_eq!(status, 502, "{provider}: {e}");
        assert_eq!(
            e["error"]["code"], "psp_resource_not_found",
            "{provider}: {e}"
        );
        // The PSP's words: Efí's `mensagem`, BB's `erros`, the others' problem title and detail.
        let psp_message = e["error"]["psp_message"].as_str().unwrap();
        assert!(
            psp_message.ends_with("Nenhuma cobrança encontrada para o txid informado"),
            "{provider}: {e}"
        );
        let hint = e["error"]["hint"].as_str().unwrap();
        assert!(
            hint.contains("other environment") && hint.contains("sandbox (homologation)"),
            "{provider}: {hint}"
        );
        // Nothing moved on the gateway's side.
        let (_, read) = gw.get(&format!("/v1/charges/{id}"), &m.test_key).await;
        assert_eq!(read["status"], "pending", "{provider}: {read}");
    }
}
both_backends!(central_bank_environments_are_apart);

/// The central-bank PSPs' answers without `pixCopiaECola` (optional in the standard), and BB
/// homologation's `textoImagemQRcode`: each charge is created payable, never failed for it.
async fn central_bank_charges_get_their_code_however_the_psp_answers(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let gw = Gateway::start(&db, &sim, &CENTRAL_BANK, options()).await;
    for (provider, flag) in [
        ("bb", "texto_imagem_qrcode"),
        ("sicredi", "create_without_pix_copia_e_cola"),
        ("itau", "without_pix_copia_e_cola"),
    ] {
        let key = merchant_at(&db, &gw, &sim, provider).await;
        sim_control(
            &sim,
            "/_sim/config",
            Some(json!({"provider": provider, "flags": {flag: true}})),
        )
        .await;
        let (status, charge) = gw.post("/v1/charges", &key, charge_body(provider)).await;
        assert_eq!(status, 201, "{provider} {flag}: {charge}");
        assert_eq!(charge["status"], "pending", "{provider}: {charge}");
        let code = charge["pix"]["copy_paste"].as_str().unwrap();
        assert!(psp_sim::brcode::crc_is_valid(code), "{provider}: {code}");
        let at_psp = sim_control(&sim, &format!("/_sim/charges?provider={provider}"), None).await;
        let location = at_psp
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["reference"] == charge["reference"])
            .unwrap()["psp"]["location"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            code.contains(&location),
            "{provider}: {code} for {location}"
        );
        assert!(
            !charge["pix"]["qr_code_base64"].as_str().unwrap().is_empty(),
            "{provider}"
        );
    }
}
both_backends!(central_bank_charges_get_their_code_however_the_psp_answers);

/// The gateway answers a notification once it has stored it, not after confirming it with the
/// PSP (PSPs give a notification a few seconds). With the PSP's queries held unanswered, Inter's
/// notification (a single Pix object here) is delivered with 200 while the gateway's confirming
/// query waits at the PSP and the charge is still pending; released, the charge becomes paid.
async fn notifications_are_answered_before_the_confirming_query(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let gw = Gateway::start(&db, &sim, &["inter"], options()).await;
    let key = merchant_at(&db, &gw, &sim, "inter").await;
    let (status, charge) = gw.post("/v1/charges", &key, charge_body("inter")).await;
    assert_eq!(status, 201, "{charge}");
    let id = charge["id"].as_str().unwrap().to_owned();
    sim_control(
        &sim,
        "/_sim/config",
        Some(json!({"provider": "inter", "flags": {"single_object_notifications": true}})),
    )
    .await;
    sim_control(
        &sim,
        "/_sim/faults",
        Some(json!({"provider": "inter", "hold": {"method": "GET", "path_contains": "/cob/"}})),
    )
    .await;

    // `/_sim/pay` returns once the notification is answered (or its attempts fail).
    let paid = sim_control(
        &sim,
        "/_sim/pay",
        Some(json!({"provider": "inter", "reference": charge["reference"]})),
    )
    .await;
    assert_eq!(paid["webhook"]["outcome"], "delivered", "{paid}");
    assert_eq!(paid["webhook"]["status"], 200, "{paid}");
    assert_eq!(paid["webhook"]["deliveries"][0]["attempts"], 1, "{paid}");
    // The confirming query reaches the PSP and waits there, unanswered.
    let held = poll(
        std::time::Duration::from_secs(20),
        "the gateway's confirming query, held at the PSP",
        async || {
            let requests = sim_control(&sim, "/_sim/requests?provider=inter", None).await;
            requests
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["method"] == "GET" && r["outcome"] == "held")
                .cloned()
        },
    )
    .await;
    assert_eq!(held["status"], Value::Null, "still unanswered: {held}");
    let (_, pending) = gw.get(&format!("/v1/charges/{id}"), &key).await;
    assert_eq!(
        pending["status"], "pending",
        "not paid on the notification's word"
    );

    sim_control(
        &sim,
        "/_sim/faults",
        Some(json!({"provider": "inter", "release_held": true})),
    )
    .await;
    poll(
        std::time::Duration::from_secs(20),
        "the charge paid once the PSP answers",
        async || {
            let (_, c) = gw.get(&format!("/v1/charges/{id}"), &key).await;
            (c["status"] == "paid").then_some(())
        },
    )
    .await;
}
both_backends!(notifications_are_answered_before_the_confirming_query);
