//! What owners see of the gateway's workings, over HTTP: the audit log (sign-up, sign-in, the
//! team's invitation, a cancel through the API, each with its actor; its filters narrowing
//! exactly; pagination through all of it) and the adapters page (what serves, by SHA-256, and
//! a refused file while the old version keeps serving), which a manager may not open.

use std::time::Duration;

use serde_json::json;

use super::accounts::join_as;
use super::charges::{OWNER, Shop, element_text, link, sao_paulo_day};
use crate::both_backends;
use crate::common::built_adapter;
use crate::common::gateway::{Backend, Gateway, GatewayOptions, TestDb};
use crate::common::poll;
use crate::dashboard::support::{Answer, PASSWORD, Visitor};

const MANAGER: &str = "gerente@loja.com.br";

/// The entries on an audit page, in order: (action, actor kind).
pub fn entries(answer: &Answer) -> Vec<(String, String)> {
    rows(answer)
        .into_iter()
        .map(|(_, action, actor)| (action, actor))
        .collect()
}

/// (id, action, actor kind) of each entry on the page.
fn rows(answer: &Answer) -> Vec<(String, String, String)> {
    let html = answer.assert_ok();
    let attr = |row: &str, name: &str| {
        let at = row.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
        row[at..at + row[at..].find('"').unwrap()].to_owned()
    };
    html.split("<tr data-entry=\"")
        .skip(1)
        .map(|row| {
            let id = row[..row.find('"').unwrap()].to_owned();
            (id, attr(row, "data-action"), attr(row, "data-actor"))
        })
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

both_backends!(the_audit_log_names_every_actor_and_its_filters_narrow_exactly);
async fn the_audit_log_names_every_actor_and_its_filters_narrow_exactly(backend: Backend) {
    let shop = Shop::open(backend).await;
    let (owner, answer) = Visitor::sign_in(&shop.gw, OWNER, PASSWORD).await;
    answer.assert_redirect("/dashboard");
    join_as(&shop.gw, &owner, MANAGER, "manager").await;
    let charge = shop.charge(990, "Pedido 7").await;
    let charge_id = charge["id"].as_str().unwrap();
    let (status, _) = shop
        .gw
        .post(
            &format!("/v1/charges/{charge_id}/cancel"),
            &shop.key,
            json!({}),
        )
        .await;
    assert_eq!(status, 200);
    let store = pixgw::store::Store::connect(&shop.db.url).await.unwrap();
    let owner_id = store.user_by_email(OWNER).await.unwrap().unwrap().id;
    let manager_id = store.user_by_email(MANAGER).await.unwrap().unwrap().id;

    let all = owner.get("/dashboard/audit?limit=100").await;
    let everything = rows(&all);
    // Newest first (ids are time-ordered).
    let mut sorted: Vec<String> = everything.iter().map(|(id, _, _)| id.clone()).collect();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(
        sorted,
        everything
            .iter()
            .map(|(id, _, _)| id.clone())
            .collect::<Vec<_>>()
    );
    // The member select offers each person by e-mail, then API keys and the gateway.
    assert!(all.body.contains(&format!(
        "<option value=\"user:{owner_id}\">{OWNER}</option>"
    )));
    assert!(all.body.contains(&format!(
        "<option value=\"user:{manager_id}\">{MANAGER}</option>"
    )));
    assert!(
        all.body
            .contains("<option value=\"api_key\">API keys</option>")
    );

    let cases: Vec<(String, Vec<(String, String)>)> = vec![
        (
            "kind=team".into(),
            pairs(&[("team.join", "user"), ("team.invite", "user")]),
        ),
        ("kind=session".into(), pairs(&[("session.sign_in", "user")])),
        ("kind=account".into(), pairs(&[("account.sign_up", "user")])),
        ("kind=charge".into(), pairs(&[("charge.cancel", "api_key")])),
        // The owner moved to Enterprise on the plan page right after signing up.
        ("kind=plan".into(), pairs(&[("plan.change", "user")])),
        (
            format!("actor=user:{owner_id}"),
            pairs(&[
                ("team.invite", "user"),
                ("session.sign_in", "user"),
                ("plan.change", "user"),
                ("account.sign_up", "user"),
            ]),
        ),
        (
            format!("actor=user:{manager_id}"),
            pairs(&[("team.join", "user")]),
        ),
        (format!("actor=user:{manager_id}&kind=session"), vec![]),
        // The operator's CLI made the API key.
        (
            "actor=system".into(),
            pairs(&[("api_key.create", "system")]),
        ),
    ];
    for (query, expected) in cases {
        let answer = owner.get(&format!("/dashboard/audit?{query}")).await;
        assert_eq!(entries(&answer), expected, "{query}");
        if expected.is_empty() {
            assert!(answer.body.contains("id=\"audit-empty\""), "{query}");
        }
    }
    // API keys: the cancel among what keys did, and nothing by a person.
    let by_keys = entries(&owner.get("/dashboard/audit?actor=api_key").await);
    assert!(by_keys.contains(&("charge.cancel".into(), "api_key".into())));
    assert!(
        by_keys.iter().all(|(_, actor)| actor == "api_key"),
        "{by_keys:?}"
    );

    // Each line in words: who, what, on what, the summary, from where.
    let system = owner.get("/dashboard/audit?actor=system").await.text();
    assert!(
        system.contains("System (the gateway itself) Created an API key API key key_"),
        "{system}"
    );
    let team = owner.get("/dashboard/audit?kind=team").await.text();
    assert!(
        team.contains(&format!(
            "{MANAGER} Joined the team Person {manager_id} {MANAGER} joined as manager 127.0.0.1"
        )),
        "{team}"
    );
    assert!(
        team.contains(&format!("{OWNER} Invited a person Invitation inv_")),
        "{team}"
    );
    let charges = owner.get("/dashboard/audit?kind=charge").await.text();
    let prefix = &shop.key[..16];
    assert!(charges.contains(&format!("API key {prefix}")), "{charges}");
    assert!(
        charges.contains(&format!(
            "Canceled a charge Charge {charge_id} 990 centavos at efi canceled 127.0.0.1"
        )),
        "{charges}"
    );
    let sessions = owner.get("/dashboard/audit?kind=session").await.text();
    assert!(
        sessions.contains(&format!("{OWNER} Signed in — signed in 127.0.0.1")),
        "{sessions}"
    );

    // Days in São Paulo: today holds everything, yesterday nothing.
    let today = sao_paulo_day(charge["created_at"].as_str().unwrap(), 0);
    let yesterday = sao_paulo_day(charge["created_at"].as_str().unwrap(), -1);
    assert_eq!(
        rows(
            &owner
                .get(&format!(
                    "/dashboard/audit?limit=100&from={today}&to={today}"
                ))
                .await
        ),
        everything
    );
    assert!(rows(&owner.get(&format!("/dashboard/audit?to={yesterday}")).await).is_empty());

    // Filters the page never offers are refused, saying what to do.
    for (query, message) in [
        (
            "kind=team.invite",
            "Choose one of the kinds of action in the list.",
        ),
        ("actor=admin", "Choose who acted from the list."),
        (
            "from=2026-13-01",
            "Invalid date: use YYYY-MM-DD, for example 2026-11-22.",
        ),
    ] {
        let answer = owner.get(&format!("/dashboard/audit?{query}")).await;
        assert_eq!(answer.status, 422, "{query}");
        assert_eq!(
            element_text(&answer.body, "filter-error").as_deref(),
            Some(message)
        );
    }

    // Two a page: "older" walks through every entry once, in order, then stops.
    let mut walked = Vec::new();
    let mut next = Some("/dashboard/audit?limit=2".to_owned());
    while let Some(path) = next {
        let answer = owner.get(&path).await;
        let page = rows(&answer);
        assert!(!page.is_empty() && page.len() <= 2, "{path}: {page:?}");
        walked.extend(page);
        next = link(&answer.body, "older");
        assert!(walked.len() <= everything.len(), "pagination never ends");
    }
    assert_eq!(walked, everything);
    let filtered = owner.get("/dashboard/audit?kind=team&limit=1").await;
    assert_eq!(entries(&filtered), pairs(&[("team.join", "user")]));
    let older = link(&filtered.body, "older").unwrap();
    assert!(older.contains("kind=team"), "{older}");
    assert_eq!(
        entries(&owner.get(&older).await),
        pairs(&[("team.invite", "user")])
    );

    // A manager reads the log too.
    let (manager, _) = Visitor::sign_in(&shop.gw, MANAGER, PASSWORD).await;
    assert_eq!(
        entries(&manager.get("/dashboard/audit?kind=charge").await),
        pairs(&[("charge.cancel", "api_key")])
    );
}

both_backends!(the_adapters_page_shows_what_serves_and_what_was_refused_to_owners);
async fn the_adapters_page_shows_what_serves_and_what_was_refused_to_owners(backend: Backend) {
    let db = TestDb::new(backend).await;
    let gw = Gateway::start_with(&db, None, &["efi"], GatewayOptions::default()).await;
    let owner = Visitor::sign_up(&gw, "Loja do Adaptador", OWNER).await;
    let sha = pixgw::runtime::registry::sha256_hex(&std::fs::read(built_adapter("efi")).unwrap());
    let (_, api) = gw
        .send(gw.request(reqwest::Method::GET, "/v1/adapters", None))
        .await;
    let manifest = &api["data"][0]["manifest"];

    let page = owner.get("/dashboard/adapters").await;
    let html = page.assert_ok();
    assert!(html.contains("<tr data-adapter=\"efi\">"));
    assert_eq!(element_text(html, "sha-efi").as_deref(), Some(sha.as_str()));
    let text = page.text();
    assert!(
        text.contains(&format!(
            "Efí Bank efi {} {} {sha}",
            manifest["kind"].as_str().unwrap(),
            manifest["wit_version"].as_str().unwrap()
        )),
        "{text}"
    );
    assert!(!html.contains("data-load-error"));
    assert!(
        html.contains("href=\"/dashboard/adapters\""),
        "owners have it in the navigation"
    );

    // A manager neither sees it in the navigation nor may open it.
    let manager = join_as(&gw, &owner, MANAGER, "manager").await;
    let overview = manager.get("/dashboard").await;
    assert!(
        !overview
            .assert_ok()
            .contains("href=\"/dashboard/adapters\"")
    );
    assert_eq!(manager.get("/dashboard/adapters").await.status, 403);

    // An operator drops a broken file in: refused, and the old version keeps serving.
    std::fs::write(gw.plugin_dir.join("efi.wasm"), b"\0asm garbage").unwrap();
    let page = poll(
        Duration::from_secs(30),
        "the refused file on the page",
        async || {
            let page = owner.get("/dashboard/adapters").await;
            page.body
                .contains("data-load-error=\"efi\"")
                .then_some(page)
        },
    )
    .await;
    assert_eq!(
        element_text(&page.body, "sha-efi").as_deref(),
        Some(sha.as_str())
    );
    let text = page.text();
    assert!(text.contains("New file refused"), "{text}");
    assert!(
        text.contains("efi.wasm is not a valid adapter component"),
        "{text}"
    );
    assert!(
        text.contains("The previous version keeps serving."),
        "{text}"
    );
}
