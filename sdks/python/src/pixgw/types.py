"""The API's objects, generated from the gateway's OpenAPI document (``GET /v1/openapi.json``)
by ``scripts/generate_types.py``. Do not edit: regenerate; a test fails when this file is stale.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict


class AdapterList(TypedDict):
    """The adapters list of the API."""
    data: list[AdapterView]
    object: str
    """Always `list`."""


class AdapterView(TypedDict):
    """One adapter the runtime knows: the version serving (if any), the last refused file, and its manifest."""
    id: str
    last_error: NotRequired[str | None]
    """Why the latest file for this id was refused (the previous version keeps serving)."""
    last_error_at: NotRequired[str | None]
    manifest: NotRequired[None | ManifestView]
    serving_sha256: NotRequired[str | None]
    """SHA-256 of the component serving now."""
    serving_since: NotRequired[str | None]
    serving_tier: NotRequired[None | Tier]


class AttachEvidenceRequest(TypedDict):
    """`POST` body (documentation of what [`read_upload`] accepts)."""
    accuracy: NotRequired[float | None]
    """Metres, as the device reports it; only with `latitude` and `longitude`."""
    address: NotRequired[str | None]
    """Up to 300 characters, instead of or beside the coordinates."""
    latitude: NotRequired[float | None]
    """Degrees, -90 to 90; with `longitude`."""
    longitude: NotRequired[float | None]
    """Degrees, -180 to 180; with `latitude`."""
    photo: str
    """A JPEG, PNG or WebP photo of at most 10 MB. It is decoded to check it is one, turned upright, scaled to at most 2048 pixels a side and stored as a JPEG without metadata. An empty file part is no photo (what a form's empty file input sends): 400."""


class AttemptObject(TypedDict):
    at: str
    attempt: int
    error: NotRequired[str | None]
    latency_ms: NotRequired[int | None]
    response_excerpt: NotRequired[str | None]
    status_code: NotRequired[int | None]
    """The endpoint's HTTP status; `null` when it could not be reached."""


class ChargeList(TypedDict):
    """A page of charges, newest first."""
    data: list[ChargeObject]
    has_more: bool
    """Whether more charges follow: pass the last id as `starting_after`."""
    object: str
    """Always `list`."""


class ChargeObject(TypedDict):
    """A charge."""
    amount: int
    """Centavos."""
    amount_mismatch: bool
    """Set when the PSP reported a payment of another amount than the charge's."""
    amount_paid: NotRequired[int | None]
    """What the payer paid, in centavos, as the PSP reported it."""
    created_at: str
    currency: str
    """Always `BRL`."""
    description: NotRequired[str | None]
    end_to_end_id: NotRequired[str | None]
    id: str
    """`chg_…`; ids sort by creation time."""
    livemode: bool
    """`true` for live keys' charges."""
    metadata: Any
    object: str
    """Always `charge`."""
    paid_at: NotRequired[str | None]
    paid_late: bool
    """`true` when the payment arrived after the gateway had told you the charge was `expired` or `canceled` (the PSP still accepted it): the charge is now `paid` and `charge.paid` (or `charge.underpaid`) was sent. The money is in your PSP account; refund it there if the order was abandoned."""
    payer: NotRequired[None | PayerSchema]
    payment_link: NotRequired[None | ChargePaymentLink]
    pix: PixData
    provider: str
    """The PSP that holds the charge."""
    psp_id: NotRequired[str | None]
    """The PSP's own id for the charge."""
    reference: str
    """The gateway-chosen reference sent to the PSP (its txid, idempotency key or correlation id)."""
    routing: NotRequired[dict[str, Any] | None]
    """For `provider: "random"`: `{mode: "round_robin", selected_provider, attempted_providers}`."""
    status: ChargeStatus
    underpaid: bool
    """`true` when the charge is `paid` but `amount_paid` is less than `amount`: the payer paid only part. Such a payment is announced by the event `charge.underpaid`, never `charge.paid`; do not treat it as settled (ask for the rest, or refund at the PSP)."""


class ChargePaymentLink(TypedDict):
    """The payment link a charge came from."""
    id: str
    """`plink_…`."""
    name: str
    """The link's name when the charge was made (what the payer saw)."""


ChargeStatus = Literal["pending", "processing", "paid", "expired", "canceled", "failed"]
"""Where a charge stands. `processing`: the PSP reported a payment the gateway is confirming."""


class CreateChargePayer(TypedDict):
    """The payer of a new charge. Some PSPs require some of these fields (`GET /v1/adapters`: `required_payer_fields`)."""
    document: NotRequired[str | None]
    """CPF (11 digits) or CNPJ (14 characters: 12 letters or digits, then 2 digits) with valid check digits; `.`, `-`, `/` and spaces are removed first."""
    email: NotRequired[str | None]
    """One `@`, a domain of two labels or more, no spaces."""
    name: NotRequired[str | None]
    """1 to 200 characters, not only spaces."""


class CreateChargeRequest(TypedDict):
    """`POST /v1/charges` body: what [`parse_input`] accepts, with its limits. `null` is the same as leaving a field out; text is trimmed."""
    amount: int
    """Integer centavos: 1 (R$ 0,01) to 1000000000 (R$ 10.000.000,00)."""
    description: NotRequired[str | None]
    """Shown to the payer by most PSPs; 1 to 140 characters, not only spaces."""
    expires_in: NotRequired[int | None]
    """Seconds the charge can be paid: 60 to 1209600 (14 days); default 3600."""
    metadata: NotRequired[dict[str, str] | None]
    payer: NotRequired[None | CreateChargePayer]
    provider: str
    """An installed adapter id (`efi`, `stripe`, …; see `GET /v1/adapters`) for which the merchant has an active credential in the key's environment — or `random`: round robin over the merchant's PSPs that accept this payer, with failover that never makes two charges; the answer's `routing` says which PSPs were tried."""


class CreateCredentialRequest(TypedDict):
    """`POST /v1/credentials` body: what [`create`] reads. `null` is the same as leaving a field out."""
    fields: NotRequired[dict[str, str] | None]
    """The adapter's `credential_fields` (`GET /v1/adapters`), each a string."""
    label: NotRequired[str | None]
    """1 to 100 characters; default: the adapter's name."""
    position: NotRequired[int | None]
    """Order in the round robin, lower first; default 0."""
    provider: str
    """An installed adapter id (`GET /v1/adapters`)."""
    register_webhook: NotRequired[bool | None]
    """Default `true`: register the webhook URL at the PSP when the adapter can."""
    route_limit: NotRequired[int | None]
    """Consecutive charges in a round robin before the turn passes on; default 1."""
    verify: NotRequired[bool | None]
    """Default `true`: try the credential at the PSP when the adapter can."""


class CreateEndpointRequest(TypedDict):
    """`POST /v1/webhook_endpoints` body: what [`create`] reads. `null` is the same as leaving a field out."""
    description: NotRequired[str | None]
    events: NotRequired[list[EventType] | None]
    """Default: every type but `charge.created`."""
    url: str
    """Where events are POSTed: an http or https URL. Live endpoints need https; a host that does not resolve, or resolves to a loopback or private address, is refused (422) unless the operator allows private addresses."""


class CreatePaymentLinkRequest(TypedDict):
    """`POST /v1/payment_links` body: what [`create`] reads. `null` is the same as leaving a field out; text is trimmed."""
    active: NotRequired[bool | None]
    """Default `true`."""
    amount: NotRequired[int | None]
    """A fixed amount in centavos. Omit it to let the payer type the amount (then `min_amount` and `max_amount` may bound it; with `amount` they are refused)."""
    max_amount: NotRequired[int | None]
    """Only without `amount`: the most the payer may pay, in centavos."""
    min_amount: NotRequired[int | None]
    """Only without `amount`: the least the payer may pay, in centavos; at most `max_amount`."""
    name: str
    provider: NotRequired[str | None]
    """An installed adapter id (`GET /v1/adapters`) or `random` (the default): round robin over the merchant's PSPs, as for charges."""
    slug: NotRequired[str | None]
    """A custom slug: 3 to 64 letters, digits and hyphens, starting and ending with a letter or digit (stored in lower case), not taken by another link. Default: 20 random characters."""
    usage_limit: NotRequired[int | None]
    """Paid payments the link takes; then its page says it is used up."""
    valid_from: NotRequired[str | None]
    """RFC 3339: the link takes payments from then on; before `valid_until`."""
    valid_until: NotRequired[str | None]
    """RFC 3339: the link takes no payments from then on."""


class CredentialList(TypedDict):
    """The merchant's credentials, in routing order."""
    data: list[CredentialObject]
    object: str
    """Always `list`."""


class CredentialObject(TypedDict):
    """A PSP credential."""
    active: bool
    """Used for charges when true."""
    created_at: str
    environment: str
    """`test` or `live`: the environment of the key that saved it."""
    fields: dict[str, str]
    """The fields that are not secret, as saved."""
    id: str
    """`cred_…`."""
    label: str
    object: str
    """Always `credential`."""
    position: int
    """Order among the merchant's credentials (lower first): the order of the round robin."""
    provider: str
    route_limit: int
    """Consecutive charges this credential takes in a round robin before the turn passes on."""
    secret_fields_set: list[str]
    """Names of the secret fields that hold a value (values are never returned)."""
    updated_at: str
    verification: NotRequired[None | Verification]
    version: int
    """Moves on with every change; send it back (`If-Match: "<version>"` or `version`) with a change so that one made meanwhile by someone else is refused (409) instead of undone."""
    webhook: WebhookInfo


class Deleted(TypedDict):
    """What a delete answers."""
    deleted: bool
    """Always `true`."""
    id: str
    object: str
    """The kind of object deleted, e.g. `credential`."""


class DeliveryObject(TypedDict):
    """One endpoint's delivery of an event."""
    attempts: list[AttemptObject]
    delivered_at: NotRequired[str | None]
    endpoint: str
    """`we_…`"""
    id: str
    next_attempt_at: NotRequired[str | None]
    status: str
    """`pending`, `delivered`, `failed` or `canceled`."""


class EndpointList(TypedDict):
    """The merchant's webhook endpoints in the key's environment."""
    data: list[EndpointObject]
    object: str
    """Always `list`."""


class EndpointObject(TypedDict):
    """A webhook endpoint."""
    created_at: str
    description: NotRequired[str | None]
    disabled_reason: NotRequired[str | None]
    """Why the gateway disabled it (a 410 answer, days of failures)."""
    events: list[str]
    """The event types delivered here."""
    failing_since: NotRequired[str | None]
    """Deliveries have failed since then."""
    id: str
    """`we_…`."""
    livemode: bool
    object: str
    """Always `webhook_endpoint`."""
    previous_secret_expires_at: NotRequired[str | None]
    """Until then the previous secret signs too."""
    secret: NotRequired[str | None]
    """Only when created or rotated: the `whsec_…` signing secret. Keep it: it is not shown again."""
    status: str
    """`enabled` or `disabled`."""
    url: str
    version: int
    """Moves on with every change; send it back (`If-Match: "<version>"` or `version`) with a change so that one made meanwhile is refused (409) instead of undone."""


EndpointStatus = Literal["enabled", "disabled"]


class ErrorBody(TypedDict):
    """The `error` object of every error response."""
    attempted_providers: NotRequired[list[str] | None]
    """For `provider: "random"`: every PSP tried, in order."""
    code: str
    """Stable machine-readable code, e.g. `parameter_invalid`, `provider_not_connected`."""
    hint: NotRequired[str | None]
    """The likely remedy, in plain words."""
    limit: NotRequired[int | None]
    """For `plan_limit_reached`: the plan's limit (`0` for a feature it lacks)."""
    message: str
    """What went wrong and how to fix it, in plain words."""
    param: NotRequired[str | None]
    """The request parameter at fault, e.g. `payer.document`."""
    plan: NotRequired[str | None]
    """For `plan_limit_reached`: the merchant's plan (`free`, `basic`, …)."""
    provider: NotRequired[str | None]
    """The PSP involved."""
    psp_code: NotRequired[str | None]
    """The PSP's own error code, when it gave one."""
    psp_message: NotRequired[str | None]
    """The PSP's own message, verbatim."""
    request_id: str
    """The id of this request (also in the `x-request-id` header): quote it to support."""
    resource: NotRequired[str | None]
    """For `plan_limit_reached`: what is limited (`live_charges`, `payment_links`, …; see `GET /v1/usage`)."""
    type: ErrorType
    upgrade_to: NotRequired[str | None]
    """For `plan_limit_reached`: the smallest plan that allows one more; absent when none does."""
    usage: NotRequired[int | None]
    """For `plan_limit_reached`: how many the merchant has (this month, for charges)."""


class ErrorResponse(TypedDict):
    """`{"error": …}`."""
    error: ErrorBody


ErrorType = Literal["invalid_request_error", "authentication_error", "permission_error", "idempotency_error", "rate_limit_error", "psp_error", "api_error"]
"""The families of errors, as `error.type`."""


class EventData(TypedDict):
    """What an event is about."""
    object: ChargeObject
    """The charge as it was when the event happened."""


class EventList(TypedDict):
    """A page of events, newest first."""
    data: list[EventObject]
    has_more: bool
    object: str
    """Always `list`."""


class EventObject(TypedDict):
    """An event, as listed and as delivered to endpoints (the stored payload, verbatim)."""
    created_at: str
    data: EventData
    deliveries: NotRequired[list[DeliveryObject] | None]
    """Only when an event is retrieved: its deliveries and every attempt."""
    id: str
    """`evt_…`"""
    livemode: bool
    object: str
    """Always `event`."""
    type: EventType


EventType = Literal["charge.created", "charge.paid", "charge.underpaid", "charge.expired", "charge.canceled", "charge.failed"]
"""An event type an endpoint can receive."""


class EvidenceList(TypedDict):
    """A charge's evidence, oldest first."""
    data: list[EvidenceObject]
    object: str
    """Always `list`."""


class EvidenceObject(TypedDict):
    """A photo and the place of a sale, as stored."""
    charge: str
    """`chg_…`"""
    created_at: str
    """When the gateway received it (its own clock, never the client's)."""
    expires_at: str
    """When it is deleted, with its photo: 180 days after `created_at`."""
    id: str
    """`evi_…`"""
    location: NotRequired[None | LocationInfo]
    object: str
    """Always `evidence`."""
    photo: PhotoInfo
    uploaded_by: Uploader
    """Who attached it: a member's e-mail or an API key's prefix."""


class FieldView(TypedDict):
    help: NotRequired[str | None]
    kind: str
    label: str
    multiline: bool
    name: str
    required: bool


class LinkRef(TypedDict):
    """The payment link a charge was paid through."""
    id: str
    """`plink_…`"""
    name: NotRequired[str | None]
    """The link's name when the charge was made, as the payer saw it."""


class LocationInfo(TypedDict):
    accuracy: NotRequired[float | None]
    """Metres."""
    address: NotRequired[str | None]
    latitude: NotRequired[float | None]
    """Degrees, WGS 84."""
    longitude: NotRequired[float | None]


class ManifestView(TypedDict):
    capabilities: list[str]
    """`cancel-charge`, `register-webhook`, `check-credentials`."""
    credential_fields: list[FieldView]
    display_name: str
    endpoints: list[str]
    """Endpoint names (their URLs are the operator's to override)."""
    kind: str
    required_payer_fields: list[str]
    """`email`, `name`, `document`."""
    webhook_auth: WebhookAuthView
    wit_version: str


class Operator(TypedDict):
    id: NotRequired[str | None]
    """For `user`: the member's id (`usr_…`)."""
    name: NotRequired[str | None]
    """For `user`: the member's name."""
    type: OperatorType


OperatorType = Literal["user", "api", "payment_link"]
"""Who made a sale."""


class PayerSchema(TypedDict):
    document: NotRequired[str | None]
    """CPF (11 digits) or CNPJ (14 characters, alphanumeric allowed), with valid check digits; punctuation is accepted and removed."""
    email: NotRequired[str | None]
    """Required by some PSPs (the manifest's required payer fields)."""
    name: NotRequired[str | None]
    """1 to 200 characters."""


class PaymentLinkList(TypedDict):
    """A page of payment links, newest first."""
    data: list[PaymentLinkObject]
    has_more: bool
    """Whether more links follow: pass the last id as `starting_after`."""
    object: str
    """Always `list`."""


class PaymentLinkObject(TypedDict):
    """A payment link: a public page where anyone pays the merchant by Pix."""
    active: bool
    """`false` once deactivated."""
    amount: NotRequired[int | None]
    """A fixed amount in centavos; `null` when the payer types the amount."""
    created_at: str
    id: str
    """`plink_…`."""
    livemode: bool
    """`true` for live keys' links."""
    max_amount: NotRequired[int | None]
    """For a typed amount: the most the payer may pay, in centavos."""
    min_amount: NotRequired[int | None]
    """For a typed amount: the least the payer may pay, in centavos."""
    name: str
    """What the payer pays for; shown on the page and sent to the PSP as the description."""
    object: str
    """Always `payment_link`."""
    paid_amount: int
    """Their total, in centavos."""
    paid_count: int
    """Paid payments made through the link."""
    provider: str
    """The PSP that takes the charges (an adapter id) or `random`."""
    slug: str
    """The last part of `url`."""
    status: str
    """Whether the link takes payments now: `open`, `inactive`, `scheduled` (before `valid_from`), `expired` (after `valid_until`) or `used_up` (`usage_limit` reached)."""
    updated_at: str
    url: str
    """The page to share: `{base_url}/p/{slug}`."""
    usage_limit: NotRequired[int | None]
    """How many paid payments the link takes; `null`: no limit."""
    valid_from: NotRequired[str | None]
    """RFC 3339; before it the page says when it opens."""
    valid_until: NotRequired[str | None]
    """RFC 3339; from then on the page says the link expired."""


class PhotoInfo(TypedDict):
    """The stored photo: always a JPEG re-encoded by the gateway, without the original's metadata."""
    content_type: str
    height: int
    sha256: str
    """Hex SHA-256 of the stored JPEG."""
    size: int
    """Bytes of the stored JPEG."""
    url: str
    """`GET` it with the same API key."""
    width: int


class PixData(TypedDict):
    """The Pix data the payer uses."""
    copy_paste: NotRequired[str | None]
    """The Pix copy-and-paste code (BR Code), checked (TLV and CRC) before it is returned."""
    expires_at: NotRequired[str | None]
    """RFC 3339."""
    qr_code_base64: NotRequired[str | None]
    """PNG of the QR code of `copy_paste`, base64 without a `data:` prefix: black on white, 1 bit a pixel, 8 pixels a module, about 1 KB."""


class PlanObject(TypedDict):
    """The merchant's plan."""
    id: str
    """`free`, `basic`, `pro`, `business`, `scale`, `enterprise`, `ultra`, `ultra_2`."""
    log_retention_days: int
    """Days notifications, webhook deliveries and PSP attempts are kept."""
    monthly_price_brl: NotRequired[int | None]
    """Whole reais a month; `null` for plans on request (Ultra, Ultra 2)."""
    name: str
    phone_cashier: bool
    """Whether the cashier works on a phone's browser."""
    sso: bool


class Redelivery(TypedDict):
    """What a redelivery queued."""
    id: str
    object: str
    """Always `event`."""
    queued: int
    """Deliveries queued: one per enabled endpoint subscribed to the event's type."""


class RotateSecretRequest(TypedDict):
    """`POST /v1/webhook_endpoints/{id}/rotate_secret` body."""
    overlap_seconds: NotRequired[int | None]
    """Seconds the old secret keeps signing: 0 to 604800 (a week); default 86400."""


class StatementLineObject(TypedDict):
    """One paid charge."""
    amount: int
    """Centavos paid (what the PSP reported, else the charge's amount)."""
    charge_id: str
    """`chg_…`"""
    description: NotRequired[str | None]
    end_to_end_id: NotRequired[str | None]
    """The Pix end-to-end id (E2E) the central bank gave the payment."""
    operator: Operator
    paid_at: str
    """When the PSP says it was paid: RFC 3339, UTC."""
    paid_at_local: str
    """The same moment in the merchant's time zone, RFC 3339 with its offset, e.g. `2026-11-22T21:30:05-03:00`: its date is the statement day the line belongs to."""
    payment_link: NotRequired[None | LinkRef]
    provider: str
    """The adapter id of the PSP that was paid."""


class StatementList(TypedDict):
    """A page of the statement, newest payment first."""
    data: list[StatementLineObject]
    has_more: bool
    """Whether more lines follow: pass the last `charge_id` as `starting_after`."""
    object: str
    """Always `statement`."""
    time_zone: str
    """The zone whose days `paid_gte`, `paid_lt` and `paid_at_local` use."""
    totals: StatementTotals


class StatementTotals(TypedDict):
    """Count and sum of every line the filter holds (not only this page's)."""
    amount: int
    """Centavos."""
    count: int


Tier = Literal["baseline", "optimized"]
"""Which compiler made the code an adapter version runs."""


class UpdateCredentialRequest(TypedDict):
    """`PATCH /v1/credentials/{id}` body: what [`update`] reads. Omitted fields keep their value."""
    active: NotRequired[bool | None]
    """`false`: no new charge uses it."""
    fields: NotRequired[dict[str, str] | None]
    """Fields to change; the others keep their value."""
    label: NotRequired[str | None]
    position: NotRequired[int | None]
    register_webhook: NotRequired[bool | None]
    route_limit: NotRequired[int | None]
    verify: NotRequired[bool | None]
    """Default `true`: try new fields at the PSP before saving them."""
    version: NotRequired[int | None]
    """The `version` this change is made against (or send `If-Match: "<version>"`): if the credential changed since, 409 `conflict` and nothing is saved."""


class UpdateEndpointRequest(TypedDict):
    """`PATCH /v1/webhook_endpoints/{id}` body: what [`update`] reads; omitted fields keep their value."""
    description: NotRequired[str | None]
    events: NotRequired[list[EventType] | None]
    status: NotRequired[None | EndpointStatus]
    url: NotRequired[str | None]
    """As on create."""
    version: NotRequired[int | None]
    """The `version` this change is made against (or send `If-Match: "<version>"`): if the endpoint changed since, 409 `conflict` and nothing is saved."""


class UpdatePaymentLinkRequest(TypedDict):
    """`PATCH /v1/payment_links/{id}` body: what [`update`] reads. Absent fields keep their value; `null` clears an optional one."""
    active: NotRequired[bool | None]
    """`true` activates the link again; `false` deactivates it."""
    amount: NotRequired[int | None]
    """A number makes the amount fixed (and clears `min_amount` and `max_amount` unless given); `null` lets the payer type it."""
    max_amount: NotRequired[int | None]
    min_amount: NotRequired[int | None]
    name: NotRequired[str]
    provider: NotRequired[str | None]
    slug: NotRequired[str | None]
    """The old address stops working."""
    usage_limit: NotRequired[int | None]
    valid_from: NotRequired[str | None]
    valid_until: NotRequired[str | None]


class Uploader(TypedDict):
    id: NotRequired[str | None]
    label: str
    type: str
    """`user` or `api_key`."""


class UsageCounts(TypedDict):
    """What the merchant uses of each limit. Charges count this calendar month in São Paulo; payment links, PSPs, API keys and webhook endpoints count in the key's environment; the team counts members and open invitations."""
    api_keys: UsageItem
    live_charges: UsageItem
    payment_links: UsageItem
    psps: UsageItem
    team_members: UsageItem
    test_charges: UsageItem
    """Fair use: as many as the plan's live charges, and at least 1,000."""
    webhook_endpoints: UsageItem


class UsageItem(TypedDict):
    """One limit and its use."""
    limit: NotRequired[int | None]
    """`null`: unlimited."""
    used: int


class UsageObject(TypedDict):
    environment: str
    """The environment of the API key: `test` or `live`."""
    month: str
    """The month charges count in, in São Paulo: `2026-11`."""
    plan: PlanObject
    usage: UsageCounts


class Verification(TypedDict):
    """What the PSP said when the credential was tried on save."""
    message: NotRequired[str | None]
    status: str
    """`ok`, `unreachable` (saved; the PSP could not be asked), `unsupported` (the adapter cannot check credentials) or `skipped` (`verify: false`)."""


WebhookAuthView = dict[str, Any]
"""How the PSP's notifications authenticate."""


class WebhookInfo(TypedDict):
    """Where the PSP sends notifications for this credential."""
    header: NotRequired[str | None]
    """For PSPs configured in their dashboard to send the token in a header: its name."""
    registration: NotRequired[dict[str, Any] | None]
    """How registering `url` at the PSP went: `{status: "registered" | "failed" | "manual" | "skipped", message?, at}`. `manual`: this PSP is configured in its own dashboard."""
    token: str
    """The token that authenticates notifications: already in `url`, unless `header` is set."""
    url: str
    """Register this URL at the PSP (adapters that can register it do so themselves)."""


__all__ = [
    "AdapterList",
    "AdapterView",
    "AttachEvidenceRequest",
    "AttemptObject",
    "ChargeList",
    "ChargeObject",
    "ChargePaymentLink",
    "ChargeStatus",
    "CreateChargePayer",
    "CreateChargeRequest",
    "CreateCredentialRequest",
    "CreateEndpointRequest",
    "CreatePaymentLinkRequest",
    "CredentialList",
    "CredentialObject",
    "Deleted",
    "DeliveryObject",
    "EndpointList",
    "EndpointObject",
    "EndpointStatus",
    "ErrorBody",
    "ErrorResponse",
    "ErrorType",
    "EventData",
    "EventList",
    "EventObject",
    "EventType",
    "EvidenceList",
    "EvidenceObject",
    "FieldView",
    "LinkRef",
    "LocationInfo",
    "ManifestView",
    "Operator",
    "OperatorType",
    "PayerSchema",
    "PaymentLinkList",
    "PaymentLinkObject",
    "PhotoInfo",
    "PixData",
    "PlanObject",
    "Redelivery",
    "RotateSecretRequest",
    "StatementLineObject",
    "StatementList",
    "StatementTotals",
    "Tier",
    "UpdateCredentialRequest",
    "UpdateEndpointRequest",
    "UpdatePaymentLinkRequest",
    "Uploader",
    "UsageCounts",
    "UsageItem",
    "UsageObject",
    "Verification",
    "WebhookAuthView",
    "WebhookInfo",
]
