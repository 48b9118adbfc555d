//! Efí's wire protocol as the simulator answers it: OAuth over mTLS, `cob` create/query/cancel,
//! QR image, webhook registration and delivery, and the control API's faults.

mod common;

use std::time::{Duration, Instant};

use common::{Receiver, client, start, txid};
use psp_sim::brcode;
use serde_json::{Value, json};

// ---- OAuth ----

#[tokio::test]
async fn token_is_issued_for_json_body_and_basic_auth() {
    let efi = start().await;
    let res = efi
        .http
        .post(format!("{}/oauth/token", efi.api))
        .basic_auth(&efi.client_id, Some(&efi.client_secret))
        .json(&json!({ "grant_type": "client_credentials" }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["token_type"], "Bearer");
    assert_eq!(body["expires_in"], 3600);
    assert!(body["access_token"].as_str().unwrap().len() >= 32);
    let scope = body["scope"].as_str().unwrap();
    for s in [
        "cob.write",
        "cob.read",
        "pix.read",
        "webhook.write",
        "webhook.read",
    ] {
        assert!(scope.split(' ').any(|x| x == s), "scope {s} in {scope}");
    }
    assert!(efi.client_id.starts_with("Client_Id_"));
    assert!(efi.client_secret.starts_with("Client_Secret_"));
    assert!(uuid::Uuid::parse_str(&efi.pix_key).is_ok());
}

#[tokio::test]
async fn wrong_secret_gets_401_invalid_client() {
    let efi = start().await;
    let res = efi
        .http
        .post(format!("{}/oauth/token", efi.api))
        .basic_auth(&efi.client_id, Some("Client_Secret_wrong"))
        .json(&json!({ "grant_type": "client_credentials" }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    let body: Value = res.json().await.unwrap();
    assert_eq!(
        body,
        json!({ "nome": "invalid_client", "mensagem": "Invalid or inactive credentials" })
    );
}

#[tokio::test]
async fn form_body_and_wrong_grant_type_are_refused() {
    let efi = start().await;
    let res = efi
        .http
        .post(format!("{}/oauth/token", efi.api))
        .basic_auth(&efi.client_id, Some(&efi.client_secret))
        .form(&[("grant_type", "client_credentials")])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["nome"], "invalid_request");

    let res = efi
        .http
        .post(format!("{}/oauth/token", efi.api))
        .basic_auth(&efi.client_id, Some(&efi.client_secret))
        .json(&json!({ "grant_type": "password" }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["nome"], "unsupported_grant_type");
}

#[tokio::test]
async fn expired_and_unknown_tokens_get_401() {
    let efi = start().await;
    let (status, _) = efi
        .ctl_post(
            "/_sim/config",
            json!({ "provider": "efi", "token_ttl_secs": 0 }),
        )
        .await;
    assert_eq!(status, 200);
    let token = efi.token().await;
    let (status, body) = efi.get(&token, &format!("/v2/cob/{}", txid())).await;
    assert_eq!(status, 401);
    assert_eq!(
        body,
        json!({ "nome": "nao_autorizado", "mensagem": "Token de acesso expirado" })
    );

    let (status, body) = efi.get("not-a-token", &format!("/v2/cob/{}", txid())).await;
    assert_eq!(status, 401);
    assert_eq!(body["nome"], "nao_autorizado");

    let res = efi
        .http
        .get(format!("{}/v2/cob/{}", efi.api, txid()))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
}

// ---- mTLS ----

#[tokio::test]
async fn no_client_certificate_fails_the_handshake() {
    let efi = start().await;
    let bare = client(&efi.sim.ca_pem(), None);
    let res = bare
        .post(format!("{}/oauth/token", efi.api))
        .basic_auth(&efi.client_id, Some(&efi.client_secret))
        .json(&json!({ "grant_type": "client_credentials" }))
        .send()
        .await;
    let err = res.expect_err("expected a TLS failure");
    // TLS 1.3: the client learns of the refusal from the server's alert.
    assert!(
        format!("{err:?}").contains("AlertReceived(CertificateRequired)"),
        "{err:?}"
    );
    let requests = efi.ctl_get("/_sim/requests?provider=efi").await;
    assert_eq!(requests, json!([]));
}

#[tokio::test]
async fn certificate_from_another_ca_fails_the_handshake() {
    let efi = start().await;
    let (status, body) = efi
        .ctl_post(
            "/_sim/certificates",
            json!({ "provider": "efi", "cn": efi.client_id, "foreign_ca": true }),
        )
        .await;
    assert_eq!(status, 200);
    let foreign = client(
        &efi.sim.ca_pem(),
        Some(body["certificate"].as_str().unwrap()),
    );
    let res = foreign
        .post(format!("{}/oauth/token", efi.api))
        .basic_auth(&efi.client_id, Some(&efi.client_secret))
        .json(&json!({ "grant_type": "client_credentials" }))
        .send()
        .await;
    let err = res.expect_err("expected a TLS failure");
    assert!(
        format!("{err:?}").contains("AlertReceived(UnknownCA)"),
        "{err:?}"
    );
    assert_eq!(efi.ctl_get("/_sim/requests?provider=efi").await, json!([]));
}

#[tokio::test]
async fn certificate_of_another_application_is_refused() {
    let efi = start().await;
    let (_, body) = efi
        .ctl_post(
            "/_sim/certificates",
            json!({ "provider": "efi", "cn": "Client_Id_someone_else" }),
        )
        .await;
    let other = client(
        &efi.sim.ca_pem(),
        Some(body["certificate"].as_str().unwrap()),
    );
    let res = other
        .post(format!("{}/oauth/token", efi.api))
        .basic_auth(&efi.client_id, Some(&efi.client_secret))
        .json(&json!({ "grant_type": "client_credentials" }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["nome"], "invalid_client");

    // A good token used over a connection with another application's certificate.
    let token = efi.token().await;
    let res = other
        .get(format!("{}/v2/cob/{}", efi.api, txid()))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 403);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["nome"], "acesso_negado");
}

// ---- cob ----

#[tokio::test]
async fn create_answers_cob_gerada_with_a_valid_br_code() {
    let efi = start().await;
    let token = efi.token().await;
    let txid = txid();
    let (status, cob) = efi.put_cob(&token, &txid, &efi.cob_body("10.00")).await;
    assert_eq!(status, 201, "{cob}");
    assert_eq!(cob["txid"], txid);
    assert_eq!(cob["revisao"], 0);
    assert_eq!(cob["status"], "ATIVA");
    assert_eq!(cob["calendario"]["expiracao"], 3600);
    assert!(
        cob["calendario"]["criacao"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    assert_eq!(cob["valor"], json!({ "original": "10.00" }));
    assert_eq!(cob["chave"], efi.pix_key);
    assert_eq!(
        cob["devedor"],
        json!({ "cpf": "12345678909", "nome": "Fulano de Tal" })
    );
    assert_eq!(cob["solicitacaoPagador"], "Pedido 42");
    assert_eq!(cob["loc"]["tipoCob"], "cob");
    assert_eq!(cob["loc"]["location"], cob["location"]);
    assert!(cob.get("pix").is_none());

    let code = cob["pixCopiaECola"].as_str().unwrap();
    assert!(code.len() <= 512);
    assert!(brcode::crc_is_valid(code), "{code}");
    let fields = brcode::parse_fields(code).unwrap();
    let field = |id: &str| {
        fields
            .iter()
            .find(|(k, _)| k == id)
            .map(|(_, v)| v.as_str())
            .unwrap()
    };
    assert_eq!(field("00"), "01");
    assert_eq!(field("01"), "12");
    let account = brcode::parse_fields(field("26")).unwrap();
    assert_eq!(account[0], ("00".to_string(), "br.gov.bcb.pix".to_string()));
    assert_eq!(account[1].0, "25");
    assert_eq!(account[1].1, cob["location"].as_str().unwrap());
    assert!(!account[1].1.contains("://"));
    assert_eq!(field("53"), "986");
    assert_eq!(field("54"), "10.00");
    assert_eq!(field("58"), "BR");
    assert_eq!(field("62"), "0503***");

    // Efí's QR image of the location.
    let (status, qr) = efi
        .get(&token, &format!("/v2/loc/{}/qrcode", cob["loc"]["id"]))
        .await;
    assert_eq!(status, 200);
    assert_eq!(qr["qrcode"], code);
    let image = qr["imagemQrcode"].as_str().unwrap();
    let b64 = image.strip_prefix("data:image/png;base64,").unwrap();
    use base64::Engine;
    let png = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");

    let (status, body) = efi.get(&token, "/v2/loc/999999/qrcode").await;
    assert_eq!(status, 404);
    assert_eq!(body["nome"], "location_nao_encontrada");
}

#[tokio::test]
async fn invalid_requests_get_400_with_efi_bodies() {
    let efi = start().await;
    let token = efi.token().await;
    let good = efi.cob_body("10.00");

    let (status, body) = efi.put_cob(&token, "short", &good).await;
    assert_eq!(
        (status, body["nome"].as_str()),
        (400, Some("txid_invalido"))
    );
    let (status, body) = efi
        .put_cob(&token, &format!("{}-x", &txid()[..28]), &good)
        .await;
    assert_eq!(
        (status, body["nome"].as_str()),
        (400, Some("txid_invalido"))
    );

    for bad in ["10", "10.0", "0.00", "-1.00", "12345678901.00"] {
        let (status, body) = efi.put_cob(&token, &txid(), &efi.cob_body(bad)).await;
        assert_eq!(status, 400, "valor {bad}");
        assert_eq!(body["nome"], "valor_invalido", "valor {bad}");
        assert!(
            body["mensagem"]
                .as_str()
                .unwrap()
                .contains("valor.original")
        );
    }
    let mut numeric = good.clone();
    numeric["valor"]["original"] = json!(10.0);
    let (status, body) = efi.put_cob(&token, &txid(), &numeric).await;
    assert_eq!(
        (status, body["nome"].as_str()),
        (400, Some("valor_invalido"))
    );

    let mut wrong_key = good.clone();
    wrong_key["chave"] = json!(uuid::Uuid::new_v4().to_string());
    let (status, body) = efi.put_cob(&token, &txid(), &wrong_key).await;
    assert_eq!(status, 400);
    assert_eq!(
        body,
        json!({ "nome": "chave_invalida", "mensagem": "A chave Pix informada não pertence a esta conta" })
    );

    let mut unknown = good.clone();
    unknown["foo"] = json!(1);
    let (status, body) = efi.put_cob(&token, &txid(), &unknown).await;
    assert_eq!(
        (status, body["nome"].as_str()),
        (400, Some("json_invalido"))
    );

    let mut expiry = good.clone();
    expiry["calendario"]["expiracao"] = json!(0);
    let (status, body) = efi.put_cob(&token, &txid(), &expiry).await;
    assert_eq!(
        (status, body["nome"].as_str()),
        (400, Some("calendario_invalido"))
    );

    let mut no_name = good.clone();
    no_name["devedor"] = json!({ "cpf": "12345678909" });
    let (status, body) = efi.put_cob(&token, &txid(), &no_name).await;
    assert_eq!(
        (status, body["nome"].as_str()),
        (400, Some("devedor_invalido"))
    );

    let mut bad_cpf = good.clone();
    bad_cpf["devedor"]["cpf"] = json!("12345678900");
    let (status, body) = efi.put_cob(&token, &txid(), &bad_cpf).await;
    assert_eq!(
        (status, body["nome"].as_str()),
        (400, Some("devedor_invalido"))
    );

    let mut long = good.clone();
    long["solicitacaoPagador"] = json!("x".repeat(141));
    let (status, body) = efi.put_cob(&token, &txid(), &long).await;
    assert_eq!(
        (status, body["nome"].as_str()),
        (400, Some("json_invalido"))
    );

    assert_eq!(efi.ctl_get("/_sim/charges?provider=efi").await, json!([]));
}

#[tokio::test]
async fn repeated_txid_does_not_create_a_second_charge() {
    let efi = start().await;
    let token = efi.token().await;
    let txid = efi.create(&token).await;
    let (status, body) = efi.put_cob(&token, &txid, &efi.cob_body("10.00")).await;
    assert_eq!(status, 400);
    assert_eq!(body["nome"], "txid_duplicado");
    let charges = efi.ctl_get("/_sim/charges?provider=efi").await;
    assert_eq!(charges.as_array().unwrap().len(), 1);
    assert_eq!(charges[0]["reference"], txid);
    assert_eq!(charges[0]["amount"], 1000);
}

#[tokio::test]
async fn query_pay_and_cancel() {
    let efi = start().await;
    let token = efi.token().await;

    let (status, body) = efi.get(&token, &format!("/v2/cob/{}", txid())).await;
    assert_eq!(status, 404);
    assert_eq!(body["nome"], "cobranca_nao_encontrada");

    let paid = efi.create(&token).await;
    let (status, cob) = efi.get(&token, &format!("/v2/cob/{paid}")).await;
    assert_eq!((status, cob["status"].as_str()), (200, Some("ATIVA")));

    let (status, res) = efi
        .ctl_post(
            "/_sim/pay",
            json!({ "provider": "efi", "reference": paid, "info_pagador": "obrigado" }),
        )
        .await;
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["charge"]["status"], "CONCLUIDA");
    assert_eq!(res["webhook"]["outcome"], "not_registered");

    let (_, cob) = efi.get(&token, &format!("/v2/cob/{paid}")).await;
    assert_eq!(cob["status"], "CONCLUIDA");
    let pix = &cob["pix"][0];
    let e2e = pix["endToEndId"].as_str().unwrap();
    assert_eq!(e2e.len(), 32);
    assert!(e2e.starts_with("E09089356"));
    assert_eq!(pix["txid"], paid);
    assert_eq!(pix["valor"], "10.00");
    assert_eq!(pix["infoPagador"], "obrigado");
    assert!(
        time::OffsetDateTime::parse(
            pix["horario"].as_str().unwrap(),
            &time::format_description::well_known::Rfc3339
        )
        .is_ok()
    );

    // A paid charge cannot be removed, nor paid twice.
    let res = efi
        .http
        .patch(format!("{}/v2/cob/{paid}", efi.api))
        .bearer_auth(&token)
        .json(&json!({ "status": "REMOVIDA_PELO_USUARIO_RECEBEDOR" }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    assert_eq!(
        res.json::<Value>().await.unwrap()["nome"],
        "cobranca_nao_ativa"
    );
    let (status, _) = efi
        .ctl_post("/_sim/pay", json!({ "provider": "efi", "psp_id": paid }))
        .await;
    assert_eq!(status, 409);

    let canceled = efi.create(&token).await;
    let res = efi
        .http
        .patch(format!("{}/v2/cob/{canceled}", efi.api))
        .bearer_auth(&token)
        .json(&json!({ "status": "REMOVIDA_PELO_USUARIO_RECEBEDOR" }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let cob: Value = res.json().await.unwrap();
    assert_eq!(cob["status"], "REMOVIDA_PELO_USUARIO_RECEBEDOR");
    assert_eq!(cob["revisao"], 1);
    let (status, _) = efi
        .ctl_post(
            "/_sim/pay",
            json!({ "provider": "efi", "reference": canceled }),
        )
        .await;
    assert_eq!(status, 409);
}

#[tokio::test]
async fn pay_with_a_different_amount() {
    let efi = start().await;
    let token = efi.token().await;
    let txid = efi.create(&token).await;
    let (_, res) = efi
        .ctl_post(
            "/_sim/pay",
            json!({ "provider": "efi", "reference": txid, "amount": 990 }),
        )
        .await;
    assert_eq!(res["charge"]["psp"]["pix"][0]["valor"], "9.90");
    assert_eq!(res["charge"]["psp"]["valor"]["original"], "10.00");
}

#[tokio::test]
async fn expired_charge_stays_ativa_but_cannot_be_paid() {
    let efi = start().await;
    let token = efi.token().await;
    let txid = efi.create(&token).await;
    let (status, res) = efi
        .ctl_post(
            "/_sim/expire",
            json!({ "provider": "efi", "reference": txid }),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(res["charge"]["expired"], true);
    let (_, cob) = efi.get(&token, &format!("/v2/cob/{txid}")).await;
    assert_eq!(cob["status"], "ATIVA");
    let criacao = time::OffsetDateTime::parse(
        cob["calendario"]["criacao"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    let expires =
        criacao + time::Duration::seconds(cob["calendario"]["expiracao"].as_i64().unwrap());
    assert!(expires < time::OffsetDateTime::now_utc());
    let (status, body) = efi
        .ctl_post("/_sim/pay", json!({ "provider": "efi", "reference": txid }))
        .await;
    assert_eq!(status, 409, "{body}");
}

// ---- webhooks ----

#[tokio::test]
async fn webhook_is_registered_and_pay_posts_to_url_plus_pix() {
    let efi = start().await;
    let receiver = Receiver::start(200).await;
    let token = efi.token().await;

    let url = format!("http://{}/api/wh/abc", receiver.addr);
    efi.register_webhook(&token, &url).await;
    let (status, body) = efi
        .get(&token, &format!("/v2/webhook/{}", efi.pix_key))
        .await;
    assert_eq!(status, 200);
    assert_eq!(body["webhookUrl"], url);
    let registered = efi.ctl_get("/_sim/webhooks?provider=efi").await;
    assert_eq!(registered[0]["webhookUrl"], url);
    assert_eq!(registered[0]["headers"]["x-skip-mtls-checking"], "true");

    let txid = efi.create(&token).await;
    let (status, res) = efi
        .ctl_post("/_sim/pay", json!({ "provider": "efi", "reference": txid }))
        .await;
    assert_eq!(status, 200);
    assert_eq!(res["webhook"]["outcome"], "delivered");
    assert_eq!(res["webhook"]["status"], 200);

    let got = receiver.received();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].method, "POST");
    assert_eq!(got[0].target, "/api/wh/abc/pix");
    assert_eq!(got[0].content_type.as_deref(), Some("application/json"));
    let pix = &got[0].body["pix"][0];
    assert_eq!(pix["txid"], txid);
    assert_eq!(pix["valor"], "10.00");
    assert_eq!(
        pix["endToEndId"],
        res["charge"]["psp"]["pix"][0]["endToEndId"]
    );

    // With a query string, "/pix" lands at the end of the query, as Efí does.
    let url = format!("http://{}/api/wh/abc?token=s3cr3t", receiver.addr);
    efi.register_webhook(&token, &url).await;
    let txid = efi.create(&token).await;
    efi.ctl_post("/_sim/pay", json!({ "provider": "efi", "reference": txid }))
        .await;
    let got = receiver.received();
    assert_eq!(got.len(), 2);
    assert_eq!(got[1].target, "/api/wh/abc?token=s3cr3t/pix");

    let deliveries = efi.ctl_get("/_sim/deliveries?provider=efi").await;
    assert_eq!(deliveries.as_array().unwrap().len(), 2);
    assert_eq!(deliveries[1]["url"], format!("{url}/pix"));
}

#[tokio::test]
async fn webhook_for_another_key_is_refused() {
    let efi = start().await;
    let token = efi.token().await;
    let res = efi
        .http
        .put(format!("{}/v2/webhook/{}", efi.api, uuid::Uuid::new_v4()))
        .bearer_auth(&token)
        .json(&json!({ "webhookUrl": "https://example.com/wh" }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    assert_eq!(res.json::<Value>().await.unwrap()["nome"], "chave_invalida");
}

#[tokio::test]
async fn failing_receiver_is_retried_a_couple_of_times() {
    let efi = start().await;
    let receiver = Receiver::start(500).await;
    let token = efi.token().await;
    efi.register_webhook(&token, &format!("http://{}/wh", receiver.addr))
        .await;
    let txid = efi.create(&token).await;
    let (_, res) = efi
        .ctl_post("/_sim/pay", json!({ "provider": "efi", "reference": txid }))
        .await;
    assert_eq!(res["webhook"]["outcome"], "failed");
    assert_eq!(res["webhook"]["status"], 500);
    assert_eq!(receiver.received().len(), 3);
    // The payment itself happened.
    assert_eq!(res["charge"]["status"], "CONCLUIDA");
}

// ---- faults ----

#[tokio::test]
async fn fail_next_answers_the_forced_error_then_recovers() {
    let efi = start().await;
    let (status, _) = efi
        .ctl_post(
            "/_sim/faults",
            json!({ "provider": "efi", "fail_next": { "count": 1, "status": 503 } }),
        )
        .await;
    assert_eq!(status, 200);
    let res = efi
        .http
        .post(format!("{}/oauth/token", efi.api))
        .basic_auth(&efi.client_id, Some(&efi.client_secret))
        .json(&json!({ "grant_type": "client_credentials" }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 503);
    assert_eq!(
        res.json::<Value>().await.unwrap()["nome"],
        "servico_indisponivel"
    );
    let token = efi.token().await;

    efi.ctl_post(
        "/_sim/faults",
        json!({ "provider": "efi", "fail_next": { "count": 1, "status": 500, "body": "boom", "path_contains": "/v2/cob" } }),
    )
    .await;
    let res = efi
        .http
        .put(format!("{}/v2/cob/{}", efi.api, txid()))
        .bearer_auth(&token)
        .json(&efi.cob_body("1.00"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 500);
    assert_eq!(res.text().await.unwrap(), "boom");
    assert_eq!(efi.ctl_get("/_sim/charges?provider=efi").await, json!([]));
    efi.create(&token).await;
}

#[tokio::test]
async fn dropped_reply_after_create_leaves_the_charge() {
    let efi = start().await;
    let token = efi.token().await;
    efi.ctl_post(
        "/_sim/faults",
        json!({ "provider": "efi", "drop_reply_after_create": 1 }),
    )
    .await;
    let txid = txid();
    let res = efi
        .http
        .put(format!("{}/v2/cob/{txid}", efi.api))
        .bearer_auth(&token)
        .json(&efi.cob_body("10.00"))
        .send()
        .await;
    let err = res.expect_err("expected a connection error");
    assert!(err.is_request() && !err.is_timeout(), "{err:?}");

    let charges = efi.ctl_get("/_sim/charges?provider=efi").await;
    assert_eq!(charges.as_array().unwrap().len(), 1);
    assert_eq!(charges[0]["reference"], txid);
    let requests = efi.ctl_get("/_sim/requests?provider=efi").await;
    let create = requests
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["method"] == "PUT")
        .unwrap();
    assert_eq!(create["outcome"], "dropped_after_create");
    assert_eq!(create["status"], Value::Null);

    // The fault is used up: the query answers, and a retried PUT creates nothing.
    let (status, cob) = efi.get(&token, &format!("/v2/cob/{txid}")).await;
    assert_eq!((status, cob["status"].as_str()), (200, Some("ATIVA")));
    let (status, body) = efi.put_cob(&token, &txid, &efi.cob_body("10.00")).await;
    assert_eq!(
        (status, body["nome"].as_str()),
        (400, Some("txid_duplicado"))
    );
}

#[tokio::test]
async fn refuse_connections_closes_the_port_until_cleared() {
    let efi = start().await;
    let token = efi.token().await;
    let addr = efi
        .api
        .trim_start_matches("https://")
        .replace("localhost", "127.0.0.1");

    let (status, faults) = efi
        .ctl_post(
            "/_sim/faults",
            json!({ "provider": "efi", "refuse_connections": true }),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(faults["refuse_connections"], true);
    let err = tokio::net::TcpStream::connect(&addr).await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused);
    // The pooled connection was closed too.
    let res = efi
        .http
        .get(format!("{}/v2/cob/{}", efi.api, txid()))
        .bearer_auth(&token)
        .send()
        .await;
    assert!(res.is_err());

    assert_eq!(efi.ctl_delete("/_sim/faults?provider=efi").await, 200);
    tokio::net::TcpStream::connect(&addr).await.unwrap();
    efi.create(&token).await;
}

#[tokio::test]
async fn duplicate_and_skipped_webhooks() {
    let efi = start().await;
    let receiver = Receiver::start(200).await;
    let token = efi.token().await;
    efi.register_webhook(&token, &format!("http://{}/wh", receiver.addr))
        .await;

    efi.ctl_post(
        "/_sim/faults",
        json!({ "provider": "efi", "duplicate_webhooks": true }),
    )
    .await;
    let first = efi.create(&token).await;
    let (_, res) = efi
        .ctl_post(
            "/_sim/pay",
            json!({ "provider": "efi", "reference": first }),
        )
        .await;
    assert_eq!(res["webhook"]["outcome"], "delivered");
    let got = receiver.received();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].body, got[1].body);
    assert_eq!(got[0].body["pix"][0]["txid"], first);

    efi.ctl_post(
        "/_sim/faults",
        json!({ "provider": "efi", "duplicate_webhooks": false, "skip_webhooks": true }),
    )
    .await;
    let second = efi.create(&token).await;
    let (_, res) = efi
        .ctl_post(
            "/_sim/pay",
            json!({ "provider": "efi", "reference": second }),
        )
        .await;
    assert_eq!(res["webhook"]["outcome"], "skipped");
    assert_eq!(res["charge"]["status"], "CONCLUIDA");
    assert_eq!(receiver.received().len(), 2);
}

#[tokio::test]
async fn latency_delays_answers() {
    let efi = start().await;
    efi.ctl_post(
        "/_sim/faults",
        json!({ "provider": "efi", "latency_ms": 300 }),
    )
    .await;
    let started = Instant::now();
    efi.token().await;
    assert!(started.elapsed() >= Duration::from_millis(300));
}

#[tokio::test]
async fn reset_forgets_everything() {
    let efi = start().await;
    let receiver = Receiver::start(200).await;
    let token = efi.token().await;
    efi.register_webhook(&token, &format!("http://{}/wh", receiver.addr))
        .await;
    efi.create(&token).await;
    efi.ctl_post(
        "/_sim/faults",
        json!({ "provider": "efi", "latency_ms": 10 }),
    )
    .await;
    let (status, _) = efi.ctl_post("/_sim/reset", json!({})).await;
    assert_eq!(status, 200);
    assert_eq!(efi.ctl_get("/_sim/charges?provider=efi").await, json!([]));
    assert_eq!(efi.ctl_get("/_sim/webhooks?provider=efi").await, json!([]));
    assert_eq!(efi.ctl_get("/_sim/requests?provider=efi").await, json!([]));
    assert_eq!(
        efi.ctl_get("/_sim/faults?provider=efi").await["latency_ms"],
        0
    );
    // Tokens are forgotten too.
    let (status, _) = efi.get(&token, &format!("/v2/cob/{}", txid())).await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn info_matches_the_library_view() {
    let efi = start().await;
    let info = efi.ctl_get("/_sim/info").await;
    assert_eq!(info, serde_json::to_value(efi.sim.info()).unwrap());
    assert_eq!(info["control_url"], efi.sim.control_url());
    assert!(efi.api.starts_with("https://localhost:"));
    let cert = &efi.certificate;
    let cert_at = cert.find("-----BEGIN CERTIFICATE-----").unwrap();
    let key_at = cert.find("-----BEGIN PRIVATE KEY-----").unwrap();
    assert!(cert_at < key_at);
    let unknown = efi
        .ctl
        .get(format!(
            "{}/_sim/charges?provider=nope",
            efi.sim.control_url()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
}
