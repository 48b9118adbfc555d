//! The charges pages over HTTP, against the PSP simulator: charges made through the API (with
//! the dashboard merchant's own key) listed newest first with their badges, each filter
//! narrowing exactly, pagination through all of them; a charge's page with the Pix code the
//! API answered, the tries at PSPs, its events and their deliveries; cancel from the page
//! (recorded in the audit log) and the PSP's refusal shown in its words; another merchant's
//! charge a 404; and a cashier who sees only the sales they made.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::accounts::join_as;
use crate::both_backends;
use crate::common::gateway::{Backend, Gateway, GatewayOptions, TestDb, cli, create_merchant};
use crate::common::{poll, sim_control, start_sim};
use crate::dashboard::support::{Answer, Visitor};

pub const BUSINESS: &str = "Loja Centro";
pub const OWNER: &str = "ana@loja.com.br";

/// A dashboard merchant with efi connected through the API, and its test key.
pub struct Shop {
    pub sim: psp_sim::Sim,
    pub db: TestDb,
    pub gw: Gateway,
    pub owner: Visitor,
    pub merchant_id: String,
    pub key: String,
}

impl Shop {
    pub async fn open(backend: Backend) -> Shop {
        let sim = start_sim().await;
        let db = TestDb::new(backend).await;
        let options = GatewayOptions {
            env: vec![
                ("PIXGW_ALLOW_PRIVATE_WEBHOOK_URLS".into(), "true".into()),
                ("PIXGW_WORKER_POLL".into(), "100ms".into()),
                // Notifications alone move charges here.
                ("PIXGW_RECONCILE_SCHEDULE".into(), "1h".into()),
            ],
            ..Default::default()
        };
        let gw = Gateway::start(&db, &sim, &["efi"], options).await;
        let owner = Visitor::sign_up(&gw, BUSINESS, OWNER).await;
        // The operator finds the dashboard's merchant and makes it a key.
        let list = cli(&db, &[], &["merchant", "list"]);
        let merchant_id = list
            .lines()
            .find(|l| l.ends_with(BUSINESS))
            .and_then(|l| l.split_whitespace().next())
            .unwrap_or_else(|| panic!("{BUSINESS} is not in `pixgw merchant list`:\n{list}"))
            .to_owned();
        let key = cli(
            &db,
            &[],
            &["key", "create", "--merchant", &merchant_id, "--env", "test"],
        );
        gw.connect(&sim, &key, "efi", &[]).await;
        Shop {
            sim,
            db,
            gw,
            owner,
            merchant_id,
            key,
        }
    }

    /// A charge through the API; its JSON.
    pub async fn charge(&self, amount: i64, description: &str) -> Value {
        let (status, charge) = self
            .gw
            .post(
                "/v1/charges",
                &self.key,
                json!({"amount": amount, "provider": "efi", "description": description,
                       "metadata": {"pedido": description}}),
            )
            .await;
        assert_eq!(status, 201, "{charge}");
        charge
    }

    /// Pays a charge at the simulator and waits for the gateway to see it paid.
    pub async fn pay(&self, charge: &Value) -> Value {
        sim_control(
            &self.sim,
            "/_sim/pay",
            Some(json!({"provider": "efi", "reference": charge["reference"]})),
        )
        .await;
        let path = format!("/v1/charges/{}", charge["id"].as_str().unwrap());
        poll(
            Duration::from_secs(20),
            "the charge to be paid",
            async || {
                let (_, now) = self.gw.get(&path, &self.key).await;
                (now["status"] == "paid").then_some(now)
            },
        )
        .await
    }
}

/// The charges listed on a page, in order, with their badge's class.
fn listed(answer: &Answer) -> Vec<(String, String)> {
    let html = answer.assert_ok();
    html.split("<tr data-charge=\"")
        .skip(1)
        .map(|row| {
            let id = row[..row.find('"').unwrap()].to_owned();
            let badge = row.find("class=\"badge ").map(|at| {
                let rest = &row[at + 13..];
                rest[..rest.find('"').unwrap()].to_owned()
            });
            (id, badge.unwrap())
        })
        .collect()
}

