//! The statement, end to end on both backends: charges made through the API, at the cashier and
//! through a payment link, paid at the PSP simulator, then listed by **payment** day in São
//! Paulo — across midnight, and in its daylight-saving years — on the dashboard page, in the API
//! and in the CSV export (read back with a CSV parser); each filter narrowing exactly; a cashier
//! seeing only their own sales; the chart's table; pagination; refusals. And the page in a
//! browser at desktop and phone sizes, and the export of 100,000 lines measured.
//!
//! The simulator pays charges *now*; these tests need payments at chosen moments, so they move
//! the times of charges that were made and paid for real ([`Db::set_times`]).

use serde_json::{Value, json};

use super::accounts::join_as;
use super::charges::{Shop, link};
use crate::both_backends;
use crate::common::gateway::{Backend, TestDb};
use crate::dashboard::support::{Answer, Visitor};

/// The test's own connection to the gateway's database, for what the simulator cannot do.
struct Db(sqlx::AnyPool);

impl Db {
    async fn open(db: &TestDb) -> Db {
        pixgw::store::install_drivers();
        Db(sqlx::AnyPool::connect(&db.url).await.unwrap())
    }

    /// Moves a charge's creation and payment to the given RFC 3339 times.
    async fn set_times(&self, charge_id: &str, created: &str, paid: &str) {
        let done = sqlx::query("UPDATE charges SET created_at = $1, paid_at = $2 WHERE id = $3")
            .bind(ms(created))
            .bind(ms(paid))
            .bind(charge_id)
            .execute(&self.0)
            .await
            .unwrap();
        assert_eq!(done.rows_affected(), 1, "{charge_id}");
    }

    async fn user_id(&self, email: &str) -> String {
        use sqlx::Row;
        sqlx::query("SELECT id FROM users WHERE email = $1")
            .bind(email)
            .fetch_one(&self.0)
            .await
            .unwrap()
            .get(0)
    }
}

fn ms(rfc3339: &str) -> i64 {
    let t = time::OffsetDateTime::parse(rfc3339, &time::format_description::well_known::Rfc3339)
        .unwrap();
    (t.unix_timestamp_nanos() / 1_000_000) as i64
}

fn id(charge: &Value) -> String {
    charge["id"].as_str().unwrap().to_owned()
}

/// The charges of a statement page, in order.
fn lines(answer: &Answer) -> Vec<String> {
    let html = answer.assert_ok();
    html.split("<tr data-charge=\"")
        .skip(1)
        .map(|row| row[..row.find('"').unwrap()].to_owned())
        .collect()
}

/// The text of a table row (`<tr data-charge="id">`), tags stripped.
fn row_text(answer: &Answer, charge_id: &str) -> String {
    let at = answer
        .body
        .find(&format!("<tr data-charge=\"{charge_id}\""))
        .unwrap_or_else(|| panic!("{charge_id} is not listed"));
    let row = &answer.body[at..at + answer.body[at..].find("</tr>").unwrap()];
    Answer {
        status: 200,
        location: None,
        body: row.to_owned(),
    }
    .text()
}

/// The rows of the chart's table, as text.
fn chart_rows(answer: &Answer) -> Vec<String> {
    let html = answer.assert_ok();
    let Some(at) = html.find("<table id=\"chart-table\">") else {
        return Vec::new();
    };
    let table = &html[at..at + html[at..].find("</table>").unwrap()];
    let body = &table[table.find("<tbody>").unwrap()..];
    body.split("<tr>")
        .skip(1)
        .map(|row| {
            Answer {
                status: 200,
                location: None,
                body: row.to_owned(),
            }
            .text()
        })
        .collect()
}

/// A CSV answer's records, the header first, after checking the bytes a Brazilian spreadsheet
/// needs: a UTF-8 byte-order mark, `;` separators, CRLF line ends.
fn csv_records(bytes: &[u8]) -> Vec<Vec<String>> {
    assert!(
        bytes.starts_with("\u{feff}".as_bytes()),
        "no byte-order mark"
    );
    let text = std::str::from_utf8(&bytes[3..]).unwrap();
    assert!(text.ends_with("\r\n"));
    assert_eq!(
        text.matches('\n').count(),
        text.matches("\r\n").count(),
        "every line ends with CRLF"
    );
    csv::ReaderBuilder::new()
        .delimiter(b';')
        .has_headers(false)
        .from_reader(text.as_bytes())
        .records()
        .map(|r| r.unwrap().iter().map(str::to_owned).collect())
        .collect()
}

