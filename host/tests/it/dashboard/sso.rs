//! Single sign-on against a real OpenID provider: the certified `oidc-provider` package under
//! Node (`tests/oidc-provider/server.mjs`, `npm ci` run once when its `node_modules` is
//! missing), over https with a certificate of a CA the gateway trusts (`PIXGW_TRUSTED_CA`), the
//! real `pixgw` binary on SQLite and PostgreSQL.
//!
//! - Over HTTP, on both backends: the plan's refusal, the settings checked against discovery
//!   (a wrong issuer path, an issuer that names itself differently), the secret never shown
//!   back, one merchant per domain, the owner-only page, an unknown domain, the authorization
//!   request (PKCE S256, state, nonce), a callback whose state does not match, denied consent,
//!   and password sign-in refused to non-owners once SSO is required.
//! - In headless Chromium: the owner configures SSO in the form; people sign in at the
//!   provider's login page and join just in time with the default role or the role their
//!   groups map to; sign-out; an address outside the merchant's domains; the provider's
//!   "Cancel"; an ID token that expired (the provider's clock an hour behind) and one issued in
//!   the future; password sign-in refused; every step in the audit log.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncBufReadExt;

use crate::both_backends;
use crate::common::gateway::{Backend, Gateway, GatewayOptions, TestDb};
use crate::dashboard::browser::Browser;
use crate::dashboard::support::{Answer, PASSWORD, Visitor};

const CLIENT_ID: &str = "pixgw-dashboard";
const CLIENT_SECRET: &str = "idp-client-secret-3f9a1c";
const OWNER: &str = "owner@acme.test";
/// Every person at the provider has this password (`server.mjs`).
const IDP_PASSWORD: &str = "secret";

fn provider_dir() -> PathBuf {
    crate::common::workspace().join("tests/oidc-provider")
}

/// `npm ci` once per checkout (the lock file pins the provider and its dependencies).
fn install_provider() {
    static INSTALLED: std::sync::Mutex<bool> = std::sync::Mutex::new(false);
    let mut installed = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
    let dir = provider_dir();
    if *installed || dir.join("node_modules/oidc-provider/package.json").exists() {
        *installed = true;
        return;
    }
    let status = std::process::Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund"])
        .current_dir(&dir)
        .status()
        .unwrap_or_else(|e| {
            panic!("cannot run npm ({e}): the SSO tests need Node.js 20+ and npm on the PATH")
        });
    assert!(status.success(), "npm ci in {} failed", dir.display());
    *installed = true;
}

/// The OpenID provider, killed when dropped.
struct Idp {
    issuer: String,
    _child: tokio::process::Child,
    http: reqwest::Client,
}

impl Idp {
    /// Starts the provider with a server certificate from `ca`, for one client whose redirect
    /// URI is `redirect_uri`.
    async fn start(ca: &psp_sim::tls::Ca, dir: &Path, redirect_uri: &str) -> Idp {
        install_provider();
        let identity = ca.issue_server().unwrap();
        let (cert, key) = (dir.join("idp-cert.pem"), dir.join("idp-key.pem"));
        std::fs::write(&cert, &identity.cert_pem).unwrap();
        std::fs::write(&key, &identity.key_pem).unwrap();
        let mut child = tokio::process::Command::new("node")
            .arg("server.mjs")
            .current_dir(provider_dir())
            .env("OIDC_PORT", "0")
            .env("OIDC_TLS_CERT", &cert)
            .env("OIDC_TLS_KEY", &key)
            .env("OIDC_CLIENT_ID", CLIENT_ID)
            .env("OIDC_CLIENT_SECRET", CLIENT_SECRET)
            .env("OIDC_REDIRECT_URI", redirect_uri)
            .env("NODE_ENV", "test")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start node ({e}): the SSO tests need Node.js 20+"));
        let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let issuer = tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(issuer) = line.strip_prefix("oidc-provider listening on ") {
                    return issuer.to_owned();
                }
            }
            panic!("the OpenID provider exited before listening");
        })
        .await
        .expect("the OpenID provider did not start within 60 s");
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let http = reqwest::Client::builder()
            .tls_certs_merge([reqwest::Certificate::from_pem(ca.cert_pem().as_bytes()).unwrap()])
            .build()
            .unwrap();
        Idp {
            issuer,
            _child: child,
            http,
        }
    }

    /// Shifts the provider's clock for the ID tokens it issues from now on.
    async fn set_clock(&self, offset_seconds: i64) {
        let answer = self
            .http
            .post(format!(
                "{}/__control/clock?offset={offset_seconds}",
                self.issuer
            ))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 204);
    }
}

