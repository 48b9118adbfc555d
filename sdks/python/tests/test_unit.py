"""The SDK without a gateway: settings, the retry policy against scripted transports (sync and
async), errors, and webhook verification (the Standard Webhooks test vector, rotation, tolerance)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Callable
from email.utils import formatdate
from typing import Any

import httpx
import pytest

import pixgw
from pixgw import (
    AsyncPixgw,
    AuthenticationError,
    InvalidRequestError,
    Pixgw,
    PixgwConnectionError,
    PixgwTimeoutError,
    PspError,
    RateLimitError,
    Webhook,
    WebhookVerificationError,
    verify_webhook,
)
from pixgw._base import parse_retry_after

CHARGE = {"id": "chg_1", "object": "charge", "status": "pending", "amount": 1990}
PSP_UNKNOWN = httpx.Response(
    502,
    json={
        "error": {
            "type": "psp_error",
            "code": "psp_outcome_unknown",
            "message": "The PSP did not answer.",
            "provider": "efi",
            "psp_message": "upstream reset",
            "hint": "Retry with the same Idempotency-Key.",
            "request_id": "req_abc",
        }
    },
)
RATE_LIMITED = {"error": {"type": "rate_limit_error", "code": "rate_limited", "message": "Slow down."}}

Reply = httpx.Response | Exception


class Script:
    """A transport answering each request with the next scripted reply; records the requests."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return httpx.Response(reply.status_code, headers=reply.headers, content=reply.content)

    def keys(self) -> list[str | None]:
        return [r.headers.get("idempotency-key") for r in self.requests]


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The client's waits, recorded instead of slept."""
    waits: list[float] = []

    async def async_sleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(pixgw._client, "_sleep", waits.append)
    monkeypatch.setattr(pixgw._client, "_async_sleep", async_sleep)
    return waits


def client(script: Script, **options: Any) -> Pixgw:
    return Pixgw("pgw_test_k", "http://gw.test", http_client=httpx.Client(transport=httpx.MockTransport(script)), **options)


def async_client(script: Script, **options: Any) -> AsyncPixgw:
    transport = httpx.MockTransport(script)
    return AsyncPixgw("pgw_test_k", "http://gw.test", http_client=httpx.AsyncClient(transport=transport), **options)


def test_the_environment_comes_from_the_key_prefix() -> None:
    assert Pixgw("pgw_test_x", "http://gw").environment == "test"
    assert AsyncPixgw("pgw_live_x", "http://gw").environment == "live"


def test_bad_settings_say_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="starts with pgw_test_ or pgw_live_"):
        Pixgw("sk_test_123", "http://gw")
    monkeypatch.delenv("PIXGW_URL", raising=False)
    with pytest.raises(ValueError, match="no base URL.*PIXGW_URL"):
        Pixgw("pgw_test_x")
    with pytest.raises(ValueError, match="http"):
        Pixgw("pgw_test_x", "ftp://gw")


def test_a_create_is_retried_after_5xx_and_network_errors_with_the_same_key(sleeps: list[float]) -> None:
    script = Script(PSP_UNKNOWN, httpx.ReadError("connection reset"), httpx.Response(201, json=CHARGE))
    created = client(script).charges.create(amount=1990, provider="efi")
    assert created["id"] == "chg_1"
    keys = script.keys()
    assert len(keys) == 3 and keys[0] and len(keys[0]) == 36
    assert keys == [keys[0]] * 3
    assert json.loads(script.requests[2].content) == {"amount": 1990, "provider": "efi"}
    assert script.requests[0].headers["authorization"] == "Bearer pgw_test_k"
    # Exponential backoff with jitter: within [0.25, 0.5] then [0.5, 1].
    assert 0.25 <= sleeps[0] <= 0.5 and 0.5 <= sleeps[1] <= 1.0


async def test_the_async_client_retries_with_the_same_key_too(sleeps: list[float]) -> None:
    script = Script(PSP_UNKNOWN, httpx.ConnectError("refused"), httpx.Response(201, json=CHARGE))
    async with async_client(script) as pix:
        created = await pix.charges.create(amount=1990, provider="efi", idempotency_key="order-42")
    assert created["id"] == "chg_1"
    assert script.keys() == ["order-42"] * 3
    assert len(sleeps) == 2


def test_each_call_gets_its_own_key() -> None:
    script = Script(httpx.Response(201, json=CHARGE), httpx.Response(201, json=CHARGE))
    pix = client(script)
    pix.charges.create(amount=1, provider="efi")
    pix.charges.create(amount=1, provider="efi")
    a, b = script.keys()
    assert a != b


