//! Accounts through the real binary: sign-up, sign-in and its throttling, sessions (cookies,
//! sign-out, several gateways on one database), password changes, CSRF, languages, and the
//! team (invitations, roles, the last owner).

use crate::both_backends;
use crate::common::gateway::{Backend, Gateway, GatewayOptions, TestDb};
use crate::dashboard::support::{PASSWORD, Visitor};

pub async fn gateway(db: &TestDb) -> Gateway {
    Gateway::start_with(db, None, &[], GatewayOptions::default()).await
}

/// Invites `email` as `role` from `owner`'s session and accepts as a new person; returns
/// their visitor, signed in.
pub async fn join_as(gateway: &Gateway, owner: &Visitor, email: &str, role: &str) -> Visitor {
    owner.get("/dashboard/team").await.assert_ok();
    let answer = owner
        .post(
            "/dashboard/team/invite",
            &[("email", email), ("role", role)],
        )
        .await;
    answer.assert_ok();
    let link = invitation_link(&answer.body);
    let path = link
        .split_once("/dashboard")
        .map(|(_, p)| format!("/dashboard{p}"))
        .unwrap();
    let member = Visitor::new(gateway);
    member.get(&path).await.assert_ok();
    member
        .post(&path, &[("name", "Bruno Lima"), ("password", PASSWORD)])
        .await
        .assert_redirect("/dashboard");
    member.get("/dashboard").await.assert_ok();
    member
}

/// The link in `<code id="invitation-link">`.
pub fn invitation_link(html: &str) -> String {
    let start = html
        .find("id=\"invitation-link\">")
        .expect("the page shows the link")
        + 21;
    html[start..start + html[start..].find('<').unwrap()]
        .replace("&#x2f;", "/")
        .replace("&#47;", "/")
}

both_backends!(sign_up_signs_in_and_refuses_bad_input_keeping_it);
async fn sign_up_signs_in_and_refuses_bad_input_keeping_it(backend: Backend) {
    let db = TestDb::new(backend).await;
    let gw = gateway(&db).await;

    // Without a session, the dashboard sends to sign-in and comes back afterwards.
    let anon = Visitor::new(&gw);
    anon.get("/dashboard/team")
        .await
        .assert_redirect("/dashboard/sign-in?next=%2Fdashboard%2Fteam");

    let owner = Visitor::sign_up(&gw, "Loja da Ana", "Ana@Loja.com.br").await;
    let overview = owner.get("/dashboard").await;
    let text = overview.text();
    assert!(text.contains("Loja da Ana"), "{text}");
    assert!(
        text.contains("Getting started"),
        "the checklist shows: {text}"
    );
    assert!(text.contains("Connect a PSP"));
    // The session cookie is HttpOnly and SameSite; the gateway is on http, so not Secure.
    assert!(owner.cookie("pgw_session").is_some());

    // The same address again (any case) is refused, and the form keeps what was typed.
    let again = Visitor::new(&gw);
    again.get("/dashboard/sign-up").await.assert_ok();
    let answer = again
        .post(
            "/dashboard/sign-up",
            &[
                ("business_name", "Outra Loja"),
                ("name", "Ana"),
                ("email", "ana@loja.com.br"),
                ("password", PASSWORD),
            ],
        )
        .await;
    assert_eq!(answer.status, 422);
    assert!(
        answer
            .text()
            .contains("An account with this e-mail exists already")
    );
    assert_eq!(
        answer.input_value("business_name").as_deref(),
        Some("Outra Loja")
    );
    assert_eq!(
        answer.input_value("email").as_deref(),
        Some("ana@loja.com.br")
    );

    // Each field's own message.
    for (field, value, message) in [
        (
            "password",
            "short",
            "The password must have 10 to 128 characters",
        ),
        ("email", "ana@", "Enter a valid e-mail address"),
        ("business_name", "", "Enter a name of up to 100 characters"),
        (
            "name",
            &"x".repeat(101),
            "Enter a name of up to 100 characters",
        ),
    ] {
        let mut form = vec![
            ("business_name", "Loja Nova"),
            ("name", "Caio"),
            ("email", "caio@loja.com.br"),
            ("password", PASSWORD),
        ];
        form.iter_mut().find(|(k, _)| *k == field).unwrap().1 = value;
        let answer = again.post("/dashboard/sign-up", &form).await;
        assert_eq!(answer.status, 422, "{field}");
        assert!(
            answer.text().contains(message),
            "{field}: {}",
            answer.text()
        );
    }
}

