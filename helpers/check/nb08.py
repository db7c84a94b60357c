"""Checks for notebook 08 · GPU clusters."""

from __future__ import annotations

import copy
import json
from typing import Any

import numpy as np

from helpers.check._feedback import Feedback, not_filled, returned_none, whole_number, wrong

__all__ = ["resume_epoch", "pod_tf_config", "dangling_claims"]

# Made-up jobs (save_every, killed_at): a checkpoint after every epoch or every few, kills on and off a save.
KILLS = ((1, 3), (2, 4), (2, 5), (3, 3), (5, 12), (1, 1), (4, 4), (10, 7), (3, 10), (1, 6))


def _restored(save_every: int, killed_at: int) -> int:
    return (killed_at - 1) // save_every * save_every


def _resume_hint(got: dict[tuple[int, int], Any]) -> str:
    """Name the likely mistake from the answers on every made-up job."""
    def fits(rule: Any) -> bool:
        return all(got[k] == rule(*k) for k in KILLS)

    if fits(lambda s, k: k - 1):
        return ("You return the epoch before the kill. That checkpoint exists only when the job saves after every "
                "epoch: with save_every=2 a job killed during epoch 4 last saved after epoch 2.")
    if fits(lambda s, k: k // s * s):
        return ("Close, but when the kill comes during an epoch that would end with a save (epoch 4 with "
                "save_every=2), that save never happened: the worker died before the epoch ended. Count only "
                "the epochs finished before the kill, killed_at - 1.")
    if fits(lambda s, k: k):
        return ("The epoch in progress was not finished, so it is not in any checkpoint: the restart redoes it.")
    if fits(lambda s, k: max(0, (k - 1) // s)):
        return ("That is the number of checkpoints saved, not the epoch they hold: multiply by save_every.")
    if fits(lambda s, k: round((k - 1) / s) * s):
        return ("round() goes to the nearest save, which may come after the kill and never happened. Round down "
                "with //: the last save before the kill.")
    if fits(lambda s, k: -(-(k - 1) // s) * s):
        return ("You rounded up to the next save, which had not happened yet. Round down: the last save before "
                "the kill.")
    if fits(lambda s, k: (k - 1) - k % s):
        return ("You take away killed_at % save_every, the remainder of the epoch in progress. The finished epochs "
                "are killed_at - 1: take away their remainder, (killed_at - 1) % save_every.")
    negative = [k for k in KILLS if got[k] < 0]
    if negative:
        (s, k), = negative[:1]
        return (f"And resume_epoch({s}, {k}) gave {got[negative[0]]}: a job killed before its first save has no "
                "checkpoint yet, so it restores 0 epochs, never fewer.")
    return ("Saves happen after epochs save_every, 2 x save_every, ...; the kill interrupts epoch killed_at, so "
            "only epochs up to killed_at - 1 are finished. Return the last save among those, or 0.")


def _float_hint(floats: dict[tuple[int, int], float]) -> str:
    """Name the mistake of an answer that returns floats: true division, most likely."""
    (s, k), value = next(iter(floats.items()))
    start = f"resume_epoch({s}, {k}) returned {value!r}, a float."
    if len(floats) == len(KILLS) and all(v == (k - 1) / s * s for (s, k), v in floats.items()):
        return (f"{start} `/` is true division: (killed_at - 1) / save_every * save_every gives killed_at - 1 back "
                "(the multiplication undoes the division), as a float. `//` is floor division: it rounds down to "
                "the last save, and keeps an int.")
    if any(v != int(v) for v in floats.values() if v == v):
        return (f"{start} `/` is true division and leaves a fraction; epochs are whole numbers. Round down with // "
                "(floor division) to count the saves, then multiply by save_every.")
    return (f"{start} The epoch to restore is a whole number of epochs, and range() and initial_epoch want an int: "
            "use // (floor division) instead of /, or int(...).")


def resume_epoch(answer: Any) -> Feedback:
    """Exercise 08.1: ``resume_epoch(save_every, killed_at)`` -> finished epochs the restarted job restores.

    The job saves a checkpoint after every `save_every`-th epoch; a worker dies during epoch
    `killed_at` (counted from 1). The check calls the function on made-up jobs.

    Example:
        >>> resume_epoch(lambda save_every, killed_at: (killed_at - 1) // save_every * save_every).ok
        True
    """
    if (fb := not_filled(answer)) is not None:
        return fb
    if not callable(answer):
        return wrong("Answer with a function: def resume_epoch(save_every, killed_at): ... return epochs.")
    got: dict[tuple[int, int], Any] = {}
    floats: dict[tuple[int, int], float] = {}
    for save_every, killed_at in KILLS:
        try:
            out = answer(save_every, killed_at)
        except Exception as err:  # noqa: BLE001 - the learner's code may raise anything
            return wrong(f"resume_epoch({save_every}, {killed_at}) raised {type(err).__name__}: {err}")
        if out is None:
            return returned_none("resume_epoch")
        if isinstance(out, (float, np.floating)):
            floats[(save_every, killed_at)] = float(out)
            continue
        number = whole_number(out)
        if isinstance(number, Feedback):
            return wrong(f"resume_epoch({save_every}, {killed_at}) returned {out!r}: return a whole number of epochs.")
        got[(save_every, killed_at)] = number
    if floats:
        return wrong(_float_hint(floats))
    if len(set(got.values())) == 1:
        return wrong(f"Your function returns {next(iter(got.values()))} whatever the job. Compute it from save_every "
                     "and killed_at.")
    misses = [k for k in KILLS if got[k] != _restored(*k)]
    if misses:
        save_every, killed_at = misses[0]
        return wrong(f"resume_epoch({save_every}, {killed_at}) gave {got[misses[0]]}, the job restores "
                     f"{_restored(save_every, killed_at)}. " + _resume_hint(got))
    return Feedback(True, f"Right on all {len(KILLS)} made-up jobs: the restart restores the last checkpoint "
                          "saved before the kill, and redoes everything after it, including the unfinished epoch. "
                          "Saving less often costs less time while training and more work lost after a crash.")


# Made-up Indexed Jobs: (job name, Service name, workers, this pod's index, port).
PODS = (("tf-train", "tf-train", 2, 0, 2222), ("tf-train", "tf-train", 2, 1, 2222),
        ("bert", "bert-workers", 4, 3, 23456), ("resnet", "rn", 8, 5, 2222), ("x", "y", 3, 2, 1234),
        ("vit", "vit", 3, 0, 5000))


# TFConfigClusterResolver (tensorflow/python/distribute/cluster_resolver/tfconfig_cluster_resolver.py) also reads
# these two keys of TF_CONFIG; neither is needed here, and an answer that adds one is still right.
OPTIONAL_KEYS = {"environment", "rpc_layer"}


def _pod_config(job: str, service: str, n_workers: int, index: int, port: int) -> dict[str, Any]:
    hosts = [f"{job}-{i}.{service}:{port}" for i in range(n_workers)]
    return {"cluster": {"worker": hosts}, "task": {"type": "worker", "index": index}}


def _hosts_hint(hosts: Any, job: str, service: str, n_workers: int, port: int) -> str:
    right = _pod_config(job, service, n_workers, 0, port)["cluster"]["worker"]
    if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
        return f"cluster['worker'] should be a list of 'host:port' texts, such as {right[:2]}."
    if len(hosts) != n_workers:
        if len(hosts) == 1:
            return ("The cluster lists every worker, the same list on every pod; only 'task' says which one this "
                    "pod is.")
        return f"The job has {n_workers} workers, your list has {len(hosts)}: use n_workers, not a fixed number."
    if any(h.startswith(("127.0.0.1", "localhost")) for h in hosts):
        return ("127.0.0.1 is each pod's own loopback: on Kubernetes every pod has its own address. Use the DNS "
                f"names the headless Service gives the pods, such as {right[0]}.")
    if all(h.split(":")[0].startswith(f"{job}-{i}.{service}.") for i, h in enumerate(hosts)):
        return ("That is a longer DNS name, with the namespace and the cluster's domain. It resolves only in the "
                "namespace you wrote; the short name <job>-<index>.<service> resolves in the pod's own namespace, "
                f"wherever the job runs: {right[0]}.")
    if hosts == [f"{job}-{i}:{port}" for i in range(n_workers)]:
        return (f"A pod's name alone does not resolve; with `subdomain: {service}` it is reachable as "
                f"<job>-<index>.<service>, such as {right[0]}.")
    if hosts == [f"{job}-{i}.{service}" for i in range(n_workers)]:
        return f"Each host needs its port: {right[0]}."
    if hosts == [f"{job}-{i + 1}.{service}:{port}" for i in range(n_workers)]:
        return f"Completion indexes start at 0: the first pod is {right[0]}."
    if sorted(hosts) == sorted(right):
        return "Keep the hosts in index order: TF_CONFIG's task index points into this list."
    if all(h.rsplit(":", 1)[-1] != str(port) for h in hosts):
        return f"Use the port you were given ({port}), not a fixed one."
    return f"Each host is <job>-<index>.<service>:<port>, in index order: {right[:2]} ..."


def pod_tf_config(answer: Any) -> Feedback:
    """Exercise 08.2: ``pod_tf_config(job, service, n_workers, index, port)`` -> the pod's ``TF_CONFIG`` dict.

    Pod `index` of Indexed Job `job`, behind headless Service `service`, is reachable as
    ``<job>-<index>.<service>``. The check calls the function on made-up jobs (a JSON text is
    accepted too).

    Example:
        >>> def model(job, service, n_workers, index, port):
        ...     hosts = [f"{job}-{i}.{service}:{port}" for i in range(n_workers)]
        ...     return {"cluster": {"worker": hosts}, "task": {"type": "worker", "index": index}}
        >>> pod_tf_config(model).ok
        True
    """
    if (fb := not_filled(answer)) is not None:
        return fb
    if not callable(answer):
        return wrong("Answer with a function: def pod_tf_config(job, service, n_workers, index, port): ... "
                     "return {...}.")
    outputs = []
    for job, service, n_workers, index, port in PODS:
        call = f"pod_tf_config({job!r}, {service!r}, {n_workers}, {index}, {port})"
        try:
            out = answer(job, service, n_workers, index, port)
        except Exception as err:  # noqa: BLE001 - the learner's code may raise anything
            return wrong(f"{call} raised {type(err).__name__}: {err}")
        if out is None:
            return returned_none("pod_tf_config")
        if isinstance(out, str):
            try:
                out = json.loads(out)
            except json.JSONDecodeError:
                return wrong(f"{call} returned text that is not JSON: {out[:80]!r}. Return a dict (or json.dumps "
                             "of one).")
        outputs.append(out)
    if len({repr(out) for out in outputs}) == 1:
        return wrong("Your function returns the same TF_CONFIG whatever the job. Build it from job, service, "
                     "n_workers, index and port.")
    for (job, service, n_workers, index, port), out in zip(PODS, outputs, strict=True):
        call = f"pod_tf_config({job!r}, {service!r}, {n_workers}, {index}, {port})"
        if not isinstance(out, dict) or set(out) - OPTIONAL_KEYS != {"cluster", "task"}:
            keys = sorted(out) if isinstance(out, dict) else type(out).__name__
            return wrong(f"{call} returned {keys}. TF_CONFIG is a dict with two keys: 'cluster' (every worker's "
                         "address) and 'task' (this pod's type and index); 'environment' and 'rpc_layer' may be "
                         "added, nothing else.")
        cluster, task = out["cluster"], out["task"]
        right = _pod_config(job, service, n_workers, index, port)
        if not isinstance(cluster, dict) or set(cluster) != {"worker"}:
            return wrong(f"{call}: 'cluster' should be {{'worker': [hosts]}}: every pod here is a worker, got "
                         f"{cluster!r}.")
        hosts = list(cluster["worker"]) if isinstance(cluster["worker"], tuple) else cluster["worker"]  # JSON: a list
        if hosts != right["cluster"]["worker"]:
            return wrong(f"{call}: cluster['worker'] is {cluster['worker']!r}. "
                         + _hosts_hint(cluster["worker"], job, service, n_workers, port))
        if not isinstance(task, dict) or task.get("type") != "worker":
            return wrong(f"{call}: 'task' is {task!r}. Its 'type' is 'worker' (the job in 'cluster'); TensorFlow "
                         "makes worker 0 the chief.")
        if isinstance(task.get("index"), (bool, np.bool_)) or isinstance(task.get("index"), (float, np.floating)):
            return wrong(f"{call}: the task index is {task['index']!r}, a {type(task['index']).__name__}. TF_CONFIG "
                         "wants the pod's index as an int (json.dumps writes 1.0 or true, not 1).")
        if isinstance(task.get("index"), str):
            return wrong(f"{call}: the task index is the text {task['index']!r}. JOB_COMPLETION_INDEX arrives as "
                         "text in the environment; TF_CONFIG wants the number: int(...).")
        if task.get("index") != index or set(task) != {"type", "index"}:
            return wrong(f"{call}: 'task' is {task!r}; it should be {right['task']!r}: this pod's own completion "
                         "index, counted from 0.")
    return Feedback(True, f"Right for all {len(PODS)} made-up pods: every pod gets the same cluster list, in index "
                          "order, and its own index in 'task'. That is what the worker script builds from "
                          "WORKER_HOSTS and JOB_COMPLETION_INDEX on Kubernetes, and what the TFJob operator writes "
                          "for you.")


# --------------------------------------------------------------------------- exercise 3: dangling_claims

def _claim(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}}


def _pod(*volumes: dict[str, Any]) -> dict[str, Any]:
    return {"containers": [{"name": "worker", "image": "x"}], "volumes": list(volumes)}


def _pvc(volume: str, claim: str) -> dict[str, Any]:
    return {"name": volume, "persistentVolumeClaim": {"claimName": claim}}


SHM = {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}


def _job(name: str, pod: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"template": {"spec": pod}}}


def _service(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"clusterIP": "None", "selector": {"job-name": name}, "ports": [{"port": 2222}]}}


def _tfjob(name: str, **pods: dict[str, Any]) -> dict[str, Any]:
    replicas = {kind: {"replicas": 2, "template": {"spec": pod}} for kind, pod in pods.items()}
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name},
            "spec": {"tfReplicaSpecs": replicas}}


