"""The SDK's errors.

Every answer of the API that is not a success raises a :class:`PixgwError` subclass chosen by
the API's ``error.type``, carrying its fields as they came; a request that got no answer raises
:class:`PixgwConnectionError`.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import httpx


class PixgwError(Exception):
    """An error answer of the API (any status from 400 up)."""

    def __init__(self, status: int, body: dict[str, Any], headers: httpx.Headers) -> None:
        super().__init__(body.get("message", ""))
        self.status: int = status
        #: The API's ``error.type``, e.g. ``invalid_request_error``, ``psp_error``.
        self.type: str = body.get("type", "")
        #: The API's stable ``error.code``, e.g. ``parameter_invalid``.
        self.code: str = body.get("code", "")
        self.message: str = body.get("message", "")
        #: The request parameter at fault, e.g. ``payer.document``.
        self.param: str | None = body.get("param")
        #: What usually fixes it, in plain words.
        self.hint: str | None = body.get("hint")
        #: The id of the request: quote it to support.
        self.request_id: str | None = body.get("request_id") or headers.get("x-request-id")
        #: The PSP involved, for PSP errors.
        self.provider: str | None = body.get("provider")
        #: The PSP's own message, verbatim.
        self.psp_message: str | None = body.get("psp_message")
        #: The PSP's own error code, when it gave one.
        self.psp_code: str | None = body.get("psp_code")
        #: The whole ``error`` object, with fields this SDK version does not name.
        self.body: dict[str, Any] = body
        self.headers: httpx.Headers = headers

    def __str__(self) -> str:
        text = f"{self.status} {self.code}: {self.message}"
        if self.psp_message:
            text += f" (PSP said: {self.psp_message})"
        if self.hint:
            text += f" Hint: {self.hint}"
        if self.request_id:
            text += f" [request {self.request_id}]"
        return text


class InvalidRequestError(PixgwError):
    """400, 404, 413, 422: the request is malformed or names something that does not exist."""


class AuthenticationError(PixgwError):
    """401: no valid API key."""


class PermissionError(PixgwError):  # noqa: A001 - the API's own name for the family
    """403: the key may not do this, or the plan does not allow it (``plan_limit_reached``)."""


class IdempotencyError(PixgwError):
    """409, 422: an ``Idempotency-Key`` still in use, or reused with another request."""


class RateLimitError(PixgwError):
    """429: too many requests."""

    @property
    def retry_after_seconds(self) -> float | None:
        try:
            return float(self.headers.get("retry-after", ""))
        except ValueError:
            return None


class PspError(PixgwError):
    """502: the PSP refused or failed; ``psp_message`` is its own words, ``hint`` the remedy."""


class ApiError(PixgwError):
    """500, 503: something failed inside the gateway."""


_BY_TYPE: dict[str, type[PixgwError]] = {
    "invalid_request_error": InvalidRequestError,
    "authentication_error": AuthenticationError,
    "permission_error": PermissionError,
    "idempotency_error": IdempotencyError,
    "rate_limit_error": RateLimitError,
    "psp_error": PspError,
    "api_error": ApiError,
}


def error_from_response(response: httpx.Response) -> PixgwError:
    """The error for an answer: its class from ``error.type``, or from the status otherwise."""
    body: dict[str, Any] | None = None
    try:
        parsed = json.loads(response.content)
        if isinstance(parsed, dict) and isinstance(parsed.get("error"), dict):
            body = parsed["error"]
    except ValueError:
        pass  # Not JSON (a proxy's page): described from the status below.
    if body is None or not isinstance(body.get("message"), str):
        status = response.status_code
        kind = "rate_limit_error" if status == 429 else "api_error" if status >= 500 else "invalid_request_error"
        excerpt = response.text.strip()[:200]
        body = {
            "type": kind,
            "code": f"http_{status}",
            "message": f"The server answered HTTP {status} without a pixgw error body"
            + (f": {excerpt}" if excerpt else "")
            + ". Check the base URL points at a pixgw gateway.",
        }
    return _BY_TYPE.get(body.get("type", ""), PixgwError)(response.status_code, body, response.headers)


class PixgwConnectionError(Exception):
    """The request got no answer: the gateway was unreachable, the connection broke, or it timed out."""


class PixgwTimeoutError(PixgwConnectionError):
    """No answer within the client's timeout."""


class WebhookVerificationError(Exception):
    """A webhook whose signature, timestamp or body does not check out: answer 400 and ignore it."""

    def __init__(
        self,
        reason: Literal[
            "missing_header",
            "invalid_timestamp",
            "timestamp_too_old",
            "timestamp_too_new",
            "no_matching_signature",
            "invalid_payload",
        ],
        message: str,
    ) -> None:
        super().__init__(message)
        #: Why, as a stable code.
        self.reason = reason
