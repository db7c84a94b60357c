"""`make gpu-check`: run the course on this machine's GPU, assert its claims, write one report to send.

    python tools/gpu_check.py [--notebooks 03 04 ...] [--out benchmarks/gpu-runs] [--quick] [--smoke] [--allow-cpu]

1. A short child process reads the machine: GPUs (name, compute capability, memory), NVIDIA driver,
   the CUDA and cuDNN versions TensorFlow was built for, TensorFlow, Keras, TF32. It runs apart because
   ``tf.config.list_logical_devices`` initialises TensorFlow's GPU devices, which reserve most of the
   GPU's memory for as long as the process lives; the notebooks need that memory.
2. Without a GPU visible to TensorFlow it prints one sentence and exits 2, before running anything
   (``--allow-cpu`` runs anyway: the tests use it to exercise the kit here).
3. Before the first notebook it prints an estimate of how long the run takes (:func:`estimate_line`: the
   learner times measured on a CPU in ``benchmarks/times.json`` and a stated assumption about the GPU, no
   GPU measurement), and ``--quick`` (smoke sizes) for a Colab or Kaggle session.
4. Each notebook runs under papermill at learner sizes (``tests/nbrun.py``; ``--quick``: smoke sizes), with
   one progress line before and one after it, then its claims (``tests/claims/nbNN.py``) are asserted. A
   failure is recorded and the next notebook runs. On a GPU, a red line on the page (stderr that
   ``helpers.tflog`` does not know) is evidence, not a failed claim: it is taken off the page before the
   claims run and kept verbatim in the report's ``unknown_log`` (:func:`split_log`), so one report tells what
   the filter should learn. Without a GPU (``--allow-cpu``) the page must stay clean, as in the tests.
5. ``<out>/<gpu>-<date>.md`` and ``.json`` are written: per notebook the time, the claims result and its
   key figures (03's GFLOP/s and crossover, 04's images/s, 06's step times, 07's scaling efficiency,
   09's memory estimate error). Nothing private goes in: host and user names, home folders, IP and
   MAC addresses, GPU UUIDs and serial numbers are replaced by placeholders.

Exit status: 0 every notebook passed, 1 at least one failed (the report is written first), 2 nothing
was run (no GPU, or a bad argument).
"""

from __future__ import annotations

import argparse
import copy
import datetime
import getpass
import importlib
import importlib.util
import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT / "tests", ROOT):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import nbrun  # noqa: E402

DEFAULT_OUT = ROOT / "benchmarks" / "gpu-runs"
TIMES = ROOT / "benchmarks" / "times.json"
MODES = ("learner", "quick", "smoke")
FORMAT = 2  # 2: the unknown_log key, the "quick" mode
LOG_CAP = 40  # distinct unknown stderr lines kept per notebook (the total is counted in full)
LOG_WIDTH = 400  # characters kept of each
NO_GPU_EXIT = 2
FAILED_EXIT = 1

# The key figures of each notebook: dotted paths into its results JSON (see tests/claims/gpu_nbNN.json).
FIGURES = {
    "03": ("matmul_gflops", "peak_gflops", "crossover_n"),
    "04": ("images_per_s",),
    "06": ("step_s",),
    "07": ("scaling_efficiency", "replicas", "samples_per_s"),
    "09": ("estimate_error", "estimated_bytes", "measured_bytes.bytes"),
}


# --------------------------------------------------------------------------- the machine (child process)
def nvml_facts(nvml: Any | None = None) -> dict[str, Any]:
    """Driver version, the newest CUDA the driver supports, and the GPUs' UUIDs and serials (to scrub, never shown).

    ``nvml`` is the pynvml module (default :func:`helpers.nvml.module`), or a fake.
    """
    from helpers import nvml as nvml_api

    _call, _decode = nvml_api._nvml_call, nvml_api._decode  # a missing reading is None, bytes become text
    nvml = nvml if nvml is not None else nvml_api.module()
    facts: dict[str, Any] = {"driver": None, "cuda_driver": None, "private": []}
    if nvml is None:
        return facts
    try:
        nvml.nvmlInit()
    except Exception:  # no driver: nothing to read
        return facts
    try:
        driver = _call(nvml.nvmlSystemGetDriverVersion)
        facts["driver"] = None if driver is None else _decode(driver)
        cuda = _call(getattr(nvml, "nvmlSystemGetCudaDriverVersion", lambda: None))
        if isinstance(cuda, int) and cuda > 0:  # 12040 -> "12.4"
            facts["cuda_driver"] = f"{cuda // 1000}.{cuda % 1000 // 10}"
        for index in range(_call(nvml.nvmlDeviceGetCount) or 0):
            handle = _call(nvml.nvmlDeviceGetHandleByIndex, index)
            if handle is None:
                continue
            for query in ("nvmlDeviceGetUUID", "nvmlDeviceGetSerial"):
                value = _call(getattr(nvml, query, lambda _h: None), handle)
                if value:
                    facts["private"].append(_decode(value))
    finally:
        _call(nvml.nvmlShutdown)
    return facts