def test_retry_after_is_obeyed_and_too_long_a_wait_gives_up(sleeps: list[float]) -> None:
    script = Script(
        httpx.Response(429, headers={"retry-after": "7"}, json=RATE_LIMITED),
        httpx.Response(200, json=CHARGE),
        httpx.Response(429, headers={"retry-after": "3600"}, json=RATE_LIMITED),
    )
    pix = client(script)
    assert pix.charges.retrieve("chg_1")["id"] == "chg_1"
    assert sleeps == [7.0]
    with pytest.raises(RateLimitError) as caught:
        pix.charges.retrieve("chg_1")
    assert caught.value.retry_after_seconds == 3600
    assert len(script.requests) == 3


def test_no_retry_on_4xx_on_a_replayed_answer_or_past_max_retries(sleeps: list[float]) -> None:
    invalid = httpx.Response(
        400,
        json={
            "error": {
                "type": "invalid_request_error",
                "code": "parameter_invalid",
                "message": "amount must be at least 1.",
                "param": "amount",
                "request_id": "req_1",
            }
        },
    )
    replayed = httpx.Response(502, headers={"idempotent-replayed": "true"}, content=PSP_UNKNOWN.content)
    script = Script(invalid, replayed, PSP_UNKNOWN, PSP_UNKNOWN)
    pix = client(script, max_retries=1)
    with pytest.raises(InvalidRequestError) as bad:
        pix.charges.create(amount=0, provider="efi")
    e = bad.value
    assert (e.status, e.code, e.param, e.request_id, e.message) == (
        400,
        "parameter_invalid",
        "amount",
        "req_1",
        "amount must be at least 1.",
    )
    assert len(script.requests) == 1
    with pytest.raises(PspError):
        pix.charges.create(amount=1, provider="efi")
    assert len(script.requests) == 2
    with pytest.raises(PspError) as unknown:
        pix.charges.create(amount=1, provider="efi")
    u = unknown.value
    assert (u.type, u.code, u.provider, u.psp_message, u.hint, u.request_id) == (
        "psp_error",
        "psp_outcome_unknown",
        "efi",
        "upstream reset",
        "Retry with the same Idempotency-Key.",
        "req_abc",
    )
    assert "PSP said: upstream reset" in str(u)
    assert len(script.requests) == 4


def test_creates_not_deduplicated_are_retried_only_when_nothing_was_done(sleeps: list[float]) -> None:
    failed = httpx.Response(500, json={"error": {"type": "api_error", "code": "internal_error", "message": "boom"}})
    script = Script(httpx.Response(429, headers={"retry-after": "0"}, json=RATE_LIMITED), failed)
    with pytest.raises(pixgw.ApiError):
        client(script).webhook_endpoints.create(url="https://example.com/hook")
    assert len(script.requests) == 2, "retried after the 429, not after the 500"
    script = Script(httpx.ReadTimeout("slow"))
    with pytest.raises(PixgwTimeoutError):
        client(script).webhook_endpoints.create(url="https://example.com/hook")
    assert len(script.requests) == 1


def test_no_answer_is_a_connection_error() -> None:
    script = Script(httpx.ConnectError("refused"))
    with pytest.raises(PixgwConnectionError, match="reachable"):
        client(script, max_retries=0).charges.retrieve("chg_1")


def test_an_error_body_that_is_not_the_apis_is_typed_by_status() -> None:
    script = Script(httpx.Response(401, text="<html>proxy login</html>"))
    with pytest.raises((InvalidRequestError, AuthenticationError)) as caught:
        client(script).charges.retrieve("chg_1")
    assert caught.value.code == "http_401"
    assert "proxy login" in caught.value.message


def test_retry_after_parses_seconds_and_dates() -> None:
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    seconds = parse_retry_after(formatdate(time.time() + 10, usegmt=True))
    assert seconds is not None and 8 < seconds <= 10


def test_pages_follow_the_cursor() -> None:
    script = Script(
        httpx.Response(200, json={"object": "list", "data": [{"id": "c3"}, {"id": "c2"}], "has_more": True}),
        httpx.Response(200, json={"object": "list", "data": [{"id": "c1"}], "has_more": False}),
    )
    page = client(script).charges.list(limit=2, status="paid")
    assert [c["id"] for c in page] == ["c3", "c2", "c1"]
    assert script.requests[0].url.params["limit"] == "2"
    assert "starting_after" not in script.requests[0].url.params
    assert script.requests[1].url.params["starting_after"] == "c2"
    assert script.requests[1].url.params["status"] == "paid"


