//! The public checkout of payment links (`/p/<slug>`): opening it creates nothing, pressing pay
//! creates one charge that a reload or a second press finds again, the payer follows it to
//! paid; used-up, expired, not-yet-open, deactivated and unknown links say so and create
//! nothing; typed amounts and payer fields are checked inline; charge creation is limited per
//! address. Over HTTP on both backends, and in headless Chromium (with screenshots in
//! `target/screenshots/checkout-*`).

use serde_json::{Value, json};

use super::links::Fixture;
use crate::both_backends;
use crate::common::decode_qr;
use crate::common::gateway::{Backend, GatewayOptions};
use crate::dashboard::browser::Browser;
use crate::dashboard::support::{Answer, Visitor};

/// Text as the page shows it, for HTML-escaped values such as a BR Code.
fn unescape(html: &str) -> String {
    html.replace("&#x2f;", "/")
        .replace("&#47;", "/")
        .replace("&amp;", "&")
        .replace("&#x27;", "'")
        .replace("&#39;", "'")
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
}

fn json_of(answer: &Answer) -> Value {
    serde_json::from_str(&answer.body).unwrap_or_else(|_| panic!("not JSON: {}", answer.body))
}

/// A payer's browser over HTTP, with the page read (its cookies and form token kept).
async fn payer_at(f: &Fixture, path: &str) -> (Visitor, Answer) {
    let payer = Visitor::new(&f.gw);
    let page = payer.get(path).await;
    (payer, page)
}

