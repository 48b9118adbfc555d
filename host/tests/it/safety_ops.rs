//! Safety in operation, through the real `pixgw` binary: test and live accounts kept apart at
//! PSPs whose environments share one host, optimistic concurrency on what merchants edit (and
//! a master-key rotation beside them), what unauthenticated routes may show, failed API-key
//! authentications limited per address, and `serve`'s refusal to start without a master key.

use crate::both_backends;
use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::gateway::{
    Backend, Gateway, GatewayOptions, TestDb, cli_output, create_merchant, pixgw_bin,
};
use common::{poll, sim_control, start_sim};
use serde_json::{Value, json};

fn options() -> GatewayOptions {
    GatewayOptions {
        env: vec![
            ("PIXGW_RATE_LIMIT".into(), "0".into()),
            ("PIXGW_RECONCILE_SCHEDULE".into(), "1h".into()),
        ],
        ..Default::default()
    }
}

fn charge_body() -> Value {
    json!({
        "amount": 1990,
        "provider": "mercadopago",
        "payer": {"name": "Fulana de Tal", "email": "fulana@example.com", "document": "52998224725"},
    })
}

async fn save(
    gw: &Gateway,
    key: &str,
    fields: &BTreeMap<String, String>,
    verify: bool,
) -> (u16, Value) {
    gw.post(
        "/v1/credentials",
        key,
        json!({"provider": "mercadopago", "fields": fields, "verify": verify}),
    )
    .await
}

/// At Mercado Pago test and live share a host and a token format: a real seller's token under
/// a test key (or a test user's under a live key) is refused when saved, and even saved
/// unverified it never creates a payment at the wrong kind of account.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mercadopago_accounts_stay_in_their_environment() {
    let sim = start_sim().await;
    let db = TestDb::new(Backend::Sqlite).await;
    let gw = Gateway::start(&db, &sim, &["mercadopago"], options()).await;
    let m = create_merchant(&db, "Loja");
    let info = sim.provider("mercadopago").unwrap();
    let (test_user, real_seller) = (info.credentials.clone(), info.live_credentials.unwrap());

    for (key, account, says) in [
        (
            &m.test_key,
            &real_seller,
            "this access token belongs to the real Mercado Pago account",
        ),
        (
            &m.live_key,
            &test_user,
            "this access token belongs to the test user",
        ),
    ] {
        let (status, e) = save(&gw, key, account, true).await;
        assert_eq!(status, 422, "{e}");
        assert_eq!(e["error"]["code"], "psp_authentication_failed", "{e}");
        assert_eq!(
            e["error"]["psp_code"], "account_environment_mismatch",
            "{e}"
        );
        let psp_message = e["error"]["psp_message"].as_str().unwrap();
        assert!(psp_message.starts_with(says), "{psp_message}");
        let (_, listed) = gw.get("/v1/credentials", key).await;
        assert_eq!(listed["data"], json!([]), "nothing saved");
    }

    // Saved without trying (`verify: false`): the charge is refused before any payment exists.
    let (status, saved) = save(&gw, &m.test_key, &real_seller, false).await;
    assert_eq!(status, 201, "{saved}");
    let (status, e) = gw.post("/v1/charges", &m.test_key, charge_body()).await;
    assert_eq!(
        e["error"]["psp_code"], "account_environment_mismatch",
        "{status} {e}"
    );
    let payments = sim_control(&sim, "/_sim/charges?provider=mercadopago", None).await;
    assert_eq!(payments, json!([]), "no payment at any account");
    let id = saved["id"].as_str().unwrap();
    let (status, _) = gw
        .send(gw.request(
            reqwest::Method::DELETE,
            &format!("/v1/credentials/{id}"),
            Some(&m.test_key),
        ))
        .await;
    assert_eq!(status, 200);

    // Each environment with its own kind of account: payments land at that account.
    for (key, account, live) in [
        (&m.test_key, &test_user, false),
        (&m.live_key, &real_seller, true),
    ] {
        let (status, saved) = save(&gw, key, account, true).await;
        assert_eq!(status, 201, "{saved}");
        assert_eq!(saved["verification"]["status"], "ok", "{saved}");
        let (status, charge) = gw.post("/v1/charges", key, charge_body()).await;
        assert_eq!(status, 201, "{charge}");
        let payments = sim_control(&sim, "/_sim/charges?provider=mercadopago", None).await;
        let payment = payments
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["reference"] == charge["reference"])
            .unwrap();
        assert_eq!(payment["psp_live"], live, "{payment}");
    }
}