# Made-up files (label, docs, the dangling claims): each applied alone.
FILES: tuple[tuple[str, list[dict[str, Any]], list[str]], ...] = (
    ("a Job with its claim", [_claim("ckpt"), _job("a", _pod(_pvc("checkpoints", "ckpt"), SHM))], []),
    ("a Job without any claim", [_job("a", _pod(_pvc("checkpoints", "ckpt"), SHM))], ["ckpt"]),
    ("a TFJob without its claim", [_tfjob("t", Worker=_pod(_pvc("checkpoints", "t-ckpt"), SHM))], ["t-ckpt"]),
    ("a TFJob with its claim", [_claim("t-ckpt"), _tfjob("t", Worker=_pod(_pvc("checkpoints", "t-ckpt")))], []),
    ("a Job with one of two claims", [_claim("ckpt"), _job("a", _pod(_pvc("checkpoints", "ckpt"),
                                                                      _pvc("data", "images")))], ["images"]),
    ("a TFJob whose chief and workers share a missing claim",
     [_claim("other"), _tfjob("t", Chief=_pod(_pvc("c", "shared")), Worker=_pod(_pvc("c", "shared"), SHM))],
     ["shared"]),
    ("pods with no claim at all", [_job("a", _pod(SHM)), _tfjob("t", Worker=_pod())], []),
    ("two jobs, two missing claims", [_job("b", _pod(_pvc("v", "zeta"))), _job("a", _pod(_pvc("v", "alpha")))],
     ["alpha", "zeta"]),
    ("a file with two claims, the mounted one declared second",
     [_claim("images"), _claim("ckpt"), _job("a", _pod(_pvc("checkpoints", "ckpt"), SHM))], []),
    ("a TFJob whose chief alone mounts a claim",
     [_tfjob("t", Worker=_pod(SHM), Chief=_pod(_pvc("checkpoints", "chief-ckpt")))], ["chief-ckpt"]),
    ("a TFJob whose chief comes first and mounts nothing",
     [_tfjob("t", Chief=_pod(SHM), Worker=_pod(_pvc("checkpoints", "worker-ckpt")))], ["worker-ckpt"]),
    ("a Job beside its claim and its headless Service",
     [_claim("ckpt"), _service("tf-train"), _job("tf-train", _pod(_pvc("checkpoints", "ckpt")))], []),
    ("a Job whose pod has no volumes key", [_job("a", {"containers": [{"name": "worker", "image": "x"}]})], []),
    ("claims whose names start alike",
     [_claim("ckpt-v2"), _claim("data"), _job("a", _pod(_pvc("c", "ckpt"), _pvc("d", "data-old")))],
     ["ckpt", "data-old"]),
)


