//! The real `pixgw serve` binary: it loads the plugin directory, reports adapters to operators,
//! and hot-reloads a file dropped into the directory.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{built_adapter, poll};

struct Gateway {
    child: Child,
    url: String,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn adapters(client: &reqwest::Client, gw: &Gateway) -> Option<serde_json::Value> {
    let response = client
        .get(format!("{}/v1/adapters", gw.url))
        .send()
        .await
        .ok()?;
    response.json().await.ok()
}

#[tokio::test]
async fn serve_reports_adapters_and_hot_reloads_them() {
    let plugins = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    std::fs::copy(built_adapter("efi"), plugins.path().join("efi.wasm")).unwrap();
    let port = free_port();
    let gw = Gateway {
        child: Command::new(env!("CARGO_BIN_EXE_pixgw"))
            .args([
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--plugin-dir",
            ])
            .arg(plugins.path())
            .arg("--compile-cache-dir")
            .arg(cache.path())
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
        url: format!("http://127.0.0.1:{port}"),
    };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();

    let listed = poll(
        Duration::from_secs(60),
        "the gateway to answer",
        async || adapters(&client, &gw).await,
    )
    .await;
    let efi = &listed["data"][0];
    assert_eq!(efi["id"], "efi");
    let sha = pixgw::runtime::registry::sha256_hex(&std::fs::read(built_adapter("efi")).unwrap());
    assert_eq!(efi["serving_sha256"], sha.as_str());
    assert_eq!(efi["manifest"]["display_name"], "Efí Bank");
    assert_eq!(efi["last_error"], serde_json::Value::Null);

    // An operator drops a broken file in: the gateway refuses it and keeps serving the old one.
    std::fs::write(plugins.path().join("efi.wasm"), b"\0asm garbage").unwrap();
    let after = poll(
        Duration::from_secs(30),
        "the broken file to be reported",
        async || {
            adapters(&client, &gw)
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
