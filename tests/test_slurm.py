"""helpers.slurm and tools/slurm_cluster.py without SLURM: fake SLURM variables, fake srun and scontrol on PATH.

The real run (daemons, a job, a killed task, a requeue) is tests/test_slurm_job.py, under make test-slurm.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from helpers import slurm

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
import slurm_cluster  # noqa: E402

BASH = shutil.which("bash")


def script(**kwargs) -> str:
    args = {"job_name": "tf-train", "n_workers": 2, "command": ["python", "worker.py"], **kwargs}
    return slurm.sbatch_script(**args)


def directives(text: str) -> dict[str, str]:
    """The #SBATCH options of a script: {"ntasks": "2", "requeue": "", ...}."""
    found = {}
    for line in text.splitlines():
        if line.startswith("#SBATCH --"):
            name, _, value = line.split()[1][2:].partition("=")
            found[name] = value
    return found


def test_one_task_per_worker_and_gpus_per_task_only_when_asked():
    cpu, gpu = directives(script(n_workers=4, tasks_per_node=2)), directives(script(n_workers=4, gpus_per_task=1))
    assert (cpu["ntasks"], cpu["ntasks-per-node"], cpu["nodes"]) == ("4", "2", "2")
    assert "gpus-per-task" not in cpu and gpu["gpus-per-task"] == "1" and gpu["nodes"] == "4"
    assert "requeue" in cpu and cpu["time"] == "01:00:00" and cpu["output"] == "logs/%x-%j.out"
    assert directives(script(n_workers=5, tasks_per_node=2))["nodes"] == "3"  # ceil(5 / 2)
    assert "partition" not in cpu and directives(script(partition="gpu"))["partition"] == "gpu"


def test_srun_kills_the_step_on_a_bad_exit_and_never_sets_cuda_visible_devices():
    text = script(gpus_per_task=2, command=["python", "/home/me/ML course/worker.py", "--epochs", "30"])
    srun = [line for line in text.splitlines() if line.startswith("srun ")]
    assert len(srun) == 1 and "--kill-on-bad-exit=1" in srun[0] and "-run$run-task%t.out" in srun[0]
    assert srun[0].endswith("python '/home/me/ML course/worker.py' --epochs 30 &")  # a path with a space, quoted
    assert "CUDA_VISIBLE_DEVICES=" not in text and "export CUDA" not in text


