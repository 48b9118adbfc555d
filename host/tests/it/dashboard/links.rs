//! Payment links over HTTP, on both backends: the API (`/v1/payment_links`: create, list with
//! pagination, read, update, deactivate, every refusal naming its parameter, the OpenAPI schemas
//! matching what is accepted and answered), the dashboard page (create, refusals that keep what
//! was typed, edit, deactivate and activate, who may see and change what), and the audit log of
//! every change with its actor.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};

use super::accounts::join_as;
use crate::both_backends;
use crate::common::gateway::{Backend, Gateway, GatewayOptions, TestDb, cli, create_merchant};
use crate::common::{poll, sim_control, start_sim};
use crate::dashboard::support::{Answer, Shop, Visitor};

/// A merchant signed up in the dashboard with a test key and the simulator's PSPs connected.
pub struct Fixture {
    pub db: TestDb,
    pub sim: psp_sim::Sim,
    pub gw: Gateway,
    pub shop: Shop,
}

impl Fixture {
    /// `adapters` are loaded and connected for the shop (efi always is).
    pub async fn open(backend: Backend, adapters: &[&str], options: GatewayOptions) -> Fixture {
        let db = TestDb::new(backend).await;
        let sim = start_sim().await;
        let mut loaded = vec!["efi"];
        loaded.extend(adapters.iter().copied().filter(|a| *a != "efi"));
        let gw = Gateway::start(&db, &sim, &loaded, options).await;
        let shop = Shop::open(&db, &gw, &sim, "Loja Azul", "dono@lojaazul.com.br").await;
        for adapter in &loaded[1..] {
            gw.connect(&sim, &shop.test_key, adapter, &[]).await;
        }
        Fixture { db, sim, gw, shop }
    }

    /// Creates a link through the API; asserts the 201.
    pub async fn link(&self, body: Value) -> Value {
        let (status, link) = self
            .gw
            .post("/v1/payment_links", &self.shop.test_key, body)
            .await;
        assert_eq!(status, 201, "{link}");
        link
    }

    /// The link's page path, `/p/<slug>`.
    pub fn path(link: &Value) -> String {
        format!("/p/{}", link["slug"].as_str().unwrap())
    }

    /// The merchant's charges, newest first (the API's view).
    pub async fn charges(&self) -> Vec<Value> {
        let (status, list) = self.gw.get("/v1/charges", &self.shop.test_key).await;
        assert_eq!(status, 200, "{list}");
        list["data"].as_array().unwrap().clone()
    }

    pub async fn read(&self, link: &Value) -> Value {
        let (status, link) = self
            .gw
            .get(
                &format!("/v1/payment_links/{}", link["id"].as_str().unwrap()),
                &self.shop.test_key,
            )
            .await;
        assert_eq!(status, 200, "{link}");
        link
    }

    /// Pays a charge at the simulator and waits for the gateway to see it paid.
    pub async fn pay(&self, charge: &Value) -> Value {
        sim_control(
            &self.sim,
            "/_sim/pay",
            Some(json!({"provider": charge["provider"], "reference": charge["reference"]})),
        )
        .await;
        let path = format!("/v1/charges/{}", charge["id"].as_str().unwrap());
        poll(
            Duration::from_secs(20),
            "the charge to be paid",
            async || {
                let (_, charge) = self.gw.get(&path, &self.shop.test_key).await;
                (charge["status"] == "paid").then_some(charge)
            },
        )
        .await
    }

