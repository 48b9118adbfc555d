"""What the sync and async clients share: settings parsed once, requests described as data, and
the retry policy.

Network errors, 429 and 5xx are retried with exponential backoff and jitter, or after
``Retry-After`` when the gateway sends one, always with the same ``Idempotency-Key``, so a
retried create can never make a second charge.
"""

from __future__ import annotations

import email.utils
import os
import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

from ._errors import PixgwError

VERSION = "0.1.0"

Environment = Literal["test", "live"]

#: ``safe``: reads, deletes, updates and creates the gateway deduplicates by key may be sent
#: again after any failure. ``unsafe``: only when the gateway certainly did nothing (429, a
#: refused connection).
RetryPolicy = Literal["safe", "unsafe"]

INITIAL_BACKOFF = 0.5
MAX_BACKOFF = 8.0


@dataclass(frozen=True)
class Settings:
    api_key: str
    base_url: str
    environment: Environment
    timeout: float
    max_retries: int
    max_retry_after: float

    @staticmethod
    def parse(
        api_key: str | None,
        base_url: str | None,
        timeout: float,
        max_retries: int,
        max_retry_after: float,
    ) -> Settings:
        api_key = api_key or os.environ.get("PIXGW_API_KEY")
        if not api_key:
            raise ValueError('pixgw: no API key. Pass api_key="pgw_test_…" or set PIXGW_API_KEY.')
        environment: Environment
        if api_key.startswith("pgw_test_"):
            environment = "test"
        elif api_key.startswith("pgw_live_"):
            environment = "live"
        else:
            raise ValueError(
                "pixgw: an API key starts with pgw_test_ or pgw_live_; this one does not. "
                "Copy it from the dashboard's API keys page."
            )
        base_url = base_url or os.environ.get("PIXGW_URL")
        if not base_url:
            raise ValueError('pixgw: no base URL. Pass base_url="https://pix.example.com" or set PIXGW_URL.')
        url = httpx.URL(base_url)
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError(f"pixgw: the base URL {base_url!r} is not an http(s) URL; use e.g. https://pix.example.com.")
        return Settings(
            api_key=api_key,
            base_url=str(url).rstrip("/"),
            environment=environment,
            timeout=timeout,
            max_retries=max_retries,
            max_retry_after=max_retry_after,
        )


@dataclass
class Call:
    """One API operation, as data: both clients send it the same way."""

    method: Literal["GET", "POST", "PATCH", "DELETE"]
    path: str
    retry: RetryPolicy
    query: dict[str, Any] = field(default_factory=dict)
    body: Any = None
    #: A create: gets an ``Idempotency-Key``.
    create: bool = False
    #: ``text`` for CSV; JSON otherwise.
    response: Literal["json", "text"] = "json"


def build_request(settings: Settings, call: Call, idempotency_key: str | None) -> dict[str, Any]:
    """Keyword arguments for ``httpx.Client.build_request``. The key is chosen here, once, so
    every retry of the call carries the same one."""
    headers = {
        "authorization": f"Bearer {settings.api_key}",
        "accept": "text/csv, application/json" if call.response == "text" else "application/json",
        "user-agent": f"pixgw-python/{VERSION}",
    }
    if call.create:
        headers["idempotency-key"] = idempotency_key or str(uuid.uuid4())
    request: dict[str, Any] = {
        "method": call.method,
        "url": settings.base_url + call.path,
        "headers": headers,
        "params": {k: _query_value(v) for k, v in call.query.items() if v is not None},
    }
    if call.body is not None:
        request["json"] = call.body
    return request


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse_response(call: Call, response: httpx.Response) -> Any:
    if call.response == "text":
        return response.text
    return response.json() if response.content else None


def backoff(attempt: int) -> float:
    """0.5 s, 1 s, 2 s … up to 8 s, each between half and all of it."""
    ceiling: float = min(MAX_BACKOFF, INITIAL_BACKOFF * 2.0**attempt)
    return ceiling / 2 + random.random() * ceiling / 2


def parse_retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds or as an HTTP date, in seconds from now."""
    if value is None or not value.strip():
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def retry_delay(settings: Settings, call: Call, error: PixgwError, attempt: int) -> float | None:
    """How long to wait before retrying after ``error``, or ``None`` when it must not be retried."""
    retryable = (
        # Rate limited: the gateway refused before doing anything.
        error.status == 429
        # The first request with this key is still running: its answer comes on a retry.
        or (error.status == 409 and error.code == "idempotency_key_in_use")
        # The gateway or the PSP failed; a stored (replayed) answer is final and would come back.
        or (error.status >= 500 and call.retry == "safe" and error.headers.get("idempotent-replayed") != "true")
    )
    if not retryable:
        return None
    after = parse_retry_after(error.headers.get("retry-after"))
    if after is None:
        return backoff(attempt)
    return after if after <= settings.max_retry_after else None


def connection_retryable(call: Call, error: httpx.TransportError) -> bool:
    """A refused connection never reached the gateway: safe to repeat whatever it was."""
    return call.retry == "safe" or isinstance(error, httpx.ConnectError)