fn ids(answer: &Answer) -> Vec<String> {
    listed(answer).into_iter().map(|(id, _)| id).collect()
}

/// Undoes the template's HTML escaping (askama writes `&#34; &#38; &#39; &#60; &#62;`).
pub fn unescape(text: &str) -> String {
    text.replace("&#34;", "\"")
        .replace("&#39;", "'")
        .replace("&#60;", "<")
        .replace("&#62;", ">")
        .replace("&#38;", "&")
}

/// The text inside the element with `id="{id}"`, up to its first inner tag.
pub fn element_text(html: &str, id: &str) -> Option<String> {
    let at = html.find(&format!("id=\"{id}\""))?;
    let start = at + html[at..].find('>')? + 1;
    let end = start + html[start..].find('<')?;
    Some(unescape(&html[start..end]))
}

/// The `href` of the element with `id="{id}"`.
pub fn link(html: &str, id: &str) -> Option<String> {
    let at = html.find(&format!("id=\"{id}\""))?;
    let tag_start = html[..at].rfind('<')?;
    let tag = &html[tag_start..at + html[at..].find('>')?];
    let href = tag.find("href=\"")? + 6;
    Some(unescape(&tag[href..href + tag[href..].find('"')?]))
}

/// The São Paulo calendar day of an RFC 3339 time, as `AAAA-MM-DD`, shifted by `days`.
pub fn sao_paulo_day(rfc3339: &str, days: i64) -> String {
    let t = time::OffsetDateTime::parse(rfc3339, &time::format_description::well_known::Rfc3339)
        .unwrap()
        .to_offset(time::UtcOffset::from_hms(-3, 0, 0).unwrap())
        + time::Duration::days(days);
    let d = t.date();
    format!("{}-{:02}-{:02}", d.year(), u8::from(d.month()), d.day())
}

/// Follows "older" from `path` to the last page; the ids of every page.
async fn every_page(visitor: &Visitor, path: &str) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut next = Some(path.to_owned());
    while let Some(path) = next {
        let answer = visitor.get(&path).await;
        pages.push(ids(&answer));
        next = link(&answer.body, "older");
        if next.is_some() {
            assert!(pages.len() < 10, "pagination never ends");
        }
    }
    pages
}

