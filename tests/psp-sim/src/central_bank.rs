//! The central-bank Pix API (`bacen/pix-api`), shared by the bank PSPs and parameterised by
//! [`Params`]: OAuth2 client-credentials token endpoint, `cob` create/query/cancel, `loc` QR
//! image, webhook registration, and the `/pix` notification sent when a charge is paid.
//!
//! A PSP module states only what differs (paths, token request shape, error body shape,
//! success status, names); the validation of `CobSolicitada` and the charge state machine live
//! here once.
//!
//! Each PSP runs two [`Host`]s, homologation and production, apart as at the real PSPs: own
//! listeners, account, tokens, charges and webhooks (see [`Side`]). A homologation that is
//! another kind of host (Itaú's portal sandbox: other paths, no mTLS) is stated by
//! [`Sandbox`].
//!
//! Account flags (`POST /_sim/config {"flags":{…}}`) give the variants real PSPs answer:
//! `pix_key_inactive`; `create_without_pix_copia_e_cola` (the create answer leaves the code
//! out, a later `GET` has it) and `without_pix_copia_e_cola` (no answer has it, only the
//! location: `pixCopiaECola` is optional in the standard); `texto_imagem_qrcode` (the code is
//! named `textoImagemQRcode`, as BB's homologation does); `invalid_pix_copia_e_cola` (the code
//! is sent with a wrong CRC, a PSP's corrupt answer); `single_object_notifications` (each
//! Pix is notified as a bare object, as Inter may).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, patch, post, put};
use base64::Engine;
use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use time::OffsetDateTime;

use crate::server::{ConnKill, PeerCert};
use crate::{
    ChargeSelector, Common, ControlError, EndpointSpec, Notification, Payment, Psp, RequestId,
    random_alnum, random_hex, rfc3339,
};

/// How the token endpoint wants its request; anything else is refused the way the PSP does.
#[derive(Clone, Copy, Debug)]
pub struct TokenRequest {
    pub body: TokenBody,
    pub client_auth: ClientAuth,
    /// Where `grant_type=client_credentials` goes.
    pub grant_type_in: GrantTypeIn,
    /// `scope` must be in the body.
    pub scope_required: bool,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TokenBody {
    /// `application/json`.
    Json,
    /// `application/x-www-form-urlencoded`.
    Form,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ClientAuth {
    /// `Authorization: Basic id:secret`; credentials in the body alone are refused.
    Basic,
    /// `client_id` and `client_secret` in the body; a Basic header is refused.
    Body,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GrantTypeIn {
    Body,
    /// The token URL's query (Santander's `?grant_type=client_credentials`).
    Query,
}

/// A key every API call must carry besides the token (BB's app key, Itaú's API key).
#[derive(Clone, Copy, Debug)]
pub struct ApiKey {
    pub carrier: KeyCarrier,
    pub value: KeyValue,
}

#[derive(Clone, Copy, Debug)]
pub enum KeyCarrier {
    Query(&'static str),
    Header(&'static str),
}

#[derive(Clone, Copy, Debug)]
pub enum KeyValue {
    /// The account's client id (Itaú's `x-itau-apikey`).
    ClientId,
    /// A separate developer application key, in the credential field `CredentialFields::app_key`.
    AppKey,
}

/// A homologation unlike production (Itaú's sandbox, hosted by its developer portal).
#[derive(Clone, Copy, Debug)]
pub struct Sandbox {
    pub api_prefix: &'static str,
    /// The token route, on the API's own listener.
    pub token_path: &'static str,
    /// Whether the listener asks for a client certificate (and binds tokens to it).
    pub mtls: bool,
    /// Whether `Params::api_key` is checked.
    pub api_key: bool,
}

/// The body of a `/pix` notification.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum WebhookShape {
    /// `{"pix":[…]}`, the standard.
    Object,
    /// `[…]` (Inter).
    BareArray,
}

/// What differs between the central-bank PSPs.
pub struct Params {
    pub id: &'static str,
    /// 8-digit ISPB of the PSP, the start of every endToEndId it issues.
    pub ispb: &'static str,
    /// Prefix of the API paths, version included: `/v2` (Efí), `/pix/v2`, `/api/v1`...
    pub api_prefix: &'static str,
    /// Prefix of `PATCH /cob/{txid}` when it differs from `api_prefix` (Santander revises under
    /// `/api/v2`); the revision under `api_prefix` then does not exist (404).
    pub revise_prefix: Option<&'static str>,
    /// How homologation differs from production, when it is another kind of host; `None` when
    /// both environments speak alike.
    pub sandbox: Option<Sandbox>,
    /// The token route's listener: `None` on the API's own, `Some(name)` on a separate one
    /// (BB's and Itaú's token hosts), published under that endpoint name.
    pub token_listener: Option<&'static str>,
    pub token_path: &'static str,
    pub token_request: TokenRequest,
    /// `error_description` (or the PSP's message) for a wrong client id or secret.
    pub invalid_client_message: &'static str,
    pub api_key: Option<ApiKey>,
    pub scope: &'static str,
    /// Status of a successful `PUT /cob` (201 by the standard; some banks answer 200).
    pub create_status: StatusCode,
    /// Whether `POST /cob` (txid chosen by the PSP) exists; Santander has only `PUT`.
    pub post_cob: bool,
    /// Status of the answer to a `PUT` with a txid already used.
    pub duplicate_status: StatusCode,
    /// The PSP's spelling of `REMOVIDA_PELO_USUARIO_RECEBEDOR` (Inter: `REMOVIDO_…`).
    pub removed_status: &'static str,
    pub webhook_shape: WebhookShape,
    /// Host and path of `loc` locations, without scheme; `{id}` is replaced by a random id.
    pub location_template: &'static str,
    pub has_loc_qrcode: bool,
    pub client_id_prefix: &'static str,
    pub client_secret_prefix: &'static str,
    pub merchant_name: &'static str,
    pub merchant_city: &'static str,
    /// Credential field names of the test account.
    pub fields: CredentialFields,
    /// The PSP's error body for an API error.
    pub error_body: fn(&ApiError) -> Response,
    /// The token endpoint's error body.
    pub token_error_body: fn(&ApiError) -> Response,
}

pub struct CredentialFields {
    pub client_id: &'static str,
    pub client_secret: &'static str,
    pub pix_key: &'static str,
    pub certificate: CertificateFields,
    /// The developer application key's field, for PSPs with [`KeyValue::AppKey`].
    pub app_key: Option<&'static str>,
}

pub enum CertificateFields {
    /// Certificate and key blocks in one PEM (Efí's converted `.p12`).
    Combined(&'static str),
    /// The `CERTIFICATE` PEM (`.crt`) and the `PRIVATE KEY` PEM (`.key`) apart.
    Separate {
        certificate: &'static str,
        private_key: &'static str,
    },
}

/// An API error, in the terms of the standard; the PSP's `error_body` renders it.
#[derive(Clone, Debug)]
pub struct ApiError {
    pub status: StatusCode,
    /// Short snake-case name (Efí's `nome`, an OAuth `error`).
    pub name: &'static str,
    /// Standard problem type name (`https://pix.bcb.gov.br/api/v2/error/<problem>`).
    pub problem: &'static str,
    /// Human message, in Portuguese as the PSPs write them.
    pub message: String,
    /// Offending property, for `violacoes`.
    pub property: Option<String>,
}

impl ApiError {
    fn new(
        status: StatusCode,
        name: &'static str,
        problem: &'static str,
        message: impl Into<String>,
    ) -> Self {
        ApiError {
            status,
            name,
            problem,
            message: message.into(),
            property: None,
        }
    }

    fn at(mut self, property: &str) -> Self {
        self.property = Some(property.to_string());
        self
    }

    fn invalid(name: &'static str, message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            name,
            "CobOperacaoInvalida",
            message,
        )
    }

    fn json(message: impl Into<String>) -> Self {
        Self::invalid("json_invalido", message)
    }

    fn unauthorized(message: &str) -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "nao_autorizado",
            "AcessoNegado",
            message,
        )
    }

    fn cob_not_found() -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "cobranca_nao_encontrada",
            "NaoEncontrado",
            "Nenhuma cobrança encontrada para o txid informado",
        )
    }

