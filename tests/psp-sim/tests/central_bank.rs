//! The six bank PSPs on the central-bank Pix API (inter, sicredi, bb, itau, santander,
//! bradesco) as the simulator answers them, driven over real mTLS from one table of their
//! differences: token host, path, body and client auth; path prefix; extra key; create status;
//! status spelling; error body; notification shape; and Itaú's sandbox, another kind of host.

mod common;

use common::{Receiver, client, eventually, txid};
use psp_sim::{Sim, SimOptions};
use serde_json::{Value, json};
use std::collections::BTreeMap;

#[derive(Clone, Copy, PartialEq)]
enum Auth {
    Basic,
    Body,
}

/// One PSP's facts, as its adapter's README states them (production's, where a sandbox
/// differs).
struct Case {
    id: &'static str,
    /// Endpoint name of the token listener.
    token_endpoint: &'static str,
    token_path: &'static str,
    auth: Auth,
    grant_type_in_query: bool,
    scope: bool,
    prefix: &'static str,
    /// (query parameter or header, credential field holding its value)
    app_key_query: Option<(&'static str, &'static str)>,
    api_key_header: Option<(&'static str, &'static str)>,
    create_status: u16,
    removed: &'static str,
    bb_errors: bool,
    bare_array: bool,
    post_cob: bool,
    /// Prefix of `PATCH /cob/{txid}` when not `prefix` (Santander).
    revise_prefix: Option<&'static str>,
    /// Homologation as a portal sandbox: (token path on the API host, prefix), no mTLS and no
    /// API key (Itaú).
    sandbox: Option<(&'static str, &'static str)>,
}

const STD: Case = Case {
    id: "",
    token_endpoint: "api",
    token_path: "/oauth/token",
    auth: Auth::Basic,
    grant_type_in_query: false,
    scope: false,
    prefix: "/v2",
    app_key_query: None,
    api_key_header: None,
    create_status: 201,
    removed: "REMOVIDA_PELO_USUARIO_RECEBEDOR",
    bb_errors: false,
    bare_array: false,
    post_cob: true,
    revise_prefix: None,
    sandbox: None,
};

const CASES: &[Case] = &[
    Case {
        id: "inter",
        token_path: "/oauth/v2/token",
        auth: Auth::Body,
        scope: true,
        prefix: "/pix/v2",
        removed: "REMOVIDO_PELO_USUARIO_RECEBEDOR",
        bare_array: true,
        ..STD
    },
    Case {
        id: "sicredi",
        scope: true,
        prefix: "/api/v2",
        create_status: 200,
        ..STD
    },
    Case {
        id: "bb",
        token_endpoint: "oauth",
        scope: true,
        prefix: "/pix/v2",
        app_key_query: Some(("gw-dev-app-key", "app-key")),
        bb_errors: true,
        ..STD
    },
    Case {
        id: "itau",
        token_endpoint: "oauth",
        token_path: "/api/oauth/token",
        auth: Auth::Body,
        prefix: "/regulatorio-pix/v2",
        api_key_header: Some(("x-itau-apikey", "client-id")),
        sandbox: Some((
            "/api/oauth/jwt",
            "/itau-ep9-api-regulatorio-pix-v2-externo/v2",
        )),
        ..STD
    },
    Case {
        id: "santander",
        auth: Auth::Body,
        grant_type_in_query: true,
        prefix: "/api/v1",
        create_status: 200,
        post_cob: false,
        revise_prefix: Some("/api/v2"),
        ..STD
    },
    Case {
        id: "bradesco",
        create_status: 200,
        ..STD
    },
];

struct Psp<'a> {
    case: &'a Case,
    /// This environment's facts (the sandbox's at Itaú's homologation hosts).
    token_endpoint: &'static str,
    token_path: &'static str,
    prefix: &'static str,
    api_key_header: Option<(&'static str, &'static str)>,
    /// Whether these hosts demand the client certificate.
    mtls: bool,
    /// The hosts talked to: homologation's, or production's.
    endpoints: BTreeMap<String, String>,
    /// The account presented (its certificate is `http`'s).
    credentials: BTreeMap<String, String>,
    http: reqwest::Client,
}

