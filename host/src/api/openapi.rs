//! `GET /v1/openapi.json`: the OpenAPI 3.1 document, generated from the handlers' annotations,
//! the request types the handlers read and the response types they write.
//!
//! [`document`] completes what utoipa derives with the rules every route shares, so no
//! annotation can forget them: a route behind an API key answers 401 and 429, one with a body
//! 400 and 413, one with query parameters 400, one with an `{id}` 404. It also adds the
//! OpenAPI `links` from each created object to the routes that take its id, which is how
//! clients (and schemathesis' stateful phase) walk from a create to its `{id}` routes.
//!
//! The tests at the bottom hold the document to the router: every route is documented, every
//! list is documented as the `{object: "list", data}` it is, every JSON body refuses unknown
//! fields as the handlers do. `cargo xtask api-contract` runs schemathesis against a demo.

use std::sync::Arc;

use std::sync::LazyLock;

use axum::Router;
use axum::response::IntoResponse;
use axum::routing::get;
use serde_json::{Value, json};
use utoipa::OpenApi;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};

use super::{
    adapters, charges, credentials, error, events, evidence, health, payment_links, statement,
    usage, webhook_endpoints,
};
use crate::app::App;
use crate::charges::object::{ChargeObject, ChargePaymentLink, ChargeStatus, PayerSchema, PixData};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "pixgw",
        description = "One API for Pix charges across Brazilian PSPs. Amounts are integer centavos; \
            times are RFC 3339 UTC. Authenticate with `Authorization: Bearer pgw_test_…` (or \
            `pgw_live_…`): the key's environment decides which credentials and charges you see. \
            Every response carries `x-request-id`; every error is `{\"error\": {type, code, \
            message, param?, provider?, psp_message?, psp_code?, hint?, request_id}}`; a plan's \
            limit answers 403 `plan_limit_reached` (see `GET /v1/usage`).\n\n\
            **400 or 422.** 400 `invalid_request_error` means the request does not have the shape \
            this document gives it (a wrong type, a missing required field, a string over its \
            `maxLength` or off its `pattern`, an unknown field): fix the request. 422 \
            `invalid_request_error` means the request has that shape and a rule beyond the \
            document refuses it: CPF/CNPJ check digits, a provider not installed or not \
            connected, an adapter's own credential fields, a webhook URL that does not resolve \
            or is private, rules across fields (a payment link's `amount` with `min_amount`), an \
            `Idempotency-Key` reused with another body. Both name the parameter at fault in `param` \
            when there is one.\n\n\
            **Concurrent changes.** Credentials and webhook endpoints carry `version` and answer \
            with `ETag: \"<version>\"`; send it back as `If-Match` (or `version`) with a PATCH, \
            and a change someone made meanwhile answers 409 `conflict` instead of being undone."
    ),
    paths(
        charges::create, charges::read, charges::list, charges::cancel, charges::stream,
        evidence::attach, evidence::list, evidence::photo,
        webhook_endpoints::create, webhook_endpoints::list, webhook_endpoints::read,
        webhook_endpoints::update, webhook_endpoints::remove, webhook_endpoints::rotate,
        events::list, events::read, events::redeliver,
        credentials::create, credentials::list, credentials::read, credentials::update,
        credentials::remove, payment_links::create, payment_links::list, payment_links::read,
        payment_links::update, payment_links::deactivate, statement::list, statement::csv,
        usage::read, adapters::list, health::live, health::ready, health::metrics, serve,
    ),
    components(schemas(
        ChargeObject, ChargeStatus, charges::ChargeList, charges::CreateChargeRequest,
        charges::CreateChargePayer, PayerSchema, PixData, ChargePaymentLink,
        payment_links::PaymentLinkObject, payment_links::PaymentLinkList,
        payment_links::CreatePaymentLinkRequest, payment_links::UpdatePaymentLinkRequest,
        credentials::CredentialObject, credentials::CredentialList,
        credentials::CreateCredentialRequest, credentials::UpdateCredentialRequest,
        webhook_endpoints::EndpointObject, webhook_endpoints::EndpointList,
        webhook_endpoints::CreateEndpointRequest, webhook_endpoints::UpdateEndpointRequest,
        webhook_endpoints::RotateSecretRequest, webhook_endpoints::EventType,
        webhook_endpoints::EndpointStatus, Deleted,
        credentials::WebhookInfo, credentials::Verification, error::ErrorResponse,
        error::ErrorBody, error::ErrorType, statement::StatementList,
        statement::StatementLineObject, statement::StatementTotals, statement::Operator,
        statement::OperatorType, statement::LinkRef,
        evidence::EvidenceObject, evidence::EvidenceList, evidence::AttachEvidenceRequest,
        evidence::PhotoInfo, evidence::LocationInfo, evidence::Uploader,
        usage::UsageObject, usage::PlanObject, usage::UsageCounts, usage::UsageItem,
    )),
    modifiers(&ApiKeyAuth),
    tags(
        (name = "charges", description = "Pix charges at the merchant's PSPs"),
        (name = "credentials", description = "The merchant's accounts at PSPs"),
        (name = "payment_links", description = "Public pages (`/p/<slug>`) where anyone pays the merchant by Pix; each payment is a charge that names its link"),
        (name = "statement", description = "Paid charges by payment time, in the merchant's days (America/Sao_Paulo), with totals, and as CSV for Brazilian spreadsheets"),
        (name = "webhooks", description = "Events of the merchant's charges, delivered to its endpoints signed per the Standard Webhooks specification (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256 of id.timestamp.body>`)"),
        (name = "plans", description = "The merchant's plan and its limits. A creation beyond a limit answers 403 `permission_error` with code `plan_limit_reached`, `plan`, `resource`, `limit`, `usage`, `upgrade_to` and a `hint` naming the smallest plan that allows it"),
        (name = "operations", description = "Adapters, health and metrics"),
    )
)]
pub struct ApiDoc;

