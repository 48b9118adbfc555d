//! The central bank's Pix API (bacen/pix-api v2), written once.
//!
//! Seven PSPs speak it; a [`CentralBankPsp`] holds the only things that differ between them
//! (endpoint names, token path and body, client authentication, scopes, path prefix, extra
//! headers and query parameters, accepted create statuses, status spellings). Its methods are
//! the operations: [`create`](CentralBankPsp::create) (`PUT {prefix}/cob/{txid}`),
//! [`query`](CentralBankPsp::query) (`GET`), [`cancel`](CentralBankPsp::cancel) (`PATCH`),
//! [`register_webhook`](CentralBankPsp::register_webhook) (`PUT {prefix}/webhook/{chave}`),
//! [`parse_webhook`] and [`check_credentials`](CentralBankPsp::check_credentials) (obtain a
//! token). [`call`](CentralBankPsp::call) sends any other authorised request the same way, for
//! a PSP's extras.
//!
//! Every call uses an OAuth token ([`crate::oauth`]); error answers are read with
//! [`describe_body`] — the SDK's reader plus the central bank's vocabulary, which says the
//! [`Reason`] once for all seven banks — and classified with [`error::from_status`].
//!
//! A bank that speaks it is written as its facts only: implement [`CentralBankAdapter`] (the
//! manifest and [`facts`](CentralBankAdapter::facts)) and the SDK implements [`Adapter`] for it.
//!
//! `pixCopiaECola` is optional in the standard: a charge whose answer lacks it is read back
//! (`GET`), and failing that its code is built from its `location` ([`crate::brcode`]). BB's
//! homologation names it `textoImagemQRcode`, which is read as the same thing.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::Adapter;
use crate::brcode;
use crate::context::Context;
use crate::error::{self, Error, Op, PspError, Reason};
use crate::host::Host;
use crate::http::{Method, Request, Response, percent_encode};
use crate::manifest::{Capabilities, Manifest};
use crate::money;
use crate::oauth::{BodyEncoding, ClientAuth, TokenSource};
use crate::types::{Charge, ChargeRequest, ChargeStatus, Payment, PaymentEvent, WebhookRequest};

/// The scopes of the charge, Pix and webhook operations, for PSPs that want them named.
pub const SCOPES: &str = "cob.write cob.read pix.read webhook.write webhook.read";

/// The `kind` shown for these PSPs.
pub const KIND: &str = "bank (central-bank Pix API)";

/// What every central-bank PSP can do besides create and query: cancel (`PATCH` to
/// `REMOVIDA_PELO_USUARIO_RECEBEDOR`), register the notification URL, check credentials.
pub fn capabilities() -> Capabilities {
    // A function: the generated flags type has no const operators.
    Capabilities::CANCEL_CHARGE | Capabilities::REGISTER_WEBHOOK | Capabilities::CHECK_CREDENTIALS
}

/// A bank speaking the central bank's Pix API, as its facts: the SDK implements [`Adapter`] for
/// every such type, each operation being the standard one under [`facts`](Self::facts).
///
/// ```ignore
/// struct Inter;
/// impl CentralBankAdapter for Inter {
///     fn describe() -> Manifest { /* fields, endpoints; kind KIND, capabilities capabilities() */ }
///     fn facts(_: &Context) -> &'static CentralBankPsp { &INTER }
/// }
/// export!(Inter);
/// ```
pub trait CentralBankAdapter {
    /// The adapter's manifest ([`Adapter::manifest`]; named apart so that `Inter::manifest()`
    /// stays unambiguous in tests).
    fn describe() -> Manifest;

    /// The facts of this call: one constant for most banks; Itaú's sandbox and production differ,
    /// chosen by `ctx.environment`.
    fn facts(ctx: &Context) -> &'static CentralBankPsp;
}

impl<T: CentralBankAdapter> Adapter for T {
    fn manifest() -> Manifest {
        T::describe()
    }

    fn create(host: &dyn Host, ctx: &Context, request: &ChargeRequest) -> Result<Charge, Error> {
        T::facts(ctx).create(host, ctx, request)
    }