impl<'a> Psp<'a> {
    fn new(sim: &Sim, case: &'a Case, production_hosts: bool, production_account: bool) -> Self {
        let info = sim.provider(case.id).unwrap();
        let endpoints = match production_hosts {
            true => info.live_endpoints.clone(),
            false => info.endpoints.clone(),
        };
        let credentials = match production_account {
            true => info.live_credentials.clone().unwrap(),
            false => info.credentials.clone(),
        };
        // A sandbox account has no certificate.
        let identity = credentials
            .get("certificate")
            .map(|c| format!("{c}{}", credentials["private-key"]));
        let http = client(&sim.ca_pem(), identity.as_deref());
        let sandbox = case.sandbox.filter(|_| !production_hosts);
        Psp {
            case,
            token_endpoint: sandbox.map_or(case.token_endpoint, |_| "api"),
            token_path: sandbox.map_or(case.token_path, |(path, _)| path),
            prefix: sandbox.map_or(case.prefix, |(_, prefix)| prefix),
            api_key_header: case.api_key_header.filter(|_| sandbox.is_none()),
            mtls: sandbox.is_none(),
            endpoints,
            credentials,
            http,
        }
    }

    fn cred(&self, field: &str) -> &str {
        &self.credentials[field]
    }

    fn token_url(&self) -> String {
        let query = if self.case.grant_type_in_query {
            "?grant_type=client_credentials"
        } else {
            ""
        };
        format!(
            "{}{}{query}",
            self.endpoints[self.token_endpoint], self.token_path
        )
    }

    /// The token request exactly as the PSP wants it, with `secret`.
    fn token_request(&self, http: &reqwest::Client, secret: &str) -> reqwest::RequestBuilder {
        let mut form: Vec<(&str, &str)> = Vec::new();
        if !self.case.grant_type_in_query {
            form.push(("grant_type", "client_credentials"));
        }
        if self.case.scope {
            form.push((
                "scope",
                "cob.write cob.read pix.read webhook.write webhook.read",
            ));
        }
        let request = http.post(self.token_url());
        match self.case.auth {
            Auth::Basic => request
                .basic_auth(self.cred("client-id"), Some(secret))
                .form(&form),
            Auth::Body => {
                form.push(("client_id", self.cred("client-id")));
                form.push(("client_secret", secret));
                request.form(&form)
            }
        }
    }