    pub fn generic(status: StatusCode) -> Self {
        if status == StatusCode::SERVICE_UNAVAILABLE {
            Self::new(
                status,
                "servico_indisponivel",
                "ServicoIndisponivel",
                "Serviço temporariamente indisponível",
            )
        } else {
            Self::new(
                status,
                "erro_interno_servidor",
                "ErroInternoDoServidor",
                "Erro interno do servidor",
            )
        }
    }
}

/// An OAuth 2 error (RFC 6749 §5.2): `{"error", "error_description"}`.
pub fn oauth_body(err: &ApiError) -> Response {
    (
        err.status,
        axum::Json(json!({ "error": err.name, "error_description": err.message })),
    )
        .into_response()
}

/// The standard's `title` of each problem type (bacen/pix-api); the `detail` says the rest.
fn problem_title(problem: &str) -> &'static str {
    match problem {
        "CobOperacaoInvalida" => "Cobrança inválida.",
        "WebhookOperacaoInvalida" => "Webhook inválido.",
        "NaoEncontrado" => "Não Encontrado",
        "AcessoNegado" => "Acesso Negado",
        "ServicoIndisponivel" => "Serviço Indisponível",
        _ => "Erro Interno do Servidor",
    }
}

/// RFC 7807 `application/problem+json` as the central-bank API defines it.
pub fn problem_body(err: &ApiError) -> Response {
    let mut body = json!({
        "type": format!("https://pix.bcb.gov.br/api/v2/error/{}", err.problem),
        "title": problem_title(err.problem),
        "status": err.status.as_u16(),
        "detail": err.message,
    });
    if let Some(p) = &err.property {
        body["violacoes"] = json!([{ "razao": err.message, "propriedade": p }]);
    }
    (
        err.status,
        [(http::header::CONTENT_TYPE, "application/problem+json")],
        body.to_string(),
    )
        .into_response()
}

#[derive(Clone)]
struct Account {
    client_id: String,
    client_secret: String,
    pix_key: String,
    identity: crate::tls::Identity,
    app_key: String,
}

struct Token {
    client_id: String,
    expires_at: Instant,
}

#[derive(Clone, Debug, PartialEq)]
enum CobStatus {
    Ativa,
    Concluida,
    RemovidaPeloUsuarioRecebedor,
}

impl CobStatus {
    /// The status as `p`'s PSP spells it.
    fn as_str(&self, p: &Params) -> &'static str {
        match self {
            CobStatus::Ativa => "ATIVA",
            CobStatus::Concluida => "CONCLUIDA",
            CobStatus::RemovidaPeloUsuarioRecebedor => p.removed_status,
        }
    }
}

#[derive(Clone, Debug)]
struct Cob {
    txid: String,
    revisao: u32,
    criacao: OffsetDateTime,
    expiracao: u64,
    loc_id: u64,
    loc_criacao: OffsetDateTime,
    location: String,
    status: CobStatus,
    devedor: Option<Value>,
    original: String,
    centavos: u64,
    chave: String,
    solicitacao_pagador: Option<String>,
    info_adicionais: Option<Value>,
    pix_copia_e_cola: String,
    pix: Vec<Value>,
    /// Set by `/_sim/expire`: the standard has no expired status, the charge stays ATIVA with
    /// its `calendario` in the past, and a payment is refused.
    expired: bool,
}

impl Cob {
    fn to_json(&self, p: &Params) -> Value {
        let mut v = json!({
            "calendario": { "criacao": rfc3339(self.criacao), "expiracao": self.expiracao },
            "txid": self.txid,
            "revisao": self.revisao,
            "loc": {
                "id": self.loc_id,
                "location": self.location,
                "tipoCob": "cob",
                "criacao": rfc3339(self.loc_criacao),
            },
            "location": self.location,
            "status": self.status.as_str(p),
            "valor": { "original": self.original },
            "chave": self.chave,
            "pixCopiaECola": self.pix_copia_e_cola,
        });
        if let Some(d) = &self.devedor {
            v["devedor"] = d.clone();
        }
        if let Some(s) = &self.solicitacao_pagador {
            v["solicitacaoPagador"] = json!(s);
        }
        if let Some(i) = &self.info_adicionais {
            v["infoAdicionais"] = i.clone();
        }
        if !self.pix.is_empty() {
            v["pix"] = json!(self.pix);
        }
        v
    }
}

#[derive(Clone, Debug)]
struct Webhook {
    chave: String,
    url: String,
    criacao: OffsetDateTime,
    headers: BTreeMap<String, String>,
}

#[derive(Default)]
struct Store {
    tokens: HashMap<String, Token>,
    /// In creation order (listings); [`Store::cob`] finds one by txid.
    cobs: Vec<Cob>,
    /// Each txid's place in `cobs`: a load run creates tens of thousands, and a scan per
    /// request made the simulator the slowest part of the run.
    by_txid: HashMap<String, usize>,
    next_loc: u64,
    webhooks: BTreeMap<String, Webhook>,
}

impl Store {
    fn cob(&self, txid: &str) -> Option<&Cob> {
        self.by_txid.get(txid).map(|&i| &self.cobs[i])
    }

    fn cob_mut(&mut self, txid: &str) -> Option<&mut Cob> {
        self.by_txid.get(txid).map(|&i| &mut self.cobs[i])
    }

