"""Topic module of notebook 08 · GPU clusters: worker processes and their logs.

Plumbing only: the worker script, ``TF_CONFIG``, ``MultiWorkerMirroredStrategy``, the checkpoint
manager and the collective timeout stay on the notebook's page. Here live

* the notebook's limit on ``N_WORKERS`` (:func:`max_workers`, :func:`check_workers`), used by the
  setup cell;
* ports and ``TF_CONFIG`` (:func:`free_ports`, :func:`port_is_free`, :func:`tf_config`) and how
  workers share the GPUs this kernel may use, its own ``CUDA_VISIBLE_DEVICES`` included
  (:func:`visible_gpus`, :func:`worker_devices`), used by "One job, several processes", "Run the
  cluster, and kill a worker" and the Docker commands of "In a container";
* :class:`LocalCluster`, which starts one worker process per ``TF_CONFIG``, waits for a line in a
  worker's log, kills a worker with SIGKILL, records when each worker ended, and stops every worker
  however its ``with`` block ends (a failed cell, an interrupted kernel, the end of the kernel):
  every wait is bounded, because a worker whose peers are gone can wait for them for ever and
  ignore SIGTERM; given a :class:`helpers.netns.PrivateNetwork`, it starts every worker inside that
  network. Used by "Run the cluster, and kill a worker", "A peer that hangs" and "Restart";
* readable logs (:func:`readable_log`) and the JSON lines a worker prints (:func:`json_lines`);
* the sentences that read the runs (:func:`survivors_reading`, :func:`restart_reading`) and
  "Nothing left running" (:func:`process_alive`).

The Kubernetes manifests, the Dockerfile and their validators live in :mod:`helpers.manifests`.
Used by notebook 08 only.
"""

from __future__ import annotations

import atexit
import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import EllipsisType
from typing import Any

from helpers import children, nvml, params
from helpers.manifests import PEER_LOST_EXIT

ROOT = Path(__file__).resolve().parent.parent
GIB = 1024**3
MIN_WORKERS = 2
WORKERS_PER_CORE = 2  # each worker is a whole TensorFlow process; beyond two a core they mostly wait
WORKER_BYTES = 1 * GIB  # memory budget of one worker (one measured at about 0.65 GiB resident on a CPU)


# --------------------------------------------------------------------------- how many workers

def _cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _available_bytes() -> int:
    import psutil

    return int(psutil.virtual_memory().available)