def _pods(doc: dict[str, Any], replicas: str = "all") -> list[dict[str, Any]]:
    """The pods of a Job or TFJob; `replicas`: "all" types of a TFJob, its "first" only, or "Worker" only."""
    if doc.get("kind") == "Job":
        return [doc["spec"]["template"]["spec"]]
    if doc.get("kind") == "TFJob":
        specs = doc["spec"]["tfReplicaSpecs"]
        chosen = {"all": list(specs.values()), "first": list(specs.values())[:1],
                  "Worker": [specs["Worker"]] if "Worker" in specs else []}[replicas]
        return [r["template"]["spec"] for r in chosen]
    return []


def _mounted(docs: list[dict[str, Any]], kinds: tuple[str, ...] = ("Job", "TFJob"),
             replicas: str = "all") -> list[tuple[str, str]]:
    """(volume name, claim name) of every persistentVolumeClaim volume in the pods of `kinds`."""
    return [(v["name"], v["persistentVolumeClaim"]["claimName"]) for d in docs if d.get("kind") in kinds
            for pod in _pods(d, replicas) for v in pod.get("volumes", []) if "persistentVolumeClaim" in v]


def _declared(docs: list[dict[str, Any]]) -> set[str]:
    return {d["metadata"]["name"] for d in docs if d.get("kind") == "PersistentVolumeClaim"}


