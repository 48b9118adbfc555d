//! The onboarding a merchant does in a browser (headless Chromium, the real binary, the PSP
//! simulator): sign up → connect efi by pasting its PEMs → copy the webhook URL (read back from
//! the clipboard) → create an API key and charge with it over HTTP → move to the Pro plan (Free
//! has a team of one) → invite a cashier → as the
//! cashier, the PSPs page is 403 and API keys are not in the menu. Screenshots of every page,
//! desktop and phone, go to `target/screenshots/`.

use crate::common::gateway::{Backend, Gateway, GatewayOptions, TestDb};
use crate::dashboard::browser::Browser;
use crate::dashboard::support::PASSWORD;

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

    // Connect efi by pasting the simulator account's fields, PEMs included.
    browser.goto("/dashboard/psps").await;
    browser.screenshots("psps-empty").await;
    browser.goto("/dashboard/psps/connect/efi").await;
    browser.fill("#label", "Efí da loja").await;
    let efi = sim.provider("efi").unwrap();
    for (name, value) in &efi.credentials {
        browser.paste(&format!("#field-{name}"), value).await;
    }
    browser.screenshots("psps-connect").await;
    browser
        .click("form[action='/dashboard/psps/connect/efi'] button[type=submit]")
        .await;
    browser.find("#webhook-url").await;
    browser.screenshots("psps-detail").await;

    // Copy webhook URL: the clipboard holds exactly the URL the page shows.
    browser.grant_clipboard().await;
    let shown = browser.text("#webhook-url").await;
    assert!(shown.contains("/api/wh/"), "{shown}");
    browser.click("button[data-copy='#webhook-url']").await;
    let mut copied = String::new();
    for _ in 0..50 {
        copied = browser.clipboard().await;
        if copied == shown {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(copied, shown, "the clipboard holds the webhook URL");

    // An API key made here works at once with the API.
    browser.goto("/dashboard/api-keys").await;
    browser.fill("#key-label", "loja virtual").await;
    browser
        .click("form[action='/dashboard/api-keys'] button[type=submit]")
        .await;
    let key = browser.text("#new-api-key").await;
    assert!(key.starts_with("pgw_test_"), "{key}");
    browser.screenshots("api-key-created").await;
    let (status, charge) = gw
        .post(
            "/v1/charges",
            &key,
            serde_json::json!({"amount": 1990, "provider": "efi", "description": "Primeiro Pix"}),
        )
        .await;
    assert_eq!(status, 201, "{charge}");
    let (_, credential) = gw.get("/v1/credentials", &key).await;
    assert_eq!(credential["data"][0]["webhook"]["url"], shown.as_str());
    browser.goto("/dashboard").await;
    browser.screenshots("overview-first-charge").await;

    // A team of more than one person needs Pro: chosen on the plan page.
    browser.goto("/dashboard/plan").await;
    browser.click("button[name=plan][value=pro]").await;
    browser.find(".flash").await;
    assert_eq!(browser.text("#plan-name").await, "Pro");

    // Invite a cashier; as the cashier, the PSPs page is refused and API keys are not offered.
    browser.goto("/dashboard/team").await;
    browser
        .fill("#invite-email", "caixa@paoquente.com.br")
        .await;
    browser.select("#invite-role", "cashier").await;
    browser
        .click("form[action='/dashboard/team/invite'] button[type=submit]")
        .await;
    let link = browser.text("#invitation-link").await;
    browser.screenshots("team-invited").await;
    browser.client.delete_all_cookies().await.unwrap();
    let path = format!("/dashboard{}", link.split_once("/dashboard").unwrap().1);
    browser.goto(&path).await;
    browser.fill("#name", "Caio Caixa").await;
    browser.fill("#password", PASSWORD).await;
    browser.click("button[type=submit]").await;
    browser.find(".sidebar").await;
    assert!(
        !browser
            .exists(".sidebar a[href='/dashboard/api-keys']")
            .await
    );
    assert!(!browser.exists(".sidebar a[href='/dashboard/psps']").await);
    assert!(
        browser
            .exists(".sidebar a[href='/dashboard/cashier']")
            .await
    );
    browser.screenshots("overview-cashier").await;
    browser.goto("/dashboard/psps").await;
    assert!(browser.page_text().await.contains("Access denied"));
    browser.screenshots("forbidden").await;

    browser.close().await;
}