    fn insert(&mut self, cob: Cob) {
        self.by_txid.insert(cob.txid.clone(), self.cobs.len());
        self.cobs.push(cob);
    }
}

/// Which of a PSP's two environments a host serves. Each has its own hosts, accounts, tokens,
/// charges and webhooks, as at the real PSPs: homologation credentials are refused by
/// production's token endpoint, and a txid of one environment is unknown to the other.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Side {
    Homologation,
    Production,
}

impl Side {
    fn as_str(self) -> &'static str {
        match self {
            Side::Homologation => "homologation",
            Side::Production => "production",
        }
    }
}

/// One central-bank PSP: a homologation host (the test account tests use) and a production
/// host (its own account), sharing the PSP's parameters, faults and request log.
pub struct CentralBank {
    homologation: Arc<Host>,
    production: Arc<Host>,
}

impl CentralBank {
    pub fn new(params: &'static Params, common: Arc<Common>) -> anyhow::Result<Arc<CentralBank>> {
        Ok(Arc::new(CentralBank {
            homologation: Host::new(params, common.clone(), Side::Homologation)?,
            production: Host::new(params, common, Side::Production)?,
        }))
    }

    fn hosts(&self) -> [&Arc<Host>; 2] {
        [&self.homologation, &self.production]
    }

    /// Runs `f` on the host that holds the selected charge.
    fn on_charge<T>(
        &self,
        sel: &ChargeSelector,
        f: impl Fn(&Host) -> Result<T, ControlError>,
    ) -> Result<T, ControlError> {
        match f(&self.homologation) {
            Err(ControlError::NotFound(_)) => f(&self.production),
            other => other,
        }
        .map_err(|err| match err {
            ControlError::NotFound(_) => ControlError::NotFound(format!(
                "no charge with txid {} in either environment",
                sel.psp_id
                    .as_deref()
                    .or(sel.reference.as_deref())
                    .unwrap_or_default()
            )),
            other => other,
        })
    }
}

/// One environment of a central-bank PSP: its account and state.
struct Host {
    params: &'static Params,
    common: Arc<Common>,
    side: Side,
    account: Account,
    store: Mutex<Store>,
}

impl Host {
    fn new(params: &'static Params, common: Arc<Common>, side: Side) -> anyhow::Result<Arc<Host>> {
        let client_id = format!("{}{}", params.client_id_prefix, random_hex(40));
        let identity = common.client_ca.issue_client(&client_id)?;
        let account = Account {
            client_secret: format!("{}{}", params.client_secret_prefix, random_hex(40)),
            pix_key: uuid::Uuid::new_v4().to_string(),
            identity,
            app_key: random_hex(32),
            client_id,
        };
        Ok(Arc::new(Host {
            params,
            common,
            side,
            account,
            store: Mutex::default(),
        }))
    }

    fn find<'a>(store: &'a mut Store, sel: &ChargeSelector) -> Result<&'a mut Cob, ControlError> {
        let txid = sel
            .psp_id
            .as_deref()
            .or(sel.reference.as_deref())
            .ok_or_else(|| ControlError::BadRequest("give `reference` or `psp_id`".into()))?;
        store
            .cob_mut(txid)
            .ok_or_else(|| ControlError::NotFound(format!("no charge with txid {txid}")))
    }

    fn sim_view(&self, cob: &Cob) -> Value {
        json!({
            "environment": self.side.as_str(),
            "reference": cob.txid,
            "psp_id": cob.txid,
            "amount": cob.centavos,
            "status": cob.status.as_str(self.params),
            "expired": cob.expired,
            "psp": cob.to_json(self.params),
        })
    }

    fn fail(&self, err: ApiError) -> Response {
        (self.params.error_body)(&err)
    }

    /// This environment's sandbox differences, if it is such a sandbox.
    fn sandbox(&self) -> Option<Sandbox> {
        self.params
            .sandbox
            .filter(|_| self.side == Side::Homologation)
    }

    fn api_prefix(&self) -> &'static str {
        self.sandbox()
            .map_or(self.params.api_prefix, |s| s.api_prefix)
    }

    fn token_path(&self) -> &'static str {
        self.sandbox()
            .map_or(self.params.token_path, |s| s.token_path)
    }

    /// `None`: the token route is on the API's listener.
    fn token_listener(&self) -> Option<&'static str> {
        match self.sandbox() {
            Some(_) => None,
            None => self.params.token_listener,
        }
    }

    /// Whether this environment's listeners demand the client certificate.
    fn mtls(&self) -> bool {
        self.sandbox().is_none_or(|s| s.mtls)
    }

    fn api_key(&self) -> Option<ApiKey> {
        match self.sandbox() {
            Some(s) if !s.api_key => None,
            _ => self.params.api_key,
        }
    }

    /// A charge as this account answers it: the code left out or renamed by account flags.
    fn cob_json(&self, cob: &Cob, created: bool) -> Value {
        let mut json = cob.to_json(self.params);
        let Value::Object(map) = &mut json else {
            return json;
        };
        let without = self.common.flag("without_pix_copia_e_cola")
            || (created && self.common.flag("create_without_pix_copia_e_cola"));
        let code = map.remove("pixCopiaECola");
        let code = match code {
            Some(Value::String(code)) if self.common.flag("invalid_pix_copia_e_cola") => {
                // Field 63 (the CRC) is the last four characters: make them wrong.
                let kept = &code[..code.len().saturating_sub(4)];
                let crc = if code.ends_with("0000") {
                    "FFFF"
                } else {
                    "0000"
                };
                Some(Value::String(format!("{kept}{crc}")))
            }
            code => code,
        };
        if !without && let Some(code) = code {
            let name = if self.common.flag("texto_imagem_qrcode") {
                "textoImagemQRcode"
            } else {
                "pixCopiaECola"
            };
            map.insert(name.to_string(), code);
        }
        json
    }

    /// Checks the bearer token and that it belongs to the client whose certificate is on the
    /// connection.
    fn authorize(&self, headers: &HeaderMap, peer: &PeerCert) -> Result<(), ApiError> {
        let bearer = headers
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .ok_or_else(|| {
                ApiError::unauthorized(
                    "Token de acesso ausente: envie Authorization: Bearer <token>",
                )
            })?;
        let mut store = self.store.lock();
        let token = store
            .tokens
            .get(bearer.trim())
            .ok_or_else(|| ApiError::unauthorized("Token de acesso inválido"))?;
        if token.expires_at <= Instant::now() {
            store.tokens.remove(bearer.trim());
            return Err(ApiError::unauthorized("Token de acesso expirado"));
        }
        if self.mtls() && peer.common_name.as_deref() != Some(token.client_id.as_str()) {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "acesso_negado",
                "AcessoNegado",
                "O certificado apresentado não pertence à aplicação dona do token",
            ));
        }
        Ok(())
    }
}