/// A gateway that trusts the provider's CA, the provider, and an Enterprise merchant's owner.
struct World {
    gw: Gateway,
    idp: Idp,
    owner: Visitor,
    _db: TestDb,
}

async fn world(backend: Backend) -> World {
    let db = TestDb::new(backend).await;
    let ca = psp_sim::tls::Ca::generate("pixgw SSO test CA").unwrap();
    let ca_file = db.dir.path().join("idp-ca.pem");
    std::fs::write(&ca_file, ca.cert_pem()).unwrap();
    let gw = Gateway::start_with(
        &db,
        None,
        &[],
        GatewayOptions {
            env: vec![
                (
                    "PIXGW_TRUSTED_CA".into(),
                    ca_file.to_string_lossy().into_owned(),
                ),
                // The test's identity provider listens on loopback, which the gateway refuses
                // to call by default (an issuer is the owner's URL, like a webhook URL).
                ("PIXGW_ALLOW_PRIVATE_WEBHOOK_URLS".into(), "true".into()),
            ],
            ..Default::default()
        },
    )
    .await;
    let idp = Idp::start(
        &ca,
        db.dir.path(),
        &format!("{}/dashboard/sso/callback", gw.url),
    )
    .await;
    let owner = Visitor::sign_up(&gw, "ACME", OWNER).await;
    World {
        gw,
        idp,
        owner,
        _db: db,
    }
}

/// Posts the settings form with the fields given over the defaults (the provider's issuer,
/// the client, the domain acme.test, read-only by default, finance → manager).
async fn configure(owner: &Visitor, issuer: &str, changes: &[(&str, &str)]) -> Answer {
    owner.get("/dashboard/settings/sso").await.assert_ok();
    let mut fields = vec![
        ("issuer_url", issuer),
        ("client_id", CLIENT_ID),
        ("client_secret", CLIENT_SECRET),
        ("domains", "acme.test"),
        ("default_role", "read_only"),
        ("role_claim", "groups"),
        ("role_mapping", "finance = manager"),
    ];
    for (name, value) in changes {
        fields.retain(|(n, _)| n != name);
        fields.push((name, value));
    }
    owner.post("/dashboard/settings/sso", &fields).await
}

/// Where the page after "Sign in with SSO" sends the browser (its link, and its `Refresh`).
#[track_caller]
fn continue_url(answer: &Answer) -> String {
    answer.assert_ok();
    let at = answer
        .body
        .find("id=\"sso-continue\"")
        .expect("the page links to the provider");
    let tag = &answer.body[answer.body[..at].rfind('<').unwrap()..at];
    let href = &tag[tag.find("href=\"").unwrap() + 6..];
    href[..href.find('"').unwrap()]
        .replace("&amp;", "&")
        .replace("&#38;", "&")
        .replace("&#x2f;", "/")
        .replace("&#47;", "/")
}

/// The `data-action`s of the merchant's SSO audit entries, newest first.
async fn sso_audit(owner: &Visitor) -> (Vec<String>, String) {
    let page = owner.get("/dashboard/audit?kind=sso&limit=100").await;
    page.assert_ok();
    let actions = page
        .body
        .split("data-action=\"")
        .skip(1)
        .map(|rest| rest[..rest.find('"').unwrap()].to_owned())
        .collect();
    (actions, page.text())
}