/// What a delete answers.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub struct Deleted {
    id: String,
    /// The kind of object deleted, e.g. `credential`.
    object: String,
    /// Always `true`.
    deleted: bool,
}

/// Whitespace as Rust's `str::trim` sees it (Unicode `White_Space`), spelled as a JSON Schema
/// character class so every regex dialect reads it alike (`\s` differs between them).
pub const WHITESPACE: &str =
    r"\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000";
/// `char::is_control`: C0, DEL and C1.
pub const CONTROLS: &str = r"\x00-\x1f\x7f-\x9f";
/// [`crate::domain::control_character`]: the controls, line and paragraph separators and the
/// bidirectional embedding, override and isolate controls.
pub const TEXT_CONTROLS: &str = r"\x00-\x1f\x7f-\x9f\u2028-\u202e\u2066-\u2069";

/// A string the API trims: `max` characters at most, not only whitespace, none of `controls`.
/// (`pattern` finds a character that is not whitespace; `not` refuses any of `controls` in a
/// string, and lets `null` through.)
pub fn text(max: usize, controls: &str, nullable: bool) -> utoipa::openapi::Object {
    use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
    let mut refuse = utoipa::openapi::extensions::Extensions::default();
    // `type` inside `not`: a bare `{pattern}` holds for `null`, so `not` would refuse it.
    refuse.insert(
        "not".into(),
        json!({"type": "string", "pattern": format!("[{controls}]")}),
    );
    let kind = if nullable {
        SchemaType::from_iter([Type::String, Type::Null])
    } else {
        SchemaType::new(Type::String)
    };
    ObjectBuilder::new()
        .schema_type(kind)
        .max_length(Some(max))
        .pattern(Some(format!("[^{WHITESPACE}]")))
        .extensions(Some(refuse))
        .build()
}

/// One line of text as [`crate::domain::Line`] reads it, or `null`.
pub fn line(max: usize) -> utoipa::openapi::Object {
    text(max, TEXT_CONTROLS, true)
}

struct ApiKeyAuth;

