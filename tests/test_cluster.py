"""helpers.cluster: worker limits, ports, TF_CONFIG, worker processes that never outlive their cell,
readable logs, manifests and the validators that must reject broken copies, the Dockerfile check."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from helpers import cluster

GIB = cluster.GIB
LINUX = sys.platform.startswith("linux")


# --------------------------------------------------------------------------- N_WORKERS

def test_max_workers_is_two_per_core_one_gib_each_eight_at_most():
    assert cluster.max_workers(cores=2, available_bytes=24 * GIB) == 4
    assert cluster.max_workers(cores=1, available_bytes=24 * GIB) == 2
    assert cluster.max_workers(cores=16, available_bytes=64 * GIB) == 8
    assert cluster.max_workers(cores=16, available_bytes=int(2.5 * GIB)) == 2
    assert cluster.max_workers(cores=4, available_bytes=GIB // 2) == 0


@pytest.mark.parametrize("bad", [1, 0, -1, 5, 9, 2.0, "2", True, None])
def test_check_workers_refuses_bad_values_naming_the_parameter(bad):
    with pytest.raises(ValueError, match=r"N_WORKERS="):
        cluster.check_workers(bad, cores=2, available_bytes=24 * GIB)


def test_check_workers_says_why_and_what_is_allowed():
    with pytest.raises(ValueError, match=r"use an integer from 2 to 4 \(a cluster needs at least 2 workers"):
        cluster.check_workers(1, cores=2, available_bytes=24 * GIB)
    with pytest.raises(ValueError, match=r"2 per CPU core on its 2 cores"):
        cluster.check_workers(6, cores=2, available_bytes=24 * GIB)
    with pytest.raises(ValueError, match="nothing on this machine"):
        cluster.check_workers(2, cores=2, available_bytes=GIB)
    assert cluster.check_workers(4, cores=2, available_bytes=24 * GIB) == 4
    assert cluster.check_workers(2) == 2  # this machine runs the notebook's default


# --------------------------------------------------------------------------- ports and TF_CONFIG

def test_free_ports_are_distinct_and_free():
    ports = cluster.free_ports(8)
    assert len(set(ports)) == 8 and all(cluster.port_is_free(p) for p in ports)
    with pytest.raises(ValueError, match="n="):
        cluster.free_ports(0)


def test_a_listening_port_is_taken_and_a_closed_one_free_even_in_time_wait():
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC's server does
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    assert not cluster.port_is_free(port)
    client = socket.create_connection(("127.0.0.1", port))
    conn, _ = server.accept()
    conn.close()  # the side that closes first keeps the connection in TIME_WAIT
    client.close()
    server.close()
    assert cluster.port_is_free(port)


def test_tf_config_and_its_errors():
    assert cluster.tf_config(["a:1", "b:2"], 0) == {"cluster": {"worker": ["a:1", "b:2"]},
                                                     "task": {"type": "worker", "index": 0}}
    for hosts, index in ([], 0), (["a"], 0), (["a:1"], 1), (["a:1"], -1), (["a:1"], True):
        with pytest.raises(ValueError):
            cluster.tf_config(hosts, index)


GROW = {"TF_FORCE_GPU_ALLOW_GROWTH": "true"}


@pytest.mark.parametrize("gpus, workers, parent, collective, devices", [
    (0, 2, None, "RING", ["-1", "-1"]),  # CPU only: the workers see no GPU either
    (0, 2, "2,3", "RING", ["-1", "-1"]),  # CPU-only TensorFlow under a scheduler that listed GPUs
    (0, 2, "", "RING", ["-1", "-1"]),
    (0, 2, "-1", "RING", ["-1", "-1"]),
    (1, 2, None, "RING", ["0", "0"]),
    (1, 2, "0", "RING", ["0", "0"]),
    (1, 2, "3", "RING", ["3", "3"]),  # one GPU, number 3 of the machine: never GPU 0
    (2, 2, None, "NCCL", ["0", "1"]),
    (8, 2, None, "NCCL", ["0", "1"]),
    (2, 2, "2,3", "NCCL", ["2", "3"]),  # Slurm gave this job GPUs 2 and 3
    (2, 2, "GPU-aaa,GPU-bbb", "NCCL", ["GPU-aaa", "GPU-bbb"]),
    (2, 2, " 2, 3 ", "NCCL", ["2", "3"]),
    (2, 3, "2,3", "RING", ["2", "3", "2"]),  # fewer GPUs than workers: in turn
    (2, 3, None, "RING", ["0", "1", "0"]),
    (1, 2, "MIG-aaa,MIG-bbb", "RING", ["MIG-aaa", "MIG-bbb"]),  # TensorFlow counts 1; each worker gets one
    (1, 2, "MIG-aaa", "RING", ["MIG-aaa", "MIG-aaa"]),
    (2, 2, "0,1,-1,2", "NCCL", ["0", "1"]),  # CUDA stops at the first invalid entry
])
def test_worker_devices_give_worker_i_entry_i_of_the_parents_list(gpus, workers, parent, collective, devices):
    envs, chosen, reading = cluster.worker_devices(gpus, workers, parent=parent)
    assert [e["CUDA_VISIBLE_DEVICES"] for e in envs] == devices and chosen == collective
    shared = len(set(devices)) < workers and devices[0] != "-1"
    assert all((e.get("TF_FORCE_GPU_ALLOW_GROWTH") == "true") == (devices[0] != "-1") for e in envs)
    assert ("its own GPU" in reading) == (collective == "NCCL")
    assert (f"The {workers} workers share" in reading) == shared
    assert ("No GPU" in reading) == (devices[0] == "-1")
    assert (f"from this kernel's CUDA_VISIBLE_DEVICES={parent}" in reading) == (parent is not None and gpus > 0)


@pytest.mark.parametrize("parent, devices", [(None, ["0", "1"]), ("2,3", ["2", "3"]), ("GPU-aaa,GPU-bbb",
                                                                                        ["GPU-aaa", "GPU-bbb"])])
def test_worker_devices_read_this_kernels_cuda_visible_devices_by_default(monkeypatch, parent, devices):
    if parent is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", parent)
    envs, collective, _ = cluster.worker_devices(2, 2)
    assert [e["CUDA_VISIBLE_DEVICES"] for e in envs] == devices and collective == "NCCL"


@pytest.mark.parametrize("parent", [None, "0,1", "GPU-aaa,GPU-bbb", "MIG-aaa,MIG-bbb"])
def test_one_gpu_per_worker_still_grows_memory_because_worker_0_shares_the_kernels_gpu(parent):
    """Kaggle's "GPU T4 x2": two workers, one T4 each, and worker 0's T4 is the kernel's GPU:0 too."""
    gpu_count = 1 if parent and parent.startswith("MIG-") else 2
    kernel_gpu = cluster.visible_gpus(gpu_count, parent)[0]
    envs, _, reading = cluster.worker_devices(gpu_count, 2, parent=parent)
    assert envs[0]["CUDA_VISIBLE_DEVICES"] == kernel_gpu  # the GPU this kernel holds
    assert [e.get("TF_FORCE_GPU_ALLOW_GROWTH") for e in envs] == ["true", "true"], envs


