"""TensorFlow's C++ log kept off the learner's page (every notebook, through :func:`helpers.setup`).

TensorFlow's native code writes to file descriptor 2 (stderr), and Jupyter's kernel forwards that
descriptor to the page in red. ``TF_CPP_MIN_LOG_LEVEL`` does not silence all of it: since TensorFlow
moved parts of its runtime and XLA to Abseil's logging, lines logged before ``absl::InitializeLog()``
(which TensorFlow never calls) go to stderr whatever the level (the notice "WARNING: All log
messages before absl::InitializeLog() is called are written to STDERR"; tensorflow/tensorflow#100442,
#102212; abseil/abseil-cpp#1718). On a GPU these come after import, at the first op and at every XLA
compilation: "Created device ... GPU:0 with ... MB memory", "XLA service ... initialized for platform
CUDA", "Compiled cluster using XLA!", cuDNN's version, the autotuner's notes.

:func:`keep_off_page` puts a filter on descriptor 2 of the kernel. The rule, line by line:

* **Dropped** (kept in memory, :func:`dropped` lists them): Abseil/TensorFlow INFO lines
  (``I0000 00:00:...  file.cc:NN] ...``), the "All log messages before absl::InitializeLog" notice,
  and a short list of warnings that are either benign or repeated by the Python exception that
  follows them (:data:`BENIGN`).
* **Handled** (kept in memory by kind, :func:`handled` lists them): the errors of CUPTI, the library
  04's profiler loads on a GPU, that leave a trace without its GPU side (:data:`HANDLED`). They are
  real problems, so the notebook says in one sentence what they mean and what to do instead
  (:func:`helpers.pipelines.gpu_trace_note`), rather than show a dozen red lines.
* **Kept** (shown in red, as before): everything else, including every unknown warning and error.
  A real problem still reaches the page.

Outside a Jupyter kernel (scripts, pytest, child processes) nothing is installed.
"""

from __future__ import annotations

import os
import re
import select
import sys
import threading

# Abseil's and TensorFlow's C++ log prefix: severity letter, MMDD, time, thread id, file:line]
_ABSL = re.compile(r"^(?P<level>[IWEF])\d{4} \d\d:\d\d:\d+\.\d+\s+\d+ (?P<where>[^\]]+)\] ?(?P<msg>.*)$")
# The older TensorFlow prefix: "2024-05-01 12:00:00.123456: W tensorflow/.../file.cc:12] message"
_TSL = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: (?P<level>[IWEF]) (?P<where>[^\]]+)\] ?(?P<msg>.*)$")
_NOTICE = "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR"