def machine(tf: Any | None = None, nvml: Any | None = None) -> dict[str, Any]:
    """What the report says about this machine, plus ``private`` values to scrub from it (never written).

    Calls ``helpers.env.report``, which initialises TensorFlow's devices: call it in a process that ends
    before the notebooks run (``main`` does, through ``--probe``).
    """
    from helpers import env

    tf = tf if tf is not None else env.tensorflow()
    rep = env.report(tf, nvml)
    facts = nvml_facts(nvml)
    gpus = [{"name": g.name,
             "compute_capability": None if g.compute_capability is None else "{}.{}".format(*g.compute_capability),
             "memory_gib": None if g.memory_bytes is None else round(g.memory_bytes / 2**30, 1)} for g in rep.gpus]
    return {
        "gpus": gpus,
        "gpu_count": len(gpus),
        "driver": facts["driver"],
        "cuda_driver": facts["cuda_driver"],
        "is_cuda_build": rep.build["is_cuda_build"],
        "cuda_build": rep.build["cuda_version"],
        "cudnn_build": rep.build["cudnn_version"],
        "tensorflow": rep.tensorflow,
        "keras": rep.keras,
        "numpy": rep.numpy,
        "python": rep.python,
        "platform": rep.platform,
        "runtime": "Colab" if rep.on_colab else "Kaggle" if rep.on_kaggle else None,
        "tf32": env.tf32_state(tf, rep.gpus),
        "nvml": rep.nvml,
        "private": facts["private"],
    }


def probe_in_child(timeout: float = 300) -> dict[str, Any]:
    """:func:`machine` read by a fresh Python that exits at once, so it holds no GPU memory afterwards."""
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--probe"], cwd=str(ROOT),
                          capture_output=True, text=True, timeout=timeout)
    lines = done.stdout.strip().splitlines()
    if done.returncode or not lines:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise RuntimeError(last)
    return json.loads(lines[-1])


def no_gpu_sentence(info: dict[str, Any]) -> str:
    """The one sentence printed when TensorFlow sees no GPU: why, as far as can be told, and what to do."""
    if not info.get("is_cuda_build"):
        version = f" {info['tensorflow']}" if info.get("tensorflow") else ""
        why = f"this TensorFlow{version} is built without CUDA"
    elif not info.get("driver"):
        why = "TensorFlow is built for CUDA, but there is no NVIDIA driver"
    else:
        why = (f"NVIDIA driver {info['driver']} is there, but TensorFlow sees no GPU: check CUDA_VISIBLE_DEVICES "
               "and that `make install` picked the CUDA flavour")
    return (f"No GPU visible to TensorFlow here ({why}): `make gpu-check` checks the course on a GPU, so run it on "
            "a machine with an NVIDIA GPU, e.g. Colab or Kaggle (see benchmarks/gpu-runs/README.md); nothing was run.")


# --------------------------------------------------------------------------- one notebook
def notebook_name(arg: str) -> str:
    """'03', '03_cpu_vs_gpu_timing' or '03_cpu_vs_gpu_timing.ipynb' -> the notebook's file name."""
    present = nbrun.present()
    for name in present:
        if arg in (name, name[:-len(".ipynb")], name[:2]):
            return name
    raise argparse.ArgumentTypeError(f"{arg!r} is not a notebook of the course; use one of "
                                     f"{', '.join(n[:2] for n in present)} (or a full file name)")


def _pick(results: dict[str, Any], path: str) -> Any:
    value: Any = results
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def key_figures(name: str, results: dict[str, Any]) -> dict[str, Any]:
    """The figures the report keeps from one notebook's results (only these: results also hold paths).

    Example:
        >>> key_figures("07_multi_gpu_mirrored_strategy.ipynb", {"gpu_count": 1, "scaling_efficiency": 0.9})
        {'gpu_count': 1, 'scaling_efficiency': 0.9}
    """
    out = {"gpu_count": results.get("gpu_count")}
    for path in FIGURES.get(name[:2], ()):
        value = _pick(results, path)
        if value is not None:
            out[path] = value
    return out