def test_visible_gpus_and_bad_arguments():
    assert cluster.visible_gpus(2, None) == ["0", "1"]
    assert cluster.visible_gpus(1, "2,3") == ["2"]  # TensorFlow counts the first: the others were invalid
    assert cluster.visible_gpus(3, "") == [] and cluster.visible_gpus(3, "-1") == []
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="gpu_count="):
            cluster.visible_gpus(bad, None)
    with pytest.raises(ValueError, match="parent="):
        cluster.visible_gpus(1, 3)
    with pytest.raises(ValueError, match="n_workers="):
        cluster.worker_devices(1, 0, parent=None)


# --------------------------------------------------------------------------- worker processes

def write(folder: Path, name: str, code: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(code))
    return path


SLEEPER = """
    import json, os, signal, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # like a worker waiting for a lost peer
    print("worker", json.loads(os.environ["TF_CONFIG"])["task"]["index"], "ready", flush=True)
    time.sleep(600)
"""


def dead(pids, within=10.0):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]:
            return True
        time.sleep(0.05)
    return False


def configs(n):
    hosts = [f"127.0.0.1:{p}" for p in cluster.free_ports(n)]
    return [cluster.tf_config(hosts, i) for i in range(n)]


def test_workers_get_their_tf_config_and_print_json(tmp_path):
    script = write(tmp_path, "w.py", """
        import json, os, sys
        config = json.loads(os.environ["TF_CONFIG"])
        print("hello")
        print(json.dumps({"index": config["task"]["index"], "args": sys.argv[1:], "extra": os.environ.get("EXTRA")}))
    """)
    with cluster.LocalCluster(script, configs(3), args=["--epochs", 2], env=[{"EXTRA": str(i)} for i in range(3)],
                              log_dir=tmp_path / "logs") as c:
        assert c.wait(timeout=60) == [0, 0, 0]
    assert [c.answers(i) for i in range(3)] == [[{"index": i, "args": ["--epochs", "2"], "extra": str(i)}]
                                                for i in range(3)]
    assert c.describe(0) == "finished (exit code 0)" and "hello" in c.report()
    assert c.log_path(2).read_text().startswith("hello")


