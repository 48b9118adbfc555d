use super::*;
use crate::context::Environment;
use crate::host::fake::FakeHost;
use crate::http::HttpError;
use crate::types::Payer;

const TOKEN: &str =
    r#"{"access_token":"tok","token_type":"Bearer","expires_in":3600,"scope":"cob.write"}"#;
const TXID: &str = "pgw7f3k2m9q4x8z1c5v6b0n2h4j6";

/// Efí's parameters, as its adapter states them.
const PSP: CentralBankPsp = CentralBankPsp {
    token_body: BodyEncoding::Json,
    webhook_headers: &[("x-skip-mtls-checking", Source::Fixed("true"))],
    ..CentralBankPsp::STANDARD
};

fn ctx() -> Context {
    Context::new(Environment::Test)
        .with_field("client-id", "Client_Id_1")
        .with_field("client-secret", "Client_Secret_1")
        .with_field("pix-key", "pix@example.com")
        .with_endpoint("api", "https://pix-h.psp.example")
        .with_webhook_url("https://gw.example/api/wh/abc?token=t0k")
}

fn request() -> ChargeRequest {
    ChargeRequest {
        reference: TXID.into(),
        amount: 1050,
        description: Some(format!("Pedido 42 {}", "x".repeat(200))),
        payer: Payer {
            email: None,
            name: Some("Fulano de Tal".into()),
            document: Some("12345678909".into()),
        },
        expires_in: 3600,
    }
}

fn cob_gerada() -> String {
    format!(
        r#"{{"calendario":{{"criacao":"2024-05-01T12:00:00.123Z","expiracao":3600}},"txid":"{TXID}","revisao":0,
        "loc":{{"id":789,"location":"pix.example/qr/v2/9d36","tipoCob":"cob"}},"location":"pix.example/qr/v2/9d36",
        "status":"ATIVA","devedor":{{"cpf":"12345678909","nome":"Fulano de Tal"}},"valor":{{"original":"10.50"}},
        "chave":"pix@example.com","pixCopiaECola":"00020101021226830014BR.GOV.BCB.PIX6304ABCD"}}"#
    )
}

fn cob_completa() -> String {
    cob_gerada().replace(r#""status":"ATIVA""#, r#""status":"CONCLUIDA""#).replace(
        r#""chave":"#,
        r#""pix":[{"endToEndId":"E12345678202405011201abcdefghijk","txid":"pgw7f3k2m9q4x8z1c5v6b0n2h4j6","valor":"10.50","horario":"2024-05-01T12:01:02.000Z"}],"chave":"#,
    )
}

