"""A one-node SLURM cluster on this machine, for ``make test-slurm`` (tests/test_slurm_job.py).

Debian's packages (``slurmctld``, ``slurmd`` and ``slurm-client`` 22.05, which ``slurm-wlm`` gathers,
and ``munge``) run here without systemd and without cgroups: the daemons are started directly, in the
foreground, as children of this process (``munged -F``, ``slurmctld -D``, ``slurmd -D``), with a
generated ``slurm.conf`` and every state, spool, log, pid, socket and key file in one temporary folder.
Nothing in ``/etc`` is changed, and munge's own key there is not used: a fresh one is written into the
folder.

The configuration is the smallest one that runs jobs as root in a container: ``SlurmUser=root``,
``ProctrackType=proctrack/linuxproc`` and ``TaskPlugin=task/none`` (no cgroups), no accounting, one
node with the CPUs and memory ``slurmd -C`` reports, one partition, and ``JobRequeue=1`` so that batch
jobs may be requeued. Two settings only shorten waits: a requeued job may start again after
``AuthInfo=cred_expire`` seconds (SLURM's default: 120; here ``requeue_delay``, 10), and the scheduler
looks at pending jobs every 2 s (``SchedulerParameters=sched_interval``, default 60).

``SlurmCluster.stop`` cancels every job, shuts the daemons down (``scontrol shutdown``, then SIGTERM and
SIGKILL by process id), kills any ``slurmstepd`` or task left from this cluster (found by the cluster's
folder in their environment), and :meth:`SlurmCluster.leftovers` lists whatever would still run.

    python tools/slurm_cluster.py --check    # start, run `srun hostname`, stop; exit 0 when it all worked
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "srun", "scontrol", "scancel", "squeue", "sinfo")
PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")  # what the slurm-wlm metapackage installs, and munge


def missing_programs() -> list[str]:
    """The SLURM and munge programs this machine lacks (empty when the cluster can start).

    >>> isinstance(missing_programs(), list)
    True
    """
    found = {name: shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin") for name in DAEMONS + CLIENTS}
    return [name for name, path in found.items() if not path]


def why_not() -> str:
    """A plain reason the cluster cannot start here, or an empty string when it can.

    >>> isinstance(why_not(), str)
    True
    """
    if sys.platform != "linux":
        return "SLURM's daemons run on Linux only"
    if os.geteuid() != 0:
        return "starting slurmd needs root (this test starts the daemons as root, as CI runs)"
    missing = missing_programs()
    if missing:
        return (f"missing {', '.join(missing)}: install Debian's packages as root "
                f"(apt-get install {' '.join(PACKAGES)}), or run make test-slurm, which does")
    try:  # the node is named after the machine, and the workers reach each other by that name
        socket.gethostbyname(socket.gethostname())
    except OSError:
        return f"this machine's name {socket.gethostname()!r} does not resolve: add it to /etc/hosts"
    return ""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _sbin(name: str) -> str:
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin") or name


class SlurmCluster:
    """One node, one partition, daemons started as this process's children; a context manager.

    >>> SlurmCluster().folder is None  # nothing starts before ``start()`` or ``with``
    True
    """

    def __init__(self, folder: str | os.PathLike | None = None, partition: str = "course",
                 requeue_delay: int = 10) -> None:
        if not isinstance(requeue_delay, int) or isinstance(requeue_delay, bool) or requeue_delay < 1:
            raise ValueError(f"requeue_delay={requeue_delay!r}: use an integer >= 1 (seconds; SLURM's default is 120).")
        self.requeue_delay = requeue_delay
        self._given = Path(folder) if folder else None
        self.folder: Path | None = None
        self.partition = partition
        self.node = socket.gethostname()
        self.daemons: dict[str, subprocess.Popen] = {}

    # -- configuration -------------------------------------------------------------------------------------------
    def _node_line(self) -> str:
        probe = subprocess.run([_sbin("slurmd"), "-C"], capture_output=True, text=True, timeout=30)
        line = probe.stdout.splitlines()[0] if probe.returncode == 0 and probe.stdout else ""
        cpus = re.search(r"CPUs=(\d+)", line)
        memory = re.search(r"RealMemory=(\d+)", line)
        cpus = int(cpus.group(1)) if cpus else os.cpu_count() or 1
        memory = int(int(memory.group(1)) * 0.9) if memory else 1024  # a margin: slurmd drains a node that has less
        return f"NodeName={self.node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory} State=UNKNOWN"

    def _config(self) -> str:
        f = self.folder
        return "\n".join([
            "ClusterName=course",
            f"SlurmctldHost={self.node}(127.0.0.1)",
            f"SlurmctldPort={_free_port()}",
            f"SlurmdPort={_free_port()}",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"AuthInfo=socket={f}/munge.socket,cred_expire={self.requeue_delay}",
            f"StateSaveLocation={f}/state",
            f"SlurmdSpoolDir={f}/spool/%n",
            f"SlurmctldPidFile={f}/slurmctld.pid",
            f"SlurmdPidFile={f}/slurmd.pid",
            f"SlurmctldLogFile={f}/slurmctld.log",
            f"SlurmdLogFile={f}/slurmd.log",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "SwitchType=switch/none",
            "MpiDefault=none",
            "SchedulerType=sched/builtin",
            "SchedulerParameters=sched_interval=2",  # a pending job is looked at every 2 s (default 60 s)
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "ReturnToService=2",
            "JobRequeue=1",
            "MinJobAge=300",
            "SlurmdTimeout=30",
            "InactiveLimit=0",
            "KillWait=5",
            self._node_line(),
            f"PartitionName={self.partition} Nodes={self.node} Default=YES MaxTime=INFINITE State=UP",
            "",
        ])

    @property
    def env(self) -> dict[str, str]:
        """The environment for SLURM's client commands (``sbatch``, ``scontrol``, ...): ``SLURM_CONF`` set."""
        return {**os.environ, "SLURM_CONF": str(self.folder / "slurm.conf")}

    # -- start and stop -----------------------------------------------------------------------------------------
    def start(self, timeout: float = 60) -> SlurmCluster:
        """Writes the configuration, starts munged, slurmctld and slurmd, waits for the node to be idle."""
        reason = why_not()
        if reason:
            raise RuntimeError(reason)
        self.folder = self._given or Path(tempfile.mkdtemp(prefix="slurm-course-"))
        for sub in ("state", "spool", "munge"):
            (self.folder / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(self.folder, 0o755)
        key = self.folder / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o600)
        (self.folder / "slurm.conf").write_text(self._config())
        f = self.folder
        self._spawn("munged", [_sbin("munged"), "-F", "--force", f"--socket={f}/munge.socket", f"--key-file={key}",
                               f"--pid-file={f}/munge/munged.pid", f"--log-file={f}/munge/munged.log",
                               f"--seed-file={f}/munge/munged.seed"])
        self._wait(lambda: (f / "munge.socket").exists(), 10, "munged's socket")
        self._spawn("slurmctld", [_sbin("slurmctld"), "-D", "-i", "-f", str(f / "slurm.conf")])
        self._wait(lambda: self.scontrol("ping").returncode == 0 and "UP" in self.scontrol("ping").stdout,
                   timeout, "slurmctld to answer")
        self._spawn("slurmd", [_sbin("slurmd"), "-D", "-f", str(f / "slurm.conf"), "-N", self.node])
        self._wait(lambda: re.search(r"State=IDLE", self.scontrol("show", "node", self.node).stdout), timeout,
                   "the node to be idle")
        return self

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.folder / f"{name}.stdout", "w")  # noqa: SIM115 (closed with the process)
        self.daemons[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                              start_new_session=True)
        log.close()

    def _wait(self, ready, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, process in self.daemons.items():
                if process.poll() is not None:
                    raise RuntimeError(f"{name} exited with {process.returncode} while waiting for {what}: "
                                       f"{self.tail(name)}")
            if ready():
                return
            time.sleep(0.5)
        raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}: {self.tail('slurmctld')} "
                           f"{self.tail('slurmd')}")

    def tail(self, name: str, lines: int = 8) -> str:
        """The last lines of a daemon's log (``munged``, ``slurmctld``, ``slurmd``), for error messages."""
        texts = []
        folder = self.folder
        for path in (folder / f"{name}.log", folder / "munge" / f"{name}.log", folder / f"{name}.stdout"):
            if path.exists():
                texts += path.read_text(errors="replace").splitlines()[-lines:]
        return " | ".join(texts)

    def stop(self) -> None:
        """Cancels every job, stops the daemons and kills anything left from this cluster, by process id."""
        if self.folder is None:
            return
        if self.daemons.get("slurmctld") and self.daemons["slurmctld"].poll() is None:
            self.run("scancel", "--full", "--partition", self.partition)
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and self.run("squeue", "-h", "-o", "%i").stdout.strip():
                time.sleep(0.5)
            self.scontrol("shutdown")
        for name in reversed(DAEMONS):
            process = self.daemons.get(name)
            if process is None:
                continue
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        for process in self.leftovers():
            try:
                process.kill()
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(self.leftovers(), timeout=5)

    def leftovers(self) -> list[psutil.Process]:
        """Processes of this cluster still running: its daemons, ``slurmstepd`` and the jobs' tasks.

        A task of this cluster's jobs carries ``SLURM_CONF`` (pointing into this cluster's folder) in its
        environment; a daemon names the folder on its command line.
        """
        if self.folder is None:
            return []
        mine, marker = [], str(self.folder)
        for process in psutil.process_iter(["pid", "name", "cmdline"]):
            try:
                if process.pid == os.getpid():
                    continue
                cmdline = " ".join(process.info["cmdline"] or [])
                if marker in cmdline or process.info["name"] == "slurmstepd" and self._stepd_is_mine(process):
                    mine.append(process)
                elif process.info["name"] not in DAEMONS and marker in process.environ().get("SLURM_CONF", ""):
                    mine.append(process)
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
        return mine

    def _stepd_is_mine(self, process: psutil.Process) -> bool:
        spool = str(self.folder / "spool")
        try:
            return any(spool in (f.path or "") for f in process.open_files()) or process.ppid() in {
                p.pid for p in self.daemons.values()}
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return False

    def __enter__(self) -> SlurmCluster:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- client commands ----------------------------------------------------------------------------------------
    def run(self, *argv: str, timeout: float = 30) -> subprocess.CompletedProcess:
        """Runs one of SLURM's client commands against this cluster; returns the completed process."""
        return subprocess.run([shutil.which(argv[0]) or argv[0], *argv[1:]], capture_output=True, text=True,
                              env=self.env, timeout=timeout)

    def scontrol(self, *argv: str) -> subprocess.CompletedProcess:
        """``scontrol`` against this cluster."""
        return self.run("scontrol", *argv)

    def submit(self, script: str | os.PathLike, cwd: str | os.PathLike) -> int:
        """``sbatch`` a script from folder ``cwd``; returns the job id."""
        done = subprocess.run(["sbatch", "--parsable", str(script)], capture_output=True, text=True,
                              env=self.env, cwd=cwd, timeout=30)
        if done.returncode:
            raise RuntimeError(f"sbatch failed: {done.stderr.strip()}")
        return int(done.stdout.strip().split(";")[0])

    def job(self, job_id: int) -> dict[str, str]:
        """``scontrol show job``'s fields as a dict (JobState, Restarts, Reason, ...); empty once it is forgotten."""
        shown = self.scontrol("show", "job", "-o", str(job_id))
        return dict(re.findall(r"(\w+)=(\S*)", shown.stdout)) if shown.returncode == 0 else {}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="start the cluster, run `srun hostname`, stop it")
    args = parser.parse_args(argv)
    reason = why_not()
    if reason:
        print(f"Cannot start SLURM here: {reason}")
        return 2
    if not args.check:
        parser.print_help()
        return 0
    with SlurmCluster() as cluster:
        done = cluster.run("srun", "-N1", "-n2", "hostname", timeout=60)
        print(done.stdout.strip() or done.stderr.strip())
        ok = done.returncode == 0
    left = cluster.leftovers()
    print(f"srun {'worked' if ok else 'failed'}; processes left: {len(left)}")
    return 0 if ok and not left else 1


if __name__ == "__main__":
    sys.exit(main())