def test_a_failed_block_leaves_no_worker_behind(tmp_path):
    script = write(tmp_path, "sleeper.py", SLEEPER)
    with pytest.raises(RuntimeError, match="a cell fails"):
        with cluster.LocalCluster(script, configs(2), log_dir=tmp_path) as c:
            assert c.wait_for(1, "ready", timeout=30)
            raise RuntimeError("a cell fails")
    assert c.exit_codes == [-9, -9] and dead(c.pids)
    assert c.describe(0) == "stopped (SIGKILL)"


def test_an_interrupt_leaves_no_worker_behind(tmp_path):
    script = write(tmp_path, "sleeper.py", SLEEPER)
    with pytest.raises(KeyboardInterrupt):
        with cluster.LocalCluster(script, configs(2), log_dir=tmp_path) as c:
            c.wait_for(0, "ready", timeout=30)
            raise KeyboardInterrupt
    assert dead(c.pids)


def test_a_worker_that_ignores_sigterm_is_stopped_when_the_wait_runs_out(tmp_path):
    script = write(tmp_path, "sleeper.py", SLEEPER)
    with cluster.LocalCluster(script, configs(2), log_dir=tmp_path) as c:
        assert c.wait_for(0, "ready", timeout=30)
        os.kill(c.pids[0], signal.SIGTERM)  # ignored
        start = time.monotonic()
        assert c.wait(timeout=1.0) == [-9, -9]
        assert time.monotonic() - start < 15
    assert c.describe(1) == "still running after 1 s: stopped (SIGKILL)"


def test_kill_one_worker_and_the_rest_run_on(tmp_path):
    script = write(tmp_path, "sleeper.py", SLEEPER)
    with cluster.LocalCluster(script, configs(3), log_dir=tmp_path) as c:
        assert c.wait_for(2, r"worker 2 ready", timeout=30)
        c.kill(2)
        assert c.exit_codes[2] == -9 and c.exit_codes[:2] == [None, None]
        assert c.describe(2) == "killed (SIGKILL)" and c.describe(0) == "running"
    assert dead(c.pids)


def test_wait_for_returns_false_when_the_worker_ends_or_time_runs_out(tmp_path):
    quick = write(tmp_path, "quick.py", "print('bye')\n")
    with cluster.LocalCluster(quick, [None], log_dir=tmp_path / "a") as c:
        assert c.wait_for(0, "never printed", timeout=30) is False
        assert c.wait_for(0, "bye", timeout=30) is True
    sleeper = write(tmp_path, "sleeper.py", SLEEPER)
    with cluster.LocalCluster(sleeper, configs(1), log_dir=tmp_path / "b") as c:
        start = time.monotonic()
        assert c.wait_for(0, "never printed", timeout=0.5) is False
        assert time.monotonic() - start < 5