both_backends!(sign_in_out_and_failures_are_throttled);
async fn sign_in_out_and_failures_are_throttled(backend: Backend) {
    let db = TestDb::new(backend).await;
    let gw = gateway(&db).await;
    let owner = Visitor::sign_up(&gw, "Loja", "dono@loja.com.br").await;

    owner.get("/dashboard").await.assert_ok();
    owner
        .post("/dashboard/sign-out", &[])
        .await
        .assert_redirect("/dashboard/sign-in");
    assert!(
        owner.cookie("pgw_session").is_none(),
        "the cookie is cleared"
    );
    owner
        .get("/dashboard")
        .await
        .assert_redirect("/dashboard/sign-in");

    let (_, answer) = Visitor::sign_in(&gw, "dono@loja.com.br", "wrong password!").await;
    assert_eq!(answer.status, 422);
    assert!(answer.text().contains("Wrong e-mail or password."));
    assert_eq!(
        answer.input_value("email").as_deref(),
        Some("dono@loja.com.br")
    );
    // An unknown address gets the same words: nothing tells which accounts exist.
    let (_, answer) = Visitor::sign_in(&gw, "ninguem@loja.com.br", PASSWORD).await;
    assert_eq!(answer.status, 422);
    assert!(answer.text().contains("Wrong e-mail or password."));

    let (signed_in, answer) = Visitor::sign_in(&gw, "DONO@loja.com.br", PASSWORD).await;
    answer.assert_redirect("/dashboard");
    signed_in.get("/dashboard/account").await.assert_ok();

    // Five failures lock the account for 15 minutes, even for the right password.
    for _ in 0..4 {
        let (_, answer) = Visitor::sign_in(&gw, "dono@loja.com.br", "not the password").await;
        assert_eq!(answer.status, 422);
    }
    let (_, answer) = Visitor::sign_in(&gw, "dono@loja.com.br", "not the password").await;
    assert_eq!(
        answer.status, 422,
        "the fifth failure is still a wrong password"
    );
    let (_, answer) = Visitor::sign_in(&gw, "dono@loja.com.br", PASSWORD).await;
    assert_eq!(answer.status, 429);
    assert!(
        answer
            .text()
            .contains("Too many failed sign-ins for this account. Try again in 15 min."),
        "{}",
        answer.text()
    );
    // The session that was open stays open.
    signed_in.get("/dashboard").await.assert_ok();
}