    /// The merchant's audit entries about payment links, oldest first: (action, actor kind,
    /// target id).
    pub async fn audit(&self) -> Vec<(String, String, String)> {
        let store = pixgw::store::Store::connect(&self.db.url).await.unwrap();
        let mut entries = store
            .audit_entries(
                &self.shop.merchant_id,
                &pixgw::store::audit::AuditFilter {
                    action: Some("payment_link".into()),
                    limit: 100,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        entries.reverse();
        entries
            .into_iter()
            .map(|e| (e.action, e.actor_kind, e.target_id.unwrap_or_default()))
            .collect()
    }
}

fn keys(value: &Value) -> BTreeSet<String> {
    value.as_object().unwrap().keys().cloned().collect()
}

/// The property names of a schema of the OpenAPI document.
fn schema_properties(doc: &Value, schema: &str) -> BTreeSet<String> {
    keys(&doc["components"]["schemas"][schema]["properties"])
}

both_backends!(the_api_creates_lists_reads_updates_and_deactivates_links);
async fn the_api_creates_lists_reads_updates_and_deactivates_links(backend: Backend) {
    let f = Fixture::open(backend, &[], GatewayOptions::default()).await;
    let key = &f.shop.test_key;

    // A fixed-price link with a custom slug, a limit and a window: every field as answered.
    let shirt = f
        .link(json!({
            "name": "Camiseta azul", "amount": 5990, "slug": "Camiseta-Azul", "usage_limit": 10,
            "valid_from": "2020-01-01T00:00:00Z", "valid_until": "2099-01-01T03:00:00Z",
            "provider": "efi",
        }))
        .await;
    let id = shirt["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("plink_") && id.len() == 28, "{id}");
    let created_at = shirt["created_at"].clone();
    assert_eq!(
        shirt,
        json!({
            "id": id, "object": "payment_link", "name": "Camiseta azul",
            "slug": "camiseta-azul", "url": format!("{}/p/camiseta-azul", f.gw.url),
            "amount": 5990, "min_amount": null, "max_amount": null, "usage_limit": 10,
            "paid_count": 0, "paid_amount": 0,
            "valid_from": "2020-01-01T00:00:00Z", "valid_until": "2099-01-01T03:00:00Z",
            "provider": "efi", "active": true, "status": "open", "livemode": false,
            "created_at": created_at, "updated_at": created_at,
        })
    );

    // An open amount with a random slug: 20 lower-case letters and digits, the default PSP.
    let gift = f.link(json!({"name": "Doação", "min_amount": 500})).await;
    let slug = gift["slug"].as_str().unwrap();
    assert_eq!(slug.len(), 20, "{slug}");
    assert!(
        slug.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()),
        "{slug}"
    );
    assert_eq!(
        (
            &gift["amount"],
            &gift["min_amount"],
            &gift["max_amount"],
            &gift["provider"]
        ),
        (&json!(null), &json!(500), &json!(null), &json!("random"))
    );
    let later = f
        .link(json!({"name": "Ingresso", "amount": 3000, "active": false}))
        .await;
    assert_eq!(
        (&later["active"], &later["status"]),
        (&json!(false), &json!("inactive"))
    );

    // Every refusal names its parameter: 400 off the documented shape, 422 for a rule across
    // fields or an unknown provider.
    let refusals = [
        (json!({"amount": 100}), 400, "name", "parameter_missing"),
        (
            json!({"name": "x", "amount": 100, "min_amount": 50}),
            422,
            "amount",
            "parameter_invalid",
        ),
        (
            json!({"name": "x", "min_amount": 900, "max_amount": 100}),
            422,
            "min_amount",
            "parameter_invalid",
        ),
        (
            json!({"name": "x", "amount": 0}),
            400,
            "amount",
            "parameter_invalid",
        ),
        (
            json!({"name": "x", "max_amount": 1_000_000_001}),
            400,
            "max_amount",
            "parameter_invalid",
        ),
        (
            json!({"name": "x", "usage_limit": 0}),
            400,
            "usage_limit",
            "parameter_invalid",
        ),
        (
            json!({"name": "x", "valid_from": "2030-01-02T00:00:00Z", "valid_until": "2030-01-01T00:00:00Z"}),
            422,
            "valid_until",
            "parameter_invalid",
        ),
        (
            json!({"name": "x", "valid_until": "amanhã"}),
            400,
            "valid_until",
            "parameter_invalid",
        ),
        (
            json!({"name": "x", "slug": "-bad"}),
            400,
            "slug",
            "parameter_invalid",
        ),
        (
            json!({"name": "x", "slug": "camiseta-azul"}),
            409,
            "slug",
            "slug_taken",
        ),
        (
            json!({"name": "x", "provider": "nubank"}),
            422,
            "provider",
            "provider_unknown",
        ),
        (
            json!({"name": "x", "colour": "blue"}),
            400,
            "colour",
            "parameter_unknown",
        ),
        (json!({"name": "a\nb"}), 400, "name", "parameter_invalid"),
    ];
    for (body, status, param, code) in refusals {
        let (got, error) = f.gw.post("/v1/payment_links", key, body.clone()).await;
        assert_eq!(
            (
                got,
                error["error"]["param"].as_str(),
                error["error"]["code"].as_str()
            ),
            (status, Some(param), Some(code)),
            "{body}: {error}"
        );
    }

    // Newest first, a page at a time.
    let (_, page) = f.gw.get("/v1/payment_links?limit=2", key).await;
    let ids = |page: &Value| -> Vec<String> {
        page["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(page["object"], "list");
    assert_eq!(
        ids(&page),
        [later["id"].as_str().unwrap(), gift["id"].as_str().unwrap()]
    );
    assert_eq!(page["has_more"], true);
    let (_, next) =
        f.gw.get(
            &format!(
                "/v1/payment_links?limit=2&starting_after={}",
                gift["id"].as_str().unwrap()
            ),
            key,
        )
        .await;
    assert_eq!(ids(&next), [id.as_str()]);
    assert_eq!(next["has_more"], false);
    let (status, error) = f.gw.get("/v1/payment_links?limit=0", key).await;
    assert_eq!((status, &error["error"]["param"]), (400, &json!("limit")));

    // Updates: an open amount with a maximum, no limit, a new name and slug.
    let path = format!("/v1/payment_links/{id}");
    let (status, changed) = f
        .gw
        .send(f.gw.request(reqwest::Method::PATCH, &path, Some(key)).json(&json!({
            "name": "Camiseta verde", "amount": null, "max_amount": 8000, "usage_limit": null,
            "valid_from": null, "slug": "camiseta-verde",
        })))
        .await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(
        (
            &changed["name"],
            &changed["amount"],
            &changed["max_amount"],
            &changed["usage_limit"],
            &changed["valid_from"],
            &changed["valid_until"],
            &changed["slug"]
        ),
        (
            &json!("Camiseta verde"),
            &json!(null),
            &json!(8000),
            &json!(null),
            &json!(null),
            &json!("2099-01-01T03:00:00Z"),
            &json!("camiseta-verde")
        )
    );
    // A fixed amount again drops the bounds.
    let (_, fixed) =
        f.gw.send(
            f.gw.request(reqwest::Method::PATCH, &path, Some(key))
                .json(&json!({"amount": 4990})),
        )
        .await;
    assert_eq!(
        (&fixed["amount"], &fixed["max_amount"]),
        (&json!(4990), &json!(null))
    );
    // A range on a fixed-amount link breaks a rule across fields (422); a taken slug is a
    // conflict (409); a null name and a string for a boolean are off the document (400).
    for (body, wanted, param) in [
        (json!({"min_amount": 100}), 422, "amount"),
        (json!({"slug": gift["slug"]}), 409, "slug"),
        (json!({"name": null}), 400, "name"),
        (json!({"active": "no"}), 400, "active"),
    ] {
        let (status, error) =
            f.gw.send(
                f.gw.request(reqwest::Method::PATCH, &path, Some(key))
                    .json(&body),
            )
            .await;
        assert_eq!(status, wanted, "{body}: {error}");
        assert_eq!(error["error"]["param"], param, "{body}: {error}");
    }
    assert_eq!(
        f.read(&fixed).await,
        fixed,
        "refused updates change nothing"
    );

    // Deactivate, then activate again with PATCH.
    let (status, off) =
        f.gw.post(&format!("{path}/deactivate"), key, json!({}))
            .await;
    assert_eq!(
        (status, &off["active"], &off["status"]),
        (200, &json!(false), &json!("inactive"))
    );
    let (_, on) =
        f.gw.send(
            f.gw.request(reqwest::Method::PATCH, &path, Some(key))
                .json(&json!({"active": true})),
        )
        .await;
    assert_eq!(
        (&on["active"], &on["status"]),
        (&json!(true), &json!("open"))
    );

    // Another merchant, or the live environment, sees none of it.
    let other = create_merchant(&f.db, "Outra Loja");
    for key in [&other.test_key, &other.live_key] {
        let (status, error) = f.gw.get(&path, key).await;
        assert_eq!(
            (status, &error["error"]["code"]),
            (404, &json!("resource_missing"))
        );
        let (_, list) = f.gw.get("/v1/payment_links", key).await;
        assert_eq!(list["data"], json!([]));
    }
    let live_key = cli(
        &f.db,
        &[],
        &[
            "key",
            "create",
            "--merchant",
            &f.shop.merchant_id,
            "--env",
            "live",
        ],
    );
    let (status, _) = f.gw.get(&path, &live_key).await;
    assert_eq!(status, 404);

    // Every change is in the audit log, by the API key.
    let audit = f.audit().await;
    let api = |action: &str, target: &Value| {
        (
            action.to_owned(),
            "api_key".to_owned(),
            target["id"].as_str().unwrap().to_owned(),
        )
    };
    assert_eq!(
        audit,
        [
            api("payment_link.create", &shirt),
            api("payment_link.create", &gift),
            api("payment_link.create", &later),
            api("payment_link.update", &shirt),
            api("payment_link.update", &shirt),
            api("payment_link.deactivate", &shirt),
            api("payment_link.activate", &shirt),
        ]
    );
}

both_backends!(the_openapi_schemas_are_what_the_api_accepts_and_answers);
async fn the_openapi_schemas_are_what_the_api_accepts_and_answers(backend: Backend) {
    let f = Fixture::open(backend, &[], GatewayOptions::default()).await;
    let key = &f.shop.test_key;
    let (status, doc) =
        f.gw.send(f.gw.request(reqwest::Method::GET, "/v1/openapi.json", None))
            .await;
    assert_eq!(status, 200);
    for (path, method) in [
        ("/v1/payment_links", "post"),
        ("/v1/payment_links", "get"),
        ("/v1/payment_links/{id}", "get"),
        ("/v1/payment_links/{id}", "patch"),
        ("/v1/payment_links/{id}/deactivate", "post"),
    ] {
        assert!(
            doc["paths"][path].get(method).is_some(),
            "{method} {path} missing"
        );
    }
    // Every documented request field is accepted together…
    let create = json!({
        "name": "Tudo", "min_amount": 100, "max_amount": 200, "usage_limit": 3,
        "valid_from": "2020-01-01T00:00:00Z", "valid_until": "2099-01-01T00:00:00Z",
        "provider": "random", "slug": "tudo", "active": true,
    });
    let mut documented = schema_properties(&doc, "CreatePaymentLinkRequest");
    let mut sent = keys(&create);
    sent.insert("amount".into()); // exclusive with min/max, accepted alone (above)
    assert_eq!(documented, sent);
    let link = f.link(create).await;
    // …and the answer has exactly the documented fields.
    assert_eq!(keys(&link), schema_properties(&doc, "PaymentLinkObject"));
    let update = json!({
        "name": "Tudo 2", "amount": null, "min_amount": 150, "max_amount": null, "usage_limit": 4,
        "valid_from": null, "valid_until": null, "provider": "efi", "slug": "tudo-2", "active": false,
    });
    documented = schema_properties(&doc, "UpdatePaymentLinkRequest");
    sent = keys(&update);
    assert_eq!(documented, sent);
    let (status, updated) =
        f.gw.send(
            f.gw.request(
                reqwest::Method::PATCH,
                &format!("/v1/payment_links/{}", link["id"].as_str().unwrap()),
                Some(key),
            )
            .json(&update),
        )
        .await;
    assert_eq!(status, 200, "{updated}");
    assert_eq!(keys(&updated), schema_properties(&doc, "PaymentLinkObject"));
    let (_, list) = f.gw.get("/v1/payment_links", key).await;
    assert_eq!(keys(&list), schema_properties(&doc, "PaymentLinkList"));
    // Charges name their link: the field is documented on the charge.
    assert!(schema_properties(&doc, "ChargeObject").contains("payment_link"));
    assert_eq!(
        schema_properties(&doc, "ChargePaymentLink"),
        ["id", "name"].map(String::from).into()
    );
}

/// The `value` of the field the page shows for `name`, or the text of the `<select>`'s chosen
/// option.
fn field(answer: &Answer, name: &str) -> String {
    answer.input_value(name).unwrap_or_default()
}

/// The link id from a `/dashboard/links/plink_…` location.
fn link_id(location: &str) -> String {
    location.rsplit('/').next().unwrap().to_owned()
}

both_backends!(the_dashboard_creates_edits_and_deactivates_links);
async fn the_dashboard_creates_edits_and_deactivates_links(backend: Backend) {
    let f = Fixture::open(backend, &[], GatewayOptions::default()).await;
    let owner = &f.shop.owner;
    let page = owner.get("/dashboard/links").await;
    assert!(
        page.text()
            .contains("No payment links in this environment yet."),
        "{}",
        page.text()
    );
    assert!(
        page.body
            .contains("href=\"/dashboard/links\" aria-current=\"page\"")
    );

    // Refused: what was typed stays, the field says why.
    let form = |name: &'static str, amount: &'static str, slug: &'static str| {
        vec![
            ("name", name),
            ("amount_mode", "fixed"),
            ("amount", amount),
            ("min_amount", ""),
            ("max_amount", ""),
            ("usage_limit", "5"),
            ("valid_from", ""),
            ("valid_until", "2099-12-31T23:59"),
            ("provider", "random"),
            ("slug", slug),
        ]
    };
    let bad = owner
        .post("/dashboard/links", &form("Camiseta", "59,999", "camiseta"))
        .await;
    assert_eq!(bad.status, 422);
    assert!(bad.text().contains("Invalid amount."), "{}", bad.text());
    assert_eq!(
        (
            field(&bad, "name"),
            field(&bad, "amount"),
            field(&bad, "slug")
        ),
        ("Camiseta".into(), "59,999".into(), "camiseta".into())
    );
    let bad = owner
        .post("/dashboard/links", &form("Camiseta", "59,90", "c"))
        .await;
    assert_eq!(bad.status, 422);
    assert!(
        bad.text().contains("Use 3 to 64 lower-case letters"),
        "{}",
        bad.text()
    );

    // Created: its page has the address to share, its QR code, and what it takes.
    let created = owner
        .post("/dashboard/links", &form("Camiseta", "59,90", "camiseta"))
        .await;
    let location = created
        .assert_redirect("/dashboard/links/plink_")
        .to_owned();
    let id = link_id(&location);
    let detail = owner.get(&location).await;
    let text = detail.text();
    assert!(text.contains("Payment link created."), "{text}");
    assert!(detail.body.contains(&format!(
        "<code id=\"link-url\">{}/p/camiseta</code>",
        f.gw.url
    )));
    assert!(
        detail.body.contains("src=\"data:image/png;base64,"),
        "the address's QR code"
    );
    assert!(
        text.contains("R$59.90") && text.contains("Taking payments"),
        "{text}"
    );
    let (_, api) =
        f.gw.get(&format!("/v1/payment_links/{id}"), &f.shop.test_key)
            .await;
    assert_eq!(
        (
            &api["amount"],
            &api["usage_limit"],
            &api["valid_until"],
            &api["provider"]
        ),
        (
            &json!(5990),
            &json!(5),
            &json!("2100-01-01T02:59:00Z"),
            &json!("random")
        ),
        "the window is typed in São Paulo time"
    );
    // The edit form shows the settings as they are.
    assert_eq!(field(&detail, "amount"), "59.90");
    assert_eq!(field(&detail, "valid_until"), "2099-12-31T23:59");
    // A second link cannot take its address.
    let taken = owner
        .post("/dashboard/links", &form("Outra", "10", "camiseta"))
        .await;
    assert_eq!(taken.status, 422);
    assert!(taken.text().contains("This address is taken."));

    // Edit: an open amount between bounds, no limit, no window.
    let edit = vec![
        ("name", "Contribuição"),
        ("amount_mode", "open"),
        ("amount", ""),
        ("min_amount", "5"),
        ("max_amount", "100,00"),
        ("usage_limit", ""),
        ("valid_from", ""),
        ("valid_until", ""),
        ("provider", "efi"),
        ("slug", "contribua"),
    ];
    let bad = owner
        .post(
            &location,
            &[
                ("min_amount", "200"),
                ("max_amount", "100"),
                ("amount_mode", "open"),
                ("name", "X"),
                ("provider", "efi"),
            ],
        )
        .await;
    assert_eq!(bad.status, 422);
    assert!(
        bad.text()
            .contains("The minimum cannot be greater than the maximum."),
        "{}",
        bad.text()
    );
    owner
        .post(&location, &edit)
        .await
        .assert_redirect(&location);
    let (_, api) =
        f.gw.get(&format!("/v1/payment_links/{id}"), &f.shop.test_key)
            .await;
    assert_eq!(
        (
            &api["name"],
            &api["amount"],
            &api["min_amount"],
            &api["max_amount"],
            &api["usage_limit"],
            &api["valid_until"],
            &api["slug"],
            &api["provider"]
        ),
        (
            &json!("Contribuição"),
            &json!(null),
            &json!(500),
            &json!(10000),
            &json!(null),
            &json!(null),
            &json!("contribua"),
            &json!("efi")
        )
    );
    let list = owner.get("/dashboard/links").await;
    assert!(
        list.text().contains("Any amount from R$5.00 to R$100.00"),
        "{}",
        list.text()
    );

    // Deactivate and activate.
    owner.get(&location).await;
    owner
        .post(&format!("{location}/deactivate"), &[])
        .await
        .assert_redirect(&location);
    assert!(owner.get(&location).await.text().contains("Deactivated"));
    owner
        .post(&format!("{location}/activate"), &[])
        .await
        .assert_redirect(&location);
    assert!(
        owner
            .get(&location)
            .await
            .text()
            .contains("Taking payments")
    );

    // The audit log has each change, by the owner.
    let audit = f.audit().await;
    let by_user = |action: &str| (action.to_owned(), "user".to_owned(), id.clone());
    assert_eq!(
        audit,
        [
            by_user("payment_link.create"),
            by_user("payment_link.update"),
            by_user("payment_link.deactivate"),
            by_user("payment_link.activate"),
        ]
    );

    // Who sees and changes what: managers and read-only people see, only owners change;
    // cashiers see nothing of links.
    let manager = join_as(&f.gw, owner, "gerente@lojaazul.com.br", "manager").await;
    let reader = join_as(&f.gw, owner, "leitura@lojaazul.com.br", "read_only").await;
    let cashier = join_as(&f.gw, owner, "caixa@lojaazul.com.br", "cashier").await;
    for viewer in [&manager, &reader] {
        let page = viewer.get("/dashboard/links").await;
        assert!(
            page.assert_ok().contains("href=\"/dashboard/links\""),
            "in the navigation"
        );
        assert!(!page.body.contains("id=\"create-link\""), "no create form");
        let detail = viewer.get(&location).await;
        assert!(detail.assert_ok().contains("id=\"link-url\""));
        assert!(!detail.body.contains("id=\"deactivate\""));
        assert_eq!(
            viewer
                .post("/dashboard/links", &form("Não", "1", ""))
                .await
                .status,
            403
        );
        assert_eq!(
            viewer
                .post(&format!("{location}/deactivate"), &[])
                .await
                .status,
            403
        );
        assert_eq!(viewer.post(&location, &edit).await.status, 403);
    }
    assert!(
        !cashier
            .get("/dashboard")
            .await
            .body
            .contains("href=\"/dashboard/links\"")
    );
    assert_eq!(cashier.get("/dashboard/links").await.status, 403);
    assert_eq!(cashier.get(&location).await.status, 403);
    // Another merchant's link is not found.
    let stranger = Visitor::sign_up(&f.gw, "Outra", "outra@loja.com.br").await;
    assert_eq!(stranger.get(&location).await.status, 404);
    assert_eq!(f.audit().await.len(), 4, "refused changes are not recorded");
}

/// A link's name becomes the description of its charges, so it follows their rule: one line,
/// no invisible control character (a bidirectional override or line separator included). The
/// form says so on the field and keeps what was typed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn link_names_with_control_characters_are_refused_on_the_form() {
    let f = Fixture::open(Backend::Sqlite, &[], GatewayOptions::default()).await;
    for name in ["Camiseta\u{202e}P", "Camiseta\u{2028}P", "Camiseta\nP"] {
        let bad = f
            .shop
            .owner
            .post(
                "/dashboard/links",
                &[
                    ("name", name),
                    ("amount_mode", "fixed"),
                    ("amount", "59,90"),
                    ("min_amount", ""),
                    ("max_amount", ""),
                    ("usage_limit", ""),
                    ("valid_from", ""),
                    ("valid_until", ""),
                    ("provider", "efi"),
                    ("slug", "camiseta"),
                ],
            )
            .await;
        assert_eq!(bad.status, 422, "{name:?}");
        assert!(
            bad.text().contains(
                "Give the link a name of up to 100 characters on one line, without tabs or \
                 other invisible control characters."
            ),
            "{name:?}: {}",
            bad.text()
        );
        assert_eq!(field(&bad, "amount"), "59,90");
    }
    let (_, list) = f.gw.get("/v1/payment_links", &f.shop.test_key).await;
    assert_eq!(list["data"].as_array().unwrap().len(), 0, "{list}");
}
