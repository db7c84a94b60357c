"""`make gpu-check` (tools/gpu_check.py): the machine read through fakes, the report writer on fake data,
the command's branches with a fake probe and runner, and two real runs here (no GPU; --allow-cpu)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import fakes
import nbrun
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import gpu_check  # noqa: E402

CLAIMS = ROOT / "tests" / "claims"
UUID = "GPU-6f0c1e2a-9b3d-4c5e-8f70-1a2b3c4d5e6f"
SERIAL = "1324020012345"
DATE = "2026-11-24"


class IdentifiedNVML(fakes.FakeNVML):
    """The fake NVML with what a real driver also answers: UUID, serial, the newest CUDA it supports."""

    def nvmlDeviceGetUUID(self, h):  # noqa: N802 - pynvml's names
        return UUID

    def nvmlDeviceGetSerial(self, h):  # noqa: N802
        return SERIAL

    def nvmlSystemGetCudaDriverVersion(self):  # noqa: N802
        return 12040


def fixture(nn: str) -> dict:
    return json.loads((CLAIMS / f"gpu_nb{nn}.json").read_text())["results"]


def name_of(nn: str) -> str:
    return next(n for n in nbrun.COURSE if n.startswith(nn))


def gpu_info() -> dict:
    return gpu_check.machine(tf=fakes.FakeTF(), nvml=IdentifiedNVML())


def passed(nn: str, seconds: float = 60.0) -> dict:
    return {"notebook": name_of(nn), "seconds": seconds, "status": "passed", "message": "",
            "figures": gpu_check.key_figures(name_of(nn), fixture(nn))}


# --------------------------------------------------------------------------- the machine, through fakes
def test_machine_reads_gpu_driver_cuda_and_versions_from_the_fakes():
    info = gpu_info()
    assert info["gpus"] == [{"name": "Tesla T4", "compute_capability": "7.5", "memory_gib": 16.0}]
    assert info["gpu_count"] == 1
    assert (info["driver"], info["cuda_driver"]) == ("550.54.15", "12.4")
    assert (info["is_cuda_build"], info["cuda_build"], info["cudnn_build"]) == (True, "12.5.1", "9")
    assert info["tensorflow"] == "2.21.0" and info["keras"] and info["python"]
    assert info["tf32"].startswith("TF32 ")
    assert sorted(info["private"]) == sorted([UUID, SERIAL])  # to scrub, never to show


def test_machine_without_a_driver_has_no_driver_and_nothing_private_from_nvml():
    info = gpu_check.machine(tf=fakes.FakeTF(), nvml=IdentifiedNVML(fail_init=True))
    assert info["driver"] is None and info["cuda_driver"] is None and info["private"] == []
    assert info["gpus"][0]["memory_gib"] is None  # memory comes from NVML


@pytest.mark.parametrize("tf,nvml,why", [
    (fakes.FakeTF(n_gpus=0, cuda=False), fakes.FakeNVML(gpus=[]), "built without CUDA"),
    (fakes.FakeTF(n_gpus=0), fakes.FakeNVML(fail_init=True), "there is no NVIDIA driver"),
    (fakes.FakeTF(n_gpus=0), fakes.FakeNVML(), "NVIDIA driver 550.54.15 is there, but TensorFlow sees no GPU"),
])
def test_the_no_gpu_sentence_says_why_and_where_to_go(tf, nvml, why):
    sentence = gpu_check.no_gpu_sentence(gpu_check.machine(tf=tf, nvml=nvml))
    assert sentence.startswith("No GPU visible to TensorFlow here") and why in sentence
    assert "Colab or Kaggle" in sentence and "nothing was run" in sentence
    assert ". " not in sentence.replace("e.g. ", "") and sentence.endswith("."), "one sentence"


# --------------------------------------------------------------------------- the report writer, on fake data
def test_key_figures_keep_only_the_named_figures():
    figures = gpu_check.key_figures(name_of("04"), fixture("04"))
    assert figures == {"gpu_count": 1, "images_per_s": fixture("04")["images_per_s"]}  # no trace_dir (a path)
    r09 = fixture("09")
    assert gpu_check.key_figures(name_of("09"), r09) == {
        "gpu_count": 1, "estimate_error": r09["estimate_error"], "estimated_bytes": r09["estimated_bytes"],
        "measured_bytes.bytes": r09["measured_bytes"]["bytes"]}  # not measured_bytes.how
    assert gpu_check.key_figures(name_of("00"), {"gpu_count": 1, "devices": ["/device:GPU:0"]}) == {"gpu_count": 1}


def test_the_key_figures_reach_the_markdown():
    runs = [passed(nn) for nn in ("03", "04", "06", "07", "09")]
    text = gpu_check.render_markdown(gpu_check.build_report(gpu_info(), runs, DATE))
    r03 = fixture("03")
    gpu = r03["matmul_gflops"]["GPU"]
    best = max(gpu, key=gpu.get)
    share = gpu[best] / r03["peak_gflops"]["GPU"]
    assert f"GPU matmul best {gpu[best]:,.1f} GFLOP/s at n = {best}, {share:.0%} of its" in text
    assert f"GPU faster from n = {r03['crossover_n']} on" in text
    assert f"tuned {fixture('04')['images_per_s']['tuned']:,.0f}" in text
    for policy, seconds in fixture("06")["step_s"].items():
        assert f"{policy} {seconds * 1000:,.2f} ms" in text
    assert f"scaling efficiency {fixture('07')['scaling_efficiency']:.0%} with 2 replicas" in text
    assert f"memory estimate {fixture('09')['estimate_error']:+.1%} of the measured peak" in text
    assert "| Tesla T4 " not in text and "1 x Tesla T4 (compute capability 7.5, 16.0 GiB)" in text
    assert "| NVIDIA driver | 550.54.15 |" in text and "| CUDA / cuDNN TensorFlow was built for | 12.5.1 / 9 |" in text
    assert "5 of 5 notebook(s) passed" in text and "## What failed" not in text


def test_nothing_private_reaches_the_report():
    private_bits = {
        "home": "/home/alice/gpu-course/helpers/data.py",
        "mac home": "/Users/alice/x.csv",
        "windows home": "C:\\Users\\alice\\course",
        "host": "alice-laptop",
        "ipv4": "192.168.1.23",
        "ipv6": "2001:db8:85a3:0:0:8a2e:370:7334",
        "mac": "3c:22:fb:12:9a:0e",
        "email": "alice@example.org",
        "uuid": UUID,
        "serial": SERIAL,
    }
    info = gpu_info() | {"hostname": "alice-laptop", "user": "alice"}  # fields the report does not name
    failing = {"notebook": name_of("05"), "seconds": 12.0, "status": "error",
               "message": "cell [7]: FileNotFoundError: " + " ".join(private_bits.values()) + " on 127.0.0.1:2222",
               "figures": {"gpu_count": 1}, "workdir": "/home/alice/tmp/05"}
    report = gpu_check.build_report(info, [passed("03"), failing], DATE, private=["alice-laptop", "alice"],
                                    paths={"/home/alice/gpu-course": "<course>", "/home/alice": "~"})
    for text in (json.dumps(report), gpu_check.render_markdown(report)):
        leaked = [what for what, bit in private_bits.items() if bit in text]
        assert not leaked and "alice" not in text, f"private {leaked} in the report"
        assert "<course>/helpers/data.py" in text and "<ip>" in text and "<uuid>" in text
        assert "127.0.0.1:2222" in text  # loopback is not private, and notebook 08 uses it
        assert "550.54.15" in text and "2.21.0" in text and "12.5.1" in text  # versions are not addresses
    assert "private" not in report["machine"] and "hostname" not in report["machine"]
    assert "workdir" not in report["notebooks"][1]
    assert report["failed"] == 1 and report["passed"] == 1


def test_local_private_names_this_machine_and_its_home():
    names, paths = gpu_check.local_private(home="/home/alice")
    import socket

    assert socket.gethostname() in names
    assert paths["/home/alice"] == "~" and paths[str(ROOT)] == "<course>"
    assert "/" not in gpu_check.local_private(home="/")[1]  # a home of / would erase every path


@pytest.mark.parametrize("names,expected", [
    (["Tesla T4"], f"tesla-t4-{DATE}"),
    (["NVIDIA A100-SXM4-80GB"], f"nvidia-a100-sxm4-80gb-{DATE}"),
    (["NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4090"], f"2x-nvidia-geforce-rtx-4090-{DATE}"),
    (["../../etc/passwd  Ü GPU"], f"etc-passwd-gpu-{DATE}"),
    (["???"], f"gpu-{DATE}"),
    ([], f"cpu-{DATE}"),
])
def test_the_file_name_is_a_safe_slug(names, expected):
    report = {"date": DATE, "machine": {"gpus": [{"name": n} for n in names]}}
    name = gpu_check.report_name(report)
    assert name == expected
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name)


def test_a_second_report_the_same_day_does_not_overwrite_the_first(tmp_path):
    report = gpu_check.build_report(gpu_info(), [passed("07")], DATE)
    first = gpu_check.write_report(report, tmp_path)
    second = gpu_check.write_report(report, tmp_path)
    assert [p.name for p in first] == [f"tesla-t4-{DATE}.md", f"tesla-t4-{DATE}.json"]
    assert [p.name for p in second] == [f"tesla-t4-{DATE}-2.md", f"tesla-t4-{DATE}-2.json"]
    assert json.loads(first[1].read_text()) == report


def test_a_smoke_or_cpu_report_says_it_is_not_one_to_send():
    cpu = gpu_check.machine(tf=fakes.FakeTF(n_gpus=0, cuda=False), nvml=fakes.FakeNVML(gpus=[]))
    for info, mode in ((cpu, "learner"), (gpu_info(), "smoke")):
        text = gpu_check.render_markdown(gpu_check.build_report(info, [passed("07")], DATE, mode))
        assert "not a GPU report to send" in text
    text = gpu_check.render_markdown(gpu_check.build_report(gpu_info(), [passed("07")], DATE, "learner"))
    assert "not a GPU report to send" not in text
    with pytest.raises(ValueError, match="mode="):
        gpu_check.build_report(gpu_info(), [], DATE, "fast")


# --------------------------------------------------------------------------- one notebook's record
def test_a_notebook_error_is_one_line_naming_the_cell():
    from papermill.exceptions import PapermillExecutionError

    exc = PapermillExecutionError(4, 7, "x = f()", "ValueError", "SIZES='huge': use 'small' or 'large'\nmore",
                                  ["Traceback", "..."])
    assert gpu_check.describe_failure(exc) == "cell [7]: ValueError: SIZES='huge': use 'small' or 'large'"


def test_a_failed_claim_names_its_file_and_line():
    from claims import nb07

    run = nbrun.Run({"gpu_count": 0, "replicas": 2}, None, 1.0, ROOT)
    with pytest.raises(AssertionError) as info:
        nb07.on_gpu(run)  # `assert r["gpu_count"] >= 1`, no message
    line = gpu_check.describe_failure(info.value)
    assert re.match(r"tests/claims/nb07\.py:\d+: ", line) and ">= 1" in line and "\n" not in line


def test_run_one_records_an_error_and_a_failed_claim_without_raising(tmp_path, monkeypatch):
    def broken(name, workdir, smoke, timeout):
        raise RuntimeError("Kernel died before replying to kernel_info\nsecond line")

    monkeypatch.setattr(gpu_check.nbrun, "run_notebook", broken)
    record = gpu_check.run_one(name_of("07"), tmp_path, smoke=False, timeout=10)
    assert record["status"] == "error"
    assert record["message"] == "RuntimeError: Kernel died before replying to kernel_info"
    assert record["seconds"] is not None and record["seconds"] >= 0

    results = dict(fixture("07"))
    del results["scaling_efficiency"]
    monkeypatch.setattr(gpu_check.nbrun, "run_notebook",
                        lambda name, workdir, smoke, timeout: nbrun.Run(results, None, 42.0, workdir))
    record = gpu_check.run_one(name_of("07"), tmp_path, smoke=False, timeout=10)
    assert record["status"] == "claims failed" and "results lack ['scaling_efficiency']" in record["message"]
    assert record["seconds"] == 42.0 and record["figures"]["replicas"] == 2


# --------------------------------------------------------------------------- the command, with fakes
def fake_runner(outcomes: dict[str, str], calls: list, logs: dict[str, list[str]] | None = None):
    def run(name, workdir, smoke, timeout, log_apart=False):
        calls.append((name, smoke))
        modes.append(log_apart)
        status = outcomes.get(name[:2], "passed")
        record = passed(name[:2]) if name[:2] in ("03", "04", "06", "07", "09") else {
            "notebook": name, "seconds": 5.0, "status": "passed", "message": "", "figures": {"gpu_count": 1}}
        if status != "passed":
            record.update(status=status, message=f"cell [3]: OSError: cannot read /home/alice/data on {UUID}")
        record["log"] = gpu_check.unknown_log((logs or {}).get(name[:2], []))
        return record
    modes: list[bool] = []
    run.log_apart = modes
    return run


def test_on_a_gpu_every_notebook_runs_a_failure_does_not_stop_the_others_and_exit_is_1(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(gpu_check.tempfile, "tempdir", str(tmp_path))  # the kept work folder lands here
    calls = []
    code = gpu_check.main(["--out", str(tmp_path / "out")], probe=gpu_info,
                          runner=fake_runner({"04": "error"}, calls), today=DATE)
    assert code == gpu_check.FAILED_EXIT
    assert [c[0] for c in calls] == nbrun.present() and not any(smoke for _, smoke in calls)  # learner sizes
    report = json.loads((tmp_path / "out" / f"tesla-t4-{DATE}.json").read_text())
    assert [r["status"] for r in report["notebooks"]].count("error") == 1 and report["failed"] == 1
    text = (tmp_path / "out" / f"tesla-t4-{DATE}.md").read_text()
    assert "## What failed" in text and "04_input_pipelines.ipynb (error): cell [3]: OSError" in text
    assert "alice" not in text and UUID not in text
    out = capsys.readouterr().out
    assert "Report:" in out and f"The executed notebooks are in {tmp_path}" in out


def test_on_a_gpu_all_passed_exits_0_and_a_subset_runs_only_the_subset(tmp_path, monkeypatch):
    monkeypatch.setattr(gpu_check.tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    calls = []
    code = gpu_check.main(["--out", str(tmp_path), "--notebooks", "07", "03_cpu_vs_gpu_timing.ipynb"],
                          probe=gpu_info, runner=fake_runner({}, calls), today=DATE)
    assert code == 0 and [c[0] for c in calls] == [name_of("07"), name_of("03")]
    assert list((tmp_path / "tmp").iterdir()) == [], "the work folder is removed when every notebook passed"


def test_without_a_gpu_nothing_runs_and_nothing_is_written(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(gpu_check.tempfile, "tempdir", str(tmp_path))
    calls = []
    cpu = lambda: gpu_check.machine(tf=fakes.FakeTF(n_gpus=0, cuda=False), nvml=fakes.FakeNVML(gpus=[]))  # noqa: E731
    code = gpu_check.main(["--out", str(tmp_path / "out")], probe=cpu, runner=fake_runner({}, calls), today=DATE)
    assert code == gpu_check.NO_GPU_EXIT and calls == [] and not (tmp_path / "out").exists()
    out = capsys.readouterr().out.strip()
    assert out.startswith("No GPU visible to TensorFlow here") and "\n" not in out
    code = gpu_check.main(["--allow-cpu", "--smoke", "--notebooks", "00", "--out", str(tmp_path / "out")],
                          probe=cpu, runner=fake_runner({}, calls), today=DATE)
    assert code == 0 and calls == [(name_of("00"), True)] and (tmp_path / "out" / f"cpu-{DATE}.md").exists()


def test_a_missing_papermill_is_one_sentence_with_the_pinned_install():
    sentence = gpu_check.missing_tools(find=lambda m: None if m == "papermill" else object())
    pin = next(line for line in (ROOT / "requirements-test.txt").read_text().splitlines()
               if line.startswith("papermill=="))
    assert sentence.startswith("papermill is missing") and f"!pip install -q {pin}" in sentence
    assert gpu_check.missing_tools() == ""  # installed here


def test_an_unknown_notebook_is_refused_before_anything_runs(capsys):
    with pytest.raises(SystemExit) as info:
        gpu_check.main(["--notebooks", "33"], probe=lambda: pytest.fail("probed"))
    assert info.value.code == 2 and "'33' is not a notebook of the course" in capsys.readouterr().err


# --------------------------------------------------------------------------- for real, on this machine
def _tool(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "tools" / "gpu_check.py"), *args], cwd=str(ROOT),
                          capture_output=True, text=True, timeout=600, env={**os.environ, **env})


def test_here_without_a_gpu_it_says_so_in_one_sentence_and_exits_non_zero(tmp_path):
    done = _tool("--out", str(tmp_path / "out"), CUDA_VISIBLE_DEVICES="-1")  # no GPU, even on a GPU machine
    assert done.returncode == gpu_check.NO_GPU_EXIT, done.stdout + done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("No GPU visible to TensorFlow here"), done.stdout
    assert "Colab or Kaggle" in lines[0]
    assert not (tmp_path / "out").exists()


@pytest.mark.notebook
def test_here_with_allow_cpu_it_runs_a_notebook_and_writes_a_clean_report(tmp_path):
    done = _tool("--allow-cpu", "--smoke", "--notebooks", "00", "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stdout + done.stderr
    written = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert len(written) == 2 and written[0].startswith("cpu-") and written[0].endswith(".json")
    report = json.loads((tmp_path / "out" / written[0]).read_text())
    assert report["mode"] == "smoke" and report["machine"]["gpus"] == []
    (record,) = report["notebooks"]
    assert record["notebook"] == name_of("00") and record["status"] == "passed" and record["seconds"] > 0
    import getpass
    import socket

    text = json.dumps(report) + (tmp_path / "out" / written[1]).read_text()
    for private in {socket.gethostname(), getpass.getuser()}:  # as whole words: a host "t4" may sit in "tesla-t4"
        assert not re.search(rf"(?<![\w-]){re.escape(private)}(?![\w-])", text), f"{private!r} in the report"
    assert str(Path.home()) + "/" not in text and str(ROOT) not in text


def test_the_tools_doctests_hold():
    import doctest

    failures, tried = doctest.testmod(gpu_check)
    assert tried >= 3 and failures == 0


def test_the_tool_process_never_imports_tensorflow():
    """TensorFlow in the tool's own process would hold GPU memory the notebooks' kernels need; only the probe
    child (`--probe`) imports it. The claims and the report writer must not pull it in."""
    code = ("import sys; sys.path.insert(0, 'tools'); import gpu_check, importlib, nbrun\n"
            "for n in nbrun.present(): importlib.import_module('claims.nb' + n[:2])\n"
            "r = gpu_check.build_report({'gpus': []}, [], '2026-11-24'); gpu_check.render_markdown(r)\n"
            "print('tensorflow' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=str(ROOT), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_the_gpu_row_counts_identical_gpus_and_lists_different_ones():
    info = gpu_check.machine(tf=fakes.FakeTF(n_gpus=2), nvml=IdentifiedNVML(gpus=[]))
    text = gpu_check.render_markdown(gpu_check.build_report(info, [], DATE))
    assert "| GPU(s) | 2 x Tesla T4 (compute capability 7.5, memory unknown) |" in text
    info["gpus"][1] = {"name": "NVIDIA L4", "compute_capability": "8.9", "memory_gib": 22.5}
    text = gpu_check.render_markdown(gpu_check.build_report(info, [], DATE))
    assert ("1 x Tesla T4 (compute capability 7.5, memory unknown); "
            "1 x NVIDIA L4 (compute capability 8.9, 22.5 GiB)") in text


def test_a_notebook_that_took_its_cpu_path_on_a_gpu_machine_is_flagged_only_there():
    cpu_path = {"notebook": name_of("02"), "seconds": 9.0, "status": "passed", "message": "",
                "figures": {"gpu_count": 0}}
    text = gpu_check.render_markdown(gpu_check.build_report(gpu_info(), [cpu_path], DATE))
    assert "| passed | the notebook saw no GPU |" in text
    cpu = gpu_check.machine(tf=fakes.FakeTF(n_gpus=0, cuda=False), nvml=fakes.FakeNVML(gpus=[]))
    text = gpu_check.render_markdown(gpu_check.build_report(cpu, [cpu_path], DATE))
    assert "saw no GPU" not in text and "| passed | - |" in text



# --------------------------------------------------------------------------- unknown log lines, estimate, --quick
NEW_WARNING = "W0000 00:00:1.1 7 some_new_gpu_thing.cc:12] A warning no filter knows yet"


def fake_executed(nn: str, stderr: list[str]):
    """An executed notebook that printed the GPU fixture's text, and `stderr` in red."""
    import nbformat

    data = json.loads((CLAIMS / f"gpu_nb{nn}.json").read_text())
    text = data.get("text", "")
    text = "\n".join(text) if isinstance(text, list) else text
    outputs = [nbformat.v4.new_output("stream", name="stdout", text=text + "\n")]
    outputs += [nbformat.v4.new_output("stream", name="stderr", text=line + "\n") for line in stderr]
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("run()", outputs=outputs)])