both_backends!(settings_and_refusals);
async fn settings_and_refusals(backend: Backend) {
    let w = world(backend).await;
    let issuer = w.idp.issuer.as_str();

    // A Free merchant's owner sees the plan's refusal, with the plan that has SSO.
    let free = Visitor::sign_up_free(&w.gw, "Feira", "dona@feira.test").await;
    let refused = free.get("/dashboard/settings/sso").await;
    assert_eq!(refused.status, 403, "{}", refused.text());
    let text = refused.text();
    assert!(text.contains("does not include single sign-on"), "{text}");
    assert!(text.contains("Enterprise"), "{text}");
    free.get("/dashboard").await.assert_ok();
    let post = free
        .post("/dashboard/settings/sso", &[("issuer_url", issuer)])
        .await;
    assert_eq!(post.status, 403);

    // The page tells the redirect URI to register.
    let page = w.owner.get("/dashboard/settings/sso").await;
    page.assert_ok();
    assert!(
        page.text()
            .contains(&format!("{}/dashboard/sso/callback", w.gw.url))
    );

    // Errors say what to fix; nothing is saved.
    let http = configure(&w.owner, "http://127.0.0.1:9/", &[]).await;
    assert_eq!(http.status, 422);
    assert!(
        http.text().contains("must be an https address"),
        "{}",
        http.text()
    );
    let wrong_path = configure(&w.owner, &format!("{issuer}/nope"), &[]).await;
    assert_eq!(wrong_path.status, 502);
    assert!(
        wrong_path.text().contains(&format!(
            "{issuer}/nope/.well-known/openid-configuration answered HTTP 404: there is no OpenID Connect provider at this issuer URL."
        )),
        "{}",
        wrong_path.text()
    );
    let slash = configure(&w.owner, &format!("{issuer}/"), &[]).await;
    assert_eq!(slash.status, 502);
    assert!(
        slash.text().contains(&format!(
            "The provider at this address calls itself {issuer}, not {issuer}/. Enter {issuer} as the issuer URL."
        )),
        "{}",
        slash.text()
    );
    let domain = configure(&w.owner, issuer, &[("domains", "acme.test, acme")]).await;
    assert_eq!(domain.status, 422);
    assert!(
        domain
            .text()
            .replace("&#34;", "\"")
            .contains("\"acme\" is not an e-mail domain."),
        "{}",
        domain.text()
    );
    assert_eq!(w.owner.get("/dashboard/sso/start").await.status, 405);

    // Saved after discovery answered; the secret is never shown back.
    configure(&w.owner, issuer, &[])
        .await
        .assert_redirect("/dashboard/settings/sso");
    let saved = w.owner.get("/dashboard/settings/sso").await;
    saved.assert_ok();
    assert_eq!(saved.input_value("issuer_url").as_deref(), Some(issuer));
    assert_eq!(saved.input_value("client_id").as_deref(), Some(CLIENT_ID));
    assert!(
        !saved.body.contains(CLIENT_SECRET),
        "the secret is not on the page"
    );
    assert!(saved.text().contains("Single sign-on saved"));
    assert!(saved.body.contains("finance = manager"));
    // Saving again without a secret keeps the saved one.
    configure(&w.owner, issuer, &[("client_secret", "")])
        .await
        .assert_redirect("/dashboard/settings/sso");

    // One merchant per domain.
    let other = Visitor::sign_up(&w.gw, "Outra", "dono@outra.test").await;
    let taken = configure(&other, issuer, &[("domains", "outra.test, ACME.test")]).await;
    assert_eq!(taken.status, 409);
    assert!(taken.text().contains(
        "The domain acme.test already signs in with another merchant's identity provider."
    ));

    // Only the owner manages SSO.
    let manager = super::accounts::join_as(&w.gw, &w.owner, "gerente@acme.test", "manager").await;
    assert_eq!(manager.get("/dashboard/settings/sso").await.status, 403);
    assert!(
        !manager
            .get("/dashboard")
            .await
            .body
            .contains("href=\"/dashboard/settings/sso\"")
    );
    assert!(
        w.owner
            .get("/dashboard")
            .await
            .body
            .contains("href=\"/dashboard/settings/sso\"")
    );

    // "Sign in with SSO" for a domain no merchant has.
    let visitor = Visitor::new(&w.gw);
    visitor.get("/dashboard/sign-in").await.assert_ok();
    let unknown = visitor
        .post("/dashboard/sso/start", &[("email", "ana@nowhere.test")])
        .await;
    assert_eq!(unknown.status, 404);
    assert!(
        unknown
            .text()
            .contains("No merchant signs in with SSO for nowhere.test. Check the address, or sign in with your password."),
        "{}",
        unknown.text()
    );

    // The authorization request: code flow with PKCE (S256), state and nonce; the state is
    // the browser's cookie.
    let start = visitor
        .post(
            "/dashboard/sso/start",
            &[("email", "Ana@ACME.test"), ("next", "/dashboard/charges")],
        )
        .await;
    let location = continue_url(&start);
    assert!(
        location.starts_with(&format!("{issuer}/auth?")),
        "{location}"
    );
    let query: std::collections::HashMap<String, String> = url::Url::parse(&location)
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect();
    assert_eq!(query["response_type"], "code");
    assert_eq!(query["client_id"], CLIENT_ID);
    assert_eq!(query["code_challenge_method"], "S256");
    assert_eq!(query["code_challenge"].len(), 43);
    assert_eq!(
        query["redirect_uri"],
        format!("{}/dashboard/sso/callback", w.gw.url)
    );
    assert!(query["scope"].split(' ').any(|s| s == "openid"));
    assert!(!query["nonce"].is_empty());
    let state = query["state"].clone();
    assert_eq!(
        visitor.cookie("pgw_sso_state").as_deref(),
        Some(state.as_str())
    );

    // A callback whose state is not the browser's is refused (and the attempt is gone).
    let forged = visitor
        .get("/dashboard/sso/callback?code=abc&state=forged")
        .await;
    assert_eq!(forged.status, 400);
    assert!(
        forged
            .text()
            .contains("This sign-in did not start in this browser, or its state does not match.")
    );
    assert_eq!(
        visitor.cookie("pgw_sso_state"),
        None,
        "the cookie is cleared"
    );
    visitor.set_cookie("pgw_sso_state", &state);
    let replayed = visitor
        .get(&format!("/dashboard/sso/callback?code=abc&state={state}"))
        .await;
    assert_eq!(replayed.status, 400);
    assert!(
        replayed
            .text()
            .contains("took longer than 10 minutes, or was already used")
    );

    // Without the cookie (another browser), nothing is looked up.
    let stranger = Visitor::new(&w.gw);
    let no_cookie = stranger
        .get(&format!("/dashboard/sso/callback?code=abc&state={state}"))
        .await;
    assert_eq!(no_cookie.status, 400);
    assert!(no_cookie.text().contains("did not start in this browser"));

    // Denied consent comes back as error=access_denied.
    let start = visitor
        .post("/dashboard/sso/start", &[("email", "ana@acme.test")])
        .await;
    let location = continue_url(&start);
    let state: String = url::Url::parse(&location)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "state")
        .unwrap()
        .1
        .into_owned();
    let denied = visitor
        .get(&format!(
            "/dashboard/sso/callback?error=access_denied&error_description=End-User+aborted&state={state}"
        ))
        .await;
    assert_eq!(denied.status, 403);
    assert!(
        denied.text().contains(
            "The sign-in was cancelled at the identity provider, or pixgw was not allowed. To sign in, start again and accept at the identity provider."
        ),
        "{}",
        denied.text()
    );

    // Required SSO: the manager's password is refused, the owner's is not; the manager's
    // session opened with a password ends at once, the owner's goes on.
    manager.get("/dashboard").await.assert_ok();
    configure(
        &w.owner,
        issuer,
        &[("require_sso", "on"), ("client_secret", "")],
    )
    .await
    .assert_redirect("/dashboard/settings/sso");
    manager
        .get("/dashboard")
        .await
        .assert_redirect("/dashboard/sign-in");
    w.owner.get("/dashboard").await.assert_ok();
    let (_, refused) = Visitor::sign_in(&w.gw, "gerente@acme.test", PASSWORD).await;
    assert_eq!(refused.status, 422);
    assert!(
        refused.text().replace("&#34;", "\"").contains(
            "Your team signs in with SSO: use \"Sign in with SSO\" below with your work e-mail."
        ),
        "{}",
        refused.text()
    );
    let (_, owner_in) = Visitor::sign_in(&w.gw, OWNER, PASSWORD).await;
    owner_in.assert_redirect("/dashboard");

    // Every configuration change and refusal is in the audit log.
    let (actions, text) = sso_audit(&w.owner).await;
    for expected in [
        "sso.configure",
        "sso.sign_in_refused",
        "sso.password_refused",
    ] {
        assert!(
            actions.iter().any(|a| a == expected),
            "{expected}: {actions:?}"
        );
    }
    assert_eq!(actions.iter().filter(|a| *a == "sso.configure").count(), 3);
    assert!(
        text.contains(
            "SSO sign-in of someone refused: the identity provider's sign-in was cancelled"
        )
    );
    assert!(!text.contains(CLIENT_SECRET));
    assert!(
        text.contains("SSO required for everyone but the owners (password sessions ended: 1)"),
        "{text}"
    );

    // Turning SSO off lets passwords in again.
    w.owner.get("/dashboard/settings/sso").await.assert_ok();
    w.owner
        .post("/dashboard/settings/sso/remove", &[])
        .await
        .assert_redirect("/dashboard/settings/sso");
    let (_, manager_in) = Visitor::sign_in(&w.gw, "gerente@acme.test", PASSWORD).await;
    manager_in.assert_redirect("/dashboard");
    let (actions, _) = sso_audit(&w.owner).await;
    assert_eq!(actions.first().map(String::as_str), Some("sso.remove"));
}

