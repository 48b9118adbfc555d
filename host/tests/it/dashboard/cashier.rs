//! The cashier in a browser: type an amount, the QR code appears (and decodes to the
//! copy-and-paste code), the PSP is paid at the simulator, and the screen turns to paid by
//! itself. Also on a phone-sized screen, and over HTTP: who sees which sale, cancel, amounts
//! typed both ways, a form sent twice, the payer details a PSP needs.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::decode_qr;
use crate::common::gateway::{Backend, Gateway, GatewayOptions, TestDb};
use crate::common::{sim_control, start_sim};
use crate::dashboard::browser::{Browser, PHONE};
use crate::dashboard::support::{Answer, PASSWORD, Shop, Visitor};

async fn sign_in(browser: &Browser, email: &str) {
    browser.goto("/dashboard/sign-in").await;
    browser.fill("#email", email).await;
    browser.fill("#password", PASSWORD).await;
    browser.click("button[type=submit]").await;
    browser.find(".sidebar").await;
}

/// Types an amount at the cashier and waits for the charge's screen; returns the charge id.
async fn sell(browser: &Browser, amount: &str) -> String {
    browser.goto("/dashboard/cashier").await;
    browser.fill("#amount", amount).await;
    browser.click("#create-sale").await;
    sale_on_screen(browser).await
}

/// Waits for a sale's live screen; returns its charge id.
async fn sale_on_screen(browser: &Browser) -> String {
    browser.find(".live-charge[data-state=pending] #qr").await;
    let path = browser.path().await;
    path.strip_prefix("/dashboard/cashier/").unwrap().to_owned()
}

async fn reference_of(gw: &Gateway, key: &str, id: &str) -> String {
    let (status, charge) = gw.get(&format!("/v1/charges/{id}"), key).await;
    assert_eq!(status, 200, "{charge}");
    charge["reference"].as_str().unwrap().to_owned()
}

async fn pay(sim: &psp_sim::Sim, reference: &str) {
    sim_control(
        sim,
        "/_sim/pay",
        Some(json!({"provider": "efi", "reference": reference})),
    )
    .await;
}

