//! The PSPs page over HTTP, against the PSP simulator: connecting a PSP from its manifest's
//! form, errors next to the field at fault with everything typed kept, the changes a
//! connection takes, its webhook URL and token as the API shows them, every change in the
//! audit log, and what a manager and a cashier may not do.

use serde_json::json;

use super::accounts::join_as;
use crate::both_backends;
use crate::common::gateway::{Backend, Gateway, GatewayOptions, TestDb, cli};
use crate::common::{sim_control, start_sim};
use crate::dashboard::support::{Answer, Visitor};

const BUSINESS: &str = "Loja da Ana";
const OWNER: &str = "ana@loja.com.br";

async fn gateway(db: &TestDb, sim: &psp_sim::Sim) -> Gateway {
    Gateway::start(db, sim, &["efi", "stripe"], GatewayOptions::default()).await
}

/// The connect form's fields for the simulator's test account at `provider`, with
/// `overrides` replacing (or adding) fields.
fn account_form(
    sim: &psp_sim::Sim,
    provider: &str,
    label: &str,
    overrides: &[(&str, &str)],
) -> Vec<(String, String)> {
    let mut fields = sim.provider(provider).unwrap().credentials;
    for (k, v) in overrides {
        fields.insert(k.to_string(), v.to_string());
    }
    let mut form = vec![("label".to_owned(), label.to_owned())];
    form.extend(fields.into_iter().map(|(k, v)| (format!("fields.{k}"), v)));
    form
}