/// Five paid charges and an unpaid one, their times set across São Paulo's midnight:
///
/// | charge | made by      | created (São Paulo)  | paid (São Paulo)     |
/// |--------|--------------|----------------------|----------------------|
/// | `f`    | API          | 2018-11-30 23:00     | 2018-12-01 00:30 (summer time, UTC−2) |
/// | `b`    | API          | 2026-03-10 22:00     | 2026-03-10 23:59:59  |
/// | `a`    | API          | 2026-03-10 23:50     | 2026-03-11 00:10:05  |
/// | `c`    | the cashier  | 2026-03-11 00:05     | 2026-03-11 00:06     |
/// | `d`    | payment link | 2026-03-12 12:00     | 2026-03-12 12:00     |
struct Sales {
    shop: Shop,
    cashier: Visitor,
    cashier_id: String,
    link_id: String,
    a: Value,
    b: Value,
    c: Value,
    d: Value,
    f: Value,
    unpaid: Value,
}

impl Sales {
    async fn make(backend: Backend) -> Sales {
        let shop = Shop::open(backend).await;
        let db = Db::open(&shop.db).await;
        let cashier = join_as(&shop.gw, &shop.owner, "caixa@loja.com.br", "cashier").await;
        let cashier_id = db.user_id("caixa@loja.com.br").await;

        let f = shop.charge(5000, "Pedido F").await;
        let b = shop.charge(2000, "=1+1; \"promo\"").await;
        let a = shop.charge(1000, "Pedido A").await;
        // A sale at the cashier.
        let form = cashier.get("/dashboard/cashier").await;
        let sale = form.input_value("sale").unwrap();
        let answer = cashier
            .post(
                "/dashboard/cashier",
                &[
                    ("amount", "30,00"),
                    ("description", "Balcão"),
                    ("provider", "efi"),
                    ("sale", &sale),
                ],
            )
            .await;
        let c_id = answer
            .assert_redirect("/dashboard/cashier/chg_")
            .rsplit('/')
            .next()
            .unwrap()
            .to_owned();
        let (_, c) = shop.gw.get(&format!("/v1/charges/{c_id}"), &shop.key).await;
        // A payer at a payment link's page.
        let (status, link) = shop
            .gw
            .post(
                "/v1/payment_links",
                &shop.key,
                json!({"name": "Camiseta azul", "amount": 4000, "provider": "efi"}),
            )
            .await;
        assert_eq!(status, 201, "{link}");
        let slug = link["slug"].as_str().unwrap();
        let payer = Visitor::new(&shop.gw);
        payer.get(&format!("/p/{slug}")).await.assert_ok();
        payer
            .post(&format!("/p/{slug}"), &[("amount", "")])
            .await
            .assert_redirect(&format!("/p/{slug}"));
        let (_, listed) = shop.gw.get("/v1/charges?limit=10", &shop.key).await;
        let d = listed["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["payment_link"]["id"] == link["id"])
            .expect("the payer's charge")
            .clone();
        let unpaid = shop.charge(9900, "Não pago").await;

        let mut paid = Vec::new();
        for (charge, created, paid_at) in [
            (&f, "2018-12-01T01:00:00Z", "2018-12-01T02:30:00Z"),
            (&b, "2026-03-11T01:00:00Z", "2026-03-11T02:59:59Z"),
            (&a, "2026-03-11T02:50:00Z", "2026-03-11T03:10:05Z"),
            (&c, "2026-03-11T03:05:00Z", "2026-03-11T03:06:00Z"),
            (&d, "2026-03-12T15:00:00Z", "2026-03-12T15:00:00Z"),
        ] {
            shop.pay(charge).await;
            db.set_times(&id(charge), created, paid_at).await;
            let (_, now) = shop
                .gw
                .get(&format!("/v1/charges/{}", id(charge)), &shop.key)
                .await;
            assert_eq!(now["paid_at"], paid_at);
            paid.push(now);
        }
        let [f, b, a, c, d] = <[Value; 5]>::try_from(paid).unwrap();
        Sales {
            link_id: link["id"].as_str().unwrap().to_owned(),
            shop,
            cashier,
            cashier_id,
            a,
            b,
            c,
            d,
            f,
            unpaid,
        }
    }
}

both_backends!(lines_follow_payment_days_in_sao_paulo_and_filters_narrow_exactly);
async fn lines_follow_payment_days_in_sao_paulo_and_filters_narrow_exactly(backend: Backend) {
    let s = Sales::make(backend).await;
    let owner = &s.shop.owner;
    let (a, b, c, d, f) = (id(&s.a), id(&s.b), id(&s.c), id(&s.d), id(&s.f));
    let (a, b, c, d, f) = (a.as_str(), b.as_str(), c.as_str(), d.as_str(), f.as_str());

    // By payment time, newest first: `a` was made on the 10th but paid on the 11th, after `c`.
    let all = owner.get("/dashboard/statement?from=&to=").await;
    assert_eq!(lines(&all), vec![d, a, c, b, f]);
    assert!(!all.body.contains(&id(&s.unpaid)));
    assert_eq!(
        super::charges::element_text(&all.body, "total-amount").as_deref(),
        Some("R$150.00")
    );
    assert_eq!(
        super::charges::element_text(&all.body, "total-count").as_deref(),
        Some("5")
    );
    assert_eq!(
        row_text(&all, a),
        format!(
            "2026-03-11 00:10:05 R$10.00 Efí Bank API — Pedido A {a} {}",
            s.a["end_to_end_id"].as_str().unwrap()
        )
    );
    assert!(
        row_text(&all, c).starts_with("2026-03-11 00:06:00 R$30.00 Efí Bank Bruno Lima — Balcão")
    );
    assert!(
        row_text(&all, d)
            .starts_with("2026-03-12 12:00:00 R$40.00 Efí Bank Payment link Camiseta azul")
    );
    // Summer time: 02:30 UTC was 00:30 in São Paulo, on the 1st.
    assert!(row_text(&all, f).starts_with("2018-12-01 00:30:00 R$50.00"));

    // Each filter narrows to exactly what it names.
    let cases: Vec<(String, Vec<&str>, &str)> = vec![
        (
            "from=2026-03-11&to=2026-03-11".into(),
            vec![a, c],
            "R$40.00",
        ),
        ("from=2026-03-10&to=2026-03-10".into(), vec![b], "R$20.00"),
        ("from=2026-03-12&to=".into(), vec![d], "R$40.00"),
        ("from=&to=2026-03-10".into(), vec![b, f], "R$70.00"),
        ("from=2018-12-01&to=2018-12-01".into(), vec![f], "R$50.00"),
        ("from=2018-11-30&to=2018-11-30".into(), vec![], "R$0.00"),
        (
            "from=&to=&provider=efi".into(),
            vec![d, a, c, b, f],
            "R$150.00",
        ),
        ("from=&to=&provider=stripe".into(), vec![], "R$0.00"),
        (
            format!("from=&to=&operator={}", s.cashier_id),
            vec![c],
            "R$30.00",
        ),
        ("from=&to=&operator=api".into(), vec![a, b, f], "R$80.00"),
        ("from=&to=&operator=payment_link".into(), vec![d], "R$40.00"),
        (format!("from=&to=&link={}", s.link_id), vec![d], "R$40.00"),
        (
            "from=2026-03-11&to=2026-03-12&operator=api".into(),
            vec![a],
            "R$10.00",
        ),
    ];
    for (query, expected, total) in &cases {
        let answer = owner.get(&format!("/dashboard/statement?{query}")).await;
        assert_eq!(lines(&answer), *expected, "{query}");
        assert_eq!(
            super::charges::element_text(&answer.body, "total-amount").as_deref(),
            Some(*total),
            "{query}"
        );
        if expected.is_empty() {
            assert!(answer.body.contains("id=\"statement-empty\""), "{query}");
        }
    }

    // The chart's table: a row per day with payments, per PSP and in all.
    let march = owner
        .get("/dashboard/statement?from=2026-03-10&to=2026-03-12")
        .await;
    assert!(
        march
            .body
            .contains("<svg role=\"img\" aria-labelledby=\"chart-caption\"")
    );
    assert_eq!(
        super::charges::element_text(&march.body, "chart-caption").as_deref(),
        Some("Amount paid per day and per PSP, from 2026-03-10 to 2026-03-12.")
    );
    assert_eq!(
        chart_rows(&march),
        vec![
            "2026-03-10 R$20.00 1 R$20.00",
            "2026-03-11 R$40.00 2 R$40.00",
            "2026-03-12 R$40.00 1 R$40.00",
        ]
    );
    let summer = owner
        .get("/dashboard/statement?from=2018-11-30&to=2018-12-01")
        .await;
    assert_eq!(chart_rows(&summer), vec!["2018-12-01 R$50.00 1 R$50.00"]);
    // More than a year: no chart, and the page says why.
    assert!(all.body.contains("id=\"chart-too-long\""));
    assert!(!all.body.contains("<svg role=\"img\""));

    // Bad filters are refused on the page, keeping what was typed.
    for (query, message) in [
        ("from=2026-02-30&to=", "Invalid date"),
        (
            "from=2026-03-12&to=2026-03-11",
            "The start date must be on or before",
        ),
        ("operator=everyone", "Choose one of the \"Sold by\" options"),
        ("provider=EFI", "Choose one of the PSPs"),
        ("link=plink_nope", "Choose one of the payment links"),
    ] {
        let answer = owner.get(&format!("/dashboard/statement?{query}")).await;
        assert_eq!(answer.status, 422, "{query}");
        let text = super::charges::unescape(&answer.text());
        assert!(text.contains(message), "{query}: {text}");
        assert!(!answer.body.contains("<tr data-charge"), "{query}");
    }
    let typed = owner.get("/dashboard/statement?from=2026-02-30&to=").await;
    assert_eq!(typed.input_value("from").as_deref(), Some("2026-02-30"));

    // The page opens on the current month, up to today, in São Paulo.
    let opening = owner.get("/dashboard/statement").await;
    opening.assert_ok();
    let today = super::charges::sao_paulo_day(
        &time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap(),
        0,
    );
    assert_eq!(
        opening.input_value("from"),
        Some(format!("{}-01", &today[..7]))
    );
    assert_eq!(opening.input_value("to"), Some(today));

    // A cashier sees their own sale only, whatever they ask for.
    let mine = s.cashier.get("/dashboard/statement?from=&to=").await;
    assert_eq!(lines(&mine), vec![c]);
    assert!(mine.body.contains("id=\"own-only\""));
    assert!(!mine.body.contains("id=\"filter-operator\""));
    let theirs = s
        .cashier
        .get("/dashboard/statement?from=&to=&operator=api")
        .await;
    assert!(lines(&theirs).is_empty());
    // A read-only member and a manager see everything.
    for role in ["read_only", "manager"] {
        let member = join_as(&s.shop.gw, owner, &format!("{role}@loja.com.br"), role).await;
        let seen = member.get("/dashboard/statement?from=&to=").await;
        assert_eq!(lines(&seen), vec![d, a, c, b, f], "{role}");
    }

    // The environment is the one being viewed: nothing was paid in live.
    owner.get("/dashboard/statement").await;
    owner
        .post(
            "/dashboard/environment",
            &[("environment", "live"), ("next", "/dashboard/statement")],
        )
        .await;
    let live = owner.get("/dashboard/statement?from=&to=").await;
    assert!(lines(&live).is_empty());
    assert!(live.body.contains("id=\"statement-empty\""));
}

both_backends!(pages_follow_the_payment_order_without_gaps);
async fn pages_follow_the_payment_order_without_gaps(backend: Backend) {
    let s = Sales::make(backend).await;
    let owner = &s.shop.owner;
    let mut pages = Vec::new();
    let mut next = Some("/dashboard/statement?from=&to=&limit=2".to_owned());
    while let Some(path) = next {
        let answer = owner.get(&path).await;
        pages.push(lines(&answer));
        // Every page shows the totals of the whole filter.
        assert_eq!(
            super::charges::element_text(&answer.body, "total-count").as_deref(),
            Some("5")
        );
        next = link(&answer.body, "older");
        assert!(pages.len() <= 3, "pagination never ends");
    }
    let (a, b, c, d, f) = (id(&s.a), id(&s.b), id(&s.c), id(&s.d), id(&s.f));
    let (a, b, c, d, f) = (a.as_str(), b.as_str(), c.as_str(), d.as_str(), f.as_str());
    assert_eq!(pages, vec![vec![d, a], vec![c, b], vec![f]]);
    let bad = owner
        .get(&format!("/dashboard/statement?before={}", id(&s.unpaid)))
        .await;
    assert_eq!(bad.status, 400);

    // The API pages the same way, with the filter's totals on every page.
    let mut api_pages = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let path = match &after {
            None => "/v1/statement?limit=2".to_owned(),
            Some(id) => format!("/v1/statement?limit=2&starting_after={id}"),
        };
        let (status, page) = s.shop.gw.get(&path, &s.shop.key).await;
        assert_eq!(status, 200, "{page}");
        assert_eq!(page["totals"], json!({"count": 5, "amount": 15000}));
        let ids: Vec<String> = page["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["charge_id"].as_str().unwrap().to_owned())
            .collect();
        after = ids.last().cloned();
        api_pages.push(ids);
        if page["has_more"] == false {
            break;
        }
        assert!(api_pages.len() < 3);
    }
    assert_eq!(api_pages, pages);
}

both_backends!(the_api_answers_the_same_statement);
async fn the_api_answers_the_same_statement(backend: Backend) {
    let s = Sales::make(backend).await;
    let gw = &s.shop.gw;
    let key = &s.shop.key;
    let e2e = |charge: &Value| charge["end_to_end_id"].clone();
    assert!(e2e(&s.a).is_string());

    let (status, day) = gw
        .get("/v1/statement?paid_gte=2026-03-11&paid_lt=2026-03-12", key)
        .await;
    assert_eq!(status, 200, "{day}");
    assert_eq!(
        day,
        json!({
            "object": "statement",
            "time_zone": "America/Sao_Paulo",
            "has_more": false,
            "totals": {"count": 2, "amount": 4000},
            "data": [
                {
                    "charge_id": id(&s.a),
                    "paid_at": "2026-03-11T03:10:05Z",
                    "paid_at_local": "2026-03-11T00:10:05-03:00",
                    "amount": 1000,
                    "provider": "efi",
                    "operator": {"type": "api"},
                    "payment_link": null,
                    "description": "Pedido A",
                    "end_to_end_id": e2e(&s.a),
                },
                {
                    "charge_id": id(&s.c),
                    "paid_at": "2026-03-11T03:06:00Z",
                    "paid_at_local": "2026-03-11T00:06:00-03:00",
                    "amount": 3000,
                    "provider": "efi",
                    "operator": {"type": "user", "id": s.cashier_id, "name": "Bruno Lima"},
                    "payment_link": null,
                    "description": "Balcão",
                    "end_to_end_id": e2e(&s.c),
                },
            ],
        })
    );
    let (_, linked) = gw
        .get(&format!("/v1/statement?payment_link={}", s.link_id), key)
        .await;
    assert_eq!(linked["data"][0]["charge_id"], json!(id(&s.d)));
    assert_eq!(
        linked["data"][0]["operator"],
        json!({"type": "payment_link"})
    );
    assert_eq!(
        linked["data"][0]["payment_link"],
        json!({"id": s.link_id, "name": "Camiseta azul"})
    );
    // Summer time in the local time's offset.
    let (_, summer) = gw.get("/v1/statement?paid_lt=2019-01-01", key).await;
    assert_eq!(
        summer["data"][0]["paid_at_local"],
        "2018-12-01T00:30:00-02:00"
    );
    // RFC 3339 bounds, to the second.
    let (_, exact) = gw
        .get(
            "/v1/statement?paid_gte=2026-03-11T00:06:00-03:00&paid_lt=2026-03-11T03:10:05Z",
            key,
        )
        .await;
    assert_eq!(exact["totals"], json!({"count": 1, "amount": 3000}));
    let (_, cashier) = gw
        .get(&format!("/v1/statement?operator={}", s.cashier_id), key)
        .await;
    assert_eq!(cashier["totals"], json!({"count": 1, "amount": 3000}));

    // Refusals name their parameter: 400 off the documented shape, 422 for a rule beyond it
    // (a range that ends before it starts, a cursor that is not a line of this statement).
    for (query, status_wanted, param) in [
        ("paid_gte=11/03/2026", 400, "paid_gte"),
        ("paid_lt=soon", 400, "paid_lt"),
        ("paid_gte=2026-03-12&paid_lt=2026-03-11", 422, "paid_lt"),
        ("operator=bruno", 400, "operator"),
        ("provider=Efi", 400, "provider"),
        ("payment_link=chg_123", 400, "payment_link"),
        ("limit=0", 400, "limit"),
    ] {
        let (status, error) = gw.get(&format!("/v1/statement?{query}"), key).await;
        assert_eq!(status, status_wanted, "{query}: {error}");
        assert_eq!(error["error"]["param"], param, "{query}");
    }
    let (status, error) = gw
        .get(
            &format!("/v1/statement?starting_after={}", id(&s.unpaid)),
            key,
        )
        .await;
    assert_eq!(
        (status, error["error"]["param"].clone()),
        (422, json!("starting_after"))
    );
    let (status, _) = gw.get("/v1/statement", "pgw_test_nope").await;
    assert_eq!(status, 401);

    // The document describes both endpoints.
    let (_, doc) = gw.get("/v1/openapi.json", key).await;
    assert!(doc["paths"]["/v1/statement"]["get"].is_object());
    let csv_doc = &doc["paths"]["/v1/statement.csv"]["get"];
    assert!(
        csv_doc["responses"]["200"]["content"]["text/csv"].is_object(),
        "{csv_doc}"
    );
    assert!(
        csv_doc["description"]
            .as_str()
            .unwrap()
            .contains("`;` between fields")
    );
}

both_backends!(the_csv_holds_exactly_the_filtered_set_for_brazilian_spreadsheets);
async fn the_csv_holds_exactly_the_filtered_set_for_brazilian_spreadsheets(backend: Backend) {
    let s = Sales::make(backend).await;
    let owner = &s.shop.owner;
    let e2e = |charge: &Value| charge["end_to_end_id"].as_str().unwrap().to_owned();

    // The page's link carries its filters.
    let page = owner
        .get("/dashboard/statement?from=&to=&provider=efi")
        .await;
    let href = link(&page.body, "download-csv").unwrap();
    assert_eq!(href, "/dashboard/statement.csv?provider=efi&from=&to=");
    let response = reqwest::Client::new()
        .get(format!("{}{href}", s.shop.gw.url))
        .header(
            "cookie",
            format!("pgw_session={}", owner.cookie("pgw_session").unwrap()),
        )
        .header("accept-language", "en")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "text/csv; charset=utf-8"
    );
    assert_eq!(
        response.headers()["content-disposition"],
        "attachment; filename=\"statement.csv\""
    );
    let bytes = response.bytes().await.unwrap();
    let records = csv_records(&bytes);
    let row =
        |date: &str, amount: &str, operator: &str, link: &str, description: &str, c: &Value| {
            vec![
                date.to_owned(),
                amount.to_owned(),
                "Efí Bank".to_owned(),
                operator.to_owned(),
                link.to_owned(),
                description.to_owned(),
                id(c),
                e2e(c),
            ]
        };
    // Oldest first, as a ledger reads; the formula-looking description is shown, not run.
    assert_eq!(
        records,
        vec![
            [
                "Paid at",
                "Amount (R$)",
                "PSP",
                "Sold by",
                "Payment link",
                "Description",
                "Charge ID",
                "End-to-end ID (E2E)"
            ]
            .map(String::from)
            .to_vec(),
            row("01/12/2018 00:30:00", "50,00", "API", "", "Pedido F", &s.f),
            row(
                "10/03/2026 23:59:59",
                "20,00",
                "API",
                "",
                "'=1+1; \"promo\"",
                &s.b
            ),
            row(
                "11/03/2026 00:06:00",
                "30,00",
                "Bruno Lima",
                "",
                "Balcão",
                &s.c
            ),
            row("11/03/2026 00:10:05", "10,00", "API", "", "Pedido A", &s.a),
            row(
                "12/03/2026 12:00:00",
                "40,00",
                "Payment link",
                "Camiseta azul",
                "Camiseta azul",
                &s.d
            ),
        ]
    );