fn json_content(headers: &HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("application/json")
        })
}

fn parse_json_object(headers: &HeaderMap, body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    if !json_content(headers) {
        return Err(ApiError::json(
            "O cabeçalho Content-Type deve ser application/json",
        ));
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ApiError::json(
            "O corpo da requisição deve ser um objeto JSON",
        )),
        Err(_) => Err(ApiError::json("O corpo da requisição não é um JSON válido")),
    }
}

fn only_fields(obj: &Map<String, Value>, allowed: &[&str], parent: &str) -> Result<(), ApiError> {
    match obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => {
            let path = if parent.is_empty() {
                k.clone()
            } else {
                format!("{parent}.{k}")
            };
            Err(ApiError::json(format!("Propriedade não permitida: {path}")).at(&path))
        }
        None => Ok(()),
    }
}

fn txid_valid(txid: &str) -> bool {
    (26..=35).contains(&txid.len()) && txid.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// `\d{1,10}\.\d{2}`, greater than zero, as centavos.
fn parse_valor(s: &str) -> Option<u64> {
    let (int, frac) = s.split_once('.')?;
    if int.is_empty() || int.len() > 10 || frac.len() != 2 {
        return None;
    }
    if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let centavos = int.parse::<u64>().ok()? * 100 + frac.parse::<u64>().ok()?;
    (centavos > 0).then_some(centavos)
}

fn format_valor(centavos: u64) -> String {
    format!("{}.{:02}", centavos / 100, centavos % 100)
}

/// CPF: 11 digits with both check digits right (repeated digits are refused, as banks do).
pub fn cpf_valid(s: &str) -> bool {
    let d: Vec<u32> = s.chars().filter_map(|c| c.to_digit(10)).collect();
    if s.len() != 11 || d.len() != 11 || d.iter().all(|&x| x == d[0]) {
        return false;
    }
    let check = |n: usize| {
        let sum: u32 = (0..n).map(|i| d[i] * (n as u32 + 1 - i as u32)).sum();
        (sum * 10 % 11) % 10
    };
    check(9) == d[9] && check(10) == d[10]
}

/// CNPJ: 12 alphanumerics (the 2026 format; digits are the old one) and 2 check digits.
pub fn cnpj_valid(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 14
        || !b[..12]
            .iter()
            .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase())
        || !b[12..].iter().all(u8::is_ascii_digit)
        || b.iter().all(|&c| c == b[0])
    {
        return false;
    }
    let v: Vec<u32> = b.iter().map(|&c| u32::from(c) - 48).collect();
    let check = |n: usize| {
        let weights = [6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2];
        let w = &weights[13 - n..];
        let r = (0..n).map(|i| v[i] * w[i]).sum::<u32>() % 11;
        if r < 2 { 0 } else { 11 - r }
    };
    check(12) == v[12] && check(13) == v[13]
}

/// A validated `CobSolicitada`.
struct CobRequest {
    expiracao: u64,
    devedor: Option<Value>,
    original: String,
    centavos: u64,
    chave: String,
    solicitacao_pagador: Option<String>,
    info_adicionais: Option<Value>,
}

fn parse_cob_request(obj: &Map<String, Value>) -> Result<CobRequest, ApiError> {
    only_fields(
        obj,
        &[
            "calendario",
            "devedor",
            "valor",
            "chave",
            "solicitacaoPagador",
            "infoAdicionais",
        ],
        "",
    )?;

    // The standard makes `calendario` optional with a default of one day.
    let expiracao = match obj.get("calendario") {
        None => 86_400,
        Some(Value::Object(cal)) => {
            only_fields(cal, &["expiracao"], "calendario")?;
            match cal.get("expiracao") {
                None => 86_400,
                Some(v) => v.as_u64().filter(|&n| n > 0 && v.is_u64()).ok_or_else(|| {
                    ApiError::invalid(
                        "calendario_invalido",
                        "Campo calendario.expiracao deve ser um número inteiro maior que zero",
                    )
                    .at("calendario.expiracao")
                })?,
            }
        }
        Some(_) => {
            return Err(ApiError::json("Campo calendario deve ser um objeto").at("calendario"));
        }
    };

    let valor = match obj.get("valor") {
        Some(Value::Object(v)) => v,
        Some(_) => return Err(ApiError::json("Campo valor deve ser um objeto").at("valor")),
        None => return Err(ApiError::json("Campo valor é obrigatório").at("valor")),
    };
    only_fields(valor, &["original", "modalidadeAlteracao"], "valor")?;
    if let Some(m) = valor.get("modalidadeAlteracao")
        && !matches!(m.as_u64(), Some(0 | 1))
    {
        return Err(ApiError::invalid(
            "valor_invalido",
            "Campo valor.modalidadeAlteracao deve ser 0 ou 1",
        )
        .at("valor.modalidadeAlteracao"));
    }
    let original = valor
        .get("original")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            ApiError::invalid(
                "valor_invalido",
                "Campo valor.original é obrigatório e deve ser uma string",
            )
            .at("valor.original")
        })?;
    let centavos = parse_valor(original).ok_or_else(|| {
        ApiError::invalid(
            "valor_invalido",
            "Campo valor.original não respeita o formato \\d{1,10}\\.\\d{2} ou não é maior que zero",
        )
        .at("valor.original")
    })?;

    let chave = match obj.get("chave") {
        Some(Value::String(s)) if !s.is_empty() && s.chars().count() <= 77 => s.clone(),
        Some(_) => {
            return Err(
                ApiError::json("Campo chave deve ser uma string de 1 a 77 caracteres").at("chave"),
            );
        }
        None => return Err(ApiError::json("Campo chave é obrigatório").at("chave")),
    };

    let devedor = match obj.get("devedor") {
        None => None,
        Some(Value::Object(d)) => {
            only_fields(d, &["cpf", "cnpj", "nome"], "devedor")?;
            let bad = |m: &str, p: &str| ApiError::invalid("devedor_invalido", m).at(p);
            match (d.get("cpf"), d.get("cnpj")) {
                (Some(_), Some(_)) => {
                    return Err(bad(
                        "Informe apenas um de devedor.cpf e devedor.cnpj",
                        "devedor",
                    ));
                }
                (None, None) => return Err(bad("Informe devedor.cpf ou devedor.cnpj", "devedor")),
                (Some(cpf), None) => {
                    if !cpf.as_str().is_some_and(cpf_valid) {
                        return Err(bad("Campo devedor.cpf inválido", "devedor.cpf"));
                    }
                }
                (None, Some(cnpj)) => {
                    if !cnpj.as_str().is_some_and(cnpj_valid) {
                        return Err(bad("Campo devedor.cnpj inválido", "devedor.cnpj"));
                    }
                }
            }
            match d.get("nome") {
                Some(Value::String(n)) if !n.trim().is_empty() && n.chars().count() <= 200 => {}
                _ => {
                    return Err(bad(
                        "Campo devedor.nome é obrigatório quando devedor é informado (até 200 caracteres)",
                        "devedor.nome",
                    ));
                }
            }
            Some(Value::Object(d.clone()))
        }
        Some(_) => return Err(ApiError::json("Campo devedor deve ser um objeto").at("devedor")),
    };

    let solicitacao_pagador = match obj.get("solicitacaoPagador") {
        None => None,
        Some(Value::String(s)) if s.chars().count() <= 140 => Some(s.clone()),
        Some(_) => {
            return Err(ApiError::json(
                "Campo solicitacaoPagador deve ser uma string de até 140 caracteres",
            )
            .at("solicitacaoPagador"));
        }
    };

    let info_adicionais = match obj.get("infoAdicionais") {
        None => None,
        Some(Value::Array(items))
            if items.len() <= 50
                && items.iter().all(|i| {
                    i.as_object().is_some_and(|o| {
                        o.len() == 2
                            && o.get("nome")
                                .and_then(Value::as_str)
                                .is_some_and(|s| s.chars().count() <= 50)
                            && o.get("valor")
                                .and_then(Value::as_str)
                                .is_some_and(|s| s.chars().count() <= 200)
                    })
                }) =>
        {
            Some(Value::Array(items.clone()))
        }
        Some(_) => {
            return Err(
                ApiError::json("Campo infoAdicionais deve ser uma lista de {nome, valor}")
                    .at("infoAdicionais"),
            );
        }
    };

    Ok(CobRequest {
        expiracao,
        devedor,
        original: original.to_string(),
        centavos,
        chave,
        solicitacao_pagador,
        info_adicionais,
    })
}