fn pairs(form: &[(String, String)]) -> Vec<(&str, &str)> {
    form.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

/// Connects `provider` from its form; returns the new connection's id.
async fn connect(owner: &Visitor, sim: &psp_sim::Sim, provider: &str, label: &str) -> String {
    owner
        .get(&format!("/dashboard/psps/connect/{provider}"))
        .await
        .assert_ok();
    let form = account_form(sim, provider, label, &[]);
    let answer = owner
        .post(
            &format!("/dashboard/psps/connect/{provider}"),
            &pairs(&form),
        )
        .await;
    let location = answer.assert_redirect("/dashboard/psps/cred_");
    location.rsplit('/').next().unwrap().to_owned()
}

/// The dashboard merchant's id, as the operator finds it: `pixgw merchant list`.
fn merchant_id(db: &TestDb) -> String {
    let list = cli(db, &[], &["merchant", "list"]);
    let line = list
        .lines()
        .find(|l| l.ends_with(BUSINESS))
        .unwrap_or_else(|| panic!("{BUSINESS} is not in `pixgw merchant list`:\n{list}"));
    line.split_whitespace().next().unwrap().to_owned()
}

/// A test API key for the dashboard's merchant, made with the operator CLI.
fn api_key(db: &TestDb) -> String {
    let merchant = merchant_id(db);
    cli(
        db,
        &[],
        &["key", "create", "--merchant", &merchant, "--env", "test"],
    )
}

fn unescape(text: &str) -> String {
    text.replace("&#x2f;", "/")
        .replace("&#47;", "/")
        .replace("&#x27;", "'")
        .replace("&#39;", "'")
        .replace("&quot;", "\"")
        .replace("&#34;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// The text of the element with `id="{id}"` (its first text, up to the next tag).
fn element_text(html: &str, id: &str) -> Option<String> {
    let marker = format!("id=\"{id}\"");
    let at = html.find(&marker)?;
    let start = at + html[at..].find('>')? + 1;
    let end = start + html[start..].find('<')?;
    Some(unescape(&html[start..end]))
}

/// The content of `<textarea name="{name}">`.
fn textarea(html: &str, name: &str) -> Option<String> {
    let at = html.find(&format!("name=\"{name}\""))?;
    assert!(html[..at].rfind("<textarea").unwrap() > html[..at].rfind('>').unwrap_or(0));
    let start = at + html[at..].find('>')? + 1;
    let end = start + html[start..].find("</textarea>")?;
    Some(unescape(&html[start..end]))
}

/// The list's row of connection `id`, as text.
fn row_text(list: &Answer, id: &str) -> String {
    let at = list
        .body
        .find(&format!("id=\"psp-{id}\""))
        .unwrap_or_else(|| panic!("no row for {id}: {}", list.text()));
    let end = at + list.body[at..].find("</tr>").unwrap();
    Answer {
        status: 200,
        location: None,
        body: format!("<tr {}", &list.body[at..end]),
    }
    .text()
}

/// Actions of the merchant's audit log, oldest first, with their actors.
async fn audit_log(db: &TestDb) -> Vec<(String, String, String)> {
    let store = pixgw::store::Store::connect(&db.url).await.unwrap();
    let filter = pixgw::store::audit::AuditFilter {
        action: Some("credential".into()),
        limit: 100,
        ..Default::default()
    };
    let mut entries: Vec<_> = store
        .audit_entries(&merchant_id(db), &filter)
        .await
        .unwrap()
        .into_iter()
        .map(|e| (e.action, e.actor_kind, e.summary))
        .collect();
    entries.reverse();
    entries
}

both_backends!(connecting_efi_from_the_form_makes_it_usable_by_the_api);
async fn connecting_efi_from_the_form_makes_it_usable_by_the_api(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let gw = gateway(&db, &sim).await;
    let owner = Visitor::sign_up(&gw, BUSINESS, OWNER).await;

    let list = owner.get("/dashboard/psps").await;
    list.assert_ok();
    assert!(
        list.text()
            .contains("No PSP connected in this environment yet.")
    );
    assert!(list.body.contains("href=\"/dashboard/psps/connect/efi\""));
    assert!(
        list.body
            .contains("href=\"/dashboard/psps/connect/stripe\"")
    );

    // The form is the manifest's: the certificate a text area with a file to load into it,
    // the secret a password.
    let form = owner.get("/dashboard/psps/connect/efi").await;
    form.assert_ok();
    assert!(
        form.body
            .contains("<textarea id=\"field-certificate\" name=\"fields.certificate\"")
    );
    assert!(form.body.contains(
        "<input type=\"file\" accept=\".pem,.crt,.key,.cer\" data-into=\"field-certificate\""
    ));
    assert!(form.body.contains(
        "<input id=\"field-client-secret\" name=\"fields.client-secret\" type=\"password\""
    ));

    let id = connect(&owner, &sim, "efi", "Efí loja centro").await;
    let page = owner.get(&format!("/dashboard/psps/{id}")).await;
    page.assert_ok();
    let text = page.text();
    assert!(text.contains("PSP connected."), "{text}");
    assert!(
        text.contains("Efí loja centro") && text.contains("Efí Bank"),
        "{text}"
    );

    let list = owner.get("/dashboard/psps").await;
    let row = row_text(&list, &id);
    assert_eq!(
        row,
        "1 Efí loja centro Efí Bank active verified webhook registered 1 ↑ Move up ↓ Move down \
         Details"
    );

    // The page's webhook URL and token are the API's, and the URL is the one Efí was given.
    let key = api_key(&db);
    let (status, credential) = gw.get(&format!("/v1/credentials/{id}"), &key).await;
    assert_eq!(status, 200, "{credential}");
    assert_eq!(credential["label"], "Efí loja centro");
    let url = element_text(&page.body, "webhook-url").unwrap();
    let token = element_text(&page.body, "webhook-token").unwrap();
    assert_eq!(url, credential["webhook"]["url"].as_str().unwrap());
    assert_eq!(token, credential["webhook"]["token"].as_str().unwrap());
    assert!(url.ends_with(&format!("?token={token}")), "{url}");
    assert!(page.body.contains("data-copy=\"#webhook-url\""));
    assert!(page.body.contains("data-copy=\"#webhook-token\""));
    let registered = sim_control(&sim, "/_sim/webhooks?provider=efi", None).await;
    assert!(
        registered
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["webhookUrl"] == url.as_str()),
        "{registered}"
    );
    assert!(
        page.text().contains(
            "pixgw registers this URL at Efí Bank by itself when connecting and whenever the \
             credentials change: nothing to do."
        ),
        "{}",
        page.text()
    );

    // The API charges through it.
    let (status, charge) = gw
        .post(
            "/v1/charges",
            &key,
            json!({"amount": 1990, "provider": "efi", "description": "Pedido 42"}),
        )
        .await;
    assert_eq!(status, 201, "{charge}");
    assert_eq!(charge["provider"], "efi");

    // Audited with the person, and no secret in the summary.
    let secret = &sim.provider("efi").unwrap().credentials["client-secret"];
    let log = audit_log(&db).await;
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(
        (log[0].0.as_str(), log[0].1.as_str(), log[0].2.as_str()),
        (
            "credential.connect",
            "user",
            "connected efi \"Efí loja centro\": verification ok, webhook registered"
        )
    );
    assert!(!log[0].2.contains(secret.as_str()));
}

both_backends!(form_errors_sit_next_to_their_field_and_keep_what_was_typed);
async fn form_errors_sit_next_to_their_field_and_keep_what_was_typed(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let gw = gateway(&db, &sim).await;
    let owner = Visitor::sign_up(&gw, BUSINESS, OWNER).await;
    let key = api_key(&db);
    owner.get("/dashboard/psps/connect/efi").await.assert_ok();
    let account = sim.provider("efi").unwrap().credentials;

    // A broken certificate: the check's words (the API's) after the page's sentence.
    let broken = "-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----";
    let form = account_form(&sim, "efi", "Efí loja centro", &[("certificate", broken)]);
    let answer = owner
        .post("/dashboard/psps/connect/efi", &pairs(&form))
        .await;
    assert_eq!(answer.status, 422, "{}", answer.text());
    let (status, api) = gw
        .post(
            "/v1/credentials",
            &key,
            json!({"provider": "efi", "fields": {
                "client-id": account["client-id"], "client-secret": account["client-secret"],
                "pix-key": account["pix-key"], "certificate": broken}}),
        )
        .await;
    assert_eq!(status, 422, "{api}");
    let detail = api["error"]["message"]
        .as_str()
        .unwrap()
        .strip_prefix("fields.certificate: ")
        .unwrap();
    assert_eq!(
        element_text(&answer.body, "field-certificate-error").unwrap(),
        format!("This content cannot be used. Technical detail: {detail}")
    );
    assert!(
        answer
            .body
            .contains("aria-describedby=\"field-certificate-error\"")
    );
    assert_eq!(answer.input_value("label").unwrap(), "Efí loja centro");
    assert_eq!(
        answer.input_value("fields.client-id").as_ref(),
        Some(&account["client-id"])
    );
    assert_eq!(
        answer.input_value("fields.client-secret").as_ref(),
        Some(&account["client-secret"])
    );
    assert_eq!(
        answer.input_value("fields.pix-key").as_ref(),
        Some(&account["pix-key"])
    );
    assert_eq!(
        textarea(&answer.body, "fields.certificate").unwrap(),
        broken
    );

    // A required field left empty.
    let form = account_form(&sim, "efi", "", &[("client-secret", "")]);
    let answer = owner
        .post("/dashboard/psps/connect/efi", &pairs(&form))
        .await;
    assert_eq!(answer.status, 422, "{}", answer.text());
    assert_eq!(
        element_text(&answer.body, "field-client-secret-error").unwrap(),
        "Fill in this field."
    );
    assert_eq!(
        textarea(&answer.body, "fields.certificate").as_ref(),
        Some(&account["certificate"])
    );

    // A value over 64 KiB.
    let long = "k".repeat(64 * 1024 + 1);
    let form = account_form(&sim, "efi", "", &[("pix-key", &long)]);
    let answer = owner
        .post("/dashboard/psps/connect/efi", &pairs(&form))
        .await;
    assert_eq!(answer.status, 422, "{}", answer.text());
    assert_eq!(
        element_text(&answer.body, "field-pix-key-error").unwrap(),
        "Too long: the limit is 64 KiB."
    );
    assert_eq!(answer.input_value("fields.pix-key").unwrap(), long);

    // A live Stripe key in the test environment.
    owner
        .get("/dashboard/psps/connect/stripe")
        .await
        .assert_ok();
    let answer = owner
        .post(
            "/dashboard/psps/connect/stripe",
            &[
                ("label", ""),
                ("fields.secret-key", "sk_live_51Abc"),
                ("fields.webhook-secret", ""),
            ],
        )
        .await;
    assert_eq!(answer.status, 422, "{}", answer.text());
    // Stripe has two key kinds per environment (`sk_`, `rk_`), so its adapter, not the
    // manifest's single prefix, refuses the other environment's key, before calling Stripe.
    let alert = &answer.body[answer.body.find("id=\"form-alert\"").unwrap()..];
    let alert = &alert[..alert.find("</div>").unwrap()];
    assert!(
        alert.contains(
            "the credential&#39;s `secret-key` is a live key (it starts with sk_live_) but the \
             credential is for the test environment: paste the test key"
        ),
        "{alert}"
    );
    assert_eq!(
        answer.input_value("fields.secret-key").unwrap(),
        "sk_live_51Abc"
    );

    // The PSP's refusal: its words and the remedy on top, the form as typed.
    let form = account_form(&sim, "efi", "Efí", &[("client-secret", "not-the-secret")]);
    let answer = owner
        .post("/dashboard/psps/connect/efi", &pairs(&form))
        .await;
    assert_eq!(answer.status, 422, "{}", answer.text());
    let alert = form_alert(&answer);
    assert_eq!(
        alert,
        "Efí Bank refused these credentials, so nothing was saved. The PSP said: Invalid or \
         inactive credentials Copy the client ID and secret (or the key) again without extra \
         spaces, and check that they belong to the sandbox (homologation) environment of Efí \
         Bank: sandbox credentials do not work in production, and vice versa."
    );
    assert_eq!(
        answer.input_value("fields.client-secret").unwrap(),
        "not-the-secret"
    );
    assert_eq!(answer.input_value("label").unwrap(), "Efí");

    // A label too long.
    let form = account_form(&sim, "efi", &"L".repeat(101), &[]);
    let answer = owner
        .post("/dashboard/psps/connect/efi", &pairs(&form))
        .await;
    assert_eq!(answer.status, 422, "{}", answer.text());
    assert_eq!(
        element_text(&answer.body, "label-error").unwrap(),
        "Enter a name of 1 to 100 characters."
    );

    // Nothing was saved, nothing audited.
    let (_, listed) = gw.get("/v1/credentials", &key).await;
    assert_eq!(listed["data"], json!([]));
    assert_eq!(audit_log(&db).await, vec![]);
}

both_backends!(a_connection_is_reordered_changed_deactivated_and_removed);
async fn a_connection_is_reordered_changed_deactivated_and_removed(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let gw = gateway(&db, &sim).await;
    let owner = Visitor::sign_up(&gw, BUSINESS, OWNER).await;
    let key = api_key(&db);
    let efi = connect(&owner, &sim, "efi", "Efí").await;
    let stripe = connect(&owner, &sim, "stripe", "").await;
    let charge = async |provider: &str| {
        gw.post(
            "/v1/charges",
            &key,
            json!({"amount": 1990, "provider": provider, "description": "Pedido 42"}),
        )
        .await
    };
    let api_order = async || -> Vec<String> {
        let (_, listed) = gw.get("/v1/credentials", &key).await;
        listed["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap().to_owned())
            .collect()
    };

    // Stripe registers no webhook: the merchant is told where the URL goes, and how the
    // notifications authenticate.
    let page = owner.get(&format!("/dashboard/psps/{stripe}")).await;
    let text = page.text();
    assert!(text.contains("manual webhook"), "{text}");
    assert!(text.contains("Stripe does not let the webhook be registered through its API: copy the URL and paste it into the webhook settings of Stripe's dashboard."), "{text}");
    assert!(
        text.contains("Stripe also signs every notification, and pixgw checks the signature."),
        "{text}"
    );
    let list = owner.get("/dashboard/psps").await;
    assert!(row_text(&list, &stripe).starts_with("2 Stripe Stripe active verified manual webhook"));

    // Reordered: Stripe first, on the page and for the API's routing.
    assert_eq!(api_order().await, [efi.clone(), stripe.clone()]);
    owner
        .post(
            &format!("/dashboard/psps/{stripe}/move"),
            &[("direction", "up")],
        )
        .await
        .assert_redirect("/dashboard/psps");
    let list = owner.get("/dashboard/psps").await;
    assert!(list.text().contains("Order changed."));
    assert!(list.body.find(&format!("psp-{stripe}")) < list.body.find(&format!("psp-{efi}")));
    assert_eq!(api_order().await, [stripe.clone(), efi.clone()]);

    // Name and routing limit; a limit out of range is refused next to it, as typed.
    owner
        .get(&format!("/dashboard/psps/{efi}"))
        .await
        .assert_ok();
    let answer = owner
        .post(
            &format!("/dashboard/psps/{efi}/settings"),
            &[("label", "Efí matriz"), ("route_limit", "0")],
        )
        .await;
    assert_eq!(answer.status, 422, "{}", answer.text());
    assert_eq!(
        element_text(&answer.body, "route-limit-error").unwrap(),
        "Enter a whole number from 1 to 1000."
    );
    assert_eq!(answer.input_value("route_limit").unwrap(), "0");
    assert_eq!(answer.input_value("label").unwrap(), "Efí matriz");
    owner
        .post(
            &format!("/dashboard/psps/{efi}/settings"),
            &[("label", "Efí matriz"), ("route_limit", "5")],
        )
        .await
        .assert_redirect(&format!("/dashboard/psps/{efi}"));
    let (_, credential) = gw.get(&format!("/v1/credentials/{efi}"), &key).await;
    assert_eq!(
        (
            credential["label"].clone(),
            credential["route_limit"].clone()
        ),
        (json!("Efí matriz"), json!(5))
    );

    // Deactivated: the API cannot charge through it until it is activated again.
    owner
        .post(
            &format!("/dashboard/psps/{efi}/active"),
            &[("active", "false")],
        )
        .await
        .assert_redirect(&format!("/dashboard/psps/{efi}"));
    let list = owner.get("/dashboard/psps").await;
    assert!(
        row_text(&list, &efi)
            .starts_with("2 Efí matriz Efí Bank inactive verified webhook registered 5")
    );
    let (status, e) = charge("efi").await;
    assert_eq!(
        (status, e["error"]["code"].as_str()),
        (422, Some("provider_not_connected")),
        "{e}"
    );
    owner
        .post(
            &format!("/dashboard/psps/{efi}/active"),
            &[("active", "true")],
        )
        .await
        .assert_redirect(&format!("/dashboard/psps/{efi}"));
    let (status, c) = charge("efi").await;
    assert_eq!(status, 201, "{c}");

    // New credentials are tried first: refused, the saved ones stay; accepted, they replace.
    let fields_path = format!("/dashboard/psps/{efi}/fields");
    let account = sim.provider("efi").unwrap().credentials;
    let answer = owner
        .post(&fields_path, &[("fields.client-secret", "not-the-secret")])
        .await;
    assert_eq!(answer.status, 422, "{}", answer.text());
    assert_eq!(
        element_text(&answer.body, "psp-message").unwrap(),
        "Invalid or inactive credentials"
    );
    assert_eq!(
        answer.input_value("fields.client-secret").unwrap(),
        "not-the-secret"
    );
    let (status, c) = charge("efi").await;
    assert_eq!(status, 201, "the saved credentials still work: {c}");
    owner
        .post(
            &fields_path,
            &[
                ("fields.client-id", &account["client-id"]),
                ("fields.client-secret", &account["client-secret"]),
                ("fields.pix-key", &account["pix-key"]),
                ("fields.certificate", ""),
            ],
        )
        .await
        .assert_redirect(&format!("/dashboard/psps/{efi}"));

    // A change through the API is audited too, with its key.
    let (status, _) = gw
        .send(
            gw.request(
                reqwest::Method::PATCH,
                &format!("/v1/credentials/{stripe}"),
                Some(&key),
            )
            .json(&json!({"label": "Stripe BR"})),
        )
        .await;
    assert_eq!(status, 200);

    // Removed: gone from the page and the API.
    owner
        .post(&format!("/dashboard/psps/{efi}/delete"), &[])
        .await
        .assert_redirect("/dashboard/psps");
    let list = owner.get("/dashboard/psps").await;
    assert!(list.text().contains("Connection removed."));
    assert!(!list.body.contains(&format!("psp-{efi}")));
    let (status, _) = gw.get(&format!("/v1/credentials/{efi}"), &key).await;
    assert_eq!(status, 404);
    assert_eq!(
        owner.get(&format!("/dashboard/psps/{efi}")).await.status,
        404
    );

    let log = audit_log(&db).await;
    let actions: Vec<(&str, &str)> = log
        .iter()
        .map(|(a, k, _)| (a.as_str(), k.as_str()))
        .collect();
    assert_eq!(
        actions,
        [
            ("credential.connect", "user"),
            ("credential.connect", "user"),
            ("credential.reorder", "user"),
            ("credential.update", "user"),
            ("credential.deactivate", "user"),
            ("credential.activate", "user"),
            ("credential.update", "user"),
            ("credential.update", "api_key"),
            ("credential.delete", "user"),
        ],
        "{log:#?}"
    );
    let summaries: Vec<&str> = log.iter().map(|(_, _, s)| s.as_str()).collect();
    assert_eq!(summaries[2], "stripe \"Stripe\" moved up: position 1 of 2");
    assert_eq!(
        summaries[3],
        "efi \"Efí matriz\": label \"Efí\" → \"Efí matriz\"; route limit 1 → 5"
    );
    assert_eq!(
        summaries[6],
        "efi \"Efí matriz\": webhook registration registered"
    );
    assert_eq!(
        summaries[7],
        "stripe \"Stripe BR\": label \"Stripe\" → \"Stripe BR\""
    );
}

both_backends!(a_manager_sees_the_connections_but_changes_nothing);
async fn a_manager_sees_the_connections_but_changes_nothing(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let gw = gateway(&db, &sim).await;
    let owner = Visitor::sign_up(&gw, BUSINESS, OWNER).await;
    let id = connect(&owner, &sim, "efi", "Efí").await;
    let manager = join_as(&gw, &owner, "gerente@loja.com.br", "manager").await;

    let list = manager.get("/dashboard/psps").await;
    list.assert_ok();
    assert!(
        row_text(&list, &id).starts_with("1 Efí Efí Bank active verified webhook registered 1")
    );
    assert!(
        !list.body.contains("action=\"/dashboard/psps"),
        "no change control"
    );
    assert!(!list.body.contains("/dashboard/psps/connect/"));

    // The token is the owner's: neither shown nor in the URL.
    let page = manager.get(&format!("/dashboard/psps/{id}")).await;
    page.assert_ok();
    assert!(!page.body.contains("action=\"/dashboard/psps"));
    assert_eq!(element_text(&page.body, "webhook-token"), None);
    let url = element_text(&page.body, "webhook-url").unwrap();
    assert!(url.ends_with("?token=••••••••"), "{url}");
    assert!(!page.body.contains("data-copy=\"#webhook-url\""));
    assert!(page.text().contains("Only owners see the token."));

    for (path, form) in [
        (
            format!("/dashboard/psps/{id}/active"),
            vec![("active", "false")],
        ),
        (
            format!("/dashboard/psps/{id}/settings"),
            vec![("label", "X"), ("route_limit", "2")],
        ),
        (
            format!("/dashboard/psps/{id}/move"),
            vec![("direction", "down")],
        ),
        (format!("/dashboard/psps/{id}/delete"), vec![]),
        (
            format!("/dashboard/psps/{id}/fields"),
            vec![("fields.client-secret", "x")],
        ),
        (
            "/dashboard/psps/connect/efi".to_owned(),
            vec![("label", "Outra")],
        ),
    ] {
        let answer = manager.post(&path, &form).await;
        assert_eq!(answer.status, 403, "{path}: {}", answer.text());
    }
    assert_eq!(manager.get("/dashboard/psps/connect/efi").await.status, 403);
    let key = api_key(&db);
    let (_, credential) = gw.get(&format!("/v1/credentials/{id}"), &key).await;
    assert_eq!(
        (credential["active"].clone(), credential["label"].clone()),
        (json!(true), json!("Efí"))
    );

    let cashier = join_as(&gw, &owner, "caixa@loja.com.br", "cashier").await;
    let answer = cashier.get("/dashboard/psps").await;
    assert_eq!(answer.status, 403);
    assert_eq!(
        cashier.get(&format!("/dashboard/psps/{id}")).await.status,
        403
    );
}

/// A PSP's refusal of credentials in Portuguese: the page's sentence and the remedy in the
/// viewer's language ([`pixgw::web::refusals`], shared with the cashier), the PSP's own words
/// verbatim between them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_is_explained_in_the_viewers_language() {
    let sim = start_sim().await;
    let db = TestDb::new(Backend::Sqlite).await;
    let gw = gateway(&db, &sim).await;
    let owner = Visitor::sign_up(&gw, BUSINESS, OWNER).await;
    owner
        .get("/dashboard/language?lang=pt-BR&next=/dashboard/psps/connect/efi")
        .await;
    owner.get("/dashboard/psps/connect/efi").await.assert_ok();
    let form = account_form(&sim, "efi", "Efí", &[("client-secret", "not-the-secret")]);
    let answer = owner
        .post("/dashboard/psps/connect/efi", &pairs(&form))
        .await;
    assert_eq!(answer.status, 422, "{}", answer.text());
    assert!(answer.body.contains("<html lang=\"pt-BR\">"));
    let alert = form_alert(&answer);
    assert_eq!(
        alert,
        "O Efí Bank recusou estas credenciais, então nada foi salvo. Resposta do PSP: Invalid \
         or inactive credentials Copie de novo o client ID e o secret (ou a chave) sem espaços \
         a mais, e confira se são do ambiente de sandbox (homologação) do Efí Bank: \
         credenciais de sandbox não funcionam em produção, e vice-versa."
    );
    assert_eq!(
        element_text(&answer.body, "psp-message").as_deref(),
        Some("Invalid or inactive credentials")
    );
}

/// The text of a page's form alert (`id="form-alert"`).
fn form_alert(answer: &Answer) -> String {
    let alert = &answer.body[answer.body.find("id=\"form-alert\"").unwrap()..];
    Answer {
        status: answer.status,
        location: None,
        body: format!("<div {}", &alert[..alert.find("</div>").unwrap()]),
    }
    .text()
}
