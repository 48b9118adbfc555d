//! Two people editing one thing: the dashboard's forms post back the version they showed, and
//! a form made stale by a change saved meanwhile (here through the API) is refused with 409,
//! the page showing what is saved now and saying why nothing was.

use serde_json::json;

use crate::both_backends;
use crate::common::gateway::{Backend, Gateway, GatewayOptions, TestDb, cli};
use crate::common::start_sim;
use crate::dashboard::support::Visitor;

const BUSINESS: &str = "Loja do Bruno";

/// A test API key for the dashboard's merchant, made with the operator CLI.
fn api_key(db: &TestDb) -> String {
    let list = cli(db, &[], &["merchant", "list"]);
    let merchant = list
        .lines()
        .find(|l| l.ends_with(BUSINESS))
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .to_owned();
    cli(
        db,
        &[],
        &["key", "create", "--merchant", &merchant, "--env", "test"],
    )
}

async fn stale_forms_are_refused_and_say_why(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let options = GatewayOptions {
        env: vec![("PIXGW_ALLOW_PRIVATE_WEBHOOK_URLS".into(), "true".into())],
        ..Default::default()
    };
    let gw = Gateway::start(&db, &sim, &["efi"], options).await;
    let owner = Visitor::sign_up(&gw, BUSINESS, "bruno@loja.com.br").await;
    let key = api_key(&db);
    let credential = gw.connect(&sim, &key, "efi", &[]).await;
    let id = credential["id"].as_str().unwrap();

    let page = owner.get(&format!("/dashboard/psps/{id}")).await;
    page.assert_ok();
    assert_eq!(page.input_value("version").as_deref(), Some("1"));

    // Someone renames it through the API while the page is open.
    let (status, renamed) = gw
        .send(
            gw.request(
                reqwest::Method::PATCH,
                &format!("/v1/credentials/{id}"),
                Some(&key),
            )
            .json(&json!({"label": "Efí da API"})),
        )
        .await;
    assert_eq!((status, &renamed["version"]), (200, &json!(2)), "{renamed}");

    for (path, fields) in [
        (
            format!("/dashboard/psps/{id}/settings"),
            vec![
                ("label", "Efí do painel"),
                ("route_limit", "2"),
                ("version", "1"),
            ],
        ),
        (
            format!("/dashboard/psps/{id}/active"),
            vec![("active", "false"), ("version", "1")],
        ),
    ] {
        let answer = owner.post(&path, &fields).await;
        assert_eq!(answer.status, 409, "{path}: {}", answer.text());
        let text = answer.text();
        assert!(
            text.contains(
                "Someone else changed this connection while you were editing it, so your change \
                 was not saved."
            ),
            "{text}"
        );
        assert_eq!(answer.input_value("label").as_deref(), Some("Efí da API"));
        assert_eq!(answer.input_value("version").as_deref(), Some("2"));
    }
    let (_, read) = gw.get(&format!("/v1/credentials/{id}"), &key).await;
    assert_eq!(
        (&read["label"], &read["active"], &read["version"]),
        (&json!("Efí da API"), &json!(true), &json!(2))
    );
    // The page as it is now saves.
    owner
        .post(
            &format!("/dashboard/psps/{id}/settings"),
            &[
                ("label", "Efí do painel"),
                ("route_limit", "2"),
                ("version", "2"),
            ],
        )
        .await
        .assert_redirect(&format!("/dashboard/psps/{id}"));

    // A webhook endpoint's edit form likewise.
    let (status, endpoint) = gw
        .post(
            "/v1/webhook_endpoints",
            &key,
            json!({"url": "http://127.0.0.1:9/hooks"}),
        )
        .await;
    assert_eq!(status, 201, "{endpoint}");
    let endpoint = endpoint["id"].as_str().unwrap();
    let edit = owner.get(&format!("/dashboard/webhooks/{endpoint}")).await;
    edit.assert_ok();
    assert_eq!(edit.input_value("version").as_deref(), Some("1"));
    let (status, _) = gw
        .send(
            gw.request(
                reqwest::Method::PATCH,
                &format!("/v1/webhook_endpoints/{endpoint}"),
                Some(&key),
            )
            .json(&json!({"description": "from the API"})),
        )
        .await;
    assert_eq!(status, 200);
    let answer = owner
        .post(
            &format!("/dashboard/webhooks/{endpoint}"),
            &[
                ("url", "http://127.0.0.1:9/other"),
                ("events", "charge.paid"),
                ("version", "1"),
            ],
        )
        .await;
    assert_eq!(answer.status, 409, "{}", answer.text());
    assert!(
        answer
            .text()
            .contains("Someone else changed this endpoint while you were editing it"),
        "{}",
        answer.text()
    );
    assert_eq!(answer.input_value("version").as_deref(), Some("2"));
    assert_eq!(
        answer.input_value("url").as_deref(),
        Some("http://127.0.0.1:9/hooks")
    );
}
both_backends!(stale_forms_are_refused_and_say_why);