def _first_line(text: str, limit: int = 300) -> str:
    line = next((line.strip() for line in str(text).splitlines() if line.strip()), "")
    return line if len(line) <= limit else line[:limit - 3] + "..."


def describe_failure(exc: BaseException) -> str:
    """One line: a notebook's error (cell, exception, message) or the claim that did not hold."""
    if type(exc).__name__ == "PapermillExecutionError":
        return _first_line(f"cell [{exc.exec_count}]: {exc.ename}: {exc.evalue}")
    if isinstance(exc, AssertionError):
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if "claims" in Path(f.filename).parts]
        frames = [f for f in frames if re.fullmatch(r"nb\d\d\.py", Path(f.filename).name)] or frames
        where = f"tests/claims/{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "claims"
        message = _first_line(str(exc)) or (frames[-1].line if frames and frames[-1].line else "an assertion")
        return f"{where}: {message}"
    return _first_line(f"{type(exc).__name__}: {exc}")


def split_log(notebook: Any) -> tuple[Any, list[str]]:
    """The executed notebook without its stderr outputs (a copy), and their non-blank lines, in order.

    Example:
        >>> import nbformat
        >>> out = nbformat.v4.new_output
        >>> red = out("stream", name="stderr", text="W0000 00:00:1.1 7 x.cc:1] new\\n")
        >>> cell = nbformat.v4.new_code_cell("x", outputs=[red, out("stream", name="stdout", text="ok\\n")])
        >>> clean, lines = split_log(nbformat.v4.new_notebook(cells=[cell]))
        >>> [o["name"] for o in clean.cells[0].outputs], lines
        (['stdout'], ['W0000 00:00:1.1 7 x.cc:1] new'])
    """
    clean = copy.deepcopy(notebook)
    lines: list[str] = []
    for cell in clean.cells:
        kept = []
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream" and out.get("name") == "stderr":
                lines += [line.rstrip() for line in str(out.get("text", "")).splitlines() if line.strip()]
            else:
                kept.append(out)
        if "outputs" in cell:
            cell["outputs"] = kept
    return clean, lines


def unknown_log(lines: list[str], cap: int = LOG_CAP, width: int = LOG_WIDTH) -> dict[str, Any]:
    """Stderr lines as the report keeps them: their count, and the first `cap` distinct ones, each cut at `width`.

    Example:
        >>> unknown_log(["W1 a", "W1 a", "E2 b"])
        {'total': 3, 'distinct': 2, 'lines': ['W1 a', 'E2 b']}
    """
    distinct = list(dict.fromkeys(line[:width] + ("..." if len(line) > width else "") for line in lines))
    return {"total": len(lines), "distinct": len(distinct), "lines": distinct[:cap]}


def run_one(name: str, workdir: Path, smoke: bool, timeout: int, log_apart: bool = False) -> dict[str, Any]:
    """Run one notebook and assert its claims; never raises for a failure of the notebook or its claims.

    `log_apart` (a GPU run): the page's stderr lines are taken off the executed notebook before the claims
    run (their "no red text" holds) and kept in ``record["log"]``, evidence for the filter, not a failure.
    Without it, stderr on the page fails the claims, as in the tests.
    """
    start = time.perf_counter()
    record: dict[str, Any] = {"notebook": name, "seconds": None, "status": "passed", "message": "", "figures": {},
                              "log": unknown_log([])}
    try:
        run = nbrun.run_notebook(name, workdir, smoke=smoke, timeout=timeout)
    except Exception as exc:  # an error in a cell, a timeout, a dead kernel: recorded, the next notebook runs
        record.update(seconds=round(time.perf_counter() - start, 1), status="error", message=describe_failure(exc))
        results_path = workdir / "results.json"
        if results_path.exists():
            try:
                record["figures"] = key_figures(name, json.loads(results_path.read_text()))
            except ValueError:
                pass
        return record
    record["seconds"] = round(run.seconds, 1)
    record["figures"] = key_figures(name, run.results)
    if log_apart and run.notebook is not None:
        clean, lines = split_log(run.notebook)
        record["log"] = unknown_log(lines)
        run = nbrun.Run(run.results, clean, run.seconds, run.workdir)
    try:
        importlib.import_module(f"claims.nb{name[:2]}").check(run)
    except Exception as exc:
        record.update(status="claims failed", message=describe_failure(exc))
    return record


