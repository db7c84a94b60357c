"""Notebook 08's worker as a real SLURM job: two tasks train, one is killed, the requeued job resumes.

A one-node SLURM 22.05 cluster (Debian's ``slurm-wlm`` and ``munge``) is started on this machine by
``tools/slurm_cluster.py``, as root, without systemd or cgroups; ``make test-slurm`` installs the
packages when they are missing and runs this file (``-m slurm``). Elsewhere it is skipped with the
reason: not root, no SLURM programs, or not selected with ``-m slurm``.

What happens, and what SLURM 22.05 does at each point:

1. ``helpers.slurm.sbatch_script`` writes the batch script: 2 tasks on the node, ``--requeue``,
   ``srun --kill-on-bad-exit=1 python worker.py ...``. The worker is notebook 08's script exactly as its
   ``%%writefile`` cells write it, with nothing before it and no ``helpers`` beside it: it builds its own
   ``TF_CONFIG`` with TensorFlow's ``SlurmClusterResolver``, on ports from the job's id, and prints the
   ``CUDA_VISIBLE_DEVICES`` it kept.
2. Task 1 pauses halfway through epoch 2 (the notebook's ``PAUSE_AT_EPOCH``, set for task 1 of the first
   run only by a ``bash -c`` wrapper around the command), once epoch 1's checkpoint is on the shared disk.
   The test then kills, with SIGKILL, either that one task, by the process id ``scontrol listpids <job>.0``
   gives for global task 1 (as when one node's process crashes; scancel has no option for one task), or the
   whole step with
   ``scancel --signal=KILL <job>.0``, which signals every task of the step.
3. ``--kill-on-bad-exit=1``: when one task died, srun ends the step's other task; srun exits non-zero.
4. SLURM does not requeue a job whose script fails, ``--requeue`` or not (that is for node failures and
   preemption; slurm.conf's ``RequeueExit`` is cluster-wide). The script runs ``scontrol requeue
   $SLURM_JOB_ID``: the job goes back to PENDING with the same id, and ``Restarts=1``.
5. The second run (``SLURM_RESTART_COUNT=1``, logs ``...-run1-task*.out``) restores epoch 1's checkpoint
   and trains to the last epoch; the job ends COMPLETED.

Afterwards no SLURM daemon, ``slurmstepd`` or worker of this cluster runs any more.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import sys
import time
from pathlib import Path

import psutil
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
import slurm_cluster  # noqa: E402

from helpers import slurm  # noqa: E402

NOTEBOOK = REPO / "notebooks" / "08_gpu_clusters.ipynb"
EPOCHS, STEPS, KILL_EPOCH = 3, 20, 2
pytestmark = [pytest.mark.slurm,
              pytest.mark.skipif(bool(slurm_cluster.why_not()), reason=slurm_cluster.why_not() or "ready")]


def worker_script() -> str:
    """Notebook 08's worker.py, from its %%writefile cells (written, then appended to with -a)."""
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    sources = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    parts = [s for s in sources if s.startswith("%%writefile") and "worker.py" in s.split("\n")[0]]
    assert parts and not parts[0].startswith("%%writefile -a")
    assert all(p.startswith("%%writefile -a") for p in parts[1:])
    return "\n".join(part.split("\n", 1)[1] for part in parts)


@pytest.fixture(scope="module")
def cluster(request, tmp_path_factory):
    if "slurm" not in (request.config.getoption("-m") or ""):
        pytest.skip("starts SLURM's daemons: runs under make test-slurm (pytest -m slurm) only")
    with slurm_cluster.SlurmCluster(tmp_path_factory.mktemp("slurm")) as running:
        yield running
    assert running.leftovers() == [], "processes of the SLURM cluster still run after it stopped"
    assert not [p.pid for p in psutil.process_iter(["name"]) if p.info["name"] in slurm_cluster.DAEMONS
                and str(running.folder) in " ".join(p.cmdline())], "a SLURM daemon of this test still runs"


def wait_until(condition, timeout: float, what: str, cluster, job_id: int):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}; job: {cluster.job(job_id)}; "
                         f"slurmctld: {cluster.tail('slurmctld')}")


def read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