/// Waits until the live screen shows paid, without a reload; the time it took.
async fn wait_paid(browser: &Browser) -> Duration {
    let started = Instant::now();
    browser
        .find(".live-charge[data-state=paid] .when-paid")
        .await;
    let elapsed = started.elapsed();
    let marker = browser
        .client
        .execute("return window.__sameDocument === true;", vec![])
        .await
        .unwrap();
    assert_eq!(marker, Value::Bool(true), "the page was reloaded");
    elapsed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sale_at_the_cashier_turns_to_paid_by_itself() {
    let db = TestDb::new(Backend::Sqlite).await;
    let sim = start_sim().await;
    let gw = Gateway::start(&db, &sim, &["efi"], GatewayOptions::default()).await;
    let shop = Shop::open(&db, &gw, &sim, "Padaria", "ana@padaria.com.br").await;
    let browser = Browser::start(&gw.url).await;
    sign_in(&browser, "ana@padaria.com.br").await;

    browser.goto("/dashboard/cashier").await;
    browser.find("#amount").await;
    browser.screenshots("cashier-form").await;
    let id = sell(&browser, "19,90").await;
    // The QR code the browser drew is the copy-and-paste code.
    let qr = browser.find("#qr").await.screenshot().await.unwrap();
    let code = browser
        .find("#copy-paste")
        .await
        .prop("value")
        .await
        .unwrap()
        .unwrap();
    assert!(code.starts_with("000201"), "a BR Code: {code}");
    assert_eq!(
        decode_qr(&qr).as_deref(),
        Some(code.as_str()),
        "the QR decodes to the code"
    );
    assert!(browser.page_text().await.contains("R$19.90"));
    browser.screenshots("cashier-pending").await;
    // The API sees the same charge, with its operator's amount.
    let (_, charge) = gw.get(&format!("/v1/charges/{id}"), &shop.test_key).await;
    assert_eq!(charge["amount"], 1990);
    assert_eq!(charge["pix"]["copy_paste"], code.as_str());

    browser
        .client
        .execute("window.__sameDocument = true;", vec![])
        .await
        .unwrap();
    pay(&sim, charge["reference"].as_str().unwrap()).await;
    wait_paid(&browser).await;
    let text = browser.text(".when-paid").await;
    assert!(text.contains("Paid") && text.contains("R$19.90"), "{text}");
    browser.screenshots("cashier-paid").await;
    let (_, charge) = gw.get(&format!("/v1/charges/{id}"), &shop.test_key).await;
    assert_eq!(charge["status"], "paid");

    // New sale starts over with an empty form.
    browser.click("#new-sale").await;
    assert_eq!(
        browser
            .find("#amount")
            .await
            .prop("value")
            .await
            .unwrap()
            .as_deref(),
        Some("")
    );
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cashier_on_a_phone() {
    let db = TestDb::new(Backend::Sqlite).await;
    let sim = start_sim().await;
    let gw = Gateway::start(&db, &sim, &["efi"], GatewayOptions::default()).await;
    let shop = Shop::open(&db, &gw, &sim, "Feira", "bia@feira.com.br").await;
    let browser = Browser::start(&gw.url).await;
    browser
        .client
        .set_window_size(PHONE.0, PHONE.1)
        .await
        .unwrap();
    sign_in(&browser, "bia@feira.com.br").await;
    browser.goto("/dashboard/cashier").await;
    // Large targets: the amount field and the button are at least 44 px tall.
    for css in ["#amount", "#create-sale"] {
        let (_, _, _, height) = browser.find(css).await.rectangle().await.unwrap();
        assert!(height >= 44.0, "{css} is {height} px tall");
    }
    browser.screenshot("cashier-form-phone-only").await;
    let id = sell(&browser, "7.50").await;
    // The QR fits the screen.
    let (x, _, width, _) = browser.find("#qr").await.rectangle().await.unwrap();
    assert!(
        x >= 0.0 && x + width <= f64::from(PHONE.0),
        "QR at {x}+{width}"
    );
    browser.screenshot("cashier-pending-phone-only").await;
    browser
        .client
        .execute("window.__sameDocument = true;", vec![])
        .await
        .unwrap();
    pay(&sim, &reference_of(&gw, &shop.test_key, &id).await).await;
    wait_paid(&browser).await;
    assert!(browser.text(".when-paid").await.contains("R$7.50"));
    browser.screenshot("cashier-paid-phone-only").await;
    browser.close().await;
}

/// Time from `/_sim/pay` to the paid screen over 50 payments (p50, p99). A measurement, not
/// a test of speed: run it with
/// `cargo test -p pixgw --release --test it -- --ignored --nocapture dashboard::cashier::cashier_paid_latency`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn cashier_paid_latency() {
    let db = TestDb::new(Backend::Sqlite).await;
    let sim = start_sim().await;
    let gw = Gateway::start(&db, &sim, &["efi"], GatewayOptions::default()).await;
    let shop = Shop::open(&db, &gw, &sim, "Medida", "m@medida.com.br").await;
    let browser = Browser::start(&gw.url).await;
    sign_in(&browser, "m@medida.com.br").await;
    let mut times = Vec::new();
    for i in 0..50 {
        let id = sell(&browser, &format!("{},00", i + 1)).await;
        let reference = reference_of(&gw, &shop.test_key, &id).await;
        browser
            .client
            .execute("window.__sameDocument = true;", vec![])
            .await
            .unwrap();
        let started = Instant::now();
        pay(&sim, &reference).await;
        wait_paid(&browser).await;
        times.push(started.elapsed());
    }
    times.sort();
    let p = |q: f64| times[((times.len() as f64 * q).ceil() as usize).saturating_sub(1)];
    println!(
        "pay → paid screen over {} payments: p50 {:?}, p99 {:?}, max {:?}",
        times.len(),
        p(0.5),
        p(0.99),
        times[times.len() - 1]
    );
    browser.close().await;
}

crate::both_backends!(cashiers_see_their_own_sales_and_forms_resume);
async fn cashiers_see_their_own_sales_and_forms_resume(backend: Backend) {
    let db = TestDb::new(backend).await;
    let sim = start_sim().await;
    let gw = Gateway::start(&db, &sim, &["efi"], GatewayOptions::default()).await;
    let shop = Shop::open(&db, &gw, &sim, "Loja", "dono@loja.com.br").await;
    let cashier = super::accounts::join_as(&gw, &shop.owner, "caixa@loja.com.br", "cashier").await;
    let other = super::accounts::join_as(&gw, &shop.owner, "caixa2@loja.com.br", "cashier").await;
    let reader =
        super::accounts::join_as(&gw, &shop.owner, "leitura@loja.com.br", "read_only").await;

    // Amounts as people type them; refusals keep what was typed.
    let form = cashier.get("/dashboard/cashier").await;
    form.assert_ok();
    let sale = form.input_value("sale").unwrap();
    let bad = cashier
        .post(
            "/dashboard/cashier",
            &[
                ("amount", "19,999"),
                ("description", "Pão"),
                ("provider", "efi"),
                ("sale", &sale),
            ],
        )
        .await;
    assert_eq!(bad.status, 422);
    assert!(bad.text().contains("Invalid amount"));
    assert_eq!(bad.input_value("amount").as_deref(), Some("19,999"));
    assert_eq!(bad.input_value("description").as_deref(), Some("Pão"));
    let answer = cashier
        .post(
            "/dashboard/cashier",
            &[
                ("amount", "1.234,50"),
                ("description", "Pão"),
                ("provider", "efi"),
                ("sale", &sale),
            ],
        )
        .await;
    let location = answer.assert_redirect("/dashboard/cashier/chg_").to_owned();
    let id = location.rsplit('/').next().unwrap().to_owned();
    // The same form sent again shows the same charge: no second one.
    let again = cashier
        .post(
            "/dashboard/cashier",
            &[
                ("amount", "1.234,50"),
                ("description", "Pão"),
                ("provider", "efi"),
                ("sale", &sale),
            ],
        )
        .await;
    assert_eq!(again.location.as_deref(), Some(location.as_str()));
    let (_, list) = gw.get("/v1/charges", &shop.test_key).await;
    assert_eq!(list["data"].as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list["data"][0]["amount"], 123_450);

    // Its operator and the owner see it; another cashier and a read-only person do not
    // operate the cashier on it.
    cashier.get(&location).await.assert_ok();
    shop.owner.get(&location).await.assert_ok();
    assert_eq!(other.get(&location).await.status, 404);
    assert_eq!(other.get(&format!("{location}/status")).await.status, 404);
    assert_eq!(reader.get(&location).await.status, 403);
    let status = cashier.get(&format!("{location}/status")).await;
    let status: Value = serde_json::from_str(&status.body).unwrap();
    assert_eq!(status["status"], "pending");

    // Cancel from the screen: the PSP cancels it, and the screen says so.
    cashier.get(&location).await;
    cashier
        .post(&format!("{location}/cancel"), &[])
        .await
        .assert_redirect(&location);
    let screen = cashier.get(&location).await;
    assert!(screen.body.contains("data-state=\"canceled\""));
    let (_, charge) = gw.get(&format!("/v1/charges/{id}"), &shop.test_key).await;
    assert_eq!(charge["status"], "canceled");

    // A read-only person has no cashier at all.
    assert_eq!(reader.get("/dashboard/cashier").await.status, 403);
}

crate::both_backends!(the_cashier_refuses_control_characters_as_the_api_does);
/// A description with a control character is refused on the form, as the API refuses it: the
/// bidirectional override (U+202E, which would show a receipt's words reversed) and the line
/// separator are invisible controls too, not only line breaks and tabs. Nothing reaches the PSP.
async fn the_cashier_refuses_control_characters_as_the_api_does(backend: Backend) {
    let db = TestDb::new(backend).await;
    let sim = start_sim().await;
    let gw = Gateway::start(&db, &sim, &["efi"], GatewayOptions::default()).await;
    let shop = Shop::open(&db, &gw, &sim, "Loja", "dono@loja.com.br").await;
    let owner = &shop.owner;
    for description in ["Pão\u{202e}24", "Pão\u{2028}24", "Pão\t24"] {
        let form = owner.get("/dashboard/cashier").await;
        let sale = form.input_value("sale").unwrap();
        let bad = owner
            .post(
                "/dashboard/cashier",
                &[
                    ("amount", "10,00"),
                    ("description", description),
                    ("provider", "efi"),
                    ("sale", &sale),
                ],
            )
            .await;
        assert_eq!(bad.status, 422, "{description:?}: {}", bad.text());
        assert!(
            bad.body.contains(
                "<p id=\"description-error\" class=\"field-error\">The description may have up \
                 to 140 characters on one line, without tabs or other invisible control \
                 characters.</p>"
            ),
            "{description:?}: {}",
            bad.body
        );
        assert_eq!(bad.input_value("amount").as_deref(), Some("10,00"));
        // The API refuses the same text.
        let (status, e) = gw
            .post(
                "/v1/charges",
                &shop.test_key,
                json!({"amount": 1000, "provider": "efi", "description": description}),
            )
            .await;
        assert_eq!(
            (status, e["error"]["param"].as_str()),
            (400, Some("description")),
            "{e}"
        );
    }
    let (_, list) = gw.get("/v1/charges", &shop.test_key).await;
    assert_eq!(list["data"].as_array().unwrap().len(), 0, "{list}");
    let held = sim_control(&sim, "/_sim/charges?provider=efi", None).await;
    assert_eq!(
        held.as_array().unwrap().len(),
        0,
        "nothing at the PSP: {held}"
    );
}

/// The text of the alert `id` (a `<div>` with the message, the PSP's words and the remedy).
fn alert_text(page: &Answer, id: &str) -> String {
    let at = page
        .body
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id}: {}", page.text()));
    let start = page.body[..at].rfind('<').unwrap();
    let end = at + page.body[at..].find("</div>").unwrap();
    Answer {
        status: page.status,
        location: None,
        body: page.body[start..end].to_owned(),
    }
    .text()
}