# --------------------------------------------------------------------------- the report (pure)
_HOME_PATH = re.compile(r"(?:/home|/Users|/var/home|/export/home)/[^/\s'\"`,;:)\]}]+"
                        r"|[A-Za-z]:\\\\?Users\\\\?[^\\\s'\"]+")  # C:\Users\bob, also escaped as C:\\Users
_UUID = re.compile(r"\b(?:GPU-|MIG-)?[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
                   r"|\b(?:GPU|MIG)-[0-9a-fA-F][0-9a-fA-F-]{7,}")
_IPV4 = re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.])")
_IPV6 = re.compile(r"(?<![\w:])(?:[0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}(?![\w:])|(?<![\w:])fe80::[0-9a-fA-F:]+",
                   re.IGNORECASE)
_MAC = re.compile(r"(?<![\w:])(?:[0-9a-fA-F]{2}[:-]){5}[0-9a-fA-F]{2}(?![\w:])")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")


def _ip(match: re.Match) -> str:
    text = match.group(0)
    if text.startswith("127.") or text == "0.0.0.0" or any(int(octet) > 255 for octet in text.split(".")):
        return text  # loopback, "any", or not an address (a version number)
    return "<ip>"


def redact(value: Any, private: list[str] = (), paths: dict[str, str] | None = None) -> Any:
    """Every string in `value` (nested dicts and lists too) with private facts replaced by placeholders.

    `paths` maps folders to a placeholder (the course folder -> '<course>'); `private` lists exact
    values to remove (host name, user name, GPU UUIDs and serials). Home folders, UUIDs, IP and MAC
    addresses and e-mail addresses are removed by their shape, whoever's they are.

    Example:
        >>> redact({"error": "no file /home/alice/x.csv on 10.1.2.3"})
        {'error': 'no file ~/x.csv on <ip>'}
    """
    if isinstance(value, dict):
        return {redact(k, private, paths): redact(v, private, paths) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v, private, paths) for v in value]
    if not isinstance(value, str):
        return value
    text = value
    for folder, placeholder in sorted((paths or {}).items(), key=lambda kv: -len(kv[0])):
        if folder and len(folder) > 1:  # the folder and what is inside it, not /rootfs for /root
            text = re.sub(rf"{re.escape(folder)}(?![\w.-])", lambda _m, p=placeholder: p, text)
    text = _UUID.sub("<uuid>", text)
    text = _EMAIL.sub("<email>", text)
    text = _HOME_PATH.sub("~", text)
    text = _MAC.sub("<mac>", text)
    text = _IPV6.sub("<ip>", text)
    text = _IPV4.sub(_ip, text)
    for secret in sorted({s for s in private if s and len(s) >= 2}, key=len, reverse=True):
        text = re.sub(rf"(?<![\w-]){re.escape(secret)}(?![\w-])", "<private>", text)
    return text


def local_private(home: str | None = None) -> tuple[list[str], dict[str, str]]:
    """This machine's host and user names (exact values to scrub), and its folders with their placeholders."""
    names = {socket.gethostname(), platform.node(), os.environ.get("USER", ""), os.environ.get("LOGNAME", "")}
    try:
        names.add(getpass.getuser())
    except Exception:  # no user name in some containers
        pass
    names.update({n.split(".")[0] for n in list(names) if n})
    home = home if home is not None else str(Path.home())
    paths = {str(ROOT): "<course>"}
    if home not in ("/", ""):
        paths[home] = "~"
    return sorted(n for n in names if n), paths


def slug(text: str) -> str:
    """A safe file-name part: lower case, letters, digits and single hyphens.

    Example:
        >>> slug("NVIDIA A100-SXM4-80GB")
        'nvidia-a100-sxm4-80gb'
    """
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def report_name(report: dict[str, Any]) -> str:
    """'<gpu>-<date>', e.g. 'tesla-t4-2026-11-24' ('2x-tesla-t4-...' for two, 'cpu-...' without a GPU)."""
    gpus = report["machine"]["gpus"]
    date = slug(str(report["date"])) or "undated"
    if not gpus:
        return f"cpu-{date}"
    names = [g["name"] for g in gpus]
    gpu = slug(names[0])[:60].strip("-") or "gpu"
    count = f"{len(names)}x-" if len(names) > 1 else ""
    return f"{count}{gpu}-{date}"