@pytest.mark.parametrize("kill", ["one task", "the step"])
def test_killed_task_ends_the_step_and_the_requeued_job_resumes_from_the_checkpoint(cluster, tmp_path, monkeypatch,
                                                                                    kill):
    job_dir = tmp_path / "job"
    (job_dir / "logs").mkdir(parents=True)
    checkpoints = job_dir / "checkpoints"
    (job_dir / "worker.py").write_text(worker_script())  # as the page writes it: no prelude, no helpers beside it
    worker = shlex.join([sys.executable, "worker.py", "--data", str(REPO / "data" / "fashion_mnist_subset.npz"),
                         "--checkpoints", str(checkpoints), "--epochs", str(EPOCHS), "--steps", str(STEPS)])
    pause = f'[ "$SLURM_PROCID" = 1 ] && [ "${{SLURM_RESTART_COUNT:-0}}" = 0 ] && export PAUSE_AT_EPOCH={KILL_EPOCH}; '
    command = ["bash", "-c", pause + "exec " + worker]  # task 1 of the first run waits where the test kills it
    script = slurm.sbatch_script("tf-train", 2, command, tasks_per_node=2, cpus_per_task=1, mem_per_cpu="256M",
                                 time_limit="15", log_dir="logs", max_restarts=1, partition=cluster.partition)
    (job_dir / "train.sbatch").write_text(script)
    exported = {"PYTHONUNBUFFERED": "1", "CUDA_VISIBLE_DEVICES": "-1", "TF_CPP_MIN_LOG_LEVEL": "2"}
    for name, value in exported.items():  # sbatch passes its environment on to the job
        monkeypatch.setenv(name, value)
    start = time.monotonic()
    job_id = cluster.submit(job_dir / "train.sbatch", cwd=job_dir)
    assert cluster.job(job_id).get("Requeue") == "1", cluster.job(job_id)  # --requeue was read
    logs = {(run, task): job_dir / "logs" / f"tf-train-{job_id}-run{run}-task{task}.out"
            for run in (0, 1) for task in (0, 1)}

    wait_until(lambda: f"epoch {KILL_EPOCH} half done" in read(logs[0, 1]) and list(checkpoints.glob("ckpt-1.index")),
               240, f"task 1 halfway through epoch {KILL_EPOCH}, after epoch 1's checkpoint", cluster, job_id)
    if kill == "one task":  # as when one node's process crashes
        listed = cluster.scontrol("listpids", f"{job_id}.0").stdout.splitlines()[1:]  # PID JOBID STEPID LOCAL GLOBAL
        victims = [int(row.split()[0]) for row in listed if row.split()[4:5] == ["1"]]
        assert victims, f"scontrol listpids found no process of task 1: {listed}"
        for pid in victims:
            os.kill(pid, signal.SIGKILL)
    else:  # scancel signals every task of the step
        cancelled = cluster.run("scancel", "--signal=KILL", f"{job_id}.0")
        assert cancelled.returncode == 0, cancelled.stderr
    killed = time.monotonic()

    wait_until(lambda: cluster.job(job_id).get("Restarts") == "1", 120, "the job to be requeued", cluster, job_id)
    requeued = time.monotonic()
    wait_until(lambda: "restored" in read(logs[1, 0]), 240, "the second run's worker 0 to restore", cluster, job_id)
    restarted = time.monotonic()
    done = wait_until(lambda: cluster.job(job_id).get("JobState") in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT")
                      and cluster.job(job_id), 300, "the requeued job to end", cluster, job_id)

    print(f"\nsubmitted -> task 1 killed {killed - start:.0f} s -> requeued {requeued - killed:.0f} s -> second run "
          f"restoring {restarted - requeued:.0f} s -> job {done['JobState']} {time.monotonic() - restarted:.0f} s")
    batch_log = read(job_dir / "logs" / f"tf-train-{job_id}.out")
    first, second = read(logs[0, 0]), read(logs[1, 0])
    assert "step failed" in batch_log and "run 1" in batch_log, batch_log
    assert f'"epoch": {KILL_EPOCH}' not in first, "the first run should not have finished the epoch it was killed in"
    restored = re.search(r"worker 0: restored (\d+) finished epochs", second)
    assert restored and int(restored.group(1)) >= 1, second
    assert f'{{"worker": 0, "epoch": {EPOCHS}' in second and '"done": true' in second, second
    assert done["JobState"] == "COMPLETED", (done, batch_log)
    for run, task in logs:
        line = re.search(rf"slurm task {task}: TF_CONFIG (.*), CUDA_VISIBLE_DEVICES (\S+)\n", read(logs[run, task]))
        assert line and line.group(2) == "-1", f"run {run} task {task}: {read(logs[run, task])[:300]}"
        port = 15000 + job_id % 5000 * 10  # the worker's ports, from the job's id
        hosts = [f"{cluster.node}:{port}", f"{cluster.node}:{port + 1}"]
        assert json.loads(line.group(1))["cluster"]["worker"] == hosts, line.group(1)
    left = [p.pid for p in psutil.process_iter(["cmdline"]) if str(job_dir) in " ".join(p.info["cmdline"] or [])]
    assert left == [], f"worker processes still running: {left}"