def test_what_a_worker_starts_dies_with_it(tmp_path):
    script = write(tmp_path, "parent.py", """
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        print("child", child.pid, flush=True)
        time.sleep(600)
    """)
    with cluster.LocalCluster(script, [None], log_dir=tmp_path) as c:
        assert c.wait_for(0, r"child \d+", timeout=30)
        grandchild = int(c.log(0).split()[1])
    assert dead([c.pids[0], grandchild])


def run_python(code: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(cluster.ROOT))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=str(cluster.ROOT))


def test_workers_left_running_at_exit_are_stopped_by_atexit(tmp_path):
    script = write(tmp_path, "sleeper.py", SLEEPER)
    done = run_python(f"""
        from helpers import cluster
        c = cluster.LocalCluster({str(script)!r}, [{{"task": {{"index": 0}}}}, {{"task": {{"index": 1}}}}],
                                 log_dir={str(tmp_path)!r}).start()
        c.wait_for(1, "ready", timeout=30)
        print(*c.pids)  # and exit without stopping them
    """)
    pids = [int(p) for p in done.stdout.split()]
    assert done.returncode == 0 and len(pids) == 2, done.stderr
    assert dead(pids)


@pytest.mark.skipif(not LINUX, reason="PR_SET_PDEATHSIG is Linux's")
def test_workers_die_with_a_killed_kernel(tmp_path):
    script = write(tmp_path, "sleeper.py", SLEEPER)
    kernel = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        from helpers import cluster
        c = cluster.LocalCluster({str(script)!r}, [{{"task": {{"index": 0}}}}, {{"task": {{"index": 1}}}}],
                                 log_dir={str(tmp_path)!r}).start()
        c.wait_for(1, "ready", timeout=30)
        print(*c.pids, flush=True)
        time.sleep(600)
    """)], stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=str(cluster.ROOT)))
    try:
        pids = [int(p) for p in kernel.stdout.readline().split()]
        assert len(pids) == 2 and not dead(pids, within=0.2)
        kernel.kill()  # SIGKILL: no atexit, no finally
        kernel.wait(timeout=10)
        assert dead(pids), "workers outlived the process that started them"
    finally:
        kernel.kill()


def test_process_alive_tells_a_reused_pid_apart():
    me = psutil.Process()
    assert cluster.process_alive(me.pid, me.create_time())
    assert not cluster.process_alive(me.pid, me.create_time() - 100)
    assert not cluster.process_alive(2**22 + 12345, 1.0)


def test_bad_arguments_are_refused(tmp_path):
    script = write(tmp_path, "w.py", "pass\n")
    with pytest.raises(ValueError, match="no such file"):
        cluster.LocalCluster(tmp_path / "missing.py", [None])
    with pytest.raises(ValueError, match="tf_configs is empty"):
        cluster.LocalCluster(script, [])
    with pytest.raises(ValueError, match="env has 1 entries for 2 workers"):
        cluster.LocalCluster(script, [None, None], env=[{}])
    with pytest.raises(ValueError, match="args="):
        cluster.LocalCluster(script, [None], args="--epochs 2")
    c = cluster.LocalCluster(script, [None], log_dir=tmp_path)
    with pytest.raises(RuntimeError, match="has not started"):
        c.kill(0)
    with c:
        with pytest.raises(ValueError, match="index=5"):
            c.kill(5)
        with pytest.raises(ValueError, match="timeout="):
            c.wait(timeout=0)
        with pytest.raises(RuntimeError, match="started already"):
            c.start()


# --------------------------------------------------------------------------- logs

REAL_LOG = """WARNING: All log messages before absl::InitializeLog() is called are written to STDERR
I0000 00:00:1795338251.776278   22276 port.cc:153] oneDNN custom operations are on. You may see slightly different
worker 0: 2 replicas in sync, this one on /job:worker/replica:0/task:0/device:CPU:0
{"worker": 0, "epoch": 1, "loss": 1.42}
worker 0: epoch 2 half done
E0000 00:00:1795338272.080489   22452 base_collective_executor.cc:252] StartAbort UNAVAILABLE: tasks are unhealthy:
/job:worker/replica:0/task:1
The tasks have crashed. Check the task logs for an earlier error.
Traceback (most recent call last):
  File "/tmp/worker.py", line 64, in <module>
    loss = train_step(iterator)
           ^^^^^^^^^^^^^^^^^^^^
