//! A dashboard visitor over plain HTTP: keeps cookies, reads each page's CSRF token, posts
//! forms as the browser would (no redirects followed, so tests see each 303).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::common::gateway::Gateway;

/// One answer: status, `Location` of a redirect, and the body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub location: Option<String>,
    pub body: String,
}

impl Answer {
    /// Asserts a 303 to a path starting with `prefix`.
    #[track_caller]
    pub fn assert_redirect(&self, prefix: &str) -> &str {
        assert_eq!(
            self.status,
            303,
            "expected a redirect to {prefix}: {}",
            self.excerpt()
        );
        let location = self.location.as_deref().unwrap();
        assert!(
            location.starts_with(prefix),
            "redirected to {location}, not {prefix}"
        );
        location
    }

    #[track_caller]
    pub fn assert_ok(&self) -> &str {
        assert_eq!(self.status, 200, "{}", self.excerpt());
        &self.body
    }

    /// The first `value="…"` of the input named `name`.
    pub fn input_value(&self, name: &str) -> Option<String> {
        input_value(&self.body, name)
    }

    /// The body with tags stripped, for asserting on text.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let mut in_tag = false;
        for ch in self.body.chars() {
            match ch {
                '<' => in_tag = true,
                '>' => {
                    in_tag = false;
                    out.push(' ');
                }
                c if !in_tag => out.push(c),
                _ => {}
            }
        }
        let out = out
            .replace("&amp;", "&")
            .replace("&#x27;", "'")
            .replace("&#39;", "'")
            .replace("&quot;", "\"")
            .replace("&lt;", "<")
            .replace("&gt;", ">");
        out.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    fn excerpt(&self) -> String {
        format!(
            "status {} location {:?}: {}",
            self.status,
            self.location,
            self.text().chars().take(600).collect::<String>()
        )
    }
}

/// The `value` attribute of the first `<input name="name" …>` in `html`.
pub fn input_value(html: &str, name: &str) -> Option<String> {
    let needle = format!("name=\"{name}\"");
    let at = html.find(&needle)?;
    let start = html[..at].rfind('<')?;
    let end = at + html[at..].find('>')?;
    let tag = &html[start..end];
    let v = tag.find("value=\"")? + 7;
    let value = &tag[v..v + tag[v..].find('"')?];
    Some(
        value
            .replace("&amp;", "&")
            .replace("&#x2f;", "/")
            .replace("&#47;", "/"),
    )
}

pub struct Visitor {
    pub base: String,
    http: reqwest::Client,
    cookies: Mutex<BTreeMap<String, String>>,
    csrf: Mutex<Option<String>>,
    /// Sent as `Accept-Language`.
    pub language: &'static str,
}

impl Visitor {
    pub fn new(gateway: &Gateway) -> Visitor {
        Visitor {
            base: gateway.url.clone(),
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            cookies: Mutex::default(),
            csrf: Mutex::default(),
            language: "en",
        }
    }

    pub fn cookie(&self, name: &str) -> Option<String> {
        self.cookies.lock().unwrap().get(name).cloned()
    }

    pub fn set_cookie(&self, name: &str, value: &str) {
        self.cookies
            .lock()
            .unwrap()
            .insert(name.to_owned(), value.to_owned());
    }

    pub fn forget_cookie(&self, name: &str) {
        self.cookies.lock().unwrap().remove(name);
    }