#[test]
fn create_sends_the_standard_put() {
    let host = FakeHost::new();
    host.reply(200, TOKEN).reply(201, &cob_gerada());
    let charge = PSP.create(&host, &ctx(), &request()).unwrap();

    let sent = host.sent();
    assert_eq!(sent[0].method, Method::Post);
    assert_eq!(sent[0].url, "https://pix-h.psp.example/oauth/token");
    assert_eq!(sent[0].body, br#"{"grant_type":"client_credentials"}"#);
    assert!(sent[0].mtls);

    let put = &sent[1];
    assert_eq!(put.method, Method::Put);
    assert_eq!(put.url, format!("https://pix-h.psp.example/v2/cob/{TXID}"));
    assert_eq!(
        put.headers,
        vec![
            ("content-type".to_string(), "application/json".to_string()),
            ("authorization".into(), "Bearer tok".into())
        ]
    );
    assert!(put.mtls);
    let body: Value = serde_json::from_slice(&put.body).unwrap();
    assert_eq!(
        body,
        json!({
            "calendario": {"expiracao": 3600},
            "devedor": {"cpf": "12345678909", "nome": "Fulano de Tal"},
            "valor": {"original": "10.50"},
            "chave": "pix@example.com",
            "solicitacaoPagador": format!("Pedido 42 {}", "x".repeat(130)),
        })
    );

    assert_eq!(charge.reference, TXID);
    assert_eq!(charge.psp_id, TXID);
    assert_eq!(charge.status, ChargeStatus::Pending);
    assert_eq!(charge.amount, 1050);
    assert_eq!(
        charge.copy_paste.as_deref(),
        Some("00020101021226830014BR.GOV.BCB.PIX6304ABCD")
    );
    assert_eq!(charge.expires_at.as_deref(), Some("2024-05-01T13:00:00Z"));
    assert!(charge.payment.is_none() && charge.qr_png_base64.is_none());
}

#[test]
fn cob_body_devedor_rules() {
    let mut r = request();
    r.payer.document = Some("12ABC34501DE35".into());
    assert_eq!(
        PSP.cob_body(&ctx(), &r).unwrap()["devedor"],
        json!({"cnpj": "12ABC34501DE35", "nome": "Fulano de Tal"})
    );
    r.payer.name = None;
    r.description = None;
    let body = PSP.cob_body(&ctx(), &r).unwrap();
    assert!(body.get("devedor").is_none() && body.get("solicitacaoPagador").is_none());
    let e = PSP
        .cob_body(&Context::new(Environment::Test), &r)
        .unwrap_err();
    assert!(e.psp_error().unwrap().message.contains("`pix-key`"));
}

#[test]
fn per_psp_parameters_shape_the_requests() {
    // BB-like: another token host, form body with scopes, a prefix, an app key on every call.
    let bb = CentralBankPsp {
        token_endpoint: "oauth",
        scopes: Some(SCOPES),
        path_prefix: "/pix/v2",
        query: &[("gw-dev-app-key", Source::Field("app-key"))],
        headers: &[
            ("x-correlation-id", Source::RequestId),
            ("x-conta", Source::OptionalField("conta")),
        ],
        ..CentralBankPsp::STANDARD
    };
    let ctx = ctx()
        .with_endpoint("oauth", "https://oauth.psp.example")
        .with_field("app-key", "k 1");
    let host = FakeHost::new();
    host.reply(200, TOKEN).reply(200, &cob_gerada());
    bb.query(&host, &ctx, TXID, None).unwrap();
    let sent = host.sent();
    assert_eq!(sent[0].url, "https://oauth.psp.example/oauth/token");
    assert_eq!(sent[0].body, b"grant_type=client_credentials&scope=cob.write+cob.read+pix.read+webhook.write+webhook.read");
    assert_eq!(sent[1].method, Method::Get);
    assert_eq!(
        sent[1].url,
        format!("https://pix-h.psp.example/pix/v2/cob/{TXID}?gw-dev-app-key=k%201")
    );
    assert_eq!(sent[1].header_value("x-correlation-id"), Some("req-test"));
    assert_eq!(sent[1].header_value("x-conta"), None);
    assert!(sent[1].body.is_empty());
}

#[test]
fn query_maps_a_paid_charge() {
    let host = FakeHost::new();
    host.reply(200, TOKEN).reply(200, &cob_completa());
    let charge = PSP.query(&host, &ctx(), TXID, Some(TXID)).unwrap();
    assert_eq!(charge.status, ChargeStatus::Paid);
    let payment = charge.payment.unwrap();
    assert_eq!(
        payment.end_to_end_id.as_deref(),
        Some("E12345678202405011201abcdefghijk")
    );
    assert_eq!(payment.amount, 1050);
    assert_eq!(payment.paid_at, "2024-05-01T12:01:02.000Z");
}

#[test]
fn statuses_and_aliases() {
    assert_eq!(PSP.status("ATIVA"), Ok(ChargeStatus::Pending));
    assert_eq!(PSP.status("CONCLUIDA"), Ok(ChargeStatus::Paid));
    assert_eq!(
        PSP.status("REMOVIDA_PELO_USUARIO_RECEBEDOR"),
        Ok(ChargeStatus::Canceled)
    );
    assert_eq!(PSP.status("REMOVIDA_PELO_PSP"), Ok(ChargeStatus::Canceled));
    assert!(PSP.status("REMOVIDO_PELO_PSP").is_err());
    let inter = CentralBankPsp {
        status_aliases: &[("REMOVIDO_PELO_PSP", "REMOVIDA_PELO_PSP")],
        ..CentralBankPsp::STANDARD
    };
    assert_eq!(
        inter.status("REMOVIDO_PELO_PSP"),
        Ok(ChargeStatus::Canceled)
    );

    // An unknown status after a create: the charge exists, so the error is ambiguous.
    let host = FakeHost::new();
    host.reply(200, TOKEN)
        .reply(201, &cob_gerada().replace("ATIVA", "NOVA"));
    assert_eq!(
        PSP.create(&host, &ctx(), &request()).unwrap_err().kind(),
        "ambiguous"
    );
}

#[test]
fn cancel_sends_the_patch() {
    let host = FakeHost::new();
    host.reply(200, TOKEN).reply(
        200,
        &cob_gerada().replace("ATIVA", "REMOVIDA_PELO_USUARIO_RECEBEDOR"),
    );
    let charge = PSP.cancel(&host, &ctx(), TXID, None).unwrap();
    assert_eq!(charge.status, ChargeStatus::Canceled);
    let patch = &host.sent()[1];
    assert_eq!(patch.method, Method::Patch);
    assert_eq!(
        patch.url,
        format!("https://pix-h.psp.example/v2/cob/{TXID}")
    );
    assert_eq!(
        patch.body,
        br#"{"status":"REMOVIDA_PELO_USUARIO_RECEBEDOR"}"#
    );
}

#[test]
fn register_webhook_sends_the_put_with_extra_headers() {
    let host = FakeHost::new();
    host.reply(200, TOKEN).reply(200, r#"{"webhookUrl":"x"}"#);
    PSP.register_webhook(&host, &ctx()).unwrap();
    let put = &host.sent()[1];
    assert_eq!(put.method, Method::Put);
    assert_eq!(
        put.url,
        "https://pix-h.psp.example/v2/webhook/pix%40example.com"
    );
    assert_eq!(
        put.body,
        br#"{"webhookUrl":"https://gw.example/api/wh/abc?token=t0k"}"#
    );
    assert_eq!(put.header_value("x-skip-mtls-checking"), Some("true"));
    assert_eq!(put.header_value("authorization"), Some("Bearer tok"));
}

#[test]
fn check_credentials_obtains_a_token() {
    let host = FakeHost::new();
    host.reply(200, TOKEN);
    PSP.check_credentials(&host, &ctx()).unwrap();
    host.reply(
        401,
        r#"{"nome":"invalid_client","mensagem":"Credenciais inválidas"}"#,
    );
    let e = PSP.check_credentials(&host, &ctx()).unwrap_err();
    assert_eq!(e.kind(), "bad-credentials");
    assert_eq!(e.psp_error().unwrap().message, "Credenciais inválidas");
    host.fail(HttpError::Certificate("tls: unknown certificate".into()));
    assert_eq!(
        PSP.check_credentials(&host, &ctx()).unwrap_err().kind(),
        "bad-credentials"
    );
}

fn webhook(body: &str) -> WebhookRequest {
    WebhookRequest {
        method: "POST".into(),
        path: "/pix".into(),
        query: String::new(),
        headers: vec![],
        body: body.into(),
    }
}

#[test]
fn webhook_bodies_in_both_shapes() {
    let pix = r#"{"endToEndId":"E1","txid":"T1","valor":"1.00","horario":"2024-05-01T12:00:00Z","infoPagador":"x"},
                 {"endToEndId":"E2","txid":"T2","valor":"2.50","horario":"2024-05-01T12:00:01Z"},
                 {"endToEndId":"E3","valor":"9.00","horario":"2024-05-01T12:00:02Z"}"#;
    for body in [format!(r#"{{"pix":[{pix}]}}"#), format!("[{pix}]")] {
        let events = parse_webhook(&webhook(&body)).unwrap();
        assert_eq!(events.len(), 2, "the Pix without txid is not ours");
        assert_eq!(events[0].reference.as_deref(), Some("T1"));
        assert_eq!(events[0].psp_id.as_deref(), Some("T1"));
        assert_eq!(events[0].status, ChargeStatus::Paid);
        let p = events[1].payment.as_ref().unwrap();
        assert_eq!(
            (p.end_to_end_id.as_deref(), p.amount, p.paid_at.as_str()),
            (Some("E2"), 250, "2024-05-01T12:00:01Z")
        );
    }
    assert!(parse_webhook(&webhook("")).unwrap().is_empty());
    assert!(
        parse_webhook(&webhook(r#"{"evento":"teste_webhook"}"#))
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        parse_webhook(&webhook("not json")).unwrap_err().kind(),
        "invalid-webhook"
    );
    assert_eq!(
        parse_webhook(&webhook(r#"{"pix":{}}"#)).unwrap_err().kind(),
        "invalid-webhook"
    );
    let bad_amount = r#"{"pix":[{"txid":"T","valor":"1,00","horario":"2024-05-01T12:00:00Z"}]}"#;
    assert_eq!(
        parse_webhook(&webhook(bad_amount)).unwrap_err().kind(),
        "invalid-webhook"
    );
}

fn create_error(status: u16, body: &str) -> Error {
    let host = FakeHost::new();
    host.reply(200, TOKEN).reply(status, body);
    PSP.create(&host, &ctx(), &request()).unwrap_err()
}

#[test]
fn error_answers_keep_the_psps_words() {
    let problem = r#"{"type":"https://pix.bcb.gov.br/api/v2/error/CobOperacaoInvalida","title":"Cobrança inválida.","status":400,"detail":"A requisição não respeita o schema.","violacoes":[{"razao":"Valor inválido.","propriedade":"cob.valor.original","valor":"0.00"}]}"#;
    let e = create_error(400, problem);
    assert_eq!(e.kind(), "rejected");
    let p = e.psp_error().unwrap();
    assert_eq!(
        p.message,
        "Cobrança inválida.: A requisição não respeita o schema. (cob.valor.original: Valor inválido.)"
    );
    assert_eq!(
        (p.code.as_deref(), p.http_status),
        (Some("CobOperacaoInvalida"), Some(400))
    );

    let e = create_error(
        400,
        r#"{"nome":"valor_invalido","mensagem":"O valor informado é inválido"}"#,
    );
    let p = e.psp_error().unwrap();
    assert_eq!(
        (p.message.as_str(), p.code.as_deref()),
        ("O valor informado é inválido", Some("valor_invalido"))
    );

    let e = create_error(
        422,
        r#"{"erros":[{"codigo":"4769515","versao":"1","mensagem":"Chave inválida."}]}"#,
    );
    let p = e.psp_error().unwrap();
    assert_eq!(
        (e.kind(), p.message.as_str(), p.code.as_deref()),
        ("rejected", "Chave inválida.", Some("4769515"))
    );

    assert_eq!(
        create_error(
            403,
            r#"{"nome":"acesso_negado","mensagem":"Escopo insuficiente"}"#
        )
        .kind(),
        "bad-credentials"
    );
    assert_eq!(create_error(500, "").kind(), "ambiguous");
    assert_eq!(create_error(503, "").kind(), "unavailable");
    assert_eq!(create_error(429, "").kind(), "unavailable");
    assert_eq!(create_error(202, &cob_gerada()).kind(), "ambiguous");
    assert_eq!(create_error(201, "<html>").kind(), "ambiguous");

    // Reads: not found, and server trouble is merely unavailable.
    let host = FakeHost::new();
    host.reply(200, TOKEN).reply(404, r#"{"nome":"cobranca_nao_encontrada","mensagem":"Nenhuma cobrança encontrada para o txid informado"}"#);
    let e = PSP.query(&host, &ctx(), TXID, None).unwrap_err();
    assert_eq!(e.kind(), "not-found");
    assert_eq!(
        e.psp_error().unwrap().code.as_deref(),
        Some("cobranca_nao_encontrada")
    );
    host.reply(500, "");
    assert_eq!(
        PSP.query(&host, &ctx(), TXID, None).unwrap_err().kind(),
        "unavailable"
    );
}

/// The central bank's vocabulary, read once for the seven banks: the field an answer names, the
/// problem type or error name, the certificate at 401/403, the word `chave`.
#[test]
fn the_central_banks_vocabulary_says_the_reason() {
    let reason = |status, body: &str| create_error(status, body).reason();
    let problem = |property: &str| {
        format!(
            r#"{{"type":"https://pix.bcb.gov.br/api/v2/error/CobOperacaoInvalida","title":"Cobrança inválida.","status":400,"detail":"x","violacoes":[{{"razao":"y","propriedade":"{property}"}}]}}"#
        )
    };
    assert_eq!(reason(400, &problem("cob.chave")), Reason::PixKey);
    assert_eq!(reason(400, &problem("chave")), Reason::PixKey);
    assert_eq!(reason(400, &problem("cob.valor.original")), Reason::Amount);
    assert_eq!(reason(400, &problem("cob.devedor.cpf")), Reason::PayerData);
    assert_eq!(
        reason(400, &problem("cob.calendario.expiracao")),
        Reason::Unspecified
    );
    // Efí's names; BB's codes (numbers at the real BB, so its message's `chave` decides).
    assert_eq!(
        reason(
            400,
            r#"{"nome":"chave_invalida","mensagem":"A chave Pix informada não pertence a esta conta"}"#
        ),
        Reason::PixKey
    );
    assert_eq!(
        reason(
            400,
            r#"{"nome":"valor_invalido","mensagem":"O valor informado é inválido"}"#
        ),
        Reason::Amount
    );
    assert_eq!(
        reason(
            422,
            r#"{"erros":[{"codigo":"4769515","versao":"1","mensagem":"O campo chave é inválido."}]}"#
        ),
        Reason::PixKey
    );
    // Refused access: the certificate when the answer names it, else the credential.
    assert_eq!(
        reason(
            403,
            r#"{"nome":"acesso_negado","mensagem":"O certificado apresentado não pertence à aplicação dona do token"}"#
        ),
        Reason::Certificate
    );
    assert_eq!(
        reason(
            403,
            r#"{"nome":"acesso_negado","mensagem":"Escopo insuficiente"}"#
        ),
        Reason::Credentials
    );
    assert_eq!(
        reason(
            400,
            r#"{"nome":"json_invalido","mensagem":"Campo solicitacaoPagador inválido"}"#
        ),
        Reason::Unspecified
    );
    // Not found by its problem type, also where a create meets a 404.
    assert_eq!(
        reason(
            404,
            r#"{"type":"https://pix.bcb.gov.br/api/v2/error/NaoEncontrado","title":"Não Encontrado","status":404,"detail":"Webhook não encontrado para a chave informada"}"#
        ),
        Reason::NotFound
    );

    // The token endpoint refusing the credential, or its certificate.
    let host = FakeHost::new();
    host.reply(
        401,
        r#"{"error":"invalid_client","error_description":"Invalid or inactive credentials"}"#,
    );
    let e = PSP.check_credentials(&host, &ctx()).unwrap_err();
    assert_eq!(
        (e.kind(), e.reason()),
        ("bad-credentials", Reason::Credentials)
    );
    host.reply(401, r#"{"error":"invalid_client","error_description":"Certificado não corresponde ao client_id"}"#);
    let e = PSP.check_credentials(&host, &ctx()).unwrap_err();
    assert_eq!(
        (e.kind(), e.reason()),
        ("bad-credentials", Reason::Certificate)
    );
}

#[test]
fn lost_answers() {
    let host = FakeHost::new();
    host.reply(200, TOKEN)
        .fail(HttpError::NoAnswer("timed out".into()));
    assert_eq!(
        PSP.create(&host, &ctx(), &request()).unwrap_err().kind(),
        "ambiguous"
    );
    host.fail(HttpError::NoAnswer("timed out".into()));
    assert_eq!(
        PSP.query(&host, &ctx(), TXID, None).unwrap_err().kind(),
        "unavailable"
    );
    // The token step creates nothing, even on a create.
    let host = FakeHost::new();
    host.fail(HttpError::NoAnswer("timed out".into()));
    assert_eq!(
        PSP.create(&host, &ctx(), &request()).unwrap_err().kind(),
        "unavailable"
    );
}

#[test]
fn a_repeated_create_returns_the_existing_charge() {
    let host = FakeHost::new();
    host.reply(200, TOKEN)
        .reply(
            409,
            r#"{"nome":"txid_duplicado","mensagem":"O txid já foi utilizado"}"#,
        )
        .reply(200, &cob_gerada());
    let charge = PSP.create(&host, &ctx(), &request()).unwrap();
    assert_eq!(charge.psp_id, TXID);
    assert_eq!(host.sent()[2].method, Method::Get);

    host.reply(
        409,
        r#"{"nome":"txid_duplicado","mensagem":"O txid já foi utilizado"}"#,
    )
    .reply(404, "");
    let e = PSP.create(&host, &ctx(), &request()).unwrap_err();
    assert_eq!(
        (e.kind(), e.psp_error().unwrap().message.as_str()),
        ("rejected", "O txid já foi utilizado")
    );
}

#[test]
fn a_duplicate_txid_code_is_a_repeated_create_only_when_the_amount_matches() {
    const EFI_LIKE: CentralBankPsp = CentralBankPsp {
        duplicate_txid_codes: &["txid_duplicado"],
        ..PSP
    };
    let duplicate = r#"{"nome":"txid_duplicado","mensagem":"Campo txid informado já foi utilizado em outra cobrança"}"#;
    let host = FakeHost::new();
    host.reply(200, TOKEN)
        .reply(400, duplicate)
        .reply(200, &cob_gerada());
    assert_eq!(
        EFI_LIKE.create(&host, &ctx(), &request()).unwrap().psp_id,
        TXID
    );

    // The same txid holding another amount is not this request's charge.
    let mut other = request();
    other.amount = 999;
    host.reply(400, duplicate).reply(200, &cob_gerada());
    let e = EFI_LIKE.create(&host, &ctx(), &other).unwrap_err();
    assert_eq!(
        (e.kind(), e.psp_error().unwrap().code.as_deref()),
        ("rejected", Some("txid_duplicado"))
    );

    // Without the code listed, a 400 is a plain rejection and nothing is queried.
    host.reply(400, duplicate);
    let sent_before = host.sent().len();
    assert_eq!(
        PSP.create(&host, &ctx(), &request()).unwrap_err().kind(),
        "rejected"
    );
    assert_eq!(host.sent().len(), sent_before + 1);
}

/// `cob_gerada()` without `pixCopiaECola`, as the standard allows.
fn cob_without_code() -> String {
    cob_gerada().replace(
        r#","pixCopiaECola":"00020101021226830014BR.GOV.BCB.PIX6304ABCD""#,
        "",
    )
}

#[test]
fn a_create_answer_without_its_code_is_read_back() {
    let host = FakeHost::new();
    host.reply(200, TOKEN)
        .reply(201, &cob_without_code())
        .reply(200, &cob_gerada());
    let charge = PSP.create(&host, &ctx(), &request()).unwrap();
    assert_eq!(
        charge.copy_paste.as_deref(),
        Some("00020101021226830014BR.GOV.BCB.PIX6304ABCD")
    );
    let get = &host.sent()[2];
    assert_eq!(
        (get.method, get.url.as_str()),
        (
            Method::Get,
            format!("https://pix-h.psp.example/v2/cob/{TXID}").as_str()
        )
    );
}

#[test]
fn without_a_code_anywhere_it_is_built_from_the_location() {
    for read_back in [(200, cob_without_code()), (503, String::new())] {
        let host = FakeHost::new();
        host.reply(200, TOKEN)
            .reply(201, &cob_without_code())
            .reply(read_back.0, &read_back.1);
        let charge = PSP.create(&host, &ctx(), &request()).unwrap();
        let code = charge.copy_paste.unwrap();
        let expected =
            crate::brcode::dynamic("pix.example/qr/v2/9d36", "10.50", "RECEBEDOR PIX", "BRASIL");
        assert_eq!(code, expected, "read back answered {}", read_back.0);
        assert!(code.starts_with("00020101021226"), "{code}");
        assert!(code.contains("2522pix.example/qr/v2/9d36"), "{code}");
        assert!(code.contains("540510.50"), "{code}");
    }
    // Only `loc.location`: the location is read from there.
    let only_loc = cob_without_code().replace(
        r#""location":"pix.example/qr/v2/9d36","status""#,
        r#""status""#,
    );
    assert!(!only_loc.contains(r#""location":"pix.example/qr/v2/9d36","status""#));
    let host = FakeHost::new();
    host.reply(200, TOKEN)
        .reply(201, &only_loc)
        .reply(200, &only_loc);
    let code = PSP
        .create(&host, &ctx(), &request())
        .unwrap()
        .copy_paste
        .unwrap();
    assert!(code.contains("2522pix.example/qr/v2/9d36"), "{code}");
}

#[test]
fn bb_homologations_texto_imagem_qrcode_is_the_code() {
    let bb = cob_gerada().replace("pixCopiaECola", "textoImagemQRcode");
    let host = FakeHost::new();
    host.reply(200, TOKEN).reply(201, &bb);
    let charge = PSP.create(&host, &ctx(), &request()).unwrap();
    assert_eq!(
        charge.copy_paste.as_deref(),
        Some("00020101021226830014BR.GOV.BCB.PIX6304ABCD")
    );
    assert_eq!(host.sent().len(), 2, "nothing read back");
}

#[test]
fn a_single_pix_object_is_a_notification_too() {
    let one = r#"{"endToEndId":"E1","txid":"T1","valor":"1.00","horario":"2024-05-01T12:00:00Z"}"#;
    let events = parse_webhook(&webhook(one)).unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(
        (events[0].reference.as_deref(), events[0].status),
        (Some("T1"), ChargeStatus::Paid)
    );
    // Without a txid it paid nothing of ours; without an endToEndId it is no Pix at all.
    let no_txid = r#"{"endToEndId":"E1","valor":"1.00","horario":"2024-05-01T12:00:00Z"}"#;
    assert!(parse_webhook(&webhook(no_txid)).unwrap().is_empty());
    let bad = r#"{"endToEndId":"E1","txid":"T1","valor":"1,00","horario":"x"}"#;
    assert_eq!(
        parse_webhook(&webhook(bad)).unwrap_err().kind(),
        "invalid-webhook"
    );
}

#[test]
fn a_revision_may_live_under_another_prefix() {
    const SANTANDER_LIKE: CentralBankPsp = CentralBankPsp {
        path_prefix: "/api/v1",
        revise_path_prefix: Some("/api/v2"),
        ..PSP
    };
    let host = FakeHost::new();
    host.reply(200, TOKEN)
        .reply(
            200,
            &cob_gerada().replace("ATIVA", "REMOVIDA_PELO_USUARIO_RECEBEDOR"),
        )
        .reply(200, &cob_gerada());
    SANTANDER_LIKE.cancel(&host, &ctx(), TXID, None).unwrap();
    SANTANDER_LIKE.query(&host, &ctx(), TXID, None).unwrap();
    let sent = host.sent();
    assert_eq!(
        (sent[1].method, sent[1].url.as_str()),
        (
            Method::Patch,
            format!("https://pix-h.psp.example/api/v2/cob/{TXID}").as_str()
        )
    );
    assert_eq!(
        sent[2].url,
        format!("https://pix-h.psp.example/api/v1/cob/{TXID}")
    );
}