def _fake_slurm_bin(tmp_path, srun_then: str):
    """A bin folder with a fake srun (logs its call to tmp_path/calls, then runs `srun_then`) and a fake scontrol
    (logs its call)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in (("srun", f'echo "srun $*" >> "{tmp_path}/calls"\n{srun_then}'),
                       ("scontrol", f'echo "scontrol $*" >> "{tmp_path}/calls"')):
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    return bin_dir


@pytest.mark.skipif(BASH is None, reason="bash is needed to run the batch script")
@pytest.mark.parametrize(("srun_exit", "restarts", "requeued"), [(1, "0", True), (137, "2", True), (1, "3", False),
                                                                  (0, "0", False)])
def test_the_script_requeues_its_job_when_the_step_failed_and_restarts_are_left(tmp_path, srun_exit, restarts,
                                                                                  requeued):
    bin_dir = _fake_slurm_bin(tmp_path, f"exit {srun_exit}")
    (tmp_path / "job.sbatch").write_text(script(max_restarts=3))
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SLURM_JOB_ID": "42",
           "SLURM_RESTART_COUNT": restarts, "SLURM_JOB_NODELIST": "gpu[01-02]"}
    done = subprocess.run([BASH, "job.sbatch"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30)
    calls = (tmp_path / "calls").read_text().splitlines()
    assert done.returncode == srun_exit
    assert calls[0] == f"srun --kill-on-bad-exit=1 --output=logs/%x-%j-run{restarts}-task%t.out python worker.py"
    assert (calls[1:] == ["scontrol requeue 42"]) is requeued, calls
    assert f"job 42, run {restarts}" in done.stdout


@pytest.mark.skipif(BASH is None, reason="bash is needed to check the script's syntax")
def test_the_script_is_valid_bash():
    text = script(gpus_per_task=1, partition="gpu", max_restarts=0)
    assert subprocess.run([BASH, "-n"], input=text, text=True).returncode == 0
    assert "-lt 0 ]" in text  # max_restarts=0: never requeued


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"job_name": "tf train"}, "job_name"), ({"job_name": ""}, "job_name"), ({"n_workers": 0}, "n_workers"),
    ({"n_workers": 2.0}, "n_workers"), ({"n_workers": True}, "n_workers"), ({"command": "python worker.py"}, "command"),
    ({"command": []}, "command"), ({"gpus_per_task": -1}, "gpus_per_task"), ({"tasks_per_node": 3}, "tasks_per_node"),
    ({"tasks_per_node": 0}, "tasks_per_node"), ({"cpus_per_task": 0}, "cpus_per_task"),
    ({"time_limit": "1h"}, "time_limit"), ({"time_limit": 60}, "time_limit"), ({"log_dir": "my logs"}, "log_dir"),
    ({"log_dir": "logs/%j"}, "log_dir"), ({"mem_per_cpu": "4GB"}, "mem_per_cpu"), ({"mem_per_cpu": 4}, "mem_per_cpu"),
    ({"mem_per_cpu": "4"}, "mem_per_cpu"), ({"requeue_before": 0}, "requeue_before"),
    ({"requeue_before": 300, "time_limit": "5"}, "requeue_before"), ({"requeue_before": 30.0}, "requeue_before"),
    ({"max_restarts": -1}, "max_restarts"), ({"partition": "a b"}, "partition"),
])
def test_bad_arguments_name_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=rf"^{name}="):
        script(**kwargs)


def test_time_limits_in_slurms_forms():
    for limit in ("90", "01:30:00", "2-00:00:00", "0:05:00"):
        assert f"#SBATCH --time={limit}" in script(time_limit=limit, requeue_before=60)


def test_cpus_and_memory_match_the_kubernetes_pods_and_the_time_limit_is_signalled():
    """4 cores x 4G per core: the 16Gi and 4 CPUs notebook 08's pods request; USR1 300 s before --time."""
    found = directives(script())
    assert (found["cpus-per-task"], found["mem-per-cpu"], found["signal"]) == ("4", "4G", "B:USR1@300")
    assert directives(script(cpus_per_task=1, mem_per_cpu="500M", requeue_before=120))["signal"] == "B:USR1@120"


@pytest.mark.skipif(BASH is None, reason="bash is needed to run the batch script")
def test_usr1_near_the_time_limit_requeues_the_job_while_the_step_runs(tmp_path):
    """--signal=B:USR1 reaches the script while srun runs (in the background, under wait): the trap requeues."""
    import signal
    import time

    bin_dir = _fake_slurm_bin(tmp_path, "exec sleep 29.5")
    (tmp_path / "job.sbatch").write_text(script(max_restarts=0))
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SLURM_JOB_ID": "42"}
    out_file = (tmp_path / "out").open("w")  # a file: the fake srun's sleep keeps a pipe open after the script ends
    job = subprocess.Popen([BASH, "job.sbatch"], cwd=tmp_path, env=env, stdout=out_file)
    deadline = time.monotonic() + 10
    while not (tmp_path / "calls").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    job.send_signal(signal.SIGUSR1)
    job.wait(timeout=10)  # well before srun's 29.5 s: the trap did not wait for the step
    out = (tmp_path / "out").read_text()
    assert job.returncode == 0 and "time limit near: requeue" in out, out
    assert (tmp_path / "calls").read_text().splitlines()[1:] == ["scontrol requeue 42"]
    for process in psutil.process_iter(["cmdline"]):  # the fake srun's sleep, left behind by the script
        if process.info["cmdline"] == ["sleep", "29.5"]:
            with contextlib.suppress(psutil.Error):
                process.kill()


SLURM_VARS = ("SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_STEP_NODELIST", "SLURM_STEP_TASKS_PER_NODE")


