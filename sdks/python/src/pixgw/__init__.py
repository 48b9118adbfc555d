"""The official Python SDK of pixgw: one API for Pix charges across Brazilian PSPs.

>>> from pixgw import Pixgw
>>> pixgw = Pixgw(api_key="pgw_test_…", base_url="https://pix.example.com")
>>> charge = pixgw.charges.create(amount=1990, provider="efi")

:class:`Pixgw` is synchronous, :class:`AsyncPixgw` its asyncio twin; :class:`Webhook` verifies
signed deliveries. Every API error raises a :class:`PixgwError` subclass.
"""

from ._base import VERSION, Environment
from ._client import AsyncPixgw, Pixgw
from ._errors import (
    ApiError,
    AuthenticationError,
    IdempotencyError,
    InvalidRequestError,
    PermissionError,
    PixgwConnectionError,
    PixgwError,
    PixgwTimeoutError,
    PspError,
    RateLimitError,
    WebhookVerificationError,
)
from ._pagination import AsyncPage, Page
from .webhooks import Event, EventType, Webhook, verify_webhook

__version__ = VERSION

__all__ = [
    "VERSION",
    "ApiError",
    "AsyncPage",
    "AsyncPixgw",
    "AuthenticationError",
    "Environment",
    "Event",
    "EventType",
    "IdempotencyError",
    "InvalidRequestError",
    "Page",
    "PermissionError",
    "Pixgw",
    "PixgwConnectionError",
    "PixgwError",
    "PixgwTimeoutError",
    "PspError",
    "RateLimitError",
    "Webhook",
    "WebhookVerificationError",
    "verify_webhook",
]