# ---- webhooks ----

# The test vector published with the Standard Webhooks specification.
VECTOR = {
    "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    "id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
    "timestamp": 1614265330,
    "body": '{"test": 2432232314}',
    "signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
}
SECRET_A = "whsec_" + base64.b64encode(bytes([1]) * 32).decode()
SECRET_B = "whsec_" + base64.b64encode(bytes([2]) * 32).decode()
EVENT = json.dumps(
    {
        "id": "evt_1",
        "object": "event",
        "type": "charge.paid",
        "created_at": "2026-01-01T00:00:00Z",
        "livemode": False,
        "data": {"object": CHARGE},
    }
)


def sign(secret: str, msg_id: str, ts: int, body: str) -> str:
    key = base64.b64decode(secret.removeprefix("whsec_"))
    digest = hmac.new(key, f"{msg_id}.{ts}.{body}".encode(), hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def headers(signature: str, ts: int | str, msg_id: str = "evt_1") -> dict[str, str]:
    return {"Webhook-Id": msg_id, "Webhook-Timestamp": str(ts), "Webhook-Signature": signature}


def reason(fn: Callable[[], Any]) -> str:
    with pytest.raises(WebhookVerificationError) as caught:
        fn()
    return caught.value.reason


def test_the_specification_vector_verifies() -> None:
    h = headers(VECTOR["signature"], VECTOR["timestamp"], VECTOR["id"])  # type: ignore[arg-type]
    now = float(VECTOR["timestamp"])  # type: ignore[arg-type]
    # Its body is not an event, so verification gets past the signature and stops there.
    assert reason(lambda: Webhook(VECTOR["secret"]).verify(VECTOR["body"], h, now=now)) == "invalid_payload"  # type: ignore[arg-type]
    assert reason(lambda: Webhook("whsec_AAAA").verify(VECTOR["body"], h, now=now)) == "no_matching_signature"  # type: ignore[arg-type]


def test_the_event_is_returned_and_any_secret_or_signature_may_match() -> None:
    now = int(time.time())
    event = verify_webhook(EVENT.encode(), headers(sign(SECRET_A, "evt_1", now, EVENT), now), SECRET_A)
    assert event["type"] == "charge.paid"
    assert event["data"]["object"]["id"] == "chg_1"
    both = f"{sign(SECRET_B, 'evt_1', now, EVENT)} {sign(SECRET_A, 'evt_1', now, EVENT)}"
    assert Webhook(SECRET_A).verify(EVENT, headers(both, now))["id"] == "evt_1"
    assert Webhook([SECRET_B]).verify(EVENT, headers(both, now))["id"] == "evt_1"
    assert Webhook([SECRET_B, SECRET_A]).verify(EVENT, headers(sign(SECRET_A, "evt_1", now, EVENT), now))["id"] == "evt_1"


def test_tampering_stale_future_and_missing_headers_are_refused() -> None:
    now = int(time.time())
    signature = sign(SECRET_A, "evt_1", now, EVENT)
    hook = Webhook(SECRET_A)
    assert reason(lambda: hook.verify(EVENT.replace("1990", "1"), headers(signature, now))) == "no_matching_signature"
    assert reason(lambda: hook.verify(EVENT, headers(signature, now, "evt_2"))) == "no_matching_signature"
    assert reason(lambda: hook.verify(EVENT, headers(signature, now - 1))) == "no_matching_signature"
    old, future = now - 360, now + 360
    assert reason(lambda: hook.verify(EVENT, headers(sign(SECRET_A, "evt_1", old, EVENT), old))) == "timestamp_too_old"
    assert reason(lambda: hook.verify(EVENT, headers(sign(SECRET_A, "evt_1", future, EVENT), future))) == "timestamp_too_new"
    assert reason(lambda: hook.verify(EVENT, headers(signature, "soon"))) == "invalid_timestamp"
    assert reason(lambda: hook.verify(EVENT, {"webhook-id": "evt_1"})) == "missing_header"
    assert reason(lambda: hook.verify(EVENT, headers("v2," + signature[3:], now))) == "no_matching_signature"
    older = now - 400
    wide = Webhook(SECRET_A, tolerance=600)
    assert wide.verify(EVENT, headers(sign(SECRET_A, "evt_1", older, EVENT), older))["id"] == "evt_1"
    with pytest.raises(ValueError, match="whsec_ followed by base64"):
        Webhook("not base64!")