def max_workers(cores: int | None = None, available_bytes: int | None = None) -> int:
    """How many worker processes this machine starts: 2 per CPU core, 1 GiB each, 8 at most.

    Each worker is a whole TensorFlow process (about 0.65 GiB resident, a few seconds of CPU to
    start). Beyond two per core they mostly wait for each other; beyond the memory they swap or die.

    Example:
        >>> max_workers(cores=2, available_bytes=24 * GIB)
        4
        >>> max_workers(cores=64, available_bytes=3 * GIB)
        3
    """
    cores = _cores() if cores is None else cores
    available = _available_bytes() if available_bytes is None else available_bytes
    high = 8  # helpers.params' rule for N_WORKERS
    return int(max(0, min(high, WORKERS_PER_CORE * cores, available // WORKER_BYTES)))


def check_workers(n_workers: Any, cores: int | None = None, available_bytes: int | None = None) -> int:
    """Refuse an ``N_WORKERS`` this notebook cannot run, before any process starts; return it.

    A cluster needs at least two workers; :func:`max_workers` says how many this machine starts.

    Example:
        >>> check_workers(2, cores=2, available_bytes=24 * GIB)
        2
        >>> check_workers(1, cores=2, available_bytes=24 * GIB)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ValueError: N_WORKERS=1 is not allowed in this notebook: use an integer from 2 to 4 (...).
    """
    params.validate({"N_WORKERS": n_workers})
    cores = _cores() if cores is None else cores
    available = _available_bytes() if available_bytes is None else available_bytes
    high = max_workers(cores, available)
    if n_workers < MIN_WORKERS or n_workers > high:
        why = (f"a cluster needs at least {MIN_WORKERS} workers; this machine starts at most {high}: "
               f"{WORKERS_PER_CORE} per CPU core on its {cores} cores, {WORKER_BYTES // GIB} GiB of memory each "
               f"of its {available / GIB:.1f} GiB available, 8 at most")
        allowed = f"an integer from {MIN_WORKERS} to {high}" if high >= MIN_WORKERS else "nothing on this machine"
        raise ValueError(f"N_WORKERS={n_workers!r} is not allowed in this notebook: use {allowed} ({why}).")
    return n_workers


# --------------------------------------------------------------------------- ports and TF_CONFIG

def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    """`n` different TCP ports on `host` that nothing listens on right now (the system picks them).

    Example:
        >>> ports = free_ports(3)
        >>> len(set(ports)) == 3 and all(1024 <= p <= 65535 for p in ports)
        True
    """
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 64:
        raise ValueError(f"n={n!r}: use an integer from 1 to 64.")
    sockets = []
    try:
        for _ in range(n):  # all open at once, so the system cannot hand out the same port twice
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """True when a new server could listen on `port` now: no process holds it.

    Like every server (gRPC included), the probe sets ``SO_REUSEADDR``: the closed connections a dead
    worker leaves behind for a minute (TCP's TIME_WAIT) do not hold the port; a listening socket does.

    Example:
        >>> port_is_free(free_ports(1)[0])
        True
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
            s.listen(1)
        except OSError:
            return False
    return True


def tf_config(hosts: Sequence[str], index: int, task_type: str = "worker") -> dict[str, Any]:
    """The ``TF_CONFIG`` of worker `index` in a cluster of `hosts` (``"host:port"`` each), as a dict.

    Example:
        >>> tf_config(["10.0.0.1:2222", "10.0.0.2:2222"], 1)
        {'cluster': {'worker': ['10.0.0.1:2222', '10.0.0.2:2222']}, 'task': {'type': 'worker', 'index': 1}}
    """
    hosts = list(hosts)
    if not hosts or not all(isinstance(h, str) and re.fullmatch(r"[^\s:]+:\d+", h) for h in hosts):
        raise ValueError(f"hosts={hosts!r}: use a non-empty list of 'host:port' strings.")
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(hosts):
        raise ValueError(f"index={index!r}: use an integer from 0 to {len(hosts) - 1} (one per host).")
    return {"cluster": {task_type: hosts}, "task": {"type": task_type, "index": index}}


def visible_gpus(gpu_count: int, parent: str | None) -> list[str]:
    """The GPUs this kernel may hand to its workers, as ``CUDA_VISIBLE_DEVICES`` entries.

    `parent` is this process's own ``CUDA_VISIBLE_DEVICES`` (None: unset), which a scheduler such
    as Slurm sets to the GPUs it gave the job (``"2,3"``), by index, by ``GPU-<uuid>`` or by
    ``MIG-<uuid>``. CUDA reads the list up to its first invalid entry (``"-1"`` hides every GPU),
    so the GPUs TensorFlow counts (`gpu_count`) are the first entries. A CUDA process enumerates
    only one MIG device, so TensorFlow counts 1 whatever the list holds; each worker, a process of
    its own, can still use one MIG device of the list.

    Example:
        >>> visible_gpus(2, None), visible_gpus(2, "2,3"), visible_gpus(0, "2,3"), visible_gpus(1, "MIG-a,MIG-b")
        (['0', '1'], ['2', '3'], [], ['MIG-a', 'MIG-b'])
    """
    if not isinstance(gpu_count, int) or isinstance(gpu_count, bool) or gpu_count < 0:
        raise ValueError(f"gpu_count={gpu_count!r}: use an integer >= 0.")
    if parent is not None and not isinstance(parent, str):
        raise ValueError(f"parent={parent!r}: use the text of CUDA_VISIBLE_DEVICES, or None when it is unset.")
    if gpu_count == 0:
        return []
    if parent is None:
        return [str(i) for i in range(gpu_count)]
    entries = nvml.visible_entries(parent)
    if entries and all(e.startswith("MIG-") for e in entries):
        return entries
    return entries[:gpu_count]


def worker_devices(gpu_count: int, n_workers: int, parent: str | None | EllipsisType = ...
                   ) -> tuple[list[dict[str, str]], str, str]:
    """Each worker's environment, the all-reduce implementation, and a sentence that says why.

    Worker ``i`` gets entry ``i`` of :func:`visible_gpus` (this kernel's own ``CUDA_VISIBLE_DEVICES``
    when one is set, such as Slurm's ``2,3``; `parent` defaults to it, None means unset):

    * as many GPUs as workers or more: one GPU per worker and NCCL, as on a GPU cluster (RING for
      MIG devices, which cannot talk to each other directly: no CUDA IPC between MIG instances);
    * fewer: the workers take the GPUs in turn (worker ``i`` gets GPU ``i mod count``); NCCL wants
      one GPU per worker, so the all-reduce goes through RING (gRPC);
    * no GPU: every worker trains on its CPU (``CUDA_VISIBLE_DEVICES=-1``, like this kernel); RING.

    Every worker that sees a GPU gets memory growth (``TF_FORCE_GPU_ALLOW_GROWTH=true``, which
    TensorFlow's ``GetAllowGrowthValue`` reads when the GPU allocator is made, as in
    :func:`helpers.children.gpu_env`), one GPU each or not: worker 0's GPU is also this kernel's
    ``GPU:0``, which keeps its context and memory (on Kaggle's "GPU T4 x2" as anywhere), so a worker
    that reserved nearly all of that GPU at start would leave the kernel, or itself, short of memory.

    Example:
        >>> envs, collective, _ = worker_devices(0, 2, parent=None)
        >>> envs, collective
        ([{'CUDA_VISIBLE_DEVICES': '-1'}, {'CUDA_VISIBLE_DEVICES': '-1'}], 'RING')
        >>> [env["CUDA_VISIBLE_DEVICES"] for env in worker_devices(2, 2, parent="2,3")[0]]
        ['2', '3']
    """
    if not isinstance(n_workers, int) or isinstance(n_workers, bool) or n_workers < 1:
        raise ValueError(f"n_workers={n_workers!r}: use an integer >= 1.")
    if parent is ...:
        parent = os.environ.get("CUDA_VISIBLE_DEVICES")
    gpus = visible_gpus(gpu_count, parent)
    source = "" if parent is None else f", from this kernel's CUDA_VISIBLE_DEVICES={parent}"
    if not gpus:
        return ([{"CUDA_VISIBLE_DEVICES": "-1"} for _ in range(n_workers)], "RING",
                f"No GPU: each of the {n_workers} workers trains on the CPU, and the gradients travel through RING, "
                "TensorFlow's all-reduce over gRPC (what machines without a fast GPU interconnect use too).")
    chosen = [gpus[i % len(gpus)] for i in range(n_workers)]
    listed = ", ".join(chosen)
    envs = [{"CUDA_VISIBLE_DEVICES": gpu, "TF_FORCE_GPU_ALLOW_GROWTH": "true"} for gpu in chosen]
    if len(gpus) >= n_workers:
        if chosen[0].startswith("MIG-"):
            return (envs, "RING",
                    f"Each of the {n_workers} workers gets its own MIG device (CUDA_VISIBLE_DEVICES={listed}, one "
                    f"entry per worker{source}). MIG devices cannot reach each other's memory directly, so the "
                    "gradients travel through RING, TensorFlow's all-reduce over gRPC.")
        return (envs, "NCCL",
                f"Each of the {n_workers} workers gets its own GPU (CUDA_VISIBLE_DEVICES={listed}, one entry per worker"
                f"{source}), each taking only the memory it needs (memory growth: worker 0's GPU is this kernel's "
                "too), and the workers add up their gradients with NCCL, as on a GPU cluster.")
    shared = (f"one GPU (CUDA_VISIBLE_DEVICES={gpus[0]} for each{source})" if len(gpus) == 1 else
              f"{len(gpus)} GPUs, taking them in turn (CUDA_VISIBLE_DEVICES={listed}{source})")
    return (envs, "RING",
            f"The {n_workers} workers share {shared}, each taking only the memory it needs (memory growth). NCCL "
            "wants one GPU per worker, so the gradients travel through RING, TensorFlow's all-reduce over gRPC.")


# --------------------------------------------------------------------------- worker processes

_LIVE: set[LocalCluster] = set()
_LIVE_LOCK = threading.Lock()

# Linux: first the launcher enters the workers' private network when it is given one (setns on the
# namespace file descriptors it inherits; it refuses to start the worker if that fails). Then the worker
# gets SIGKILL when the process that started it dies, even by SIGKILL (a killed or restarted kernel),
# through prctl(PR_SET_PDEATHSIG), when that process started it from its main thread; then the launcher
# becomes the worker (execv).
_LAUNCHER = """import ctypes, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
parent, watch, args = int(sys.argv[1]), sys.argv[2] == "1", sys.argv[3:]
while args and args[0].startswith("--setns="):
    kind, fd = args.pop(0)[len("--setns="):].split(":")
    if libc.setns(int(fd), {"user": 0x10000000, "net": 0x40000000}[kind]) != 0:
        print(f"launcher: could not enter the workers' private network ({kind}): "
              f"{os.strerror(ctypes.get_errno())}. The worker does not start.", flush=True)
        sys.exit(70)
    os.close(int(fd))
if watch:
    try:
        libc.prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        sys.exit(0)
os.execv(args[0], args)
"""
LAUNCH_FAILED = 70  # the launcher's exit code when it cannot enter the private network


def _stop_all() -> None:
    with _LIVE_LOCK:
        clusters = list(_LIVE)
    for cluster in clusters:
        cluster.stop()


atexit.register(_stop_all)


def _kill_group(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the worker leads its own process group
    except (ProcessLookupError, PermissionError, AttributeError):
        try:
            proc.kill()
        except ProcessLookupError:
            pass


def _reap(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:  # not even SIGKILL ended it in time (a process stuck in the kernel)
        pass


class LocalCluster:
    """Worker processes on this machine, one per ``TF_CONFIG``, each writing its own log file.

    Use it as a context manager: every worker is stopped with SIGKILL when the block ends, however it
    ends (an exception, a KeyboardInterrupt from "Interrupt kernel"). Workers still running when the
    Python that started them exits are stopped by an ``atexit`` hook, and on Linux they also die with
    it when it is killed (``prctl(PR_SET_PDEATHSIG)``): no orphan keeps a port or a core busy.

    Args:
        script: the worker's Python file.
        tf_configs: one ``TF_CONFIG`` dict per worker (None: start without ``TF_CONFIG``).
        args: command-line arguments for every worker (each converted with ``str``).
        env: extra environment, one dict for all workers or one per worker.
        log_dir: folder for ``worker-<i>.log`` (created; earlier logs are overwritten).
        network: a :class:`helpers.netns.PrivateNetwork` every worker runs in. None, or one that could
            not be made (print its warning first), starts them on this machine's network; a closed one is
            refused.

    Example:
        >>> import pathlib, tempfile
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (folder / "hello.py").write_text("import os; print('hello from', os.environ['TF_CONFIG'][:12])")
        >>> with LocalCluster(folder / "hello.py", [{"task": 0}, {"task": 1}], log_dir=folder) as cluster:
        ...     codes = cluster.wait(timeout=60)
        >>> codes, cluster.log(1).strip()
        ([0, 0], 'hello from {"task": 1}')
    """

    def __init__(self, script: str | os.PathLike[str], tf_configs: Sequence[Mapping[str, Any] | None],
                 args: Sequence[Any] = (), env: Mapping[str, str] | Sequence[Mapping[str, str]] | None = None,
                 log_dir: str | os.PathLike[str] | None = None, python: str | None = None,
                 network: Any = None) -> None:
        self.script = Path(script)
        if not self.script.is_file():
            raise ValueError(f"script={str(script)!r}: no such file. Write it first (for example with %%writefile).")
        self.tf_configs = list(tf_configs)
        if not self.tf_configs:
            raise ValueError("tf_configs is empty: pass one TF_CONFIG dict (or None) per worker.")
        if isinstance(args, (str, bytes)) or not isinstance(args, Sequence):
            raise ValueError(f"args={args!r}: use a list of command-line arguments.")
        self.args = [str(a) for a in args]
        if env is None or isinstance(env, Mapping):
            self.envs = [dict(env or {}) for _ in self.tf_configs]
        else:
            self.envs = [dict(e) for e in env]
            if len(self.envs) != len(self.tf_configs):
                raise ValueError(f"env has {len(self.envs)} entries for {len(self.tf_configs)} workers: pass one "
                                 "dict for all, or one per worker.")
        self.log_dir = Path(log_dir) if log_dir is not None else self.script.parent / "logs"
        self.python = python or sys.executable
        if network is not None and network.closed:
            raise ValueError("network is closed: its namespace may be gone. Make a new helpers.netns.PrivateNetwork "
                             "and print its reading() before the workers start.")
        self.network = network if network is not None and network.private else None
        self.procs: list[subprocess.Popen] = []
        self.started: list[float] = []  # each process's creation time (psutil), to tell it from a reused pid
        self.how_ended: dict[int, str] = {}
        self.ended_at: dict[int, float] = {}  # time.monotonic() when each worker was first seen ended (or killed)
        self._offsets: dict[int, int] = {}
        self._text: dict[int, str] = {}

    # -- starting and stopping
    def start(self) -> LocalCluster:
        """Start every worker (each in its own process group); return self."""
        import psutil

        if self.procs:
            raise RuntimeError("this cluster has started already: make a new LocalCluster to run again.")
        self.log_dir.mkdir(parents=True, exist_ok=True)
        linux = sys.platform.startswith("linux")
        watch = linux and threading.current_thread() is threading.main_thread()
        setns = self.network.setns_args() if self.network is not None else []
        fds = tuple(int(a.rsplit(":", 1)[1]) for a in setns)
        with _LIVE_LOCK:
            _LIVE.add(self)
        try:
            for index, (config, extra) in enumerate(zip(self.tf_configs, self.envs, strict=True)):
                overrides: dict[str, str | None] = {"PYTHONUNBUFFERED": "1", **extra}
                overrides["TF_CONFIG"] = None if config is None else json.dumps(config)
                command = [self.python, str(self.script), *self.args]
                if watch or setns:
                    command = [self.python, "-c", _LAUNCHER, str(os.getpid()), "1" if watch else "0", *setns, *command]
                with open(self.log_path(index), "wb") as log:
                    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            env=children.child_environ(overrides), cwd=str(ROOT),
                                            start_new_session=True, pass_fds=fds)
                self.procs.append(proc)
                try:
                    self.started.append(psutil.Process(proc.pid).create_time())
                except psutil.NoSuchProcess:
                    self.started.append(0.0)
        except BaseException:
            self.stop()
            raise
        return self

    def kill(self, index: int) -> None:
        """SIGKILL worker `index` (and anything it started) now, as when its machine loses power."""
        proc = self._proc(index)
        if proc.poll() is None:
            self.ended_at.setdefault(index, time.monotonic())
            _kill_group(proc)
            self.how_ended[index] = "killed (SIGKILL)"
        _reap(proc)

    def stop(self) -> None:
        """SIGKILL every worker still running and reap them all. Safe to call more than once."""
        for index, proc in enumerate(self.procs):
            if proc.poll() is None:
                _kill_group(proc)
                self.how_ended.setdefault(index, "stopped (SIGKILL)")
        for proc in self.procs:
            _reap(proc)
        with _LIVE_LOCK:
            _LIVE.discard(self)

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- waiting
    def wait(self, timeout: float, poll: float = 0.01, only: Sequence[int] | None = None) -> list[int | None]:
        """Wait at most `timeout` seconds in all for every worker (or those in `only`) to end; SIGKILL those
        still running.

        Notes when each worker ended (:meth:`seconds_since`), to within `poll` seconds. Returns each
        worker's exit code (negative: the signal that ended it, -9 for SIGKILL; None: still running).
        """
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
            raise ValueError(f"timeout={timeout!r}: use a positive number of seconds.")
        watched = list(range(len(self.procs))) if only is None else list(only)
        for index in watched:
            self._proc(index)  # a ValueError for an index that is no worker
        deadline = time.monotonic() + timeout
        while True:
            now = time.monotonic()
            running = [i for i in watched if self.procs[i].poll() is None]
            for index, proc in enumerate(self.procs):
                if proc.poll() is not None:
                    self.ended_at.setdefault(index, now)
            if not running or now > deadline:
                break
            time.sleep(poll)
        for index in running:
            proc = self.procs[index]
            self.ended_at.setdefault(index, time.monotonic())
            _kill_group(proc)
            self.how_ended[index] = f"still running after {timeout:.0f} s: stopped (SIGKILL)"
            _reap(proc)
        return self.exit_codes

    def seconds_since(self, start: float) -> list[float | None]:
        """For each worker, the seconds from `start` (a ``time.monotonic()`` reading) to its end; None: not seen.

        A worker that ended before `start` gives a negative number.
        """
        return [self.ended_at[i] - start if i in self.ended_at else None for i in range(len(self.procs))]

    def wait_for(self, index: int, pattern: str, timeout: float, poll: float = 0.01) -> bool:
        """Wait until worker `index` writes a line matching the regular expression `pattern`.

        Returns True when it did, False when the worker ended first or `timeout` seconds passed.
        """
        regex = re.compile(pattern)
        proc = self._proc(index)
        deadline = time.monotonic() + timeout
        while True:
            if regex.search(self.log(index)):
                return True
            if proc.poll() is not None:
                self.ended_at.setdefault(index, time.monotonic())
                return bool(regex.search(self.log(index)))
            if time.monotonic() > deadline:
                return False
            time.sleep(poll)

    # -- reading
    @property
    def exit_codes(self) -> list[int | None]:
        return [proc.poll() for proc in self.procs]

    @property
    def pids(self) -> list[int]:
        return [proc.pid for proc in self.procs]

    @property
    def ports(self) -> list[int]:
        """The port each worker's server listens on, read from its ``TF_CONFIG`` (workers without one: none)."""
        found = []
        for config in self.tf_configs:
            if config and "cluster" in config and "task" in config:
                task = config["task"]
                host = config["cluster"][task["type"]][task["index"]]
                found.append(int(str(host).rsplit(":", 1)[1]))
        return found

    @property
    def processes(self) -> list[dict[str, float]]:
        """``{"pid", "started"}`` of each worker: enough to tell later whether that very process lives."""
        return [{"pid": proc.pid, "started": started} for proc, started in zip(self.procs, self.started, strict=True)]

    def log_path(self, index: int) -> Path:
        return self.log_dir / f"worker-{index}.log"

    def log(self, index: int) -> str:
        """Everything worker `index` wrote so far (stdout and stderr)."""
        path = self.log_path(index)
        offset = self._offsets.get(index, 0)
        try:
            with open(path, "rb") as f:
                f.seek(offset)
                chunk = f.read()
        except FileNotFoundError:
            return ""
        self._offsets[index] = offset + len(chunk)
        self._text[index] = self._text.get(index, "") + chunk.decode("utf-8", errors="replace")
        return self._text[index]

    def answers(self, index: int) -> list[dict[str, Any]]:
        """The JSON objects worker `index` printed, one per line, in order."""
        return json_lines(self.log(index))

    def describe(self, index: int) -> str:
        """How worker `index` is doing or how it ended, in words."""
        code = self._proc(index).poll()
        if index in self.how_ended:
            return self.how_ended[index]
        if code is None:
            return "running"
        if code < 0:
            return f"ended by signal {signal.Signals(-code).name}"
        return "finished (exit code 0)" if code == 0 else f"failed (exit code {code})"

    def report(self, tail: int = 8) -> str:
        """Each worker's fate and the last `tail` readable lines of its log."""
        parts = []
        for index in range(len(self.procs)):
            lines = readable_log(self.log(index))
            shown = lines[-tail:] if tail else lines
            more = f"   ({len(lines) - len(shown)} earlier lines in {self.log_path(index).name})\n" \
                if len(shown) < len(lines) else ""
            parts.append(f"worker {index} (pid {self.procs[index].pid}): {self.describe(index)}\n{more}"
                         + "\n".join(f"   {line}" for line in shown))
        return "\n".join(parts)

    def _proc(self, index: int) -> subprocess.Popen:
        if not self.procs:
            raise RuntimeError("the cluster has not started: use it in a `with` block, or call start().")
        if not isinstance(index, int) or not 0 <= index < len(self.procs):
            raise ValueError(f"index={index!r}: use a worker index from 0 to {len(self.procs) - 1}.")
        return self.procs[index]


def process_alive(pid: int, started: float) -> bool:
    """True when the process `pid` created at time `started` (see :attr:`LocalCluster.processes`) lives.

    Example:
        >>> import os, psutil
        >>> process_alive(os.getpid(), psutil.Process().create_time())
        True
    """
    import psutil

    try:
        proc = psutil.Process(pid)
        return abs(proc.create_time() - started) < 1e-3 and proc.status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


# --------------------------------------------------------------------------- logs

_CPP_LOG = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:")  # TensorFlow's C++ log (absl): E0000 00:00:1795.. file.cc:12] ...
_NOISE = (re.compile(r"^WARNING: All log messages before absl::InitializeLog"),
          re.compile(r"^To enable the following instructions"),
          re.compile(r"^\s*$"))
_RECORD_START = re.compile(r"^(worker \d|\{|Traceback|\S+\.py:\d+: \w*Warning)")
_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit))(?::\s?(.*))?$")


def _exception_summary(lines: list[str], i: int) -> str:
    """The exception at line `i` (after a traceback) as one line: name, message, first line of detail."""
    match = _EXCEPTION.match(lines[i])
    name = match.group(1).rsplit(".", 1)[-1]
    message = (match.group(2) or "").strip()
    detail = ""
    for follow in lines[i + 1:i + 40]:  # the first line that says what happened, if the message goes on
        stripped = follow.strip()
        if not stripped or follow[:1].isspace() or stripped.startswith(("Detected at node", "[[", "File ")):
            continue
        detail = stripped
        break
    return " ".join(p for p in (f"{name}:", message, detail) if p).rstrip(":")


def readable_log(text: str) -> list[str]:
    """A worker's log as a learner wants to read it: its own lines, and each error in one line.

    TensorFlow's C++ log records (with their continuation lines) and start-up chatter are dropped;
    a Python traceback becomes the exception's name and message (module path removed) and the first
    line that says what happened.

    Example:
        >>> log = ("I0000 00:00:1.0 port.cc:153] oneDNN custom operations are on.\\nworker 0: epoch 1 started\\n"
        ...        "E0000 00:00:2.0 ring_alg.cc:291] Aborting RingReduce\\n/job:worker/replica:0/task:1\\n"
        ...        "Traceback (most recent call last):\\n  File \\"w.py\\", line 3, in <module>\\n"
        ...        "tensorflow.python.framework.errors_impl.UnavailableError: Graph execution error:\\n\\n"
        ...        "Collective ops is aborted: peer lost\\n")
        >>> readable_log(log)
        ['worker 0: epoch 1 started', 'UnavailableError: Graph execution error: Collective ops is aborted: peer lost']
    """
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("Traceback (most recent call last)"):
            i += 1
            while i < len(lines) and not _EXCEPTION.match(lines[i]):
                i += 1
            if i == len(lines):
                out.append("(a Python error; its message is cut off)")
                break
            out.append(_exception_summary(lines, i))
            i += 1
            while i < len(lines) and not lines[i].startswith("worker "):  # the rest of the message
                i += 1
            continue
        if _CPP_LOG.match(line):
            i += 1
            while i < len(lines) and not (_CPP_LOG.match(lines[i]) or _RECORD_START.match(lines[i])):
                i += 1  # the record's continuation lines
            continue
        if not any(p.search(line) for p in _NOISE):
            out.append(line.rstrip())
        i += 1
    return out


def json_lines(text: str) -> list[dict[str, Any]]:
    """The JSON objects in `text`, one per line (other lines are skipped).

    Example:
        >>> json_lines('worker 0: hello\\n{"epoch": 1, "loss": 0.5}\\n{not json\\n')
        [{'epoch': 1, 'loss': 0.5}]
    """
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                found.append(value)
    return found


def survivors_reading(exit_codes: Sequence[int | None], seconds: Sequence[float | None], lost: int, bound: float,
                      code: int = PEER_LOST_EXIT, lost_how: str = "was killed", lost_alive: bool = False) -> str:
    """Sentences that read how each survivor of a lost worker ended, from its exit code and its time.

    `seconds[i]` is the time from the loss to worker `i`'s end (:meth:`LocalCluster.seconds_since`).
    The rule, stated in the sentence: a survivor *exited by itself* when its exit code is `code` (the
    worker script's "lost the cluster" code) and it ended within `bound` seconds of the loss, as
    printed (0.1 s). Exit code -9 is the SIGKILL of the notebook's bounded wait: that survivor hung.
    `lost_alive`: the lost worker hung rather than died. Then even survivors that exit do not bring
    the job back on Kubernetes (the replacement waits for the hung worker), and the sentence says so,
    and what SLURM's ``srun --kill-on-bad-exit=1`` does instead.

    Example:
        >>> print(survivors_reading([75, -9], [1.23, 0.0], lost=1, bound=40))
        Worker 1 was killed. Worker 0 exited by itself with code 75, 1.2 s later. Rule: a survivor exits by \
itself when it ends with code 75 (the script's "lost the cluster") within 40 s; so 1 of 1 did: on Kubernetes \
its pod fails and the Job replaces it.
    """
    if isinstance(lost, bool) or not isinstance(lost, int) or not 0 <= lost < len(exit_codes):
        raise ValueError(f"lost={lost!r}: use the index of a worker, from 0 to {len(exit_codes) - 1}.")
    if len(seconds) != len(exit_codes):
        raise ValueError(f"seconds has {len(seconds)} entries for {len(exit_codes)} exit codes: give one per worker.")
    if isinstance(bound, bool) or not isinstance(bound, (int, float)) or not bound > 0:
        raise ValueError(f"bound={bound!r}: use a positive number of seconds.")
    parts = [f"Worker {lost} {lost_how}."]
    by_itself = aborted = 0  # aborted: ended within the bound by TensorFlow's own SIGABRT, counted in by_itself
    survivors = [i for i in range(len(exit_codes)) if i != lost]
    for i in survivors:
        exit_code, t = exit_codes[i], seconds[i]
        when = "at a time not seen" if t is None else (f"{round(t, 1):.1f} s later" if round(t, 1) >= 0 else
                                                      f"{round(-t, 1):.1f} s before it")
        in_time = t is not None and round(t, 1) <= bound  # as printed
        if exit_code is None:
            parts.append(f"Worker {i} is still running.")
        elif exit_code == code and in_time:
            by_itself += 1
            parts.append(f"Worker {i} exited by itself with code {code}, {when}.")
        elif exit_code == code:
            parts.append(f"Worker {i} exited with code {code}, but {when}, past the {bound:g} s bound.")
        elif exit_code == -signal.SIGABRT and in_time:
            by_itself += 1
            aborted += 1
            parts.append(f"Worker {i} ended by itself {when}, but not with code {code}: TensorFlow aborted the "
                         "process (SIGABRT) before the script's handler ran, as it sometimes does when a collective "
                         "times out on a loaded machine. A crash fails the pod all the same.")
        elif exit_code == -9:
            parts.append(f"Worker {i} hung: it was still running at the end of the bounded wait, and SIGKILL ended it "
                         f"({when}).")
        elif exit_code == 0:
            parts.append(f"Worker {i} finished (exit code 0), {when}: it did not need its peer.")
        else:
            parts.append(f"Worker {i} failed with exit code {exit_code}, not {code}, {when}.")
    if survivors:
        verdict = ("on Kubernetes its pod fails and the Job replaces it" if by_itself == len(survivors) == 1 else
                   "on Kubernetes their pods fail and the Job replaces them" if by_itself == len(survivors) else
                   "a pod whose worker does not exit never fails, and is never replaced")
        if lost_alive and by_itself == len(survivors):
            verdict += (f", but worker {lost} still runs and never exits: the new "
                        f"worker{'s wait' if len(survivors) > 1 else ' waits'} for it to join, so on Kubernetes the "
                        "job makes no progress until activeDeadlineSeconds (or backoffLimit, if a waiting worker "
                        "gives up and fails again) ends it. Under SLURM, srun --kill-on-bad-exit=1 ends the whole "
                        f"step, worker {lost} included, as soon as a survivor exits with code {code}"
                        f"{' or crashes' if aborted else ''}, and the batch "
                        "script requeues the job")
        how = f'with code {code} (the script\'s "lost the cluster")' + (" or by TensorFlow's abort (SIGABRT)"
                                                                        if aborted else "")
        parts.append(f"Rule: a survivor exits by itself when it ends {how} within {bound:g} s; so {by_itself} of "
                     f"{len(survivors)} did" + (f" ({aborted} by the abort)" if aborted else "") + f": {verdict}.")
    return " ".join(parts)


SAME_WEIGHTS = 1e-6  # workers' sums of |w| that agree to this relative tolerance count as identical weights


def restart_reading(losses: Mapping[str, Sequence[Sequence[float]]], killed_at_epoch: int, resumed_from_epoch: int,
                    optimizer_step: int, steps_per_epoch: int, checksums: Sequence[float],
                    tolerance: float = SAME_WEIGHTS) -> str:
    """Sentences that read the restart from what was measured: what came back, what was lost, the weights.

    `losses` maps ``"run 1"`` and ``"run 2"`` to ``(epoch, mean loss)`` pairs of the chief. The
    rules, stated where they apply: the restart continued training when the first loss after it,
    as printed (3 decimals), is below run 1's first; the workers' weights are identical when their
    sums of ``|w|`` agree to within `tolerance`, relative (:data:`SAME_WEIGHTS`).

    Example:
        >>> print(restart_reading({"run 1": [(1, 0.9), (2, 0.6)], "run 2": [(3, 0.5), (4, 0.45)]},
        ...                       3, 2, 80, 40, [12.5, 12.5]))  # doctest: +NORMALIZE_WHITESPACE
        Run 2 restored 2 finished epochs and the optimizer's step count, 80 = 2 x 40 steps, then trained
        epochs 3 to 4. Lost to the crash: half of epoch 3, the part done before the kill. The first epoch after
        the restart has a mean loss of 0.500, below run 1's first epoch (0.900): training went on from the
        checkpoint instead of starting over. Both workers end with identical weights (sum of |w| = 12.500000 on
        each, equal to within 1e-06 relative): every step applied the same all-reduced gradients.
    """
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 <= tolerance < 1:
        raise ValueError(f"tolerance={tolerance!r}: use a relative tolerance from 0 up to 1, such as 1e-6.")
    run_1, run_2 = list(losses.get("run 1", [])), list(losses.get("run 2", []))
    if not run_2:
        return "Run 2 recorded no epoch: read the workers' logs above to see why."
    first, last = int(run_2[0][0]), int(run_2[-1][0])
    expected_step = resumed_from_epoch * steps_per_epoch
    step_text = (f"and the optimizer's step count, {optimizer_step} = {resumed_from_epoch} x {steps_per_epoch} steps"
                 if optimizer_step == expected_step else
                 f"but the optimizer's step count came back as {optimizer_step}, not {expected_step} = "
                 f"{resumed_from_epoch} x {steps_per_epoch}")
    trained = f"epoch {first}" if first == last else f"epochs {first} to {last}"
    parts = [f"Run 2 restored {resumed_from_epoch} finished epochs {step_text}, then trained {trained}."]
    lost_whole = killed_at_epoch - 1 - resumed_from_epoch
    if killed_at_epoch < 1:
        parts.append("No worker died during an epoch of run 1 (killed_at_epoch is 0), so the crash cost nothing.")
    elif lost_whole < 0:
        parts.append(f"That is more than the {killed_at_epoch - 1} epoch(s) finished before the kill during epoch "
                     f"{killed_at_epoch}: the checkpoint folder held a save from another run.")
    else:
        lost = f"half of epoch {killed_at_epoch}, the part done before the kill"
        if lost_whole > 0:
            lost += f", and {lost_whole} finished epoch(s) after the last checkpoint"
        parts.append(f"Lost to the crash: {lost}.")
    if run_1:
        after, before = round(float(run_2[0][1]), 3), round(float(run_1[0][1]), 3)  # as printed
        if not (math.isfinite(after) and math.isfinite(before)):
            parts.append(f"The first epoch after the restart has a mean loss of {after:.3f}, run 1's first epoch "
                         f"{before:.3f}: a loss that is not a number means training diverged.")
        else:
            below = after < before
            relation = "below" if below else "equal to" if after == before else "above"
            verdict = ("training went on from the checkpoint instead of starting over" if below else
                       "the restart does not look like a continuation: check that both runs used the same folder")
            parts.append(f"The first epoch after the restart has a mean loss of {after:.3f}, {relation} run 1's "
                         f"first epoch ({before:.3f}): {verdict}.")
    if checksums:
        values = [float(c) for c in checksums]
        who = ("The one worker" if len(values) == 1 else "Both workers" if len(values) == 2 else
               f"All {len(values)} workers")
        spread = max(values) - min(values)
        if not all(math.isfinite(v) for v in values):
            parts.append(f"Some weights are not finite (sums of |w|: {values}): training diverged.")
        elif len(values) == 1:
            parts.append(f"{who} ends with a sum of |w| of {values[0]:.6f}; with one worker there is nothing to "
                         "compare.")
        elif spread <= tolerance * max(1.0, abs(max(values, key=abs))):
            rule = f"equal to within {tolerance:.0e} relative" if tolerance else "exactly equal"
            parts.append(f"{who} end with identical weights (sum of |w| = {values[0]:.6f} on each, {rule}): every "
                         "step applied the same all-reduced gradients.")
        else:
            apart = f"more than {tolerance:.0e} relative apart" if tolerance else "not exactly equal"
            parts.append(f"The workers' weights differ (sums of |w| from {min(values):.9g} to {max(values):.9g}, "
                         f"{apart}): their updates were not the same.")
    return " ".join(parts)