def test_on_a_gpu_unknown_stderr_is_kept_as_evidence_and_the_claims_still_hold(tmp_path, monkeypatch):
    stderr = [NEW_WARNING, NEW_WARNING, "E0000 00:00:1.2 7 other.cc:3] Another one", "x" * 1000]
    monkeypatch.setattr(gpu_check.nbrun, "run_notebook", lambda name, workdir, smoke, timeout: nbrun.Run(
        fixture("07"), fake_executed("07", stderr), 30.0, None))
    record = gpu_check.run_one(name_of("07"), tmp_path, smoke=False, timeout=10, log_apart=True)
    assert record["status"] == "passed", record["message"]
    assert record["log"]["total"] == 4 and record["log"]["distinct"] == 3
    assert record["log"]["lines"][:2] == [NEW_WARNING, "E0000 00:00:1.2 7 other.cc:3] Another one"]
    assert len(record["log"]["lines"][2]) == gpu_check.LOG_WIDTH + 3, "a long line is cut, not dropped"


def test_without_a_gpu_stderr_on_the_page_still_fails_the_claims(tmp_path, monkeypatch):
    monkeypatch.setattr(gpu_check.nbrun, "run_notebook", lambda name, workdir, smoke, timeout: nbrun.Run(
        fixture("07"), fake_executed("07", [NEW_WARNING]), 30.0, None))
    record = gpu_check.run_one(name_of("07"), tmp_path, smoke=False, timeout=10)
    assert record["status"] == "claims failed" and "stderr on the learner's page" in record["message"]
    assert record["log"]["total"] == 0
    clean = gpu_check.run_one(name_of("07"), tmp_path, smoke=False, timeout=10, log_apart=True)
    assert clean["status"] == "passed"  # the same run, its log apart: only the red lines differed