/// 32 characters: `E`, the ISPB, `yyyyMMddHHmm`, 11 alphanumerics.
fn end_to_end_id(ispb: &str) -> String {
    let now = OffsetDateTime::now_utc();
    format!(
        "E{ispb}{:04}{:02}{:02}{:02}{:02}{}",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        random_alnum(11)
    )
}

// ---- HTTP handlers ----

type Cb = State<Arc<Host>>;

async fn token(
    State(cb): Cb,
    axum::Extension(peer): axum::Extension<PeerCert>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let p = cb.params;
    let oauth_err = |status, name, message: &str| {
        (p.token_error_body)(&ApiError::new(status, name, "AcessoNegado", message))
    };
    let t = p.token_request;
    let content_type = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    // The body, as flat string fields, only in the encoding this PSP reads.
    let fields: Option<HashMap<String, String>> = match t.body {
        TokenBody::Json if content_type.starts_with("application/json") => {
            serde_json::from_slice::<Map<String, Value>>(&body)
                .ok()
                .map(|m| {
                    m.into_iter()
                        .filter_map(|(k, v)| Some((k, v.as_str()?.to_string())))
                        .collect()
                })
        }
        TokenBody::Form if content_type.starts_with("application/x-www-form-urlencoded") => {
            serde_urlencoded::from_bytes(&body).ok()
        }
        _ => None,
    };
    let Some(fields) = fields else {
        return oauth_err(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            match t.body {
                TokenBody::Json => {
                    "O corpo da requisição deve ser JSON: {\"grant_type\": \"client_credentials\"}"
                }
                TokenBody::Form => {
                    "O corpo da requisição deve ser application/x-www-form-urlencoded"
                }
            },
        );
    };
    let query: HashMap<String, String> =
        serde_urlencoded::from_str(uri.query().unwrap_or_default()).unwrap_or_default();
    let grant = match t.grant_type_in {
        GrantTypeIn::Body => fields.get("grant_type"),
        GrantTypeIn::Query => query.get("grant_type"),
    };
    match grant.map(String::as_str) {
        Some("client_credentials") => {}
        Some(_) => {
            return oauth_err(
                StatusCode::BAD_REQUEST,
                "unsupported_grant_type",
                "grant_type não suportado: use client_credentials",
            );
        }
        None => {
            return oauth_err(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                match t.grant_type_in {
                    GrantTypeIn::Body => "Campo grant_type é obrigatório",
                    GrantTypeIn::Query => "Parâmetro grant_type é obrigatório na URL",
                },
            );
        }
    }
    if t.scope_required && fields.get("scope").is_none_or(|s| s.trim().is_empty()) {
        return oauth_err(
            StatusCode::BAD_REQUEST,
            "invalid_scope",
            "Campo scope é obrigatório",
        );
    }
    let basic = headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .map(|b| {
            base64::engine::general_purpose::STANDARD
                .decode(b.trim())
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .unwrap_or_default()
        });
    let presented = match t.client_auth {
        ClientAuth::Basic => basic.as_deref().and_then(|b| b.split_once(':')),
        // A Basic header where the credentials belong in the body is refused, not ignored.
        ClientAuth::Body if basic.is_some() => {
            return oauth_err(
                StatusCode::UNAUTHORIZED,
                "invalid_client",
                "Autenticação do cliente não suportada: envie client_id e client_secret no corpo",
            );
        }
        ClientAuth::Body => fields
            .get("client_id")
            .zip(fields.get("client_secret"))
            .map(|(id, secret)| (id.as_str(), secret.as_str())),
    };
    let ok = presented.is_some_and(|(id, secret)| {
        id == cb.account.client_id && secret == cb.account.client_secret
    });
    if !ok {
        return oauth_err(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            p.invalid_client_message,
        );
    }
    if cb.mtls() && peer.common_name.as_deref() != Some(cb.account.client_id.as_str()) {
        return oauth_err(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            "Certificado não corresponde às credenciais da aplicação",
        );
    }
    let ttl = cb.common.config.lock().token_ttl_secs;
    let access_token = random_alnum(48);
    cb.store.lock().tokens.insert(
        access_token.clone(),
        Token {
            client_id: cb.account.client_id.clone(),
            expires_at: Instant::now() + Duration::from_secs(ttl),
        },
    );
    axum::Json(json!({
        "access_token": access_token,
        "token_type": "Bearer",
        "expires_in": ttl,
        "scope": p.scope,
    }))
    .into_response()
}

async fn put_cob(
    State(cb): Cb,
    axum::Extension(peer): axum::Extension<PeerCert>,
    axum::Extension(kill): axum::Extension<ConnKill>,
    axum::Extension(request_id): axum::Extension<RequestId>,
    Path(txid): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    create_cob(cb, peer, kill, request_id, txid, headers, body).await
}

/// `POST /cob`: the standard's create without a txid; the PSP picks one (35 alphanumerics).
async fn post_cob(
    State(cb): Cb,
    axum::Extension(peer): axum::Extension<PeerCert>,
    axum::Extension(kill): axum::Extension<ConnKill>,
    axum::Extension(request_id): axum::Extension<RequestId>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    create_cob(cb, peer, kill, request_id, random_alnum(35), headers, body).await
}