both_backends!(list_is_newest_first_and_filters_and_pages_exactly);
async fn list_is_newest_first_and_filters_and_pages_exactly(backend: Backend) {
    let shop = Shop::open(backend).await;
    let first = shop.charge(1000, "Pedido 1").await;
    let second = shop.charge(2000, "Pedido 2").await;
    let third = shop.charge(3000, "Pedido 3").await;
    let id = |c: &Value| c["id"].as_str().unwrap().to_owned();
    shop.pay(&second).await;
    let (status, canceled) = shop
        .gw
        .post(
            &format!("/v1/charges/{}/cancel", id(&first)),
            &shop.key,
            json!({}),
        )
        .await;
    assert_eq!(status, 200, "{canceled}");

    let all = shop.owner.get("/dashboard/charges").await;
    assert_eq!(
        listed(&all),
        vec![
            (id(&third), "pending".to_owned()),
            (id(&second), "paid".to_owned()),
            (id(&first), "canceled".to_owned()),
        ]
    );
    let text = all.text();
    assert!(
        text.contains("R$30.00 Awaiting payment Efí Bank Pedido 3"),
        "{text}"
    );
    assert!(text.contains("R$20.00 Paid Efí Bank Pedido 2"), "{text}");
    assert!(
        text.contains("R$10.00 Canceled Efí Bank Pedido 1"),
        "{text}"
    );
    assert!(
        all.body
            .contains(&format!("href=\"/dashboard/charges/{}\"", id(&third)))
    );
    assert_eq!(link(&all.body, "older"), None);

    // Each filter narrows to exactly what it names.
    let today = sao_paulo_day(second["created_at"].as_str().unwrap(), 0);
    let tomorrow = sao_paulo_day(second["created_at"].as_str().unwrap(), 1);
    let yesterday = sao_paulo_day(second["created_at"].as_str().unwrap(), -1);
    let cases: Vec<(String, Vec<String>)> = vec![
        ("status=paid".into(), vec![id(&second)]),
        ("status=pending".into(), vec![id(&third)]),
        ("status=canceled".into(), vec![id(&first)]),
        ("status=expired".into(), vec![]),
        (
            "provider=efi".into(),
            vec![id(&third), id(&second), id(&first)],
        ),
        ("provider=stripe".into(), vec![]),
        (
            format!("from={today}&to={today}"),
            vec![id(&third), id(&second), id(&first)],
        ),
        (format!("from={tomorrow}"), vec![]),
        (format!("to={yesterday}"), vec![]),
        (
            format!("status=paid&provider=efi&from={today}"),
            vec![id(&second)],
        ),
    ];
    for (query, expected) in cases {
        let answer = shop.owner.get(&format!("/dashboard/charges?{query}")).await;
        assert_eq!(ids(&answer), expected, "{query}");
        if expected.is_empty() {
            assert!(answer.body.contains("id=\"charges-empty\""), "{query}");
            assert!(answer.text().contains("No charges match these filters."));
        }
    }
    // What was chosen stays chosen.
    let paid = shop.owner.get("/dashboard/charges?status=paid").await;
    assert!(paid.body.contains("<option value=\"paid\" selected>"));

    // A date that is not AAAA-MM-DD, or a range backwards, says so and lists nothing.
    for (query, message) in [
        (
            "from=22/11/2026",
            "Invalid date: use YYYY-MM-DD, for example 2026-11-22.",
        ),
        (
            &format!("from={tomorrow}&to={today}") as &str,
            "The start date must be on or before the end date.",
        ),
        ("status=creating", "Choose one of the statuses in the list."),
    ] {
        let answer = shop.owner.get(&format!("/dashboard/charges?{query}")).await;
        assert_eq!(answer.status, 422, "{query}");
        assert_eq!(
            element_text(&answer.body, "filter-error").as_deref(),
            Some(message)
        );
        assert!(
            !answer.body.contains("data-charge="),
            "{query}: nothing listed"
        );
    }
    let typed = shop
        .owner
        .get("/dashboard/charges?from=22%2F11%2F2026")
        .await;
    assert_eq!(
        typed.input_value("from").as_deref(),
        Some("22/11/2026"),
        "what was typed is kept"
    );

    // One a page: "older" walks through every charge, then stops; filters stay applied.
    assert_eq!(
        every_page(&shop.owner, "/dashboard/charges?limit=1").await,
        vec![vec![id(&third)], vec![id(&second)], vec![id(&first)]]
    );
    assert_eq!(
        every_page(&shop.owner, "/dashboard/charges?limit=2").await,
        vec![vec![id(&third), id(&second)], vec![id(&first)]]
    );
    assert_eq!(
        every_page(&shop.owner, "/dashboard/charges?limit=1&status=paid").await,
        vec![vec![id(&second)]]
    );
    let page_two = shop
        .owner
        .get(&format!("/dashboard/charges?limit=1&before={}", id(&third)))
        .await;
    assert_eq!(
        link(&page_two.body, "newest").as_deref(),
        Some("/dashboard/charges?limit=1")
    );
    assert_eq!(
        shop.owner.get("/dashboard/charges?limit=0").await.status,
        400
    );

    // The live environment has none of the test charges.
    shop.owner.get("/dashboard/charges").await.assert_ok();
    shop.owner
        .post(
            "/dashboard/environment",
            &[("environment", "live"), ("next", "/dashboard/charges")],
        )
        .await
        .assert_redirect("/dashboard/charges");
    let live = shop.owner.get("/dashboard/charges").await;
    assert!(ids(&live).is_empty());
    assert!(live.text().contains("No charges in this environment yet."));
    assert_eq!(
        shop.owner
            .get(&format!("/dashboard/charges/{}", id(&second)))
            .await
            .status,
        404
    );
}

/// A merchant's endpoint that answers 200 to everything.
async fn receiver() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hooks", listener.local_addr().unwrap());
    let app = axum::Router::new().fallback(|| async { "ok" });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

