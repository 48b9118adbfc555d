//! Classification of everything that can go wrong into the WIT `error` variant.
//!
//! The variant tells the router what is safe to do next, so the rules live here once:
//!
//! | what happened | create ([`Op::Create`]) | cancel, webhook registration ([`Op::Change`]) | query, credential check ([`Op::Read`]) |
//! |---|---|---|---|
//! | transport `denied`, `not-sent` | unavailable | unavailable | unavailable |
//! | transport `certificate` | bad-credentials | bad-credentials | bad-credentials |
//! | transport `no-answer` | ambiguous | ambiguous | unavailable |
//! | HTTP 401, 403 | bad-credentials | bad-credentials | bad-credentials |
//! | HTTP 404 | rejected | not-found | not-found |
//! | HTTP 408, 429, 503 | unavailable | unavailable | unavailable |
//! | other 4xx (400, 409, 422…) | rejected | rejected | rejected |
//! | other 5xx | ambiguous | ambiguous | unavailable |
//! | a success we cannot read | ambiguous | ambiguous | unavailable |
//!
//! "Unless the PSP says it did nothing" is kept simple: 408, 429 and 503 are the statuses with
//! which a server says it did not process the request; every other 5xx after a write may have
//! changed something, so it is ambiguous. The PSP's message, code and HTTP status are kept.
//!
//! [`describe_body`] reads the error bodies PSPs answer (RFC 7807 problem+json with
//! `violacoes`, Efí's `{nome, mensagem}`, BB's `{erros:[…]}`, OAuth's `{error,
//! error_description}` and a few common shapes) into a [`PspError`] that keeps the PSP's words.
//!
//! Each [`PspError`] also carries a typed [`Reason`] — what the merchant must fix — which the
//! host turns into the hint and the error code. The classification above sets the reasons that
//! the transport and the status say by themselves (a refused certificate; 401/403 →
//! `credentials`; 404 → `not-found`) unless the adapter already set one; an adapter sets the
//! others from its PSP's error codes in one call: `Error::rejected(msg).because(Reason::PixKey)`
//! or `describe_body(status, body).because(Reason::Amount)`.

use serde_json::Value;

pub use crate::bindings::pixgw::psp::types::{Error, PspError, RefusalReason as Reason};
use crate::http::HttpError;

/// What the failed call was doing: decides whether a lost answer may have changed something.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Creates a charge: a lost answer means the charge may exist.
    Create,
    /// Changes something that exists (cancel, webhook registration).
    Change,
    /// Changes nothing (query, credential check, token fetch).
    Read,
}

impl PspError {
    /// A message of the adapter's own, with no code, no HTTP status and no reason.
    pub fn new(message: impl Into<String>) -> Self {
        PspError {
            message: message.into(),
            code: None,
            http_status: None,
            reason: Reason::Unspecified,
        }
    }

    /// The PSP's message and code, as its error body says them.
    pub fn with_code(message: impl Into<String>, code: Option<String>) -> Self {
        PspError {
            code,
            ..PspError::new(message)
        }
    }

    /// Says why: `describe_body(status, body).because(Reason::Amount)`.
    pub fn because(mut self, reason: Reason) -> Self {
        self.reason = reason;
        self
    }

    /// Sets `reason` only where nothing more specific was said.
    fn or_because(mut self, reason: Reason) -> Self {
        if self.reason == Reason::Unspecified {
            self.reason = reason;
        }
        self
    }
}

impl Reason {
    /// The kebab-case WIT case name, for logs and tests.
    pub fn name(self) -> &'static str {
        match self {
            Reason::Unspecified => "unspecified",
            Reason::Credentials => "credentials",
            Reason::Certificate => "certificate",
            Reason::PixKey => "pix-key",
            Reason::PixNotEnabled => "pix-not-enabled",
            Reason::PixNotOffered => "pix-not-offered",
            Reason::AccountCannotTakePix => "account-cannot-take-pix",
            Reason::NotFound => "not-found",
            Reason::Amount => "amount",
            Reason::PayerData => "payer-data",
        }
    }
}

impl Error {
    /// `rejected` with the adapter's own message (e.g. a missing credential field).
    pub fn rejected(message: impl Into<String>) -> Self {
        Error::Rejected(PspError::new(message))
    }

    /// `not-found` with the adapter's own message (e.g. no charge carries this reference).
    pub fn not_found(message: impl Into<String>) -> Self {
        Error::NotFound(PspError::new(message).because(Reason::NotFound))
    }