def build_report(info: dict[str, Any], runs: list[dict[str, Any]], date: str, mode: str = "learner",
                 commit: str | None = None, private: list[str] = (),
                 paths: dict[str, str] | None = None) -> dict[str, Any]:
    """The report as a dict (the JSON file), from the machine's facts and the notebooks' records; redacted.

    Only named fields are kept: ``info["private"]`` and anything else not listed here never reach it.
    """
    if mode not in MODES:
        raise ValueError(f"mode={mode!r}: use one of {', '.join(map(repr, MODES))}.")
    fields = ("gpus", "gpu_count", "driver", "cuda_driver", "is_cuda_build", "cuda_build", "cudnn_build",
              "tensorflow", "keras", "numpy", "python", "platform", "runtime", "tf32")
    keep = ("notebook", "seconds", "status", "message", "figures")
    notebooks = [{k: r.get(k) for k in keep} | {"unknown_log_lines": (r.get("log") or {}).get("total", 0)}
                 for r in runs]
    logs = {r["notebook"]: r["log"] for r in runs if (r.get("log") or {}).get("total")}
    report = {
        "report": "make gpu-check (tools/gpu_check.py)",
        "format": FORMAT,
        "date": date,
        "mode": mode,
        "course_commit": commit,
        "machine": {k: info.get(k) for k in fields},
        "notebooks": notebooks,
        "passed": sum(r["status"] == "passed" for r in notebooks),
        "failed": sum(r["status"] != "passed" for r in notebooks),
        "total_seconds": round(sum(r["seconds"] or 0 for r in notebooks), 1),
        # stderr lines helpers.tflog let through on a GPU run, per notebook, verbatim: not counted in "failed"
        "unknown_log": logs,
    }
    return redact(report, list(private) + list(info.get("private") or []), paths)


def _num(x: float, digits: int = 1) -> str:
    return f"{x:,.{digits}f}"