tensorflow.python.framework.errors_impl.UnavailableError: Graph execution error:

Detected at node CollectiveReduceV2 defined at (most recent call last):
  File "/tmp/worker.py", line 64, in <module>

Collective ops is aborted by: Error reported from /job:worker/task:1: tasks are unhealthy (stopped sending heartbeats):
/job:worker/replica:0/task:1
\t [[{{node CollectiveReduceV2}}]] [Op:__inference_train_step_519]
"""


def test_readable_log_keeps_the_workers_lines_and_one_line_per_error():
    lines = cluster.readable_log(REAL_LOG)
    assert lines == [
        "worker 0: 2 replicas in sync, this one on /job:worker/replica:0/task:0/device:CPU:0",
        '{"worker": 0, "epoch": 1, "loss": 1.42}',
        "worker 0: epoch 2 half done",
        "UnavailableError: Graph execution error: Collective ops is aborted by: Error reported from "
        "/job:worker/task:1: tasks are unhealthy (stopped sending heartbeats)",
    ]
    assert not any("Traceback" in line for line in lines)
    assert cluster.readable_log("Traceback (most recent call last):\n  File 'x'\n") == [
        "(a Python error; its message is cut off)"]
    assert cluster.json_lines(REAL_LOG) == [{"worker": 0, "epoch": 1, "loss": 1.42}]


def test_restart_reading_names_what_went_wrong():
    text = cluster.restart_reading({"run 1": [(1, 1.0)], "run 2": [(2, 1.2)]}, 3, 1, 7, 10, [1.0, 2.0])
    assert "came back as 7, not 10" in text and "above run 1's first epoch" in text and "1 finished epoch(s)" in text
    assert "does not look like a continuation" in text
    assert "weights differ" in text
    assert "no epoch" in cluster.restart_reading({"run 1": [], "run 2": []}, 2, 1, 10, 10, [])


def test_the_worker_script_in_the_notebook_is_the_one_the_dockerfile_runs():
    import nbformat

    nb = nbformat.read(cluster.ROOT / "notebooks" / "08_gpu_clusters.ipynb", as_version=4)
    parts = [c.source for c in nb.cells if c.cell_type == "code" and "{scratch}/worker.py" in c.source.split("\n")[0]]
    assert parts[0].startswith('%%writefile "{scratch}/worker.py"') and len(parts) == 6
    assert all(p.startswith('%%writefile -a "{scratch}/worker.py"') for p in parts[1:])
    script = "\n".join(p.split("\n", 1)[1] for p in parts)
    compile(script, "worker.py", "exec")
    assert "JOB_COMPLETION_INDEX" in script and "WORKER_HOSTS" in script and "AutoShardPolicy.DATA" in script
    from helpers import manifests

    # the exit code the podFailurePolicy reads is the one the script ends with when the cluster is lost
    assert f"PEER_LOST = {manifests.PEER_LOST_EXIT}" in script and "os._exit(PEER_LOST)" in script
    assert "timeout_seconds=args.collective_timeout" in script
    assert json.dumps({"a": 1})  # the script prints JSON lines that json_lines reads


def test_every_compile_in_the_notebook_says_jit_compile_false():
    """The course's compile mode: the same program on CPU and GPU, never Keras' "auto" (XLA on a GPU only)."""
    import nbformat

    nb = nbformat.read(cluster.ROOT / "notebooks" / "08_gpu_clusters.ipynb", as_version=4)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    calls = re.findall(r"\.compile\((.*?)\)\s*(?:#|\n)", code, flags=re.S)
    assert calls and all("jit_compile=False" in call for call in calls), calls
