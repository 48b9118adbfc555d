"""Verifying the gateway's events, signed per the Standard Webhooks specification:
``webhook-signature: v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">``,
keyed with the bytes of the endpoint's ``whsec_<base64>`` secret. During a secret rotation the
gateway sends one signature per secret, space-separated; a receiver given several secrets
accepts a signature by any of them.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ._errors import WebhookVerificationError
from .types import EventObject, EventType

__all__ = ["Event", "EventType", "Webhook", "verify_webhook"]

DEFAULT_TOLERANCE_SECONDS = 5 * 60

#: An event, as delivered to webhook endpoints and listed by ``GET /v1/events``; ``id`` is also
#: the delivery's ``webhook-id``, the same on every attempt.
Event = EventObject


_BASE64 = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")


def _secret_key(secret: str) -> bytes:
    encoded = secret.removeprefix("whsec_")
    if not encoded or not _BASE64.match(encoded):
        raise ValueError("pixgw: a webhook secret is whsec_ followed by base64, as the endpoint's `secret` shows it.")
    return base64.b64decode(encoded)


def _header(headers: Mapping[str, str], name: str) -> str:
    value = headers.get(name)
    if value is None:
        value = next((v for k, v in headers.items() if k.lower() == name), None)
    if not value:
        raise WebhookVerificationError("missing_header", f"The {name} header is missing: is this a pixgw webhook?")
    return value


class Webhook:
    """Verifies deliveries to one endpoint.

    ``secrets``: the endpoint's ``whsec_…`` secret, or several during a rotation (the new one and
    the old one until its overlap ends). ``tolerance``: how far ``webhook-timestamp`` may be from
    now, in seconds.
    """

    def __init__(self, secrets: str | Sequence[str], *, tolerance: int = DEFAULT_TOLERANCE_SECONDS) -> None:
        secret_list = [secrets] if isinstance(secrets, str) else list(secrets)
        if not secret_list:
            raise ValueError("pixgw: Webhook needs at least one whsec_… secret.")
        self._keys = [_secret_key(s) for s in secret_list]
        self._tolerance = tolerance

    def verify(self, payload: bytes | str, headers: Mapping[str, str], *, now: float | None = None) -> Event:
        """Checks one delivery's signature and timestamp and returns its event.

        ``payload`` is the raw body exactly as received (re-serialised JSON does not match the
        signature); ``headers`` any mapping of the request's headers (case-insensitive lookup).
        Raises :class:`WebhookVerificationError` when anything does not check out.
        """
        msg_id = _header(headers, "webhook-id")
        timestamp = _header(headers, "webhook-timestamp")
        signatures = _header(headers, "webhook-signature")
        if not timestamp.isdigit():
            raise WebhookVerificationError("invalid_timestamp", f"webhook-timestamp {timestamp!r} is not Unix seconds.")
        skew = int(now if now is not None else time.time()) - int(timestamp)
        if skew > self._tolerance:
            raise WebhookVerificationError(
                "timestamp_too_old",
                f"The webhook was signed {skew} s ago, beyond the {self._tolerance} s tolerance: a replay, or a clock off.",
            )
        if -skew > self._tolerance:
            raise WebhookVerificationError(
                "timestamp_too_new",
                f"The webhook is signed {-skew} s in the future, beyond the {self._tolerance} s tolerance: check this machine's clock.",
            )
        body = payload.encode() if isinstance(payload, str) else payload
        signed = f"{msg_id}.{timestamp}.".encode() + body
        expected = [hmac.new(key, signed, hashlib.sha256).digest() for key in self._keys]
        if not any(self._matches(entry, expected) for entry in signatures.split(" ")):
            raise WebhookVerificationError(
                "no_matching_signature",
                "No webhook-signature matches this endpoint's secret(s): check the secret, and that the raw body is passed unchanged.",
            )
        try:
            event: Any = json.loads(body)
        except ValueError:
            raise WebhookVerificationError("invalid_payload", "The signed body is not JSON.") from None
        if not isinstance(event, dict) or not isinstance(event.get("id"), str) or not isinstance(event.get("type"), str):
            raise WebhookVerificationError("invalid_payload", "The signed body is not a pixgw event ({id, type, data}).")
        return event  # type: ignore[return-value]

    @staticmethod
    def _matches(entry: str, expected: list[bytes]) -> bool:
        version, _, value = entry.partition(",")
        if version != "v1" or not value:
            return False
        try:
            given = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return False
        return any(hmac.compare_digest(given, e) for e in expected)


def verify_webhook(
    payload: bytes | str,
    headers: Mapping[str, str],
    secrets: str | Sequence[str],
    *,
    tolerance: int = DEFAULT_TOLERANCE_SECONDS,
    now: float | None = None,
) -> Event:
    """One-call form of :meth:`Webhook.verify`."""
    return Webhook(secrets, tolerance=tolerance).verify(payload, headers, now=now)