def figures_line(name: str, figures: dict[str, Any], machine_has_gpu: bool = True) -> str:
    """The key figures of one notebook in a few words, for the Markdown table.

    On a machine with a GPU, a notebook that recorded ``gpu_count == 0`` took its CPU path: the line says so.
    """
    f = figures or {}
    parts = []
    if name[:2] == "03" and f.get("matmul_gflops"):
        for device in sorted(f["matmul_gflops"], key=lambda d: d != "GPU"):
            by_size = f["matmul_gflops"][device]
            n = max(by_size, key=lambda k: by_size[k])
            peak = (f.get("peak_gflops") or {}).get(device)
            share = f", {by_size[n] / peak:.0%} of its {_num(peak, 0)} GFLOP/s peak" if peak else ""
            parts.append(f"{device} matmul best {_num(by_size[n])} GFLOP/s at n = {n}{share}")
        if "crossover_n" in f:
            parts.append(f"GPU faster from n = {f['crossover_n']} on" if f["crossover_n"] is not None
                         else "GPU not faster at the largest size")
    elif name[:2] == "04" and f.get("images_per_s"):
        ips = f["images_per_s"]
        parts.append("images/s: " + ", ".join(f"{k} {_num(v, 0)}" for k, v in ips.items()))
    elif name[:2] == "06" and f.get("step_s"):
        parts.append("step: " + ", ".join(f"{k} {_num(v * 1000, 2)} ms" for k, v in f["step_s"].items() if v))
    elif name[:2] == "07" and f.get("scaling_efficiency") is not None:
        parts.append(f"scaling efficiency {f['scaling_efficiency']:.0%}"
                     + (f" with {f['replicas']} replicas" if f.get("replicas") else ""))
    elif name[:2] == "09" and f.get("estimate_error") is not None:
        parts.append(f"memory estimate {f['estimate_error']:+.1%} of the measured peak")
    if machine_has_gpu and f.get("gpu_count") == 0:
        parts.append("the notebook saw no GPU")
    return "; ".join(parts) or "-"


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(report: dict[str, Any]) -> str:
    """The report as Markdown (the .md file), from the dict :func:`build_report` returns."""
    m = report["machine"]
    described = [f"{g['name']} (compute capability {g['compute_capability'] or 'unknown'}, "
                 f"{'memory unknown' if g['memory_gib'] is None else str(g['memory_gib']) + ' GiB'})"
                 for g in m["gpus"]]
    gpus = "; ".join(f"{described.count(d)} x {d}" for d in dict.fromkeys(described)) or "none visible to TensorFlow"
    total = len(report["notebooks"])
    title = m["gpus"][0]["name"] if m["gpus"] else "no GPU"
    logs = report.get("unknown_log") or {}
    log_total = sum(log["total"] for log in logs.values())
    sizes = {"learner": "learner sizes", "quick": "quick sizes (SMOKE=True)", "smoke": "smoke sizes"}[report["mode"]]
    lines = [
        f"# GPU check: {title}, {report['date']}",
        "",
        f"Written by {report['report']}, {sizes}: {report['passed']} of {total} notebook(s) "
        f"passed their claims, {_num(report['total_seconds'], 0)} s in all"
        + (f"; {log_total} log line(s) the course's filter does not know, in {len(logs)} notebook(s) (below: "
           "evidence, not failures)." if log_total else "."),
    ]
    if report["mode"] == "smoke" or not m["gpus"]:
        lines += ["", "This run is a test of the kit (smoke sizes or no GPU), not a GPU report to send."]
    elif report["mode"] == "quick":
        lines += ["", "Quick sizes: the claims and the log on this GPU are checked as at learner sizes; the figures "
                  "come from small sizes, so they say little about this GPU's speed."]
    rows = [
        ("GPU(s)", gpus),
        ("NVIDIA driver", m["driver"] or "not found"),
        ("CUDA the driver supports", m["cuda_driver"] or "unknown"),
        ("CUDA / cuDNN TensorFlow was built for",
         f"{m['cuda_build']} / {m['cudnn_build']}" if m["is_cuda_build"] else "CPU-only build"),
        ("TensorFlow / Keras", f"{m['tensorflow']} / {m['keras']}"),
        ("Python, NumPy", f"{m['python']}, {m['numpy']}"),
        ("Platform", (m["platform"] or "unknown") + (f" ({m['runtime']})" if m["runtime"] else "")),
        ("TF32", m["tf32"]),
        ("Course commit", report["course_commit"] or "unknown"),
    ]
    lines += ["", "## Machine", "", "| what | value |", "| --- | --- |"]
    lines += [f"| {k} | {_cell(v)} |" for k, v in rows]
    lines += ["", "## Notebooks", "", "| notebook | time | claims | key figures |", "| --- | --- | --- | --- |"]
    for r in report["notebooks"]:
        seconds = "-" if r["seconds"] is None else f"{_num(r['seconds'])} s"
        figures = _cell(figures_line(r["notebook"], r["figures"], bool(m["gpus"])))
        status = r["status"]
        if r.get("unknown_log_lines"):
            status = ("claims held" if status == "passed" else status) + f"; {r['unknown_log_lines']} unknown log lines"
        lines.append(f"| {r['notebook']} | {seconds} | {status} | {figures} |")
    failed = [r for r in report["notebooks"] if r["status"] != "passed"]
    if failed:
        lines += ["", "## What failed", ""]
        lines += [f"- {r['notebook']} ({r['status']}): {_cell(r['message'])}" for r in failed]
    if logs:
        lines += ["", "## Log lines the filter does not know", "",
                  "Red lines these notebooks showed on a GPU that `helpers/tflog.py` neither drops nor knows: "
                  f"verbatim, each once, at most {LOG_CAP} per notebook. They did not count against the claims."]
        for name, log in logs.items():
            hidden = log["distinct"] - len(log["lines"])
            more = f", {hidden} more not shown" if hidden > 0 else ""
            lines += ["", f"{name}: {log['total']} line(s), {log['distinct']} distinct{more}", "", "```text",
                      *log["lines"], "```"]
    lines += ["", "The JSON file beside this one holds the same data, every figure in full.", ""]
    return "\n".join(lines)


def write_report(report: dict[str, Any], out: Path) -> tuple[Path, Path]:
    """Write <out>/<gpu>-<date>.md and .json (a -2, -3 ... suffix when that name is taken); return both paths."""
    out.mkdir(parents=True, exist_ok=True)
    base = report_name(report)
    stem, n = base, 1
    while (out / f"{stem}.md").exists() or (out / f"{stem}.json").exists():
        n += 1
        stem = f"{base}-{n}"
    md, js = out / f"{stem}.md", out / f"{stem}.json"
    js.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    md.write_text(render_markdown(report))
    return md, js