    // A day's file, in Portuguese, named after its days; the API's is byte for byte the same.
    let mut pt = Visitor::new(&s.shop.gw);
    pt.language = "pt-BR";
    pt.set_cookie("pgw_session", &owner.cookie("pgw_session").unwrap());
    let day = pt
        .get("/dashboard/statement.csv?from=2026-03-11&to=2026-03-11")
        .await;
    assert_eq!(day.status, 200);
    let records = csv_records(day.body.as_bytes());
    assert_eq!(
        records[0],
        [
            "Data do pagamento",
            "Valor (R$)",
            "PSP",
            "Vendido por",
            "Link de pagamento",
            "Descrição",
            "ID da cobrança",
            "ID fim a fim (E2E)"
        ]
        .map(String::from)
        .to_vec()
    );
    assert_eq!(
        records[1..]
            .iter()
            .map(|r| r[6].clone())
            .collect::<Vec<_>>(),
        vec![id(&s.c), id(&s.a)]
    );
    let api = s
        .shop
        .gw
        .request(
            reqwest::Method::GET,
            "/v1/statement.csv?paid_gte=2026-03-11&paid_lt=2026-03-12",
            Some(&s.shop.key),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        api.headers()["content-disposition"],
        "attachment; filename=\"statement.csv\""
    );
    assert_eq!(api.text().await.unwrap(), day.body);

