"""A private network for notebook 08's workers: a Linux network namespace with only loopback in it.

TensorFlow's gRPC server cannot be told which address to listen on. ``GrpcServer::Init``
(tensorflow/core/distributed_runtime/rpc/grpc_server_lib.cc) calls
``builder.AddListeningPort(strings::StrCat("0.0.0.0:", requested_port), ...)``: the host in
``TF_CONFIG`` (or the ``ServerDef``) only names the task for its peers, ``ServerDef.port`` only
changes the port, and the one environment variable read there, ``TF_GRPC_REUSE_PORT``, only sets
``SO_REUSEPORT``. gRPC turns the wildcard into a dual-stack ``[::]`` socket, which ``ss -ltn`` shows
as ``*:PORT``: every worker is reachable from the whole network, without authentication, while it
runs. So the workers get a network of their own instead:

* :class:`PrivateNetwork` makes a network namespace whose only interface is loopback, brought up
  (``unshare(CLONE_NEWNET)`` as root; ``unshare(CLONE_NEWUSER | CLONE_NEWNET)`` for an ordinary
  user where the kernel allows it), and keeps it open through file descriptors. Every worker that
  :class:`helpers.cluster.LocalCluster` starts with it enters that namespace (``setns``) before it
  runs, so the first run's workers and a restarted job share one private network. Where no
  namespace can be made (macOS, Windows, Colab, Kaggle, a Docker container without
  ``CAP_SYS_ADMIN``, Ubuntu 24.04's AppArmor default for unprivileged user namespaces, most
  clusters), :meth:`PrivateNetwork.reading` is a plain warning to print before the workers start:
  who can reach them, and what to do, which depends on where the kernel runs
  (:attr:`PrivateNetwork.advice`, one of :data:`ADVICE`).
* :func:`exposed_ports` lists the ports that listen beyond loopback as this process's network sees
  them (the host's, from the notebook's kernel); :func:`listening_ports` and :func:`interfaces`
  read a worker's own namespace through ``/proc``.

Used by notebook 08 (Run the cluster, and kill a worker; Restart; Nothing left running).
"""

from __future__ import annotations

import atexit
import ipaddress
import json
import os
import select
import socket
import subprocess
import sys
from collections.abc import Callable, Iterable
from types import EllipsisType
from typing import Any

# Where no namespace can be made, what to do depends on who else can reach this machine.
ADVICE = {
    "hosted": ("On Colab or Kaggle the machine is a virtual machine of your own, not reachable from outside its "
               "provider's network, so running the workers there is fine."),
    "elsewhere": ("Do not run the next cells on a machine you share with other people (a lab server, a cluster's "
                  "login or compute node): run them where Linux lets you make a network namespace (a Linux machine or "
                  "virtual machine of your own), or on a single-user Colab or Kaggle runtime. On your own laptop on a "
                  "shared Wi-Fi, turn on a firewall that blocks incoming connections, or go offline, first."),
}
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
NAMESPACE_FLAGS = {"user": CLONE_NEWUSER, "net": CLONE_NEWNET}
MODES = {"netns": "a network namespace (as root)", "userns": "a user and network namespace (no root needed)"}

# Runs in a fresh Python: makes the namespace, brings loopback up, checks it, reports in one JSON line,
# then holds the namespace until the parent, which opens it through /proc, closes its stdin.
_HOLDER = r"""import ctypes, fcntl, json, os, socket, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
def unshare(flags):
    if libc.unshare(flags) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
mode, why = None, []
uid, gid = os.getuid(), os.getgid()
try:
    unshare(0x40000000)
    mode = "netns"
except OSError as error:
    why.append(f"unshare(CLONE_NEWNET): {error.strerror}")
    try:
        unshare(0x10000000 | 0x40000000)
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
        mode = "userns"
    except OSError as error:
        why.append(f"unshare(CLONE_NEWUSER|CLONE_NEWNET): {error.strerror}")
names = []
if mode:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            flags = struct.unpack("16sH14x", fcntl.ioctl(s, 0x8913, struct.pack("16sH14x", b"lo", 0)))[1]
            fcntl.ioctl(s, 0x8914, struct.pack("16sH14x", b"lo", flags | 1))
        with socket.socket() as server, socket.socket() as client:
            server.bind(("127.0.0.1", 0))
            server.listen(1)
            client.connect(server.getsockname())
        names = [name for _, name in socket.if_nameindex()]
    except OSError as error:
        why.append(f"loopback: {error.strerror or error}")
        mode = None
print(json.dumps({"mode": mode, "why": why, "interfaces": names}), flush=True)
sys.stdin.read()
"""


Made = tuple[str | None, dict[str, int], str, list[str]]  # mode, {"user"/"net": fd}, why not, interfaces