impl utoipa::Modify for ApiKeyAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("A pixgw API key: pgw_test_… or pgw_live_…"))
                    .build(),
            ),
        );
    }
}

pub fn router() -> Router<Arc<App>> {
    Router::new().route("/v1/openapi.json", get(serve))
}

/// The OpenAPI document.
#[utoipa::path(get, path = "/v1/openapi.json", tag = "operations", operation_id = "get_openapi",
    responses((status = 200, description = "This document (OpenAPI 3.1)", content_type = "application/json", body = Object)))]
pub async fn serve() -> impl IntoResponse {
    static TEXT: LazyLock<String> = LazyLock::new(|| document().to_string());
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        TEXT.as_str(),
    )
}

/// The served document: utoipa's, completed with the shared answers and the links.
pub fn document() -> Value {
    let mut doc = serde_json::to_value(ApiDoc::openapi()).expect("the document serializes");
    add_shared_responses(&mut doc);
    one_line_strings(&mut doc);
    closed_forms(&mut doc);
    add_versions(&mut doc);
    optional_bodies(&mut doc);
    add_links(&mut doc);
    doc
}

const METHODS: [&str; 5] = ["get", "post", "patch", "put", "delete"];

/// Answers every route of a kind gives, documented once in `components.responses` and added to
/// each operation that does not describe them more precisely itself.
fn add_shared_responses(doc: &mut Value) {
    let error = |description: &str| {
        json!({
            "description": description,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}},
        })
    };
    let mut rate_limited = error(
        "Too many requests with this API key (`rate_limited`), or too many failed \
         authentications from this address (`too_many_failed_authentications`): retry after \
         `Retry-After` seconds",
    );
    rate_limited["headers"] = json!({"Retry-After": {
        "description": "Seconds to wait before retrying",
        "schema": {"type": "integer", "minimum": 1},
    }});
    doc["components"]["responses"] = json!({
        "BadRequest": error("The request does not have the documented shape: a parameter is missing or invalid (`param` names it), the body is not a JSON object, or it holds an unknown parameter (`parameter_unknown`)"),
        "Unauthorized": error("No API key, or not a valid one (`api_key_missing`, `api_key_malformed`, `api_key_invalid`)"),
        "NotFound": error("No such object for this API key's merchant and environment (`resource_missing`)"),
        "PayloadTooLarge": error("The body is larger than 64 KiB (`request_too_large`)"),
        "RateLimited": rate_limited,
    });
    let Some(paths) = doc["paths"].as_object_mut() else {
        return;
    };
    for (path, item) in paths {
        for method in METHODS {
            let Some(op) = item.get_mut(method).and_then(Value::as_object_mut) else {
                continue;
            };
            let secured = op
                .get("security")
                .and_then(Value::as_array)
                .is_some_and(|s| !s.is_empty());
            let has_body = op.contains_key("requestBody");
            let has_query = op
                .get("parameters")
                .and_then(Value::as_array)
                .is_some_and(|ps| ps.iter().any(|p| p["in"] == "query" || p["in"] == "header"));
            let mut shared = Vec::new();
            if has_body || has_query {
                shared.push(("400", "BadRequest"));
            }
            if secured {
                shared.push(("401", "Unauthorized"));
                shared.push(("429", "RateLimited"));
            }
            if path.contains('{') {
                shared.push(("404", "NotFound"));
            }
            if has_body {
                shared.push(("413", "PayloadTooLarge"));
            }
            let responses = op
                .entry("responses")
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .expect("responses is an object");
            for (status, name) in shared {
                responses
                    .entry(status)
                    .or_insert_with(|| json!({"$ref": format!("#/components/responses/{name}")}));
            }
        }
    }
}