both_backends!(forms_without_the_csrf_token_are_refused);
async fn forms_without_the_csrf_token_are_refused(backend: Backend) {
    let db = TestDb::new(backend).await;
    let gw = gateway(&db).await;
    let owner = Visitor::sign_up(&gw, "Loja", "dono@loja.com.br").await;

    let answer = owner
        .post_without_csrf(
            "/dashboard/team/invite",
            &[("email", "x@loja.com.br"), ("role", "manager")],
        )
        .await;
    assert_eq!(answer.status, 403);
    assert!(answer.text().contains("Form expired"), "{}", answer.text());
    let forged = owner
        .post_without_csrf(
            "/dashboard/team/invite",
            &[
                ("_csrf", "forged-token-forged-token-forged-token"),
                ("email", "x@loja.com.br"),
                ("role", "manager"),
            ],
        )
        .await;
    assert_eq!(forged.status, 403);
    // Sign-in needs the double-submit cookie too.
    let anon = Visitor::new(&gw);
    let answer = anon
        .post_without_csrf(
            "/dashboard/sign-in",
            &[("email", "dono@loja.com.br"), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(answer.status, 403);
    // Nothing was created by the refused posts.
    let team = owner.get("/dashboard/team").await;
    assert!(!team.text().contains("x@loja.com.br"));
}

both_backends!(password_change_ends_the_other_sessions);
async fn password_change_ends_the_other_sessions(backend: Backend) {
    let db = TestDb::new(backend).await;
    let gw = gateway(&db).await;
    let owner = Visitor::sign_up(&gw, "Loja", "dono@loja.com.br").await;
    let (other, _) = Visitor::sign_in(&gw, "dono@loja.com.br", PASSWORD).await;
    other.get("/dashboard").await.assert_ok();

    owner.get("/dashboard/account").await.assert_ok();
    let wrong = owner
        .post(
            "/dashboard/account",
            &[
                ("current_password", "nope nope nope"),
                ("new_password", "a brand new passphrase"),
            ],
        )
        .await;
    assert_eq!(wrong.status, 422);
    assert!(wrong.text().contains("The current password is wrong."));
    owner
        .post(
            "/dashboard/account",
            &[
                ("current_password", PASSWORD),
                ("new_password", "a brand new passphrase"),
            ],
        )
        .await
        .assert_redirect("/dashboard/account");
    let page = owner.get("/dashboard/account").await;
    assert!(page.text().contains("Password changed."), "{}", page.text());
    other
        .get("/dashboard")
        .await
        .assert_redirect("/dashboard/sign-in");
    let (_, old) = Visitor::sign_in(&gw, "dono@loja.com.br", PASSWORD).await;
    assert_eq!(old.status, 422);
    let (_, new) = Visitor::sign_in(&gw, "dono@loja.com.br", "a brand new passphrase").await;
    new.assert_redirect("/dashboard");
}

both_backends!(pages_speak_portuguese_by_default_and_follow_the_switch);
async fn pages_speak_portuguese_by_default_and_follow_the_switch(backend: Backend) {
    let db = TestDb::new(backend).await;
    let gw = gateway(&db).await;
    let mut v = Visitor::new(&gw);
    v.language = "de-DE, fr;q=0.8";
    let page = v.get("/dashboard/sign-in").await;
    assert!(page.body.contains("<html lang=\"pt-BR\">"));
    assert!(page.text().contains("Entrar"));
    v.language = "en-US,en;q=0.9,pt;q=0.5";
    assert!(v.get("/dashboard/sign-in").await.text().contains("Sign in"));
    // The switch wins over the browser.
    v.get("/dashboard/language?lang=pt-BR&next=/dashboard/sign-in")
        .await
        .assert_redirect("/dashboard/sign-in");
    let page = v.get("/dashboard/sign-in").await;
    assert!(
        page.text().contains("Ainda não tem conta?"),
        "{}",
        page.text()
    );
    // A switch never sends anyone off the dashboard.
    v.get("/dashboard/language?lang=en&next=https://evil.example/")
        .await
        .assert_redirect("/dashboard");
}

both_backends!(the_team_invitations_roles_and_the_last_owner);
async fn the_team_invitations_roles_and_the_last_owner(backend: Backend) {
    let db = TestDb::new(backend).await;
    let gw = gateway(&db).await;
    let owner = Visitor::sign_up(&gw, "Loja", "dono@loja.com.br").await;
    let manager = join_as(&gw, &owner, "gerente@loja.com.br", "manager").await;

    let team = owner.get("/dashboard/team").await;
    let text = team.text();
    assert!(
        text.contains("gerente@loja.com.br") && text.contains("Manager"),
        "{text}"
    );

    // An invitation link works once.
    owner.get("/dashboard/team").await.assert_ok();
    let answer = owner
        .post(
            "/dashboard/team/invite",
            &[("email", "caixa@loja.com.br"), ("role", "cashier")],
        )
        .await;
    let link = invitation_link(&answer.body);
    let path = format!("/dashboard{}", link.split_once("/dashboard").unwrap().1);
    let first = Visitor::new(&gw);
    first.get(&path).await.assert_ok();
    first
        .post(&path, &[("name", "Caixa"), ("password", PASSWORD)])
        .await
        .assert_redirect("/dashboard");
    let second = Visitor::new(&gw);
    let used = second.get(&path).await;
    assert_eq!(used.status, 410);
    assert!(used.text().contains("This invitation is not valid"));
    // Inviting a member again is refused with the address kept.
    owner.get("/dashboard/team").await;
    let again = owner
        .post(
            "/dashboard/team/invite",
            &[("email", "caixa@loja.com.br"), ("role", "manager")],
        )
        .await;
    assert_eq!(again.status, 422);
    assert!(again.text().contains("This person is already on the team."));

    // A manager sees the team but cannot change it.
    let page = manager.get("/dashboard/team").await;
    page.assert_ok();
    assert!(
        !page.body.contains("/dashboard/team/invite"),
        "no invite form for a manager"
    );
    let refused = manager
        .post(
            "/dashboard/team/invite",
            &[("email", "x@loja.com.br"), ("role", "owner")],
        )
        .await;
    assert_eq!(refused.status, 403);

    // The only owner can neither leave nor be demoted.
    let owner_id = member_id(&owner.get("/dashboard/team").await.body, "dono@loja.com.br");
    let answer = owner
        .post(
            &format!("/dashboard/team/members/{owner_id}/role"),
            &[("role", "manager")],
        )
        .await;
    assert_eq!(answer.status, 409);
    assert!(answer.text().contains("The team needs at least one owner"));
    let answer = owner
        .post(&format!("/dashboard/team/members/{owner_id}/remove"), &[])
        .await;
    assert_eq!(answer.status, 409);

    // Promote the manager; then the first owner may step down.
    let manager_id = member_id(
        &owner.get("/dashboard/team").await.body,
        "gerente@loja.com.br",
    );
    owner
        .post(
            &format!("/dashboard/team/members/{manager_id}/role"),
            &[("role", "owner")],
        )
        .await
        .assert_redirect("/dashboard/team");
    owner
        .post(
            &format!("/dashboard/team/members/{owner_id}/role"),
            &[("role", "read_only")],
        )
        .await
        .assert_redirect("/dashboard/team");
    // Removing someone ends their session at once.
    let cashier_id = member_id(
        &manager.get("/dashboard/team").await.body,
        "caixa@loja.com.br",
    );
    manager
        .post(&format!("/dashboard/team/members/{cashier_id}/remove"), &[])
        .await
        .assert_redirect("/dashboard/team");
    first
        .get("/dashboard")
        .await
        .assert_redirect("/dashboard/sign-in");
}

/// The user id in the team page's role form of the member with `email`.
fn member_id(html: &str, email: &str) -> String {
    let at = html
        .find(&format!("<td>{email}</td>"))
        .expect("the member is listed");
    let row_start = html[..at].rfind("<tr>").unwrap();
    let row = &html[row_start..];
    let start = row.find("/dashboard/team/members/").unwrap() + "/dashboard/team/members/".len();
    row[start..start + row[start..].find('/').unwrap()].to_owned()
}

/// Two gateways on one PostgreSQL database share sessions: sign in at one, carry on at the
/// other, sign out at the other, and the first no longer knows the session either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_shared_by_gateways_on_one_database() {
    let db = TestDb::new(Backend::Postgres).await;
    let a = gateway(&db).await;
    let b = gateway(&db).await;
    let owner = Visitor::sign_up(&a, "Loja", "dono@loja.com.br").await;
    let mut at_b = Visitor::new(&b);
    at_b.language = "en";
    at_b.set_cookie("pgw_session", &owner.cookie("pgw_session").unwrap());
    let page = at_b.get("/dashboard").await;
    page.assert_ok();
    assert!(page.text().contains("Loja"));
    at_b.post("/dashboard/sign-out", &[])
        .await
        .assert_redirect("/dashboard/sign-in");
    owner
        .get("/dashboard")
        .await
        .assert_redirect("/dashboard/sign-in");
}
