"""Topic module of notebook 04 · Input pipelines and preprocessing on the GPU.

Plumbing only: the ``tf.data`` pipelines, the training step, the three timings and the profiler
calls stay on the notebook's page. Here live the notebook's batch-size limits
(:func:`check_batch_size`), timing of rivals in alternating rounds (:func:`interleaved`,
:func:`separable`), the capture of TensorFlow's Python warnings (:func:`captured_tf_warnings`), the
summary of xprof's input-pipeline tool (:func:`input_pipeline_summary`), the command that opens a
trace in TensorBoard from a terminal (:func:`tensorboard_command`), the plumbing of the inline TensorBoard
(this kernel's port on 127.0.0.1, :func:`tensorboard_port`; the servers this kernel started,
:func:`tensorboard_servers`; their stop, :func:`stop_tensorboard`), the number of cores tf.data may use
(:func:`schedulable_cores`), the share of the step spent waiting for input read from three timings
(:func:`wait_share`), its range within the timings' spread (:func:`wait_range`) and its label by the
thresholds the notebook shows on its page (:func:`wait_level`), and the sentences that read the
measurements, worded for a CPU or a GPU run (:func:`bound_reading`, :func:`variants_reading`,
:func:`profiler_reading`, :func:`placement_reading`, :func:`augmentation_reading`). The readings format;
the rule they apply is stated in each sentence, and the thresholds come from the notebook.

For the section "tf.data at scale": the order-free checksum of the shards read back
(:func:`record_checksum`), the reading of a two-way comparison in alternating rounds
(:func:`rounds_reading`: interleave sequential vs parallel, map then batch vs batch then map), the
pipeline timeline (:class:`Timeline`, :func:`timeline_shares`, :func:`timeline_figure`) and the host
thread pools of a profiler trace (:func:`trace_threads`, :func:`thread_names`).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import logging
import math
import os
import re
import shutil
import statistics
import sys
import warnings
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from helpers import bench

ROOT = Path(__file__).resolve().parent.parent
TRAINING_IMAGES = 10_000  # the Fashion-MNIST subset in data/
MIN_BATCH = 16
BATCHES = 20  # batches per epoch in a learner run: the pipelines hold BATCHES x BATCH_SIZE images


def check_batch_size(batch_size: Any, batches: int = BATCHES, images: int = TRAINING_IMAGES) -> int:
    """Refuse a ``BATCH_SIZE`` this notebook cannot use, before TensorFlow starts; return it.

    The pipelines hold `batches` batches of the `images` training images, and a batch below 16
    images makes every step so short that timer noise decides the comparison.

    Example:
        >>> check_batch_size(128)
        128
        >>> check_batch_size(1000)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ValueError: BATCH_SIZE=1000 is not allowed in this notebook: use an integer from 16 to 500 (...).
    """
    high = images // batches
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not MIN_BATCH <= batch_size <= high:
        raise ValueError(f"BATCH_SIZE={batch_size!r} is not allowed in this notebook: use an integer from {MIN_BATCH} "
                         f"to {high} ({batches} batches of the {images:,} training images).")
    return batch_size


def interleaved(candidates: Mapping[str, Callable[[], Any]], rounds: int = 3, repeats: int = 10,
                warmup: int = 2) -> dict[str, list[float]]:
    """Time rival variants in alternating rounds; return each one's median time per round, in seconds.

    On a shared machine the load changes from second to second. Timing A fully, then B, lets a
    busy minute land on one of them only; alternating A, B, A, B spreads it over both, and the
    spread of the round medians shows how far apart the two really are.

    Example:
        >>> t = interleaved({"a": lambda: sum(range(100)), "b": lambda: sum(range(1000))}, rounds=2, repeats=3)
        >>> sorted(t), len(t["a"])
        (['a', 'b'], 2)
    """
    if not candidates:
        raise ValueError("candidates is empty: pass {name: function} with at least one entry.")
    if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 1:
        raise ValueError(f"rounds={rounds!r}: use an integer >= 1.")
    for name, fn in candidates.items():
        if not callable(fn):
            raise ValueError(f"candidates[{name!r}] is not callable: pass a function that runs one step.")
    medians: dict[str, list[float]] = {name: [] for name in candidates}
    for index in range(rounds):
        for name, fn in candidates.items():
            # one step per timed repeat: a step lasts milliseconds, so one wait per step costs little
            result = bench.benchmark(fn, warmup=warmup if index == 0 else 1, repeats=repeats, calls_per_sync=1)
            medians[name].append(result.median)
    return medians


def separable(a: Sequence[float], b: Sequence[float]) -> bool:
    """True when the two sets of round medians do not overlap: one variant was faster in every round.

    Example:
        >>> separable([1.0, 1.1, 1.05], [1.5, 1.6, 1.4])
        True
        >>> separable([1.0, 1.3], [1.2, 1.4])
        False
    """
    if not a or not b:
        raise ValueError("separable needs at least one time in each list.")
    return max(a) < min(b) or max(b) < min(a)


@contextlib.contextmanager
def captured_tf_warnings() -> Iterator[list[str]]:
    """Collect the messages TensorFlow's Python logger and Python's warnings emit inside the block.

    They are kept in the list this yields instead of reaching the page (in red). TensorFlow 2.9's
    ``Using a while_loop for converting ...`` lines came through that logger.

    Example:
        >>> with captured_tf_warnings() as seen:
        ...     logging.getLogger("tensorflow").warning("Using a while_loop for converting Bitcast")
        >>> seen
        ['Using a while_loop for converting Bitcast']
    """
    seen: list[str] = []

    class _Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    logger = logging.getLogger("tensorflow")
    handler, saved = _Keep(level=logging.DEBUG), (logger.handlers[:], logger.propagate)
    logger.handlers, logger.propagate = [handler], False
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield seen
        seen.extend(str(w.message) for w in caught)
    finally:
        logger.handlers, logger.propagate = saved


def tensorboard_command(logdir: str | Path, port: int = 6006) -> str:
    """The lines that open the traces in `logdir` with TensorBoard, on this machine only (127.0.0.1).

    ``make tensorboard`` when `logdir` is the course's default scratch folder; otherwise the
    ``tensorboard`` command of this Python's environment with the folder spelled out.

    Example:
        >>> "--host 127.0.0.1" in tensorboard_command("/tmp/traces")
        True
    """
    if not isinstance(port, int) or isinstance(port, bool) or not 1024 <= port <= 65535:
        raise ValueError(f"port={port!r}: use an integer from 1024 to 65535.")
    logdir = Path(logdir).resolve()
    exe = Path(sys.executable).parent / "tensorboard"
    program = str(exe) if exe.exists() else (shutil.which("tensorboard") or "tensorboard")
    lines = []
    if logdir == (ROOT / "scratch" / "04_input_pipelines" / "traces").resolve():
        lines.append("make tensorboard")
        lines.append("or, the same by hand:")
    lines.append(f"{program} --logdir {logdir} --host 127.0.0.1 --port {port}")
    lines.append(f"then open http://127.0.0.1:{port}/#profile and pick a run (naive or tuned) and a tool.")
    return "\n".join(lines)


# Inline TensorBoard (section "Opening the trace in TensorBoard"). `%tensorboard` (tensorboard/notebook.py) hands its
# arguments to tensorboard.manager.start, which reuses a running server whose cache key (the working folder and
# the arguments) matches, or starts `tensorboard` (from PATH, or $TENSORBOARD_BINARY) as a child of the kernel and
# waits, polling every 0.5 s for up to 60 s, until the child writes its record,
# <temp dir>/.tensorboard-info/pid-<pid>.info. The child removes that record when it exits cleanly (SIGTERM).
TENSORBOARD_HOST = "127.0.0.1"  # never the wildcard: --bind_all would serve the traces to the whole network
_kernel_port: int | None = None
_stop_at_exit = False
_launcher: str | None = None
# The program %tensorboard starts here: TensorBoard without TensorFlow. `tensorboard/main_lib.py` imports TensorFlow
# when it is installed (most of TensorBoard's start-up time); without it, TensorBoard reads files with its own
# reader, and the profile plugin (xprof) serves every tool notebook 04 names. A file that is both a shell and
# a Python script, as pip writes its own console scripts, so that a path with spaces works.
LAUNCHER = """#!/bin/sh
'''exec' "{python}" "$0" "$@"
' '''
# Written by helpers.pipelines.tensorboard_port: TensorBoard, without importing TensorFlow.
import sys

