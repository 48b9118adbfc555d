"""The SDK against a real gateway and PSP simulator (see conftest.py for which): charges through
efi and ``random`` paid at the simulator with their signed webhooks verified, pagination (sync and
async), retry-with-the-same-key against an injected fault, typed errors, secret rotation, the
generated types against the gateway's OpenAPI document, and the README's quick start."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from pixgw import (
    AsyncPixgw,
    AuthenticationError,
    Event,
    InvalidRequestError,
    Pixgw,
    PspError,
    Webhook,
)

from .conftest import Gateway, Receiver, Simulator, eventually

PACKAGE = Path(__file__).resolve().parents[1]
# A CPF with valid check digits: every PSP of `random` takes it (some require one).
PAYER = {"name": "Maria Silva", "email": "maria@example.com", "document": "529.982.247-25"}


@pytest.fixture(scope="module")
def pix(gateway: Gateway) -> Iterator[Pixgw]:
    with Pixgw(gateway.api_key, gateway.url) as client:
        yield client


@pytest.fixture(scope="module")
def endpoint(pix: Pixgw, receiver_factory: Callable[[], Receiver]) -> Iterator[tuple[Receiver, str]]:
    receiver = receiver_factory()
    created = pix.webhook_endpoints.create(
        url=receiver.url,
        events=["charge.created", "charge.paid", "charge.canceled"],
        description="python sdk suite",
    )
    yield receiver, created["secret"]  # type: ignore[typeddict-item]
    pix.webhook_endpoints.delete(created["id"])


def delivered(endpoint: tuple[Receiver, str], kind: str, charge_id: str) -> Event:
    receiver, secret = endpoint
    hook = Webhook(secret)

    def find() -> Event | None:
        for d in list(receiver.deliveries):
            event = hook.verify(d.body, d.headers)
            if event["type"] == kind and event["data"]["object"]["id"] == charge_id:
                assert event["id"] == d.headers["webhook-id"]
                return event
        return None

    return eventually(f"{kind} for {charge_id}", find)


def test_an_efi_charge_paid_at_the_simulator_arrives_as_a_verified_event(
    pix: Pixgw, sim: Simulator, endpoint: tuple[Receiver, str]
) -> None:
    assert pix.environment == "test"
    charge = pix.charges.create(amount=1990, provider="efi", description="SDK efi", metadata={"order": "py-1"})
    assert (charge["status"], charge["provider"], charge["amount"]) == ("pending", "efi", 1990)
    assert (charge["pix"]["copy_paste"] or "").startswith("000201")
    assert charge["metadata"] == {"order": "py-1"}
    assert pix.charges.retrieve(charge["id"])["id"] == charge["id"]

    sim.pay("efi", charge["reference"])
    event = delivered(endpoint, "charge.paid", charge["id"])
    assert event["livemode"] is False
    assert event["data"]["object"]["status"] == "paid"
    assert event["data"]["object"]["amount_paid"] == 1990
    assert pix.charges.retrieve(charge["id"])["status"] == "paid"

    statement = pix.statement.list(provider="efi", limit=100)
    assert any(line["charge_id"] == charge["id"] for line in statement.data)
    assert statement.response["totals"]["count"] >= 1
    csv = pix.statement.csv(provider="efi")
    assert csv.startswith("\ufeff"), "the byte-order mark Excel needs is kept"
    assert charge["id"] in csv


async def test_a_random_charge_paid_at_the_psp_chosen_arrives_verified(
    gateway: Gateway, sim: Simulator, endpoint: tuple[Receiver, str]
) -> None:
    async with AsyncPixgw(gateway.api_key, gateway.url) as pix:
        charge = await pix.charges.create(amount=2500, provider="random", payer=PAYER)  # type: ignore[typeddict-item]
        routing: Any = charge.get("routing")
        assert routing["mode"] == "round_robin"
        assert routing["selected_provider"] == charge["provider"]
        sim.pay(charge["provider"], charge["reference"])
        event = delivered(endpoint, "charge.paid", charge["id"])
        assert event["data"]["object"]["provider"] == charge["provider"]
        assert (await pix.charges.retrieve(charge["id"]))["status"] == "paid"


def test_cancel(pix: Pixgw, endpoint: tuple[Receiver, str]) -> None:
    charge = pix.charges.create(amount=700, provider="efi")
    assert pix.charges.cancel(charge["id"])["status"] == "canceled"
    assert delivered(endpoint, "charge.canceled", charge["id"])["data"]["object"]["status"] == "canceled"


async def test_lists_paginate_newest_first_sync_and_async(gateway: Gateway, pix: Pixgw) -> None:
    since = (datetime.now(UTC) - timedelta(seconds=1)).isoformat().replace("+00:00", "Z")
    made = [pix.charges.create(amount=100 + i, provider="efi")["id"] for i in range(5)]

    page = pix.charges.list(limit=2, created_gte=since)
    assert len(page.data) == 2 and page.has_more
    second = page.next_page()
    assert second is not None and len(second.data) == 2
    assert not {c["id"] for c in second.data} & {c["id"] for c in page.data}

    seen = [c["id"] for c in pix.charges.list(limit=2, created_gte=since)]
    assert len(set(seen)) == len(seen), "no charge twice"
    assert [i for i in seen if i in made] == made[::-1], "all five, newest first"

    async with AsyncPixgw(gateway.api_key, gateway.url) as apix:
        first = await apix.charges.list(limit=2, created_gte=since)
        seen_async = [c["id"] async for c in first]
    assert seen_async == seen

    events = list(pix.events.list(charge=made[0], limit=1))
    assert [e["type"] for e in events] == ["charge.created"]


def test_a_create_whose_psp_reply_was_lost_is_retried_with_the_same_key(pix: Pixgw, sim: Simulator) -> None:
    before = len(sim.charges("efi"))
    sim.faults(provider="efi", drop_reply_after_create=1)
    charge = pix.charges.create(amount=4321, provider="efi")
    assert charge["status"] == "pending"
    assert len(sim.charges("efi")) == before + 1, "a retry with another key would have made a second charge"


async def test_without_retries_the_psp_error_is_typed_and_the_same_key_finds_the_charge(
    gateway: Gateway, sim: Simulator
) -> None:
    before = len(sim.charges("efi"))
    sim.faults(provider="efi", drop_reply_after_create=1)
    key = f"py-lost-{time.time_ns()}"
    async with AsyncPixgw(gateway.api_key, gateway.url) as pix:
        with pytest.raises(PspError) as caught:
            await pix.charges.create(amount=4322, provider="efi", idempotency_key=key, max_retries=0)
        e = caught.value
        assert (e.status, e.type, e.code) == (502, "psp_error", "psp_outcome_unknown")
        assert "same Idempotency-Key" in (e.hint or "")
        assert (e.request_id or "").startswith("req_")
        charge = await pix.charges.create(amount=4322, provider="efi", idempotency_key=key)
        assert charge["amount"] == 4322
    assert len(sim.charges("efi")) == before + 1


def test_a_parameter_error_names_the_parameter_and_the_request(pix: Pixgw, gateway: Gateway) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        pix.charges.create(amount=0, provider="efi")
    e = caught.value
    assert (e.status, e.type, e.code, e.param) == (400, "invalid_request_error", "parameter_invalid", "amount")
    assert (e.request_id or "").startswith("req_")
    with pytest.raises(AuthenticationError) as unknown:
        Pixgw("pgw_test_unknownunknownunknown", gateway.url).charges.list()
    assert unknown.value.status == 401
    with pytest.raises(InvalidRequestError) as missing:
        pix.charges.retrieve("chg_doesnotexist")
    assert (missing.value.status, missing.value.code) == (404, "resource_missing")


def test_a_rotated_secret_signs_with_both(pix: Pixgw, receiver_factory: Callable[[], Receiver]) -> None:
    receiver = receiver_factory()
    created = pix.webhook_endpoints.create(url=receiver.url, events=["charge.created"])
    old = created["secret"]  # type: ignore[typeddict-item]
    assert old.startswith("whsec_")
    assert any(e["id"] == created["id"] for e in pix.webhook_endpoints.list())
    new = pix.webhook_endpoints.rotate_secret(created["id"], overlap_seconds=3600)["secret"]  # type: ignore[typeddict-item]
    assert new != old
    charge = pix.charges.create(amount=555, provider="efi")
    delivery = eventually(
        "charge.created after the rotation",
        lambda: next((d for d in receiver.deliveries if json.loads(d.body)["data"]["object"]["id"] == charge["id"]), None),
    )
    assert len(delivery.headers["webhook-signature"].split(" ")) == 2
    for secrets in (old, new, [new, old]):
        assert Webhook(secrets).verify(delivery.body, delivery.headers)["data"]["object"]["id"] == charge["id"]
    pix.webhook_endpoints.delete(created["id"])


def test_credentials_and_usage(pix: Pixgw) -> None:
    efi = next(c for c in pix.credentials.list() if c["provider"] == "efi")
    assert pix.credentials.retrieve(efi["id"])["id"] == efi["id"]
    assert isinstance(pix.usage()["plan"], dict)


def test_the_generated_types_match_the_gateways_document(gateway: Gateway) -> None:
    result = subprocess.run(
        [sys.executable, str(PACKAGE / "scripts" / "generate_types.py"), "--check"],
        env={**os.environ, "PIXGW_URL": gateway.url},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr


def test_the_readme_quick_start_runs_as_written(gateway: Gateway) -> None:
    readme = (PACKAGE / "README.md").read_text()
    match = re.search(r"## Quick start.*?```python\n(.*?)```", readme, re.S)
    assert match, "README has a ```python block under ## Quick start"
    result = subprocess.run(
        [sys.executable, "-c", match.group(1)],
        env={**os.environ, "PIXGW_URL": gateway.url, "PIXGW_API_KEY": gateway.api_key},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert re.search(r"chg_\w+ pending", result.stdout), result.stdout