# Warnings and errors that say nothing the learner can act on, or that the Python exception raised
# right after them says again. Each: (pattern on the message, why it is safe to drop).
BENIGN: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"Unable to register cu(DNN|FFT|BLAS) factory: Attempting to register factory for plugin"),
     "CUDA plug-ins registered twice at import (Colab's TensorFlow builds): harmless"),
    (re.compile(r"computation placer already registered"), "XLA's placer registered twice: harmless"),
    (re.compile(r"TF-TRT Warning: Could not find TensorRT"), "TensorRT is optional; the course does not use it"),
    # XLA's autotuner times each candidate kernel with a GPU timer. Its first timing of a candidate runs
    # before a warm-up (use_delay_kernel = profile_result->warmup_run_executed() is false), and the timer
    # then logs LOG(WARNING) "Skipping the delay kernel, measurement accuracy will be reduced"
    # (GpuTimer::CreateEventBasedTimer in xla/stream_executor/gpu/gpu_timer.cc, openxla/xla; it arrived
    # with openxla/xla#11172), once per candidate, at every XLA compile on a healthy GPU: thousands of lines
    # (tensorflow/tensorflow#73487, on TensorFlow 2.17). The same file (and gpu_timer_kernel_cuda.cc) logs
    # "Skipping the delay kernel because the device does not support unified addressing", and "Delay
    # kernel timed out: measured time has sub-optimal accuracy" (LOG(ERROR) in gpu_timer.cc,
    # LOG_FIRST_N(WARNING, 5) in today's xla/stream_executor/cuda/cuda_timer.cc). All three are about the
    # precision of the autotuner's timings, which pick among kernels that compute the same result.
    (re.compile(r"Skipping the delay kernel(, measurement accuracy will be reduced| because the device does not "
                r"support unified addressing)"),
     "XLA's autotuner timed a candidate kernel without its delay kernel: autotuning accuracy only"),
    (re.compile(r"Delay kernel timed out: measured time has sub-optimal accuracy"),
     "the GPU timer's delay kernel timed out: autotuning accuracy only"),
    (re.compile(r"Registers are spilled to local memory"), "ptxas note while XLA compiles a kernel"),
    (re.compile(r"(ran out of memory trying to allocate|Allocator \(\w+\) ran out of memory|"
                r"Out of memory while trying to allocate|^\*+_*[*_]*$|^Stats:|Sum Total of in-use chunks)"),
     "the allocator's out-of-memory report: the ResourceExhaustedError raised next says it in Python"),
    (re.compile(r"Garbage collection: deallocate free memory regions"),
     "the GPU allocator freeing cached memory near an out-of-memory wall"),
)
# Errors the one notebook that causes them explains on its page in one sentence: 04's profiler loads CUPTI,
# NVIDIA's profiling library, to record the GPU side of a trace. Each: (pattern, kind). They are not
# benign (the trace then has no GPU side), so they are kept off the page only to be replaced by that
# sentence: LineFilter records them by kind and :func:`handled` hands them to the notebook
# (:func:`helpers.pipelines.gpu_trace_note`). Messages from ``RETURN_IF_CUPTI_ERROR`` in
# xla/backends/profiler/gpu/cupti_tracer.cc ("function cupti_interface_->Subscribe(...)failed with error
# CUPTI_ERROR_INSUFFICIENT_PRIVILEGES", and its status "CUPTI need root access!") and from
# ``LOG_AND_DISABLE_IF_ERROR`` in cupti_error_manager.cc ("cuptiSubscribe: error 35:
# CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"), openxla/xla.
HANDLED: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"CUPTI_ERROR_INSUFFICIENT_PRIVILEGES|CUPTI need root access"), "cupti_privileges"),
    (re.compile(r"CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"), "cupti_subscribers"),
)
# What CUPTI's error manager logs after such an error while it undoes what it enabled and turns profiling
# off (UndoAndDisable, IGNORE_CALL_IF_DISABLED, ActivityEnable/ActivityDisable in cupti_error_manager.cc;
# a result string read after that comes back empty, "...failed with error " with nothing after it), and
# GpuTracer::CollectData's "Cannot collect, profiler failed to start" (device_tracer_cuda.cc). Handled
# only after a HANDLED cause in the same process; on their own they stay on the page.
_CUPTI_AFTERMATH = re.compile(
    r"CuptiErrorManager is disabling profiling automatically|^cupti\w+: ignored due to a previous error"
    r"|^cupti\w+: error with domain|^Activity(En|Dis)able\(\) error on activity kind|CUPTI_ERROR_DISABLED"
    r"|^function cupti_interface_->.*failed with error\s*$|^Cannot collect, profiler failed to start")

# Only benign when no GPU is meant to be visible (CUDA_VISIBLE_DEVICES="" or "-1"): cuInit then fails.
_CUINIT = re.compile(r"failed call to cuInit")

_lock = threading.Lock()
_installed = False
_dropped: list[str] = []
_handled: dict[str, list[str]] = {}


def should_drop(line: str, environ: dict[str, str] | None = None, previous: bool | None = None) -> bool:
    """True when `line` (one line of stderr, without its newline) is kept off the page.

    A line without a log prefix continues the message before it (TensorFlow's multi-line messages,
    such as the allocator's statistics) and follows that message's decision, `previous`; with no
    message before it, it is kept.

    Example:
        >>> should_drop("I0000 00:00:1795491101.622107    6296 device_compiler.h:188] Compiled cluster using XLA!")
        True
        >>> should_drop("E0000 00:00:1795491101.622107    6296 some_kernel.cc:12] Something went wrong")
        False
    """
    environ = os.environ if environ is None else environ
    text = line.rstrip("\r\n")
    if text.strip() == _NOTICE:
        return True
    match = _ABSL.match(text) or _TSL.match(text)
    if not match:
        return bool(previous)
    if match["level"] == "I":
        return True
    if match["level"] == "F":  # a fatal line ends the process: whatever it says, the learner must see it
        return False
    message = match["msg"]
    if any(pattern.search(message) for pattern, _ in BENIGN):
        return True
    return bool(_CUINIT.search(message)) and environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1")


def handled_kind(line: str, causes: set[str] | frozenset[str] = frozenset()) -> str | None:
    """The kind of :data:`HANDLED` error `line` is, or None; `causes` are the kinds already seen in this process.

    A line of CUPTI's clean-up after an error counts as that error's kind only once a cause was seen.

    Example:
        >>> handled_kind("E0000 00:00:1.1 7 cupti_error_manager.cc:203] cuptiSubscribe: error 35: "
        ...              "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES")
        'cupti_privileges'
        >>> handled_kind("E0000 00:00:1.1 7 cupti_error_manager.cc:194] CuptiErrorManager is disabling profiling "
        ...              "automatically.") is None
        True
    """
    match = _ABSL.match(line.rstrip("\r\n")) or _TSL.match(line.rstrip("\r\n"))
    if not match or match["level"] == "I":
        return None
    message = match["msg"]
    for pattern, kind in HANDLED:
        if pattern.search(message):
            return kind
    if causes and _CUPTI_AFTERMATH.search(message):
        return sorted(causes)[0]
    return None