/// A change names the version it was made against; a stale one is 409 and saves nothing, and
/// of concurrent changes against one version exactly one wins.
async fn edits_are_checked_against_the_version_read(backend: Backend) {
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let mut o = options();
    o.env
        .push(("PIXGW_ALLOW_PRIVATE_WEBHOOK_URLS".into(), "true".into()));
    let gw = Gateway::start(&db, &sim, &["efi"], o).await;
    let m = create_merchant(&db, "Loja");
    let credential = gw.connect(&sim, &m.test_key, "efi", &[]).await;
    assert_eq!(credential["version"], 1, "{credential}");
    let path = format!("/v1/credentials/{}", credential["id"].as_str().unwrap());

    let patch = |body: Value, if_match: Option<&str>| {
        let mut request = gw
            .request(reqwest::Method::PATCH, &path, Some(&m.test_key))
            .json(&body);
        if let Some(tag) = if_match {
            request = request.header("if-match", tag);
        }
        gw.send(request)
    };
    let response = gw
        .request(reqwest::Method::GET, &path, Some(&m.test_key))
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["etag"], "\"1\"");

    let (status, changed) = patch(json!({"label": "Loja 1"}), Some("\"1\"")).await;
    assert_eq!((status, &changed["version"]), (200, &json!(2)), "{changed}");
    for (body, tag) in [
        (json!({"label": "stale"}), Some("\"1\"")),
        (json!({"label": "stale", "version": 1}), None),
    ] {
        let (status, e) = patch(body, tag).await;
        assert_eq!(status, 409, "{e}");
        assert_eq!(e["error"]["code"], "conflict");
        assert_eq!(
            e["error"]["message"],
            "The credential was changed by someone else since version 1 was read; it is at \
             version 2 now. Nothing was saved: read it again (GET), then repeat your change \
             with If-Match: \"2\"."
        );
    }
    let (_, read) = gw.get(&path, &m.test_key).await;
    assert_eq!(
        (&read["label"], &read["version"]),
        (&json!("Loja 1"), &json!(2))
    );
    let (status, e) = patch(json!({"label": "x"}), Some("W/\"2\"")).await;
    assert_eq!(
        (status, e["error"]["param"].as_str()),
        (400, Some("If-Match")),
        "{e}"
    );
    let (status, e) = patch(json!({"label": "x", "version": 3}), Some("\"2\"")).await;
    assert_eq!(status, 422, "{e}");

    // Eight editors who all read version 2: one change is saved, seven are told to reload.
    let attempts = (0..8).map(|i| patch(json!({"label": format!("editor {i}")}), Some("\"2\"")));
    let outcomes = futures::future::join_all(attempts).await;
    let statuses: Vec<u16> = outcomes.iter().map(|(s, _)| *s).collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 409).count(),
        7,
        "{statuses:?}"
    );
    let (_, read) = gw.get(&path, &m.test_key).await;
    assert_eq!(read["version"], 3);
    let winner = outcomes.iter().find(|(s, _)| *s == 200).unwrap();
    assert_eq!(read["label"], winner.1["label"]);

    // Without a version, a change still applies to what is there now.
    let (status, changed) = patch(json!({"route_limit": 3}), None).await;
    assert_eq!((status, &changed["version"]), (200, &json!(4)), "{changed}");
    assert_eq!(changed["label"], winner.1["label"]);

    // Webhook endpoints likewise.
    let (status, endpoint) = gw
        .post(
            "/v1/webhook_endpoints",
            &m.test_key,
            json!({"url": "http://127.0.0.1:9/hooks"}),
        )
        .await;
    assert_eq!(
        (status, &endpoint["version"]),
        (201, &json!(1)),
        "{endpoint}"
    );
    let path = format!("/v1/webhook_endpoints/{}", endpoint["id"].as_str().unwrap());
    let (status, changed) = patch_at(
        &gw,
        &path,
        &m.test_key,
        json!({"description": "a"}),
        "\"1\"",
    )
    .await;
    assert_eq!((status, &changed["version"]), (200, &json!(2)), "{changed}");
    let (status, e) = patch_at(
        &gw,
        &path,
        &m.test_key,
        json!({"description": "b"}),
        "\"1\"",
    )
    .await;
    assert_eq!(status, 409, "{e}");
    assert_eq!(e["error"]["code"], "conflict");
    let response = gw
        .request(reqwest::Method::GET, &path, Some(&m.test_key))
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["etag"], "\"2\"");
    let read: Value = response.json().await.unwrap();
    assert_eq!(read["description"], "a");
}
both_backends!(edits_are_checked_against_the_version_read);