/// Posts a sale of `amount` at `provider` from a fresh form.
async fn post_sale(owner: &Visitor, amount: &str, provider: &str) -> Answer {
    post_sale_for(owner, amount, provider, &[]).await
}

/// A PSP's refusal at the cashier, in the operator's language: what happened, the PSP's own
/// words verbatim, and what usually fixes it, by the refusal's code. Stripe (the simulator, as
/// Stripe does) refuses an amount under R$ 0.50 with `amount_too_small`, which its adapter
/// reports as an amount refusal (`psp_amount_invalid`); iugu's adapter refuses an invoice with
/// no payer e-mail when the credential has no default one (`psp_payer_invalid`). Nothing is
/// created, and the form keeps what was typed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_psp_refusal_is_explained_in_the_cashiers_language() {
    let db = TestDb::new(Backend::Sqlite).await;
    let sim = start_sim().await;
    let gw = Gateway::start(
        &db,
        &sim,
        &["efi", "stripe", "iugu"],
        GatewayOptions::default(),
    )
    .await;
    let shop = Shop::open(&db, &gw, &sim, "Loja", "dono@loja.com.br").await;
    gw.connect(&sim, &shop.test_key, "stripe", &[]).await;
    gw.connect(&sim, &shop.test_key, "iugu", &[("default-email", "")])
        .await;
    let owner = &shop.owner;

    owner
        .get("/dashboard/language?lang=pt-BR&next=/dashboard/cashier")
        .await;
    let refused = post_sale(owner, "0,10", "stripe").await;
    assert_eq!(refused.status, 422, "{}", refused.text());
    assert!(refused.body.contains("<html lang=\"pt-BR\">"));
    assert_eq!(
        alert_text(&refused, "sale-error"),
        "O Stripe não criou a cobrança. Resposta do PSP: Amount must be at least R$0.50 brl O \
         Stripe não aceitou este valor. Confira os limites que o Stripe define para uma \
         cobrança Pix nesta conta (um mínimo, um máximo) e tente outro valor."
    );
    assert_eq!(
        super::charges::element_text(&refused.body, "psp-message").as_deref(),
        Some("Amount must be at least R$0.50 brl"),
        "the PSP's words, verbatim"
    );
    assert_eq!(refused.input_value("amount").as_deref(), Some("0,10"));

    let refused = post_sale(owner, "25,00", "iugu").await;
    assert_eq!(refused.status, 422, "{}", refused.text());
    assert_eq!(
        alert_text(&refused, "sale-error"),
        "O iugu não criou a cobrança. Resposta do PSP: iugu requires an e-mail on every \
         invoice: give payer.email, or set the credential's default payer e-mail \
         (default-email) O iugu não aceitou os dados do pagador (nome, e-mail, CPF ou CNPJ); a \
         resposta dele diz qual. Corrija e tente de novo."
    );

    // The same refusal in English.
    owner
        .get("/dashboard/language?lang=en&next=/dashboard/cashier")
        .await;
    let refused = post_sale(owner, "0,10", "stripe").await;
    assert_eq!(refused.status, 422, "{}", refused.text());
    assert_eq!(
        alert_text(&refused, "sale-error"),
        "Stripe did not create the charge. The PSP said: Amount must be at least R$0.50 brl \
         Stripe did not accept this amount. Check the limits Stripe sets for a Pix charge on \
         this account (a minimum, a maximum) and try another amount."
    );

    // Nothing was created, at the gateway or at the PSPs.
    let (_, list) = gw.get("/v1/charges", &shop.test_key).await;
    assert_eq!(list["data"], json!([]), "{list}");
    for provider in ["stripe", "iugu"] {
        let held = sim_control(&sim, &format!("/_sim/charges?provider={provider}"), None).await;
        assert_eq!(held, json!([]), "nothing at {provider}");
    }
    // An amount Stripe takes goes through.
    post_sale(owner, "0,50", "stripe")
        .await
        .assert_redirect("/dashboard/cashier/chg_");
}

