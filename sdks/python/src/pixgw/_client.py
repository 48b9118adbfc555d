"""The clients: :class:`Pixgw` (sync) and :class:`AsyncPixgw` (asyncio), one attribute per
resource of the API. Both describe each operation as a :class:`~pixgw._base.Call` and send it
with the same retry policy; only the transport differs."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Unpack, cast
from urllib.parse import quote

import httpx

from . import types as t
from ._base import Call, Environment, Settings, backoff, build_request, connection_retryable, parse_response, retry_delay
from ._errors import PixgwConnectionError, PixgwTimeoutError, error_from_response
from ._pagination import AsyncPage, Page
from .webhooks import Event

DEFAULT_TIMEOUT = 60.0  # seconds per attempt: a PSP call may take 45 s
DEFAULT_MAX_RETRIES = 2
DEFAULT_MAX_RETRY_AFTER = 60.0

# The waits between attempts; tests record them instead of sleeping.
_sleep = time.sleep
_async_sleep = asyncio.sleep


def _id(value: str) -> str:
    return quote(value, safe="")


def _no_answer(call: Call, error: httpx.TransportError, settings: Settings) -> PixgwConnectionError:
    if isinstance(error, httpx.TimeoutException):
        return PixgwTimeoutError(f"pixgw: {call.method} {call.path} got no answer within {settings.timeout} s.")
    return PixgwConnectionError(
        f"pixgw: {call.method} {call.path} failed before an answer arrived ({error!r}). "
        f"Is {settings.base_url} reachable?"
    )


# ---- operations, as data (shared by both clients) -------------------------------------------


def _list_call(path: str, params: dict[str, Any], cursor: str | None) -> Call:
    return Call("GET", path, "safe", query={**params, "starting_after": cursor})


def _get(path: str) -> Call:
    return Call("GET", path, "safe")


def _create_charge(params: t.CreateChargeRequest) -> Call:
    # The gateway keeps a charge's answer under its Idempotency-Key: a create is safe to retry.
    return Call("POST", "/v1/charges", "safe", body=dict(params), create=True)


# ---- sync -----------------------------------------------------------------------------------


class Pixgw:
    """The synchronous client.

    ``Pixgw(api_key="pgw_test_…", base_url="https://pix.example.com")``; both default to the
    ``PIXGW_API_KEY`` and ``PIXGW_URL`` environment variables. ``timeout`` is per attempt, in
    seconds; ``max_retries`` counts retries after the first attempt.
    """

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        max_retry_after: float = DEFAULT_MAX_RETRY_AFTER,
        http_client: httpx.Client | None = None,
    ) -> None:
        self._settings = Settings.parse(api_key, base_url, timeout, max_retries, max_retry_after)
        self._http = http_client or httpx.Client(timeout=timeout)
        self.charges = Charges(self)
        self.payment_links = PaymentLinks(self)
        self.credentials = Credentials(self)
        self.webhook_endpoints = WebhookEndpoints(self)
        self.events = Events(self)
        self.statement = Statement(self)

    @property
    def environment(self) -> Environment:
        """``test`` or ``live``, from the API key's prefix."""
        return self._settings.environment

    @property
    def base_url(self) -> str:
        return self._settings.base_url

    def usage(self) -> t.UsageObject:
        """The merchant's plan, its limits and this month's usage."""
        return cast(t.UsageObject, self._send(_get("/v1/usage")))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Pixgw:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _send(self, call: Call, idempotency_key: str | None = None, max_retries: int | None = None) -> Any:
        settings = self._settings
        request = self._http.build_request(**build_request(settings, call, idempotency_key))
        retries = settings.max_retries if max_retries is None else max_retries
        attempt = 0
        while True:
            try:
                response = self._http.send(request)
            except httpx.TransportError as error:
                if attempt < retries and connection_retryable(call, error):
                    _sleep(backoff(attempt))
                    attempt += 1
                    continue
                raise _no_answer(call, error, settings) from error
            if response.is_success:
                return parse_response(call, response)
            failure = error_from_response(response)
            delay = retry_delay(settings, call, failure, attempt) if attempt < retries else None
            if delay is None:
                raise failure
            _sleep(delay)
            attempt += 1

    def _page(self, path: str, params: dict[str, Any], cursor_key: str = "id") -> Page[Any]:
        start = params.pop("starting_after", None)

        def fetch(cursor: str | None) -> dict[str, Any]:
            return cast(dict[str, Any], self._send(_list_call(path, params, cursor)))

        return Page(fetch(start), fetch, lambda item: item[cursor_key])