/// Signs in with SSO from the sign-in page as `email` at the provider's login form; the
/// browser's cookies (ours and the provider's session) are cleared first.
async fn sso_sign_in(browser: &Browser, work_email: &str, idp_login: &str) {
    browser
        .cdp("Network.clearBrowserCookies", serde_json::json!({}))
        .await;
    browser.goto("/dashboard/sign-in").await;
    browser.fill("#sso-email", work_email).await;
    browser.click("#sso-submit").await;
    browser.fill("#login", idp_login).await;
    browser.fill("#password", IDP_PASSWORD).await;
    browser.click("#login-submit").await;
}

/// The user id of the team member with `email`, from the owner's team page.
async fn member_id(owner: &Visitor, email: &str) -> String {
    let team = owner.get("/dashboard/team").await;
    team.assert_ok();
    let row = &team.body[team
        .body
        .find(&format!("<td>{email}</td>"))
        .unwrap_or_else(|| panic!("{email} is on the team: {}", team.body))..];
    let at = row.find("/dashboard/team/members/").unwrap() + "/dashboard/team/members/".len();
    row[at..at + row[at..].find('/').unwrap()].to_owned()
}

/// The role the signed-in person's menu shows.
async fn role_shown(browser: &Browser) -> String {
    browser.find(".sidebar").await;
    browser
        .client
        .execute(
            "return document.querySelector('.user-menu .menu p').textContent;",
            vec![],
        )
        .await
        .unwrap()
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_with_sso_in_a_browser() {
    let w = world(Backend::Sqlite).await;
    let browser = Browser::start(&w.gw.url).await;
    // The provider's certificate comes from the test's own CA.
    browser
        .cdp(
            "Security.setIgnoreCertificateErrors",
            serde_json::json!({"ignore": true}),
        )
        .await;

    // The owner configures SSO in the form.
    browser.goto("/dashboard/sign-in").await;
    browser.fill("#email", OWNER).await;
    browser.fill("#password", PASSWORD).await;
    browser.click("button[type=submit]").await;
    browser.find(".sidebar").await;
    browser
        .click(".sidebar a[href='/dashboard/settings/sso']")
        .await;
    browser.fill("#issuer_url", &w.idp.issuer).await;
    browser.fill("#client_id", CLIENT_ID).await;
    browser.fill("#client_secret", CLIENT_SECRET).await;
    browser.fill("#domains", "acme.test").await;
    browser.select("#default_role", "read_only").await;
    browser.fill("#role_claim", "groups").await;
    browser.fill("#role_mapping", "finance = manager").await;
    browser.click("#sso-save").await;
    browser.find(".flash").await;
    let link = browser.text("#sso-sign-in-link").await;
    assert!(
        link.starts_with(&format!("{}/dashboard/sso/mer_", w.gw.url)),
        "{link}"
    );
    browser.screenshots("sso-settings").await;

    // Ana (groups: staff) joins at her first sign-in with the default role.
    sso_sign_in(&browser, "ana@acme.test", "ana@acme.test").await;
    assert_eq!(role_shown(&browser).await, "ana@acme.testRead-only");
    assert_eq!(browser.path().await, "/dashboard");
    assert!(
        !browser
            .exists(".sidebar a[href='/dashboard/cashier']")
            .await
    );
    // Sign-out ends the session.
    browser.click(".user-menu summary").await;
    browser
        .click(".user-menu form[action='/dashboard/sign-out'] button")
        .await;
    browser.find("#sso-email").await;
    browser.goto("/dashboard").await;
    browser.find("#sso-email").await;
    assert!(browser.path().await.starts_with("/dashboard/sign-in"));

    // Fábio (groups: staff, finance) is a manager by the mapping.
    sso_sign_in(&browser, "fabio@acme.test", "fabio@acme.test").await;
    assert_eq!(role_shown(&browser).await, "fabio@acme.testManager");
    assert!(
        browser
            .exists(".sidebar a[href='/dashboard/cashier']")
            .await
    );
    // A second sign-in finds the member made at the first.
    sso_sign_in(&browser, "fabio@acme.test", "fabio@acme.test").await;
    assert_eq!(role_shown(&browser).await, "fabio@acme.testManager");
    // The role rules apply at every sign-in, not only the first: made read-only by hand,
    // Fábio is a manager again at his next SSO sign-in, as the settings page says.
    let fabio = member_id(&w.owner, "fabio@acme.test").await;
    w.owner
        .post(
            &format!("/dashboard/team/members/{fabio}/role"),
            &[("role", "read_only")],
        )
        .await
        .assert_redirect("/dashboard/team");
    sso_sign_in(&browser, "fabio@acme.test", "fabio@acme.test").await;
    assert_eq!(role_shown(&browser).await, "fabio@acme.testManager");
    let settings = w.owner.get("/dashboard/settings/sso").await;
    assert!(
        settings
            .text()
            .contains("a role changed by hand on the Team page lasts until that member"),
        "{}",
        settings.text()
    );

    // Ana, whose account SSO made (no password), is removed and invited again: the invitation
    // asks for no password but to accept with SSO, and signing in with SSO accepts it.
    let ana = member_id(&w.owner, "ana@acme.test").await;
    w.owner
        .post(&format!("/dashboard/team/members/{ana}/remove"), &[])
        .await
        .assert_redirect("/dashboard/team");
    let invited = w
        .owner
        .post(
            "/dashboard/team/invite",
            &[("email", "ana@acme.test"), ("role", "cashier")],
        )
        .await;
    invited.assert_ok();
    let invitation = super::accounts::invitation_link(&invited.body);
    let path = format!(
        "/dashboard{}",
        invitation.split_once("/dashboard").unwrap().1
    );
    let page = Visitor::new(&w.gw).get(&path).await;
    page.assert_ok();
    assert!(!page.body.contains("name=\"password\""), "{}", page.body);
    assert!(
        page.text()
            .contains("single sign-on and has no pixgw password: sign in with it to accept."),
        "{}",
        page.text()
    );
    browser
        .cdp("Network.clearBrowserCookies", serde_json::json!({}))
        .await;
    browser.goto(&path).await;
    browser.screenshots("sso-invitation").await;
    browser.click("#invitation-sso").await;
    browser.fill("#login", "ana@acme.test").await;
    browser.fill("#password", IDP_PASSWORD).await;
    browser.click("#login-submit").await;
    assert_eq!(role_shown(&browser).await, "ana@acme.testCashier");
    let team = w.owner.get("/dashboard/team").await;
    assert!(team.text().contains("ana@acme.test"), "{}", team.text());

    // The provider vouches for an address outside the merchant's domains: refused.
    browser
        .cdp("Network.clearBrowserCookies", serde_json::json!({}))
        .await;
    browser.goto(&link.replace(&w.gw.url, "")).await;
    browser.fill("#login", "eve@elsewhere.test").await;
    browser.fill("#password", IDP_PASSWORD).await;
    browser.click("#login-submit").await;
    assert_eq!(
        browser.text("#sso-error").await,
        "eve@elsewhere.test is not in the e-mail domains this merchant signs in with SSO."
    );
    assert_eq!(
        browser.text("#sso-hint").await,
        "Sign in with your work account, or ask the owner to add your domain in the SSO settings."
    );
    browser.screenshots("sso-refused-domain").await;

    // "Cancel" at the provider: consent denied.
    browser
        .cdp("Network.clearBrowserCookies", serde_json::json!({}))
        .await;
    browser.goto("/dashboard/sign-in").await;
    browser.fill("#sso-email", "zoe@acme.test").await;
    browser.click("#sso-submit").await;
    browser.click("#login-cancel").await;
    assert_eq!(
        browser.text("#sso-error").await,
        "The sign-in was cancelled at the identity provider, or pixgw was not allowed."
    );

    // The provider's clock an hour behind: its ID token expired before it arrived.
    w.idp.set_clock(-3600).await;
    sso_sign_in(&browser, "zoe@acme.test", "zoe@acme.test").await;
    assert_eq!(
        browser.text("#sso-error").await,
        "The identity provider's answer had already expired when it arrived."
    );
    assert!(
        browser
            .text("#sso-detail")
            .await
            .starts_with("ID token expired at")
    );
    assert!(browser.text("#sso-hint").await.contains("clock is behind"));
    browser.screenshots("sso-expired").await;
    // Five minutes ahead (its codes live ten): issued in the future.
    w.idp.set_clock(300).await;
    sso_sign_in(&browser, "zoe@acme.test", "zoe@acme.test").await;
    assert_eq!(
        browser.text("#sso-error").await,
        "The identity provider's answer is dated in the future."
    );
    w.idp.set_clock(0).await;
    // Neither made a member: Zoe's first good sign-in does.
    sso_sign_in(&browser, "zoe@acme.test", "zoe@acme.test").await;
    assert_eq!(role_shown(&browser).await, "zoe@acme.testRead-only");

    // Required SSO: a member with a password is refused at the password form.
    super::accounts::join_as(&w.gw, &w.owner, "bia@acme.test", "cashier").await;
    configure(
        &w.owner,
        &w.idp.issuer,
        &[("require_sso", "on"), ("client_secret", "")],
    )
    .await
    .assert_redirect("/dashboard/settings/sso");
    browser
        .cdp("Network.clearBrowserCookies", serde_json::json!({}))
        .await;
    browser.goto("/dashboard/sign-in").await;
    browser.fill("#email", "bia@acme.test").await;
    browser.fill("#password", PASSWORD).await;
    browser.click("button[type=submit]").await;
    assert_eq!(
        browser.text("#form-error").await,
        "Your team signs in with SSO: use \"Sign in with SSO\" below with your work e-mail."
    );
    browser.screenshots("sso-password-refused").await;

    // The owner's audit log has every step.
    let (actions, text) = sso_audit(&w.owner).await;
    let count = |action: &str| actions.iter().filter(|a| *a == action).count();
    assert_eq!(count("sso.configure"), 2, "{actions:?}");
    assert_eq!(
        count("sso.member_created"),
        3,
        "ana, fabio, zoe: {actions:?}"
    );
    assert_eq!(count("sso.sign_in"), 6, "{actions:?}");
    assert_eq!(count("sso.role_set"), 1, "fabio: {actions:?}");
    assert_eq!(count("sso.sign_in_refused"), 4, "{actions:?}");
    assert_eq!(count("sso.password_refused"), 1, "{actions:?}");
    assert!(text.contains("ana@acme.test joined as read_only at their first SSO sign-in"));
    assert!(text.contains("fabio@acme.test joined as manager at their first SSO sign-in"));
    assert!(text.contains("fabio@acme.test is manager by the role rules, at an SSO sign-in"));
    assert!(text.contains("SSO sign-in of eve@elsewhere.test refused"));
    assert!(text.contains("the ID token expired"));
    assert!(text.contains("the ID token was issued in the future"));
    browser.close().await;
}
