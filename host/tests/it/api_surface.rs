//! The API around the charges: OpenAPI, health, metrics, unknown routes, and what saving a
//! credential checks — through the real binary on both backends.

use crate::both_backends;
use crate::common;

use common::gateway::{Backend, Gateway, GatewayOptions, TestDb, create_merchant};
use common::{sim_control, start_sim};
use serde_json::{Value, json};

async fn openapi_health_and_metrics(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let m = create_merchant(&db, "Loja A");
    let gw = Gateway::start(&db, &sim, &["efi"], GatewayOptions::default()).await;

    let doc: Value = gw
        .http
        .get(format!("{}/v1/openapi.json", gw.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1"),
        "{}",
        doc["openapi"]
    );
    let paths: Vec<&str> = doc["paths"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for path in [
        "/v1/charges",
        "/v1/charges/{id}",
        "/v1/charges/{id}/cancel",
        "/v1/credentials",
        "/v1/credentials/{id}",
        "/v1/adapters",
        "/healthz",
        "/readyz",
        "/metrics",
    ] {
        assert!(paths.contains(&path), "{path} missing from {paths:?}");
    }
    for schema in [
        "ChargeObject",
        "ErrorResponse",
        "ErrorBody",
        "ErrorType",
        "CredentialObject",
        "CreateChargeRequest",
    ] {
        assert!(
            doc["components"]["schemas"].get(schema).is_some(),
            "schema {schema} missing"
        );
    }
    assert!(
        doc["paths"]["/v1/charges"]["post"]["responses"]
            .get("502")
            .is_some()
    );

    let health = gw
        .http
        .get(format!("{}/healthz", gw.url))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    assert_eq!(health.text().await.unwrap(), "ok");
    let (status, ready) = gw
        .send(gw.request(reqwest::Method::GET, "/readyz", None))
        .await;
    assert_eq!(status, 200, "{ready}");
    assert_eq!(
        ready,
        json!({"status": "ready", "database": "ok", "adapters": ["efi"]})
    );

    let (status, missing) = gw.get("/v1/nothing", &m.test_key).await;
    assert_eq!(
        (status, missing["error"]["code"].as_str()),
        (404, Some("route_not_found"))
    );

    gw.connect(&sim, &m.test_key, "efi", &[]).await;
    let (status, _) = gw
        .post(
            "/v1/charges",
            &m.test_key,
            json!({"amount": 100, "provider": "efi"}),
        )
        .await;
    assert_eq!(status, 201);
    let metrics = gw
        .http
        .get(format!("{}/metrics", gw.url))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let has = |needle: &str| metrics.lines().any(|l| l.contains(needle));
    assert!(
        has(r#"pixgw_http_requests_total{route="/v1/charges",method="POST",status="201"} 1"#),
        "{metrics}"
    );
    assert!(
        has(r#"pixgw_charges_total{provider="efi",status="pending"} 1"#),
        "{metrics}"
    );
    assert!(
        has(
            r#"pixgw_psp_call_duration_seconds_count{provider="efi",operation="create-charge",outcome="ok"} 1"#
        ),
        "{metrics}"
    );
    assert!(
        has("pixgw_http_request_duration_seconds_bucket"),
        "{metrics}"
    );
}
both_backends!(openapi_health_and_metrics);

/// A PEM, with a certificate valid from `not_before` to `not_after`.
fn self_signed(not_before: (i32, u8, u8), not_after: (i32, u8, u8)) -> String {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["client".into()]).unwrap();
    params.not_before = rcgen::date_time_ymd(not_before.0, not_before.1, not_before.2);
    params.not_after = rcgen::date_time_ymd(not_after.0, not_after.1, not_after.2);
    let cert = params.self_signed(&key).unwrap();
    format!("{}{}", cert.pem(), key.serialize_pem())
}

async fn credential_checks_on_save(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let m = create_merchant(&db, "Loja A");
    let gw = Gateway::start(&db, &sim, &["efi"], GatewayOptions::default()).await;
    let account = sim.provider("efi").unwrap().credentials;
    let save = |fields: Value| {
        gw.post(
            "/v1/credentials",
            &m.test_key,
            json!({"provider": "efi", "fields": fields, "verify": false}),
        )
    };
    let with = |name: &str, value: &str| {
        let mut fields = json!(account);
        fields[name] = json!(value);
        fields
    };

    // The adapter's own fields refuse what the document (an object of strings) allows: 422.
    let (status, e) = save(with(
        "certificate",
        "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n",
    ))
    .await;
    assert_eq!(status, 422, "{e}");
    assert_eq!(e["error"]["param"], "fields.certificate");

    // The certificate of one key pair with the private key of another.
    let one = sim_control(
        &sim,
        "/_sim/certificates",
        Some(json!({"provider": "efi", "cn": account["client-id"]})),
    )
    .await;
    let two = sim_control(
        &sim,
        "/_sim/certificates",
        Some(json!({"provider": "efi", "cn": account["client-id"]})),
    )
    .await;
    let mixed = format!(
        "{}{}",
        one["certificate_pem"].as_str().unwrap(),
        two["private_key_pem"].as_str().unwrap()
    );
    let (status, e) = save(with("certificate", &mixed)).await;
    assert_eq!(status, 422, "{e}");
    assert_eq!(e["error"]["param"], "fields.certificate");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("does not match the private key"),
        "{e}"
    );

    let (status, e) = save(with(
        "certificate",
        &self_signed((2020, 1, 1), (2021, 1, 1)),
    ))
    .await;
    assert_eq!(status, 422, "{e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("expired on"),
        "{e}"
    );

    let only_cert = one["certificate_pem"].as_str().unwrap();
    let (status, e) = save(with("certificate", only_cert)).await;
    assert_eq!(status, 422, "{e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no PRIVATE KEY block"),
        "{e}"
    );

    let mut no_id = json!(account);
    no_id.as_object_mut().unwrap().remove("client-id");
    let (status, e) = save(no_id).await;
    assert_eq!(
        (status, e["error"]["param"].as_str()),
        (422, Some("fields.client-id")),
        "{e}"
    );
    let (status, e) = save(with("api-key", "x")).await;
    assert_eq!(
        (status, e["error"]["param"].as_str()),
        (422, Some("fields.api-key")),
        "{e}"
    );

    // A good one: saved, secrets write-only, and PATCH keeps omitted fields.
    let (status, saved) = save(json!(account)).await;
    assert_eq!(status, 201, "{saved}");
    assert_eq!(saved["verification"]["status"], "skipped");
    let id = saved["id"].as_str().unwrap();
    let (status, patched) = gw
        .send(
            gw.request(
                reqwest::Method::PATCH,
                &format!("/v1/credentials/{id}"),
                Some(&m.test_key),
            )
            .json(&json!({"label": "Efí principal", "fields": {"pix-key": account["pix-key"]}})),
        )
        .await;
    assert_eq!(status, 200, "{patched}");
    assert_eq!(patched["label"], "Efí principal");
    assert_eq!(
        patched["secret_fields_set"],
        json!(["certificate", "client-secret"])
    );
    let (_, listed) = gw.get("/v1/credentials", &m.test_key).await;
    assert_eq!(listed["data"].as_array().unwrap().len(), 1);
    let (_, live) = gw.get("/v1/credentials", &m.live_key).await;
    assert_eq!(
        live["data"],
        json!([]),
        "a live key does not see test credentials"
    );
    let (status, charge) = gw
        .post(
            "/v1/charges",
            &m.test_key,
            json!({"amount": 100, "provider": "efi"}),
        )
        .await;
    assert_eq!(
        status, 201,
        "the patched credential still charges: {charge}"
    );
}
both_backends!(credential_checks_on_save);

async fn requests_over_the_rate_get_429(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let m = create_merchant(&db, "Loja A");
    let options = GatewayOptions {
        env: vec![("PIXGW_RATE_LIMIT".into(), "2".into())],
        ..Default::default()
    };
    let gw = Gateway::start(&db, &sim, &["efi"], options).await;
    // 20 requests: at most 4 (the burst) plus what refills at 2 per second pass.
    let requests = (0..20).map(|_| {
        gw.request(reqwest::Method::GET, "/v1/charges", Some(&m.test_key))
            .send()
    });
    let responses = futures::future::join_all(requests).await;
    let limited: Vec<_> = responses
        .into_iter()
        .map(Result::unwrap)
        .filter(|r| r.status() == 429)
        .collect();
    assert!(
        limited.len() >= 10,
        "only {} of 20 were limited",
        limited.len()
    );
    let retry_after: u64 = limited[0].headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=2).contains(&retry_after));
    let body: Value = limited.into_iter().next().unwrap().json().await.unwrap();
    assert_eq!(body["error"]["type"], "rate_limit_error");
    assert_eq!(body["error"]["code"], "rate_limited");
    // Another merchant's key is not affected.
    let other = create_merchant(&db, "Loja B");
    let (status, _) = gw.get("/v1/charges", &other.test_key).await;
    assert_eq!(status, 200);
}
both_backends!(requests_over_the_rate_get_429);