class _Resource:
    def __init__(self, client: Pixgw) -> None:
        self._client = client


class Charges(_Resource):
    """``/v1/charges``."""

    def create(self, *, idempotency_key: str | None = None, max_retries: int | None = None, **params: Unpack[t.CreateChargeRequest]) -> t.ChargeObject:
        """Creates a charge: ``create(amount=1990, provider="efi", description=…, payer=…,
        expires_in=…, metadata=…)``. An ``Idempotency-Key`` is generated unless given (pass your
        order id to make it safe across restarts of your own process); retries use the same key,
        so the charge is created at most once."""
        call = _create_charge(params)
        return cast(t.ChargeObject, self._client._send(call, idempotency_key, max_retries))

    def retrieve(self, charge_id: str) -> t.ChargeObject:
        return cast(t.ChargeObject, self._client._send(_get(f"/v1/charges/{_id(charge_id)}")))

    def list(self, **params: Any) -> Page[t.ChargeObject]:
        """Newest first: ``limit``, ``status``, ``provider``, ``created_gte``, ``created_lt``,
        ``starting_after``. Iterate over the page for every charge of every page."""
        return cast(Page[t.ChargeObject], self._client._page("/v1/charges", params))

    def cancel(self, charge_id: str) -> t.ChargeObject:
        # Canceling twice asks for the same final state: safe to retry.
        call = Call("POST", f"/v1/charges/{_id(charge_id)}/cancel", "safe")
        return cast(t.ChargeObject, self._client._send(call))


class PaymentLinks(_Resource):
    """``/v1/payment_links``."""

    def create(self, *, idempotency_key: str | None = None, **params: Unpack[t.CreatePaymentLinkRequest]) -> t.PaymentLinkObject:
        call = Call("POST", "/v1/payment_links", "unsafe", body=params, create=True)
        return cast(t.PaymentLinkObject, self._client._send(call, idempotency_key))

    def retrieve(self, link_id: str) -> t.PaymentLinkObject:
        return cast(t.PaymentLinkObject, self._client._send(_get(f"/v1/payment_links/{_id(link_id)}")))

    def list(self, **params: Any) -> Page[t.PaymentLinkObject]:
        return cast(Page[t.PaymentLinkObject], self._client._page("/v1/payment_links", params))

    def update(self, link_id: str, **params: Unpack[t.UpdatePaymentLinkRequest]) -> t.PaymentLinkObject:
        call = Call("PATCH", f"/v1/payment_links/{_id(link_id)}", "safe", body=params)
        return cast(t.PaymentLinkObject, self._client._send(call))

    def deactivate(self, link_id: str) -> t.PaymentLinkObject:
        call = Call("POST", f"/v1/payment_links/{_id(link_id)}/deactivate", "safe")
        return cast(t.PaymentLinkObject, self._client._send(call))


class Credentials(_Resource):
    """``/v1/credentials``: the merchant's accounts at PSPs."""

    def create(self, *, idempotency_key: str | None = None, **params: Unpack[t.CreateCredentialRequest]) -> t.CredentialObject:
        call = Call("POST", "/v1/credentials", "unsafe", body=params, create=True)
        return cast(t.CredentialObject, self._client._send(call, idempotency_key))

    def retrieve(self, credential_id: str) -> t.CredentialObject:
        return cast(t.CredentialObject, self._client._send(_get(f"/v1/credentials/{_id(credential_id)}")))

    def list(self) -> list[t.CredentialObject]:
        """In routing order; not paginated (a merchant has a handful)."""
        return cast(list[t.CredentialObject], self._client._send(_get("/v1/credentials"))["data"])

    def update(self, credential_id: str, **params: Unpack[t.UpdateCredentialRequest]) -> t.CredentialObject:
        call = Call("PATCH", f"/v1/credentials/{_id(credential_id)}", "safe", body=params)
        return cast(t.CredentialObject, self._client._send(call))

    def delete(self, credential_id: str) -> t.Deleted:
        return cast(t.Deleted, self._client._send(Call("DELETE", f"/v1/credentials/{_id(credential_id)}", "safe")))