def _first_declared(docs: list[dict[str, Any]]) -> set[str]:
    return {d["metadata"]["name"] for d in docs if d.get("kind") == "PersistentVolumeClaim"}.intersection(
        [next((d["metadata"]["name"] for d in docs if d.get("kind") == "PersistentVolumeClaim"), None)])


def _prefix_missing(docs: list[dict[str, Any]], way: int) -> list[str]:
    """What matching names by their beginning returns: a claim starts with a declared name (`way` 0), or
    the other way round (1), or either (2)."""
    claims, declared = {c for _, c in _mounted(docs)}, _declared(docs)
    ways = (lambda c, d: c.startswith(d), lambda c, d: d.startswith(c),
            lambda c, d: c.startswith(d) or d.startswith(c))
    return sorted(c for c in claims if not any(ways[way](c, d) for d in declared))


def _raised_hint(label: str, err: Exception) -> str:
    """Why the learner's function raised on the made-up file `label`, where a likely mistake explains it."""
    if isinstance(err, StopIteration):
        return (" next(...) found no PersistentVolumeClaim: a file may declare none, or several. Collect the "
                "names of all of them, in a set.")
    if "Service" in label and isinstance(err, (KeyError, TypeError)):
        return (" Only Jobs and TFJobs have pods: a Service (like any other kind) has no spec.template. Pick the "
                "documents by their kind, doc['kind'] == 'Job' or 'TFJob', and skip the rest.")
    if "no volumes" in label and isinstance(err, KeyError) and err.args == ("volumes",):
        return (" A pod that mounts nothing may have no 'volumes' key at all: read it with "
                "pod.get('volumes', []).")
    return ""


