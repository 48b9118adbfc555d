//! Webhook endpoints through the real binary: created in the dashboard (the secret shown
//! once), bad input refused inline keeping what was typed, a paid charge's delivery on the
//! page, redelivered from it (by the owner and by a manager) with the same event id, rotation,
//! disable → nothing delivered, edit, delete; every change audited with its actor.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{Value, json};

use super::accounts::join_as;
use super::api_keys::{audit, element_text, unescape};
use crate::both_backends;
use crate::common::gateway::{Backend, Gateway, GatewayOptions, TestDb};
use crate::common::{poll, sim_control, start_sim};
use crate::dashboard::support::{Answer, Visitor};

/// What a merchant's endpoint received: (headers, body) per request.
#[derive(Clone, Default)]
struct Receiver {
    received: Arc<Mutex<Vec<(axum::http::HeaderMap, Vec<u8>)>>>,
}

impl Receiver {
    async fn start() -> (Receiver, String) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hooks/pixgw", listener.local_addr().unwrap());
        let receiver = Receiver::default();
        let r = receiver.clone();
        let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
            let r = r.clone();
            async move {
                let (parts, body) = req.into_parts();
                let body = axum::body::to_bytes(body, 1 << 20).await.unwrap().to_vec();
                r.received.lock().push((parts.headers, body));
                axum::http::StatusCode::OK
            }
        });
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (receiver, url)
    }

    /// `(webhook-id, event)` of each `kind` event received.
    fn of_type(&self, kind: &str) -> Vec<(String, Value)> {
        self.received
            .lock()
            .iter()
            .map(|(headers, body)| {
                let id = headers["webhook-id"].to_str().unwrap().to_owned();
                (id, serde_json::from_slice::<Value>(body).unwrap())
            })
            .filter(|(_, event)| event["type"] == kind)
            .collect()
    }

    async fn wait_for(&self, kind: &str, count: usize) -> Vec<(String, Value)> {
        poll(
            Duration::from_secs(20),
            &format!("{count} {kind} event(s)"),
            async || {
                let got = self.of_type(kind);
                (got.len() >= count).then_some(got)
            },
        )
        .await
    }

    /// Whether one received request carries a valid signature made with `secret`.
    fn signed_with(&self, index: usize, secret: &str) -> bool {
        use pixgw::webhooks::signature;
        let (headers, body) = self.received.lock()[index].clone();
        let header = |name: &str| headers[name].to_str().unwrap().to_owned();
        let key = signature::secret_key(secret).unwrap();
        let expected = signature::sign(
            &key,
            &header("webhook-id"),
            header("webhook-timestamp").parse().unwrap(),
            &body,
        );
        header("webhook-signature")
            .split(' ')
            .any(|s| s == expected)
    }
}

/// The id in the first `action="{prefix}<id>/…"` of the page.
fn id_in_action(html: &str, prefix: &str) -> String {
    let needle = format!("action=\"{prefix}");
    let at = html
        .find(&needle)
        .unwrap_or_else(|| panic!("no form posting to {prefix}…"))
        + needle.len();
    html[at..at + html[at..].find('/').unwrap()].to_owned()
}