class WebhookEndpoints(_Resource):
    """``/v1/webhook_endpoints``: where the gateway delivers signed events."""

    def create(self, *, idempotency_key: str | None = None, **params: Unpack[t.CreateEndpointRequest]) -> t.EndpointObject:
        """The answer's ``secret`` (``whsec_…``) is shown once: keep it to verify deliveries."""
        call = Call("POST", "/v1/webhook_endpoints", "unsafe", body=params, create=True)
        return cast(t.EndpointObject, self._client._send(call, idempotency_key))

    def retrieve(self, endpoint_id: str) -> t.EndpointObject:
        return cast(t.EndpointObject, self._client._send(_get(f"/v1/webhook_endpoints/{_id(endpoint_id)}")))

    def list(self) -> list[t.EndpointObject]:
        return cast(list[t.EndpointObject], self._client._send(_get("/v1/webhook_endpoints"))["data"])

    def update(self, endpoint_id: str, **params: Unpack[t.UpdateEndpointRequest]) -> t.EndpointObject:
        call = Call("PATCH", f"/v1/webhook_endpoints/{_id(endpoint_id)}", "safe", body=params)
        return cast(t.EndpointObject, self._client._send(call))

    def delete(self, endpoint_id: str) -> t.Deleted:
        return cast(t.Deleted, self._client._send(Call("DELETE", f"/v1/webhook_endpoints/{_id(endpoint_id)}", "safe")))

    def rotate_secret(self, endpoint_id: str, **params: Unpack[t.RotateSecretRequest]) -> t.EndpointObject:
        """A new secret; the old one keeps signing for ``overlap_seconds`` (default a day). Not
        retried after an ambiguous failure: a second rotation would end the first one's secret."""
        call = Call("POST", f"/v1/webhook_endpoints/{_id(endpoint_id)}/rotate_secret", "unsafe", body=params)
        return cast(t.EndpointObject, self._client._send(call))


class Events(_Resource):
    """``/v1/events``: every event of the merchant's charges, with its deliveries."""

    def retrieve(self, event_id: str) -> Event:
        """The event with its ``deliveries`` and every attempt."""
        return cast(Event, self._client._send(_get(f"/v1/events/{_id(event_id)}")))

    def list(self, **params: Any) -> Page[Event]:
        """Newest first; filter by ``type`` or ``charge``."""
        return cast(Page[Event], self._client._page("/v1/events", params))

    def redeliver(self, event_id: str) -> t.Redelivery:
        call = Call("POST", f"/v1/events/{_id(event_id)}/redeliver", "unsafe")
        return cast(t.Redelivery, self._client._send(call))


class Statement(_Resource):
    """``/v1/statement``: paid charges by payment time, in São Paulo days."""

    def list(self, **params: Any) -> Page[t.StatementLineObject]:
        """Newest payment first; ``page.response["totals"]`` covers the whole filter."""
        return cast(Page[t.StatementLineObject], self._client._page("/v1/statement", params, "charge_id"))

    def csv(self, **params: Any) -> str:
        """The CSV Brazilian spreadsheets open (UTF-8 with BOM, ``;`` between fields)."""
        return cast(str, self._client._send(Call("GET", "/v1/statement.csv", "safe", query=params, response="text")))


# ---- async ----------------------------------------------------------------------------------