async fn patch_at(
    gw: &Gateway,
    path: &str,
    key: &str,
    body: Value,
    if_match: &str,
) -> (u16, Value) {
    gw.send(
        gw.request(reqwest::Method::PATCH, path, Some(key))
            .header("if-match", if_match)
            .json(&body),
    )
    .await
}

/// `pixgw vault rotate` beside merchants' changes: a secret saved while the rotation runs is
/// never replaced by the old one re-encrypted, and afterwards everything opens under the new
/// key alone — credentials' fields and webhook tokens, and webhook endpoints' secrets.
async fn rotation_never_undoes_a_concurrent_change(backend: Backend) {
    use pixgw::credentials::{open_fields, webhook_token_aad};
    use pixgw::store::Store;
    use pixgw::store::credentials::{CredentialRecord, Saved};
    use pixgw::vault::{Aad, MasterKey, Vault};

    const OLD: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    const NEW: &str = "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=";
    let key = |k| MasterKey::from_base64(k).unwrap();
    let db = TestDb::new(backend).await;
    let m = create_merchant(&db, "Loja");
    let store = Store::connect(&db.url).await.unwrap();
    store.migrate().await.unwrap();
    let old = Vault::new(key(OLD), vec![]);
    // Gateways restarted for the rotation seal under the new key and open both.
    let rotating = std::sync::Arc::new(Vault::new(key(NEW), vec![key(OLD)]));

    let seal = |vault: &Vault, id: &str, secret: &str| {
        BTreeMap::from([(
            "secret-key".to_owned(),
            vault.seal(
                secret.as_bytes(),
                &Aad::new("credentials", id, "secret-key"),
            ),
        )])
    };
    let mut ids = Vec::new();
    for i in 0..30 {
        let id = pixgw::domain::CredentialId::generate().to_string();
        let now = pixgw::store::now_ms();
        let record = CredentialRecord {
            id: id.parse().unwrap(),
            merchant_id: m.id.clone(),
            environment: pixgw::domain::Environment::Test,
            provider: "stripe".into(),
            label: format!("c{i}"),
            public_fields: BTreeMap::new(),
            sealed_fields: seal(&old, &id, "old secret"),
            webhook_id: uuid::Uuid::new_v4().to_string(),
            webhook_token_sealed: old.seal(b"token", &webhook_token_aad(&id)),
            active: true,
            position: i,
            route_limit: 1,
            created_at: now,
            updated_at: now,
            version: 1,
        };
        store.insert_credential(&record).await.unwrap().unwrap();
        ids.push(id);
    }

    // A merchant saves new secrets for every credential while the rotation runs.
    let editor = {
        let (store, vault, ids) = (store.clone(), rotating.clone(), ids.clone());
        tokio::spawn(async move {
            for id in &ids {
                loop {
                    let mut record = store.credential_by_id(id).await.unwrap().unwrap();
                    record.sealed_fields = seal(&vault, id, &format!("new secret of {id}"));
                    if store.update_credential(&record, true).await.unwrap() == Saved::Done {
                        break;
                    }
                }
                tokio::task::yield_now().await;
            }
        })
    };
    let rotated = pixgw::credentials::rotate_all(&store, &rotating)
        .await
        .unwrap();
    editor.await.unwrap();
    assert_eq!(rotated.credentials, 30);
    // Whatever the interleaving, the second pass found nothing left under the old key.
    let again = pixgw::credentials::rotate_all(&store, &rotating)
        .await
        .unwrap();
    assert_eq!(again.resealed, 0);

    let new_only = Vault::new(key(NEW), vec![]);
    for id in &ids {
        let record = store.credential_by_id(id).await.unwrap().unwrap();
        let fields = open_fields(&new_only, &record).unwrap();
        assert_eq!(fields["secret-key"], format!("new secret of {id}"), "{id}");
        assert_eq!(
            new_only
                .open_string(&record.webhook_token_sealed, &webhook_token_aad(id))
                .unwrap()
                .as_str(),
            "token"
        );
        assert_eq!(
            record.version, 2,
            "the rotation itself does not move versions"
        );
    }

    // A rotation that read a row before a merchant's change cannot write it back.
    let id = &ids[0];
    let stale = store.credential_by_id(id).await.unwrap().unwrap();
    let mut fresh = stale.clone();
    fresh.label = "renamed".into();
    assert_eq!(
        store.update_credential(&fresh, false).await.unwrap(),
        Saved::Done
    );
    assert_eq!(
        store.reseal_credential(&stale).await.unwrap(),
        Saved::Conflict
    );
    // And a change of label alone never writes the sealed fields back.
    let record = store.credential_by_id(id).await.unwrap().unwrap();
    assert_eq!(record.sealed_fields, stale.sealed_fields);
}
both_backends!(rotation_never_undoes_a_concurrent_change);