both_backends!(detail_shows_the_pix_code_tries_and_events_and_cancels);
async fn detail_shows_the_pix_code_tries_and_events_and_cancels(backend: Backend) {
    let shop = Shop::open(backend).await;
    let (status, endpoint) = shop
        .gw
        .post(
            "/v1/webhook_endpoints",
            &shop.key,
            json!({"url": receiver().await}),
        )
        .await;
    assert_eq!(status, 201, "{endpoint}");
    let endpoint_id = endpoint["id"].as_str().unwrap();
    let pending = shop.charge(1990, "Pedido 42").await;
    let paid = shop.charge(5000, "Pedido 43").await;
    let paid = shop.pay(&paid).await;
    let path = |c: &Value| format!("/dashboard/charges/{}", c["id"].as_str().unwrap());

    // Pending: the QR code and the copy-and-paste code the API answered, and a cancel button.
    let page = shop.owner.get(&path(&pending)).await;
    let html = page.assert_ok();
    assert_eq!(
        element_text(html, "copy-paste").as_deref(),
        pending["pix"]["copy_paste"].as_str()
    );
    let png = pending["pix"]["qr_code_base64"].as_str().unwrap();
    assert!(
        unescape(html).contains(&format!(
            "src=\"data:image/png;base64,{png}\" alt=\"Pix QR code for R$19.90\""
        )),
        "the QR image"
    );
    assert!(html.contains("data-copy=\"#copy-paste\""));
    assert_eq!(
        element_text(html, "charge-status").as_deref(),
        Some("Awaiting payment")
    );
    assert_eq!(
        element_text(html, "charge-reference").as_deref(),
        pending["reference"].as_str()
    );
    assert!(html.contains("data-attempt=\"efi:created\""));
    assert!(html.contains("id=\"cancel-charge\""));
    // Its creation is an event no endpoint here subscribes to.
    assert!(html.contains("<li data-event=\"charge.created\">"));
    let text = page.text();
    assert!(text.contains("Metadata pedido Pedido 42"), "{text}");
    assert!(text.contains("Description Pedido 42"), "{text}");

    // Paid: no code to pay any more, the end-to-end id, the charge.paid event delivered.
    let page = poll(
        Duration::from_secs(20),
        "the event's delivery",
        async || {
            let page = shop.owner.get(&path(&paid)).await;
            page.body
                .contains("data-delivery=\"delivered\"")
                .then_some(page)
        },
    )
    .await;
    let html = &page.body;
    assert_eq!(element_text(html, "charge-status").as_deref(), Some("Paid"));
    assert!(!html.contains("id=\"copy-paste\""));
    assert!(!html.contains("id=\"cancel-charge\""));
    assert_eq!(
        element_text(html, "end-to-end-id").as_deref(),
        paid["end_to_end_id"].as_str()
    );
    assert!(html.contains("<li data-event=\"charge.paid\">"));
    assert!(html.contains(&format!("<code>{endpoint_id}</code>")));
    assert!(page.text().contains("Delivered"), "{}", page.text());

    // The PSP refuses to cancel: its own words on the page, the charge as it was.
    sim_control(
        &shop.sim,
        "/_sim/faults",
        Some(json!({"provider": "efi", "fail_next": {
            "count": 1, "status": 400, "method": "PATCH", "path_contains": "/v2/cob",
            "body": "{\"nome\":\"cobranca_nao_removivel\",\"mensagem\":\"A cobrança está em análise e não pode ser removida\"}"
        }})),
    )
    .await;
    let refused = shop
        .owner
        .post(&format!("{}/cancel", path(&pending)), &[])
        .await;
    // In the cashier's words (`web/refusals`), with the API's status: what happened, the
    // PSP's own words, what to do.
    assert_eq!(refused.status, 502, "{}", refused.text());
    assert_eq!(
        element_text(&refused.body, "cancel-error").as_deref(),
        Some("Efí Bank did not cancel the charge.")
    );
    assert!(
        refused.text().contains(
            "Efí Bank did not cancel the charge. The PSP said: A cobrança está em análise e não \
             pode ser removida Efí Bank's answer says why: fix what it names and try again."
        ),
        "{}",
        refused.text()
    );
    assert_eq!(
        element_text(&refused.body, "psp-message").as_deref(),
        Some("A cobrança está em análise e não pode ser removida"),
        "the PSP's words, verbatim"
    );
    assert_eq!(
        element_text(&refused.body, "charge-status").as_deref(),
        Some("Awaiting payment")
    );

    // Cancel from the page: the same service as the API, recorded with the person.
    let done = shop
        .owner
        .post(&format!("{}/cancel", path(&pending)), &[])
        .await;
    done.assert_redirect(&path(&pending));
    let page = shop.owner.get(&path(&pending)).await;
    assert_eq!(
        element_text(&page.body, "charge-status").as_deref(),
        Some("Canceled")
    );
    assert!(page.text().contains("Charge canceled."));
    assert!(!page.body.contains("id=\"copy-paste\""));
    assert!(page.body.contains("<li data-event=\"charge.canceled\">"));
    let (_, api) = shop
        .gw
        .get(
            &format!("/v1/charges/{}", pending["id"].as_str().unwrap()),
            &shop.key,
        )
        .await;
    assert_eq!(api["status"], "canceled");
    let audit = shop.owner.get("/dashboard/audit?kind=charge").await;
    let rows = super::audit::entries(&audit);
    assert_eq!(
        rows,
        vec![("charge.cancel".to_owned(), "user".to_owned())],
        "{}",
        audit.text()
    );
    assert!(
        audit.text().contains(&format!(
            "{OWNER} Canceled a charge Charge {} 1990 centavos at efi canceled 127.0.0.1",
            pending["id"].as_str().unwrap()
        )),
        "{}",
        audit.text()
    );

    // Canceling again: nothing to cancel, said plainly.
    let again = shop
        .owner
        .post(&format!("{}/cancel", path(&pending)), &[])
        .await;
    assert_eq!(again.status, 409);
    assert_eq!(
        element_text(&again.body, "cancel-error").as_deref(),
        Some("The charge can no longer be canceled: it is no longer awaiting payment.")
    );

    // Another merchant's charge does not exist here, to look at or to cancel.
    let other = create_merchant(&shop.db, "Outra Loja");
    shop.gw
        .connect(&shop.sim, &other.test_key, "efi", &[])
        .await;
    let (_, theirs) = shop
        .gw
        .post(
            "/v1/charges",
            &other.test_key,
            json!({"amount": 700, "provider": "efi"}),
        )
        .await;
    assert_eq!(shop.owner.get(&path(&theirs)).await.status, 404);
    shop.owner.get("/dashboard/charges").await.assert_ok();
    assert_eq!(
        shop.owner
            .post(&format!("{}/cancel", path(&theirs)), &[])
            .await
            .status,
        404
    );
    let (_, still) = shop
        .gw
        .get(
            &format!("/v1/charges/{}", theirs["id"].as_str().unwrap()),
            &other.test_key,
        )
        .await;
    assert_eq!(still["status"], "pending");
    assert!(
        !ids(&shop.owner.get("/dashboard/charges").await)
            .contains(&theirs["id"].as_str().unwrap().to_owned())
    );
}