/// The names of the component schemas a JSON request body uses, its own and those it refers to.
fn json_body_schemas(doc: &Value) -> std::collections::BTreeSet<String> {
    fn refs(value: &Value, found: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if let Some(name) = map
                    .get("$ref")
                    .and_then(Value::as_str)
                    .and_then(|r| r.strip_prefix("#/components/schemas/"))
                {
                    found.push(name.to_owned());
                }
                map.values().for_each(|v| refs(v, found));
            }
            Value::Array(items) => items.iter().for_each(|v| refs(v, found)),
            _ => {}
        }
    }
    let mut todo = Vec::new();
    for item in doc["paths"]
        .as_object()
        .into_iter()
        .flat_map(|p| p.values())
    {
        for method in METHODS {
            refs(
                &item[method]["requestBody"]["content"]["application/json"],
                &mut todo,
            );
        }
    }
    let mut names = std::collections::BTreeSet::new();
    while let Some(name) = todo.pop() {
        if names.insert(name.clone()) {
            refs(&doc["components"]["schemas"][&name], &mut todo);
        }
    }
    names
}

/// Every string a JSON body holds is read by [`super::body::JsonObject::string`]: trimmed, not
/// only whitespace, one line (no character of [`TEXT_CONTROLS`]). Said here once for every such
/// property, so no field's annotation can forget it; enums and formats say more already.
fn one_line_strings(doc: &mut Value) {
    for name in json_body_schemas(doc) {
        // `get_mut`: indexing would add `properties: null` to a schema without them.
        let properties = doc["components"]["schemas"]
            .get_mut(&name)
            .and_then(|schema| schema.get_mut("properties"))
            .and_then(Value::as_object_mut);
        for property in properties.into_iter().flat_map(|p| p.values_mut()) {
            let string = match &property["type"] {
                Value::String(t) => t == "string",
                Value::Array(types) => types.iter().any(|t| t == "string"),
                _ => false,
            };
            if !string || property.get("enum").is_some() {
                continue;
            }
            property["not"] = json!({"type": "string", "pattern": format!("[{TEXT_CONTROLS}]")});
            if property.get("pattern").is_none() && property.get("format").is_none() {
                property["pattern"] = json!(format!("[^{WHITESPACE}]"));
            }
        }
    }
}

/// Forms refuse fields they do not know, as JSON bodies do (`read_upload`).
fn closed_forms(doc: &mut Value) {
    let schema = &mut doc["components"]["schemas"]["AttachEvidenceRequest"];
    assert!(schema.is_object(), "the evidence form has a schema");
    schema["additionalProperties"] = json!(false);
}

/// What [`super::concurrency`] reads from `If-Match`, trimmed of spaces and tabs: `*`, or a
/// version (1 or more, at most 18 digits here), quoted as an `ETag` or bare.
const IF_MATCH_PATTERN: &str = r#"^[ \t]*(?:\*|"0*[1-9][0-9]{0,17}"|0*[1-9][0-9]{0,17})[ \t]*$"#;

/// The answers that carry an `ETag` (`"<version>"` of the object they hold): `(path, method,
/// status)`.
const TAGGED: [(&str, &str, &str); 5] = [
    ("/v1/credentials", "post", "201"),
    ("/v1/credentials/{id}", "get", "200"),
    ("/v1/credentials/{id}", "patch", "200"),
    ("/v1/webhook_endpoints/{id}", "get", "200"),
    ("/v1/webhook_endpoints/{id}", "patch", "200"),
];

/// Optimistic concurrency ([`super::concurrency`]): the `ETag` of the answers that carry one,
/// and the shape of every `If-Match` parameter.
fn add_versions(doc: &mut Value) {
    for (path, method, status) in TAGGED {
        let response = &mut doc["paths"][path][method]["responses"][status];
        assert!(response.is_object(), "{method} {path} answers no {status}");
        response["headers"]["ETag"] = json!({
            "description": "The object's `version`, quoted, e.g. `\"3\"`: send it back as \
                `If-Match` with a change",
            "schema": {"type": "string", "pattern": "^\"[1-9][0-9]*\"$"},
        });
    }
    let Some(paths) = doc["paths"].as_object_mut() else {
        return;
    };
    for item in paths.values_mut() {
        for method in METHODS {
            let parameters = item
                .get_mut(method)
                .and_then(|op| op.get_mut("parameters"))
                .and_then(Value::as_array_mut);
            for parameter in parameters.into_iter().flatten() {
                if parameter["in"] == "header" && parameter["name"] == "If-Match" {
                    parameter["schema"] = json!({"type": "string", "pattern": IF_MATCH_PATTERN});
                }
            }
        }
    }
}