    fn query(
        host: &dyn Host,
        ctx: &Context,
        reference: &str,
        psp_id: Option<&str>,
    ) -> Result<Charge, Error> {
        T::facts(ctx).query(host, ctx, reference, psp_id)
    }

    fn parse_webhook(
        _: &dyn Host,
        _: &Context,
        request: &WebhookRequest,
    ) -> Result<Vec<PaymentEvent>, Error> {
        parse_webhook(request)
    }

    fn cancel(
        host: &dyn Host,
        ctx: &Context,
        reference: &str,
        psp_id: Option<&str>,
    ) -> Result<Charge, Error> {
        T::facts(ctx).cancel(host, ctx, reference, psp_id)
    }

    fn register_webhook(host: &dyn Host, ctx: &Context) -> Result<(), Error> {
        T::facts(ctx).register_webhook(host, ctx)
    }

    fn check_credentials(host: &dyn Host, ctx: &Context) -> Result<(), Error> {
        T::facts(ctx).check_credentials(host, ctx)
    }
}

/// Where the value of an extra header or query parameter comes from.
#[derive(Clone, Copy, Debug)]
pub enum Source {
    Fixed(&'static str),
    /// A credential field; missing → `rejected` naming it.
    Field(&'static str),
    /// A credential field; missing → the header or parameter is left out.
    OptionalField(&'static str),
    /// The host's request id (correlation headers).
    RequestId,
}

/// One PSP's facts. Start from [`CentralBankPsp::STANDARD`] and state the differences.
#[derive(Clone, Copy, Debug)]
pub struct CentralBankPsp {
    /// Endpoint (by manifest name) of the Pix API.
    pub api_endpoint: &'static str,
    /// Endpoint of the token server (the API's own, unless the token host differs).
    pub token_endpoint: &'static str,
    pub token_path: &'static str,
    /// Query parameters of the token request.
    pub token_query: &'static [(&'static str, &'static str)],
    pub token_body: BodyEncoding,
    pub client_auth: ClientAuth,
    /// `grant_type=client_credentials` in the token body (else put it in `token_query`).
    pub grant_type_in_body: bool,
    /// Scopes named in the token request, e.g. [`SCOPES`].
    pub scopes: Option<&'static str>,
    /// Prefix of every API path, e.g. `/v2` or `/pix/v2` (no trailing slash).
    pub path_prefix: &'static str,
    /// Prefix of `PATCH /cob/{txid}` when it differs from `path_prefix` (Santander revises a
    /// charge under `/api/v2` while everything else is under `/api/v1`).
    pub revise_path_prefix: Option<&'static str>,
    /// Query parameters on every API call (not the token call).
    pub query: &'static [(&'static str, Source)],
    /// Headers on every API call.
    pub headers: &'static [(&'static str, Source)],
    /// Statuses meaning "created"; another 2xx is ambiguous.
    pub create_statuses: &'static [u16],
    /// The PSP's spelling → the standard one, e.g. `REMOVIDO_PELO_PSP` → `REMOVIDA_PELO_PSP`.
    pub status_aliases: &'static [(&'static str, &'static str)],
    /// Error codes by which the PSP says a charge with this txid exists already (besides a 409).
    pub duplicate_txid_codes: &'static [&'static str],
    /// Extra headers of the webhook registration.
    pub webhook_headers: &'static [(&'static str, Source)],
    /// Present the client certificate on every call, token included.
    pub mtls: bool,
    pub timeout_ms: Option<u32>,
    /// Credential field names.
    pub client_id_field: &'static str,
    pub client_secret_field: &'static str,
    pub pix_key_field: &'static str,
}