class LineFilter:
    """Feeds stderr lines through :func:`should_drop`, carrying each message's decision to its continuation lines.

    It also drops the :data:`HANDLED` errors, noting their kind in :attr:`kind` for the caller to record.

    Example:
        >>> f = LineFilter()
        >>> [f.drop(x) for x in ["I0000 00:00:1.0 1 bfc_allocator.cc:1] Stats:", "Limit: 123", "plain"]]
        [True, True, True]
    """

    def __init__(self, environ: dict[str, str] | None = None):
        self.environ = environ
        self.previous: bool | None = None
        self.causes: set[str] = set()
        self.kind: str | None = None  # the HANDLED kind of the last line dropped, None for INFO and benign lines

    def drop(self, line: str) -> bool:
        text = line.rstrip("\r\n")
        prefixed = bool(text.strip() == _NOTICE or _ABSL.match(text) or _TSL.match(text))
        decision = should_drop(text, self.environ, self.previous)
        if prefixed:
            self.kind = None if decision else handled_kind(text, self.causes)
            if self.kind:
                decision = True
                if any(pattern.search(text) for pattern, _ in HANDLED):
                    self.causes.add(self.kind)
            self.previous = decision
        elif not text.strip():
            self.previous = None  # a blank line ends a message
            self.kind = None
        return decision


def handled() -> dict[str, list[str]]:
    """The :data:`HANDLED` errors kept off the page so far in this kernel, by kind (a copy); {} outside a kernel.

    Example:
        >>> isinstance(handled(), dict)
        True
    """
    with _lock:
        return {kind: list(lines) for kind, lines in _handled.items()}


def dropped() -> list[str]:
    """The lines kept off the page so far in this kernel (a copy).

    Example:
        >>> isinstance(dropped(), list)
        True
    """
    with _lock:
        return list(_dropped)


def _in_kernel() -> bool:
    """True inside a Jupyter kernel: the shell is ipykernel's ZMQInteractiveShell or a subclass of it.

    Colab's shell is ``google.colab._shell.Shell``, declared ``class Shell(zmqshell.ZMQInteractiveShell)``
    (googlecolab/colabtools, google/colab/_shell.py), so the class is found in the shell's MRO by name,
    without importing ipykernel here. IPython's terminal shell has no such class in its MRO.
    """
    shell = sys.modules.get("IPython") and getattr(sys.modules["IPython"], "get_ipython", lambda: None)()
    return bool(shell) and any(cls.__name__ == "ZMQInteractiveShell" for cls in type(shell).__mro__)


def _pump(read_fd: int, out_fd: int) -> None:
    """Copy lines from `read_fd` to `out_fd`, dropping those :class:`LineFilter` names."""
    line_filter = LineFilter()
    pending = b""
    while True:
        ready, _, _ = select.select([read_fd], [], [], 0.05)
        if not ready:
            if pending:  # a partial line that waited: show it rather than hold it back
                _emit(pending, out_fd, line_filter)
                pending = b""
            continue
        chunk = os.read(read_fd, 65536)
        if not chunk:
            break
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for raw in lines:
            _emit(raw + b"\n", out_fd, line_filter)


def _emit(raw: bytes, out_fd: int, line_filter: LineFilter) -> None:
    line = raw.decode("utf-8", "replace")
    if line_filter.drop(line):
        with _lock:
            _dropped.append(line.rstrip("\n"))
            if line_filter.kind:
                _handled.setdefault(line_filter.kind, []).append(line.rstrip("\n"))
        return
    os.write(out_fd, raw)


def keep_off_page(force: bool = False) -> bool:
    """Filter this process's stderr descriptor (once); returns True when the filter is in place.

    Installed only inside a Jupyter kernel, where descriptor 2 reaches the page, unless `force`.
    Python's own ``sys.stderr`` (warnings, tracebacks) is the kernel's stream and is not touched.

    Example:
        >>> keep_off_page()  # in a script or a test: nothing to do
        False
    """
    global _installed
    with _lock:
        if _installed:
            return True
        if not (force or _in_kernel()):
            return False
        try:
            target = os.dup(2)
            read_fd, write_fd = os.pipe()
            os.dup2(write_fd, 2)
            os.close(write_fd)
        except OSError:
            return False
        threading.Thread(target=_pump, args=(read_fd, target), name="tflog", daemon=True).start()
        _installed = True
        return True