    fn cookie_header(&self) -> String {
        self.cookies
            .lock()
            .unwrap()
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> Answer {
        let response = request
            .header("cookie", self.cookie_header())
            .header("accept-language", self.language)
            .send()
            .await
            .unwrap();
        for set in response.headers().get_all("set-cookie") {
            let set = set.to_str().unwrap();
            let pair = set.split(';').next().unwrap();
            let (name, value) = pair.split_once('=').unwrap();
            let mut cookies = self.cookies.lock().unwrap();
            if set.contains("Max-Age=0") || value.is_empty() {
                cookies.remove(name);
            } else {
                cookies.insert(name.to_owned(), value.to_owned());
            }
        }
        let status = response.status().as_u16();
        let location = response
            .headers()
            .get("location")
            .map(|l| l.to_str().unwrap().to_owned());
        let body = response.text().await.unwrap();
        if let Some(token) = input_value(&body, "_csrf") {
            *self.csrf.lock().unwrap() = Some(token);
        }
        Answer {
            status,
            location,
            body,
        }
    }

    pub async fn get(&self, path: &str) -> Answer {
        self.send(self.http.get(format!("{}{path}", self.base)))
            .await
    }

    /// Posts a form with the CSRF token of the last page read (read `/dashboard/sign-in` or
    /// `/dashboard` first).
    pub async fn post(&self, path: &str, fields: &[(&str, &str)]) -> Answer {
        let token = self.csrf.lock().unwrap().clone().unwrap_or_default();
        let mut form: Vec<(&str, &str)> = vec![("_csrf", &token)];
        form.extend_from_slice(fields);
        self.send(self.http.post(format!("{}{path}", self.base)).form(&form))
            .await
    }

    /// Posts without any CSRF token.
    pub async fn post_without_csrf(&self, path: &str, fields: &[(&str, &str)]) -> Answer {
        self.send(self.http.post(format!("{}{path}", self.base)).form(fields))
            .await
    }

    /// Signs up a new merchant with its owner, and moves it to the Enterprise plan on the plan
    /// page (the dashboard's tests of other areas invite a team, connect several PSPs and use
    /// the cashier on a phone, which Free does not allow); the visitor is then signed in as the
    /// owner.
    pub async fn sign_up(gateway: &Gateway, business: &str, email: &str) -> Visitor {
        let v = Visitor::sign_up_free(gateway, business, email).await;
        v.get("/dashboard/plan").await.assert_ok();
        v.post("/dashboard/plan", &[("plan", "enterprise")])
            .await
            .assert_redirect("/dashboard/plan");
        v
    }

    /// Signs up a new merchant with its owner, on Free as every new merchant starts.
    pub async fn sign_up_free(gateway: &Gateway, business: &str, email: &str) -> Visitor {
        let v = Visitor::new(gateway);
        v.get("/dashboard/sign-up").await.assert_ok();
        v.post(
            "/dashboard/sign-up",
            &[
                ("business_name", business),
                ("name", "Ana Souza"),
                ("email", email),
                ("password", PASSWORD),
            ],
        )
        .await
        .assert_redirect("/dashboard");
        v.get("/dashboard").await.assert_ok();
        v
    }

    pub async fn sign_in(gateway: &Gateway, email: &str, password: &str) -> (Visitor, Answer) {
        let v = Visitor::new(gateway);
        v.get("/dashboard/sign-in").await.assert_ok();
        let answer = v
            .post(
                "/dashboard/sign-in",
                &[
                    ("email", email),
                    ("password", password),
                    ("next", "/dashboard"),
                ],
            )
            .await;
        if answer.status == 303 {
            v.get("/dashboard").await.assert_ok();
        }
        (v, answer)
    }
}

/// The password every test account uses.
pub const PASSWORD: &str = "correct horse battery staple";

/// A merchant signed up in the dashboard, with a test API key (from the operator CLI) and the
/// simulator's efi account connected through the API.
pub struct Shop {
    pub owner: Visitor,
    pub merchant_id: String,
    pub test_key: String,
}

impl Shop {
    pub async fn open(
        db: &crate::common::gateway::TestDb,
        gateway: &Gateway,
        sim: &psp_sim::Sim,
        business: &str,
        email: &str,
    ) -> Shop {
        use crate::common::gateway::cli;
        let owner = Visitor::sign_up(gateway, business, email).await;
        let merchant_id = cli(db, &[], &["merchant", "list"])
            .lines()
            .find(|l| l.ends_with(business))
            .and_then(|l| l.split_whitespace().next())
            .expect("the signed-up merchant is listed")
            .to_owned();
        let test_key = cli(
            db,
            &[],
            &["key", "create", "--merchant", &merchant_id, "--env", "test"],
        );
        gateway.connect(sim, &test_key, "efi", &[]).await;
        Shop {
            owner,
            merchant_id,
            test_key,
        }
    }
}