# --------------------------------------------------------------------------- the estimate printed first
# No learner run on a GPU is recorded yet (benchmarks/gpu-runs/ holds none), so the estimate is a CPU
# measurement scaled by assumptions, and the printed line says so. On a GPU the notebooks pick larger
# sizes (helpers.setup's hardware report), compile with XLA and autotune cuDNN; the assumption is 1x to
# 3x the CPU's learner time, plus each kernel's start (Python, TensorFlow's import, the GPU's
# initialisation). Replace these with measured figures once reports come in.
GPU_FACTOR = (1.0, 3.0)  # assumed: a notebook's GPU learner time over its quiet-2-core-CPU learner time
START_S = 15.0  # assumed: seconds each notebook's kernel takes to start and initialise the GPU
QUICK_S = (20.0, 60.0)  # assumed: seconds a notebook takes at smoke sizes on a GPU, its start included


def _minutes(seconds: float) -> str:
    return f"{max(1, round(seconds / 60))}"


def estimate_line(names: list[str], mode: str, gpu: str, times: dict[str, Any] | None = None) -> str:
    """What the run will take, said before it starts: measured CPU times scaled by the stated assumptions.

    `times` is ``benchmarks/times.json`` (read when None). At learner sizes the line offers ``--quick``.

    Example:
        >>> t = {"measured": "2026-11-24", "learner_s": {"03_x.ipynb": {"onednn": 21.0, "eigen": 21.4}}}
        >>> estimate_line(["03_x.ipynb"], "learner", "Tesla T4", t)[:90]
        'Estimate, not a measurement: learner sizes of these 1 notebook(s) took 21 s on a quiet 2-c'
    """
    if mode not in MODES:
        raise ValueError(f"mode={mode!r}: use one of {', '.join(map(repr, MODES))}.")
    times = times if times is not None else json.loads(TIMES.read_text())
    learner = times.get("learner_s", {})
    quick_low, quick_high = (len(names) * s for s in QUICK_S)
    quick = (f"{_minutes(quick_low)}-{_minutes(quick_high)} min (assumed {QUICK_S[0]:.0f}-{QUICK_S[1]:.0f} s a "
             "notebook at smoke sizes)")
    if mode != "learner":
        return f"Estimate, not a measurement: {len(names)} notebook(s) at smoke sizes on {gpu}, about {quick}."
    cpu = sum(max(learner.get(n, {}).values() or [0.0]) for n in names)
    unknown = [n for n in names if n not in learner]
    low, high = (cpu * f + START_S * len(names) for f in GPU_FACTOR)
    return (f"Estimate, not a measurement: learner sizes of these {len(names)} notebook(s) took {cpu:,.0f} s on a "
            f"quiet 2-core CPU (benchmarks/times.json, measured {times.get('measured', 'on an unknown day')}"
            + (f"; {len(unknown)} without a time there" if unknown else "")
            + f"); no GPU run is recorded yet, so on {gpu} expect about {_minutes(low)}-{_minutes(high)} min "
            f"(assumed {GPU_FACTOR[0]:g}x-{GPU_FACTOR[1]:g}x that, plus {START_S:.0f} s a notebook to start). "
            f"With --quick (smoke sizes) about {quick}: that fits a Colab or Kaggle session.")


# --------------------------------------------------------------------------- the command
def course_commit() -> str | None:
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
    if done.returncode:
        return None
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return done.stdout.strip() + (" with local changes" if dirty else "")


def missing_tools(find: Any = importlib.util.find_spec) -> str:
    """'' when papermill and nbformat can be imported, else the sentence to print (Colab and Kaggle lack papermill)."""
    absent = [m for m in ("papermill", "nbformat") if find(m) is None]
    if not absent:
        return ""
    pins = dict(line.split("==") for line in (ROOT / "requirements-test.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    specs = " ".join(f"{m}=={pins[m]}" if m in pins else m for m in absent)
    verb = "is" if len(absent) == 1 else "are"
    return (f"{' and '.join(absent)} {verb} missing: install with `pip install {specs}` (in a Colab or Kaggle cell: "
            f"`!pip install -q {specs}`), then run this again; nothing was run.")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--notebooks", nargs="+", type=notebook_name, metavar="NN",
                        help="run only these notebooks (03, or a file name); default: every notebook")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="folder for the report (default: benchmarks/gpu-runs)")
    sizes = parser.add_mutually_exclusive_group()
    sizes.add_argument("--quick", action="store_true",
                       help="smoke sizes on a GPU: claims and log checked in minutes (fits a Colab or Kaggle session)")
    sizes.add_argument("--smoke", action="store_true", help="tiny sizes (tests the kit; not a report to send)")
    parser.add_argument("--allow-cpu", action="store_true", help="run even without a GPU (tests the kit)")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per notebook cell (default 1800)")
    parser.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