async fn create_cob(
    cb: Arc<Host>,
    peer: PeerCert,
    kill: ConnKill,
    request_id: RequestId,
    txid: String,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let result = (|| {
        cb.authorize(&headers, &peer)?;
        if !txid_valid(&txid) {
            return Err(ApiError::invalid(
                "txid_invalido",
                "O txid deve ter de 26 a 35 caracteres alfanuméricos",
            )
            .at("txid"));
        }
        let request = parse_cob_request(&parse_json_object(&headers, &body)?)?;
        if let Some((name, message)) = key_refusal(&cb, &request.chave) {
            return Err(ApiError::invalid(name, message).at("chave"));
        }
        let mut store = cb.store.lock();
        if store.cob(&txid).is_some() {
            return Err(ApiError::new(
                cb.params.duplicate_status,
                "txid_duplicado",
                "CobOperacaoInvalida",
                "Campo txid informado já foi utilizado em outra cobrança",
            )
            .at("txid"));
        }
        store.next_loc += 1;
        let now = OffsetDateTime::now_utc();
        let location = cb
            .params
            .location_template
            .replace("{id}", &uuid::Uuid::new_v4().simple().to_string());
        let pix_copia_e_cola = crate::brcode::Dynamic {
            location: &location,
            amount: &request.original,
            merchant_name: cb.params.merchant_name,
            merchant_city: cb.params.merchant_city,
        }
        .encode();
        let cob = Cob {
            txid: txid.clone(),
            revisao: 0,
            criacao: now,
            expiracao: request.expiracao,
            loc_id: store.next_loc,
            loc_criacao: now,
            location,
            status: CobStatus::Ativa,
            devedor: request.devedor,
            original: request.original,
            centavos: request.centavos,
            chave: request.chave,
            solicitacao_pagador: request.solicitacao_pagador,
            info_adicionais: request.info_adicionais,
            pix_copia_e_cola,
            pix: Vec::new(),
            expired: false,
        };
        let json = cb.cob_json(&cob, true);
        store.insert(cob);
        Ok(json)
    })();
    match result {
        Ok(json) => {
            if cb.common.faults.lock().take_drop_after_create() {
                cb.common.mark_request(request_id, "dropped_after_create");
                kill.kill();
                // The connection is closing; never answer.
                std::future::pending::<()>().await;
            }
            (cb.params.create_status, axum::Json(json)).into_response()
        }
        Err(err) => cb.fail(err),
    }
}

async fn get_cob(
    State(cb): Cb,
    axum::Extension(peer): axum::Extension<PeerCert>,
    Path(txid): Path<String>,
    headers: HeaderMap,
) -> Response {
    if let Err(err) = cb.authorize(&headers, &peer) {
        return cb.fail(err);
    }
    let store = cb.store.lock();
    match store.cob(&txid) {
        Some(cob) => axum::Json(cb.cob_json(cob, false)).into_response(),
        None => cb.fail(ApiError::cob_not_found()),
    }
}

async fn patch_cob(
    State(cb): Cb,
    axum::Extension(peer): axum::Extension<PeerCert>,
    Path(txid): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let result = (|| {
        cb.authorize(&headers, &peer)?;
        let obj = parse_json_object(&headers, &body)?;
        // Only the removal revision is simulated.
        only_fields(&obj, &["status"], "")?;
        // The standard's spelling, or the PSP's own (Inter's `REMOVIDO_…`).
        let status = obj.get("status").and_then(Value::as_str);
        if !status.is_some_and(|s| {
            s == "REMOVIDA_PELO_USUARIO_RECEBEDOR" || s == cb.params.removed_status
        }) {
            return Err(ApiError::invalid(
                "status_invalido",
                format!("Campo status só aceita {}", cb.params.removed_status),
            )
            .at("status"));
        }
        let mut store = cb.store.lock();
        let cob = store.cob_mut(&txid).ok_or_else(ApiError::cob_not_found)?;
        if cob.status != CobStatus::Ativa {
            return Err(ApiError::invalid(
                "cobranca_nao_ativa",
                format!(
                    "A cobrança não pode ser alterada pois está com status {}",
                    cob.status.as_str(cb.params)
                ),
            ));
        }
        cob.status = CobStatus::RemovidaPeloUsuarioRecebedor;
        cob.revisao += 1;
        Ok(cb.cob_json(cob, false))
    })();
    match result {
        Ok(json) => axum::Json(json).into_response(),
        Err(err) => cb.fail(err),
    }
}

async fn loc_qrcode(
    State(cb): Cb,
    axum::Extension(peer): axum::Extension<PeerCert>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    if let Err(err) = cb.authorize(&headers, &peer) {
        return cb.fail(err);
    }
    let code = {
        let store = cb.store.lock();
        let id: Option<u64> = id.parse().ok();
        store
            .cobs
            .iter()
            .find(|c| Some(c.loc_id) == id)
            .map(|c| c.pix_copia_e_cola.clone())
    };
    let Some(code) = code else {
        return cb.fail(ApiError::new(
            StatusCode::NOT_FOUND,
            "location_nao_encontrada",
            "NaoEncontrado",
            "Location não encontrada para o id informado",
        ));
    };
    match crate::qr::png(&code) {
        Ok(png) => axum::Json(json!({
            "qrcode": code,
            "imagemQrcode": format!("data:image/png;base64,{}", base64::engine::general_purpose::STANDARD.encode(png)),
        }))
        .into_response(),
        Err(err) => {
            tracing::error!(%err, "QR rendering failed");
            cb.fail(ApiError::generic(StatusCode::INTERNAL_SERVER_ERROR))
        }
    }
}

/// Why the PSP refuses `chave` as this account's receiving key, in its words: not the account's
/// key, or the account's key made inactive (account flag `pix_key_inactive`).
fn key_refusal(cb: &Host, chave: &str) -> Option<(&'static str, &'static str)> {
    if chave != cb.account.pix_key {
        Some((
            "chave_invalida",
            "A chave Pix informada não pertence a esta conta",
        ))
    } else if cb.common.flag("pix_key_inactive") {
        Some((
            "chave_inativa",
            "A chave Pix informada está inativa: reative-a ou cadastre outra chave",
        ))
    } else {
        None
    }
}

fn check_key(cb: &Host, chave: &str) -> Result<(), ApiError> {
    match key_refusal(cb, chave) {
        Some((name, message)) => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            name,
            "WebhookOperacaoInvalida",
            message,
        )
        .at("chave")),
        None => Ok(()),
    }
}

fn webhook_json(w: &Webhook) -> Value {
    json!({ "webhookUrl": w.url, "chave": w.chave, "criacao": rfc3339(w.criacao) })
}