both_backends!(opening_a_link_creates_nothing_and_paying_creates_one_charge);
async fn opening_a_link_creates_nothing_and_paying_creates_one_charge(backend: Backend) {
    let f = Fixture::open(backend, &[], GatewayOptions::default()).await;
    let link = f
        .link(json!({"name": "Camiseta azul", "amount": 2500, "provider": "efi"}))
        .await;
    let path = Fixture::path(&link);

    let (payer, page) = payer_at(&f, &path).await;
    let text = page.text();
    for expected in [
        "Loja Azul",
        "Camiseta azul",
        "R$25.00",
        "Pay with Pix",
        "Test mode: no real money is charged.",
    ] {
        assert!(text.contains(expected), "{expected:?} in {text}");
    }
    assert!(
        !page.body.contains("class=\"sidebar\""),
        "no dashboard chrome"
    );
    assert!(
        f.charges().await.is_empty(),
        "opening the page creates no charge"
    );
    payer.get(&path).await.assert_ok();
    assert!(f.charges().await.is_empty(), "nor does a reload");

    // Pressing pay creates the charge, for the link's merchant, naming the link.
    payer.post(&path, &[]).await.assert_redirect(&path);
    let charges = f.charges().await;
    assert_eq!(charges.len(), 1, "{charges:?}");
    let charge = charges[0].clone();
    assert_eq!(
        (
            &charge["amount"],
            &charge["provider"],
            &charge["description"],
            &charge["status"]
        ),
        (
            &json!(2500),
            &json!("efi"),
            &json!("Camiseta azul"),
            &json!("pending")
        )
    );
    assert_eq!(
        charge["payment_link"],
        json!({"id": link["id"], "name": "Camiseta azul"})
    );
    let screen = payer.get(&path).await;
    assert!(screen.body.contains("data-state=\"pending\""));
    let code = charge["pix"]["copy_paste"].as_str().unwrap();
    assert!(
        unescape(&screen.body).contains(code),
        "the copy-and-paste code is on the page"
    );
    assert!(
        screen
            .body
            .contains(&format!("data-stream=\"{path}/stream\""))
    );

    // A second press and a reload find the same charge.
    payer.post(&path, &[]).await.assert_redirect(&path);
    payer.get(&path).await.assert_ok();
    assert_eq!(f.charges().await.len(), 1);

    // The status follows the payer's own charge only.
    let status = payer.get(&format!("{path}/status")).await;
    assert_eq!(json_of(&status)["status"], "pending");
    let (stranger, page) = payer_at(&f, &path).await;
    assert!(
        page.body.contains("id=\"pay\""),
        "another visitor gets a form of their own"
    );
    assert_eq!(stranger.get(&format!("{path}/status")).await.status, 404);
    assert_eq!(stranger.get(&format!("{path}/stream")).await.status, 404);
    // A charge id (or anything but the payer's reference) in the cookie shows nothing.
    let cookie = format!("pgw_pay_{}", link["id"].as_str().unwrap());
    stranger.set_cookie(&cookie, charge["id"].as_str().unwrap());
    assert_eq!(stranger.get(&format!("{path}/status")).await.status, 404);

    // Paid at the PSP: the payer's page says so, the link counts it.
    f.pay(&charge).await;
    assert_eq!(
        json_of(&payer.get(&format!("{path}/status")).await)["status"],
        "paid"
    );
    let stream = payer.get(&format!("{path}/stream")).await;
    assert!(
        stream.body.contains("event: status") && stream.body.contains("\"status\":\"paid\""),
        "the stream sends the final status and ends: {}",
        stream.body
    );
    let screen = payer.get(&path).await;
    assert!(screen.body.contains("data-state=\"paid\""));
    let read = f.read(&link).await;
    assert_eq!(
        (&read["paid_count"], &read["paid_amount"]),
        (&json!(1), &json!(2500))
    );

    // The paid event names the link; a rename later leaves the charge's name as it was.
    let (_, events) =
        f.gw.get("/v1/events?type=charge.paid", &f.shop.test_key)
            .await;
    assert_eq!(
        events["data"][0]["data"]["object"]["payment_link"],
        json!({"id": link["id"], "name": "Camiseta azul"})
    );
    let (status, _) =
        f.gw.send(
            f.gw.request(
                reqwest::Method::PATCH,
                &format!("/v1/payment_links/{}", link["id"].as_str().unwrap()),
                Some(&f.shop.test_key),
            )
            .json(&json!({"name": "Camiseta verde"})),
        )
        .await;
    assert_eq!(status, 200);
    let (_, again) =
        f.gw.get(
            &format!("/v1/charges/{}", charge["id"].as_str().unwrap()),
            &f.shop.test_key,
        )
        .await;
    assert_eq!(again["payment_link"]["name"], "Camiseta azul");
    // The dashboard's charge page names it too.
    let detail = f
        .shop
        .owner
        .get(&format!(
            "/dashboard/charges/{}",
            charge["id"].as_str().unwrap()
        ))
        .await;
    assert!(
        detail.text().contains("Payment link Camiseta azul"),
        "{}",
        detail.text()
    );

    // Another payment starts a new session: a new form, and a second charge when paid for.
    payer
        .post(&format!("{path}/new"), &[])
        .await
        .assert_redirect(&path);
    let form = payer.get(&path).await;
    assert!(form.body.contains("id=\"pay\""));
    payer.post(&path, &[]).await.assert_redirect(&path);
    assert_eq!(f.charges().await.len(), 2);

    // The language switch comes back to the page, in Portuguese.
    payer
        .get(&format!("/dashboard/language?lang=pt-BR&next={path}"))
        .await
        .assert_redirect(&path);
    assert!(
        payer
            .get(&path)
            .await
            .text()
            .contains("Aguardando o pagamento")
    );
}

both_backends!(a_used_up_link_says_so_and_creates_nothing);
async fn a_used_up_link_says_so_and_creates_nothing(backend: Backend) {
    let f = Fixture::open(backend, &[], GatewayOptions::default()).await;
    let link = f
        .link(json!({"name": "Última vaga", "amount": 1000, "usage_limit": 1, "provider": "efi"}))
        .await;
    let path = Fixture::path(&link);
    // Two payers press pay before anyone paid: the limit counts paid payments, so both get a
    // charge. A third has the form open.
    let (first, _) = payer_at(&f, &path).await;
    let (second, _) = payer_at(&f, &path).await;
    let (third, _) = payer_at(&f, &path).await;
    first.post(&path, &[]).await.assert_redirect(&path);
    second.post(&path, &[]).await.assert_redirect(&path);
    let charges = f.charges().await;
    assert_eq!(charges.len(), 2);

    // The first payment uses the link up: nobody gets a charge any more. (Newest first: the
    // first payer's charge is the last.)
    let (first_charge, second_charge) = (&charges[1], &charges[0]);
    f.pay(first_charge).await;
    assert_eq!(f.read(&link).await["status"], "used_up");
    let refused = third.post(&path, &[]).await;
    assert_eq!(refused.status, 410);
    assert!(
        refused.text().contains("This link is used up"),
        "{}",
        refused.text()
    );
    let (_, page) = payer_at(&f, &path).await;
    assert_eq!(page.status, 410);
    assert!(
        page.text()
            .contains("This payment link has already received all the payments it takes.")
    );
    assert!(!page.body.contains("id=\"pay\""));
    assert_eq!(f.charges().await.len(), 2, "no charge after the limit");

    // The charge already pending can still be paid: that is the most the limit is exceeded by.
    f.pay(second_charge).await;
    assert_eq!(f.read(&link).await["paid_count"], 2);
    // Each payer still sees their own paid charge.
    for payer in [&first, &second] {
        let screen = payer.get(&path).await;
        assert!(screen.assert_ok().contains("data-state=\"paid\""));
    }
}

