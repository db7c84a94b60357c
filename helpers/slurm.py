"""Notebook 08 · GPU clusters, section "The same job on SLURM": the batch script and the worker's ``TF_CONFIG``.

SLURM, the scheduler of most university GPU clusters, runs a job from a batch script: ``#SBATCH``
lines ask for resources, and ``srun`` inside it starts one *task* (a process) per worker on the nodes
it was given. Here live

* :func:`sbatch_script`: the script for N workers, one task each, GPUs per task, a time limit, log
  files per run and task, ``--requeue``, ``srun --kill-on-bad-exit=1`` (a task that dies ends the step,
  so no worker waits for a lost peer) and a requeue of the job when the step failed (at most
  `max_restarts` times), so that the next run resumes from the last checkpoint;
* :func:`tf_config_from_slurm`: the worker's ``TF_CONFIG``, built by TensorFlow's own
  ``tf.distribute.cluster_resolver.SlurmClusterResolver`` from the variables SLURM sets in every task,
  with ``auto_set_gpu=False``: the ``CUDA_VISIBLE_DEVICES`` SLURM gave the task is kept as it is.

Why a failed step requeues the job itself: ``--requeue`` lets SLURM put a batch job back in the queue,
but SLURM does so on its own only when a node fails or the job is preempted; a job whose script
exits non-zero ends as FAILED (slurm.conf's ``RequeueExit`` can change that, a cluster-wide setting
users cannot make). ``scontrol requeue $SLURM_JOB_ID`` from the script works for any user on their
own job (SLURM 22.05, checked by ``make test-slurm``): the job goes back to PENDING with the same id,
``SLURM_RESTART_COUNT`` one higher, and runs again when a node is free.

Used by notebook 08 (a printed script) and ``tests/test_slurm_job.py`` (a real run).
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

_TIME = re.compile(r"(\d+-)?\d{1,2}:\d{2}:\d{2}|\d+")  # SLURM's forms: minutes, [days-]hours:minutes:seconds
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_MEMORY = re.compile(r"[1-9]\d*[KMGT]")


def _seconds(time_limit: str) -> int:
    """Seconds in a --time value of the forms _TIME accepts: minutes, or [days-]hours:minutes:seconds."""
    if ":" not in time_limit:
        return int(time_limit) * 60
    days, _, clock = time_limit.rpartition("-")
    hours, minutes, seconds = (int(p) for p in clock.split(":"))
    return (int(days) if days else 0) * 86400 + hours * 3600 + minutes * 60 + seconds


def _positive(name: str, value: Any, low: int = 1) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise ValueError(f"{name}={value!r}: use an integer >= {low}.")
    return value


def sbatch_script(job_name: str, n_workers: int, command: Sequence[str], *, gpus_per_task: int = 0,
                  tasks_per_node: int = 1, cpus_per_task: int = 4, mem_per_cpu: str = "4G",
                  time_limit: str = "01:00:00", requeue_before: int = 300, log_dir: str = "logs",
                  max_restarts: int = 3, partition: str | None = None) -> str:
    """The ``sbatch`` script that runs `command` as `n_workers` tasks, one per worker, and requeues on failure.

    Args:
        job_name: the job's name (letters, digits, ``.``, ``_``, ``-``), also the log files' prefix.
        n_workers: tasks in the step, one per worker (``--ntasks``).
        command: the worker's command line, such as ``["python", "worker.py", "--epochs", "30"]``.
        gpus_per_task: GPUs for each task (``--gpus-per-task``, left out when 0). SLURM binds them and sets
            ``CUDA_VISIBLE_DEVICES`` in each task; the script never sets it.
        tasks_per_node: workers on one node (``--ntasks-per-node``); the nodes asked are
            ``ceil(n_workers / tasks_per_node)``.
        cpus_per_task: CPU cores for each task (``--cpus-per-task``); 4, as notebook 08's Kubernetes pods.
        mem_per_cpu: memory per CPU core (``--mem-per-cpu``), a number with ``K``, ``M``, ``G`` or ``T``;
            ``4G`` x 4 cores is the 16 GiB a pod of notebook 08 asks for. Without it a job gets the
            partition's default, often a small share of the node.
        time_limit: minutes, or ``[days-]hours:minutes:seconds`` (``--time``).
        requeue_before: seconds before the time limit at which SLURM signals the script
            (``--signal=B:USR1@<s>``), whose trap requeues the job: without it, reaching ``--time``
            ends the job as TIMEOUT, and nothing requeues it. Leave a checkpoint's time and more.
        log_dir: folder (relative to where ``sbatch`` runs, which must exist) of the logs: ``<job>-<id>.out``
            for the script, ``<job>-<id>-run<R>-task<T>.out`` for each task of each run.
        max_restarts: how many times a failed step requeues the job (0: never).
        partition: the partition (``--partition``); None: the cluster's default.

    Example:
        >>> script = sbatch_script("tf-train", 2, ["python", "worker.py"], gpus_per_task=1)
        >>> [line for line in script.splitlines() if "--ntasks" in line or "--gpus" in line]
        ['#SBATCH --ntasks=2', '#SBATCH --ntasks-per-node=1', '#SBATCH --gpus-per-task=1']
        >>> [line for line in script.splitlines() if line.startswith(("#SBATCH --c", "#SBATCH --m", "#SBATCH --s"))]
        ['#SBATCH --cpus-per-task=4', '#SBATCH --mem-per-cpu=4G', '#SBATCH --signal=B:USR1@300']
        >>> "CUDA_VISIBLE_DEVICES=" in script  # SLURM's binding is kept
        False
    """
    if not isinstance(job_name, str) or not _NAME.fullmatch(job_name):
        raise ValueError(f"job_name={job_name!r}: use letters, digits, '.', '_' and '-' (no spaces).")
    _positive("n_workers", n_workers)
    if isinstance(command, str) or not command or not all(isinstance(a, str) and a for a in command):
        raise ValueError(f"command={command!r}: use a non-empty list of strings, such as ['python', 'worker.py'].")
    _positive("gpus_per_task", gpus_per_task, 0)
    _positive("cpus_per_task", cpus_per_task)
    _positive("max_restarts", max_restarts, 0)
    if _positive("tasks_per_node", tasks_per_node) > n_workers:
        raise ValueError(f"tasks_per_node={tasks_per_node!r}: use an integer from 1 to n_workers={n_workers}.")
    if not isinstance(time_limit, str) or not _TIME.fullmatch(time_limit):
        raise ValueError(f"time_limit={time_limit!r}: use minutes ('90') or [days-]hours:minutes:seconds ('01:30:00').")
    if not isinstance(mem_per_cpu, str) or not _MEMORY.fullmatch(mem_per_cpu):
        raise ValueError(f"mem_per_cpu={mem_per_cpu!r}: use a whole number with K, M, G or T, such as '4G'.")
    limit_s = _seconds(time_limit)
    if _positive("requeue_before", requeue_before) >= limit_s:
        raise ValueError(f"requeue_before={requeue_before!r}: use whole seconds from 1 to less than "
                         f"time_limit={time_limit!r} ({limit_s} s).")
    if not isinstance(log_dir, str) or not log_dir or any(c.isspace() or c == "%" for c in log_dir):
        raise ValueError(f"log_dir={log_dir!r}: use a non-empty folder name without spaces or '%'.")
    if partition is not None and (not isinstance(partition, str) or not _NAME.fullmatch(partition)):
        raise ValueError(f"partition={partition!r}: use a partition's name, or None for the default one.")
    nodes = -(-n_workers // tasks_per_node)
    lines = ["#!/bin/bash", f"#SBATCH --job-name={job_name}", f"#SBATCH --nodes={nodes}",
             f"#SBATCH --ntasks={n_workers}", f"#SBATCH --ntasks-per-node={tasks_per_node}",
             f"#SBATCH --cpus-per-task={cpus_per_task}", f"#SBATCH --mem-per-cpu={mem_per_cpu}"]
    if gpus_per_task:  # binds them: each task sees its own; needs select/cons_tres (cons_res: --gres=gpu:N per node)
        lines.append(f"#SBATCH --gpus-per-task={gpus_per_task}")
    if partition:
        lines.append(f"#SBATCH --partition={partition}")
    lines += [f"#SBATCH --time={time_limit}",
              f"#SBATCH --signal=B:USR1@{requeue_before}",
              "#SBATCH --requeue",
              "#SBATCH --open-mode=append",
              f"#SBATCH --output={log_dir}/%x-%j.out",
              "# --requeue: the job may go back to the queue (node failure, preemption, scontrol requeue below);",
              "# --open-mode=append: each run adds to the script's log.",
              f"# --signal=B:USR1@{requeue_before}: USR1 to this script {requeue_before} s before --time ends the job.",
              "",
              "# SLURM sets CUDA_VISIBLE_DEVICES in each task to the GPUs it bound to that task: never overwrite it.",
              "run=${SLURM_RESTART_COUNT:-0}  # 0 on the first run, +1 on each requeue",
              'echo "job $SLURM_JOB_ID, run $run, nodes $SLURM_JOB_NODELIST"',
              "requeue_at_time_limit() {",
              '    echo "time limit near: requeue, the next run resumes from the last checkpoint"',
              "    scontrol requeue $SLURM_JOB_ID",
              "    exit 0",
              "}",
              "trap requeue_at_time_limit USR1",
              "# one task per worker; a task that dies ends the step (no worker waits for a lost peer).",
              "# In the background, then wait: bash runs a trap only between commands, and wait is one.",
              f"srun --kill-on-bad-exit=1 --output={log_dir}/%x-%j-run$run-task%t.out {shlex.join(command)} &",
              "wait $!",
              "status=$?",
              f"if [ $status -ne 0 ] && [ $run -lt {max_restarts} ]; then",
              '    echo "step failed (exit $status): requeue, the next run resumes from the last checkpoint"',
              "    scontrol requeue $SLURM_JOB_ID",
              "fi",
              "exit $status",
              ""]
    return "\n".join(lines)


_READ = ("SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_STEP_NODELIST", "SLURM_STEP_TASKS_PER_NODE",
         "CUDA_VISIBLE_DEVICES")  # what the resolver and the GPU check read


@contextlib.contextmanager
def _task_environment(environ: Mapping[str, str] | None) -> Iterator[None]:
    """os.environ as a task's (`environ`'s entries of _READ, the others unset) for the block; None: unchanged."""
    if environ is None:
        yield
        return
    saved = {name: os.environ.get(name) for name in _READ}
    try:
        for name in _READ:
            if name in environ:
                os.environ[name] = environ[name]
            else:
                os.environ.pop(name, None)
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def tf_config_from_slurm(port_base: int = 8888, gpus_per_task: int = 0,
                         environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """This task's ``TF_CONFIG``, built by TensorFlow's ``SlurmClusterResolver`` from SLURM's variables.

    The resolver (tensorflow/python/distribute/cluster_resolver/slurm_cluster_resolver.py) reads
    ``SLURM_PROCID`` (this task's rank), ``SLURM_STEP_NUM_TASKS``, ``SLURM_STEP_NODELIST`` (expanded
    in Python: ``n[1-2]`` is ``n1,n2``) and ``SLURM_STEP_TASKS_PER_NODE`` (``2(x3)``), and gives the
    tasks of one node ports `port_base`, `port_base` + 1, ... Two settings are passed rather than left
    to it: ``gpus_per_node`` (left out, it counts ``CUDA_VISIBLE_DEVICES`` or runs ``nvidia-smi``, which
    a CPU node lacks) and ``auto_set_gpu=False``. With ``auto_set_gpu=True`` it would overwrite
    ``CUDA_VISIBLE_DEVICES`` with indices it computes itself (task ``i`` of a node gets GPUs
    ``i * gpus_per_task`` ...), which is wrong once SLURM has bound the GPUs: a task bound to one GPU
    sees it as its only device, and the resolver would point task 1 at a GPU index it does not have.
    On a CPU node the resolver still needs ``gpus_per_task`` >= 1: its ``cluster_spec`` pairs each task
    of a node with ``range(0, gpus_per_node, gpus_per_task)`` (0 raises "range() arg 3 must not be
    zero", and too few GPUs drop tasks from the cluster), so it is given one per task for that
    bookkeeping, which ``auto_set_gpu=False`` never applies.

    Args:
        port_base: the first port on each node (1024 to 65000); jobs that share a node need different ones.
        gpus_per_task: the GPUs SLURM gave each task (``--gpus-per-task``); 0 on CPU nodes.
        environ: a task's variables (``SLURM_PROCID``, ``SLURM_STEP_*``, ``CUDA_VISIBLE_DEVICES``) to use
            instead of this process's, to see what a task would get; None (the default): this process's.

    Raises:
        RuntimeError: not inside a SLURM step (the resolver's own message), or `gpus_per_task` > 0
            and ``CUDA_VISIBLE_DEVICES`` does not list that many GPUs.

    Example:
        >>> task_1 = {"SLURM_PROCID": "1", "SLURM_STEP_NUM_TASKS": "2", "SLURM_STEP_NODELIST": "gpu[07-08]",
        ...           "SLURM_STEP_TASKS_PER_NODE": "1(x2)"}
        >>> tf_config_from_slurm(port_base=2222, environ=task_1)
        {'cluster': {'worker': ['gpu07:2222', 'gpu08:2222']}, 'task': {'type': 'worker', 'index': 1}}
    """
    if _positive("port_base", port_base, 1024) > 65000:
        raise ValueError(f"port_base={port_base!r}: use an integer from 1024 to 65000.")
    _positive("gpus_per_task", gpus_per_task, 0)
    if environ is not None and (not isinstance(environ, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in environ.items())):
        raise ValueError(f"environ={environ!r}: use a dict of variable names to strings, or None.")
    with _task_environment(environ):
        if gpus_per_task:
            visible = [e for e in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if e.strip()]
            if len(visible) != gpus_per_task:
                raise RuntimeError(f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r} lists "
                                   f"{len(visible)} GPUs, not gpus_per_task={gpus_per_task}: ask SLURM for them "
                                   "with --gpus-per-task, which binds them to each task.")
        from tensorflow.python.distribute.cluster_resolver import slurm_cluster_resolver as slurm

        tasks = slurm.expand_tasks_per_node(slurm._get_slurm_var("STEP_TASKS_PER_NODE"))
        per_task = max(gpus_per_task, 1)  # its GPU bookkeeping, unused with auto_set_gpu=False, needs 1 or more
        resolver = slurm.SlurmClusterResolver(port_base=port_base, gpus_per_task=per_task,
                                              gpus_per_node=per_task * max(tasks), auto_set_gpu=False)
        cluster = resolver.cluster_spec().as_dict()
        task_type, task_id = resolver.get_task_info()
    return {"cluster": cluster, "task": {"type": task_type, "index": task_id}}