/// Webhook endpoints' signing secrets are part of the rotation: after it, the new key alone
/// signs deliveries (the CLI's count includes them).
async fn rotation_covers_webhook_endpoint_secrets(backend: Backend) {
    const OLD: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    const NEW: &str = "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=";
    let sim = start_sim().await;
    let db = TestDb::new(backend).await;
    let m = create_merchant(&db, "Loja");
    // The restarted gateway listens elsewhere than where the PSP notifies: the reconciler
    // finds the payment by asking.
    let with_key = |k: &str| GatewayOptions {
        env: vec![
            ("PIXGW_MASTER_KEY".into(), k.into()),
            ("PIXGW_ALLOW_PRIVATE_WEBHOOK_URLS".into(), "true".into()),
            ("PIXGW_RECONCILE_SCHEDULE".into(), "1s".into()),
            ("PIXGW_WORKER_POLL".into(), "200ms".into()),
        ],
        ..Default::default()
    };
    let gw = Gateway::start(&db, &sim, &["efi"], with_key(OLD)).await;
    gw.connect(&sim, &m.test_key, "efi", &[]).await;
    let (url, mut deliveries) = common::webhook_receiver("/hooks").await;
    let (status, endpoint) = gw
        .post("/v1/webhook_endpoints", &m.test_key, json!({"url": url}))
        .await;
    assert_eq!(status, 201, "{endpoint}");
    drop(gw);

    let output = cli_output(
        &db,
        &[
            ("PIXGW_MASTER_KEY", NEW),
            ("PIXGW_MASTER_KEY_PREVIOUS", OLD),
        ],
        &["vault", "rotate"],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.starts_with("1 credentials examined, 4 secrets re-encrypted"),
        "{stdout}"
    );
    assert!(stdout.contains("1 webhook endpoints"), "{stdout}");

    // The new key alone: a paid charge's event is signed and delivered.
    let gw = Gateway::start(&db, &sim, &["efi"], with_key(NEW)).await;
    let (status, charge) = gw
        .post(
            "/v1/charges",
            &m.test_key,
            json!({"amount": 100, "provider": "efi"}),
        )
        .await;
    assert_eq!(status, 201, "{charge}");
    sim_control(
        &sim,
        "/_sim/pay",
        Some(json!({"provider": "efi", "reference": charge["reference"]})),
    )
    .await;
    let delivery = tokio::time::timeout(Duration::from_secs(30), deliveries.recv())
        .await
        .expect("a delivery signed with the re-encrypted secret")
        .unwrap();
    assert!(
        delivery
            .headers
            .iter()
            .any(|(n, _)| n == "webhook-signature"),
        "{:?}",
        delivery.headers
    );
    drop(endpoint);
}
both_backends!(rotation_covers_webhook_endpoint_secrets);

