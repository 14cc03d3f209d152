"""Test hosts on one machine: Linux network namespaces on a private bridge.

`Network` makes a switch (a namespace holding only a bridge) and attaches hosts to it,
each a namespace with `lo` and `eth0` at `<subnet>.<n>/24`, joined to the switch by a
veth pair created inside the namespaces: nothing appears in the machine's own network
namespace, so the hosts reach each other and their own loopback, and nothing else (no
route leaves the bridge). Names carry a token unique to the run. `close` (also on
leaving the `with` block, even after a failure) kills every process still running in
a host and deletes the namespaces, which takes their interfaces with them. Needs root
and iproute2; `unavailable()` says why not, for a skip.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType

# A private range no test machine is expected to use; the hosts never leave the bridge.
SUBNET = "10.231.14"


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check,
                          timeout=30)


def unavailable() -> str | None:
    """Why network namespaces cannot be made here, or None when they can."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed"
    probe = f"sl{secrets.token_hex(3)}-probe"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"`ip netns add` failed: {made.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


@dataclass(frozen=True)
class Host:
    """One namespace on the bridge."""

    netns: str
    ip: str

    def command(self, argv: Sequence[str]) -> list[str]:
        """`argv` run inside this host (environment and working folder are kept)."""
        return ["ip", "netns", "exec", self.netns, *argv]

    def pids(self) -> list[int]:
        """Every process running in this host."""
        out = _ip("netns", "pids", self.netns, check=False).stdout
        return [int(p) for p in out.split()]

    def kill_all(self) -> None:
        """SIGKILL every process in the host at once: the machine dies."""
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


class Network:
    """A bridge and the hosts on it; see the module docstring."""

    def __init__(self, subnet: str = SUBNET) -> None:
        self.subnet = subnet
        self.token = secrets.token_hex(3)
        self.switch = f"sl{self.token}-switch"
        self.hosts: list[Host] = []
        self._made: list[str] = []
        try:
            self._add_netns(self.switch)
            _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
            _ip("-n", self.switch, "link", "set", "br0", "up")
        except BaseException:
            self.close()
            raise

    def _add_netns(self, name: str) -> None:
        _ip("netns", "add", name)
        self._made.append(name)

    def add(self, role: str) -> Host:
        """A new host named after its role, at the next address."""
        n = len(self.hosts) + 2
        host = Host(f"sl{self.token}-{role}", f"{self.subnet}.{n}")
        self._add_netns(host.netns)
        port = f"p{n}"  # the switch's end, named inside the switch's namespace
        _ip("link", "add", "eth0", "netns", host.netns, "type", "veth", "peer", "name", port,
            "netns", self.switch)
        _ip("-n", self.switch, "link", "set", port, "master", "br0")
        _ip("-n", self.switch, "link", "set", port, "up")
        _ip("-n", host.netns, "addr", "add", f"{host.ip}/24", "dev", "eth0")
        for dev in ("lo", "eth0"):
            _ip("-n", host.netns, "link", "set", dev, "up")
        self.hosts.append(host)
        return host

    def close(self) -> None:
        """Kill what still runs in the hosts, then delete every namespace."""
        for host in self.hosts:
            host.kill_all()
        deadline = time.monotonic() + 10
        while any(h.pids() for h in self.hosts) and time.monotonic() < deadline:
            time.sleep(0.1)
        for name in reversed(self._made):
            _ip("netns", "del", name, check=False)
        self._made.clear()

    def __enter__(self) -> Network:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
