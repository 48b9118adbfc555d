//! The plan in the dashboard: the owner's plan page in a browser (the plan, this month's usage,
//! the eight plans side by side, a change of plan), the plan's refusals in words — the cashier's
//! eleventh live charge of the month in English and Portuguese, the cashier on a phone, a key,
//! an invitation — and the "on request" plans the dashboard does not sell. Screenshots go to
//! `target/screenshots/`.

use serde_json::json;

use crate::common::gateway::{Backend, Gateway, GatewayOptions, TestDb, cli};
use crate::common::start_sim;
use crate::dashboard::browser::Browser;
use crate::dashboard::support::{PASSWORD, Visitor};

const OWNER: &str = "dona@feira.com.br";
const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 \
     (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1";

async fn sign_in(browser: &Browser) {
    browser.goto("/dashboard/sign-in").await;
    browser.fill("#email", OWNER).await;
    browser.fill("#password", PASSWORD).await;
    browser.click("button[type=submit]").await;
    browser.find(".sidebar").await;
}

/// Types an amount at the cashier and sends it; the refusal's message and hint.
async fn sell_refused(browser: &Browser) -> (String, String) {
    browser.goto("/dashboard/cashier").await;
    browser.fill("#amount", "19,90").await;
    browser.click("#create-sale").await;
    let alert = browser.text("#sale-error").await;
    let hint = browser.text("#sale-error .hint").await;
    (alert.replace(&hint, "").trim().to_owned(), hint)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_page_and_the_plans_words_in_the_cashier() {
    let db = TestDb::new(Backend::Sqlite).await;
    let sim = start_sim().await;
    let gw = Gateway::start(&db, &sim, &["efi"], GatewayOptions::default()).await;
    // A new merchant starts on Free.
    let owner = Visitor::sign_up_free(&gw, "Feira", OWNER).await;
    let merchant = cli(&db, &[], &["merchant", "list"])
        .lines()
        .find(|l| l.ends_with("Feira"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .to_owned();
    let live_key = cli(
        &db,
        &[],
        &["key", "create", "--merchant", &merchant, "--env", "live"],
    );
    let fields = sim.provider("efi").unwrap().live_credentials.unwrap();
    let (status, body) = gw
        .post(
            "/v1/credentials",
            &live_key,
            json!({"provider": "efi", "fields": fields}),
        )
        .await;
    assert_eq!(status, 201, "{body}");

    let browser = Browser::start(&gw.url).await;
    sign_in(&browser).await;
    assert!(browser.exists(".sidebar a[href='/dashboard/plan']").await);
    browser.goto("/dashboard/plan").await;
    assert_eq!(browser.text("#plan-name").await, "Free");
    assert_eq!(
        browser
            .text("#usage li[data-resource=live_charges] .usage-count")
            .await,
        "0 / 10"
    );
    let columns = browser
        .client
        .find_all(fantoccini::Locator::Css("#plans thead th[data-plan]"))
        .await
        .unwrap();
    let mut names = Vec::new();
    for c in columns {
        names.push(c.text().await.unwrap());
    }
    assert_eq!(
        names,
        [
            "Free",
            "Basic",
            "Pro",
            "Business",
            "Scale",
            "Enterprise",
            "Ultra",
            "Ultra 2"
        ]
    );
    assert!(
        browser
            .text("#downgrade-note")
            .await
            .contains("what you have keeps working, and nothing new is created beyond")
    );
    // "On request" plans have no button: the operator sets them.
    assert!(!browser.exists("button[value=ultra]").await);
    assert!(!browser.exists("button[value=ultra_2]").await);
    assert!(browser.exists("button[value=basic]").await);
    browser.screenshots("plan-free").await;

    // Ten live charges this month, then the cashier's eleventh is refused in words.
    for n in 1..=10 {
        let (status, body) = gw
            .post(
                "/v1/charges",
                &live_key,
                json!({"amount": 1000, "provider": "efi"}),
            )
            .await;
        assert_eq!(status, 201, "charge {n}: {body}");
    }
    browser.goto("/dashboard").await;
    browser.click(".env-switch button[value=live]").await;
    browser.find("body.env-live").await;
    let (message, hint) = sell_refused(&browser).await;
    assert_eq!(
        message,
        "The Free plan allows 10 live charges a month and this month already has 10."
    );
    assert_eq!(
        hint,
        "The count starts again on the 1st of next month, or move to the Basic plan \
         (R$47.00/month: 500) on the Plan page."
    );
    assert_eq!(
        browser
            .find("#amount")
            .await
            .prop("value")
            .await
            .unwrap()
            .as_deref(),
        Some("19,90"),
        "the typed amount stays"
    );
    browser.screenshots("cashier-plan-limit").await;
    browser
        .goto("/dashboard/language?lang=pt-BR&next=/dashboard/cashier")
        .await;
    let (message, hint) = sell_refused(&browser).await;
    assert_eq!(
        message,
        "O plano Free permite 10 cobranças em produção por mês e este mês já tem 10."
    );
    assert_eq!(
        hint,
        "A contagem recomeça no dia 1º do próximo mês, ou mude para o plano Basic \
         (R$ 47,00/mês: 500) na página Plano."
    );
    browser.screenshots("cashier-plan-limit-pt").await;
    browser
        .goto("/dashboard/language?lang=en&next=/dashboard")
        .await;

    // A payer at a payment link's checkout is told the store can take no more payments.
    let (status, link) = gw
        .post(
            "/v1/payment_links",
            &live_key,
            json!({"name": "Cesta", "amount": 3000, "provider": "efi"}),
        )
        .await;
    assert_eq!(status, 201, "{link}");
    let path = format!("/p/{}", link["slug"].as_str().unwrap());
    let payer = Visitor::new(&gw);
    payer.get(&path).await.assert_ok();
    let refused = payer.post(&path, &[]).await;
    assert_eq!(refused.status, 403);
    assert!(
        refused
            .text()
            .contains("This store cannot take more payments this month. Please contact the store."),
        "{}",
        refused.text()
    );

    // The cashier on a phone is not in Free.
    browser
        .cdp(
            "Emulation.setUserAgentOverride",
            json!({"userAgent": IPHONE}),
        )
        .await;
    browser.goto("/dashboard/cashier").await;
    assert_eq!(
        browser.text("#error-message").await,
        "The Free plan does not include the cashier on a phone."
    );
    assert_eq!(
        browser.text("#error-hint").await,
        "Use the cashier on a computer, or move to the Pro plan (R$97.00/month: the cashier \
         on a phone) on the Plan page."
    );
    browser.screenshots("cashier-phone-not-in-plan").await;

    // The owner moves to Pro: the phone's cashier opens and the month has room again.
    browser.goto("/dashboard/plan").await;
    browser.click("button[name=plan][value=pro]").await;
    browser.find(".flash").await;
    assert_eq!(browser.text("#plan-name").await, "Pro");
    assert_eq!(
        browser
            .text("#usage li[data-resource=live_charges] .usage-count")
            .await,
        "10 / 1,500"
    );
    browser.screenshots("plan-pro").await;
    browser.goto("/dashboard/cashier").await;
    browser.fill("#amount", "19,90").await;
    browser.click("#create-sale").await;
    browser.find(".live-charge[data-state=pending] #qr").await;
    browser.screenshots("cashier-phone-pro").await;

    // Over HTTP: the plans the dashboard does not sell, and the page-level refusals.
    owner.get("/dashboard/plan").await.assert_ok();
    let refused = owner.post("/dashboard/plan", &[("plan", "ultra")]).await;
    assert_eq!(refused.status, 422);
    assert!(
        refused
            .text()
            .contains("The Ultra plan is on request: ask the operator to set it."),
        "{}",
        refused.text()
    );
    cli(&db, &[], &["merchant", "set-plan", &merchant, "free"]);
    owner.get("/dashboard/api-keys").await.assert_ok();
    owner
        .post("/dashboard/api-keys", &[("label", "loja")])
        .await
        .assert_ok();
    let refused = owner
        .post("/dashboard/api-keys", &[("label", "outra")])
        .await;
    assert_eq!(refused.status, 403);
    assert!(
        refused.text().contains(
            "The Free plan allows 1 API keys in Test and 1 are active. Revoke an API key, or \
             move to the Pro plan (R$97.00/month: 2) on the Plan page."
        ),
        "{}",
        refused.text()
    );
    owner.get("/dashboard/team").await.assert_ok();
    let refused = owner
        .post(
            "/dashboard/team/invite",
            &[("email", "caixa@feira.com.br"), ("role", "cashier")],
        )
        .await;
    assert_eq!(refused.status, 422);
    assert!(
        refused.text().contains(
            "The Free plan allows 1 people on the team and it has 1 (members and open \
             invitations). Remove a member or revoke an open invitation, or move to the Pro \
             plan (R$97.00/month: 5) on the Plan page."
        ),
        "{}",
        refused.text()
    );
}