impl CentralBankPsp {
    /// The standard: endpoint `api` for everything, `/oauth/token` with a form body and Basic
    /// auth, no scopes, paths under `/v2`, create answers 200 or 201, mTLS, credential fields
    /// `client-id`, `client-secret` and `pix-key`.
    pub const STANDARD: CentralBankPsp = CentralBankPsp {
        api_endpoint: "api",
        token_endpoint: "api",
        token_path: "/oauth/token",
        token_query: &[],
        token_body: BodyEncoding::Form,
        client_auth: ClientAuth::Basic,
        grant_type_in_body: true,
        scopes: None,
        path_prefix: "/v2",
        revise_path_prefix: None,
        query: &[],
        headers: &[],
        create_statuses: &[200, 201],
        status_aliases: &[],
        duplicate_txid_codes: &[],
        webhook_headers: &[],
        mtls: true,
        timeout_ms: None,
        client_id_field: "client-id",
        client_secret_field: "client-secret",
        pix_key_field: "pix-key",
    };

    /// The OAuth token source for this credential.
    pub fn token_source(&self, ctx: &Context) -> Result<TokenSource, Error> {
        Ok(TokenSource {
            url: format!("{}{}", ctx.endpoint(self.token_endpoint)?, self.token_path),
            client_id: ctx.field(self.client_id_field)?.to_owned(),
            client_secret: ctx.field(self.client_secret_field)?.to_owned(),
            encoding: self.token_body,
            client_auth: self.client_auth,
            grant_type_in_body: self.grant_type_in_body,
            scope: self.scopes.map(str::to_owned),
            query: self
                .token_query
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            mtls: self.mtls,
            timeout_ms: self.timeout_ms,
        })
    }

    /// An API request to `{api}{prefix}{path}` with the PSP's query parameters and headers
    /// (no token yet).
    pub fn request(&self, ctx: &Context, method: Method, path: &str) -> Result<Request, Error> {
        self.request_under(ctx, method, self.path_prefix, path)
    }

    /// [`request`](Self::request) under another path prefix.
    fn request_under(
        &self,
        ctx: &Context,
        method: Method,
        prefix: &str,
        path: &str,
    ) -> Result<Request, Error> {
        let url = format!("{}{}{}", ctx.endpoint(self.api_endpoint)?, prefix, path);
        let mut request = Request::new(method, url)
            .mtls(self.mtls)
            .timeout_ms(self.timeout_ms);
        for (name, source) in self.query {
            if let Some(value) = resolve(ctx, *source)? {
                request = request.query(name, &value);
            }
        }
        for (name, source) in self.headers {
            if let Some(value) = resolve(ctx, *source)? {
                request = request.header(name, value);
            }
        }
        Ok(request)
    }

    /// Sends an API request with a token; a non-2xx answer becomes an error classified by `op`.
    pub fn send(
        &self,
        host: &dyn Host,
        ctx: &Context,
        op: Op,
        request: Request,
    ) -> Result<Response, Error> {
        self.token_source(ctx)?
            .send(host, op, request)
            .map_err(certificate_named)?
            .error_for_status(op, describe_body)
    }