/// Bodies whose every field is optional may be left out altogether (the handlers read an empty
/// body as `{}`): updates and the secret rotation.
fn optional_bodies(doc: &mut Value) {
    for (path, method) in [
        ("/v1/credentials/{id}", "patch"),
        ("/v1/webhook_endpoints/{id}", "patch"),
        ("/v1/payment_links/{id}", "patch"),
        ("/v1/webhook_endpoints/{id}/rotate_secret", "post"),
    ] {
        let body = &mut doc["paths"][path][method]["requestBody"];
        assert!(body.is_object(), "{method} {path} has no body");
        body["required"] = json!(false);
    }
}

/// `(path, method, status)` of an answer, and the links from it: name, target operation id and
/// where each of the target's parameters comes from in the answer.
type LinkSource = (&'static str, &'static str, &'static str);
type LinkTarget = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

const LINKS: &[(LinkSource, &[LinkTarget])] = {
    const ID: &[(&str, &str)] = &[("id", "$response.body#/id")];
    const CHARGE: &[LinkTarget] = &[
        ("GetCharge", "get_charge", ID),
        ("CancelCharge", "cancel_charge", ID),
        ("StreamCharge", "stream_charge", ID),
        ("ListEvidence", "list_evidence", ID),
        ("AttachEvidence", "attach_evidence", ID),
    ];
    &[
        (("/v1/charges", "post", "201"), CHARGE),
        (("/v1/charges/{id}", "get", "200"), CHARGE),
        (
            ("/v1/charges/{id}/evidence", "post", "201"),
            &[(
                "GetEvidencePhoto",
                "get_evidence_photo",
                &[
                    ("id", "$response.body#/charge"),
                    ("evidence_id", "$response.body#/id"),
                ],
            )],
        ),
        (
            ("/v1/credentials", "post", "201"),
            &[
                ("GetCredential", "get_credential", ID),
                ("UpdateCredential", "update_credential", ID),
                ("DeleteCredential", "delete_credential", ID),
            ],
        ),
        (
            ("/v1/webhook_endpoints", "post", "201"),
            &[
                ("GetWebhookEndpoint", "get_webhook_endpoint", ID),
                ("UpdateWebhookEndpoint", "update_webhook_endpoint", ID),
                ("RotateWebhookSecret", "rotate_webhook_secret", ID),
                ("DeleteWebhookEndpoint", "delete_webhook_endpoint", ID),
            ],
        ),
        (
            ("/v1/payment_links", "post", "201"),
            &[
                ("GetPaymentLink", "get_payment_link", ID),
                ("UpdatePaymentLink", "update_payment_link", ID),
                ("DeactivatePaymentLink", "deactivate_payment_link", ID),
            ],
        ),
    ]
};

fn add_links(doc: &mut Value) {
    for ((path, method, status), targets) in LINKS {
        let response = &mut doc["paths"][*path][*method]["responses"][*status];
        assert!(
            response.is_object(),
            "links from {method} {path} {status}: no such documented answer"
        );
        for (name, operation_id, parameters) in *targets {
            let parameters: serde_json::Map<String, Value> = parameters
                .iter()
                .map(|(name, from)| ((*name).to_owned(), json!(from)))
                .collect();
            response["links"][*name] = json!({
                "operationId": operation_id,
                "parameters": parameters,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// `(method, path)` of every route the API modules declare with `.route("…", …)`, read from
    /// their source: the router keeps no list of its routes to ask.
    fn routes_in_source() -> BTreeSet<(String, String)> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/api");
        let mut routes = BTreeSet::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let source = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            for (at, _) in source.match_indices(".route(") {
                let rest = source[at + ".route(".len()..].trim_start();
                if !rest.starts_with("\"/") {
                    continue; // not a route: this test's own text
                }
                let path = rest.split('"').nth(1).unwrap().to_owned();
                // The handlers, up to the call's closing parenthesis.
                let mut depth = 1;
                let end = rest
                    .char_indices()
                    .find(|&(_, c)| {
                        depth += match c {
                            '(' => 1,
                            ')' => -1,
                            _ => 0,
                        };
                        depth == 0
                    })
                    .unwrap()
                    .0;
                for method in METHODS {
                    let call = format!("{method}(");
                    if rest[..end]
                        .match_indices(&call)
                        .any(|(i, _)| i == 0 || !rest.as_bytes()[i - 1].is_ascii_alphanumeric())
                    {
                        routes.insert((method.to_owned(), path.clone()));
                    }
                }
            }
        }
        routes
    }

    fn operations(doc: &Value) -> Vec<(String, String, &Value)> {
        let mut ops = Vec::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for method in METHODS {
                if let Some(op) = item.get(method) {
                    ops.push((method.to_owned(), path.clone(), op));
                }
            }
        }
        ops
    }

    /// The schema `schema` names, following a `$ref`.
    fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
        match schema["$ref"].as_str() {
            Some(r) => {
                let name = r.strip_prefix("#/components/schemas/").unwrap();
                &doc["components"]["schemas"][name]
            }
            None => schema,
        }
    }

    #[test]
    fn every_route_is_documented_and_every_documented_route_exists() {
        let doc = document();
        let documented: BTreeSet<(String, String)> = operations(&doc)
            .into_iter()
            .map(|(m, p, _)| (m, p))
            .collect();
        let mut routes = routes_in_source();
        // PSPs' notifications: the PSPs' contract, not the merchant's API.
        routes.retain(|(_, path)| !path.starts_with("/api/wh/"));
        assert!(routes.contains(&("post".into(), "/v1/charges".into())));
        let undocumented: Vec<_> = routes.difference(&documented).collect();
        assert!(
            undocumented.is_empty(),
            "routes missing from the document: {undocumented:?}"
        );
        let phantom: Vec<_> = documented.difference(&routes).collect();
        assert!(
            phantom.is_empty(),
            "documented routes the router lacks: {phantom:?}"
        );
    }

    #[test]
    fn operation_ids_are_unique_and_links_reach_them() {
        let doc = document();
        let mut ids = BTreeSet::new();
        for (method, path, op) in operations(&doc) {
            let id = op["operationId"].as_str().unwrap_or_default().to_owned();
            assert!(
                ids.insert(id.clone()),
                "{method} {path}: operationId {id:?} twice"
            );
        }
        let mut links = 0;
        for (method, path, op) in operations(&doc) {
            for (status, response) in op["responses"].as_object().unwrap() {
                for (name, link) in response["links"].as_object().into_iter().flatten() {
                    links += 1;
                    let target = link["operationId"].as_str().unwrap();
                    assert!(
                        ids.contains(target),
                        "{method} {path} {status} link {name}: no {target}"
                    );
                    let (_, target_path, target_op) = operations(&doc)
                        .into_iter()
                        .find(|(_, _, o)| o["operationId"] == target)
                        .unwrap();
                    for parameter in link["parameters"].as_object().unwrap().keys() {
                        assert!(
                            target_path.contains(&format!("{{{parameter}}}")),
                            "link {name} fills {parameter}, not a path parameter of {target_path}"
                        );
                    }
                    assert!(target_op["parameters"].is_array());
                }
            }
        }
        assert!(links >= 15, "{links} links");
    }

    #[test]
    fn lists_are_documented_as_the_objects_they_are() {
        let doc = document();
        for (method, path, op) in operations(&doc) {
            let id = op["operationId"].as_str().unwrap();
            if !id.starts_with("list_") {
                continue;
            }
            let schema = resolve(
                &doc,
                &op["responses"]["200"]["content"]["application/json"]["schema"],
            );
            assert_eq!(schema["type"], "object", "{method} {path}: {schema}");
            let data = &schema["properties"]["data"];
            assert_eq!(data["type"], "array", "{method} {path}: data is {data}");
        }
    }

    #[test]
    fn json_bodies_refuse_unknown_fields_and_shared_answers_are_there() {
        let doc = document();
        for (method, path, op) in operations(&doc) {
            let responses = op["responses"].as_object().unwrap();
            if let Some(body) = op["requestBody"]["content"].get("application/json") {
                let schema = resolve(&doc, &body["schema"]);
                assert_eq!(
                    schema["additionalProperties"], false,
                    "{method} {path}: the handler refuses unknown fields; the document must too"
                );
                for status in ["400", "413"] {
                    assert!(
                        responses.contains_key(status),
                        "{method} {path}: no {status}"
                    );
                }
            }
            if op["security"].as_array().is_some_and(|s| !s.is_empty()) {
                for status in ["401", "429"] {
                    assert!(
                        responses.contains_key(status),
                        "{method} {path}: no {status}"
                    );
                }
            }
            if path.contains('{') {
                assert!(responses.contains_key("404"), "{method} {path}: no 404");
            }
        }
    }

    /// `paid_gte` and `paid_lt` are documented as a day of 1970 or later or an RFC 3339 time,
    /// and the parser takes each shape at its edges (the offsets and fractions schemathesis
    /// generates, years 1 to 9999), and refuses a day before 1970.
    #[test]
    fn statement_bounds_take_every_documented_day_and_time() {
        let doc = document();
        for path in ["/v1/statement", "/v1/statement.csv"] {
            for name in ["paid_gte", "paid_lt"] {
                let parameter = doc["paths"][path]["get"]["parameters"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|p| p["name"] == name)
                    .unwrap();
                let formats: Vec<&Value> = parameter["schema"]["anyOf"]
                    .as_array()
                    .unwrap_or_else(|| panic!("{path} {name}: {parameter}"))
                    .iter()
                    .map(|branch| &branch["format"])
                    .collect();
                assert_eq!(formats, [&json!("date"), &json!("date-time")]);
            }
        }
        let tz = crate::statement::time_zone();
        for value in [
            "1970-01-01",
            "2024-02-29",
            "9999-12-31",
            "0001-01-01T00:00:00Z",
            "0001-01-01T00:00:00+23:59",
            "9999-12-31T23:59:59.999999-23:59",
            "2026-11-22T10:00:00.5+00:00",
            "2026-11-22T10:00:00-03:00",
        ] {
            assert!(
                crate::statement::parse_bound(value, tz).is_ok(),
                "{value} is documented"
            );
        }
        for value in ["1969-12-31", "2026-02-30", "", "22/11/2026"] {
            assert!(crate::statement::parse_bound(value, tz).is_err(), "{value}");
        }
    }

    /// `If-Match` as documented is what [`super::super::concurrency`] reads: the values its
    /// pattern allows are taken, the ones it refuses are 400.
    #[test]
    fn if_match_is_documented_as_read() {
        let doc = document();
        for path in ["/v1/credentials/{id}", "/v1/webhook_endpoints/{id}"] {
            let parameter = doc["paths"][path]["patch"]["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["name"] == "If-Match")
                .unwrap();
            assert_eq!(parameter["schema"]["pattern"], IF_MATCH_PATTERN, "{path}");
            let etag = &doc["paths"][path]["patch"]["responses"]["200"]["headers"]["ETag"];
            assert!(etag.is_object(), "{path}: the answer documents no ETag");
        }
        let read = |value: &str| {
            let mut headers = axum::http::HeaderMap::new();
            headers.insert(axum::http::header::IF_MATCH, value.parse().unwrap());
            let mut body = super::super::body::JsonObject::parse(b"{}").unwrap();
            super::super::concurrency::expected_version(&headers, &mut body)
        };
        for (value, version) in [
            ("*", None),
            ("\"3\"", Some(3)),
            ("3", Some(3)),
            (" \"007\"\t", Some(7)),
            ("\"999999999999999999\"", Some(999_999_999_999_999_999)),
        ] {
            assert_eq!(read(value).unwrap(), version, "{value}");
        }
        for value in ["W/\"3\"", "\"0\"", "\"3", "null", "\"3\", \"4\""] {
            let error = read(value).unwrap_err();
            assert_eq!(error.status, axum::http::StatusCode::BAD_REQUEST, "{value}");
        }
    }

    /// A string a JSON body holds is refused with a control character
    /// ([`super::super::body::JsonObject::string`]): every one says so.
    #[test]
    fn body_strings_are_documented_as_one_line() {
        let doc = document();
        let names = json_body_schemas(&doc);
        assert!(names.contains("CreateChargePayer"), "{names:?}");
        let mut checked = 0;
        for name in &names {
            let schema = &doc["components"]["schemas"][name];
            for (field, property) in schema["properties"].as_object().into_iter().flatten() {
                let string = property["type"] == "string"
                    || property["type"]
                        .as_array()
                        .is_some_and(|t| t.contains(&json!("string")));
                if string && property.get("enum").is_none() {
                    checked += 1;
                    // `{type: string, pattern}`: a bare pattern holds for null, and `not`
                    // would refuse a nullable field's null.
                    assert_eq!(
                        property["not"],
                        json!({"type": "string", "pattern": format!("[{TEXT_CONTROLS}]")}),
                        "{name}.{field}"
                    );
                }
            }
        }
        assert!(checked >= 15, "{checked} string fields");
        for (name, schema) in doc["components"]["schemas"].as_object().unwrap() {
            let properties = schema.get("properties");
            assert!(
                properties.is_none_or(Value::is_object),
                "{name}: properties {properties:?}"
            );
        }
        let label = json!({"provider": "efi", "label": "Loja\u{0085}1"});
        let mut body = super::super::body::JsonObject::parse(label.to_string().as_bytes()).unwrap();
        assert!(body.string("label", 100).is_err(), "U+0085 is refused");
    }

    /// The limits `POST /v1/charges` documents are the ones its parser keeps: each documented
    /// bound is accepted and one past it refused.
    #[test]
    fn the_charge_body_limits_are_the_parsers() {
        let doc = document();
        let schema = &doc["components"]["schemas"]["CreateChargeRequest"]["properties"];
        let parse = |body: Value| {
            let object = super::super::body::JsonObject::parse(body.to_string().as_bytes())?;
            super::super::charges::parse_input(object)
        };
        let base = || json!({"amount": 1990, "provider": "efi"});
        for (field, bound) in [
            ("amount", "minimum"),
            ("amount", "maximum"),
            ("expires_in", "minimum"),
            ("expires_in", "maximum"),
        ] {
            let limit = schema[field][bound].as_i64().unwrap();
            let past = if bound == "minimum" {
                limit - 1
            } else {
                limit + 1
            };
            let mut body = base();
            body[field] = json!(limit);
            assert!(parse(body.clone()).is_ok(), "{field} = {limit}");
            body[field] = json!(past);
            let error = parse(body).err().unwrap();
            assert_eq!(error.body.param.as_deref(), Some(field), "{field} = {past}");
        }
        let max = schema["description"]["maxLength"].as_u64().unwrap() as usize;
        let mut body = base();
        body["description"] = json!("é".repeat(max));
        assert!(parse(body.clone()).is_ok());
        body["description"] = json!(format!(" {}", "é".repeat(max)));
        assert!(
            parse(body.clone()).is_err(),
            "maxLength counts the text as sent"
        );
        body["description"] = json!(" \u{3000}\t");
        assert!(parse(body).is_err(), "only whitespace");
        let mut body = base();
        body["unknown"] = json!(1);
        assert_eq!(parse(body).err().unwrap().body.code, "parameter_unknown");
    }
}