sys.modules["tensorflow"] = None  # importing TensorFlow fails at once: TensorBoard uses its own file reader
from tensorboard.main import run_main

sys.argv[0] = "tensorboard"
sys.exit(run_main())
"""


def _write_launcher(folder: Path) -> str | None:
    """Write :data:`LAUNCHER` for this Python into `folder` as ``tensorboard``; None where it cannot run (Windows)."""
    if os.name != "posix" or importlib.util.find_spec("tensorboard") is None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / "tensorboard"
    text = LAUNCHER.format(python=sys.executable)
    if not program.exists() or program.read_text() != text:
        temporary = folder / f".tensorboard.{os.getpid()}"
        temporary.write_text(text)
        temporary.chmod(0o755)
        temporary.replace(program)  # whole or not at all
    return str(program)


def _port_free(port: int) -> bool:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((TENSORBOARD_HOST, port))
        except OSError:
            return False
    return True


def _tensorboard_info_dir() -> Path:
    """Where TensorBoard records its running servers: tensorboard.manager._get_info_dir, computed the same way."""
    import tempfile

    return Path(tempfile.gettempdir()) / ".tensorboard-info"


def _is_tensorboard(cmdline: Sequence[str]) -> bool:
    names = [Path(arg).name for arg in cmdline[:2]]
    return any(n in ("tensorboard", "tensorboard.exe") for n in names) or "tensorboard.main" in cmdline[:3]


def _flag(cmdline: Sequence[str], name: str) -> str | None:
    for i, arg in enumerate(cmdline):
        if arg == name and i + 1 < len(cmdline):
            return cmdline[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def _forget_stale_records() -> list[int]:
    """Remove the records of TensorBoard servers that no longer run (killed without a chance to clean up).

    tensorboard.manager would otherwise offer such a record for reuse ("Reusing TensorBoard on port ...")
    and show an empty frame. Returns the pids whose records were removed.
    """
    import psutil

    removed = []
    for record in sorted(_tensorboard_info_dir().glob("pid-*.info")):
        match = re.fullmatch(r"pid-(\d+)\.info", record.name)
        if match and not psutil.pid_exists(int(match.group(1))):
            with contextlib.suppress(OSError):
                record.unlink()
                removed.append(int(match.group(1)))
    return removed


def tensorboard_port(logdir: str | Path) -> int:
    """Get ready for ``%tensorboard`` on `logdir`; return this kernel's port for it on 127.0.0.1.

    The port is one the operating system reports free, chosen once per Python process and kept while
    it stays free or serves this process's own TensorBoard: running the cell again reuses this
    kernel's server, and two kernels (two learners on one server, two tests at once) never share one.
    It also points ``%tensorboard`` ($TENSORBOARD_BINARY, unless you set it) at :data:`LAUNCHER`,
    written next to `logdir` as ``tensorboard_launcher/tensorboard``: this Python's TensorBoard, found
    even when a JupyterLab was started without activating the environment, started without importing
    TensorFlow (on Windows, the ``tensorboard`` on PATH instead). It forgets the records of servers
    that no longer run, and arranges for this process's servers to be stopped when it exits
    (:func:`stop_tensorboard`).

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     (Path(folder) / "traces").mkdir()
        ...     port = tensorboard_port(Path(folder) / "traces")
        >>> 1024 <= port <= 65535
        True
    """
    global _kernel_port, _stop_at_exit, _launcher
    if not isinstance(logdir, (str, Path)) or not Path(logdir).is_dir():
        raise ValueError(f"logdir={str(logdir)!r} is not a folder: pass the folder the profiler wrote its traces "
                         "under (trace_root).")
    if os.environ.get("TENSORBOARD_BINARY") in (None, _launcher):  # a value you set yourself is kept
        program = _write_launcher(Path(logdir).resolve().parent / "tensorboard_launcher")
        if program:
            _launcher = os.environ["TENSORBOARD_BINARY"] = program
    _forget_stale_records()
    if not _stop_at_exit:
        import atexit

        atexit.register(stop_tensorboard)
        _stop_at_exit = True
    ours = {server["port"] for server in tensorboard_servers()}
    if _kernel_port is None or not (_kernel_port in ours or _port_free(_kernel_port)):
        import socket

        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((TENSORBOARD_HOST, 0))  # port 0: the operating system picks a free one
            _kernel_port = int(s.getsockname()[1])
    return _kernel_port


def _tensorboard_children(port: int | None = None) -> list[Any]:
    import psutil

    found = []
    for child in psutil.Process().children():
        try:
            cmdline = child.cmdline()
        except psutil.Error:  # exited meanwhile, or a zombie
            continue
        if _is_tensorboard(cmdline) and (port is None or (_flag(cmdline, "--port") or "6006") == str(port)):
            found.append(child)
    return found


def tensorboard_servers(port: int | None = None) -> list[dict[str, Any]]:
    """The TensorBoard servers this Python process started (its children), on `port` or on any port.

    Each is a dict: ``pid``, ``port`` (from its command line), ``listening`` (the addresses its sockets
    listen on, as ``"ip:port"``) and ``logdir``.

    Example:
        >>> tensorboard_servers()  # none started here
        []
    """
    import psutil

    if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535):
        raise ValueError(f"port={port!r}: use an integer from 0 to 65535, or None for any port.")
    servers = []
    for child in _tensorboard_children(port):
        try:
            cmdline = child.cmdline()
            # psutil 6 renamed Process.connections to net_connections; Colab ships psutil 5.9.5
            sockets = (getattr(child, "net_connections", None) or child.connections)(kind="inet")
        except psutil.Error:
            continue
        listening = sorted(f"{c.laddr.ip}:{c.laddr.port}" for c in sockets if c.status == psutil.CONN_LISTEN)
        servers.append({"pid": child.pid, "port": int(_flag(cmdline, "--port") or 6006), "listening": listening,
                        "logdir": _flag(cmdline, "--logdir") or ""})
    return servers


def stop_tensorboard(port: int | None = None, timeout: float = 10.0) -> list[int]:
    """Stop the TensorBoard servers this Python process started (on `port`, or all), remove their records.

    Only this process's children are touched, so a server another kernel or a terminal started stays
    up. SIGTERM first (TensorBoard then removes its own record), SIGKILL after `timeout` seconds; each
    is waited for, so none is left as a zombie. The two files ``%tensorboard`` made for the server's
    output (``.tensorboard-stdout-*``, ``.tensorboard-stderr-*`` in the temporary folder) go too.
    Returns the pids stopped, empty when none ran.

    Example:
        >>> stop_tensorboard()  # none started here
        []
    """
    import psutil

    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= 600:
        raise ValueError(f"timeout={timeout!r}: use a number of seconds above 0, at most 600.")
    if port is not None:
        tensorboard_servers(port)  # checks the port
    children = _tensorboard_children(port)
    logs = []  # the files tensorboard.manager.start made for the server's output (mkstemp, never removed there)
    for child in children:
        with contextlib.suppress(psutil.Error):
            logs += [f.path for f in child.open_files() if re.match(r"\.tensorboard-std(out|err)-", Path(f.path).name)]
        with contextlib.suppress(psutil.NoSuchProcess):
            child.terminate()
    _, alive = psutil.wait_procs(children, timeout=timeout)
    for child in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            child.kill()
    psutil.wait_procs(alive, timeout=timeout)
    for path in [*(_tensorboard_info_dir() / f"pid-{child.pid}.info" for child in children), *logs]:
        with contextlib.suppress(OSError):
            Path(path).unlink()
    return sorted(child.pid for child in children)


def input_pipeline_summary(tool_json: str | bytes) -> dict[str, Any]:
    """The step time, the wait for input and the verdict from xprof's ``input_pipeline_analyzer`` output.

    `tool_json` is what ``xprof.convert.raw_to_tool_data.xspace_to_tool_data(paths,
    "input_pipeline_analyzer", {})`` returns first: a JSON list of tables, one of which carries the
    summary of the step-time table in its ``"p"`` properties.

    Example:
        >>> table = {"p": {"steptime_ms_average": "148.8", "infeed_time_ms_avg": "129.4",
        ...                "input_conclusion": "Your program is HIGHLY input-bound because ..."}}
        >>> input_pipeline_summary(json.dumps([{"cols": []}, table]))["input_ms"]
        129.4
    """
    try:
        tables = json.loads(tool_json)
    except (TypeError, ValueError) as err:
        raise ValueError(f"tool_json is not the JSON of xprof's input_pipeline_analyzer: {err}") from None
    for table in tables if isinstance(tables, list) else []:
        summary = table.get("p", {}) if isinstance(table, dict) else {}
        if "steptime_ms_average" in summary and "infeed_time_ms_avg" in summary:
            return {"step_ms": float(summary["steptime_ms_average"]), "input_ms": float(summary["infeed_time_ms_avg"]),
                    "conclusion": summary.get("input_conclusion", "")}
    raise ValueError("tool_json holds no step-time summary: was the trace recorded with "
                     "tf.profiler.experimental.Trace(..., step_num=i, _r=1) around each step?")


def schedulable_cores() -> int:
    """The CPU cores this process may run on: tf.data's default CPU budget for AUTOTUNE.

    Example:
        >>> schedulable_cores() >= 1
        True
    """
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # macOS and Windows have no sched_getaffinity
        return os.cpu_count() or 1


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"


def _check_times(**times: float) -> None:
    for label, value in times.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise ValueError(f"{label}={value!r}: use a positive number of seconds.")


def _check_thresholds(thresholds: Any) -> tuple[float, float]:
    try:
        low, high = (float(t) for t in thresholds)
    except (TypeError, ValueError):
        raise ValueError(f"thresholds={thresholds!r}: use a pair (moderately_from, input_bound_from) of shares, "
                         "0 < moderately_from < input_bound_from < 1, such as (0.05, 0.20).") from None
    if not 0 < low < high < 1:
        raise ValueError(f"thresholds={thresholds!r}: use a pair (moderately_from, input_bound_from) of shares, "
                         "0 < moderately_from < input_bound_from < 1, such as (0.05, 0.20).")
    return low, high


def _check_share(label: str, share: Any) -> float:
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
        raise ValueError(f"{label}={share!r}: use a share of the step between 0 and 1.")
    return float(share)


def wait_level(share: float, thresholds: tuple[float, float]) -> str:
    """The label of a wait share: the profiler's rule, with the thresholds the notebook shows on its page.

    `thresholds` is ``(moderately_from, input_bound_from)``: a step that waits for input at least
    `input_bound_from` of its time is "input-bound" (xprof's input-pipeline tool says "HIGHLY
    input-bound" from 20 %), from `moderately_from` "moderately input-bound" (xprof: from 5 %), below
    it "not input-bound".

    Example:
        >>> wait_level(0.46, (0.05, 0.20)), wait_level(0.20, (0.05, 0.20)), wait_level(0.01, (0.05, 0.20))
        ('input-bound', 'input-bound', 'not input-bound')
    """
    low, high = _check_thresholds(thresholds)
    share = _check_share("share", share)
    if share >= high:
        return "input-bound"
    return "moderately input-bound" if share >= low else "not input-bound"


def wait_share(input_s: float, model_s: float, step_s: float, prefetch: bool) -> float:
    """The share of each step the device waits for its batch, read from the three timings.

    Without prefetch the step asks for its batch and waits while the pipeline makes it, so every
    moment of the step not spent on the model is waiting: (step - model) / step. With prefetch
    the next batch is made in the background; when it takes less time than the model it is ready
    before the model asks, and the device does not wait (any extra step time is the two sides
    sharing the machine, not waiting). When it takes longer, the device waits (step - model) / step.

    Example:
        >>> wait_share(0.150, 0.037, 0.185, prefetch=False)  # naive: the step waits for its whole input
        0.8
        >>> wait_share(0.007, 0.035, 0.040, prefetch=True)  # input shorter than the model: ready in time
        0.0
    """
    _check_times(input_s=input_s, model_s=model_s, step_s=step_s)
    if prefetch and input_s <= model_s:
        return 0.0
    return round(max(0.0, step_s - model_s) / step_s, 6)


def wait_range(input_s: float, model_s: float, step_s: float, prefetch: bool,
               iqrs: tuple[float, float, float]) -> tuple[float, float]:
    """The lowest and highest wait share when each timing moves by half its IQR, either way.

    `iqrs` holds the inter-quartile ranges of the input, model and step timings, in seconds. A
    label that changes inside this range is one the run cannot tell.

    Example:
        >>> wait_range(0.096, 0.0162, 0.127, False, iqrs=(0.0057, 0.0012, 0.024))
        (0.853913, 0.88777)
    """
    _check_times(input_s=input_s, model_s=model_s, step_s=step_s)
    try:
        spreads = [float(v) for v in iqrs]
    except (TypeError, ValueError):
        spreads = []
    if len(spreads) != 3 or any(not math.isfinite(v) or v < 0 for v in spreads):
        raise ValueError(f"iqrs={iqrs!r}: give three IQRs in seconds (input, model, step), each >= 0.")
    shares = []
    for di in (-1, 1):
        for dm in (-1, 1):
            for ds in (-1, 1):
                moved = [max(t + d * s / 2, t * 1e-6) for t, d, s in
                         ((input_s, di, spreads[0]), (model_s, dm, spreads[1]), (step_s, ds, spreads[2]))]
                shares.append(wait_share(*moved, prefetch=prefetch))
    return min(shares), max(shares)


def _pct(share: float, thresholds: tuple[float, float]) -> str:
    """A share as a percentage, with as many decimals as it takes to stay on its side of each threshold."""
    for digits in range(5):
        text = f"{share * 100:.{digits}f}"
        if wait_level(min(1.0, float(text) / 100), thresholds) == wait_level(share, thresholds):
            return f"{text}%"
    return f"{share * 100:.6f}%"


def _rule(thresholds: tuple[float, float]) -> str:
    low, high = thresholds
    return (f"a step is input-bound when it waits for input {_pct(high, thresholds)} of its time or more, and "
            f"moderately input-bound from {_pct(low, thresholds)}")


def _ms_sum(*seconds: float) -> str:
    """The sum of times as printed by :func:`_ms` (each rounded first), so that the sum matches the printed parts."""
    total = sum(float(_ms(s)[:-3]) for s in seconds)
    return f"{round(total, 6):g} ms"


OVERLAP_RULE = ("we read the share of the shorter side hidden, (input + model - step) / shorter: below 1/3 means no "
                "overlap, above 2/3 a full one, between a partial one, and a verdict that changes when each timing "
                "moves by half its IQR is left open")


def _hidden_class(input_s: float, model_s: float, step_s: float) -> str:
    longer, shorter = max(input_s, model_s), min(input_s, model_s)
    hidden = (input_s + model_s - step_s) / shorter
    if step_s < 0.8 * longer:
        return "shorter"
    return "added" if hidden < 1 / 3 else "overlapped" if hidden > 2 / 3 else "partly"


def _overlap(input_s: float, model_s: float, step_s: float, prefetch: bool, gpu_count: int,
             iqrs: Sequence[float] = (0.0, 0.0, 0.0)) -> str:
    """One sentence: did the input side and the model overlap, from where the step falls between max and sum?

    The same half-IQR rule as the wait share: when moving each timing by half its IQR changes the
    answer, the sentence says this run cannot tell.
    """
    longer, shorter = max(input_s, model_s), min(input_s, model_s)
    both = _ms_sum(input_s, model_s)
    if step_s < 0.8 * longer:
        return (f"The step came out shorter than its longer side alone ({_ms(longer)}): the load on this machine "
                "changed between the timings, so run the cell again for steadier figures.")
    if shorter < 0.1 * longer:
        return (f"Whether the two overlapped cannot be told here: the shorter side ({_ms(shorter)}) is under a tenth "
                f"of the longer one, so the longer side alone ({_ms(longer)}) and input + model ({both}) are "
                "about the same step.")
    hidden = min(1.0, max(0.0, (input_s + model_s - step_s) / shorter))
    classes = set()
    for di in (-1, 1):
        for dm in (-1, 1):
            for ds in (-1, 1):
                moved = [max(t + d * s / 2, t * 1e-6) for t, d, s in
                         ((input_s, di, iqrs[0]), (model_s, dm, iqrs[1]), (step_s, ds, iqrs[2]))]
                classes.add(_hidden_class(*moved))
    classes.add(_hidden_class(input_s, model_s, step_s))
    if not prefetch:  # nothing overlaps by design: the step should lie near input + model, within half the IQRs
        if _hidden_class(input_s, model_s, step_s) == "added":
            return (f"The step is close to input + model ({both}), not to the longer side alone ({_ms(longer)}): "
                    f"{hidden:.0%} of the shorter side hidden ({OVERLAP_RULE}): the two ran one after the other, "
                    "with no overlap.")
        if "added" in classes:
            return (f"The step ({_ms(step_s)}) came out below input + model ({both}), {hidden:.0%} of the shorter side "
                    "hidden as measured, but with each timing moved by half its IQR it reaches 'no overlap' "
                    f"({OVERLAP_RULE}). Nothing in this pipeline prepares the next batch in the background, so the two "
                    "ran one after the other and the gap is within this run's noise.")
        return (f"The step came out shorter than input + model ({both}) by {hidden:.0%} of the shorter side, beyond "
                "half the timings' IQRs, though nothing in this pipeline prepares the next batch in the background: "
                "the two ran one after the other, so the load on this machine changed between the timings (run the "
                f"cell again for steadier figures; {OVERLAP_RULE}).")
    if len(classes) > 1:
        raw = (input_s + model_s - step_s) / shorter
        where = ("lies between the longer side alone ({}) and input + model ({})" if 0 <= raw <= 1 else
                 "came out below the longer side alone ({}), so below input + model ({}) too" if raw > 1 else
                 "came out above the longer side alone ({}) and above input + model ({})")
        return (f"Whether the two overlapped cannot be told here: the step ({_ms(step_s)}) "
                f"{where.format(_ms(longer), both)}, {hidden:.0%} of the shorter side hidden as measured, but with "
                f"each timing moved by half its IQR that share crosses 1/3 or 2/3 ({OVERLAP_RULE}).")
    if hidden < 1 / 3:
        text = (f"The step is close to input + model ({both}), not to the longer side alone ({_ms(longer)}), "
                f"with {hidden:.0%} of the shorter side hidden ({OVERLAP_RULE}): ")
        if gpu_count:
            return text + "prefetch made the next batch in the background, yet the two sides' times still added up."
        return text + ("prefetch made the next batch in the background, but on the same CPU cores the model uses, "
                       "so the two sides' work still added up.")
    if hidden > 2 / 3:
        return (f"The step is close to the longer side alone ({_ms(longer)}), not to input + model ({both}): "
                f"preparing the next batch overlapped with training on this one ({hidden:.0%} of the shorter side "
                f"hidden; {OVERLAP_RULE}).")
    return (f"The step lies between the longer side alone ({_ms(longer)}) and input + model ({both}): the two "
            f"partly overlapped ({hidden:.0%} of the shorter side was hidden; {OVERLAP_RULE}).")


def bound_reading(input_s: float, model_s: float, step_s: float, gpu_count: int, name: str = "naive",
                  prefetch: bool = False, *, thresholds: tuple[float, float],
                  iqrs: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> str:
    """Read three median timings of one pipeline: its label by the wait share, the overlap, how the wait was read.

    The label is :func:`wait_level` of the wait share (:func:`wait_share`) with the notebook's
    `thresholds`; when the share, with each timing moved by half its IQR (:func:`wait_range`), falls
    on both sides of a threshold, the reading says the run cannot tell. `prefetch` says whether the
    pipeline makes the next batch in the background.

    Example:
        >>> bound_reading(0.12, 0.03, 0.15, gpu_count=0, thresholds=(0.05, 0.20))[:70]
        'The naive pipeline is input-bound: the model (on the CPU, which also r'
    """
    _check_times(input_s=input_s, model_s=model_s, step_s=step_s)
    thresholds = _check_thresholds(thresholds)
    share = wait_share(input_s, model_s, step_s, prefetch)
    low, high = wait_range(input_s, model_s, step_s, prefetch, iqrs)
    level, low_level, high_level = (wait_level(s, thresholds) for s in (share, low, high))
    who = "the GPU" if gpu_count else "the model (on the CPU, which also runs the pipeline)"
    where = "GPU" if gpu_count else "CPU"
    spread = (f"{_pct(low, thresholds)} to {_pct(high, thresholds)} with each timing moved by half its IQR"
              if _pct(low, thresholds) != _pct(high, thresholds) else
              f"{_pct(low, thresholds)} too with each timing moved by half its IQR")
    if low_level == high_level:
        text = (f"The {name} pipeline is {level}: {who} waited for input {_pct(share, thresholds)} of each step "
                f"({spread}), and {_rule(thresholds)}. ")
    else:
        either = (f"{low_level} or {high_level}" if {low_level, high_level} != {"not input-bound", "input-bound"}
                  else f"anywhere from {low_level} to {high_level}")
        text = (f"The {name} pipeline is {either}, and this run cannot tell which: {who} waited "
                f"for input {_pct(share, thresholds)} of each step, but {spread}, which crosses a threshold "
                f"({_rule(thresholds)}). Run the cell again for steadier figures. ")
    text += (f"A batch takes {_ms(input_s)} to prepare and {_ms(model_s)} to train on, and one step of both took "
             f"{_ms(step_s)} (medians, measured on this {where}). ")
    text += _overlap(input_s, model_s, step_s, prefetch, gpu_count, iqrs) + " "
    if not prefetch:
        return text + ("Without prefetch the step asks for its batch and waits while it is made, so the wait is "
                       "(step - model) / step.")
    if input_s > model_s:
        return text + ("Prefetch makes the next batch in the background, but that takes longer than the model, so "
                       "the wait is (step - model) / step.")
    text += (f"With prefetch the next batch takes less time to make than the model, so it was ready before {who} "
             "asked for it and the wait is 0")
    extra = (step_s - model_s) / model_s
    if abs(extra) <= 0.05:
        return text + "; the step took as long as the model alone."
    if extra < 0:
        if step_s < 0.8 * max(input_s, model_s):  # the overlap sentence has said so already
            return text + f"; the step came out {-extra:.0%} shorter than the model alone."
        return text + (f"; the step came out {-extra:.0%} shorter than the model alone: the load on this machine "
                       "changed between the timings.")
    why = ("the pipeline's threads and the model share the same CPU cores" if not gpu_count else
           "most likely the CPU time the pipeline takes from launching the GPU's work")
    return text + f"; the step was still {extra:.0%} longer than the model alone: {why}, not a wait."


def _compare(a_per_s: float, a_spread: float, b_per_s: float, b_spread: float) -> int:
    """+1 when a is faster than b beyond the spread (the middle halves of the step times do not overlap), -1 slower."""
    a_step, b_step = 1 / a_per_s, 1 / b_per_s
    if a_step * (1 + a_spread / 2) < b_step * (1 - b_spread / 2):
        return 1
    if b_step * (1 + b_spread / 2) < a_step * (1 - a_spread / 2):
        return -1
    return 0


def _times(ratio: float, digits: int = 1) -> str:
    """A ratio as '1.3x', with enough decimals that a ratio above 1 never prints as 1.0x (nor one below it)."""
    for places in range(digits, 13):
        text = f"{ratio:.{places}f}"
        if (float(text) > 1) == (ratio > 1) and (float(text) < 1) == (ratio < 1):
            return f"{text}x"
    return f"{ratio!r}x"


RULE_FASTER = ("we call one pipeline faster than another only when the middle halves of their step times "
               "(median ± IQR/2) do not overlap")


def variants_reading(images_per_s: Mapping[str, float], input_s: float, model_s: float,
                     cores: int | None = None, *, spreads: Mapping[str, float]) -> str:
    """Read the throughput of the pipeline variants against the naive one.

    `spreads` holds each variant's relative spread (IQR / median of its step times, as
    ``BenchResult.spread``): a variant is called faster or slower only beyond it (:data:`RULE_FASTER`).
    `input_s` and `model_s` are the naive pipeline's input time and the model's step time: prefetch
    alone can hide at most the shorter of the two. `cores` is AUTOTUNE's CPU budget (by default
    :func:`schedulable_cores`).

    Example:
        >>> v = {"naive": 800, "parallel": 1800, "cached": 2900, "prefetched": 850, "tuned": 3100}
        >>> s = dict.fromkeys(v, 0.05)
        >>> variants_reading(v, input_s=0.14, model_s=0.035, cores=2, spreads=s).splitlines()[0]
        'The tuned pipeline trains 3.9x as fast as the naive one (3,100 against 800 images/s).'
    """
    needed = ("naive", "parallel", "cached", "prefetched", "tuned")
    missing = [k for k in needed if k not in images_per_s]
    if missing:
        raise ValueError(f"images_per_s lacks {missing}: measure {', '.join(needed)}.")
    for key, value in images_per_s.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise ValueError(f"images_per_s[{key!r}]={value!r}: every variant's rate must be a positive number.")
    for key in images_per_s:
        value = spreads.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ValueError(f"spreads[{key!r}]={value!r}: give each variant's IQR / median, a number >= 0.")
    _check_times(input_s=input_s, model_s=model_s)
    cores = schedulable_cores() if cores is None else cores
    naive = images_per_s["naive"]

    def x(name: str) -> str:
        return _times(images_per_s[name] / naive)

    def vs_naive(name: str) -> int:
        return _compare(images_per_s[name], spreads[name], naive, spreads["naive"])

    def tag(name: str) -> str:
        return {1: "", 0: ", within the spread", -1: ", slower"}[vs_naive(name)]

    tuned = f"({images_per_s['tuned']:,.0f} against {naive:,.0f} images/s)"
    first = {1: f"The tuned pipeline trains {x('tuned')} as fast as the naive one {tuned}.",
             0: f"The tuned pipeline ran at {x('tuned')} the naive one's rate {tuned}, within the spread of their "
                "step times: no clear difference.",
             -1: f"The tuned pipeline trains slower than the naive one here: {x('tuned')} its rate {tuned}."}
    singles = [k for k in ("parallel", "cached", "prefetched") if vs_naive(k) == 1]
    if not singles:
        best = "none of the single changes is faster than naive beyond the spread here"
    else:
        top = max(singles, key=lambda k: images_per_s[k])
        close = [k for k in singles if k != top
                 and _compare(images_per_s[top], spreads[top], images_per_s[k], spreads[k]) != 1]
        best = (f"the best single change here is {top}" if not close else
                f"the best single changes here are {' and '.join([top, *close])}, within each other's spread")
    hidden = min(input_s, model_s)
    bound = round((input_s + model_s) / max(input_s, model_s), 2)  # compared as printed, to 2 decimals
    lines = [
        first[vs_naive("tuned")],
        f"Alone, parallel map gives {x('parallel')}{tag('parallel')}; cache {x('cached')}{tag('cached')} (from the "
        f"second epoch on); prefetch {x('prefetched')}{tag('prefetched')}. Of these, {best}.",
        f"Parallel map ran with AUTOTUNE's CPU budget of {cores} core{'s' if cores != 1 else ''}: AUTOTUNE keeps the "
        "number of calls in flight near that budget, though most of read_file is waiting rather than computing.",
        f"Prefetch overlaps preparing the next batch with training on this one, so it can hide at most the shorter "
        f"side of the step: {_ms(hidden)} of {_ms(input_s + model_s)} here, a speed-up of at most {bound:.2f}x.",
    ]
    measured = _times(images_per_s["prefetched"] / naive, digits=2)
    verdict = vs_naive("prefetched")
    if verdict == -1:
        lines[-1] += f" It measured {measured}: slower than naive, beyond the spread of the step times."
    elif verdict == 0:
        lines[-1] += f" It measured {measured}, within the spread of the step times: no clear gain."
    elif float(measured[:-1]) <= bound:
        lines[-1] += f" It measured {measured}, within that bound."
    else:
        lines[-1] += (f" It measured {measured}, above that bound: the bound comes from the three timings, "
                      "taken at another moment of the machine's load.")
    if "naive_default" in images_per_s:
        lines.append(f"With TensorFlow's default rewrites left on, the same naive code ran at "
                     f"{images_per_s['naive_default']:,.0f} images/s ({x('naive_default')}{tag('naive_default')}).")
    lines.append(f"The rule: {RULE_FASTER}.")
    return "\n".join(lines)


def profiler_reading(profiled: Mapping[str, float], timed: Mapping[str, float], *, thresholds: tuple[float, float],
                     timed_ranges: Mapping[str, tuple[float, float]] | None = None,
                     conclusions: Mapping[str, str] | None = None) -> str:
    """Set the profiler's share of each step spent waiting for input beside the one read from three timings.

    Both shares get their label by the same rule (:func:`wait_level` with the notebook's
    `thresholds`); the two ways agree when the labels do. `timed_ranges` holds the timings' share with
    each timing moved by half its IQR (:func:`wait_range`): a label that changes inside it cannot be told.
    `conclusions` holds the profiler's own verdict lines; one that says "POTENTIALLY input-bound"
    gets a sentence saying that this word counts the time xprof cannot attribute ('All Others', from
    3 % of the step), not the wait for input that the comparison is about.

    Example:
        >>> profiler_reading({"naive": 0.82, "tuned": 0.003}, {"naive": 0.80, "tuned": 0.0},
        ...                  thresholds=(0.05, 0.20))[:55]
        'The profiler finds 82% of a naive step and 0% of a tune'
    """
    thresholds = _check_thresholds(thresholds)
    names = ("naive", "tuned")
    for label, shares in (("profiled", profiled), ("timed", timed)):
        missing = [k for k in names if k not in shares]
        if missing:
            raise ValueError(f"{label} lacks {missing}: give the share of a step waiting for input of naive and tuned.")
        for k in names:
            _check_share(f"{label}[{k!r}]", shares[k])
    ranges = {k: (timed[k], timed[k]) for k in names}
    for k, pair in (timed_ranges or {}).items():
        if k in ranges:
            low, high = (_check_share(f"timed_ranges[{k!r}]", v) for v in pair)
            if not low <= timed[k] <= high:
                raise ValueError(f"timed_ranges[{k!r}]={pair!r} does not hold timed[{k!r}]={timed[k]!r}.")
            ranges[k] = (low, high)

    def pct(share: float) -> str:
        return _pct(share, thresholds)

    text = (f"The profiler finds {pct(profiled['naive'])} of a naive step and {pct(profiled['tuned'])} of a tuned "
            f"step spent waiting for input; the three timings gave {pct(timed['naive'])} and {pct(timed['tuned'])}. "
            f"One rule labels both: {_rule(thresholds)}.")
    agree = True
    for k in names:
        ours = {wait_level(s, thresholds) for s in ranges[k]}
        theirs = wait_level(profiled[k], thresholds)
        if len(ours) > 1:
            text += (f" For the {k} pipeline the timings cannot tell ({pct(ranges[k][0])} to {pct(ranges[k][1])} "
                     f"with their IQRs, across a threshold), so there is nothing to compare; the profiler says "
                     f"{theirs}.")
            agree = False
        elif ours == {theirs}:
            text += f" Both call the {k} pipeline {theirs}."
        else:
            text += (f" They disagree on the {k} pipeline: the profiler's share makes it {theirs}, the timings' "
                     f"makes it {ours.pop()}.")
            agree = False
    if agree:
        text += " The two ways of measuring agree."
    gap = max(abs(float(pct(profiled[k])[:-1]) - float(pct(timed[k])[:-1])) for k in names)  # as printed
    if gap > 15:
        text += (f" The figures themselves differ by up to {gap:.0f} points: the profiler watched other steps, "
                 "at another moment of the machine's load, so read both as estimates.")
    for k in names:
        line = (conclusions or {}).get(k, "")
        if "POTENTIALLY" in line:
            found = re.search(r"(\d+(?:\.\d+)?)%", line)
            other = f", {found.group(1)}% of the step here" if found else ""
            text += (f" The profiler's own verdict calls the {k} pipeline POTENTIALLY input-bound: xprof writes that "
                     f"when the time it cannot attribute ('All Others'{other}) reaches 3% of the step "
                     "(kModeratelyAllOtherBoundThresholdInPercent), whatever the wait for input; the comparison "
                     f"above is of the wait only, {pct(profiled[k])} of the step by the profiler's own count.")
    return text


def placement_reading(rounds: Mapping[str, Sequence[float]], batch_size: int, gpu_count: int,
                      min_rounds: int = 5) -> str:
    """Read the in-model vs in-map comparison from the round medians of :func:`interleaved`.

    One placement is called faster only when it was faster in every round (the two ranges of round
    medians do not overlap, :func:`separable`) and there were at least `min_rounds` rounds: with no
    real difference, one side wins every one of n rounds by chance with probability 2 x 0.5^n
    (25 % for 3 rounds, 6 % for 5). The sentence states that rule.

    Example:
        >>> placement_reading({"in_model": [0.030, 0.034], "in_map": [0.031, 0.036]}, 128, gpu_count=0)[:44]
        'In the model: 3,765-4,267 images/s (median 4'
    """
    for key in ("in_model", "in_map"):
        if not rounds.get(key):
            raise ValueError(f"rounds lacks {key!r}: time both placements with interleaved().")
        for value in rounds[key]:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise ValueError(f"rounds[{key!r}] holds {value!r}: every round median must be a positive number "
                                 "of seconds.")
    if len(rounds["in_model"]) != len(rounds["in_map"]):
        raise ValueError("rounds must hold one time per round for both placements.")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size={batch_size!r}: use a positive integer.")
    if isinstance(min_rounds, bool) or not isinstance(min_rounds, int) or min_rounds < 2:
        raise ValueError(f"min_rounds={min_rounds!r}: use an integer >= 2.")

    def span(key: str) -> str:
        fast, slow = batch_size / min(rounds[key]), batch_size / max(rounds[key])
        return f"{slow:,.0f}-{fast:,.0f} images/s (median {batch_size / statistics.median(rounds[key]):,.0f})"

    n = len(rounds["in_model"])
    text = f"In the model: {span('in_model')}; in dataset.map: {span('in_map')}, over {n} alternating rounds. "
    model, mapped = statistics.median(rounds["in_model"]), statistics.median(rounds["in_map"])
    ratio = _times(max(model, mapped) / min(model, mapped))
    chance = 2 * 0.5 ** n
    rule = (f"we call one placement faster only when it took less time in every one of at least {min_rounds} "
            f"rounds: with no real difference, one side wins all of {n} rounds by chance {chance:.0%} of the time")
    model_wins = sum(a < b for a, b in zip(rounds["in_model"], rounds["in_map"], strict=True))
    map_wins = sum(b < a for a, b in zip(rounds["in_model"], rounds["in_map"], strict=True))
    if separable(rounds["in_model"], rounds["in_map"]) and n >= min_rounds:
        faster = "in the model" if model < mapped else "in dataset.map"
        text += f"Preprocessing {faster} was faster in every round ({ratio} by the medians; {rule}). "
    else:
        if separable(rounds["in_model"], rounds["in_map"]):
            faster = "in the model" if model < mapped else "in dataset.map"
            text += (f"Preprocessing {faster} took less time in all {n} rounds, but that is fewer than {min_rounds} "
                     "rounds, so on this run the two placements are not separable")
        else:
            text += ("The ranges overlap, so on this machine the two placements are not separable: neither is faster "
                     "in every round")
        text += (f" ({rule}). Round by round, in the model took less time in {model_wins} of {n} and in "
                 f"dataset.map in {map_wins} of {n}; ")
        text += ("the medians are equal. " if model == mapped else
                 f"by the medians, {'in the model' if model < mapped else 'in dataset.map'} was ahead by {ratio}. ")
    if gpu_count:
        text += ("Here the model runs on the GPU: in the model, the augmentation runs on the GPU as part of each step; "
                 "in dataset.map, the CPU does it while the GPU trains on the previous batch.")
    else:
        text += ("Without a GPU both placements run on the same CPU cores. In dataset.map, tf.data's threads augment "
                 "the next batch while the model trains on this one (prefetch), which is why the Keras guide suggests "
                 "it for training on a CPU; in the model, each step augments its own batch before the forward pass, "
                 "and nothing overlaps. How much the overlap gains depends on the CPU time the model leaves free.")
    return text


def augmentation_reading(whole_s: float, each_s: float, model_s: float, while_loops: int, batch_size: int) -> str:
    """Read the check of the TF 2.9 augmentation slowdown (tensorflow/tensorflow#56242) on this version.

    Example:
        >>> augmentation_reading(0.004, 0.02, 0.035, 0, 128)[:58]
        'The augmentation layers take 4 ms for a batch of 128 when '
    """
    _check_times(whole_s=whole_s, each_s=each_s, model_s=model_s)
    if isinstance(while_loops, bool) or not isinstance(while_loops, int) or while_loops < 0:
        raise ValueError(f"while_loops={while_loops!r}: use the number of warnings, an integer >= 0.")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size={batch_size!r}: use a positive integer.")
    text = (f"The augmentation layers take {_ms(whole_s)} for a batch of {batch_size} when they transform it whole, "
            f"and {_ms(each_s)} one image at a time ({_times(each_s / whole_s)} as long); one training step of the "
            f"model takes {_ms(model_s)}. ")
    if while_loops:
        text += f"TensorFlow warned {while_loops} time(s) that it fell back to a while_loop: the slowdown is back."
    else:
        text += ("No 'Using a while_loop' warning appeared: on this version the layers transform the batch whole, "
                 "and the per-image fallback behind the TF 2.9 slowdown is not in the way.")
    return text


# ---------------------------------------------------------------- tf.data at scale: shards, vectorised map, timeline
def record_checksum(records: Iterable[tuple[bytes, int]]) -> int:
    """An order-free checksum of (bytes, label) records: the sum of their CRC-32s, modulo 2**32.

    A parallel interleave with ``deterministic=False`` returns the records in any order, so the
    check that every record came back once, unchanged, must not depend on the order.

    Example:
        >>> record_checksum([(b"png-a", 3), (b"png-b", 7)]) == record_checksum([(b"png-b", 7), (b"png-a", 3)])
        True
    """
    total = 0
    for data, label in records:
        if not isinstance(data, (bytes, bytearray)):
            raise ValueError(f"records hold {type(data).__name__} data: pass (bytes, label) pairs.")
        total += zlib.crc32(bytes(data) + int(label).to_bytes(8, "little", signed=True))
    return total % 2**32


def rounds_reading(rounds: Mapping[str, Sequence[float]], items: int, unit: str = "records",
                   min_rounds: int = 5) -> str:
    """Read a two-way comparison timed in alternating rounds (:func:`interleaved`): rates, and which was faster.

    `rounds` maps each of two names to its time per round, in seconds, for `items` items. One is
    called faster only when it took less time than the other in every round, round by round, and
    there were at least `min_rounds` rounds (with no real difference, one side wins all of n rounds
    by chance 2 x 0.5^n of the time); the sentence states that rule.

    Example:
        >>> rounds_reading({"a": [0.2, 0.21, 0.2], "b": [0.1, 0.1, 0.11]}, 1000, min_rounds=3)[:39]
        'a: 4,762-5,000 records/s (median 5,000)'
    """
    if len(rounds) != 2:
        raise ValueError(f"rounds has {len(rounds)} entries: pass exactly two {{name: [seconds per round]}}.")
    for key, values in rounds.items():
        if not values:
            raise ValueError(f"rounds[{key!r}] is empty: time each candidate at least once.")
        for value in values:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise ValueError(f"rounds[{key!r}] holds {value!r}: every round time must be a positive number "
                                 "of seconds.")
    (a, ta), (b, tb) = rounds.items()
    if len(ta) != len(tb):
        raise ValueError("rounds must hold one time per round for both candidates.")
    if isinstance(items, bool) or not isinstance(items, int) or items < 1:
        raise ValueError(f"items={items!r}: use a positive integer (the items each timed run handles).")
    if isinstance(min_rounds, bool) or not isinstance(min_rounds, int) or min_rounds < 2:
        raise ValueError(f"min_rounds={min_rounds!r}: use an integer >= 2.")

    def span(times: Sequence[float]) -> str:
        return (f"{items / max(times):,.0f}-{items / min(times):,.0f} {unit}/s "
                f"(median {items / statistics.median(times):,.0f})")

    n = len(ta)
    text = f"{a}: {span(ta)}; {b}: {span(tb)}, over {n} alternating round{'s' if n != 1 else ''}. "
    ma, mb = statistics.median(ta), statistics.median(tb)
    wins_a = sum(x < y for x, y in zip(ta, tb, strict=True))
    wins_b = sum(y < x for x, y in zip(ta, tb, strict=True))
    rule = (f"the rule: one is faster only when it took less time in every one of at least {min_rounds} rounds; "
            f"with no real difference, one side wins all of {n} by chance {2 * 0.5 ** n:.0%} of the time")
    if n >= min_rounds and n in (wins_a, wins_b):
        faster, slow, fast = (a, mb, ma) if wins_a == n else (b, ma, mb)
        return text + f"{faster} was faster in every round, {_times(slow / fast)} by the medians ({rule})."
    if n in (wins_a, wins_b):
        why = f"{a if wins_a == n else b} won all {n} rounds, fewer than {min_rounds}"
    else:
        why = f"{a} took less time in {wins_a} of {n} rounds, {b} in {wins_b} of {n}"
    ahead = a if ma < mb else b
    medians = ("the medians are equal" if ma == mb else
               f"by the medians {ahead} was ahead by {_times(max(ma, mb) / min(ma, mb))}")
    return text + f"Not separable on this run ({why}; {rule}); {medians}."


def _merge(intervals: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[list[float]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(s, e) for s, e in merged]


def _length(intervals: Iterable[tuple[float, float]]) -> float:
    return sum(e - s for s, e in intervals)


def _intersection(a: Sequence[tuple[float, float]], b: Sequence[tuple[float, float]]) -> float:
    """Total time covered by both of two lists of merged intervals."""
    total, i, j = 0.0, 0, 0
    while i < len(a) and j < len(b):
        total += max(0.0, min(a[i][1], b[j][1]) - max(a[i][0], b[j][0]))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


class Timeline:
    """When each stage of a pipeline ran, and when each training step waited and trained, on one clock.

    The pipeline carries ``tf.timestamp()`` pairs (start, end) per element and stage in a dict; a
    ``map(timeline.handoff)`` after ``batch`` hands each batch's stamps to Python, with the moment
    the batch was ready (its latest stamp). :meth:`run` times the training steps with ``tf.timestamp()``
    too: one clock for everything, so that no event can seem to start before one that preceded it.

    Example:
        >>> t = Timeline()
        >>> t.batches.append({"stages": {"load": [(1.0, 1.5)]}, "ready": 1.5})
        >>> t.steps.append((1.0, 2.0))
        >>> t.intervals(steps=1)["wait for batch"]
        [(0.0, 0.5)]
    """

    def __init__(self) -> None:
        self.batches: list[dict[str, Any]] = []
        self.steps: list[tuple[float, float]] = []

    def handoff(self, images: Any, labels: Any, stamps: Mapping[str, Any]) -> tuple[Any, Any]:
        """For ``dataset.map`` after ``batch``: note the batch's stamps and the time it was ready; pass it on."""
        tf = sys.modules["tensorflow"]  # loaded by whoever built the pipeline; this module never imports it
        names = sorted(stamps)

        def note(*arrays: Any) -> float:
            stages = {n: [tuple(map(float, row)) for row in a.numpy()] for n, a in zip(names, arrays, strict=True)}
            ready = max(end for spans in stages.values() for _, end in spans)  # the batch's last stage ended
            self.batches.append({"stages": stages, "ready": ready})
            return ready

        noted = tf.py_function(note, [stamps[n] for n in names], tf.float64)
        with tf.control_dependencies([noted]):
            return tf.identity(images), labels

    def run(self, train_step: Callable[[Any], Any], iterator: Any, warmup: int, steps: int) -> None:
        """Run `warmup` then `steps` training steps on `iterator`, noting each step's start and end."""
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(f"steps={steps!r}: use a positive integer.")
        if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
            raise ValueError(f"warmup={warmup!r}: use an integer >= 0.")
        tf = importlib.import_module("tensorflow")
        for _ in range(warmup + steps):
            start = float(tf.timestamp())  # the pipeline's clock
            out = train_step(iterator)
            if hasattr(out, "numpy"):
                out.numpy()  # waits until the step has finished
            self.steps.append((start, float(tf.timestamp())))

    def intervals(self, steps: int) -> dict[str, list[tuple[float, float]]]:
        """The last `steps` steps: each stage's busy intervals, the waits and the training, in s from the first.

        Step k trains on batch k (``prefetch`` keeps the order): it waits from its start until that
        batch is ready, then trains. Stage intervals that ended before the window (a cache served
        them from an earlier epoch) are left out, and a stage's overlapping ones (parallel calls) are merged.
        """
        if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= len(self.steps):
            raise ValueError(f"steps={steps!r}: use an integer from 1 to the {len(self.steps)} steps run.")
        if len(self.batches) < len(self.steps):
            raise ValueError(f"{len(self.batches)} batches were noted for {len(self.steps)} steps: put "
                             "map(timeline.handoff) after batch in the pipeline the steps read.")
        first = len(self.steps) - steps
        origin, last = self.steps[first][0], self.steps[-1][1]
        waits, trains = [], []
        for k in range(first, len(self.steps)):
            start, end = self.steps[k]
            ready = min(max(start, self.batches[k]["ready"]), end)
            waits.append((start, ready))
            trains.append((ready, end))
        out: dict[str, list[tuple[float, float]]] = {}
        for name in sorted({n for b in self.batches for n in b["stages"]}):
            spans = [(max(s, origin), min(e, last)) for b in self.batches for s, e in b["stages"].get(name, [])
                     if e > origin and s < last]
            out[name] = _merge(spans)
        out["wait for batch"] = [(s, e) for s, e in waits if e > s]  # one bar per step, not merged
        out["train step"] = trains
        return {name: [(s - origin, e - origin) for s, e in spans] for name, spans in out.items()}


def timeline_shares(intervals: Mapping[str, Sequence[tuple[float, float]]]) -> dict[str, float]:
    """Figures of one timeline (:meth:`Timeline.intervals`): its length, the share of it spent training,
    the share of the training time during which some input stage ran too (the overlap prefetch buys),
    and the input stages' busy time over the training time, the most that overlap can be.

    A step counts as training from the moment its batch was ready (or from its start, when the batch
    was ready before) to its end, so a pipeline that always has the next batch ready trains 100% of
    the time by this count: no step waited, whatever else the step did.

    Example:
        >>> timeline_shares({"load": [(0.0, 1.0)], "wait for batch": [(0.0, 1.0)], "train step": [(1.0, 2.0)]})
        {'window_s': 2.0, 'train_share': 0.5, 'overlap_share': 0.0, 'input_share': 1.0}
    """
    for key in ("wait for batch", "train step"):
        if key not in intervals:
            raise ValueError(f"intervals lacks {key!r}: pass what Timeline.intervals returns.")
    train = _merge(intervals["train step"])
    everything = [iv for spans in intervals.values() for iv in spans]
    if not train or not everything:
        raise ValueError("intervals holds no training step: run Timeline.run first.")
    window = max(e for _, e in everything) - min(s for s, _ in everything)
    stages = _merge(iv for name, spans in intervals.items() if name not in ("wait for batch", "train step")
                    for iv in spans)
    trained = _length(train)
    return {"window_s": round(window, 6), "train_share": round(trained / window, 6) if window else 0.0,
            "overlap_share": round(_intersection(train, stages) / trained, 6) if trained else 0.0,
            "input_share": round(_length(stages) / trained, 6) if trained else 0.0}


TIMELINE_ROWS = ("load", "augment", "wait for batch", "train step")


def timeline_figure(timelines: Mapping[str, Mapping[str, Sequence[tuple[float, float]]]],
                    rows: Sequence[str] = TIMELINE_ROWS) -> Any:
    """Draw timelines side by side, one panel each: a row per stage, a bar for each interval it ran.

    Example:
        >>> fig = timeline_figure({"a": {"load": [(0.0, 0.1)], "wait for batch": [], "train step": [(0.1, 0.2)]}})
        >>> len(fig.axes)
        1
    """
    import matplotlib.pyplot as plt

    if not timelines:
        raise ValueError("timelines is empty: pass {name: Timeline.intervals(...)}.")
    fig, axes = plt.subplots(1, len(timelines), figsize=(5.5 * len(timelines), 2.8), squeeze=False, sharey=True)
    for ax, (name, spans) in zip(axes[0], timelines.items(), strict=True):
        for row, stage in enumerate(rows):
            bars = [(s * 1e3, max((e - s) * 1e3, 0.05)) for s, e in spans.get(stage, [])]
            per_step = stage in ("wait for batch", "train step")  # a white edge between back-to-back steps
            ax.broken_barh(bars, (row - 0.35, 0.7), color=f"C{row}", edgecolor="white" if per_step else "none",
                           linewidth=0.6 if per_step else 0)
        end = max((e for v in spans.values() for _, e in v), default=0.0) * 1e3
        ax.set(yticks=range(len(rows)), yticklabels=list(rows), xlabel="time since the first timed step (ms)",
               title=f"{name}: {end:,.0f} ms", ylim=(len(rows) - 0.5, -0.5))
        ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def thread_names() -> dict[str, int]:
    """The threads of this process grouped by name (digits dropped), from /proc on Linux; {} elsewhere.

    Example:
        >>> isinstance(thread_names(), dict)
        True
    """
    groups: dict[str, int] = {}
    for comm in sorted(Path("/proc/self/task").glob("*/comm")):
        try:
            name = re.sub(r"[\d_]+$", "", comm.read_text().strip()) or "(unnamed)"
        except OSError:  # the thread ended meanwhile
            continue
        groups[name] = groups.get(name, 0) + 1
    return dict(sorted(groups.items(), key=lambda kv: (-kv[1], kv[0])))


def trace_threads(folder: str | Path) -> dict[str, dict[str, float]]:
    """The host threads of a profiler trace, grouped by pool: how many threads, and how long their events lasted.

    Reads the ``.xplane.pb`` files under `folder` (what ``tf.profiler.experimental.start(folder)``
    wrote), keeps the ``/host:CPU`` plane, and groups its lines (one per thread) by name without the
    thread id: ``tf_Compute`` (the inter-op pool that runs the model's ops), ``tf_data_private_threadpool``
    (tf.data's functions), ``tf_data_iterator_*`` (tf.data's own background threads), ``python``, Eigen's
    intra-op pool, and on a GPU ``gpu_private`` when ``TF_GPU_THREAD_MODE=gpu_private``. ``busy_ms`` is
    the time covered by each thread's recorded events (nested events counted once), which includes
    waiting inside an event. {} when there is no trace, or no way to read one in this TensorFlow.

    Example:
        >>> trace_threads("/nonexistent")
        {}
    """
    paths = sorted(Path(folder).glob("plugins/profile/*/*.xplane.pb"))
    if not paths:
        return {}
    try:
        xplane_pb2 = importlib.import_module("tensorflow.tsl.profiler.protobuf.xplane_pb2")
    except ImportError:  # a TensorFlow build without the profiler's protobufs: nothing to read the trace with
        return {}
    groups: dict[str, dict[str, float]] = {}
    for path in paths:
        space = xplane_pb2.XSpace()
        space.ParseFromString(path.read_bytes())
        for plane in space.planes:
            if plane.name != "/host:CPU":
                continue
            for line in plane.lines:
                name = re.sub(r"/-?\d+$", "", line.name) or "(unnamed)"
                spans = _merge((e.offset_ps / 1e9, (e.offset_ps + e.duration_ps) / 1e9) for e in line.events)
                group = groups.setdefault(name, {"threads": 0, "busy_ms": 0.0})
                group["threads"] += 1
                group["busy_ms"] = round(group["busy_ms"] + _length(spans), 3)
    return dict(sorted(groups.items(), key=lambda kv: -kv[1]["busy_ms"]))


def trace_gpu_events(folder: str | Path) -> int | None:
    """How many events the GPU planes of a profiler trace hold (kernels, copies); None when nothing can be read.

    Reads the ``.xplane.pb`` files under `folder` as :func:`trace_threads` does and counts the events on
    the planes named ``/device:GPU:<n>``, which the profiler fills from CUPTI, NVIDIA's profiling library
    (``GpuTracer::CollectData`` in xla/backends/profiler/gpu/device_tracer_cuda.cc, openxla/xla). A CPU
    run has no such plane: 0. A GPU run whose CUPTI failed to start has none or empty ones: 0 too.

    Example:
        >>> trace_gpu_events("/nonexistent") is None
        True
    """
    paths = sorted(Path(folder).glob("**/plugins/profile/*/*.xplane.pb"))
    if not paths:
        return None
    try:
        xplane_pb2 = importlib.import_module("tensorflow.tsl.profiler.protobuf.xplane_pb2")
    except ImportError:  # a TensorFlow build without the profiler's protobufs
        return None
    events = 0
    for path in paths:
        space = xplane_pb2.XSpace()
        space.ParseFromString(path.read_bytes())
        for plane in space.planes:
            if re.fullmatch(r"/device:GPU:\d+", plane.name):
                events += sum(len(line.events) for line in plane.lines)
    return events


# What the learner can do when the trace has no GPU side, by the CUPTI error that caused it
# (helpers.tflog.HANDLED; cupti_tracer.cc returns "CUPTI need root access!" for the first).
# NVIDIA's "ERR_NVGPUCTRPERM - Permission issue with Performance Counters"
# (developer.nvidia.com/nvidia-development-tools-solutions-err_nvgpuctrperm-permission-issue-performance-counters)
# gives the driver option; TensorFlow's profiler guide (tensorflow.org/guide/profiler, "Resolve privilege
# issues") gives Docker's side.
CUPTI_REMEDIES = {
    "cupti_privileges": "CUPTI, the NVIDIA library the profiler records the GPU with, refused this user "
                        "(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES): on your own Linux machine an administrator sets "
                        "the driver option NVreg_RestrictProfilingToAdminUsers=0 and reboots, in Docker you start "
                        "the container with --cap-add SYS_ADMIN, and on Colab or Kaggle, which you cannot change, "
                        "the trace keeps its CPU side only",
    "cupti_subscribers": "another profiler already holds CUPTI, the NVIDIA library the profiler records the GPU "
                         "with, which takes one profiler per process (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED): "
                         "run the notebook outside Nsight Systems or Nsight Compute, after Kernel > Restart; "
                         "meanwhile the trace keeps its CPU side only",
}


def gpu_trace_note(gpu_count: int, gpu_events: int | None, handled: Mapping[str, Sequence[str]]) -> str:
    """One sentence when a trace recorded on a GPU machine has no GPU side, saying why and what to do; '' otherwise.

    `gpu_events` is :func:`trace_gpu_events` (None: the trace could not be read), `handled` is
    :func:`helpers.tflog.handled` (the CUPTI errors kept off the page, by kind). Without a GPU there is
    no GPU side to miss: ''.

    Example:
        >>> gpu_trace_note(1, 0, {"cupti_privileges": ["E... CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"]})[:49]
        'The trace has no GPU side (0 GPU events): CUPTI, '
        >>> gpu_trace_note(1, 5120, {})
        ''
    """
    if isinstance(gpu_count, bool) or not isinstance(gpu_count, int) or gpu_count < 0:
        raise ValueError(f"gpu_count={gpu_count!r}: use an integer >= 0.")
    if gpu_events is not None and (isinstance(gpu_events, bool) or not isinstance(gpu_events, int) or gpu_events < 0):
        raise ValueError(f"gpu_events={gpu_events!r}: use None or an integer >= 0.")
    if not gpu_count:
        return ""
    kinds = [kind for kind in CUPTI_REMEDIES if handled.get(kind)]
    counted = "" if gpu_events is None else f" ({gpu_events:,} GPU events)"
    if kinds:
        head = "The trace has no GPU side" if not gpu_events else "The trace's GPU side may be incomplete"
        return f"{head}{counted}: {CUPTI_REMEDIES[kinds[0]]}."
    if gpu_events == 0:
        return (f"The trace has no GPU side{counted} although TensorFlow sees {gpu_count} GPU(s): the profiler could "
                "not record it (the red lines above say why), and the trace keeps its CPU side only.")
    return ""
