//! The real `pixgw serve` binary: it loads the plugin directory, reports adapters to operators,
//! and hot-reloads a file dropped into the directory.

use crate::common;

use std::time::Duration;

use common::gateway::{Backend, Gateway, GatewayOptions, TestDb};
use common::{built_adapter, poll};

async fn adapters(gw: &Gateway) -> Option<serde_json::Value> {
    let response = gw
        .http
        .get(format!("{}/v1/adapters", gw.url))
        .send()
        .await
        .ok()?;
    response.json().await.ok()
}

#[tokio::test]
async fn serve_reports_adapters_and_hot_reloads_them() {
    let db = TestDb::new(Backend::Sqlite).await;
    let gw = Gateway::start_with(&db, None, &["efi"], GatewayOptions::default()).await;

    let listed = poll(
        Duration::from_secs(60),
        "the gateway to answer",
        async || adapters(&gw).await,
    )
    .await;
    let efi = &listed["data"][0];
    assert_eq!(efi["id"], "efi");
    let sha = pixgw::runtime::registry::sha256_hex(&std::fs::read(built_adapter("efi")).unwrap());
    assert_eq!(efi["serving_sha256"], sha.as_str());
    assert_eq!(efi["manifest"]["display_name"], "Efí Bank");
    assert_eq!(efi["last_error"], serde_json::Value::Null);

    // An operator drops a broken file in: the gateway refuses it and keeps serving the old one.
    std::fs::write(gw.plugin_dir.join("efi.wasm"), b"\0asm garbage").unwrap();
    let after = poll(
        Duration::from_secs(30),
        "the broken file to be reported",
        async || {
            adapters(&gw)
                .await
                .filter(|a| a["data"][0]["last_error"].is_string())
        },
    )
    .await;
    assert_eq!(after["data"][0]["serving_sha256"], sha.as_str());
    assert!(
        after["data"][0]["last_error"]
            .as_str()
            .unwrap()
            .contains("efi.wasm is not a valid adapter component")
    );
}
