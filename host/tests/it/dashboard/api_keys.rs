//! API keys through the real binary: a key issued in the dashboard is shown once, works on the
//! API at once and gets 401 once revoked; live keys come with a warning; the CLI goes through
//! the same service; only the roles allowed see and change keys; every change is audited.

use std::time::Duration;

use serde_json::json;

use super::accounts::{gateway, join_as};
use crate::both_backends;
use crate::common::gateway::{
    Backend, Gateway, GatewayOptions, TestDb, cli, cli_output, create_merchant,
};
use crate::common::{poll, start_sim};
use crate::dashboard::support::Visitor;

/// The text of the element `id="{id}"` (its first text node), HTML entities decoded.
pub fn element_text(html: &str, id: &str) -> String {
    let marker = format!("id=\"{id}\"");
    let at = html
        .find(&marker)
        .unwrap_or_else(|| panic!("no #{id} on the page"));
    let start = at + html[at..].find('>').unwrap() + 1;
    let end = start + html[start..].find('<').unwrap();
    unescape(&html[start..end])
}

/// Decodes the entities askama writes (`&amp;`, `&#x2f;`, `&#43;`, …).
pub fn unescape(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let Some(end) = after.find(';') else {
            out.push_str(&rest[i..]);
            return out;
        };
        let entity = &after[..end];
        let decoded = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => entity
                .strip_prefix("#x")
                .or_else(|| entity.strip_prefix("#X"))
                .and_then(|hex| u32::from_str_radix(hex, 16).ok())
                .or_else(|| entity.strip_prefix('#').and_then(|dec| dec.parse().ok()))
                .and_then(char::from_u32),
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &after[end + 1..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// `(actor_kind, actor_label, action, summary)` of the audit entries whose action starts with
/// `prefix`, oldest first, read from the gateway's database.
pub async fn audit(db: &TestDb, prefix: &str) -> Vec<(String, String, String, String)> {
    use sqlx::Row;
    let store = pixgw::store::Store::connect(&db.url).await.unwrap();
    let rows = sqlx::query(
        "SELECT actor_kind, actor_label, action, summary FROM audit_log \
         WHERE action LIKE $1 ORDER BY id",
    )
    .bind(format!("{prefix}%"))
    .fetch_all(store.pool())
    .await
    .unwrap();
    rows.iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect()
}

/// The id of the first key with a revoke button on the list page.
fn revocable_key_id(html: &str) -> String {
    let at = html
        .find("action=\"/dashboard/api-keys/")
        .expect("a revoke button")
        + 28;
    html[at..at + html[at..].find('/').unwrap()].to_owned()
}

/// The text of a key's "last used" cell.
fn last_used(html: &str, key_id: &str) -> String {
    let row = &html[html.find(&format!("id=\"key-{key_id}\"")).unwrap()..];
    let cell = &row[row.find("class=\"last-used\">").unwrap() + 18..];
    let cell = &cell[..cell.find("</td>").unwrap()];
    unescape(&cell.split(['<', '>']).step_by(2).collect::<String>())
}

both_backends!(a_key_made_in_the_dashboard_works_at_once_until_revoked);
async fn a_key_made_in_the_dashboard_works_at_once_until_revoked(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let gw = Gateway::start(&db, &sim, &["efi"], GatewayOptions::default()).await;
    let owner = Visitor::sign_up(&gw, "Loja", "ana@loja.com.br").await;
    let empty = owner.get("/dashboard/api-keys").await;
    assert!(
        empty
            .assert_ok()
            .contains("No keys in this environment yet.")
    );

    // A label too long is refused, keeping what was typed.
    let long = "x".repeat(101);
    let refused = owner.post("/dashboard/api-keys", &[("label", &long)]).await;
    assert_eq!(refused.status, 422);
    assert!(
        refused
            .text()
            .contains("The name can have up to 100 characters"),
        "{}",
        refused.text()
    );
    assert_eq!(refused.input_value("label").as_deref(), Some(long.as_str()));

    // The key is on the answer to the form, once.
    let created = owner
        .post("/dashboard/api-keys", &[("label", "Loja virtual")])
        .await;
    created.assert_ok();
    let key = element_text(&created.body, "new-api-key");
    assert!(key.starts_with("pgw_test_") && key.len() == 49, "{key}");
    assert!(
        created
            .text()
            .contains("Copy the key now: it will not be shown again.")
    );
    let list = owner.get("/dashboard/api-keys").await;
    assert!(
        !list.assert_ok().contains(&key[16..]),
        "the secret is not shown again"
    );
    let text = list.text();
    assert!(
        text.contains(&format!("Loja virtual {}…", &key[..16])),
        "{text}"
    );
    let id = revocable_key_id(&list.body);
    assert_eq!(last_used(&list.body, &id), "never");

    // It works on the API at once: connect efi with it, then charge.
    gw.connect(&sim, &key, "efi", &[]).await;
    let (status, charge) = gw
        .post(
            "/v1/charges",
            &key,
            json!({"amount": 1990, "provider": "efi"}),
        )
        .await;
    assert_eq!(status, 201, "{charge}");
    // The use is recorded off the request's path: the list shows it soon after.
    poll(Duration::from_secs(20), "the key's last use", async || {
        let page = owner.get("/dashboard/api-keys").await;
        (last_used(&page.body, &id) != "never").then_some(())
    })
    .await;

    // Revoked: 401 at once, the list says so, and there is nothing left to revoke.
    owner
        .post(&format!("/dashboard/api-keys/{id}/revoke"), &[])
        .await
        .assert_redirect("/dashboard/api-keys");
    let list = owner.get("/dashboard/api-keys").await;
    let text = list.text();
    assert!(
        text.contains("Key revoked. Requests made with it are now refused."),
        "{text}"
    );
    assert!(list.body.contains("class=\"badge revoked\""), "{text}");
    assert!(
        !list.body.contains("action=\"/dashboard/api-keys/key_"),
        "no revoke button left"
    );
    let (status, body) = gw.get("/v1/charges", &key).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (401, Some("api_key_invalid")),
        "{body}"
    );
    let again = owner
        .post(&format!("/dashboard/api-keys/{id}/revoke"), &[])
        .await;
    assert_eq!(again.status, 404);

    let entries = audit(&db, "api_key.").await;
    let actions: Vec<(&str, &str, &str)> = entries
        .iter()
        .map(|(kind, label, action, _)| (kind.as_str(), label.as_str(), action.as_str()))
        .collect();
    assert_eq!(
        actions,
        [
            ("user", "ana@loja.com.br", "api_key.create"),
            ("user", "ana@loja.com.br", "api_key.revoke"),
        ]
    );
    assert_eq!(
        entries[0].3,
        format!("test key {}… created (\"Loja virtual\")", &key[..16])
    );
    assert!(
        entries.iter().all(|e| !e.3.contains(&key[16..])),
        "no secret in the audit log"
    );
}

both_backends!(live_keys_come_with_a_warning_and_stay_in_live);
async fn live_keys_come_with_a_warning_and_stay_in_live(backend: Backend) {
    let db = TestDb::new(backend).await;
    let gw = gateway(&db).await;
    let owner = Visitor::sign_up(&gw, "Loja", "ana@loja.com.br").await;
    let test_page = owner.get("/dashboard/api-keys").await;
    assert!(!test_page.body.contains("id=\"live-key-warning\""));
    let test_key = element_text(
        &owner
            .post("/dashboard/api-keys", &[("label", "teste")])
            .await
            .body,
        "new-api-key",
    );

    owner
        .post(
            "/dashboard/environment",
            &[("environment", "live"), ("next", "/dashboard/api-keys")],
        )
        .await
        .assert_redirect("/dashboard/api-keys");
    let live_page = owner.get("/dashboard/api-keys").await;
    assert!(live_page.assert_ok().contains("id=\"live-key-warning\""));
    assert!(
        live_page
            .text()
            .contains("Live keys create real charges, with real money.")
    );
    assert!(
        live_page
            .text()
            .contains("No keys in this environment yet."),
        "the test key is not listed"
    );
    let created = owner
        .post("/dashboard/api-keys", &[("label", "produção")])
        .await;
    let live_key = element_text(&created.body, "new-api-key");
    assert!(live_key.starts_with("pgw_live_"), "{live_key}");
    let live_list = owner.get("/dashboard/api-keys").await.text();
    assert!(
        live_list.contains(&live_key[..16]) && !live_list.contains(&test_key[..16]),
        "{live_list}"
    );
    // A key of the other environment cannot be revoked from here.
    let switch = async |environment: &str| {
        owner
            .post(
                "/dashboard/environment",
                &[
                    ("environment", environment),
                    ("next", "/dashboard/api-keys"),
                ],
            )
            .await
            .assert_redirect("/dashboard/api-keys");
        owner.get("/dashboard/api-keys").await
    };
    let test_id = revocable_key_id(&switch("test").await.body);
    switch("live").await.assert_ok();
    let refused = owner
        .post(&format!("/dashboard/api-keys/{test_id}/revoke"), &[])
        .await;
    assert_eq!(refused.status, 404);
}

both_backends!(only_owners_change_keys_and_cashiers_do_not_see_them);
async fn only_owners_change_keys_and_cashiers_do_not_see_them(backend: Backend) {
    let db = TestDb::new(backend).await;
    let gw = gateway(&db).await;
    let owner = Visitor::sign_up(&gw, "Loja", "ana@loja.com.br").await;
    let cashier = join_as(&gw, &owner, "caixa@loja.com.br", "cashier").await;
    let manager = join_as(&gw, &owner, "gerente@loja.com.br", "manager").await;

    let overview = cashier.get("/dashboard").await;
    assert!(
        !overview
            .assert_ok()
            .contains("href=\"/dashboard/api-keys\""),
        "no nav link"
    );
    let denied = cashier.get("/dashboard/api-keys").await;
    assert_eq!(denied.status, 403);
    assert!(denied.text().contains("Access denied"));
    assert_eq!(
        cashier
            .post("/dashboard/api-keys", &[("label", "x")])
            .await
            .status,
        403
    );

    // A manager sees the keys, without the form or the revoke buttons, and cannot post them.
    owner.get("/dashboard/api-keys").await;
    let key = element_text(
        &owner
            .post("/dashboard/api-keys", &[("label", "ERP")])
            .await
            .body,
        "new-api-key",
    );
    let id = revocable_key_id(&owner.get("/dashboard/api-keys").await.body);
    let seen = manager.get("/dashboard/api-keys").await;
    assert!(seen.assert_ok().contains(&key[..16]));
    assert!(
        !seen.body.contains("action=\"/dashboard/api-keys"),
        "no forms for a manager"
    );
    assert_eq!(
        manager
            .post("/dashboard/api-keys", &[("label", "x")])
            .await
            .status,
        403
    );
    assert_eq!(
        manager
            .post(&format!("/dashboard/api-keys/{id}/revoke"), &[])
            .await
            .status,
        403
    );
    assert_eq!(
        audit(&db, "api_key.").await.len(),
        1,
        "only the owner's key was made"
    );
}

both_backends!(the_cli_goes_through_the_same_service);
async fn the_cli_goes_through_the_same_service(backend: Backend) {
    let db = TestDb::new(backend).await;
    let merchant = create_merchant(&db, "Loja");
    let keys = cli(&db, &[], &["key", "list", "--merchant", &merchant.id]);
    let live_line = keys.lines().find(|l| l.contains(" live ")).unwrap();
    assert!(
        live_line.contains(&format!("{}…", &merchant.live_key[..16])),
        "{keys}"
    );
    let live_id = live_line.split_whitespace().next().unwrap();
    cli(&db, &[], &["key", "revoke", live_id]);
    let again = cli_output(&db, &[], &["key", "revoke", live_id]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("no active API key"));

    let entries = audit(&db, "api_key.").await;
    let actions: Vec<(&str, &str, &str)> = entries
        .iter()
        .map(|(kind, label, action, _)| (kind.as_str(), label.as_str(), action.as_str()))
        .collect();
    assert_eq!(
        actions,
        [
            ("system", "system", "api_key.create"),
            ("system", "system", "api_key.create"),
            ("system", "system", "api_key.revoke"),
        ]
    );
    assert_eq!(
        entries[2].3,
        format!("live key {}… revoked", &merchant.live_key[..16])
    );
}