    async fn token(&self) -> String {
        let res = self
            .token_request(&self.http, self.cred("client-secret"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{}", self.case.id);
        let body: Value = res.json().await.unwrap();
        body["access_token"].as_str().unwrap().to_string()
    }

    /// An API request under the prefix, with the token and the PSP's extra key.
    fn api(&self, method: reqwest::Method, path: &str, token: &str) -> reqwest::RequestBuilder {
        let mut url = format!("{}{}{path}", self.endpoints["api"], self.prefix);
        if let Some((param, field)) = self.case.app_key_query {
            url = format!("{url}?{param}={}", self.cred(field));
        }
        let mut request = self.http.request(method, url).bearer_auth(token);
        if let Some((header, field)) = self.case.api_key_header {
            // Sent in both environments, as the adapter does; the sandbox does not check it.
            request = request
                .header(header, self.cred(field))
                .header("x-correlationID", "c-1");
        }
        request
    }

    /// `PATCH /cob/{txid}` under the PSP's revision prefix.
    fn revise(&self, txid: &str, token: &str) -> reqwest::RequestBuilder {
        let prefix = self.case.revise_prefix.unwrap_or(self.prefix);
        let mut request = self
            .http
            .patch(format!("{}{prefix}/cob/{txid}", self.endpoints["api"]))
            .bearer_auth(token);
        if let Some((param, field)) = self.case.app_key_query {
            request = request.query(&[(param, self.cred(field))]);
        }
        if let Some((header, field)) = self.case.api_key_header {
            request = request.header(header, self.cred(field));
        }
        request
    }

    fn cob(&self, valor: &str) -> Value {
        json!({"calendario": {"expiracao": 3600}, "valor": {"original": valor}, "chave": self.cred("pix-key")})
    }

    /// The PSP's error message, from its own body shape.
    fn message(&self, body: &Value) -> String {
        let m = if self.case.bb_errors {
            &body["erros"][0]["mensagem"]
        } else {
            &body["detail"]
        };
        m.as_str()
            .unwrap_or_else(|| panic!("{}: error shape {body}", self.case.id))
            .to_string()
    }
}

async fn each_psp(mut check: impl AsyncFnMut(&Sim, &Psp<'_>)) {
    let sim = Sim::start(SimOptions::default()).await.unwrap();
    for case in CASES {
        check(&sim, &Psp::new(&sim, case, false, false)).await;
    }
}

/// Each PSP in each of its two environments, with that environment's own account.
async fn each_environment(mut check: impl AsyncFnMut(&Sim, &Psp<'_>)) {
    let sim = Sim::start(SimOptions::default()).await.unwrap();
    for case in CASES {
        for production in [false, true] {
            check(&sim, &Psp::new(&sim, case, production, production)).await;
        }
    }
}

#[tokio::test]
async fn accounts_have_a_separate_certificate_and_key() {
    each_environment(async |_, psp| {
        let mut fields: Vec<&str> = psp.credentials.keys().map(String::as_str).collect();
        fields.sort();
        let mut expected = vec!["client-id", "client-secret", "pix-key"];
        if psp.mtls {
            expected.extend(["certificate", "private-key"]);
            expected.sort();
        }
        if psp.case.id == "bb" {
            expected.insert(0, "app-key");
        }
        assert_eq!(fields, expected, "{}", psp.case.id);
        if !psp.mtls {
            // Itaú's sandbox: no certificate, one host for token and API.
            assert_eq!(psp.endpoints.keys().collect::<Vec<_>>(), ["api"]);
            return;
        }
        let cert = psp.cred("certificate");
        assert!(
            cert.starts_with("-----BEGIN CERTIFICATE-----") && !cert.contains("PRIVATE KEY"),
            "{}",
            psp.case.id
        );
        assert!(
            psp.cred("private-key")
                .starts_with("-----BEGIN PRIVATE KEY-----"),
            "{}",
            psp.case.id
        );
        let mut endpoints: Vec<&str> = psp.endpoints.keys().map(String::as_str).collect();
        endpoints.sort();
        let expected = if psp.token_endpoint == "oauth" {
            vec!["api", "oauth"]
        } else {
            vec!["api"]
        };
        assert_eq!(endpoints, expected, "{}", psp.case.id);
    })
    .await;
}

#[tokio::test]
async fn the_token_request_is_checked_exactly() {
    each_environment(async |_, psp| {
        let id = psp.case.id;
        let res = psp.token_request(&psp.http, psp.cred("client-secret")).send().await.unwrap();
        assert_eq!(res.status(), 200, "{id}");
        let body: Value = res.json().await.unwrap();
        assert_eq!((body["token_type"].as_str(), body["expires_in"].as_u64()), (Some("Bearer"), Some(3600)), "{id}");

        // Wrong secret: OAuth 401 invalid_client with the PSP's words.
        let res = psp.token_request(&psp.http, "wrong").send().await.unwrap();
        assert_eq!(res.status(), 401, "{id}");
        let body: Value = res.json().await.unwrap();
        assert_eq!(body, json!({"error": "invalid_client", "error_description": "Credenciais do cliente inválidas ou inativas"}), "{id}");

        // A JSON body where the PSP reads a form.
        let res = psp.http.post(psp.token_url()).basic_auth(psp.cred("client-id"), Some(psp.cred("client-secret")))
            .json(&json!({"grant_type": "client_credentials", "client_id": psp.cred("client-id"), "client_secret": psp.cred("client-secret")}))
            .send().await.unwrap();
        assert_eq!(res.status(), 400, "{id}");
        assert_eq!(res.json::<Value>().await.unwrap()["error"], "invalid_request", "{id}");

        // The client authentication the PSP does not use is refused.
        let mut form = vec![("client_id", psp.cred("client-id")), ("client_secret", psp.cred("client-secret")), ("scope", "cob.read")];
        if !psp.case.grant_type_in_query {
            form.push(("grant_type", "client_credentials"));
        }
        let wrong_auth = match psp.case.auth {
            Auth::Basic => psp.http.post(psp.token_url()).form(&form),
            Auth::Body => psp.http.post(psp.token_url()).basic_auth(psp.cred("client-id"), Some(psp.cred("client-secret"))).form(&form),
        };
        let res = wrong_auth.send().await.unwrap();
        assert_eq!(res.status(), 401, "{id}");
        assert_eq!(res.json::<Value>().await.unwrap()["error"], "invalid_client", "{id}");

        // Where the token is not: the API host of BB and Itaú, another path elsewhere.
        let res = psp.http.post(format!("{}/oauth/token/x", psp.endpoints["api"])).send().await.unwrap();
        assert_eq!(res.status(), 404, "{id}");
        if psp.token_endpoint == "oauth" {
            let res = psp.http.post(format!("{}{}", psp.endpoints["api"], psp.token_path)).send().await.unwrap();
            assert_eq!(res.status(), 404, "{id}: no token route on the API host");
        }
        if let Some((sandbox_token, _)) = psp.case.sandbox.filter(|_| psp.mtls) {
            // Production's hosts know nothing of the sandbox's token path.
            let res = psp.http.post(format!("{}{sandbox_token}", psp.endpoints["oauth"])).send().await.unwrap();
            assert_eq!(res.status(), 404, "{id}: the sandbox's token path in production");
        }
    })
    .await;
}

#[tokio::test]
async fn santander_wants_the_grant_type_in_the_query_and_inter_a_scope() {
    let sim = Sim::start(SimOptions::default()).await.unwrap();
    for (id, form_extra, query, expected) in [
        (
            "santander",
            vec![("grant_type", "client_credentials")],
            "",
            "invalid_request",
        ),
        (
            "inter",
            vec![("grant_type", "client_credentials")],
            "",
            "invalid_scope",
        ),
    ] {
        let info = sim.provider(id).unwrap();
        let http = client(
            &sim.ca_pem(),
            Some(&format!(
                "{}{}",
                info.credentials["certificate"], info.credentials["private-key"]
            )),
        );
        let path = if id == "inter" {
            "/oauth/v2/token"
        } else {
            "/oauth/token"
        };
        let mut form = form_extra;
        form.push(("client_id", &info.credentials["client-id"]));
        form.push(("client_secret", &info.credentials["client-secret"]));
        let res = http
            .post(format!("{}{path}{query}", info.endpoints["api"]))
            .form(&form)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 400, "{id}");
        assert_eq!(
            res.json::<Value>().await.unwrap()["error"],
            expected,
            "{id}"
        );
    }
}

#[tokio::test]
async fn a_missing_or_foreign_certificate_fails_the_handshake() {
    each_environment(async |sim, psp| {
        let id = psp.case.id;
        if !psp.mtls {
            // Itaú's sandbox asks for no certificate: a client without one gets its token.
            let bare = client(&sim.ca_pem(), None);
            let res = psp
                .token_request(&bare, psp.cred("client-secret"))
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 200, "{id}");
            return;
        }
        let bare = client(&sim.ca_pem(), None);
        let err = psp
            .token_request(&bare, psp.cred("client-secret"))
            .send()
            .await
            .expect_err(id);
        assert!(
            format!("{err:?}").contains("AlertReceived(CertificateRequired)"),
            "{id}: {err:?}"
        );

        let ctl = client(&sim.ca_pem(), None);
        let issued: Value = ctl
            .post(format!("{}/_sim/certificates", sim.control_url()))
            .json(&json!({"provider": id, "cn": psp.cred("client-id"), "foreign_ca": true}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let foreign = format!(
            "{}{}",
            issued["certificate_pem"].as_str().unwrap(),
            issued["private_key_pem"].as_str().unwrap()
        );
        let err = psp
            .token_request(
                &client(&sim.ca_pem(), Some(&foreign)),
                psp.cred("client-secret"),
            )
            .send()
            .await
            .expect_err(id);
        assert!(
            format!("{err:?}").contains("AlertReceived(UnknownCA)"),
            "{id}: {err:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn bb_and_itau_refuse_calls_without_their_key() {
    each_environment(async |_, psp| {
        let Some(name) = psp
            .case
            .app_key_query
            .or(psp.api_key_header)
            .map(|(n, _)| n)
        else {
            return;
        };
        let token = psp.token().await;
        let url = format!("{}{}/cob/{}", psp.endpoints["api"], psp.prefix, txid());
        let res = psp.http.get(&url).bearer_auth(&token).send().await.unwrap();
        assert_eq!(res.status(), 403, "{name}");
        let body: Value = res.json().await.unwrap();
        assert!(psp.message(&body).contains(name), "{body}");
        // With the key the call goes through (to a 404: no such charge).
        let res = psp
            .api(reqwest::Method::GET, &format!("/cob/{}", txid()), &token)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 404, "{name}");
    })
    .await;
}

/// Production is an environment apart, as at the PSPs: its own hosts, accounts and charges.
/// The homologation account is refused by production's token endpoint (test and live mixed),
/// and a charge created in homologation is unknown to production — in the PSP's words.
#[tokio::test]
async fn production_is_an_environment_apart() {
    each_psp(async |sim, homologation| {
        let id = homologation.case.id;
        let production = Psp::new(sim, homologation.case, true, true);
        assert_ne!(
            production.cred("client-id"),
            homologation.cred("client-id"),
            "{id}"
        );
        for (hosts, account) in [(true, false), (false, true)] {
            let mixed = Psp::new(sim, homologation.case, hosts, account);
            let sent = mixed
                .token_request(&mixed.http, mixed.cred("client-secret"))
                .send()
                .await;
            if hosts && !homologation.mtls {
                // Itaú: the sandbox account has no certificate for production's mTLS.
                let err = sent.expect_err(id);
                assert!(format!("{err:?}").contains("CertificateRequired"), "{id}: {err:?}");
                continue;
            }
            let res = sent.unwrap();
            assert_eq!(res.status(), 401, "{id}");
            let body: Value = res.json().await.unwrap();
            assert_eq!(
                body,
                json!({"error": "invalid_client", "error_description": "Credenciais do cliente inválidas ou inativas"}),
                "{id}"
            );
        }

        let t = txid();
        let res = homologation
            .api(reqwest::Method::PUT, &format!("/cob/{t}"), &homologation.token().await)
            .json(&homologation.cob("5.00"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), homologation.case.create_status, "{id}");
        let token = production.token().await;
        for patch in [false, true] {
            let request = match patch {
                false => production.api(reqwest::Method::GET, &format!("/cob/{t}"), &token),
                true => production.revise(&t, &token),
            };
            let res = request
                .json(&json!({"status": "REMOVIDA_PELO_USUARIO_RECEBEDOR"}))
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 404, "{id}");
            let body: Value = res.json().await.unwrap();
            assert_eq!(
                production.message(&body),
                "Nenhuma cobrança encontrada para o txid informado",
                "{id}"
            );
        }
        // The homologation Pix key is not production's account's.
        let res = production
            .api(reqwest::Method::PUT, &format!("/cob/{}", txid()), &token)
            .json(&homologation.cob("5.00"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 400, "{id}");

        // The control API tells the environments apart.
        let charges: Value = client(&sim.ca_pem(), None)
            .get(format!("{}/_sim/charges?provider={id}", sim.control_url()))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let created = charges
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["psp_id"] == t.as_str())
            .unwrap();
        assert_eq!(created["environment"], "homologation", "{id}");
    })
    .await;
}

#[tokio::test]
async fn create_query_cancel_and_errors_in_each_psps_shape() {
    each_psp(async |sim, psp| {
        let id = psp.case.id;
        let token = psp.token().await;
        let t = txid();
        let res = psp
            .api(reqwest::Method::PUT, &format!("/cob/{t}"), &token)
            .json(&psp.cob("12.34"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), psp.case.create_status, "{id}");
        let cob: Value = res.json().await.unwrap();
        assert_eq!(
            (cob["txid"].as_str(), cob["status"].as_str()),
            (Some(t.as_str()), Some("ATIVA")),
            "{id}"
        );
        assert!(
            psp_sim::brcode::crc_is_valid(cob["pixCopiaECola"].as_str().unwrap()),
            "{id}"
        );

        // The same txid again: nothing new is created.
        let res = psp
            .api(reqwest::Method::PUT, &format!("/cob/{t}"), &token)
            .json(&psp.cob("12.34"))
            .send()
            .await
            .unwrap();
        let expected = if psp.case.bb_errors { 400 } else { 409 };
        assert_eq!(res.status().as_u16(), expected, "{id}");
        let body: Value = res.json().await.unwrap();
        assert!(psp.message(&body).contains("txid"), "{id}: {body}");

        // POST /cob: the PSP picks the txid; Santander has none.
        let res = psp
            .api(reqwest::Method::POST, "/cob", &token)
            .json(&psp.cob("1.00"))
            .send()
            .await
            .unwrap();
        let expected = if psp.case.post_cob {
            psp.case.create_status
        } else {
            404
        };
        assert_eq!(res.status().as_u16(), expected, "{id}");

        let mut other = psp.cob("1.00");
        other["chave"] = json!("outra-chave@example.com");
        let res = psp
            .api(reqwest::Method::PUT, &format!("/cob/{}", txid()), &token)
            .json(&other)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 400, "{id}");
        let body: Value = res.json().await.unwrap();
        assert_eq!(
            psp.message(&body),
            "A chave Pix informada não pertence a esta conta",
            "{id}"
        );
        if !psp.case.bb_errors {
            assert_eq!(body["violacoes"][0]["propriedade"], "chave", "{id}");
            assert!(
                body["type"]
                    .as_str()
                    .unwrap()
                    .starts_with("https://pix.bcb.gov.br/api/v2/error/"),
                "{id}"
            );
        }

        let res = psp
            .api(reqwest::Method::GET, &format!("/cob/{}", txid()), &token)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 404, "{id}");
        let body: Value = res.json().await.unwrap();
        assert_eq!(
            psp.message(&body),
            "Nenhuma cobrança encontrada para o txid informado",
            "{id}"
        );

        if psp.case.revise_prefix.is_some() {
            // Santander: no revision under the prefix of everything else.
            let res = psp
                .api(reqwest::Method::PATCH, &format!("/cob/{t}"), &token)
                .json(&json!({"status": "REMOVIDA_PELO_USUARIO_RECEBEDOR"}))
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 404, "{id}: PATCH under {}", psp.prefix);
            let body: Value = res.json().await.unwrap();
            assert_eq!(psp.message(&body), "Rota não encontrada", "{id}");
        }
        let res = psp
            .revise(&t, &token)
            .json(&json!({"status": "REMOVIDA_PELO_USUARIO_RECEBEDOR"}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{id}");
        assert_eq!(
            res.json::<Value>().await.unwrap()["status"],
            psp.case.removed,
            "{id}"
        );

        // The control API knows every provider.
        let charges: Value = client(&sim.ca_pem(), None)
            .get(format!("{}/_sim/charges?provider={id}", sim.control_url()))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(
            charges.as_array().map(Vec::len),
            Some(if psp.case.post_cob { 2 } else { 1 }),
            "{id}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_payment_is_notified_at_the_webhook_url_plus_pix_in_each_psps_shape() {
    let receiver = Receiver::start(200).await;
    each_psp(async |sim, psp| {
        let id = psp.case.id;
        let token = psp.token().await;
        let chave = psp.cred("pix-key");
        let res = psp
            .api(reqwest::Method::PUT, &format!("/webhook/{chave}"), &token)
            .json(&json!({"webhookUrl": format!("http://{}/wh/{id}", receiver.addr)}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{id}");
        let t = txid();
        let res = psp
            .api(reqwest::Method::PUT, &format!("/cob/{t}"), &token)
            .json(&psp.cob("5.00"))
            .send()
            .await
            .unwrap();
        assert!(res.status().is_success(), "{id}");
        let ctl = client(&sim.ca_pem(), None);
        let paid: Value = ctl
            .post(format!("{}/_sim/pay", sim.control_url()))
            .json(&json!({"provider": id, "reference": t}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(paid["charge"]["status"], "CONCLUIDA", "{id}");
        let target = format!("/wh/{id}/pix");
        let seen = eventually(id, || {
            let found = receiver.received().into_iter().find(|r| r.target == target);
            async move { found }
        })
        .await;
        let pix = if psp.case.bare_array {
            &seen.body[0]
        } else {
            &seen.body["pix"][0]
        };
        assert_eq!(
            (pix["txid"].as_str(), pix["valor"].as_str()),
            (Some(t.as_str()), Some("5.00")),
            "{id}: {}",
            seen.body
        );
        assert_eq!(seen.body.is_array(), psp.case.bare_array, "{id}");

        let expired = ctl
            .post(format!("{}/_sim/expire", sim.control_url()))
            .json(&json!({"provider": id, "reference": t}))
            .send()
            .await
            .unwrap();
        assert_eq!(expired.status(), 409, "{id}: a paid charge does not expire");
    })
    .await;
}

/// `POST /_sim/config` with account flags for `id`.
async fn flags(sim: &Sim, id: &str, flags: Value) {
    let res = client(&sim.ca_pem(), None)
        .post(format!("{}/_sim/config", sim.control_url()))
        .json(&json!({"provider": id, "flags": flags}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
}

/// `pixCopiaECola` is optional in the standard, and BB's homologation calls it
/// `textoImagemQRcode`: account flags give each answer a client must cope with.
#[tokio::test]
async fn the_code_may_be_missing_from_the_create_answer_or_everywhere_or_renamed() {
    each_psp(async |sim, psp| {
        let id = psp.case.id;
        let token = psp.token().await;
        let create = async |flag: &str| {
            flags(sim, id, json!({flag: true})).await;
            let t = txid();
            let res = psp
                .api(reqwest::Method::PUT, &format!("/cob/{t}"), &token)
                .json(&psp.cob("3.21"))
                .send()
                .await
                .unwrap();
            assert_eq!(res.status().as_u16(), psp.case.create_status, "{id} {flag}");
            let created: Value = res.json().await.unwrap();
            let res = psp
                .api(reqwest::Method::GET, &format!("/cob/{t}"), &token)
                .send()
                .await
                .unwrap();
            let read: Value = res.json().await.unwrap();
            flags(sim, id, json!({flag: false})).await;
            (created, read)
        };
        let (created, read) = create("create_without_pix_copia_e_cola").await;
        assert!(created.get("pixCopiaECola").is_none(), "{id}: {created}");
        assert!(created["location"].is_string(), "{id}: {created}");
        let code = read["pixCopiaECola"].as_str().unwrap();
        assert!(psp_sim::brcode::crc_is_valid(code), "{id}: {read}");

        let (created, read) = create("without_pix_copia_e_cola").await;
        for answer in [&created, &read] {
            assert!(answer.get("pixCopiaECola").is_none(), "{id}: {answer}");
            assert!(answer["location"].is_string(), "{id}: {answer}");
        }

        let (created, read) = create("texto_imagem_qrcode").await;
        for answer in [&created, &read] {
            assert!(answer.get("pixCopiaECola").is_none(), "{id}: {answer}");
            let code = answer["textoImagemQRcode"].as_str().unwrap();
            assert!(psp_sim::brcode::crc_is_valid(code), "{id}: {answer}");
        }
    })
    .await;
}

/// With `single_object_notifications` each Pix is notified as a bare object (as Inter may).
#[tokio::test]
async fn a_notification_may_be_a_single_pix_object() {
    let receiver = Receiver::start(200).await;
    each_psp(async |sim, psp| {
        let id = psp.case.id;
        if id != "inter" && id != "bb" {
            return;
        }
        let token = psp.token().await;
        let res = psp
            .api(
                reqwest::Method::PUT,
                &format!("/webhook/{}", psp.cred("pix-key")),
                &token,
            )
            .json(&json!({"webhookUrl": format!("http://{}/single/{id}", receiver.addr)}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{id}");
        let t = txid();
        let res = psp
            .api(reqwest::Method::PUT, &format!("/cob/{t}"), &token)
            .json(&psp.cob("7.00"))
            .send()
            .await
            .unwrap();
        assert!(res.status().is_success(), "{id}");
        flags(sim, id, json!({"single_object_notifications": true})).await;
        client(&sim.ca_pem(), None)
            .post(format!("{}/_sim/pay", sim.control_url()))
            .json(&json!({"provider": id, "reference": t}))
            .send()
            .await
            .unwrap();
        let target = format!("/single/{id}/pix");
        let seen = eventually(id, || {
            let found = receiver.received().into_iter().find(|r| r.target == target);
            async move { found }
        })
        .await;
        assert_eq!(
            (seen.body["txid"].as_str(), seen.body["valor"].as_str()),
            (Some(t.as_str()), Some("7.00")),
            "{id}: {}",
            seen.body
        );
        assert_eq!(seen.body["endToEndId"].as_str().map(str::len), Some(32));
    })
    .await;
}

/// The `hold` fault keeps matching requests unanswered until released: a slow PSP without
/// any timing in the test.
#[tokio::test]
async fn a_held_request_is_answered_only_once_released() {
    let sim = Sim::start(SimOptions::default()).await.unwrap();
    let psp = Psp::new(&sim, &CASES[2], false, false); // bb
    let token = psp.token().await;
    let ctl = client(&sim.ca_pem(), None);
    let faults = |body: Value| {
        ctl.post(format!("{}/_sim/faults", sim.control_url()))
            .json(&body)
            .send()
    };
    let set =
        faults(json!({"provider": "bb", "hold": {"method": "GET", "path_contains": "/cob/"}}))
            .await
            .unwrap();
    assert_eq!(set.status(), 200);
    let query = psp
        .api(reqwest::Method::GET, &format!("/cob/{}", txid()), &token)
        .send();
    let query = tokio::spawn(query);
    let requests = async || -> Vec<Value> {
        ctl.get(format!("{}/_sim/requests?provider=bb", sim.control_url()))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    };
    let held = eventually("the query held", || async {
        requests()
            .await
            .into_iter()
            .find(|r| r["outcome"] == "held" && r["method"] == "GET")
    })
    .await;
    assert_eq!(held["status"], Value::Null, "{held}");
    assert!(!query.is_finished(), "a held query is not answered");
    // Other requests go through meanwhile.
    let t = txid();
    let res = psp
        .api(reqwest::Method::PUT, &format!("/cob/{t}"), &token)
        .json(&psp.cob("1.00"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    assert!(!query.is_finished(), "still held");
    let released = faults(json!({"provider": "bb", "release_held": true}))
        .await
        .unwrap();
    assert_eq!(released.status(), 200);
    let answer = query.await.unwrap().unwrap();
    assert_eq!(answer.status(), 404, "answered once released");
}