both_backends!(closed_and_unknown_links_say_why_and_create_nothing);
async fn closed_and_unknown_links_say_why_and_create_nothing(backend: Backend) {
    let f = Fixture::open(backend, &[], GatewayOptions::default()).await;
    let expired = f
        .link(json!({"name": "Promoção", "amount": 100, "valid_until": "2020-01-01T03:00:00Z"}))
        .await;
    let scheduled = f
        .link(json!({"name": "Pré-venda", "amount": 100, "valid_from": "2099-03-01T13:00:00Z"}))
        .await;
    let inactive = f
        .link(json!({"name": "Antigo", "amount": 100, "active": false}))
        .await;
    let cases = [
        (
            &expired,
            410,
            "This link has expired",
            "took payments until 2020-01-01 00:00",
        ),
        (
            &scheduled,
            403,
            "This link is not open yet",
            "starts taking payments on 2099-03-01 10:00",
        ),
        (
            &inactive,
            410,
            "This link is not available",
            "was deactivated",
        ),
    ];
    let open = f.link(json!({"name": "Aberto", "amount": 500})).await;
    for (link, status, title, detail) in cases {
        let path = Fixture::path(link);
        // The payer has a form's token from an open link, as a browser would.
        let (payer, _) = payer_at(&f, &Fixture::path(&open)).await;
        let page = payer.get(&path).await;
        assert_eq!(page.status, status, "{path}");
        let text = page.text();
        assert!(text.contains(title) && text.contains(detail), "{text}");
        assert!(!page.body.contains("id=\"pay\""));
        let pressed = payer.post(&path, &[]).await;
        assert_eq!(pressed.status, status, "{path}: pressing pay anyway");
    }
    // In the payer's language.
    let mut payer = Visitor::new(&f.gw);
    payer.language = "pt-BR";
    let page = payer.get(&Fixture::path(&expired)).await;
    assert!(page.text().contains("Este link expirou"), "{}", page.text());

    // A link deactivated while the payer had the form open.
    let late = f.link(json!({"name": "Rifa", "amount": 500})).await;
    let path = Fixture::path(&late);
    let (payer, page) = payer_at(&f, &path).await;
    page.assert_ok();
    let (status, _) =
        f.gw.post(
            &format!(
                "/v1/payment_links/{}/deactivate",
                late["id"].as_str().unwrap()
            ),
            &f.shop.test_key,
            json!({}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(payer.post(&path, &[]).await.status, 410);

    // Unknown addresses are a page, not JSON.
    for path in ["/p/nao-existe", "/p/Á", "/p/ab"] {
        let page = Visitor::new(&f.gw).get(path).await;
        assert_eq!(page.status, 404, "{path}");
        assert!(
            page.text().contains("Payment link not found"),
            "{path}: {}",
            page.body
        );
    }
    // A form without its token (a stale page, another site) is refused with a page.
    let path = Fixture::path(&open);
    let (payer, _) = payer_at(&f, &path).await;
    let refused = payer.post_without_csrf(&path, &[]).await;
    assert_eq!(refused.status, 403);
    assert!(
        refused.text().contains("The page is out of date"),
        "{}",
        refused.text()
    );
    assert!(
        f.charges().await.is_empty(),
        "no closed link created a charge"
    );
}

both_backends!(an_open_amount_is_checked_inline);
async fn an_open_amount_is_checked_inline(backend: Backend) {
    let f = Fixture::open(backend, &[], GatewayOptions::default()).await;
    let link = f
        .link(json!({"name": "Doação", "min_amount": 500, "max_amount": 10000, "provider": "efi"}))
        .await;
    let path = Fixture::path(&link);
    let (payer, page) = payer_at(&f, &path).await;
    assert!(
        page.text()
            .contains("Type an amount from R$5.00 to R$100.00."),
        "{}",
        page.text()
    );
    for (typed, message) in [
        ("4,99", "The minimum amount is R$5.00."),
        ("100,01", "The maximum amount is R$100.00."),
        ("abc", "Invalid amount."),
        ("", "Invalid amount."),
    ] {
        let refused = payer.post(&path, &[("amount", typed)]).await;
        assert_eq!(refused.status, 422, "{typed:?}");
        assert!(
            refused.text().contains(message),
            "{typed:?}: {}",
            refused.text()
        );
        assert_eq!(refused.input_value("amount").as_deref(), Some(typed));
    }
    assert!(f.charges().await.is_empty());
    payer
        .post(&path, &[("amount", "12,34")])
        .await
        .assert_redirect(&path);
    let charges = f.charges().await;
    assert_eq!(charges.len(), 1);
    assert_eq!(charges[0]["amount"], 1234);
}

both_backends!(the_checkout_asks_for_what_the_psp_needs);
async fn the_checkout_asks_for_what_the_psp_needs(backend: Backend) {
    let f = Fixture::open(backend, &["pagbank"], GatewayOptions::default()).await;
    // PagBank needs the payer's CPF or CNPJ.
    let link = f
        .link(json!({"name": "Aula", "amount": 1500, "provider": "pagbank"}))
        .await;
    let path = Fixture::path(&link);
    let (payer, page) = payer_at(&f, &path).await;
    assert!(page.body.contains("name=\"document\""));
    assert!(!page.body.contains("name=\"email\"") && !page.body.contains("name=\"name\""));
    let refused = payer.post(&path, &[("document", "529.982.247-26")]).await;
    assert_eq!(refused.status, 422);
    assert!(refused.text().contains("Invalid CPF or CNPJ."));
    assert!(f.charges().await.is_empty());
    payer
        .post(&path, &[("document", "529.982.247-25")])
        .await
        .assert_redirect(&path);
    let charges = f.charges().await;
    assert_eq!(
        (&charges[0]["provider"], &charges[0]["payer"]["document"]),
        (&json!("pagbank"), &json!("52998224725"))
    );
    // `random` asks for nothing while a connected PSP (efi) takes charges without it.
    for provider in ["random", "efi"] {
        let link = f
            .link(json!({"name": "Livre", "amount": 100, "provider": provider}))
            .await;
        let (_, page) = payer_at(&f, &Fixture::path(&link)).await;
        assert!(!page.body.contains("name=\"document\""), "{provider}");
    }
}

both_backends!(charge_creation_is_limited_per_address);
async fn charge_creation_is_limited_per_address(backend: Backend) {
    let options = GatewayOptions {
        env: vec![("PIXGW_CHECKOUT_RATE_LIMIT".into(), "2".into())],
        ..Default::default()
    };
    let f = Fixture::open(backend, &[], options).await;
    let link = f
        .link(json!({"name": "Pão", "amount": 800, "provider": "efi"}))
        .await;
    let path = Fixture::path(&link);
    let (one, _) = payer_at(&f, &path).await;
    let (two, _) = payer_at(&f, &path).await;
    let (three, _) = payer_at(&f, &path).await;
    one.post(&path, &[]).await.assert_redirect(&path);
    two.post(&path, &[]).await.assert_redirect(&path);
    let refused = three.post(&path, &[]).await;
    assert_eq!(refused.status, 429);
    assert!(
        refused.text().contains("Too many attempts in a row. Wait"),
        "{}",
        refused.text()
    );
    assert_eq!(f.charges().await.len(), 2);
    // A payer pressing again finds their charge: that takes nothing from the limit.
    one.post(&path, &[]).await.assert_redirect(&path);
    assert!(one.get(&path).await.body.contains("data-state=\"pending\""));
    assert_eq!(f.charges().await.len(), 2);
}

async fn wait_paid(browser: &Browser) {
    browser
        .find(".live-charge[data-state=paid] .when-paid")
        .await;
    let same = browser
        .client
        .execute("return window.__sameDocument === true;", vec![])
        .await
        .unwrap();
    assert_eq!(
        same,
        Value::Bool(true),
        "the page turned to paid without a reload"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payer_pays_a_link_in_a_browser() {
    let f = Fixture::open(Backend::Sqlite, &[], GatewayOptions::default()).await;
    let link = f
        .link(json!({"name": "Camiseta azul", "amount": 5990, "provider": "efi"}))
        .await;
    let path = Fixture::path(&link);
    let browser = Browser::start(&f.gw.url).await;
    browser.goto(&path).await;
    browser.find("#pay").await;
    assert!(browser.text("#fixed-amount").await.contains("R$59.90"));
    browser.screenshots("checkout-form").await;
    assert!(
        f.charges().await.is_empty(),
        "opening the page creates no charge"
    );

    browser.click("#pay").await;
    browser.find(".live-charge[data-state=pending] #qr").await;
    let qr = browser.find("#qr").await.screenshot().await.unwrap();
    let code = browser
        .find("#copy-paste")
        .await
        .prop("value")
        .await
        .unwrap()
        .unwrap();
    assert!(code.starts_with("000201"), "{code}");
    assert_eq!(
        decode_qr(&qr).as_deref(),
        Some(code.as_str()),
        "the QR decodes to the code"
    );
    let charges = f.charges().await;
    assert_eq!(charges.len(), 1);
    assert_eq!(charges[0]["pix"]["copy_paste"], code.as_str());
    browser.screenshots("checkout-pending").await;

    browser
        .client
        .execute("window.__sameDocument = true;", vec![])
        .await
        .unwrap();
    f.pay(&charges[0]).await;
    wait_paid(&browser).await;
    let text = browser.text(".when-paid").await;
    assert!(text.contains("Paid") && text.contains("R$59.90"), "{text}");
    browser.screenshots("checkout-paid").await;
    // A reload shows the same paid charge; in Portuguese after the switch.
    browser.goto(&path).await;
    browser.find(".live-charge[data-state=paid]").await;
    browser.click("a[lang=pt-BR]").await;
    browser.find(".live-charge[data-state=paid]").await;
    assert!(browser.text(".when-paid").await.contains("Pago"));
    browser.screenshot("checkout-paid-pt-desktop").await;
    assert_eq!(f.charges().await.len(), 1);

    // The merchant's side: the link, its address and QR code, one payment.
    browser
        .goto("/dashboard/language?lang=en&next=/dashboard/sign-in")
        .await;
    browser.fill("#email", "dono@lojaazul.com.br").await;
    browser
        .fill("#password", crate::dashboard::support::PASSWORD)
        .await;
    browser.click("button[type=submit]").await;
    browser.find(".sidebar").await;
    browser.goto("/dashboard/links").await;
    let row = browser
        .text(&format!("#link-{}", link["id"].as_str().unwrap()))
        .await;
    assert!(
        row.contains("Camiseta azul") && row.contains("R$59.90"),
        "{row}"
    );
    // A fixed amount hides the bounds of a typed one.
    assert!(
        !browser
            .find("#link-min")
            .await
            .is_displayed()
            .await
            .unwrap()
    );
    browser.click("#mode-open").await;
    assert!(
        browser
            .find("#link-min")
            .await
            .is_displayed()
            .await
            .unwrap()
    );
    browser.screenshots("links-list").await;
    browser.click(".link-name").await;
    assert_eq!(browser.text("#link-paid").await, "1");
    browser.screenshots("links-detail").await;
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_meets_the_minimum_a_used_up_link_and_an_expired_one() {
    let f = Fixture::open(Backend::Sqlite, &[], GatewayOptions::default()).await;
    let link = f
        .link(json!({"name": "Vaquinha da festa", "min_amount": 500, "usage_limit": 1, "provider": "efi"}))
        .await;
    let path = Fixture::path(&link);
    let browser = Browser::start(&f.gw.url).await;
    browser.goto(&path).await;
    browser.fill("#amount", "4,50").await;
    browser.click("#pay").await;
    let error = browser.text("#amount-error").await;
    assert_eq!(error, "The minimum amount is R$5.00.");
    assert_eq!(
        browser
            .find("#amount")
            .await
            .prop("value")
            .await
            .unwrap()
            .as_deref(),
        Some("4,50"),
        "what was typed stays"
    );
    browser.screenshots("checkout-below-minimum").await;
    assert!(f.charges().await.is_empty());

    browser.fill("#amount", "20").await;
    browser.click("#pay").await;
    browser.find(".live-charge[data-state=pending] #qr").await;
    browser
        .client
        .execute("window.__sameDocument = true;", vec![])
        .await
        .unwrap();
    let charges = f.charges().await;
    assert_eq!(charges[0]["amount"], 2000);
    f.pay(&charges[0]).await;
    wait_paid(&browser).await;

    // A second visitor (a browser without the first one's session) finds it used up.
    browser.client.delete_all_cookies().await.unwrap();
    browser.goto(&path).await;
    let message = browser.text("#checkout-message").await;
    assert!(message.contains("This link is used up"), "{message}");
    assert!(!browser.exists("#pay").await);
    browser.screenshots("checkout-used-up").await;

    let expired = f
        .link(json!({"name": "Promoção de verão", "amount": 100, "valid_until": "2020-01-01T03:00:00Z"}))
        .await;
    browser.goto(&Fixture::path(&expired)).await;
    let message = browser.text("#checkout-message").await;
    assert!(message.contains("This link has expired"), "{message}");
    browser.screenshots("checkout-expired").await;
    assert_eq!(f.charges().await.len(), 1);
    browser.close().await;
}

/// A PSP's refusal at the checkout: the payer reads what they can do, in their language, never
/// the PSP's words or the merchant's set-up (those go to the log). Stripe (the simulator, as
/// Stripe does) refuses amounts under R$ 0.50, an amount refusal for its adapter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_psp_refusal_tells_the_payer_what_they_can_do() {
    let f = Fixture::open(Backend::Sqlite, &["stripe"], GatewayOptions::default()).await;
    // An amount the payer types: they can type another, from the same session.
    let open = f
        .link(json!({"name": "Gorjeta", "provider": "stripe"}))
        .await;
    let path = Fixture::path(&open);
    let mut payer = Visitor::new(&f.gw);
    payer.language = "pt-BR";
    payer.get(&path).await.assert_ok();
    let refused = payer.post(&path, &[("amount", "0,10")]).await;
    assert_eq!(refused.status, 502, "{}", refused.text());
    assert_eq!(
        super::charges::element_text(&refused.body, "amount-error").as_deref(),
        Some(
            "A instituição de pagamento não aceitou este valor, e nada foi cobrado. Digite outro \
             valor."
        ),
        "{}",
        refused.text()
    );
    assert!(
        !refused.body.contains("Amount must be at least"),
        "the PSP's words stay in the log"
    );
    assert_eq!(refused.input_value("amount").as_deref(), Some("0,10"));
    assert!(f.charges().await.is_empty());
    payer
        .post(&path, &[("amount", "1,00")])
        .await
        .assert_redirect(&path);
    let charges = f.charges().await;
    assert_eq!(
        (charges.len(), &charges[0]["amount"]),
        (1, &json!(100)),
        "{charges:?}"
    );

    // A fixed amount the PSP refuses is the store's to change.
    let fixed = f
        .link(json!({"name": "Bala", "amount": 10, "provider": "stripe"}))
        .await;
    let path = Fixture::path(&fixed);
    let (payer, _) = payer_at(&f, &path).await;
    let refused = payer.post(&path, &[]).await;
    assert_eq!(refused.status, 502, "{}", refused.text());
    assert_eq!(
        super::charges::element_text(&refused.body, "pay-error").as_deref(),
        Some(
            "This store cannot take this payment by Pix right now, and nothing was charged. \
             Contact the store to pay another way."
        ),
        "{}",
        refused.text()
    );
    assert_eq!(f.charges().await.len(), 1);
}