    /// [`request`](Self::request) then [`send`](Self::send), with an optional JSON body.
    pub fn call(
        &self,
        host: &dyn Host,
        ctx: &Context,
        op: Op,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Response, Error> {
        let mut request = self.request(ctx, method, path)?;
        if let Some(body) = body {
            request = request.json(body);
        }
        self.send(host, ctx, op, request)
    }

    /// The `CobSolicitada` for a charge request.
    pub fn cob_body(&self, ctx: &Context, charge: &ChargeRequest) -> Result<Value, Error> {
        let mut body = json!({
            "calendario": {"expiracao": charge.expires_in},
            "valor": {"original": money::decimal_string(charge.amount)},
            "chave": ctx.field(self.pix_key_field)?,
        });
        // `devedor` needs both a document and a name; with only one of them, leave it out.
        if let (Some(document), Some(name)) = (&charge.payer.document, &charge.payer.name) {
            let kind = if document.len() == 11 { "cpf" } else { "cnpj" };
            body["devedor"] = json!({kind: document, "nome": name});
        }
        if let Some(description) = charge.description.as_deref().filter(|d| !d.is_empty()) {
            body["solicitacaoPagador"] = json!(description.chars().take(140).collect::<String>());
        }
        Ok(body)
    }

    /// `PUT {prefix}/cob/{txid}`, txid = the reference, answered as a [`Cob`].
    ///
    /// A 409, or an error code listed in `duplicate_txid_codes`, means a charge with this txid
    /// exists already (a repeated create): it is fetched and returned when its amount is the one
    /// asked for, since the txid is the gateway's own reference.
    pub fn create_cob(
        &self,
        host: &dyn Host,
        ctx: &Context,
        charge: &ChargeRequest,
    ) -> Result<Cob, Error> {
        let body = self.cob_body(ctx, charge)?;
        let request = self
            .request(ctx, Method::Put, &cob_path(&charge.reference))?
            .json(&body);
        let response = self
            .token_source(ctx)?
            .send(host, Op::Create, request)
            .map_err(certificate_named)?;
        if !response.is_success() {
            let described = describe_body(response.status, &response.body);
            let duplicate = response.status == 409
                || described
                    .code
                    .as_deref()
                    .is_some_and(|c| self.duplicate_txid_codes.contains(&c));
            if duplicate {
                let conflict = error::from_status(Op::Create, response.status, described);
                let amount = money::decimal_string(charge.amount);
                return match self.query_cob(host, ctx, &charge.reference) {
                    Ok(cob) if cob.valor.original == amount => Ok(cob),
                    _ => Err(conflict),
                };
            }
        }
        let response = response.error_for_status(Op::Create, describe_body)?;
        if !self.create_statuses.contains(&response.status) {
            return Err(error::undecodable(
                Op::Create,
                response.status,
                format!("unexpected HTTP {} to a create", response.status),
            ));
        }
        response.decode(Op::Create)
    }

    /// `GET {prefix}/cob/{txid}`.
    pub fn query_cob(&self, host: &dyn Host, ctx: &Context, txid: &str) -> Result<Cob, Error> {
        self.call(host, ctx, Op::Read, Method::Get, &cob_path(txid), None)?
            .decode(Op::Read)
    }

    pub fn create(
        &self,
        host: &dyn Host,
        ctx: &Context,
        charge: &ChargeRequest,
    ) -> Result<Charge, Error> {
        let mut cob = self.create_cob(host, ctx, charge)?;
        if cob.copy_paste().is_none() {
            // The charge exists; only its code is missing from the answer. Read it back (a
            // failure here is no reason to fail the charge: `charge` builds the code from the
            // location then).
            match self.query_cob(host, ctx, &charge.reference) {
                Ok(read) => cob.fill_from(read),
                Err(e) => host.log(
                    crate::host::Level::Warn,
                    "reading back a charge created without pixCopiaECola failed",
                    &[("error", e.kind())],
                ),
            }
        }
        self.charge(&cob, &charge.reference)
            .map_err(|e| error::undecodable(Op::Create, 201, e))
    }

    /// By txid: the PSP's id when known, else the reference (they are the same here).
    pub fn query(
        &self,
        host: &dyn Host,
        ctx: &Context,
        reference: &str,
        psp_id: Option<&str>,
    ) -> Result<Charge, Error> {
        let cob = self.query_cob(host, ctx, psp_id.unwrap_or(reference))?;
        self.charge(&cob, reference)
            .map_err(|e| error::undecodable(Op::Read, 200, e))
    }

    /// `PATCH {prefix}/cob/{txid}` `{"status":"REMOVIDA_PELO_USUARIO_RECEBEDOR"}`.
    pub fn cancel(
        &self,
        host: &dyn Host,
        ctx: &Context,
        reference: &str,
        psp_id: Option<&str>,
    ) -> Result<Charge, Error> {
        let body = json!({"status": "REMOVIDA_PELO_USUARIO_RECEBEDOR"});
        let path = cob_path(psp_id.unwrap_or(reference));
        let prefix = self.revise_path_prefix.unwrap_or(self.path_prefix);
        let request = self
            .request_under(ctx, Method::Patch, prefix, &path)?
            .json(&body);
        let response = self.send(host, ctx, Op::Change, request)?;
        let cob: Cob = response.decode(Op::Change)?;
        self.charge(&cob, reference)
            .map_err(|e| error::undecodable(Op::Change, response.status, e))
    }

    /// `PUT {prefix}/webhook/{chave}` `{"webhookUrl": ctx.webhook_url}`.
    pub fn register_webhook(&self, host: &dyn Host, ctx: &Context) -> Result<(), Error> {
        let path = format!(
            "/webhook/{}",
            percent_encode(ctx.field(self.pix_key_field)?)
        );
        let mut request = self
            .request(ctx, Method::Put, &path)?
            .json(&json!({"webhookUrl": ctx.webhook_url()?}));
        for (name, source) in self.webhook_headers {
            if let Some(value) = resolve(ctx, *source)? {
                request = request.header(name, value);
            }
        }
        self.send(host, ctx, Op::Change, request).map(drop)
    }

    /// Proves the credential by obtaining a fresh token (certificate, id and secret together).
    pub fn check_credentials(&self, host: &dyn Host, ctx: &Context) -> Result<(), Error> {
        self.token_source(ctx)?
            .fetch(host)
            .map(drop)
            .map_err(certificate_named)
    }

    /// Maps a `CobGerada` / `CobCompleta` to the WIT charge.
    pub fn charge(&self, cob: &Cob, reference: &str) -> Result<Charge, String> {
        let status = self.status(&cob.status)?;
        let amount = money::parse_decimal(&cob.valor.original)
            .map_err(|e| format!("valor.original: {e}"))?;
        let expires_at = match (
            &cob.calendario.criacao,
            cob.calendario.expiracao.as_ref().and_then(lenient_u64),
        ) {
            (Some(created), Some(seconds)) => {
                crate::time::add_seconds(created, seconds as i64).ok()
            }
            _ => None,
        };
        let payment = match cob.pix.first() {
            Some(pix) => Some(pix.payment()?),
            None => None,
        };
        Ok(Charge {
            reference: reference.to_owned(),
            psp_id: cob.txid.clone(),
            status,
            amount,
            copy_paste: cob
                .copy_paste()
                .map(str::to_owned)
                .or_else(|| cob.built_copy_paste(amount)),
            qr_png_base64: None,
            expires_at,
            payment,
        })
    }

    /// A `status` of the standard (after this PSP's aliases) as a WIT status.
    pub fn status(&self, status: &str) -> Result<ChargeStatus, String> {
        let standard = self
            .status_aliases
            .iter()
            .find(|(alias, _)| *alias == status)
            .map_or(status, |(_, s)| s);
        match standard {
            "ATIVA" => Ok(ChargeStatus::Pending),
            "CONCLUIDA" => Ok(ChargeStatus::Paid),
            "REMOVIDA_PELO_USUARIO_RECEBEDOR" | "REMOVIDA_PELO_PSP" => Ok(ChargeStatus::Canceled),
            other => Err(format!("unknown charge status {other:?}")),
        }
    }
}

/// An error answer of the central bank's API: the PSP's words ([`error::describe_body`]) and
/// why, in the API's own vocabulary, read from the answer's structure first:
///
/// - the field it names — RFC 7807 `violacoes[].propriedade`, Efí's `nome`, BB's
///   `erros[].codigo` — `chave` → `pix-key`, `valor` → `amount`, `devedor` → `payer-data`;
/// - a problem `type` or name saying the charge is not found (`NaoEncontrado`,
///   `cobranca_nao_encontrada`) → `not-found`;
/// - at 401/403, a message naming the certificate (`certificado`) → `certificate`;
/// - else, in another 4xx, a message naming the field `chave` (BB answers numeric codes) →
///   `pix-key`.
///
/// A 401 or 403 otherwise gets `credentials` and a 404 `not-found` from
/// [`error::from_status`].
pub fn describe_body(status: u16, body: &[u8]) -> PspError {
    let described = error::describe_body(status, body);
    let names = serde_json::from_slice::<Value>(body)
        .map(|v| named_fields(&v))
        .unwrap_or_default();
    let reason = names
        .iter()
        .find_map(|name| field_reason(name))
        .or_else(|| message_reason(status, &described.message))
        .unwrap_or(Reason::Unspecified);
    described.because(reason)
}

/// What a central-bank error body names: violated properties, the problem type, error names.
fn named_fields(v: &Value) -> Vec<String> {
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
    let list = |key: &str| {
        v.get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .cloned()
            .collect::<Vec<_>>()
    };
    let mut names: Vec<String> = list("violacoes")
        .iter()
        .filter_map(|x| text(x, "propriedade"))
        .collect();
    names.extend(text(v, "type").map(|t| t.rsplit('/').next().unwrap_or(&t).to_owned()));
    names.extend(text(v, "nome"));
    names.extend(list("erros").iter().filter_map(|x| text(x, "codigo")));
    names
}

/// `cob.chave`, `chave_invalida` → pix-key; `valor.original`, `valor_invalido` → amount;
/// `devedor.cpf` → payer-data; `NaoEncontrado`, `cobranca_nao_encontrada` → not-found.
fn field_reason(name: &str) -> Option<Reason> {
    let name = name.to_ascii_lowercase();
    let parts: Vec<&str> = name.split(['.', '_', '[']).collect();
    let names = |word: &str| parts.contains(&word);
    if names("chave") {
        Some(Reason::PixKey)
    } else if names("valor") {
        Some(Reason::Amount)
    } else if names("devedor") {
        Some(Reason::PayerData)
    } else if name.contains("naoencontrad") || name.contains("nao_encontrad") {
        Some(Reason::NotFound)
    } else {
        None
    }
}

/// The API's words when the answer names no field: the certificate at 401/403, the `chave`.
fn message_reason(status: u16, message: &str) -> Option<Reason> {
    let lower = message.to_ascii_lowercase();
    let words = || lower.split(|c: char| !c.is_ascii_alphanumeric());
    if matches!(status, 401 | 403) && names_certificate(message) {
        Some(Reason::Certificate)
    } else if !matches!(status, 401 | 403 | 404) && words().any(|w| w == "chave") {
        Some(Reason::PixKey)
    } else {
        None
    }
}

fn names_certificate(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    lower.contains("certificado") || lower.contains("certificate")
}

/// A refused token whose message names the certificate is the certificate's fault.
fn certificate_named(error: Error) -> Error {
    match error {
        Error::BadCredentials(e) if names_certificate(&e.message) => {
            Error::BadCredentials(e.because(Reason::Certificate))
        }
        other => other,
    }
}

/// A notification body: `{"pix":[…]}`, a bare array (Inter) or a single Pix object (Inter as
/// well) → one `paid` event per Pix that carries a txid (Pix without one did not pay a charge
/// of ours). An empty body or an object that is neither (a PSP's test ping) gives no events.
pub fn parse_webhook(request: &WebhookRequest) -> Result<Vec<PaymentEvent>, Error> {
    if request.body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Vec::new());
    }
    let value: Value = serde_json::from_slice(&request.body)
        .map_err(|e| Error::invalid_webhook(format!("the notification is not JSON: {e}")))?;
    let list = match value {
        Value::Array(list) => list,
        Value::Object(mut object) => match object.remove("pix") {
            Some(Value::Array(list)) => list,
            Some(_) => return Err(Error::invalid_webhook("`pix` is not a list")),
            // One Pix on its own: it names its end-to-end id.
            None if object.contains_key("endToEndId") => vec![Value::Object(object)],
            None => Vec::new(),
        },
        _ => {
            return Err(Error::invalid_webhook(
                "the notification is neither an object nor a list",
            ));
        }
    };
    let mut events = Vec::new();
    for item in list {
        let pix: Pix = serde_json::from_value(item)
            .map_err(|e| Error::invalid_webhook(format!("a Pix in the notification: {e}")))?;
        let Some(txid) = pix.txid.clone().filter(|t| !t.is_empty()) else {
            continue;
        };
        let payment = pix.payment().map_err(Error::invalid_webhook)?;
        events.push(PaymentEvent {
            reference: Some(txid.clone()),
            psp_id: Some(txid),
            status: ChargeStatus::Paid,
            payment: Some(payment),
        });
    }
    Ok(events)
}