class AsyncPixgw:
    """The asyncio client: the same resources as :class:`Pixgw`, every call awaited."""

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        max_retry_after: float = DEFAULT_MAX_RETRY_AFTER,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self._settings = Settings.parse(api_key, base_url, timeout, max_retries, max_retry_after)
        self._http = http_client or httpx.AsyncClient(timeout=timeout)
        self.charges = AsyncCharges(self)
        self.payment_links = AsyncPaymentLinks(self)
        self.credentials = AsyncCredentials(self)
        self.webhook_endpoints = AsyncWebhookEndpoints(self)
        self.events = AsyncEvents(self)
        self.statement = AsyncStatement(self)

    @property
    def environment(self) -> Environment:
        return self._settings.environment

    @property
    def base_url(self) -> str:
        return self._settings.base_url

    async def usage(self) -> t.UsageObject:
        return cast(t.UsageObject, await self._send(_get("/v1/usage")))

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncPixgw:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def _send(self, call: Call, idempotency_key: str | None = None, max_retries: int | None = None) -> Any:
        settings = self._settings
        request = self._http.build_request(**build_request(settings, call, idempotency_key))
        retries = settings.max_retries if max_retries is None else max_retries
        attempt = 0
        while True:
            try:
                response = await self._http.send(request)
            except httpx.TransportError as error:
                if attempt < retries and connection_retryable(call, error):
                    await _async_sleep(backoff(attempt))
                    attempt += 1
                    continue
                raise _no_answer(call, error, settings) from error
            if response.is_success:
                return parse_response(call, response)
            failure = error_from_response(response)
            delay = retry_delay(settings, call, failure, attempt) if attempt < retries else None
            if delay is None:
                raise failure
            await _async_sleep(delay)
            attempt += 1

    async def _page(self, path: str, params: dict[str, Any], cursor_key: str = "id") -> AsyncPage[Any]:
        start = params.pop("starting_after", None)

        async def fetch(cursor: str | None) -> dict[str, Any]:
            return cast(dict[str, Any], await self._send(_list_call(path, params, cursor)))

        return AsyncPage(await fetch(start), fetch, lambda item: item[cursor_key])


class _AsyncResource:
    def __init__(self, client: AsyncPixgw) -> None:
        self._client = client


class AsyncCharges(_AsyncResource):
    async def create(self, *, idempotency_key: str | None = None, max_retries: int | None = None, **params: Unpack[t.CreateChargeRequest]) -> t.ChargeObject:
        call = _create_charge(params)
        return cast(t.ChargeObject, await self._client._send(call, idempotency_key, max_retries))

    async def retrieve(self, charge_id: str) -> t.ChargeObject:
        return cast(t.ChargeObject, await self._client._send(_get(f"/v1/charges/{_id(charge_id)}")))

    async def list(self, **params: Any) -> AsyncPage[t.ChargeObject]:
        return cast(AsyncPage[t.ChargeObject], await self._client._page("/v1/charges", params))

    async def cancel(self, charge_id: str) -> t.ChargeObject:
        call = Call("POST", f"/v1/charges/{_id(charge_id)}/cancel", "safe")
        return cast(t.ChargeObject, await self._client._send(call))


class AsyncPaymentLinks(_AsyncResource):
    async def create(self, *, idempotency_key: str | None = None, **params: Unpack[t.CreatePaymentLinkRequest]) -> t.PaymentLinkObject:
        call = Call("POST", "/v1/payment_links", "unsafe", body=params, create=True)
        return cast(t.PaymentLinkObject, await self._client._send(call, idempotency_key))

    async def retrieve(self, link_id: str) -> t.PaymentLinkObject:
        return cast(t.PaymentLinkObject, await self._client._send(_get(f"/v1/payment_links/{_id(link_id)}")))

    async def list(self, **params: Any) -> AsyncPage[t.PaymentLinkObject]:
        return cast(AsyncPage[t.PaymentLinkObject], await self._client._page("/v1/payment_links", params))

    async def update(self, link_id: str, **params: Unpack[t.UpdatePaymentLinkRequest]) -> t.PaymentLinkObject:
        call = Call("PATCH", f"/v1/payment_links/{_id(link_id)}", "safe", body=params)
        return cast(t.PaymentLinkObject, await self._client._send(call))

    async def deactivate(self, link_id: str) -> t.PaymentLinkObject:
        call = Call("POST", f"/v1/payment_links/{_id(link_id)}/deactivate", "safe")
        return cast(t.PaymentLinkObject, await self._client._send(call))