async fn put_webhook(
    State(cb): Cb,
    axum::Extension(peer): axum::Extension<PeerCert>,
    Path(chave): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let result = (|| {
        cb.authorize(&headers, &peer)?;
        check_key(&cb, &chave)?;
        let obj = parse_json_object(&headers, &body)?;
        only_fields(&obj, &["webhookUrl"], "")?;
        let url = obj
            .get("webhookUrl")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let parsed = reqwest::Url::parse(url)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
        if parsed.is_none() {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "webhook_invalido",
                "WebhookOperacaoInvalida",
                "Campo webhookUrl deve ser uma URL http(s) absoluta",
            )
            .at("webhookUrl"));
        }
        // Kept so tests can check what the adapter sent (e.g. x-skip-mtls-checking).
        let seen = headers
            .iter()
            .filter(|(name, _)| *name != http::header::AUTHORIZATION)
            .map(|(name, value)| {
                (
                    name.to_string(),
                    value.to_str().unwrap_or_default().to_string(),
                )
            })
            .collect();
        let webhook = Webhook {
            chave: chave.clone(),
            url: url.to_string(),
            criacao: OffsetDateTime::now_utc(),
            headers: seen,
        };
        let json = webhook_json(&webhook);
        cb.store.lock().webhooks.insert(chave, webhook);
        Ok(json)
    })();
    match result {
        Ok(json) => axum::Json(json).into_response(),
        Err(err) => cb.fail(err),
    }
}

async fn get_webhook(
    State(cb): Cb,
    axum::Extension(peer): axum::Extension<PeerCert>,
    Path(chave): Path<String>,
    headers: HeaderMap,
) -> Response {
    let result = cb
        .authorize(&headers, &peer)
        .and_then(|()| check_key(&cb, &chave))
        .and_then(|()| {
            cb.store
                .lock()
                .webhooks
                .get(&chave)
                .map(webhook_json)
                .ok_or_else(|| {
                    ApiError::new(
                        StatusCode::NOT_FOUND,
                        "webhook_nao_encontrado",
                        "NaoEncontrado",
                        "Webhook não encontrado para a chave informada",
                    )
                })
        });
    match result {
        Ok(json) => axum::Json(json).into_response(),
        Err(err) => cb.fail(err),
    }
}

async fn delete_webhook(
    State(cb): Cb,
    axum::Extension(peer): axum::Extension<PeerCert>,
    Path(chave): Path<String>,
    headers: HeaderMap,
) -> Response {
    let result = cb
        .authorize(&headers, &peer)
        .and_then(|()| check_key(&cb, &chave))
        .and_then(|()| {
            cb.store
                .lock()
                .webhooks
                .remove(&chave)
                .map(|_| ())
                .ok_or_else(|| {
                    ApiError::new(
                        StatusCode::NOT_FOUND,
                        "webhook_nao_encontrado",
                        "NaoEncontrado",
                        "Webhook não encontrado para a chave informada",
                    )
                })
        });
    match result {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(err) => cb.fail(err),
    }
}

/// Refuses an API call without the PSP's extra key (BB's `gw-dev-app-key` query parameter,
/// Itaú's `x-itau-apikey` header), or with a wrong one.
async fn require_api_key(
    State(cb): Cb,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let Some(key) = cb.api_key() else {
        return next.run(req).await;
    };
    let (name, presented) = match key.carrier {
        KeyCarrier::Query(name) => {
            let query: HashMap<String, String> =
                serde_urlencoded::from_str(req.uri().query().unwrap_or_default())
                    .unwrap_or_default();
            (name, query.get(name).cloned())
        }
        KeyCarrier::Header(name) => (
            name,
            req.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
        ),
    };
    let expected = match key.value {
        KeyValue::ClientId => &cb.account.client_id,
        KeyValue::AppKey => &cb.account.app_key,
    };
    match presented {
        Some(value) if value == *expected => next.run(req).await,
        Some(_) => cb.fail(ApiError::new(
            StatusCode::FORBIDDEN,
            "chave_aplicacao_invalida",
            "AcessoNegado",
            format!("{name} inválido para esta aplicação"),
        )),
        None => cb.fail(ApiError::new(
            StatusCode::FORBIDDEN,
            "chave_aplicacao_ausente",
            "AcessoNegado",
            format!("{name} não informado: toda chamada deve enviá-lo"),
        )),
    }
}

async fn not_found(State(cb): Cb) -> Response {
    cb.fail(ApiError::new(
        StatusCode::NOT_FOUND,
        "rota_nao_encontrada",
        "NaoEncontrado",
        "Rota não encontrada",
    ))
}

/// What the control API and the listeners need of one environment.
impl Host {
    fn credentials(&self) -> BTreeMap<String, String> {
        let f = &self.params.fields;
        let a = &self.account;
        let mut fields = BTreeMap::from([
            (f.client_id.to_string(), a.client_id.clone()),
            (f.client_secret.to_string(), a.client_secret.clone()),
            (f.pix_key.to_string(), a.pix_key.clone()),
        ]);
        match f.certificate {
            // A sandbox without mTLS issues no certificate.
            _ if !self.mtls() => {}
            CertificateFields::Combined(name) => {
                fields.insert(name.to_string(), a.identity.combined_pem());
            }
            CertificateFields::Separate {
                certificate,
                private_key,
            } => {
                fields.insert(certificate.to_string(), a.identity.cert_pem.clone());
                fields.insert(private_key.to_string(), a.identity.key_pem.clone());
            }
        }
        if let Some(name) = f.app_key {
            fields.insert(name.to_string(), a.app_key.clone());
        }
        fields
    }

    fn endpoints(self: Arc<Self>) -> Vec<EndpointSpec> {
        let p = self.params;
        let prefix = self.api_prefix();
        let api = |path: &str| format!("{prefix}{path}");
        let cob_route = match p.revise_prefix {
            None => put(put_cob).get(get_cob).patch(patch_cob),
            // The revision lives elsewhere: here it is an unknown route, in the PSP's words.
            Some(_) => put(put_cob).get(get_cob).fallback(not_found),
        };
        let mut cob = Router::new().route(&api("/cob/{txid}"), cob_route);
        if let Some(revise) = p.revise_prefix {
            cob = cob.route(&format!("{revise}/cob/{{txid}}"), patch(patch_cob));
        }
        cob = cob.route(
            &api("/webhook/{chave}"),
            put(put_webhook).get(get_webhook).delete(delete_webhook),
        );
        if p.post_cob {
            cob = cob.route(&api("/cob"), post(post_cob));
        }
        if p.has_loc_qrcode {
            cob = cob.route(&api("/loc/{id}/qrcode"), get(loc_qrcode));
        }
        // Checked on the PSP's routes only, before the token, as an API gateway does.
        if self.api_key().is_some() {
            cob = cob.route_layer(axum::middleware::from_fn_with_state(
                self.clone(),
                require_api_key,
            ));
        }
        let token_route = Router::new().route(self.token_path(), post(token));
        let mut specs = Vec::new();
        let mtls = self.mtls();
        let api_router = match self.token_listener() {
            None => cob.merge(token_route),
            Some(name) => {
                specs.push(EndpointSpec {
                    name,
                    router: token_route.fallback(not_found).with_state(self.clone()),
                    mtls,
                    live: self.side == Side::Production,
                });
                cob
            }
        };
        specs.insert(
            0,
            EndpointSpec {
                name: "api",
                live: self.side == Side::Production,
                router: api_router.fallback(not_found).with_state(self),
                mtls,
            },
        );
        specs
    }