    /// `unavailable` with the adapter's own message.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Error::Unavailable(PspError::new(message))
    }

    /// `invalid-webhook` with a reason.
    pub fn invalid_webhook(reason: impl Into<String>) -> Self {
        Error::InvalidWebhook(reason.into())
    }

    /// `unsupported`, naming the operation (e.g. `cancel-charge`).
    pub fn unsupported(operation: &str) -> Self {
        Error::Unsupported(format!("this adapter does not implement {operation}"))
    }

    /// Says why, on the cases that carry the PSP's error (the others have no reason to give):
    /// `Error::rejected("Asaas requires the payer's CPF").because(Reason::PayerData)`.
    pub fn because(mut self, reason: Reason) -> Self {
        if let Some(e) = self.psp_error_mut() {
            e.reason = reason;
        }
        self
    }

    /// Why, as the PSP's answer said it; `unspecified` for the cases without a PSP error.
    pub fn reason(&self) -> Reason {
        self.psp_error().map_or(Reason::Unspecified, |e| e.reason)
    }

    fn psp_error_mut(&mut self) -> Option<&mut PspError> {
        match self {
            Error::Rejected(e)
            | Error::Unavailable(e)
            | Error::Ambiguous(e)
            | Error::NotFound(e)
            | Error::BadCredentials(e) => Some(e),
            Error::InvalidWebhook(_) | Error::Unsupported(_) => None,
        }
    }

    /// The kebab-case WIT case name, for logs and tests.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Rejected(_) => "rejected",
            Error::Unavailable(_) => "unavailable",
            Error::Ambiguous(_) => "ambiguous",
            Error::NotFound(_) => "not-found",
            Error::BadCredentials(_) => "bad-credentials",
            Error::InvalidWebhook(_) => "invalid-webhook",
            Error::Unsupported(_) => "unsupported",
        }
    }

    /// The PSP's side of the error, when the case carries one.
    pub fn psp_error(&self) -> Option<&PspError> {
        match self {
            Error::Rejected(e)
            | Error::Unavailable(e)
            | Error::Ambiguous(e)
            | Error::NotFound(e)
            | Error::BadCredentials(e) => Some(e),
            Error::InvalidWebhook(_) | Error::Unsupported(_) => None,
        }
    }
}

/// Classifies a transport failure reported by the host's `http.send`.
pub fn from_transport(op: Op, error: &HttpError) -> Error {
    match error {
        HttpError::Denied(detail) => {
            Error::unavailable(format!("the host refused to send the request: {detail}"))
        }
        HttpError::NotSent(detail) => {
            Error::unavailable(format!("the request did not reach the PSP: {detail}"))
        }
        HttpError::Certificate(detail) => Error::BadCredentials(
            PspError::new(format!(
                "the client certificate is missing, unreadable or was refused by the PSP: {detail}"
            ))
            .because(Reason::Certificate),
        ),
        HttpError::NoAnswer(detail) => match op {
            Op::Read => Error::unavailable(format!("the PSP did not answer: {detail}")),
            Op::Create | Op::Change => Error::Ambiguous(PspError::new(format!(
                "the PSP did not answer; the request may have been processed: {detail}"
            ))),
        },
    }
}

/// Classifies an HTTP answer that is not a success. `error` is what the PSP said
/// (see [`describe_body`]); its `http-status` is set to `status`, and its reason, unless the
/// adapter set one, to what the status alone says (401/403 `credentials`, 404 `not-found`).
pub fn from_status(op: Op, status: u16, mut error: PspError) -> Error {
    error.http_status = Some(status);
    match status {
        401 | 403 => Error::BadCredentials(error.or_because(Reason::Credentials)),
        404 if op == Op::Create => Error::Rejected(error.or_because(Reason::NotFound)),
        404 => Error::NotFound(error.or_because(Reason::NotFound)),
        408 | 429 | 503 => Error::Unavailable(error),
        400..=499 => Error::Rejected(error),
        _ if op == Op::Read => Error::Unavailable(error),
        _ => Error::Ambiguous(error),
    }
}

/// A success answer the adapter could not understand: after a write the PSP may have acted.
pub fn undecodable(op: Op, status: u16, detail: impl Into<String>) -> Error {
    let error = PspError {
        http_status: Some(status),
        ..PspError::new(detail)
    };
    match op {
        Op::Read => Error::Unavailable(error),
        Op::Create | Op::Change => Error::Ambiguous(error),
    }
}

/// Reads a PSP error body into the PSP's own message and code (no HTTP status set).
///
/// Recognised shapes, first match wins:
/// - RFC 7807: `{type, title, status, detail, violacoes[{razao, propriedade, valor}]}` →
///   `"<title>: <detail> (<propriedade>: <razao>; …)"`, code = last segment of `type`;
/// - Efí: `{nome, mensagem}` → `mensagem`, code = `nome`;
/// - BB: `{erros:[{codigo, mensagem}]}` → messages joined by `"; "`, code = first `codigo`;
/// - OAuth: `{error, error_description}`;
/// - `{message, code?}`, `{error:{message, code?}}`, `{errors:[{code, description}]}`.
///
/// Anything else becomes an excerpt of the body (or `HTTP <status>` when empty).
pub fn describe_body(status: u16, body: &[u8]) -> PspError {
    let fallback = || {
        let text = crate::http::excerpt(body);
        PspError::new(if text.is_empty() {
            format!("HTTP {status}")
        } else {
            text
        })
    };
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return fallback();
    };
    describe_json(&value).unwrap_or_else(fallback)
}

