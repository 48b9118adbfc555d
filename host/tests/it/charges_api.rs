//! `/v1/charges` end to end: the real `pixgw` binary on SQLite and on PostgreSQL, the efi
//! adapter, and the Efí simulator over mTLS.

use crate::both_backends;
use crate::common;

use common::gateway::{Backend, Gateway, GatewayOptions, TestDb, cli, cli_output, create_merchant};
use common::{sim_control, start_sim};
use serde_json::{Value, json};

fn charge_body() -> Value {
    json!({
        "amount": 1990,
        "provider": "efi",
        "description": "Pedido 42",
        "payer": {"name": "Fulana de Tal", "document": "529.982.247-25", "email": "fulana@example.com"},
        "expires_in": 600,
        "metadata": {"order": "42"}
    })
}

/// The charges the simulator holds for efi.
async fn sim_charges(sim: &psp_sim::Sim) -> Vec<Value> {
    let all = sim_control(sim, "/_sim/charges?provider=efi", None).await;
    all.as_array()
        .cloned()
        .unwrap_or_else(|| all["data"].as_array().cloned().unwrap_or_default())
}

async fn create_get_list_cancel(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let merchant = create_merchant(&db, "Loja A");
    let gw = Gateway::start(&db, &sim, &["efi"], GatewayOptions::default()).await;
    let credential = gw.connect(&sim, &merchant.test_key, "efi", &[]).await;
    assert_eq!(credential["verification"]["status"], "ok", "{credential}");
    assert_eq!(
        credential["secret_fields_set"],
        json!(["certificate", "client-secret"])
    );
    assert!(credential["fields"].get("client-secret").is_none());
    assert!(
        credential["webhook"]["url"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{}/api/wh/", gw.url))
    );

    let (status, charge) = gw
        .post("/v1/charges", &merchant.test_key, charge_body())
        .await;
    assert_eq!(status, 201, "{charge}");
    assert!(charge["id"].as_str().unwrap().starts_with("chg_"));
    assert_eq!(charge["object"], "charge");
    assert_eq!(charge["status"], "pending");
    assert_eq!(charge["amount"], 1990);
    assert_eq!(charge["currency"], "BRL");
    assert_eq!(charge["provider"], "efi");
    assert_eq!(charge["livemode"], false);
    assert_eq!(charge["description"], "Pedido 42");
    assert_eq!(charge["payer"]["document"], "52998224725");
    assert_eq!(charge["metadata"], json!({"order": "42"}));
    let reference = charge["reference"].as_str().unwrap();
    assert!(
        (26..=35).contains(&reference.len())
            && reference.chars().all(|c| c.is_ascii_alphanumeric())
    );
    let copy_paste = charge["pix"]["copy_paste"].as_str().unwrap();
    assert!(copy_paste.starts_with("000201"), "{copy_paste}");
    // The image is the gateway's compact drawing of the copy-and-paste code.
    let qr = charge["pix"]["qr_code_base64"].as_str().unwrap();
    assert!(qr.len() < 4096, "{} base64 characters", qr.len());
    let png = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, qr).unwrap();
    assert_eq!(common::decode_qr(&png).as_deref(), Some(copy_paste));
    assert!(charge["pix"]["expires_at"].as_str().is_some());
    // The simulator holds exactly this charge, under the gateway's reference.
    let at_sim = sim_charges(&sim).await;
    assert_eq!(at_sim.len(), 1, "{at_sim:?}");

    let id = charge["id"].as_str().unwrap();
    let (status, fetched) = gw
        .get(&format!("/v1/charges/{id}"), &merchant.test_key)
        .await;
    assert_eq!(status, 200);
    assert_eq!(fetched, charge);

    let (status, second) = gw
        .post(
            "/v1/charges",
            &merchant.test_key,
            json!({"amount": 500, "provider": "efi"}),
        )
        .await;
    assert_eq!(status, 201, "{second}");
    let (status, list) = gw.get("/v1/charges?limit=1", &merchant.test_key).await;
    assert_eq!(status, 200);
    assert_eq!(list["object"], "list");
    assert_eq!(list["has_more"], true);
    assert_eq!(list["data"][0]["id"], second["id"], "newest first");
    let (_, page2) = gw
        .get(
            &format!(
                "/v1/charges?limit=1&starting_after={}",
                second["id"].as_str().unwrap()
            ),
            &merchant.test_key,
        )
        .await;
    assert_eq!(page2["data"][0]["id"], charge["id"]);
    assert_eq!(page2["has_more"], false);
    let (_, filtered) = gw.get("/v1/charges?status=paid", &merchant.test_key).await;
    assert_eq!(filtered["data"], json!([]));
    let (_, by_provider) = gw
        .get(
            "/v1/charges?provider=efi&created_gte=2020-01-01T00:00:00Z",
            &merchant.test_key,
        )
        .await;
    assert_eq!(by_provider["data"].as_array().unwrap().len(), 2);

    let (status, canceled) = gw
        .post(
            &format!("/v1/charges/{id}/cancel"),
            &merchant.test_key,
            json!({}),
        )
        .await;
    assert_eq!(status, 200, "{canceled}");
    assert_eq!(canceled["status"], "canceled");
    let (status, again) = gw
        .post(
            &format!("/v1/charges/{id}/cancel"),
            &merchant.test_key,
            json!({}),
        )
        .await;
    assert_eq!(status, 409, "{again}");
    assert_eq!(again["error"]["code"], "charge_not_cancelable");
    let (_, fetched) = gw
        .get(&format!("/v1/charges/{id}"), &merchant.test_key)
        .await;
    assert_eq!(fetched["status"], "canceled");
}
both_backends!(create_get_list_cancel);