/// `CobGerada` / `CobCompleta`: the fields the gateway reads.
#[derive(Clone, Debug, Deserialize)]
pub struct Cob {
    pub txid: String,
    pub status: String,
    #[serde(default)]
    pub calendario: Calendario,
    pub valor: Valor,
    #[serde(default, rename = "pixCopiaECola")]
    pub pix_copia_e_cola: Option<String>,
    /// BB homologation's name for `pixCopiaECola`.
    #[serde(default, rename = "textoImagemQRcode")]
    pub texto_imagem_qrcode: Option<String>,
    #[serde(default)]
    pub loc: Option<Loc>,
    #[serde(default)]
    pub location: Option<String>,
    #[serde(default)]
    pub pix: Vec<Pix>,
}

/// Fields 59 and 60 of a code built from a location: the adapter does not know the receiver's
/// name and city, and a payer's bank shows those of the location's payload.
const BUILT_CODE_NAME: &str = "RECEBEDOR PIX";
const BUILT_CODE_CITY: &str = "BRASIL";

impl Cob {
    /// The copy-and-paste code as the PSP gave it: `pixCopiaECola`, or `textoImagemQRcode`.
    pub fn copy_paste(&self) -> Option<&str> {
        [&self.pix_copia_e_cola, &self.texto_imagem_qrcode]
            .into_iter()
            .flatten()
            .map(|c| c.trim())
            .find(|c| !c.is_empty())
    }