/// The gateway's charge service, in this process, on the test's database: what the cashier
/// screen will call to make a sale.
async fn service(shop: &Shop) -> (Arc<pixgw::app::App>, crate::common::TestRuntime) {
    let store = pixgw::store::Store::connect(&shop.db.url).await.unwrap();
    let (vault, _) =
        pixgw::vault::Vault::from_env_or_dev_file(None, None, &shop.db.dir.path().join("data"))
            .unwrap();
    let runtime =
        crate::common::runtime_with(&["efi"], pixgw::runtime::Limits::default(), Some(&shop.sim))
            .await;
    let app = pixgw::app::App::new(
        store,
        vault,
        runtime.runtime.clone(),
        pixgw::app::AppConfig {
            base_url: shop.gw.url.clone(),
            delivery: Default::default(),
            rate_limit: 0,
            checkout_rate_limit: 0,
            auth_failure_limit: 0,
            breaker: Default::default(),
            reconciler: Default::default(),
            charges: Default::default(),
            sessions: Default::default(),
            live_streams_per_merchant: pixgw::live::DEFAULT_STREAMS_PER_MERCHANT,
            evidence: pixgw::evidence::PhotoStore::in_memory(),
        },
    );
    // The runtime's plugin directory lives as long as the caller keeps it.
    (app, runtime)
}