def _claims_hint(got: dict[str, Any]) -> str:
    """Name the likely mistake from the answers on every made-up file."""
    def fits(rule: Any) -> bool:
        return all(got[label] == rule(docs) for label, docs, _ in FILES)

    def missing(mounted: list[tuple[str, str]], declared: set[str]) -> list[str]:
        return sorted({claim for _, claim in mounted} - declared)

    if fits(lambda d: missing(_mounted(d, replicas="Worker"), _declared(d))):
        return ("You read tfReplicaSpecs['Worker'] only. A TFJob has a pod template per replica type (Chief, "
                "Worker, PS, Evaluator): look at every one, in tfReplicaSpecs.values().")
    if fits(lambda d: missing(_mounted(d, replicas="first"), _declared(d))):
        return ("You read the first replica type of a TFJob only. Each type (Chief, Worker, ...) has a pod template "
                "of its own: look at every one, in tfReplicaSpecs.values().")
    if fits(lambda d: missing(_mounted(d), _first_declared(d))):
        return ("You took the first PersistentVolumeClaim as the only one declared. A file may declare several: "
                "collect the names of all of them.")
    if any(fits(lambda d, way=way: _prefix_missing(d, way)) for way in range(3)):
        return ("Your names match by their beginning: 'ckpt-v2' does not declare 'ckpt', nor 'data' "
                "'data-old'. Compare whole names (a set of names and `in`, or ==).")
    if fits(lambda d: missing(_mounted(d, ("Job",)), _declared(d))):
        return ("You looked at Jobs only. A TFJob's pods sit in spec.tfReplicaSpecs.<type>.template.spec (one per "
                "replica type): a tfjob.yaml that mounts a claim it does not declare dangles too.")
    if fits(lambda d: missing(_mounted(d), _declared(d)) if _declared(d) else []):
        return ("When a file declares no claim at all, you return nothing: that is the very gap the old cross-check "
                "had. Applied alone, such a file leaves every claim its pods mount undeclared: all of them dangle.")
    if fits(lambda d: sorted({name for name, claim in _mounted(d)} - _declared(d))):
        return ("Those are the volumes' names, the pod's own labels for its mounts. The claim a volume needs is "
                "volume['persistentVolumeClaim']['claimName'].")
    if fits(lambda d: sorted(_declared(d) & {claim for _, claim in _mounted(d)})):
        return "Those are the claims the file does declare: return the mounted ones it does not."
    if any(isinstance(v, list) and "dshm" in v for v in got.values()):
        return ("dshm is an emptyDir, made with the pod: only persistentVolumeClaim volumes need a claim declared in "
                "the file.")
    return ("Collect the claimName of every persistentVolumeClaim volume in the pods of every Job and TFJob, take "
            "away the names of the file's PersistentVolumeClaim documents, and return what is left, sorted.")