    /// The payload location: `location`, or `loc.location`.
    pub fn location_url(&self) -> Option<&str> {
        let loc = self.loc.as_ref().and_then(|l| l.location.as_ref());
        [self.location.as_ref(), loc]
            .into_iter()
            .flatten()
            .map(|l| l.trim())
            .find(|l| !l.is_empty())
    }

    /// A dynamic BR Code for the location, when the PSP gave a location but no code.
    pub fn built_copy_paste(&self, centavos: u64) -> Option<String> {
        let location = self.location_url()?;
        Some(brcode::dynamic(
            location,
            &money::decimal_string(centavos),
            BUILT_CODE_NAME,
            BUILT_CODE_CITY,
        ))
    }

    /// Takes the code (and location) from the same charge read again, where this one lacks them.
    fn fill_from(&mut self, read: Cob) {
        if self.copy_paste().is_none() {
            self.pix_copia_e_cola = read.copy_paste().map(str::to_owned);
        }
        if self.location_url().is_none() {
            self.location = read.location_url().map(str::to_owned);
        }
    }
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct Calendario {
    #[serde(default)]
    pub criacao: Option<String>,
    /// Seconds; a number, or a numeric string at lenient PSPs.
    #[serde(default)]
    pub expiracao: Option<Value>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct Valor {
    pub original: String,
}

#[derive(Clone, Debug, Deserialize)]
pub struct Loc {
    #[serde(default)]
    pub id: Option<Value>,
    #[serde(default)]
    pub location: Option<String>,
}

/// A received Pix, in `CobCompleta.pix[]` and in notifications.
#[derive(Clone, Debug, Deserialize)]
pub struct Pix {
    #[serde(default, rename = "endToEndId")]
    pub end_to_end_id: Option<String>,
    #[serde(default)]
    pub txid: Option<String>,
    pub valor: String,
    pub horario: String,
}

impl Pix {
    pub fn payment(&self) -> Result<Payment, String> {
        Ok(Payment {
            end_to_end_id: self.end_to_end_id.clone().filter(|e| !e.is_empty()),
            amount: money::parse_decimal(&self.valor).map_err(|e| format!("pix.valor: {e}"))?,
            paid_at: self.horario.clone(),
        })
    }
}

fn cob_path(txid: &str) -> String {
    format!("/cob/{}", percent_encode(txid))
}

fn resolve(ctx: &Context, source: Source) -> Result<Option<String>, Error> {
    Ok(match source {
        Source::Fixed(value) => Some(value.to_owned()),
        Source::Field(name) => Some(ctx.field(name)?.to_owned()),
        Source::OptionalField(name) => ctx.optional_field(name).map(str::to_owned),
        Source::RequestId => Some(ctx.request_id.clone()),
    })
}

fn lenient_u64(value: &Value) -> Option<u64> {
    match value {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