    // A cashier's file holds their own sales only.
    let theirs = s.cashier.get("/dashboard/statement.csv?from=&to=").await;
    let records = csv_records(theirs.body.as_bytes());
    assert_eq!(records.len(), 2);
    assert_eq!(records[1][6], id(&s.c));
    // An empty filter is a file with its header alone.
    let none = owner
        .get("/dashboard/statement.csv?from=2026-03-11&to=2026-03-11&provider=stripe")
        .await;
    assert_eq!(csv_records(none.body.as_bytes()).len(), 1);
    // A bad filter is no file.
    let bad = owner.get("/dashboard/statement.csv?from=tomorrow").await;
    assert_eq!(bad.status, 400);
    // Without a session, the sign-in page.
    let stranger = Visitor::new(&s.shop.gw);
    stranger
        .get("/dashboard/statement.csv")
        .await
        .assert_redirect("/dashboard/sign-in");
}

/// The page as a person sees it, at desktop and phone sizes: two PSPs over two weeks, the
/// chart, its table, the lines. Screenshots in `target/screenshots/statement-*.png`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_statement_page_in_a_browser() {
    use crate::common::gateway::{Gateway, GatewayOptions};
    use crate::common::{poll, sim_control, start_sim};
    use crate::dashboard::browser::{Browser, PHONE};

    let db = TestDb::new(Backend::Sqlite).await;
    let sim = start_sim().await;
    let options = GatewayOptions {
        // The reconciler confirms a payment whose notification the PSP sends nowhere yet.
        env: vec![("PIXGW_RECONCILE_SCHEDULE".into(), "1s".into())],
        ..Default::default()
    };
    let gw = Gateway::start(&db, &sim, &["efi", "openpix"], options).await;
    let shop = crate::dashboard::support::Shop::open(
        &db,
        &gw,
        &sim,
        "Padaria Estrela",
        "dona@padaria.com.br",
    )
    .await;
    gw.connect(&sim, &shop.test_key, "openpix", &[]).await;
    let fixture = Db::open(&db).await;
    // Eleven days of sales, each paid at the simulator, then placed at 10:00 + n minutes.
    for n in 0..16 {
        let provider = if n % 3 == 0 { "openpix" } else { "efi" };
        let day = 2 + (n * 5) % 11;
        let amount = 1990 + n * 1750;
        let (status, charge) = gw
            .post(
                "/v1/charges",
                &shop.test_key,
                json!({"amount": amount, "provider": provider, "description": format!("Pedido {}", 100 + n)}),
            )
            .await;
        assert_eq!(status, 201, "{charge}");
        sim_control(
            &sim,
            "/_sim/pay",
            Some(json!({"provider": provider, "reference": charge["reference"]})),
        )
        .await;
        let path = format!("/v1/charges/{}", id(&charge));
        poll(
            std::time::Duration::from_secs(20),
            "the payment",
            async || {
                let (_, now) = gw.get(&path, &shop.test_key).await;
                (now["status"] == "paid").then_some(())
            },
        )
        .await;
        let paid = format!("2026-03-{day:02}T13:{:02}:00Z", n * 3);
        fixture.set_times(&id(&charge), &paid, &paid).await;
    }

    let browser = Browser::start(&gw.url).await;
    browser.goto("/dashboard/sign-in").await;
    browser.fill("#email", "dona@padaria.com.br").await;
    browser
        .fill("#password", crate::dashboard::support::PASSWORD)
        .await;
    browser.click("button[type=submit]").await;
    browser.find(".sidebar").await;
    browser
        .goto("/dashboard/statement?from=2026-03-01&to=2026-03-14")
        .await;
    browser.find(".statement-chart .wide svg").await;
    assert_eq!(browser.text("#total-count").await, "16");
    assert_no_sideways_scroll(&browser).await;
    browser.screenshots("statement").await;
    // The chart's numbers, opened.
    browser.click(".chart-data summary").await;
    assert_eq!(
        browser
            .client
            .find_all(fantoccini::Locator::Css("#chart-table tbody tr"))
            .await
            .unwrap()
            .len(),
        11
    );
    scroll_to(&browser, "#chart-table").await;
    browser.screenshot("statement-table-desktop").await;
    scroll_to(&browser, "#statement").await;
    browser.screenshot("statement-lines-desktop").await;
    // On a phone the chart fits the screen and the page does not scroll sideways.
    browser
        .client
        .set_window_size(PHONE.0, PHONE.1)
        .await
        .unwrap();
    let (x, _, width, _) = browser
        .find(".statement-chart .narrow svg")
        .await
        .rectangle()
        .await
        .unwrap();
    assert!(width > 300.0, "the phone's drawing shows: {width}");
    assert!(
        x >= 0.0 && x + width <= f64::from(PHONE.0),
        "chart at {x}+{width}"
    );
    assert_no_sideways_scroll(&browser).await;
    scroll_to(&browser, ".statement-chart").await;
    browser.screenshot("statement-chart-phone").await;
    scroll_to(&browser, "#statement").await;
    browser.screenshot("statement-lines-phone").await;
    browser.close().await;
}