# For the course's own tests only (tests/test_colab_runtime.py runs the README's Colab and Kaggle cells as written on
# runtimes without a GPU): a JSON object {"gpus": [...], "notebooks": [...]} whose GPUs stand in for the ones the
# probe found (the runtime's versions stay the probe's own) and whose notebooks are the ones run.
FAKE_ENV = "COURSE_GPU_CHECK_FAKE"


def fake_from_environ(environ: dict[str, str] | None = None) -> dict[str, Any]:
    """The test stand-in of :data:`FAKE_ENV`, or {} when it is not set.

    Example:
        >>> fake_from_environ({FAKE_ENV: '{"gpus": [{"name": "Tesla T4"}], "notebooks": ["00"]}'})["notebooks"]
        ['00_environment_check.ipynb']
    """
    text = (os.environ if environ is None else environ).get(FAKE_ENV, "")
    if not text:
        return {}
    fake = json.loads(text)
    if not isinstance(fake, dict) or not set(fake) <= {"gpus", "notebooks"}:
        raise ValueError(f"{FAKE_ENV}={text!r}: use a JSON object with keys 'gpus' and 'notebooks'")
    if "notebooks" in fake:
        fake["notebooks"] = [notebook_name(n) for n in fake["notebooks"]]
    return fake


def main(argv: list[str] | None = None, probe: Any = probe_in_child, runner: Any = run_one,
         today: str | None = None) -> int:
    args = parse_args(argv)
    if args.probe:  # the child process of probe_in_child
        print(json.dumps(machine()))
        return 0
    fake = fake_from_environ()
    try:
        info = probe()
    except Exception as exc:
        print(f"Could not read this machine with TensorFlow ({_first_line(str(exc))}): install the course first "
              "(`make install`), then run this again; nothing was run.")
        return NO_GPU_EXIT
    if "gpus" in fake:
        info = dict(info, gpus=fake["gpus"], gpu_count=len(fake["gpus"]))
    if not info["gpus"] and not args.allow_cpu:
        print(no_gpu_sentence(info))
        return NO_GPU_EXIT
    missing = missing_tools()
    if missing:
        print(missing)
        return NO_GPU_EXIT
    names = args.notebooks or fake.get("notebooks") or nbrun.present()
    mode = "quick" if args.quick else "smoke" if args.smoke else "learner"
    smoke = mode != "learner"
    where = ", ".join(g["name"] for g in info["gpus"]) or "the CPU"
    log_apart = bool(info["gpus"])  # on a GPU an unknown log line is evidence; on a CPU the page stays clean
    print(f"Checking {len(names)} notebook(s) at {mode} sizes on {where}, one after the other.")
    try:
        print(estimate_line(names, mode, where), flush=True)
    except (OSError, ValueError) as exc:  # no times file: say so and go on
        print(f"No estimate ({_first_line(str(exc))}).", flush=True)
    saved = dict(os.environ)
    os.environ.pop("COURSE_SMOKE", None)  # papermill sets SMOKE itself
    # The kernels import this checkout's helpers, also where no .venv installed them; on Colab and Kaggle
    # each notebook's first cell finds the course in COURSE_DIR instead of cloning another copy.
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), saved.get("PYTHONPATH", "")) if p)
    os.environ["COURSE_DIR"] = str(ROOT)
    work = Path(tempfile.mkdtemp(prefix="gpu-check-"))
    runs = []
    try:
        for i, name in enumerate(names, 1):
            print(f"[{i}/{len(names)}] {name}: running...", flush=True)
            record = runner(name, work / name[:2], smoke, args.timeout, log_apart=log_apart)
            log = (record.get("log") or {}).get("total", 0)
            print(f"[{i}/{len(names)}] {name}: {record['status']}, {record['seconds']} s"
                  + (f"; {log} unknown log line(s), kept for the report" if log else "")
                  + (f": {record['message']}" if record["message"] else ""), flush=True)
            runs.append(record)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    private, paths = local_private()
    paths[str(work)] = "<workdir>"
    report = build_report(info, runs, today or datetime.date.today().isoformat(), mode, course_commit(),
                          private, paths)
    md, js = write_report(report, args.out)
    print(f"Report: {md} and {js.name}. {report['passed']} of {len(runs)} notebook(s) passed.")
    if report["failed"]:
        print(f"The executed notebooks are in {work} (not in the report); delete the folder when done.")
        return FAILED_EXIT
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