fn describe_json(v: &Value) -> Option<PspError> {
    let s = |v: &Value, key: &str| v.get(key).and_then(text);
    let with_code = PspError::with_code;

    if s(v, "title").is_some() || s(v, "detail").is_some() {
        let mut message = match (s(v, "title"), s(v, "detail")) {
            (Some(t), Some(d)) => format!("{t}: {d}"),
            (t, d) => t.or(d).unwrap_or_default(),
        };
        let violations: Vec<String> = list(v, "violacoes")
            .map(|x| match (s(x, "propriedade"), s(x, "razao")) {
                (Some(p), Some(r)) => format!("{p}: {r}"),
                (p, r) => r.or(p).unwrap_or_default(),
            })
            .filter(|x| !x.is_empty())
            .collect();
        if !violations.is_empty() {
            message = format!("{message} ({})", violations.join("; "));
        }
        let code = s(v, "type").map(|t| t.rsplit('/').next().unwrap_or(&t).to_owned());
        return Some(with_code(message, code.or_else(|| s(v, "title"))));
    }
    if let Some(message) = s(v, "mensagem") {
        return Some(with_code(message, s(v, "nome")));
    }
    for key in ["erros", "errors"] {
        let items: Vec<&Value> = list(v, key).collect();
        let messages: Vec<String> = items
            .iter()
            .filter_map(|x| {
                s(x, "mensagem")
                    .or_else(|| s(x, "description"))
                    .or_else(|| s(x, "message"))
            })
            .collect();
        if !messages.is_empty() {
            let code = items
                .iter()
                .find_map(|x| s(x, "codigo").or_else(|| s(x, "code")));
            return Some(with_code(messages.join("; "), code));
        }
    }
    if let Some(error) = s(v, "error") {
        let message = s(v, "error_description").unwrap_or_else(|| error.clone());
        return Some(with_code(message, Some(error)));
    }
    if let Some(inner) = v.get("error").filter(|e| e.is_object()) {
        return describe_json(inner);
    }
    if let Some(message) = s(v, "message") {
        return Some(with_code(message, s(v, "code")));
    }
    None
}

