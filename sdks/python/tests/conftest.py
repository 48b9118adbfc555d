"""What the suite needs around the SDK: a gateway and PSP simulator, the simulator's control API,
a local webhook receiver, and polling with a deadline.

The gateway is the one named by ``PIXGW_URL``, ``PIXGW_API_KEY`` and ``PSP_SIM_URL`` (as ``cargo
xtask sdk-test`` sets them from its demo); without them, ``cargo xtask demo`` is started here on
free ports, in a directory of its own, and stopped when the session ends.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

REPO = Path(__file__).resolve().parents[3]
T = TypeVar("T")


def eventually(what: str, probe: Callable[[], T | None], timeout: float = 60.0) -> T:
    """Polls ``probe`` until it returns something other than None, or fails at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value is not None:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.1)


@dataclass
class Gateway:
    url: str
    api_key: str
    sim_url: str


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _parse_env(path: Path) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    return {k: v.strip() for k, v in pairs}


@pytest.fixture(scope="session")
def gateway() -> Iterator[Gateway]:
    url, key, sim = (os.environ.get(n) for n in ("PIXGW_URL", "PIXGW_API_KEY", "PSP_SIM_URL"))
    if url and key and sim:
        yield Gateway(url, key, sim)
        return
    directory = Path(tempfile.mkdtemp(prefix="pixgw-sdk-py-"))
    env = {
        **os.environ,
        "PIXGW_DEMO_DIR": str(directory),
        "PIXGW_LISTEN": f"127.0.0.1:{_free_port()}",
        "PSP_SIM_ADDR": f"127.0.0.1:{_free_port()}",
    }
    # A session of its own: the gateway and simulator it starts end with its process group.
    demo = subprocess.Popen(
        ["cargo", "xtask", "demo"], cwd=REPO, env=env, stdout=subprocess.DEVNULL, start_new_session=True
    )
    try:
        env_file = directory / "demo.env"

        def up() -> bool | None:
            if demo.poll() is not None:
                raise RuntimeError(f"cargo xtask demo exited with {demo.returncode} before it was up")
            return True if env_file.exists() else None

        eventually("cargo xtask demo to write demo.env", up, timeout=30 * 60)
        time.sleep(0.1)  # written in one call: whole after a beat
        values = _parse_env(env_file)
        yield Gateway(values["PIXGW_URL"], values["PIXGW_API_KEY"], values["PSP_SIM_URL"])
    finally:
        try:
            os.killpg(demo.pid, signal.SIGTERM)
            demo.wait(timeout=15)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(demo.pid, signal.SIGKILL)
            demo.wait()


class Simulator:
    """The PSP simulator's control API."""

    def __init__(self, url: str) -> None:
        self._http = httpx.Client(base_url=url, timeout=30)

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        response = self._http.request(method, path, json=body)
        assert response.is_success, f"{method} {path} at the simulator: {response.status_code} {response.text}"
        return response.json() if response.content else None

    def pay(self, provider: str, reference: str) -> Any:
        return self._call("POST", "/_sim/pay", {"provider": provider, "reference": reference})

    def faults(self, **body: Any) -> Any:
        return self._call("POST", "/_sim/faults", body)

    def charges(self, provider: str) -> list[Any]:
        return list(self._call("GET", f"/_sim/charges?provider={provider}"))


@pytest.fixture(scope="session")
def sim(gateway: Gateway) -> Simulator:
    return Simulator(gateway.sim_url)


@dataclass
class Delivery:
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """A local HTTP server recording every delivery."""

    url: str
    deliveries: list[Delivery] = field(default_factory=list)


@pytest.fixture(scope="session")
def receiver_factory() -> Iterator[Callable[[], Receiver]]:
    servers: list[ThreadingHTTPServer] = []

    def make() -> Receiver:
        receiver = Receiver(url="")

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("content-length", "0"))
                body = self.rfile.read(length)
                receiver.deliveries.append(Delivery({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *_: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        receiver.url = f"http://127.0.0.1:{server.server_address[1]}/pixgw-events"
        return receiver

    yield make
    for server in servers:
        server.shutdown()