@pytest.fixture
def slurm_task(monkeypatch, tmp_path):
    """Sets the variables srun gives a task; PATH without nvidia-smi, as on a CPU node."""
    for name in SLURM_VARS + ("CUDA_VISIBLE_DEVICES", "TF_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))

    def set_task(procid, nodes, tasks_per_node, num_tasks, cuda=None):
        monkeypatch.setenv("SLURM_PROCID", str(procid))
        monkeypatch.setenv("SLURM_STEP_NODELIST", nodes)
        monkeypatch.setenv("SLURM_STEP_TASKS_PER_NODE", tasks_per_node)
        monkeypatch.setenv("SLURM_STEP_NUM_TASKS", str(num_tasks))
        if cuda is not None:
            monkeypatch.setenv("CUDA_VISIBLE_DEVICES", cuda)
    return set_task


def test_tf_config_lists_every_task_and_gives_tasks_of_a_node_consecutive_ports(slurm_task):
    slurm_task(3, "gpu[07-08]", "2(x2)", 4)
    config = slurm.tf_config_from_slurm(port_base=2222)
    assert config == {"cluster": {"worker": ["gpu07:2222", "gpu07:2223", "gpu08:2222", "gpu08:2223"]},
                      "task": {"type": "worker", "index": 3}}
    assert "CUDA_VISIBLE_DEVICES" not in os.environ  # a CPU node: no nvidia-smi run, nothing set


def test_the_gpus_slurm_bound_to_the_task_are_kept(slurm_task):
    slurm_task(1, "gpu[07-08]", "1(x2)", 2, cuda="GPU-8f2c1a7e-0000-1111-2222-333344445555")
    config = slurm.tf_config_from_slurm(port_base=2222, gpus_per_task=1)
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "GPU-8f2c1a7e-0000-1111-2222-333344445555"
    assert config["task"] == {"type": "worker", "index": 1} and "gpu08:2222" in config["cluster"]["worker"]


def test_tensorflows_own_gpu_setting_would_overwrite_slurms_binding(slurm_task):
    """Why auto_set_gpu=False: left on, the resolver writes its own index over SLURM's list."""
    from tensorflow.python.distribute.cluster_resolver.slurm_cluster_resolver import SlurmClusterResolver

    slurm_task(1, "gpu07", "2", 2, cuda="3")  # SLURM bound GPU 3 of the node to task 1
    SlurmClusterResolver(port_base=2222, gpus_per_node=2, gpus_per_task=1).cluster_spec()
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "1"  # not the GPU SLURM gave this task


def test_a_given_task_environment_is_used_for_the_call_only(slurm_task):
    slurm_task(0, "cpu01", "1", 1, cuda="-1")
    task = {"SLURM_PROCID": "2", "SLURM_STEP_NUM_TASKS": "4", "SLURM_STEP_NODELIST": "gpu[1-2]",
            "SLURM_STEP_TASKS_PER_NODE": "2(x2)", "CUDA_VISIBLE_DEVICES": "0,1"}
    config = slurm.tf_config_from_slurm(port_base=3000, gpus_per_task=2, environ=task)
    assert config["task"]["index"] == 2 and config["cluster"]["worker"][2:] == ["gpu2:3000", "gpu2:3001"]
    assert (os.environ["SLURM_PROCID"], os.environ["CUDA_VISIBLE_DEVICES"]) == ("0", "-1")  # restored
    with pytest.raises(RuntimeError, match="Not running inside a SLURM step"):
        slurm.tf_config_from_slurm(environ={"CUDA_VISIBLE_DEVICES": "0"})  # this process's SLURM_* unused
    assert os.environ["SLURM_STEP_NODELIST"] == "cpu01"


def test_a_task_without_the_gpus_it_asked_for_is_refused(slurm_task):
    slurm_task(0, "gpu07", "2", 2, cuda="0")
    with pytest.raises(RuntimeError, match="lists 1 GPUs, not gpus_per_task=2.*--gpus-per-task"):
        slurm.tf_config_from_slurm(gpus_per_task=2)


def test_outside_a_slurm_step_the_resolver_says_so(slurm_task):
    with pytest.raises(RuntimeError, match="Not running inside a SLURM step"):
        slurm.tf_config_from_slurm()


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"port_base": 80}, "port_base"), ({"port_base": 65500}, "port_base"), ({"port_base": "2222"}, "port_base"),
    ({"gpus_per_task": -1}, "gpus_per_task"), ({"environ": [("SLURM_PROCID", "0")]}, "environ"),
    ({"environ": {"SLURM_PROCID": 0}}, "environ")])
def test_tf_config_bad_arguments_name_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=rf"^{name}="):
        slurm.tf_config_from_slurm(**kwargs)