/// `/metrics`, `/readyz` and `/v1/adapters` answer anyone: no credential id, no database
/// error, no path on the gateway's disk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn public_routes_tell_nothing_private() {
    let sim = start_sim().await;
    let db = TestDb::new(Backend::Postgres).await;
    let gw = Gateway::start(&db, &sim, &["efi"], options()).await;
    let m = create_merchant(&db, "Loja");
    let credential = gw.connect(&sim, &m.test_key, "efi", &[]).await;
    let (status, _) = gw
        .post(
            "/v1/charges",
            &m.test_key,
            json!({"amount": 100, "provider": "random"}),
        )
        .await;
    assert_eq!(status, 201);
    let metrics = gw
        .http
        .get(format!("{}/metrics", gw.url))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("pixgw_charges_total"), "{metrics}");
    let id = credential["id"].as_str().unwrap();
    assert!(!metrics.contains(id), "{metrics}");
    assert!(!metrics.contains("credential="), "{metrics}");

    // A broken adapter file: its name is reported, not where it lives.
    std::fs::write(gw.plugin_dir.join("efi.wasm"), b"\0asm garbage").unwrap();
    let adapters = poll(
        Duration::from_secs(30),
        "the broken file to be reported",
        async || {
            let list: Value = gw
                .http
                .get(format!("{}/v1/adapters", gw.url))
                .send()
                .await
                .ok()?
                .json()
                .await
                .ok()?;
            list["data"][0]["last_error"].as_str().map(str::to_owned)
        },
    )
    .await;
    assert!(
        adapters.starts_with("efi.wasm is not a valid adapter component"),
        "{adapters}"
    );
    let dir = gw.plugin_dir.display().to_string();
    assert!(!adapters.contains(&dir), "{adapters}");

    // The database goes away: not ready, and nothing of why beyond that.
    {
        use sqlx::Connection;
        let name = db.url.rsplit('/').next().unwrap().to_owned();
        let mut admin = sqlx::PgConnection::connect(&common::gateway::postgres_admin_url())
            .await
            .unwrap();
        sqlx::query(&format!("DROP DATABASE {name} WITH (FORCE)"))
            .execute(&mut admin)
            .await
            .unwrap();
    }
    let (status, body) = poll(Duration::from_secs(30), "readiness to fail", async || {
        let response = gw
            .http
            .get(format!("{}/readyz", gw.url))
            .send()
            .await
            .ok()?;
        let status = response.status().as_u16();
        let body: Value = response.json().await.ok()?;
        (status == 503).then_some((status, body))
    })
    .await;
    assert_eq!(status, 503);
    assert_eq!(body["status"], "not_ready");
    assert_eq!(body["database"], "unavailable", "{body}");
}

/// Failed authentications are counted per client address: past the limit the address gets 429
/// with Retry-After, whatever key it sends; requests without a key are not guesses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_authentications_are_limited_per_address() {
    let db = TestDb::new(Backend::Sqlite).await;
    let mut o = options();
    o.env.push(("PIXGW_AUTH_FAILURE_LIMIT".into(), "3".into()));
    let gw = Gateway::start_with(&db, None, &[], o).await;
    let m = create_merchant(&db, "Loja");
    for _ in 0..5 {
        let (status, e) = gw
            .send(gw.request(reqwest::Method::GET, "/v1/charges", None))
            .await;
        assert_eq!(
            (status, e["error"]["code"].as_str()),
            (401, Some("api_key_missing"))
        );
    }
    let (status, _) = gw.get("/v1/charges", &m.test_key).await;
    assert_eq!(status, 200);
    // The key with its last character changed (a key ending in x would stay itself).
    let last = if m.test_key.ends_with('x') { 'y' } else { 'x' };
    let wrong = format!("{}{last}", &m.test_key[..m.test_key.len() - 1]);
    for key in [wrong.as_str(), "not-a-key", wrong.as_str()] {
        let (status, e) = gw.get("/v1/charges", key).await;
        assert_eq!(status, 401, "{e}");
    }
    for key in [wrong.as_str(), m.test_key.as_str()] {
        let response = gw
            .request(reqwest::Method::GET, "/v1/charges", Some(key))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 429);
        let wait: u64 = response.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=20).contains(&wait), "{wait}");
        let e: Value = response.json().await.unwrap();
        assert_eq!(e["error"]["code"], "too_many_failed_authentications");
    }
}

