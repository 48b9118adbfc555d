//! Sale evidence in a browser: a cashier sells, the PSP is paid at the simulator, and on the
//! paid screen the cashier attaches a photo (the file input a phone opens its camera from)
//! with the position from the browser's geolocation (Chromium's, set through DevTools); the
//! charge's page then shows the photo, the coordinates and the server's date. Over HTTP: the
//! form's refusals, and who sees which sale's evidence.

use std::io::Cursor;

use serde_json::json;

use super::accounts::join_as;
use crate::both_backends;
use crate::common::gateway::{Backend, Gateway, GatewayOptions, TestDb};
use crate::common::{sim_control, start_sim};
use crate::dashboard::browser::Browser;
use crate::dashboard::support::{PASSWORD, Shop};

/// Praça da Sé, São Paulo.
const LATITUDE: f64 = -23.550520;
const LONGITUDE: f64 = -46.633308;

fn jpeg(width: u32, height: u32) -> Vec<u8> {
    let image = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([(x * 255 / width) as u8, 120, (y * 255 / height) as u8])
    });
    let mut out = Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(image)
        .write_to(&mut out, image::ImageFormat::Jpeg)
        .unwrap();
    out.into_inner()
}

async fn pay(gw: &Gateway, sim: &psp_sim::Sim, key: &str, charge: &str) {
    let (_, body) = gw.get(&format!("/v1/charges/{charge}"), key).await;
    sim_control(
        sim,
        "/_sim/pay",
        Some(json!({"provider": "efi", "reference": body["reference"]})),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cashier_attaches_a_photo_and_the_place_after_payment() {
    let db = TestDb::new(Backend::Sqlite).await;
    let sim = start_sim().await;
    let gw = Gateway::start(&db, &sim, &["efi"], GatewayOptions::default()).await;
    let shop = Shop::open(&db, &gw, &sim, "Padaria", "ana@padaria.com.br").await;
    join_as(&gw, &shop.owner, "caixa@padaria.com.br", "cashier").await;

    let browser = Browser::start(&gw.url).await;
    // The page may ask for the position, and Chromium answers with São Paulo's.
    browser
        .cdp(
            "Browser.grantPermissions",
            json!({"permissions": ["geolocation"], "origin": gw.url}),
        )
        .await;
    browser
        .cdp(
            "Emulation.setGeolocationOverride",
            json!({"latitude": LATITUDE, "longitude": LONGITUDE, "accuracy": 15}),
        )
        .await;
    browser.goto("/dashboard/sign-in").await;
    browser.fill("#email", "caixa@padaria.com.br").await;
    browser.fill("#password", PASSWORD).await;
    browser.click("button[type=submit]").await;
    browser.find(".sidebar").await;

    browser.goto("/dashboard/cashier").await;
    browser.fill("#amount", "42,50").await;
    browser.click("#create-sale").await;
    browser.find(".live-charge[data-state=pending] #qr").await;
    let id = browser
        .path()
        .await
        .strip_prefix("/dashboard/cashier/")
        .unwrap()
        .to_owned();
    // Not paid yet: the evidence form stays hidden.
    assert!(
        !browser
            .find("#evidence-form")
            .await
            .is_displayed()
            .await
            .unwrap()
    );
    pay(&gw, &sim, &shop.test_key, &id).await;
    browser
        .find(".live-charge[data-state=paid] .when-paid")
        .await;
    let form = browser.find("#evidence-form").await;
    assert!(
        form.is_displayed().await.unwrap(),
        "the paid panel offers the form"
    );

    // The camera's photo: chromedriver hands the file to the input as a phone's camera would.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("venda.jpg");
    std::fs::write(&file, jpeg(1200, 900)).unwrap();
    let input = browser.find("#evidence-photo").await;
    assert_eq!(
        input.attr("capture").await.unwrap().as_deref(),
        Some("environment")
    );
    assert_eq!(
        input.attr("accept").await.unwrap().as_deref(),
        Some("image/*")
    );
    input.send_keys(file.to_str().unwrap()).await.unwrap();
    browser.click("#evidence-locate").await;
    browser.find("#evidence-form[data-located=true]").await;
    let status = browser.text("#evidence-location").await;
    assert!(status.contains("-23.55052, -46.63331"), "{status}");
    assert_eq!(
        browser
            .find("#evidence-latitude")
            .await
            .prop("value")
            .await
            .unwrap()
            .unwrap()
            .parse::<f64>()
            .unwrap(),
        LATITUDE
    );
    scroll_to(&browser, "#evidence").await;
    browser.screenshots("evidence-cashier-form").await;
    browser.click("#evidence-submit").await;

    // Back on the paid screen, with the photo shown.
    browser.find("#evidence-list [data-evidence] img").await;
    assert!(browser.exists(".flash").await, "the upload is confirmed");
    assert_eq!(browser.path().await, format!("/dashboard/cashier/{id}"));
    assert_eq!(
        loaded_width(&browser, "#evidence-list [data-evidence] img").await,
        1200,
        "the stored photo loads on the page"
    );
    scroll_to(&browser, "#evidence").await;
    browser.screenshots("evidence-cashier-attached").await;

    // The charge's page: photo, coordinates and the server's date.
    browser.goto(&format!("/dashboard/charges/{id}")).await;
    let coordinates = browser.text("#evidence [data-evidence-coordinates]").await;
    assert!(
        coordinates.contains("-23.55052, -46.63331"),
        "{coordinates}"
    );
    assert!(coordinates.contains("±15 m"), "{coordinates}");
    let link = browser
        .find("#evidence [data-evidence-coordinates] a")
        .await
        .attr("href")
        .await
        .unwrap()
        .unwrap();
    assert!(link.contains("mlat=-23.550520&mlon=-46.633308"), "{link}");
    let when = browser.text("#evidence [data-evidence-time]").await;
    assert!(!when.is_empty());
    let (_, list) = gw
        .get(&format!("/v1/charges/{id}/evidence"), &shop.test_key)
        .await;
    let item = &list["data"][0];
    assert_eq!(item["uploaded_by"]["label"], "caixa@padaria.com.br");
    assert_eq!(item["location"]["accuracy"], 15.0);
    assert_eq!(
        (
            item["photo"]["width"].as_i64(),
            item["photo"]["height"].as_i64()
        ),
        (Some(1200), Some(900))
    );
    browser.find("#evidence [data-evidence] img").await;
    scroll_to(&browser, "#evidence").await;
    browser.screenshots("evidence-charge-page").await;
    browser.close().await;
}

/// The natural width of the image found by `css` once it has loaded (0 if it failed to). The
/// thumbnail is `loading="lazy"`, which does not hold the page's load event, so it can be found
/// before it has arrived: it is scrolled into view and its `load` (or `error`) awaited.
async fn loaded_width(browser: &Browser, css: &str) -> u64 {
    scroll_to(browser, css).await;
    let image = serde_json::to_value(browser.find(css).await).unwrap();
    let width = browser
        .client
        .execute_async(
            "const [img, done] = arguments; \
             if (img.complete) { done(img.naturalWidth); } else { \
               img.addEventListener('load', () => done(img.naturalWidth), {once: true}); \
               img.addEventListener('error', () => done(0), {once: true}); }",
            vec![image],
        )
        .await
        .unwrap();
    width.as_u64().unwrap()
}

/// Scrolls the element into view, for the screenshots.
async fn scroll_to(browser: &Browser, css: &str) {
    let element = browser.find(css).await;
    browser
        .client
        .execute(
            "arguments[0].scrollIntoView({block: 'start'});",
            vec![serde_json::to_value(&element).unwrap()],
        )
        .await
        .unwrap();
}

/// A dashboard form's multipart body with the page's CSRF token.
fn form_body(csrf: &str, back: &str, address: &str, photo: &[u8]) -> (String, Vec<u8>) {
    let boundary = "----pixgw-dashboard-evidence";
    let mut body = Vec::new();
    for (name, value) in [("_csrf", csrf), ("back", back), ("address", address)] {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"photo\"; filename=\"foto.jpg\"\r\nContent-Type: image/jpeg\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(photo);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// Posts the evidence form as a browser would, with `cookie` and `csrf`; (status, location,
/// body).
async fn post_form(
    gw: &Gateway,
    cookie: &str,
    charge: &str,
    csrf: &str,
    photo: &[u8],
) -> (u16, Option<String>, String) {
    let (content_type, body) = form_body(csrf, "charge", "Rua Augusta, 1500", photo);
    let response = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .post(format!("{}/dashboard/charges/{charge}/evidence", gw.url))
        .header("cookie", cookie)
        .header("accept-language", "en")
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let location = response
        .headers()
        .get("location")
        .map(|v| v.to_str().unwrap().to_owned());
    (status, location, response.text().await.unwrap())
}

both_backends!(the_form_refuses_clearly_and_each_sees_their_own);
async fn the_form_refuses_clearly_and_each_sees_their_own(backend: Backend) {
    let db = TestDb::new(backend).await;
    let sim = start_sim().await;
    let gw = Gateway::start(&db, &sim, &["efi"], GatewayOptions::default()).await;
    let shop = Shop::open(&db, &gw, &sim, "Padaria", "ana@padaria.com.br").await;
    let cashier = join_as(&gw, &shop.owner, "caixa@padaria.com.br", "cashier").await;
    let reader = join_as(&gw, &shop.owner, "contador@padaria.com.br", "read_only").await;
    // The owner's sale through the API, paid.
    let (status, charge) = gw
        .post(
            "/v1/charges",
            &shop.test_key,
            json!({"amount": 990, "provider": "efi"}),
        )
        .await;
    assert_eq!(status, 201);
    let charge = charge["id"].as_str().unwrap().to_owned();
    pay(&gw, &sim, &shop.test_key, &charge).await;
    crate::common::poll(std::time::Duration::from_secs(30), "paid", async || {
        let (_, body) = gw
            .get(&format!("/v1/charges/{charge}"), &shop.test_key)
            .await;
        (body["status"] == "paid").then_some(())
    })
    .await;

    let page = shop
        .owner
        .get(&format!("/dashboard/charges/{charge}"))
        .await;
    page.assert_ok();
    assert!(page.body.contains("id=\"evidence-form\""));
    assert!(page.body.contains("capture=\"environment\""));
    let csrf = page.input_value("_csrf").unwrap();
    let cookie = format!("pgw_session={}", shop.owner.cookie("pgw_session").unwrap());

    // A renamed text file: the page again, saying why.
    let (status, _, body) = post_form(&gw, &cookie, &charge, &csrf, b"not a photo at all").await;
    assert_eq!(status, 422);
    assert!(body.contains("This file is not a photo"), "{body}");
    // Without the form's token nothing happens.
    let (status, _, _) = post_form(&gw, &cookie, &charge, "forged", &jpeg(40, 30)).await;
    assert_eq!(status, 403);
    // A real one: back to the charge, which shows it with the typed address.
    let (status, location, _) = post_form(&gw, &cookie, &charge, &csrf, &jpeg(40, 30)).await;
    assert_eq!(status, 303);
    assert_eq!(
        location.as_deref(),
        Some(format!("/dashboard/charges/{charge}").as_str())
    );
    let page = shop
        .owner
        .get(&format!("/dashboard/charges/{charge}"))
        .await;
    assert!(page.text().contains("Rua Augusta, 1500"), "{}", page.text());
    let photo = page
        .body
        .split("src=\"")
        .find(|s| s.starts_with("/dashboard/charges/"))
        .and_then(|s| s.split('"').next())
        .unwrap()
        .to_owned();
    assert!(photo.ends_with("/photo"), "{photo}");

    // The read-only member sees the photo but gets no form; the cashier, whose sale it is
    // not, sees neither the charge nor its photo.
    let page = reader.get(&format!("/dashboard/charges/{charge}")).await;
    page.assert_ok();
    assert!(page.text().contains("Rua Augusta, 1500"));
    assert!(!page.body.contains("id=\"evidence-form\""));
    assert_eq!(reader.get(&photo).await.status, 200);
    assert_eq!(
        cashier
            .get(&format!("/dashboard/charges/{charge}"))
            .await
            .status,
        404
    );
    assert_eq!(cashier.get(&photo).await.status, 404);
}