/// A sale made by a dashboard user through the charge service.
async fn sale(app: &pixgw::app::App, merchant_id: &str, user: (&str, &str), amount: i64) -> String {
    use pixgw::charges::{Caller, ChargeInput, ProviderChoice};
    let caller = Caller {
        merchant_id: merchant_id.to_owned(),
        environment: pixgw::domain::Environment::Test,
        actor: pixgw::audit::Actor::User {
            id: user.0.to_owned(),
            email: user.1.to_owned(),
        },
        ip: None,
    };
    let input = ChargeInput {
        amount: pixgw::domain::Amount::from_centavos(amount).unwrap(),
        provider: ProviderChoice::One("efi".into()),
        description: Some(
            pixgw::domain::Line::parse("description", "Venda no caixa", 140).unwrap(),
        ),
        payer: Default::default(),
        expires_in: 3600,
        metadata: Default::default(),
        payment_link: None,
    };
    let charge = app
        .charges
        .create_charge(
            &caller,
            &input,
            pixgw::charges::Placement::New(&pixgw::domain::Reference::generate()),
            "req_test",
            None,
        )
        .await
        .unwrap();
    assert_eq!(charge.operator_id.as_deref(), Some(user.0));
    charge.id
}

both_backends!(a_cashier_sees_only_the_sales_they_made);
async fn a_cashier_sees_only_the_sales_they_made(backend: Backend) {
    let shop = Shop::open(backend).await;
    let cashier = join_as(&shop.gw, &shop.owner, "caixa@loja.com.br", "cashier").await;
    let store = pixgw::store::Store::connect(&shop.db.url).await.unwrap();
    let cashier_id = store
        .user_by_email("caixa@loja.com.br")
        .await
        .unwrap()
        .unwrap()
        .id;
    let owner_id = store.user_by_email(OWNER).await.unwrap().unwrap().id;

    let by_api = shop.charge(1500, "Pedido pela API").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (app, _runtime) = service(&shop).await;
    let by_cashier = sale(
        &app,
        &shop.merchant_id,
        (&cashier_id, "caixa@loja.com.br"),
        2500,
    )
    .await;
    let by_owner = sale(&app, &shop.merchant_id, (&owner_id, OWNER), 3500).await;
    let (_, api) = shop
        .gw
        .get(&format!("/v1/charges/{by_api}"), &shop.key)
        .await;
    assert_eq!(
        api["status"], "pending",
        "the API's charge has no operator: {api}"
    );

    // The cashier: their own sale only, said so.
    let list = cashier.get("/dashboard/charges").await;
    assert_eq!(ids(&list), vec![by_cashier.clone()]);
    assert!(list.body.contains("id=\"own-only\""));
    assert_eq!(
        ids(&cashier
            .get("/dashboard/charges?status=pending&provider=efi")
            .await),
        vec![by_cashier.clone()]
    );
    cashier
        .get(&format!("/dashboard/charges/{by_cashier}"))
        .await
        .assert_ok();
    for other in [&by_api, &by_owner] {
        assert_eq!(
            cashier
                .get(&format!("/dashboard/charges/{other}"))
                .await
                .status,
            404
        );
        cashier.get("/dashboard/charges").await.assert_ok();
        assert_eq!(
            cashier
                .post(&format!("/dashboard/charges/{other}/cancel"), &[])
                .await
                .status,
            404
        );
    }
    // Their own sale they may cancel.
    cashier
        .get(&format!("/dashboard/charges/{by_cashier}"))
        .await
        .assert_ok();
    cashier
        .post(&format!("/dashboard/charges/{by_cashier}/cancel"), &[])
        .await
        .assert_redirect(&format!("/dashboard/charges/{by_cashier}"));

    // The owner: everyone's.
    let all = shop.owner.get("/dashboard/charges").await;
    assert_eq!(ids(&all), vec![by_owner, by_cashier, by_api]);
    assert!(!all.body.contains("id=\"own-only\""));
}