async fn idempotency(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let merchant = create_merchant(&db, "Loja A");
    let gw = Gateway::start(&db, &sim, &["efi"], GatewayOptions::default()).await;
    gw.connect(&sim, &merchant.test_key, "efi", &[]).await;
    let post = |key: &str, body: Value| {
        gw.request(
            reqwest::Method::POST,
            "/v1/charges",
            Some(&merchant.test_key),
        )
        .header("Idempotency-Key", key)
        .json(&body)
    };

    // Replay: the first status and body, and no second charge.
    let (s1, first) = gw.send(post("order-1", charge_body())).await;
    assert_eq!(s1, 201, "{first}");
    let replay = post("order-1", charge_body()).send().await.unwrap();
    assert_eq!(replay.status(), 201);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    let replayed = replay.text().await.unwrap();
    // The first answer's fields in their order, its QR image drawn back in: the key's row keeps
    // the answer without it.
    assert!(replayed.starts_with(r#"{"id":"chg_"#), "{replayed}");
    assert_eq!(serde_json::from_str::<Value>(&replayed).unwrap(), first);
    let png = base64::Engine::decode(
        &base64::engine::general_purpose::STANDARD,
        first["pix"]["qr_code_base64"].as_str().unwrap(),
    )
    .unwrap();
    assert_eq!(
        common::decode_qr(&png).as_deref(),
        first["pix"]["copy_paste"].as_str()
    );
    let stored: String =
        sqlx::query_scalar("SELECT response_body FROM idempotency_keys WHERE key = 'order-1'")
            .fetch_one(pixgw::store::Store::connect(&db.url).await.unwrap().pool())
            .await
            .unwrap();
    let mut without_image = first.clone();
    without_image["pix"]["qr_code_base64"] = Value::Null;
    assert_eq!(
        serde_json::from_str::<Value>(&stored).unwrap(),
        without_image
    );
    assert_eq!(sim_charges(&sim).await.len(), 1);

    // Same key, another body.
    let mut other = charge_body();
    other["amount"] = json!(2000);
    let (status, mismatch) = gw.send(post("order-1", other)).await;
    assert_eq!(status, 422, "{mismatch}");
    assert_eq!(mismatch["error"]["code"], "idempotency_key_reused");
    assert_eq!(mismatch["error"]["type"], "idempotency_error");

    // Same key while the first is running: the simulator answers slowly.
    sim_control(
        &sim,
        "/_sim/faults",
        Some(json!({"provider": "efi", "latency_ms": 1500})),
    )
    .await;
    let slow = gw.send(post("order-2", charge_body()));
    let second = async {
        // Once the first request holds the key (it then waits on the slow PSP), send the second.
        let store = pixgw::store::Store::connect(&db.url).await.unwrap();
        common::poll(
            std::time::Duration::from_secs(10),
            "the first request to claim the key",
            async || {
                let row = sqlx::query("SELECT 1 FROM idempotency_keys WHERE key = 'order-2'")
                    .fetch_optional(store.pool())
                    .await
                    .unwrap();
                row.map(|_| ())
            },
        )
        .await;
        gw.send(post("order-2", charge_body())).await
    };
    let ((slow_status, _), (status, busy)) = tokio::join!(slow, second);
    assert_eq!(status, 409, "{busy}");
    assert_eq!(busy["error"]["code"], "idempotency_key_in_use");
    assert_eq!(slow_status, 201);
    sim_control(
        &sim,
        "/_sim/faults",
        Some(json!({"provider": "efi", "latency_ms": 0})),
    )
    .await;

    // N parallel requests with one key: exactly one charge at the simulator.
    let before = sim_charges(&sim).await.len();
    let attempts = (0..8).map(|_| gw.send(post("order-3", charge_body())));
    let results = futures::future::join_all(attempts).await;
    let created: Vec<&Value> = results
        .iter()
        .filter(|(s, _)| *s == 201)
        .map(|(_, b)| b)
        .collect();
    assert!(!created.is_empty());
    assert!(
        results.iter().all(|(s, _)| *s == 201 || *s == 409),
        "{results:?}"
    );
    assert!(created.iter().all(|b| b["id"] == created[0]["id"]));
    assert_eq!(sim_charges(&sim).await.len(), before + 1);

    // A key is scoped to the merchant and environment: the live key may reuse it.
    let (status, bad) = gw.send(post("", charge_body())).await;
    assert_eq!(status, 400, "{bad}");
    assert_eq!(bad["error"]["param"], "Idempotency-Key");
}
both_backends!(idempotency);

async fn authentication_and_scoping(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let a = create_merchant(&db, "Loja A");
    let b = create_merchant(&db, "Loja B");
    let gw = Gateway::start(&db, &sim, &["efi"], GatewayOptions::default()).await;
    gw.connect(&sim, &a.test_key, "efi", &[]).await;
    let (_, charge) = gw.post("/v1/charges", &a.test_key, charge_body()).await;
    let id = charge["id"].as_str().unwrap();
    let path = format!("/v1/charges/{id}");

    let (status, missing) = gw.send(gw.request(reqwest::Method::GET, &path, None)).await;
    assert_eq!(
        (status, missing["error"]["code"].as_str()),
        (401, Some("api_key_missing"))
    );
    assert_eq!(missing["error"]["type"], "authentication_error");
    assert!(
        missing["error"]["request_id"]
            .as_str()
            .unwrap()
            .starts_with("req_")
    );
    let (status, malformed) = gw.get(&path, "sk_test_123").await;
    assert_eq!(
        (status, malformed["error"]["code"].as_str()),
        (401, Some("api_key_malformed"))
    );
    // The same key with its last character changed.
    let last = if a.test_key.ends_with('x') { 'y' } else { 'x' };
    let forged = format!("{}{last}", &a.test_key[..a.test_key.len() - 1]);
    let (status, invalid) = gw.get(&path, &forged).await;
    assert_eq!(
        (status, invalid["error"]["code"].as_str()),
        (401, Some("api_key_invalid"))
    );

    // Merchant B cannot see A's charge; A's live key cannot see A's test charge.
    let (status, other) = gw.get(&path, &b.test_key).await;
    assert_eq!(
        (status, other["error"]["code"].as_str()),
        (404, Some("resource_missing"))
    );
    let (status, _) = gw.get(&path, &a.live_key).await;
    assert_eq!(status, 404);
    let (_, live_list) = gw.get("/v1/charges", &a.live_key).await;
    assert_eq!(live_list["data"], json!([]));
    // No live credential: a live charge is refused before any PSP is called.
    let (status, not_connected) = gw.post("/v1/charges", &a.live_key, charge_body()).await;
    assert_eq!(
        (status, not_connected["error"]["code"].as_str()),
        (422, Some("provider_not_connected"))
    );

    // Revocation from another process takes effect as soon as the gateway hears of it: at
    // once on SQLite (nothing kept), on PostgreSQL when its `NOTIFY` arrives (`row_cache`),
    // within milliseconds, and within the keeping period (2 s) should it be missed.
    let keys = cli(&db, &[], &["key", "list", "--merchant", &a.id]);
    let test_key_id = keys
        .lines()
        .find(|l| l.contains(" test "))
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();
    cli(&db, &[], &["key", "revoke", &test_key_id]);
    let heard = std::time::Duration::from_secs(5);
    let revoked = common::poll(heard, "the revocation heard", async || {
        let (status, revoked) = gw.get(&path, &a.test_key).await;
        (status != 200).then_some((status, revoked))
    })
    .await;
    assert_eq!(
        (revoked.0, revoked.1["error"]["code"].as_str()),
        (401, Some("api_key_invalid"))
    );
}
both_backends!(authentication_and_scoping);

async fn validation(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let m = create_merchant(&db, "Loja A");
    let gw = Gateway::start(&db, &sim, &["efi"], GatewayOptions::default()).await;
    gw.connect(&sim, &m.test_key, "efi", &[]).await;
    let cases: Vec<(Value, &str, &str)> = vec![
        (json!({"provider": "efi"}), "amount", "parameter_missing"),
        (
            json!({"amount": "10.00", "provider": "efi"}),
            "amount",
            "parameter_invalid",
        ),
        (
            json!({"amount": 0, "provider": "efi"}),
            "amount",
            "parameter_invalid",
        ),
        (
            json!({"amount": 1_000_000_001i64, "provider": "efi"}),
            "amount",
            "parameter_invalid",
        ),
        (json!({"amount": 100}), "provider", "parameter_missing"),
        (
            json!({"amount": 100, "provider": "efi", "description": "x".repeat(141)}),
            "description",
            "parameter_invalid",
        ),
        (
            json!({"amount": 100, "provider": "efi", "payer": {"document": "529.982.247"}}),
            "payer.document",
            "parameter_invalid",
        ),
        (
            json!({"amount": 100, "provider": "efi", "payer": {"email": "not-an-email"}}),
            "payer.email",
            "parameter_invalid",
        ),
        (
            json!({"amount": 100, "provider": "efi", "payer": {"cpf": "52998224725"}}),
            "payer.cpf",
            "parameter_unknown",
        ),
        (
            json!({"amount": 100, "provider": "efi", "expires_in": 10}),
            "expires_in",
            "parameter_invalid",
        ),
        (
            json!({"amount": 100, "provider": "efi", "metadata": {"k": 1}}),
            "metadata.k",
            "parameter_invalid",
        ),
        (
            json!({"amount": 100, "provider": "efi", "currency": "USD"}),
            "currency",
            "parameter_unknown",
        ),
    ];
    for (body, param, code) in cases {
        let (status, error) = gw.post("/v1/charges", &m.test_key, body.clone()).await;
        assert_eq!(status, 400, "{body}: {error}");
        assert_eq!(error["error"]["param"], param, "{body}: {error}");
        assert_eq!(error["error"]["code"], code, "{body}: {error}");
        assert_eq!(error["error"]["type"], "invalid_request_error");
    }
    // Well formed, and refused by a rule the document cannot state: 422, with the same type,
    // code and param.
    let rules = [
        (
            json!({"amount": 100, "provider": "nope"}),
            "provider",
            "provider_unknown",
        ),
        (
            json!({"amount": 100, "provider": "efi", "payer": {"document": "529.982.247-24"}}),
            "payer.document",
            "parameter_invalid",
        ),
        (
            json!({"amount": 100, "provider": "efi", "payer": {"document": "111.111.111-11"}}),
            "payer.document",
            "parameter_invalid",
        ),
    ];
    for (body, param, code) in rules {
        let (status, error) = gw.post("/v1/charges", &m.test_key, body.clone()).await;
        assert_eq!(status, 422, "{body}: {error}");
        assert_eq!(error["error"]["param"], param, "{body}: {error}");
        assert_eq!(error["error"]["code"], code, "{body}: {error}");
        assert_eq!(error["error"]["type"], "invalid_request_error");
    }
    let (status, error) = gw
        .send(
            gw.request(reqwest::Method::POST, "/v1/charges", Some(&m.test_key))
                .body("{\"amount\": 1,"),
        )
        .await;
    assert_eq!(
        (status, error["error"]["code"].as_str()),
        (400, Some("invalid_json"))
    );
    let huge = json!({"amount": 100, "provider": "efi", "description": "x".repeat(70_000)});
    let (status, error) = gw.post("/v1/charges", &m.test_key, huge).await;
    assert_eq!(
        (status, error["error"]["code"].as_str()),
        (413, Some("request_too_large"))
    );
    assert!(
        sim_charges(&sim).await.is_empty(),
        "no invalid request reached the PSP"
    );
}
both_backends!(validation);

/// Every failure the Efí simulator can produce reaches the merchant as a 502 with the PSP's
/// message and a hint.
async fn psp_failures(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let m = create_merchant(&db, "Loja A");
    let gw = Gateway::start(&db, &sim, &["efi"], GatewayOptions::default()).await;
    let body = json!({"amount": 100, "provider": "efi"});

    // Wrong client secret: the simulator's OAuth refusal, verbatim, with the credential hint.
    let cred = gw
        .connect(
            &sim,
            &m.test_key,
            "efi",
            &[(
                "client-secret",
                "Client_Secret_0000000000000000000000000000000000000000",
            )],
        )
        .await;
    let (status, e) = gw.post("/v1/charges", &m.test_key, body.clone()).await;
    assert_eq!(status, 502, "{e}");
    assert_eq!(e["error"]["type"], "psp_error");
    assert_eq!(e["error"]["code"], "psp_authentication_failed", "{e}");
    assert_eq!(e["error"]["provider"], "efi");
    assert_eq!(e["error"]["psp_message"], "Invalid or inactive credentials");
    assert!(
        e["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("client id and secret"),
        "{e}"
    );
    // Saving with verification refuses the same credential with the same words.
    let mut fields = serde_json::Map::new();
    for (k, v) in sim.provider("efi").unwrap().credentials {
        fields.insert(k, Value::String(v));
    }
    fields.insert(
        "client-secret".into(),
        json!("Client_Secret_1111111111111111111111111111111111111111"),
    );
    let (status, refused) = gw
        .post(
            "/v1/credentials",
            &m.test_key,
            json!({"provider": "efi", "fields": fields}),
        )
        .await;
    assert_eq!(status, 422, "{refused}");
    assert_eq!(
        refused["error"]["psp_message"],
        "Invalid or inactive credentials"
    );
    let id = cred["id"].as_str().unwrap();
    gw.send(gw.request(
        reqwest::Method::DELETE,
        &format!("/v1/credentials/{id}"),
        Some(&m.test_key),
    ))
    .await;

    // A certificate from another CA: refused in the TLS handshake.
    let other_cert = sim_control(&sim, "/_sim/certificates", Some(json!({"provider": "efi", "foreign_ca": true, "cn": sim.provider("efi").unwrap().credentials["client-id"]}))).await;
    let pem = other_cert["certificate"]
        .as_str()
        .expect("a PEM")
        .to_owned();
    let cred = gw
        .connect(&sim, &m.test_key, "efi", &[("certificate", &pem)])
        .await;
    let (status, e) = gw.post("/v1/charges", &m.test_key, body.clone()).await;
    assert_eq!(status, 502, "{e}");
    assert_eq!(e["error"]["code"], "psp_certificate_invalid", "{e}");
    assert!(
        e["error"]["hint"].as_str().unwrap().contains("certificate"),
        "{e}"
    );
    let id = cred["id"].as_str().unwrap();
    gw.send(gw.request(
        reqwest::Method::DELETE,
        &format!("/v1/credentials/{id}"),
        Some(&m.test_key),
    ))
    .await;

    // A Pix key that is not the account's: the PSP's Portuguese message and the Pix key hint.
    let cred = gw
        .connect(
            &sim,
            &m.test_key,
            "efi",
            &[("pix-key", "00000000-0000-4000-8000-000000000000")],
        )
        .await;
    let (status, e) = gw.post("/v1/charges", &m.test_key, body.clone()).await;
    assert_eq!(status, 502, "{e}");
    assert_eq!(e["error"]["code"], "psp_pix_key_invalid", "{e}");
    assert_eq!(
        e["error"]["psp_message"],
        "A chave Pix informada não pertence a esta conta"
    );
    assert!(
        e["error"]["hint"].as_str().unwrap().contains("Pix key"),
        "{e}"
    );
    let id = cred["id"].as_str().unwrap();
    gw.send(gw.request(
        reqwest::Method::DELETE,
        &format!("/v1/credentials/{id}"),
        Some(&m.test_key),
    ))
    .await;
    gw.connect(&sim, &m.test_key, "efi", &[]).await;

    // The PSP refusing the charge with its own error body.
    sim_control(&sim, "/_sim/faults", Some(json!({"provider": "efi", "fail_next": {"count": 1, "status": 400, "path_contains": "/cob/"}}))).await;
    let (status, e) = gw.post("/v1/charges", &m.test_key, body.clone()).await;
    assert_eq!(status, 502, "{e}");
    assert_eq!(e["error"]["code"], "psp_rejected", "{e}");
    assert!(!e["error"]["psp_message"].as_str().unwrap().is_empty());

    // The PSP down (503): nothing was created.
    sim_control(&sim, "/_sim/faults", Some(json!({"provider": "efi", "fail_next": {"count": 1, "status": 503, "path_contains": "/cob/"}}))).await;
    let (status, e) = gw.post("/v1/charges", &m.test_key, body.clone()).await;
    assert_eq!(
        (status, e["error"]["code"].as_str()),
        (502, Some("psp_unavailable")),
        "{e}"
    );

    // Connections refused.
    sim_control(
        &sim,
        "/_sim/faults",
        Some(json!({"provider": "efi", "refuse_connections": true})),
    )
    .await;
    let (status, e) = gw.post("/v1/charges", &m.test_key, body.clone()).await;
    assert_eq!(
        (status, e["error"]["code"].as_str()),
        (502, Some("psp_unavailable")),
        "{e}"
    );
    sim_control(
        &sim,
        "/_sim/faults",
        Some(json!({"provider": "efi", "refuse_connections": false})),
    )
    .await;

    // Created, then the reply lost: the outcome is unknown, and a retry with the same key finds
    // the charge instead of creating another.
    sim_control(
        &sim,
        "/_sim/faults",
        Some(json!({"provider": "efi", "drop_reply_after_create": 1})),
    )
    .await;
    let before = sim_charges(&sim).await.len();
    let post = || {
        gw.request(reqwest::Method::POST, "/v1/charges", Some(&m.test_key))
            .header("Idempotency-Key", "lost-reply")
            .json(&body)
    };
    let (status, e) = gw.send(post()).await;
    assert_eq!(
        (status, e["error"]["code"].as_str()),
        (502, Some("psp_outcome_unknown")),
        "{e}"
    );
    assert!(
        e["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("same Idempotency-Key")
    );
    let (status, charge) = gw.send(post()).await;
    assert_eq!(status, 201, "{charge}");
    assert_eq!(
        sim_charges(&sim).await.len(),
        before + 1,
        "one charge at the PSP"
    );
    // Every response names its request.
    let response = gw
        .request(reqwest::Method::GET, "/v1/charges", Some(&m.test_key))
        .send()
        .await
        .unwrap();
    assert!(
        response.headers()["x-request-id"]
            .to_str()
            .unwrap()
            .starts_with("req_")
    );
}
both_backends!(psp_failures);

async fn vault_at_rest(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let m = create_merchant(&db, "Loja A");
    let old_key = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    let new_key = "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=";
    let with_key = |k: &str| GatewayOptions {
        env: vec![("PIXGW_MASTER_KEY".into(), k.into())],
        ..Default::default()
    };
    let gw = Gateway::start(&db, &sim, &["efi"], with_key(old_key)).await;
    gw.connect(&sim, &m.test_key, "efi", &[]).await;
    let (status, _) = gw
        .post(
            "/v1/charges",
            &m.test_key,
            json!({"amount": 100, "provider": "efi"}),
        )
        .await;
    assert_eq!(status, 201);
    drop(gw);

    let secrets = sim.provider("efi").unwrap().credentials;
    if let Some(file) = db.sqlite_file() {
        let mut bytes = std::fs::read(&file).unwrap();
        bytes.extend(std::fs::read(format!("{}-wal", file.display())).unwrap_or_default());
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains(&secrets["client-secret"]),
            "client secret in clear in the database"
        );
        assert!(
            !text.contains("PRIVATE KEY"),
            "private key in clear in the database"
        );
    }

    // Rotation: re-encrypt under the new key; the gateway with only the new key still charges.
    let rotated = cli(
        &db,
        &[
            ("PIXGW_MASTER_KEY", new_key),
            ("PIXGW_MASTER_KEY_PREVIOUS", old_key),
        ],
        &["vault", "rotate"],
    );
    assert!(
        rotated.starts_with("1 credentials examined, 3 secrets re-encrypted"),
        "{rotated}"
    );
    let gw = Gateway::start(&db, &sim, &["efi"], with_key(new_key)).await;
    let (status, charge) = gw
        .post(
            "/v1/charges",
            &m.test_key,
            json!({"amount": 100, "provider": "efi"}),
        )
        .await;
    assert_eq!(status, 201, "{charge}");
    drop(gw);

    // The old key alone can no longer open anything: an error, never garbage.
    let gw = Gateway::start(&db, &sim, &["efi"], with_key(old_key)).await;
    let (status, e) = gw
        .post(
            "/v1/charges",
            &m.test_key,
            json!({"amount": 100, "provider": "efi"}),
        )
        .await;
    assert_eq!(
        (status, e["error"]["code"].as_str()),
        (500, Some("internal_error")),
        "{e}"
    );
    drop(gw);

    // A tampered ciphertext is detected.
    let output = cli_output(&db, &[("PIXGW_MASTER_KEY", new_key)], &["vault", "rotate"]);
    assert!(output.status.success());
    tamper(&db).await;
    let gw = Gateway::start(&db, &sim, &["efi"], with_key(new_key)).await;
    let (status, e) = gw
        .post(
            "/v1/charges",
            &m.test_key,
            json!({"amount": 100, "provider": "efi"}),
        )
        .await;
    assert_eq!(
        (status, e["error"]["code"].as_str()),
        (500, Some("internal_error")),
        "{e}"
    );
}
both_backends!(vault_at_rest);

/// Swaps the sealed client secret for the sealed certificate of the same credential: valid
/// ciphertext, wrong place, so its binding must fail.
async fn tamper(db: &TestDb) {
    let store = pixgw::store::Store::connect(&db.url).await.unwrap();
    let record = store.all_credentials().await.unwrap().remove(0);
    let mut tampered = record.clone();
    let cert = record.sealed_fields["certificate"].clone();
    tampered.sealed_fields.insert("client-secret".into(), cert);
    store.update_credential(&tampered, true).await.unwrap();
}