def test_the_report_lists_unknown_lines_per_notebook_apart_from_the_claims(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(gpu_check.tempfile, "tempdir", str(tmp_path))
    calls = []
    many = [f"W0000 00:00:1.1 7 x.cc:{i}] line {i} from /home/alice/course" for i in range(gpu_check.LOG_CAP + 5)]
    runner = fake_runner({}, calls, logs={"03": [NEW_WARNING, NEW_WARNING], "06": many})
    code = gpu_check.main(["--out", str(tmp_path / "out"), "--notebooks", "03", "06", "07"], probe=gpu_info,
                          runner=runner, today=DATE)
    assert code == 0 and runner.log_apart == [True, True, True]
    report = json.loads((tmp_path / "out" / f"tesla-t4-{DATE}.json").read_text())
    assert (report["passed"], report["failed"]) == (3, 0), "unknown log lines are not claim failures"
    assert report["unknown_log"][name_of("03")] == {"total": 2, "distinct": 1, "lines": [NEW_WARNING]}
    assert len(report["unknown_log"][name_of("06")]["lines"]) == gpu_check.LOG_CAP
    assert name_of("07") not in report["unknown_log"]
    assert [r["unknown_log_lines"] for r in report["notebooks"]] == [2, gpu_check.LOG_CAP + 5, 0]
    text = (tmp_path / "out" / f"tesla-t4-{DATE}.md").read_text()
    assert f"| {name_of('03')} | 60.0 s | claims held; 2 unknown log lines |" in text
    assert f"| {name_of('07')} | 60.0 s | passed |" in text
    assert "## Log lines the filter does not know" in text and NEW_WARNING in text and "alice" not in text
    assert "5 more not shown" in text and "## What failed" not in text
    out = capsys.readouterr().out
    assert f"[1/3] {name_of('03')}: passed, 60.0 s; 2 unknown log line(s)" in out


def test_an_estimate_comes_before_the_first_notebook_with_a_quick_size_offered(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(gpu_check.tempfile, "tempdir", str(tmp_path))
    calls = []
    code = gpu_check.main(["--out", str(tmp_path / "out"), "--notebooks", "03", "04"], probe=gpu_info,
                          runner=fake_runner({}, calls), today=DATE)
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    times = json.loads(gpu_check.TIMES.read_text())["learner_s"]
    cpu = max(times[name_of("03")].values()) + max(times[name_of("04")].values())
    estimate = next(i for i, line in enumerate(out) if line.startswith("Estimate, not a measurement"))
    assert estimate < next(i for i, line in enumerate(out) if line.startswith("[1/2]"))
    assert f"took {cpu:,.0f} s on a quiet 2-core CPU" in out[estimate] and "--quick" in out[estimate]
    low, high = (cpu * f + gpu_check.START_S * 2 for f in gpu_check.GPU_FACTOR)
    assert f"about {max(1, round(low / 60))}-{max(1, round(high / 60))} min" in out[estimate]
    assert [line.split(":")[0] for line in out if line.startswith("[")] == ["[1/2] " + name_of("03")] * 2 + \
        ["[2/2] " + name_of("04")] * 2


def test_quick_runs_smoke_sizes_on_the_gpu_and_says_so_in_the_report(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(gpu_check.tempfile, "tempdir", str(tmp_path))
    calls = []
    code = gpu_check.main(["--quick", "--out", str(tmp_path / "out"), "--notebooks", "07"], probe=gpu_info,
                          runner=fake_runner({}, calls), today=DATE)
    assert code == 0 and calls == [(name_of("07"), True)]
    report = json.loads((tmp_path / "out" / f"tesla-t4-{DATE}.json").read_text())
    assert report["mode"] == "quick" and report["format"] == 2
    text = (tmp_path / "out" / f"tesla-t4-{DATE}.md").read_text()
    assert "quick sizes (SMOKE=True)" in text and "not a GPU report to send" not in text
    line = gpu_check.estimate_line([name_of("07")], "quick", "Tesla T4")
    assert line.startswith("Estimate, not a measurement") and "smoke sizes" in line
    with pytest.raises(SystemExit):
        gpu_check.main(["--quick", "--smoke"], probe=lambda: pytest.fail("probed"))


def test_on_a_cpu_the_runner_keeps_the_tests_strictness(tmp_path, monkeypatch):
    monkeypatch.setattr(gpu_check.tempfile, "tempdir", str(tmp_path))
    cpu = lambda: gpu_check.machine(tf=fakes.FakeTF(n_gpus=0, cuda=False), nvml=fakes.FakeNVML(gpus=[]))  # noqa: E731
    runner = fake_runner({}, [])
    gpu_check.main(["--allow-cpu", "--smoke", "--notebooks", "00", "--out", str(tmp_path / "out")], probe=cpu,
                   runner=runner, today=DATE)
    assert runner.log_apart == [False]


def test_the_test_stand_in_for_a_gpu_is_refused_when_malformed():
    assert gpu_check.fake_from_environ({}) == {}
    with pytest.raises(ValueError, match="COURSE_GPU_CHECK_FAKE=.*use a JSON object with keys 'gpus' and 'notebooks'"):
        gpu_check.fake_from_environ({gpu_check.FAKE_ENV: '{"gpu": []}'})
    with pytest.raises(ValueError, match="use a JSON object"):
        gpu_check.fake_from_environ({gpu_check.FAKE_ENV: '[1, 2]'})