def test_cluster_tool_says_why_it_cannot_start(monkeypatch, tmp_path):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert "needs root" in slurm_cluster.why_not()
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(slurm_cluster.shutil, "which", lambda name, path=None: None)
    reason = slurm_cluster.why_not()
    assert "missing munged" in reason and "apt-get install slurmctld slurmd slurm-client munge" in reason
    with pytest.raises(RuntimeError, match="missing munged"):
        slurm_cluster.SlurmCluster(tmp_path).start()
    monkeypatch.setattr(slurm_cluster.shutil, "which", lambda name, path=None: f"/usr/bin/{name}")

    def unknown(name):
        raise OSError("Name or service not known")
    monkeypatch.setattr(slurm_cluster.socket, "gethostbyname", unknown)
    assert "does not resolve: add it to /etc/hosts" in slurm_cluster.why_not()


def test_cluster_config_runs_as_root_without_cgroups_and_allows_requeue(monkeypatch, tmp_path):
    cluster = slurm_cluster.SlurmCluster(tmp_path, requeue_delay=7)
    cluster.folder = tmp_path
    monkeypatch.setattr(cluster, "_node_line", lambda: "NodeName=vm CPUs=2 RealMemory=1000")
    config = dict(line.split("=", 1) for line in cluster._config().splitlines() if "=" in line and " " not in line)
    assert config["SlurmUser"] == "root" and config["ProctrackType"] == "proctrack/linuxproc"
    assert config["TaskPlugin"] == "task/none" and config["JobRequeue"] == "1"
    assert config["AuthInfo"] == f"socket={tmp_path}/munge.socket,cred_expire=7"
    assert config["StateSaveLocation"].startswith(str(tmp_path))
    with pytest.raises(ValueError, match="^requeue_delay="):
        slurm_cluster.SlurmCluster(requeue_delay=0)


def notebook_worker_head() -> str:
    """Notebook 08's worker.py up to its TF_CONFIG (its first two %%writefile cells), as the page writes it."""
    import json

    cells = json.loads((REPO / "notebooks" / "08_gpu_clusters.ipynb").read_text())["cells"]
    parts = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"
             and "".join(c["source"]).startswith("%%writefile") and "worker.py" in "".join(c["source"]).split("\n")[0]]
    return "\n".join(p.split("\n", 1)[1] for p in parts[:2])


def test_the_notebooks_worker_builds_tf_config_itself_in_a_slurm_task(tmp_path):
    """The page's worker.py, started by srun (no TF_CONFIG, no helpers beside it), finds its place with
    TensorFlow's SlurmClusterResolver, on ports from the job's id, and keeps SLURM's CUDA_VISIBLE_DEVICES."""
    worker = tmp_path / "worker.py"
    worker.write_text(notebook_worker_head() + "\nprint('ME', me, os.environ['TF_CONFIG'])\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "TF_CONFIG", "JOB_COMPLETION"))}
    env.update({"SLURM_PROCID": "3", "SLURM_STEP_NUM_TASKS": "4", "SLURM_STEP_NODELIST": "gpu[07-08]",
                "SLURM_STEP_TASKS_PER_NODE": "2(x2)", "SLURM_JOB_ID": "123457", "CUDA_VISIBLE_DEVICES": "5",
                "PYTHONPATH": "", "TF_CPP_MIN_LOG_LEVEL": "3"})
    done = subprocess.run([sys.executable, str(worker), "--data", "x.npz", "--checkpoints", "c"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    port = 15000 + 123457 % 5000 * 10  # 39570: this job's first port on every node
    assert "slurm task 3: TF_CONFIG" in done.stdout and "CUDA_VISIBLE_DEVICES 5" in done.stdout, done.stdout
    expected = {"cluster": {"worker": [f"gpu07:{port}", f"gpu07:{port + 1}", f"gpu08:{port}", f"gpu08:{port + 1}"]},
                "task": {"type": "worker", "index": 3}}
    line = next(x for x in done.stdout.splitlines() if x.startswith("ME "))
    assert line == f"ME 3 {json.dumps(expected)}", done.stdout
    task = {k: env[k] for k in SLURM_VARS}
    assert expected == slurm.tf_config_from_slurm(port_base=port, environ=task)


def test_ports_from_the_job_id_differ_for_jobs_that_share_a_node():
    """Each job gets 10 ports from 15000 + (id mod 5000) * 10: jobs whose ids differ by less than 5000 never overlap."""
    head = notebook_worker_head()
    assert "port_base = 15000 + int(os.environ[\"SLURM_JOB_ID\"]) % 5000 * 10" in head
    bases = {job: 15000 + job % 5000 * 10 for job in range(100, 5100)}
    assert len(set(bases.values())) == 5000 and max(bases.values()) + 9 <= 65535