async fn scroll_to(browser: &crate::dashboard::browser::Browser, css: &str) {
    browser
        .client
        .execute(
            "document.querySelector(arguments[0]).scrollIntoView({block: 'start'});",
            vec![json!(css)],
        )
        .await
        .unwrap();
}

/// The page is no wider than the window; otherwise names the elements that stick out.
async fn assert_no_sideways_scroll(browser: &crate::dashboard::browser::Browser) {
    let wide = browser
        .client
        .execute(
            "if (document.documentElement.scrollWidth <= window.innerWidth) return [];
             return [...document.querySelectorAll('body *')]
               .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)
               .slice(0, 8)
               .map(e => e.tagName + '#' + e.id + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right));",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(wide, json!([]), "the page scrolls sideways");
}

/// The CSV export of 100,000 lines: its time and the gateway's memory while it streams. A
/// measurement, not a test of speed: run it with
/// `cargo test -p pixgw --test it -- --ignored --nocapture dashboard::statement::statement_csv_of_100k`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn statement_csv_of_100k_lines() {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        measure_export(backend).await;
    }
}

async fn measure_export(backend: Backend) {
    use std::time::Instant;

    const LINES: i64 = 100_000;
    let shop = Shop::open(backend).await;
    let fixture = Db::open(&shop.db).await;
    let (_, credentials) = shop.gw.get("/v1/credentials", &shop.key).await;
    let credential = credentials["data"][0]["id"].as_str().unwrap().to_owned();
    // A year of payments, one every 5 min 15 s of 2025.
    let started = Instant::now();
    sqlx::query(&format!(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {LINES}) \
         INSERT INTO charges (id, merchant_id, environment, credential_id, provider, reference, \
           status, amount, description, paid_at, end_to_end_id, amount_paid, created_at, \
           updated_at) \
         SELECT 'chg_bulk' || i, $1, 'test', $2, 'efi', 'refbulk' || i, 'paid', 100 + i % 50000, \
           'Pedido ' || i, {start} + i * CAST(315000 AS BIGINT), 'E00000000202501010000' || i, NULL, \
           {start} + i * CAST(315000 AS BIGINT) - 60000, 0 FROM n",
        start = ms("2025-01-01T03:00:00Z"),
    ))
    .bind(&shop.merchant_id)
    .bind(&credential)
    .execute(&fixture.0)
    .await
    .unwrap();
    if backend == Backend::Postgres {
        sqlx::query("ANALYZE charges")
            .execute(&fixture.0)
            .await
            .unwrap();
    }
    println!(
        "{backend:?}: {LINES} paid charges written in {:?}",
        started.elapsed()
    );

    let pid = gateway_pid(&shop.gw);
    let status = |field: &str| -> u64 {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{field}:")))
            .and_then(|v| v.trim().trim_end_matches(" kB").parse().ok())
            .unwrap()
    };
    let before = (status("VmRSS"), status("VmHWM"));
    let started = Instant::now();
    let response = shop
        .gw
        .request(
            reqwest::Method::GET,
            "/v1/statement.csv?paid_gte=2025-01-01&paid_lt=2026-01-01",
            Some(&shop.key),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let first_byte = started.elapsed();
    let mut response = response;
    let (mut bytes, mut lines, mut peak_rss) = (0usize, 0usize, 0u64);
    while let Some(chunk) = response.chunk().await.unwrap() {
        bytes += chunk.len();
        lines += chunk.iter().filter(|b| **b == b'\n').count();
        peak_rss = peak_rss.max(status("VmRSS"));
    }
    let elapsed = started.elapsed();
    assert_eq!(lines as i64, LINES + 1, "the header and every line");
    println!(
        "{backend:?}: {lines} lines, {:.1} MB in {elapsed:?} (first byte after {first_byte:?}); \
         gateway RSS {} MB before, at most {} MB while streaming (peak since start {} MB before, \
         {} MB after)",
        bytes as f64 / 1e6,
        before.0 / 1024,
        peak_rss / 1024,
        before.1 / 1024,
        status("VmHWM") / 1024,
    );
}

/// The process id of a test's gateway: the `pixgw serve` whose plugin directory is its own.
fn gateway_pid(gw: &crate::common::gateway::Gateway) -> u32 {
    let dir = gw.plugin_dir.to_string_lossy().into_owned();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .find(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmd| {
                let cmd = String::from_utf8_lossy(&cmd);
                cmd.contains("serve") && cmd.contains(&dir)
            })
        })
        .expect("the gateway's process")
}