/// Without PIXGW_MASTER_KEY, `serve` starts only when told it is a development setup; a bad
/// database URL is reported without its password.
#[tokio::test]
async fn serve_needs_a_master_key_or_the_development_flag() {
    let db = TestDb::new(Backend::Sqlite).await;
    let serve = |extra: &[&str], env: &[(&str, &str)]| {
        let mut command = tokio::process::Command::new(pixgw_bin());
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--plugin-dir"])
            .arg(db.dir.path().join("plugins"))
            .args(extra)
            .env("PIXGW_DATABASE_URL", &db.url)
            .env("PIXGW_DATA_DIR", db.dir.path().join("data"))
            .env_remove("PIXGW_MASTER_KEY")
            .env_remove("PIXGW_MASTER_KEY_PREVIOUS")
            .env_remove("PIXGW_INSECURE_DEV_MASTER_KEY")
            .envs(env.iter().copied())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        command
    };
    let output = tokio::time::timeout(Duration::from_secs(60), serve(&[], &[]).output())
        .await
        .expect("serve refuses at once")
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr
            .contains("PIXGW_MASTER_KEY is not set. Generate a key with `openssl rand -base64 32`"),
        "{stderr}"
    );
    assert!(stderr.contains("--insecure-dev-master-key"), "{stderr}");
    assert!(!db.dir.path().join("data/master.key").exists());

    for (extra, env) in [
        (&["--insecure-dev-master-key"][..], &[][..]),
        (
            &[][..],
            &[(
                "PIXGW_MASTER_KEY",
                "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
            )][..],
        ),
    ] {
        let mut child = serve(extra, env).spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout));
        let listening = tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if line.starts_with("pixgw listening on ") {
                    return true;
                }
            }
            false
        })
        .await
        .unwrap();
        assert!(listening, "{extra:?} {env:?}");
        child.kill().await.unwrap();
    }

    let output = cli_output(
        &db,
        &[(
            "PIXGW_DATABASE_URL",
            "mysql://pixgw:hunter2@db.internal/pixgw",
        )],
        &["migrate"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(!stderr.contains("hunter2"), "{stderr}");
    assert!(
        stderr.contains("mysql://pixgw:***@db.internal/pixgw"),
        "{stderr}"
    );
}

/// The cap on live streams per merchant is a setting (`PIXGW_MAX_LIVE_STREAMS`): with 1, a
/// second stream of the merchant is refused with 429 `too_many_streams` while the first is
/// open, and taken once it closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_streams_per_merchant_are_a_setting() {
    let sim = start_sim().await;
    let db = TestDb::new(Backend::Sqlite).await;
    let mut opts = options();
    opts.env.push(("PIXGW_MAX_LIVE_STREAMS".into(), "1".into()));
    let gw = Gateway::start(&db, &sim, &["efi"], opts).await;
    let m = create_merchant(&db, "Loja");
    gw.connect(&sim, &m.test_key, "efi", &[]).await;
    let (status, charge) = gw
        .post(
            "/v1/charges",
            &m.test_key,
            json!({"amount": 500, "provider": "efi"}),
        )
        .await;
    assert_eq!(status, 201, "{charge}");
    let path = format!("/v1/charges/{}/stream", charge["id"].as_str().unwrap());
    let open = || {
        gw.request(reqwest::Method::GET, &path, Some(&m.test_key))
            .send()
    };
    let first = open().await.unwrap();
    assert_eq!(first.status(), 200);
    let (status, refused) = gw.get(&path, &m.test_key).await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (429, Some("too_many_streams")),
        "{refused}"
    );
    drop(first);
    poll(
        Duration::from_secs(10),
        "the closed stream's place",
        async || {
            let again = open().await.unwrap();
            (again.status() == 200).then_some(())
        },
    )
    .await;
}