/// A JSON string or number as text (codes are sometimes numbers).
fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn list<'a>(v: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    v.get(key).and_then(Value::as_array).into_iter().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(op: Op, status: u16) -> &'static str {
        from_status(op, status, PspError::new("x")).kind()
    }

    #[test]
    fn http_status_table() {
        use Op::*;
        let table: &[(u16, [&str; 3])] = &[
            (400, ["rejected", "rejected", "rejected"]),
            (
                401,
                ["bad-credentials", "bad-credentials", "bad-credentials"],
            ),
            (
                403,
                ["bad-credentials", "bad-credentials", "bad-credentials"],
            ),
            (404, ["rejected", "not-found", "not-found"]),
            (408, ["unavailable", "unavailable", "unavailable"]),
            (409, ["rejected", "rejected", "rejected"]),
            (422, ["rejected", "rejected", "rejected"]),
            (429, ["unavailable", "unavailable", "unavailable"]),
            (500, ["ambiguous", "ambiguous", "unavailable"]),
            (502, ["ambiguous", "ambiguous", "unavailable"]),
            (503, ["unavailable", "unavailable", "unavailable"]),
            (504, ["ambiguous", "ambiguous", "unavailable"]),
        ];
        for (code, [create, change, read]) in table {
            assert_eq!(status(Create, *code), *create, "create {code}");
            assert_eq!(status(Change, *code), *change, "change {code}");
            assert_eq!(status(Read, *code), *read, "read {code}");
        }
    }

    #[test]
    fn transport_table() {
        let cases = [
            (
                HttpError::Denied("origin".into()),
                ["unavailable", "unavailable"],
            ),
            (
                HttpError::NotSent("refused".into()),
                ["unavailable", "unavailable"],
            ),
            (
                HttpError::Certificate("bad pem".into()),
                ["bad-credentials", "bad-credentials"],
            ),
            (
                HttpError::NoAnswer("timeout".into()),
                ["ambiguous", "unavailable"],
            ),
        ];
        for (error, [create, read]) in cases {
            assert_eq!(
                from_transport(Op::Create, &error).kind(),
                create,
                "{error:?}"
            );
            assert_eq!(
                from_transport(Op::Change, &error).kind(),
                create,
                "{error:?}"
            );
            assert_eq!(from_transport(Op::Read, &error).kind(), read, "{error:?}");
        }
    }

    #[test]
    fn certificate_failure_names_the_certificate_and_keeps_the_detail() {
        let e = from_transport(Op::Read, &HttpError::Certificate("unknown ca".into()));
        let message = &e.psp_error().unwrap().message;
        assert!(message.contains("client certificate"), "{message}");
        assert!(message.ends_with("unknown ca"), "{message}");
    }

    #[test]
    fn the_status_says_a_reason_unless_the_adapter_said_one() {
        let reason = |op, code, e: PspError| from_status(op, code, e).reason();
        assert_eq!(
            reason(Op::Read, 401, PspError::new("x")),
            Reason::Credentials
        );
        assert_eq!(
            reason(Op::Change, 403, PspError::new("x")),
            Reason::Credentials
        );
        assert_eq!(reason(Op::Read, 404, PspError::new("x")), Reason::NotFound);
        assert_eq!(
            reason(Op::Create, 404, PspError::new("x")),
            Reason::NotFound
        );
        assert_eq!(
            reason(Op::Create, 400, PspError::new("x")),
            Reason::Unspecified
        );
        assert_eq!(
            reason(Op::Create, 500, PspError::new("x")),
            Reason::Unspecified
        );
        let said = PspError::new("Pix não habilitado").because(Reason::PixNotEnabled);
        assert_eq!(reason(Op::Create, 403, said), Reason::PixNotEnabled);
        let certificate = from_transport(Op::Create, &HttpError::Certificate("expired".into()));
        assert_eq!(
            (certificate.kind(), certificate.reason()),
            ("bad-credentials", Reason::Certificate)
        );
        assert_eq!(
            from_transport(Op::Create, &HttpError::NotSent("refused".into())).reason(),
            Reason::Unspecified
        );
    }

    #[test]
    fn because_sets_the_reason_where_the_case_carries_the_psps_error() {
        let e = Error::rejected("Asaas requires the payer's CPF").because(Reason::PayerData);
        assert_eq!((e.kind(), e.reason()), ("rejected", Reason::PayerData));
        assert_eq!(
            e.psp_error().unwrap().message,
            "Asaas requires the payer's CPF"
        );
        let e = Error::unsupported("cancel-charge").because(Reason::PixKey);
        assert_eq!(e.reason(), Reason::Unspecified);
    }

    #[test]
    fn status_is_kept() {
        let e = from_status(Op::Read, 404, PspError::new("gone"));
        assert_eq!(e.psp_error().unwrap().http_status, Some(404));
        assert_eq!(undecodable(Op::Create, 201, "bad json").kind(), "ambiguous");
        assert_eq!(undecodable(Op::Read, 200, "bad json").kind(), "unavailable");
    }

    fn describe(body: &str) -> (String, Option<String>) {
        let e = describe_body(400, body.as_bytes());
        (e.message, e.code)
    }

    #[test]
    fn problem_json_with_violations() {
        let body = r#"{"type":"https://pix.bcb.gov.br/api/v2/error/CobOperacaoInvalida",
            "title":"Cobrança inválida.","status":400,
            "detail":"A requisição que busca alterar ou criar uma cobrança não respeita o schema.",
            "violacoes":[{"razao":"O campo cob.valor.original não respeita o schema.",
            "propriedade":"cob.valor.original"}]}"#;
        assert_eq!(
            describe(body),
            (
                "Cobrança inválida.: A requisição que busca alterar ou criar uma cobrança não respeita o schema. \
                 (cob.valor.original: O campo cob.valor.original não respeita o schema.)"
                    .into(),
                Some("CobOperacaoInvalida".into())
            )
        );
    }

    #[test]
    fn efi_bb_oauth_and_unknown_bodies() {
        assert_eq!(
            describe(
                r#"{"nome":"cobranca_nao_encontrada","mensagem":"Nenhuma cobrança encontrada para o txid informado"}"#
            ),
            (
                "Nenhuma cobrança encontrada para o txid informado".into(),
                Some("cobranca_nao_encontrada".into())
            )
        );
        assert_eq!(
            describe(
                r#"{"erros":[{"codigo":4769515,"versao":"1","mensagem":"O campo chave é inválido."},{"codigo":"2","mensagem":"Outro."}]}"#
            ),
            (
                "O campo chave é inválido.; Outro.".into(),
                Some("4769515".into())
            )
        );
        assert_eq!(
            describe(
                r#"{"error":"invalid_client","error_description":"Invalid or missing credentials"}"#
            ),
            (
                "Invalid or missing credentials".into(),
                Some("invalid_client".into())
            )
        );
        assert_eq!(
            describe("<html>Bad gateway</html>"),
            ("<html>Bad gateway</html>".into(), None)
        );
        assert_eq!(describe(""), ("HTTP 400".into(), None));
    }
}