/// The text of each row of the deliveries table, newest first.
fn delivery_rows(page: &Answer) -> Vec<String> {
    let Some(start) = page.body.find("id=\"webhook-deliveries\"") else {
        return Vec::new();
    };
    let table = &page.body[start..];
    let table = &table[..table.find("</table>").unwrap()];
    table
        .split("<tr id=\"delivery-")
        .skip(1)
        .map(|row| {
            let text: Vec<&str> = row.split(['<', '>']).skip(1).step_by(2).collect();
            unescape(&text.join(" "))
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

fn options() -> GatewayOptions {
    GatewayOptions {
        env: [
            ("PIXGW_ALLOW_PRIVATE_WEBHOOK_URLS", "true"),
            ("PIXGW_WORKER_POLL", "100ms"),
            // The PSP's notification alone moves charges here.
            ("PIXGW_RECONCILE_SCHEDULE", "1h"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .to_vec(),
        ..Default::default()
    }
}

/// A charge paid at the simulator; returns its id once the gateway says it is paid.
async fn paid_charge(gw: &Gateway, sim: &psp_sim::Sim, key: &str) -> String {
    let (status, charge) = gw
        .post(
            "/v1/charges",
            key,
            json!({"amount": 1990, "provider": "efi"}),
        )
        .await;
    assert_eq!(status, 201, "{charge}");
    sim_control(
        sim,
        "/_sim/pay",
        Some(json!({"provider": "efi", "reference": charge["reference"]})),
    )
    .await;
    let id = charge["id"].as_str().unwrap().to_owned();
    poll(
        Duration::from_secs(20),
        "the charge to be paid",
        async || {
            let (_, c) = gw.get(&format!("/v1/charges/{id}"), key).await;
            (c["status"] == "paid").then_some(())
        },
    )
    .await;
    id
}

both_backends!(endpoints_deliveries_and_redelivery_from_the_dashboard);
async fn endpoints_deliveries_and_redelivery_from_the_dashboard(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let (receiver, url) = Receiver::start().await;
    let gw = Gateway::start(&db, &sim, &["efi"], options()).await;
    let owner = Visitor::sign_up(&gw, "Loja", "ana@loja.com.br").await;
    owner.get("/dashboard/api-keys").await;
    let key = element_text(
        &owner
            .post("/dashboard/api-keys", &[("label", "loja")])
            .await
            .body,
        "new-api-key",
    );
    gw.connect(&sim, &key, "efi", &[]).await;
    let page = owner.get("/dashboard/webhooks").await;
    assert!(
        page.assert_ok()
            .contains("No endpoints in this environment yet")
    );

    // Bad input: refused inline, with what was typed kept.
    let refused = owner
        .post(
            "/dashboard/webhooks",
            &[
                ("url", ""),
                ("description", "ERP"),
                ("events", "charge.paid"),
            ],
        )
        .await;
    assert_eq!(refused.status, 422);
    assert_eq!(
        element_text(&refused.body, "endpoint-url-error"),
        "Enter the URL that will receive the events."
    );
    assert_eq!(refused.input_value("description").as_deref(), Some("ERP"));
    let refused = owner
        .post(
            "/dashboard/webhooks",
            &[
                ("url", "ftp://loja.com.br/hooks"),
                ("events", "charge.paid"),
            ],
        )
        .await;
    assert_eq!(refused.status, 422);
    assert_eq!(
        element_text(&refused.body, "endpoint-url-error"),
        "Events cannot be sent to this URL: the URL must be http or https, not ftp"
    );
    assert_eq!(
        refused.input_value("url").as_deref(),
        Some("ftp://loja.com.br/hooks")
    );
    let long = "d".repeat(201);
    let refused = owner
        .post(
            "/dashboard/webhooks",
            &[
                ("url", &url),
                ("description", &long),
                ("events", "charge.paid"),
            ],
        )
        .await;
    assert_eq!(refused.status, 422);
    assert_eq!(
        element_text(&refused.body, "endpoint-description-error"),
        "The description can have up to 200 characters."
    );
    assert_eq!(refused.input_value("url").as_deref(), Some(url.as_str()));
    let refused = owner.post("/dashboard/webhooks", &[("url", &url)]).await;
    assert_eq!(refused.status, 422);
    assert_eq!(
        element_text(&refused.body, "endpoint-events-error"),
        "Choose at least one event."
    );

    // Created: the secret once, then never again.
    let created = owner
        .post(
            "/dashboard/webhooks",
            &[
                ("url", &url),
                ("description", "ERP"),
                ("events", "charge.paid"),
                ("events", "charge.created"),
            ],
        )
        .await;
    created.assert_ok();
    let secret = element_text(&created.body, "webhook-secret");
    assert!(secret.starts_with("whsec_"), "{secret}");
    assert!(
        created
            .text()
            .contains("Copy the secret now: it will not be shown again.")
    );
    let page = owner.get("/dashboard/webhooks").await;
    assert!(
        !unescape(&page.body).contains(&secret),
        "the secret is shown once"
    );
    let endpoint = id_in_action(&page.body, "/dashboard/webhooks/");
    let row = page.text();
    assert!(
        row.contains(&format!("{url} ERP charge.paid charge.created enabled")),
        "{row}"
    );
    assert!(!page.text().contains("No endpoints in this environment yet"));

    // A paid charge: delivered, and on the page.
    let charge = paid_charge(&gw, &sim, &key).await;
    let paid = receiver.wait_for("charge.paid", 1).await;
    let last = receiver.received.lock().len() - 1;
    assert!(receiver.signed_with(last, &secret));
    let event_id = paid[0].0.clone();
    let page = poll(
        Duration::from_secs(20),
        "the delivery on the page",
        async || {
            let page = owner.get("/dashboard/webhooks").await;
            let rows = delivery_rows(&page);
            (rows.len() == 2 && rows[0].contains("HTTP 200 delivered")).then_some(page)
        },
    )
    .await;
    let rows = delivery_rows(&page);
    assert!(rows[0].starts_with("charge.paid charge paid "), "{rows:?}");
    assert!(
        rows[0].ends_with(&format!("{charge} {url} 1 HTTP 200 delivered Redeliver")),
        "{rows:?}"
    );
    assert!(
        rows[1].starts_with("charge.created charge created "),
        "{rows:?}"
    );
    assert_eq!(
        id_in_action(&page.body, "/dashboard/webhooks/events/"),
        event_id
    );

    // Redelivered from the page: the receiver gets the same event again.
    owner
        .post(
            &format!("/dashboard/webhooks/events/{event_id}/redeliver"),
            &[],
        )
        .await
        .assert_redirect("/dashboard/webhooks");
    assert!(
        owner
            .get("/dashboard/webhooks")
            .await
            .text()
            .contains("Event queued for redelivery.")
    );
    let again = receiver.wait_for("charge.paid", 2).await;
    assert_eq!(
        (again[0].0.as_str(), again[1].0.as_str()),
        (event_id.as_str(), event_id.as_str())
    );
    assert_eq!(again[0].1, again[1].1, "the same event");

    // A manager may redeliver, and sees no endpoint forms.
    let manager = join_as(&gw, &owner, "gerente@loja.com.br", "manager").await;
    let seen = manager.get("/dashboard/webhooks").await;
    assert!(seen.assert_ok().contains("/redeliver\""));
    assert!(
        !seen
            .body
            .contains(&format!("action=\"/dashboard/webhooks/{endpoint}/"))
    );
    assert!(
        !seen.body.contains("action=\"/dashboard/webhooks\""),
        "no create form"
    );
    assert_eq!(
        manager
            .post(
                "/dashboard/webhooks",
                &[("url", &url), ("events", "charge.paid")]
            )
            .await
            .status,
        403
    );
    manager
        .post(
            &format!("/dashboard/webhooks/events/{event_id}/redeliver"),
            &[],
        )
        .await
        .assert_redirect("/dashboard/webhooks");
    receiver.wait_for("charge.paid", 3).await;

    // Rotated: a new secret, shown once; the previous one signs for a day more.
    owner.get("/dashboard/webhooks").await;
    let rotated = owner
        .post(&format!("/dashboard/webhooks/{endpoint}/rotate"), &[])
        .await;
    rotated.assert_ok();
    let new_secret = element_text(&rotated.body, "webhook-secret");
    assert!(new_secret.starts_with("whsec_") && new_secret != secret);
    assert!(
        rotated
            .text()
            .contains("The previous secret keeps signing until")
    );

    // Disabled: a paid charge's event goes to no endpoint.
    owner
        .post(&format!("/dashboard/webhooks/{endpoint}/disable"), &[])
        .await
        .assert_redirect("/dashboard/webhooks");
    let page = owner.get("/dashboard/webhooks").await;
    assert!(
        page.text()
            .contains("Endpoint disabled. No events will be sent to it.")
    );
    assert!(
        page.text().contains("disabled Disabled by your team."),
        "{}",
        page.text()
    );
    let unsent = paid_charge(&gw, &sim, &key).await;
    let (_, events) = gw.get(&format!("/v1/events?charge={unsent}"), &key).await;
    assert_eq!(events["data"][0]["type"], "charge.paid", "{events}");
    let (_, event) = gw
        .get(
            &format!("/v1/events/{}", events["data"][0]["id"].as_str().unwrap()),
            &key,
        )
        .await;
    assert_eq!(
        event["deliveries"],
        json!([]),
        "nothing for a disabled endpoint"
    );
    assert_eq!(receiver.of_type("charge.paid").len(), 3);

    // Enabled again and edited: the form shows what is saved, and saves what is sent.
    owner
        .post(&format!("/dashboard/webhooks/{endpoint}/enable"), &[])
        .await
        .assert_redirect("/dashboard/webhooks");
    let edit = owner.get(&format!("/dashboard/webhooks/{endpoint}")).await;
    assert_eq!(
        edit.assert_ok().matches("checked").count(),
        2,
        "charge.created and charge.paid"
    );
    assert_eq!(edit.input_value("description").as_deref(), Some("ERP"));
    let refused = owner
        .post(
            &format!("/dashboard/webhooks/{endpoint}"),
            &[("url", &url), ("description", "ERP")],
        )
        .await;
    assert_eq!(refused.status, 422);
    assert_eq!(
        element_text(&refused.body, "endpoint-events-error"),
        "Choose at least one event."
    );
    owner
        .post(
            &format!("/dashboard/webhooks/{endpoint}"),
            &[
                ("url", &url),
                ("description", ""),
                ("events", "charge.expired"),
            ],
        )
        .await
        .assert_redirect("/dashboard/webhooks");
    let page = owner.get("/dashboard/webhooks").await;
    assert!(
        page.text()
            .contains(&format!("{url} charge.expired enabled")),
        "{}",
        page.text()
    );

    // Deleted.
    owner
        .post(&format!("/dashboard/webhooks/{endpoint}/delete"), &[])
        .await
        .assert_redirect("/dashboard/webhooks");
    let page = owner.get("/dashboard/webhooks").await;
    assert!(page.text().contains("Endpoint deleted."));
    assert!(page.text().contains("No endpoints in this environment yet"));
    assert_eq!(
        owner
            .post(&format!("/dashboard/webhooks/{endpoint}/enable"), &[])
            .await
            .status,
        404
    );

    let mut entries = audit(&db, "webhook_endpoint.").await;
    entries.extend(audit(&db, "event.").await);
    let actions: Vec<(&str, &str)> = entries
        .iter()
        .map(|(_, label, action, _)| (label.as_str(), action.as_str()))
        .collect();
    let owner_email = "ana@loja.com.br";
    assert_eq!(
        actions,
        [
            (owner_email, "webhook_endpoint.create"),
            (owner_email, "webhook_endpoint.rotate_secret"),
            (owner_email, "webhook_endpoint.disable"),
            (owner_email, "webhook_endpoint.enable"),
            (owner_email, "webhook_endpoint.update"),
            (owner_email, "webhook_endpoint.delete"),
            (owner_email, "event.redeliver"),
            ("gerente@loja.com.br", "event.redeliver"),
        ]
    );
    assert!(entries.iter().all(|(kind, ..)| kind == "user"));
    assert!(
        entries
            .iter()
            .all(|(.., summary)| !summary.contains("whsec_")),
        "no secret in the log"
    );
}

both_backends!(live_endpoints_need_https);
async fn live_endpoints_need_https(backend: Backend) {
    let db = TestDb::new(backend).await;
    let gw = Gateway::start_with(&db, None, &[], options()).await;
    let owner = Visitor::sign_up(&gw, "Loja", "ana@loja.com.br").await;
    owner
        .post(
            "/dashboard/environment",
            &[("environment", "live"), ("next", "/dashboard/webhooks")],
        )
        .await
        .assert_redirect("/dashboard/webhooks");
    let page = owner.get("/dashboard/webhooks").await;
    assert!(page.text().contains("In live, use https://."));
    let refused = owner
        .post(
            "/dashboard/webhooks",
            &[
                ("url", "http://127.0.0.1:9/hooks"),
                ("events", "charge.paid"),
            ],
        )
        .await;
    assert_eq!(refused.status, 422);
    assert_eq!(
        element_text(&refused.body, "endpoint-url-error"),
        "Events cannot be sent to this URL: live webhook endpoints must use https"
    );
    assert!(audit(&db, "webhook_endpoint.").await.is_empty());
}

both_backends!(private_addresses_are_refused_unless_the_operator_allows_them);
async fn private_addresses_are_refused_unless_the_operator_allows_them(backend: Backend) {
    let db = TestDb::new(backend).await;
    let gw = Gateway::start_with(&db, None, &[], GatewayOptions::default()).await;
    let owner = Visitor::sign_up(&gw, "Loja", "ana@loja.com.br").await;
    owner.get("/dashboard/webhooks").await;
    let refused = owner
        .post(
            "/dashboard/webhooks",
            &[
                ("url", "http://192.168.0.10/hooks"),
                ("events", "charge.paid"),
            ],
        )
        .await;
    assert_eq!(refused.status, 422);
    let message = element_text(&refused.body, "endpoint-url-error");
    assert!(
        message.starts_with("Events cannot be sent to this URL: 192.168.0.10 resolves to a loopback, private or reserved address"),
        "{message}"
    );
    assert_eq!(
        refused.input_value("url").as_deref(),
        Some("http://192.168.0.10/hooks")
    );
}