    fn charges(&self) -> Vec<Value> {
        let store = self.store.lock();
        store.cobs.iter().map(|c| self.sim_view(c)).collect()
    }

    fn webhooks(&self) -> Vec<Value> {
        self.store
            .lock()
            .webhooks
            .values()
            .map(|w| {
                let mut v = webhook_json(w);
                v["headers"] = json!(w.headers);
                v["environment"] = json!(self.side.as_str());
                v
            })
            .collect()
    }

    fn pay(
        &self,
        sel: &ChargeSelector,
        amount: Option<u64>,
        info_pagador: Option<String>,
    ) -> Result<Payment, ControlError> {
        let mut store = self.store.lock();
        let cob = Self::find(&mut store, sel)?;
        if cob.status != CobStatus::Ativa {
            return Err(ControlError::Conflict(format!(
                "charge {} is {}, not ATIVA",
                cob.txid,
                cob.status.as_str(self.params)
            )));
        }
        if cob.expired {
            return Err(ControlError::Conflict(format!(
                "charge {} is expired",
                cob.txid
            )));
        }
        let mut pix = json!({
            "endToEndId": end_to_end_id(self.params.ispb),
            "txid": cob.txid,
            "valor": format_valor(amount.unwrap_or(cob.centavos)),
            "chave": cob.chave,
            "horario": crate::now_rfc3339(),
        });
        if let Some(info) = info_pagador {
            pix["infoPagador"] = json!(info);
        }
        cob.pix.push(pix.clone());
        cob.status = CobStatus::Concluida;
        let charge = self.sim_view(cob);
        let chave = cob.chave.clone();
        // Efí and the standard append "/pix" to the registered URL as a plain string, even when
        // the URL has a query string.
        let single = self.common.flag("single_object_notifications");
        let notifications = store
            .webhooks
            .get(&chave)
            .map(|w| Notification {
                url: format!("{}/pix", w.url),
                headers: Vec::new(),
                body: match self.params.webhook_shape {
                    _ if single => pix.clone(),
                    WebhookShape::Object => json!({ "pix": [pix] }),
                    WebhookShape::BareArray => json!([pix]),
                },
            })
            .into_iter()
            .collect();
        Ok(Payment {
            charge,
            notifications,
        })
    }

    fn expire(&self, sel: &ChargeSelector) -> Result<Value, ControlError> {
        let mut store = self.store.lock();
        let cob = Self::find(&mut store, sel)?;
        if cob.status != CobStatus::Ativa {
            return Err(ControlError::Conflict(format!(
                "charge {} is {}, not ATIVA",
                cob.txid,
                cob.status.as_str(self.params)
            )));
        }
        cob.expired = true;
        // Move the creation back so criacao + expiracao is in the past, as for a lapsed cob.
        let expiracao = i64::try_from(cob.expiracao).unwrap_or(i64::MAX / 2);
        cob.criacao =
            OffsetDateTime::now_utc() - time::Duration::seconds(expiracao.saturating_add(1));
        Ok(self.sim_view(cob))
    }

    fn reset(&self) {
        *self.store.lock() = Store::default();
    }
}

impl Psp for CentralBank {
    fn credentials(&self) -> BTreeMap<String, String> {
        self.homologation.credentials()
    }

    fn live_credentials(&self) -> Option<BTreeMap<String, String>> {
        Some(self.production.credentials())
    }

    fn endpoints(self: Arc<Self>) -> Vec<EndpointSpec> {
        let mut specs = self.homologation.clone().endpoints();
        specs.extend(self.production.clone().endpoints());
        specs
    }

    fn generic_error(&self, status: StatusCode) -> Response {
        self.homologation.fail(ApiError::generic(status))
    }

    fn charges(&self) -> Vec<Value> {
        self.hosts().iter().flat_map(|h| h.charges()).collect()
    }

    fn webhooks(&self) -> Vec<Value> {
        self.hosts().iter().flat_map(|h| h.webhooks()).collect()
    }

    fn pay(
        &self,
        sel: &ChargeSelector,
        amount: Option<u64>,
        info_pagador: Option<String>,
    ) -> Result<Payment, ControlError> {
        self.on_charge(sel, |h| h.pay(sel, amount, info_pagador.clone()))
    }

    fn expire(&self, sel: &ChargeSelector) -> Result<Value, ControlError> {
        self.on_charge(sel, |h| h.expire(sel))
    }

    fn reset(&self) {
        for h in self.hosts() {
            h.reset();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valor_format() {
        assert_eq!(parse_valor("10.00"), Some(1000));
        assert_eq!(parse_valor("0.01"), Some(1));
        assert_eq!(parse_valor("1234567890.99"), Some(123_456_789_099));
        for bad in [
            "0.00",
            "10",
            "10.0",
            "10.000",
            ".50",
            "12345678901.00",
            "-1.00",
            "1,00",
            "1e2.00",
        ] {
            assert_eq!(parse_valor(bad), None, "{bad}");
        }
        assert_eq!(format_valor(1050), "10.50");
    }

    #[test]
    fn documents() {
        assert!(cpf_valid("12345678909"));
        assert!(!cpf_valid("12345678900"));
        assert!(!cpf_valid("11111111111"));
        assert!(cnpj_valid("11222333000181"));
        assert!(!cnpj_valid("11222333000182"));
        // Alphanumeric CNPJ example published by the Receita Federal.
        assert!(cnpj_valid("12ABC34501DE35"));
    }

    #[test]
    fn end_to_end_id_shape() {
        let id = end_to_end_id("09089356");
        assert_eq!(id.len(), 32);
        assert!(id.starts_with("E09089356"));
        assert!(id.bytes().all(|b| b.is_ascii_alphanumeric()));
    }

    #[test]
    fn txid_rule() {
        assert!(txid_valid(&"a".repeat(26)));
        assert!(txid_valid(&"Z9".repeat(17)));
        assert!(!txid_valid(&"a".repeat(25)));
        assert!(!txid_valid(&"a".repeat(36)));
        assert!(!txid_valid(&format!("{}-", "a".repeat(30))));
    }
}