def dangling_claims(answer: Any) -> Feedback:
    """Exercise 08.3: ``dangling_claims(docs)`` -> the sorted names of the claims `docs` mounts but does not declare.

    `docs` is one manifest file, applied on its own: Jobs, TFJobs and PersistentVolumeClaims. The
    check calls the function on made-up files.

    Example:
        >>> def model(docs):
        ...     declared = {d["metadata"]["name"] for d in docs if d["kind"] == "PersistentVolumeClaim"}
        ...     pods = [d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Job"]
        ...     pods += [r["template"]["spec"] for d in docs if d["kind"] == "TFJob"
        ...              for r in d["spec"]["tfReplicaSpecs"].values()]
        ...     mounted = {v["persistentVolumeClaim"]["claimName"] for p in pods for v in p.get("volumes", [])
        ...                if "persistentVolumeClaim" in v}
        ...     return sorted(mounted - declared)
        >>> dangling_claims(model).ok
        True
    """
    if (fb := not_filled(answer)) is not None:
        return fb
    if not callable(answer):
        return wrong("Answer with a function: def dangling_claims(docs): ... return sorted(names).")
    got: dict[str, Any] = {}
    for label, docs, _ in FILES:
        try:
            out = answer(copy.deepcopy(docs))
        except Exception as err:  # noqa: BLE001 - the learner's code may raise anything
            return wrong(f"On {label}, your function raised {type(err).__name__}: {err}." + _raised_hint(label, err))
        if out is None:
            return returned_none("dangling_claims")
        got[label] = out
    for label, _, right in FILES:
        out = got[label]
        if isinstance(out, (set, frozenset, tuple)):
            return wrong(f"On {label} you returned a {type(out).__name__}, {out!r}: return a list, sorted "
                         "(sorted(...) turns a set into one).")
        if not isinstance(out, list) or not all(isinstance(name, str) for name in out):
            return wrong(f"On {label} you returned {out!r}: return a list of claim names (texts), sorted.")
        if out != right and sorted(set(out)) == right:
            kind = "twice" if len(out) != len(set(out)) else "out of order"
            return wrong(f"On {label} you returned {out!r}: a claim {kind}. Return each dangling claim once, sorted.")
    wrong_files = [label for label, _, right in FILES if got[label] != right]
    if wrong_files:
        label = wrong_files[0]
        right = next(r for lab, _, r in FILES if lab == label)
        return wrong(f"On {label} you returned {got[label]!r}, not {right!r}. " + _claims_hint(got))
    return Feedback(True, f"Right on all {len(FILES)} made-up files: a claim dangles when a pod of a Job or a TFJob "
                          "mounts it and no PersistentVolumeClaim in the same file declares it, which is what "
                          "helpers.manifests.consistency_errors now reports for each file alone.")