/// Posts a sale of `amount` at `provider` from a fresh form, with the payer fields given.
async fn post_sale_for(
    owner: &Visitor,
    amount: &str,
    provider: &str,
    payer: &[(&str, &str)],
) -> Answer {
    let form = owner.get("/dashboard/cashier").await;
    form.assert_ok();
    let sale = form.input_value("sale").unwrap();
    let mut fields = vec![
        ("amount", amount),
        ("description", ""),
        ("provider", provider),
        ("sale", &sale),
    ];
    fields.extend_from_slice(payer);
    owner.post("/dashboard/cashier", &fields).await
}

/// The charge a sale posted at the cashier created, as the API shows it.
async fn created(gw: &Gateway, key: &str, answer: &Answer) -> Value {
    let id = answer
        .assert_redirect("/dashboard/cashier/chg_")
        .rsplit('/')
        .next()
        .unwrap();
    let (status, charge) = gw.get(&format!("/v1/charges/{id}"), key).await;
    assert_eq!(status, 200, "{charge}");
    charge
}

crate::both_backends!(the_cashier_asks_for_the_payer_details_the_psp_needs);
/// The cashier asks for the payer's details the PSP chosen needs (PagBank the CPF or CNPJ,
/// Mercado Pago the e-mail: their adapters' required payer fields), checks them as the API
/// does, and passes them on; a PSP that needs none never reads them.
async fn the_cashier_asks_for_the_payer_details_the_psp_needs(backend: Backend) {
    let db = TestDb::new(backend).await;
    let sim = start_sim().await;
    let gw = Gateway::start(
        &db,
        &sim,
        &["efi", "pagbank", "mercadopago"],
        GatewayOptions::default(),
    )
    .await;
    let shop = Shop::open(&db, &gw, &sim, "Loja", "dono@loja.com.br").await;
    gw.connect(&sim, &shop.test_key, "pagbank", &[]).await;
    gw.connect(&sim, &shop.test_key, "mercadopago", &[]).await;
    let owner = &shop.owner;

    // Each field is there for the PSPs that need it; `random` needs none (efi takes a charge
    // without), and nobody needs the name.
    let form = owner.get("/dashboard/cashier").await;
    form.assert_ok();
    assert!(
        form.body
            .contains(r#"id="payer-document-field" data-needed-by="pagbank""#),
        "{}",
        form.body
    );
    assert!(
        form.body
            .contains(r#"id="payer-email-field" data-needed-by="mercadopago""#)
    );
    assert!(!form.body.contains(r#"name="name""#));
    assert_eq!(
        super::charges::element_text(&form.body, "payer-document-help").as_deref(),
        Some("Needed by PagBank to create the Pix.")
    );

    // Missing or wrong: refused at the field, what was typed kept, nothing at the PSP.
    let at_pagbank = async || {
        sim_control(&sim, "/_sim/charges?provider=pagbank", None)
            .await
            .as_array()
            .unwrap()
            .len()
    };
    for typed in ["", "529.982.247-26"] {
        let refused = post_sale_for(owner, "30,00", "pagbank", &[("document", typed)]).await;
        assert_eq!(refused.status, 422, "{}", refused.text());
        assert_eq!(
            super::charges::element_text(&refused.body, "payer-document-error").as_deref(),
            Some("Invalid payer CPF or CNPJ. Check the numbers.")
        );
        assert_eq!(refused.input_value("document").as_deref(), Some(typed));
        assert_eq!(refused.input_value("amount").as_deref(), Some("30,00"));
    }
    assert_eq!(at_pagbank().await, 0);

    // Typed as people type it: the charge is made at PagBank with the CPF.
    let made = post_sale_for(owner, "30,00", "pagbank", &[("document", "529.982.247-25")]).await;
    let charge = created(&gw, &shop.test_key, &made).await;
    assert_eq!(
        (
            &charge["provider"],
            &charge["payer"]["document"],
            &charge["status"]
        ),
        (&json!("pagbank"), &json!("52998224725"), &json!("pending")),
        "{charge}"
    );
    assert_eq!(at_pagbank().await, 1);

    // Mercado Pago: the e-mail.
    let refused = post_sale_for(owner, "12,00", "mercadopago", &[("email", "ana@")]).await;
    assert_eq!(
        super::charges::element_text(&refused.body, "payer-email-error").as_deref(),
        Some("Type the payer's e-mail address, like name@example.com.")
    );
    let made = post_sale_for(
        owner,
        "12,00",
        "mercadopago",
        &[("email", " ana@example.com ")],
    )
    .await;
    let charge = created(&gw, &shop.test_key, &made).await;
    assert_eq!(charge["payer"]["email"], "ana@example.com", "{charge}");

    // efi needs neither: what the fields hold (a page without JavaScript shows them all) is
    // not read, nor refused.
    let made = post_sale_for(
        owner,
        "5,00",
        "efi",
        &[("document", "not a document"), ("email", "ana@")],
    )
    .await;
    let charge = created(&gw, &shop.test_key, &made).await;
    assert_eq!(charge["provider"], "efi");
    assert_eq!(charge["payer"]["document"], Value::Null, "{charge}");
    assert_eq!(charge["payer"]["email"], Value::Null, "{charge}");
}

/// In a browser the payer fields follow the PSP chosen: shown and required for the one that
/// needs them, hidden (and not sent) otherwise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cashiers_payer_fields_follow_the_psp_chosen() {
    let db = TestDb::new(Backend::Sqlite).await;
    let sim = start_sim().await;
    let gw = Gateway::start(&db, &sim, &["efi", "pagbank"], GatewayOptions::default()).await;
    let shop = Shop::open(&db, &gw, &sim, "Mercearia", "rui@mercearia.com.br").await;
    gw.connect(&sim, &shop.test_key, "pagbank", &[]).await;
    let browser = Browser::start(&gw.url).await;
    sign_in(&browser, "rui@mercearia.com.br").await;
    browser.goto("/dashboard/cashier").await;
    let shown = async || {
        browser
            .client
            .execute(
                "const f = document.getElementById('payer-document-field'); \
                 const i = document.getElementById('payer-document'); \
                 return [!f.hidden && f.offsetHeight > 0, i.required, i.disabled];",
                vec![],
            )
            .await
            .unwrap()
    };
    // `random` first: efi takes charges without a CPF.
    assert_eq!(shown().await, json!([false, false, true]));
    browser.select("#provider", "pagbank").await;
    assert_eq!(shown().await, json!([true, true, false]));
    browser.fill("#amount", "8,40").await;
    browser.fill("#payer-document", "529.982.247-25").await;
    browser.screenshots("cashier-payer-document").await;
    browser.click("#create-sale").await;
    let id = sale_on_screen(&browser).await;
    let (_, charge) = gw.get(&format!("/v1/charges/{id}"), &shop.test_key).await;
    assert_eq!(charge["payer"]["document"], "52998224725", "{charge}");

    browser.goto("/dashboard/cashier").await;
    browser.select("#provider", "pagbank").await;
    browser.select("#provider", "efi").await;
    assert_eq!(shown().await, json!([false, false, true]));
    browser.close().await;
}