class AsyncCredentials(_AsyncResource):
    async def create(self, *, idempotency_key: str | None = None, **params: Unpack[t.CreateCredentialRequest]) -> t.CredentialObject:
        call = Call("POST", "/v1/credentials", "unsafe", body=params, create=True)
        return cast(t.CredentialObject, await self._client._send(call, idempotency_key))

    async def retrieve(self, credential_id: str) -> t.CredentialObject:
        return cast(t.CredentialObject, await self._client._send(_get(f"/v1/credentials/{_id(credential_id)}")))

    async def list(self) -> list[t.CredentialObject]:
        return cast(list[t.CredentialObject], (await self._client._send(_get("/v1/credentials")))["data"])

    async def update(self, credential_id: str, **params: Unpack[t.UpdateCredentialRequest]) -> t.CredentialObject:
        call = Call("PATCH", f"/v1/credentials/{_id(credential_id)}", "safe", body=params)
        return cast(t.CredentialObject, await self._client._send(call))

    async def delete(self, credential_id: str) -> t.Deleted:
        return cast(t.Deleted, await self._client._send(Call("DELETE", f"/v1/credentials/{_id(credential_id)}", "safe")))


class AsyncWebhookEndpoints(_AsyncResource):
    async def create(self, *, idempotency_key: str | None = None, **params: Unpack[t.CreateEndpointRequest]) -> t.EndpointObject:
        call = Call("POST", "/v1/webhook_endpoints", "unsafe", body=params, create=True)
        return cast(t.EndpointObject, await self._client._send(call, idempotency_key))

    async def retrieve(self, endpoint_id: str) -> t.EndpointObject:
        return cast(t.EndpointObject, await self._client._send(_get(f"/v1/webhook_endpoints/{_id(endpoint_id)}")))

    async def list(self) -> list[t.EndpointObject]:
        return cast(list[t.EndpointObject], (await self._client._send(_get("/v1/webhook_endpoints")))["data"])

    async def update(self, endpoint_id: str, **params: Unpack[t.UpdateEndpointRequest]) -> t.EndpointObject:
        call = Call("PATCH", f"/v1/webhook_endpoints/{_id(endpoint_id)}", "safe", body=params)
        return cast(t.EndpointObject, await self._client._send(call))

    async def delete(self, endpoint_id: str) -> t.Deleted:
        return cast(t.Deleted, await self._client._send(Call("DELETE", f"/v1/webhook_endpoints/{_id(endpoint_id)}", "safe")))

    async def rotate_secret(self, endpoint_id: str, **params: Unpack[t.RotateSecretRequest]) -> t.EndpointObject:
        call = Call("POST", f"/v1/webhook_endpoints/{_id(endpoint_id)}/rotate_secret", "unsafe", body=params)
        return cast(t.EndpointObject, await self._client._send(call))


class AsyncEvents(_AsyncResource):
    async def retrieve(self, event_id: str) -> Event:
        return cast(Event, await self._client._send(_get(f"/v1/events/{_id(event_id)}")))

    async def list(self, **params: Any) -> AsyncPage[Event]:
        return cast(AsyncPage[Event], await self._client._page("/v1/events", params))

    async def redeliver(self, event_id: str) -> t.Redelivery:
        call = Call("POST", f"/v1/events/{_id(event_id)}/redeliver", "unsafe")
        return cast(t.Redelivery, await self._client._send(call))


class AsyncStatement(_AsyncResource):
    async def list(self, **params: Any) -> AsyncPage[t.StatementLineObject]:
        return cast(AsyncPage[t.StatementLineObject], await self._client._page("/v1/statement", params, "charge_id"))

    async def csv(self, **params: Any) -> str:
        call = Call("GET", "/v1/statement.csv", "safe", query=params, response="text")
        return cast(str, await self._client._send(call))
