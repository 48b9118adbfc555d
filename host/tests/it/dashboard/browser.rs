//! Headless Chromium through chromedriver (Debian's `chromium` and `chromium-driver`; `.ci/run`
//! installs them): the dashboard as a person uses it, with screenshots in `target/screenshots/`.
#![allow(dead_code)]

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, Locator};
use serde_json::json;

pub struct Browser {
    pub client: Client,
    driver: Child,
    pub base: String,
}

/// A desktop and a phone-sized viewport.
pub const DESKTOP: (u32, u32) = (1280, 900);
pub const PHONE: (u32, u32) = (390, 844);

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Browser {
    /// Starts chromedriver and a headless Chromium session whose pages live under `base`.
    pub async fn start(base: &str) -> Browser {
        let driver_bin = std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "chromedriver".into());
        let chrome_bin = std::env::var("CHROME").unwrap_or_else(|_| "/usr/bin/chromium".into());
        let port = free_port();
        // Its own process group: dropping the browser (a failed test too) ends chromedriver and
        // every Chromium process it started.
        let driver = Command::new(&driver_bin)
            .arg(format!("--port={port}"))
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start {driver_bin} ({e}): the dashboard's browser tests need Chromium \
                     and its driver (Debian: apt-get install chromium chromium-driver)"
                )
            });
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": chrome_bin,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         "--window-size=1280,900", "--lang=en-US", "--hide-scrollbars",
                         "--force-device-scale-factor=1"],
            }),
        );
        let url = format!("http://127.0.0.1:{port}");
        let mut last_error = None;
        for _ in 0..100 {
            match fantoccini::ClientBuilder::new(
                hyper_util::client::legacy::connect::HttpConnector::new(),
            )
            .capabilities(caps.clone())
            .connect(&url)
            .await
            {
                Ok(client) => {
                    let browser = Browser {
                        client,
                        driver,
                        base: base.to_owned(),
                    };
                    browser
                        .client
                        .set_window_size(DESKTOP.0, DESKTOP.1)
                        .await
                        .unwrap();
                    return browser;
                }
                Err(e) => {
                    last_error = Some(e);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
        panic!("chromedriver at {url} did not start a session: {last_error:?}");
    }

    pub async fn goto(&self, path: &str) {
        self.client
            .goto(&format!("{}{path}", self.base))
            .await
            .unwrap();
    }

    pub async fn path(&self) -> String {
        let url = self.client.current_url().await.unwrap();
        match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_owned(),
        }
    }

    /// Types into the field found by `css`, replacing what it held.
    pub async fn fill(&self, css: &str, text: &str) {
        let field = self.find(css).await;
        field.clear().await.unwrap();
        field.send_keys(text).await.unwrap();
    }

    /// Sets a field's value directly (long pasted PEMs: typing them key by key is slow).
    pub async fn paste(&self, css: &str, text: &str) {
        let field = self.find(css).await;
        self.client
            .execute(
                "arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('input'));",
                vec![serde_json::to_value(&field).unwrap(), json!(text)],
            )
            .await
            .unwrap();
    }

    pub async fn select(&self, css: &str, value: &str) {
        self.find(css).await.select_by_value(value).await.unwrap();
    }

    pub async fn click(&self, css: &str) {
        self.find(css).await.click().await.unwrap();
    }

    /// Waits up to 10 s for an element.
    pub async fn find(&self, css: &str) -> fantoccini::elements::Element {
        self.client
            .wait()
            .at_most(Duration::from_secs(10))
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no element {css} on {}: {e}", self.path_sync()))
    }

    fn path_sync(&self) -> String {
        String::from("the current page")
    }

    pub async fn exists(&self, css: &str) -> bool {
        self.client.find(Locator::Css(css)).await.is_ok()
    }

    pub async fn text(&self, css: &str) -> String {
        self.find(css).await.text().await.unwrap()
    }

    /// The whole page's visible text.
    pub async fn page_text(&self) -> String {
        self.text("body").await
    }

    /// Saves a PNG of the viewport as `target/screenshots/<name>.png`.
    pub async fn screenshot(&self, name: &str) {
        let png = self.client.screenshot().await.unwrap();
        let dir = crate::common::target_dir().join("screenshots");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
    }

    /// Screenshots at the desktop and the phone size, then back to desktop.
    pub async fn screenshots(&self, name: &str) {
        self.screenshot(&format!("{name}-desktop")).await;
        self.client.set_window_size(PHONE.0, PHONE.1).await.unwrap();
        self.screenshot(&format!("{name}-phone")).await;
        self.client
            .set_window_size(DESKTOP.0, DESKTOP.1)
            .await
            .unwrap();
    }

    /// Lets the pages of `base` read and write the clipboard (Chrome DevTools, through
    /// chromedriver's CDP endpoint).
    pub async fn grant_clipboard(&self) {
        self.cdp(
            "Browser.grantPermissions",
            json!({"permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"], "origin": self.base}),
        )
        .await;
    }

    /// What the page's clipboard holds now.
    pub async fn clipboard(&self) -> String {
        let value = self
            .client
            .execute_async(
                "const done = arguments[arguments.length - 1]; navigator.clipboard.readText().then(done, e => done('ERROR ' + e));",
                vec![],
            )
            .await
            .unwrap();
        value.as_str().unwrap_or_default().to_owned()
    }

    pub async fn cdp(&self, cmd: &str, params: serde_json::Value) -> serde_json::Value {
        #[derive(Debug)]
        struct Cdp(String, serde_json::Value);
        impl fantoccini::wd::WebDriverCompatibleCommand for Cdp {
            fn endpoint(
                &self,
                base: &url::Url,
                session: Option<&str>,
            ) -> Result<url::Url, url::ParseError> {
                base.join(&format!(
                    "session/{}/goog/cdp/execute",
                    session.unwrap_or_default()
                ))
            }
            fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
                (
                    http::Method::POST,
                    Some(json!({"cmd": self.0, "params": self.1}).to_string()),
                )
            }
        }
        self.client
            .issue_cmd(Cdp(cmd.to_owned(), params))
            .await
            .unwrap()
    }

    /// Ends the session; a browser that does not answer within 5 s is killed by `Drop`.
    pub async fn close(self) {
        let _ = tokio::time::timeout(Duration::from_secs(5), self.client.clone().close()).await;
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // The whole group: chromedriver and its browsers.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.driver.id())])
            .status();
        let _ = self.driver.wait();
    }
}