def _make_namespace(python: str | None = None, timeout: float = 20.0) -> Made:
    """Make the namespace; return (mode, {"user"/"net": fd}, why not, its interfaces). Linux only."""
    if not sys.platform.startswith("linux"):
        return None, {}, f"network namespaces are Linux's, and this system is {sys.platform}", []
    holder = subprocess.Popen([python or sys.executable, "-c", _HOLDER], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    fds: dict[str, int] = {}
    try:
        ready, _, _ = select.select([holder.stdout], [], [], timeout)
        line = holder.stdout.readline() if ready else ""
        try:
            info = json.loads(line)
        except json.JSONDecodeError:
            return None, {}, "the helper that makes the namespace did not answer", []
        mode = info["mode"]
        if mode is None:
            return None, {}, "; ".join(info["why"]) or "unknown", []
        kinds = ("user", "net") if mode == "userns" else ("net",)
        for kind in kinds:  # opened before the holder leaves: these keep the namespace alive
            fds[kind] = os.open(f"/proc/{holder.pid}/ns/{kind}", os.O_RDONLY)
        return mode, fds, "", list(info["interfaces"])
    except OSError as error:
        for fd in fds.values():
            os.close(fd)
        return None, {}, f"could not open the namespace: {error.strerror or error}", []
    finally:
        try:
            holder.stdin.close()
        except OSError:
            pass
        try:
            holder.wait(timeout=10)
        except subprocess.TimeoutExpired:
            holder.kill()
            holder.wait()


_OPEN: set[PrivateNetwork] = set()


class PrivateNetwork:
    """A network namespace with only loopback, kept open for worker processes to enter.

    ``private`` says whether it exists; ``mode`` is ``"netns"`` (made as root), ``"userns"`` (made
    by an ordinary user) or None, and then ``why_not`` says why. :meth:`reading` is the sentence
    for the page: what protects the workers, or a warning. Close it when no more workers will start
    (or use it in a ``with`` block); an ``atexit`` hook closes it otherwise.

    Where none can be made, ``advice`` (a key of :data:`ADVICE`) says what to do: ``"hosted"`` on
    Colab or Kaggle (as :func:`helpers.colab.hosted` tells), ``"elsewhere"`` anywhere else; None while the
    network is private.

    Args:
        make: the function that makes the namespace (tests pass a fake that fails).
        hosted: ``"colab"``, ``"kaggle"`` or None, where this kernel runs (default: as :func:`helpers.colab.hosted`).

    Example:
        >>> with PrivateNetwork() as network:
        ...     network.private == (network.mode in MODES) and network.reading()[:1] in "TW"
        True
    """

    def __init__(self, make: Callable[[], Made] | None = None, hosted: str | None | EllipsisType = ...) -> None:
        if hosted is ...:  # helpers.colab.hosted's rule, inline: this module also runs alone, outside helpers
            hosted = ("colab" if "google.colab" in sys.modules else
                      "kaggle" if "KAGGLE_KERNEL_RUN_TYPE" in os.environ else None)
        if hosted not in ("colab", "kaggle", None):
            raise ValueError(f"hosted={hosted!r}: use 'colab', 'kaggle' or None.")
        self.mode, self.fds, self.why_not, self.interfaces = (make or _make_namespace)()
        if self.mode is not None and self.mode not in MODES:
            raise ValueError(f"mode={self.mode!r}: use one of {sorted(MODES)} or None.")
        self.advice = None if self.mode else ("hosted" if hosted else "elsewhere")
        self.closed = False
        if self.fds:
            _OPEN.add(self)

    @property
    def private(self) -> bool:
        return self.mode is not None and not self.closed

    def setns_args(self) -> list[str]:
        """The launcher's arguments that enter the namespace: ``--setns=user:FD``, then ``--setns=net:FD``."""
        if self.closed:
            raise RuntimeError("this PrivateNetwork is closed: make a new one to start more workers.")
        return [f"--setns={kind}:{self.fds[kind]}" for kind in ("user", "net") if kind in self.fds]

    def reading(self) -> str:
        """What keeps the workers' ports private, or a warning to read before they start."""
        if self.private:
            how = MODES[self.mode]
            return (f"The workers run in a private network: {how} whose only interface is loopback "
                    f"({', '.join(self.interfaces) or 'lo'}). Their gRPC servers listen on every interface of that "
                    "network, so no other machine can reach them, and neither can this kernel; they reach each "
                    "other on 127.0.0.1.")
        return ("Warning: the workers' gRPC servers will listen on every network interface of this machine, "
                "without authentication, while they run: TensorFlow binds 0.0.0.0, and this machine cannot give "
                f"them a private network ({self.why_not}). Any process on this machine can reach them at "
                "127.0.0.1 and their ports, and so can other machines its network lets in; whoever connects can "
                f"run code in them. {ADVICE[self.advice]}")

    def close(self) -> None:
        """Let the namespace go (it ends with the last worker in it). Safe to call more than once."""
        for fd in self.fds.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = {}
        self.closed = True
        _OPEN.discard(self)

    def __enter__(self) -> PrivateNetwork:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


@atexit.register
def _close_all() -> None:
    for network in list(_OPEN):
        network.close()


# --------------------------------------------------------------------------- who listens where

def _is_loopback(ip: str) -> bool:
    address = ipaddress.ip_address(ip.split("%", 1)[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def exposed_ports(ports: Iterable[int]) -> list[int] | None:
    """Which of `ports` listen on an address other than loopback, in this process's network.

    Returns None when this system does not let a normal user list sockets (psutil on macOS).

    Example:
        >>> with socket.socket() as s:
        ...     s.bind(("127.0.0.1", 0)); s.listen(1)
        ...     exposed_ports([s.getsockname()[1]])
        []
    """
    import psutil

    wanted = {int(p) for p in ports}
    try:
        connections = psutil.net_connections(kind="tcp")
    except (psutil.AccessDenied, PermissionError):
        return None
    return sorted({c.laddr.port for c in connections if c.status == psutil.CONN_LISTEN and c.laddr
                   and c.laddr.port in wanted and not _is_loopback(c.laddr.ip)})


def _proc_listeners(path: str) -> list[tuple[str, int]]:
    found = []
    try:
        with open(path) as f:
            rows = f.read().splitlines()[1:]
    except OSError:
        return []
    for row in rows:
        fields = row.split()
        if len(fields) > 3 and fields[3] == "0A":  # TCP_LISTEN
            address, port = fields[1].split(":")
            raw = bytes.fromhex(address)
            if len(raw) == 4:
                ip = socket.inet_ntop(socket.AF_INET, raw[::-1])
            else:  # four little-endian 32-bit words
                ip = socket.inet_ntop(socket.AF_INET6, b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4)))
            found.append((ip, int(port, 16)))
    return found


def listening_ports(pid: int) -> list[tuple[str, int]]:
    """The ``(address, port)`` pairs listening in the network namespace of process `pid` (Linux, /proc).

    Example:
        >>> with socket.socket() as s:
        ...     s.bind(("127.0.0.1", 0)); s.listen(1)
        ...     ("127.0.0.1", s.getsockname()[1]) in listening_ports(os.getpid())
        True
    """
    return _proc_listeners(f"/proc/{pid}/net/tcp") + _proc_listeners(f"/proc/{pid}/net/tcp6")


def interfaces(pid: int) -> list[str]:
    """The network interfaces in the namespace of process `pid` (Linux, /proc); [] when unreadable.

    Example:
        >>> "lo" in interfaces(os.getpid()) or not sys.platform.startswith("linux")
        True
    """
    try:
        with open(f"/proc/{pid}/net/dev") as f:
            return [line.split(":", 1)[0].strip() for line in f.read().splitlines()[2:] if ":" in line]
    except OSError:
        return []


def exposure(ports: Iterable[int], pids: Iterable[int]) -> dict[str, Any]:
    """Where the workers' `ports` listen now: ``exposed`` beyond loopback as this kernel sees its network
    (None: this system does not say), and ``inside``, the ports listening in the workers' own namespaces.

    Example:
        >>> with socket.socket() as s:
        ...     s.bind(("127.0.0.1", 0)); s.listen(1)
        ...     found = exposure([s.getsockname()[1]], [os.getpid()])
        >>> found["exposed"], found["inside"] == found["ports"] or not sys.platform.startswith("linux")
        ([], True)
    """
    ports = sorted({int(p) for p in ports})
    inside = sorted({port for pid in pids for _, port in listening_ports(pid) if port in ports})
    return {"ports": ports, "exposed": exposed_ports(ports), "inside": inside}


def exposure_reading(found: dict[str, Any]) -> str:
    """One sentence that reads :func:`exposure`.

    Example:
        >>> print(exposure_reading({"ports": [2222, 2223], "exposed": [], "inside": [2222, 2223]}))
        ... # doctest: +NORMALIZE_WHITESPACE
        Seen from this kernel, none of the 2 worker ports listens beyond loopback; inside the workers'
        network all 2 listen.
    """
    ports = sorted({int(p) for p in found["ports"]})
    if not ports:
        raise ValueError("found['ports'] is empty: pass what exposure() returned for the workers' ports.")
    exposed = None if found["exposed"] is None else sorted({int(p) for p in found["exposed"]} & set(ports))
    inside = sorted({int(p) for p in found["inside"]} & set(ports))
    inner = (f"inside the workers' network all {len(ports)} listen" if inside == ports else
             f"inside the workers' network {len(inside)} of {len(ports)} listen")
    if exposed is None:
        return ("This system does not let the kernel list listening sockets, so the notebook cannot check the workers' "
                f"ports {ports}; {inner}.")
    if not exposed:
        return f"Seen from this kernel, none of the {len(ports)} worker ports listens beyond loopback; {inner}."
    listed = ", ".join(map(str, exposed))
    return (f"Warning: {len(exposed)} of the {len(ports)} worker ports ({listed}) listen on every "
            "interface of this machine: other machines on its network can connect to them while the workers run.")
