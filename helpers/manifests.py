"""Topic module of notebook 08 · GPU clusters: the Kubernetes manifests, the Dockerfile and their checks.

Here live

* the manifests of "On Kubernetes" and "Or a Kubeflow TFJob" (:func:`indexed_job`, :func:`tfjob`,
  :func:`worker_hosts`, :func:`to_yaml`): each file complete on its own (the volume claim it mounts
  included), with CPU and memory requests and limits, a GPU limit, tolerations for GPU nodes,
  ``/dev/shm`` sized for NCCL, and a deadline for the Job;
* the schemas of "Checked offline, against real schemas": the Kubeflow ``TFJob`` schema shipped in
  ``data/`` (:func:`load_tfjob_crd`, :func:`crd_schema`, :func:`strict_schema`, :func:`schema_errors`)
  and ``kubernetes-validate``'s (:func:`kubernetes_versions`, :func:`kubernetes_errors`);
* the checks no schema makes (:func:`consistency_errors`: the parts that must agree, a dangling
  volume claim, resources that do not add up) and every validator behind one call
  (:func:`manifest_errors`);
* "What each check catches" (:func:`all_checks`, :func:`caught_table`);
* "In a container": the Dockerfile with its checker (:func:`dockerfile`, :func:`dockerfile_problems`).

The worker processes and their logs live in :mod:`helpers.cluster`. Used by notebook 08 only.
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from helpers import colab, data

CRD_FILE = "kubeflow_tfjob_crd.yaml"
CRD_SOURCE = "kubeflow/training-operator v1.9.0, manifests/base/crds/kubeflow.org_tfjobs.yaml"
TFJOB_REPLICA_TYPES = ("Chief", "Master", "PS", "Worker", "Evaluator")
RESTART_POLICIES = ("Always", "OnFailure", "Never", "ExitCode")


# --------------------------------------------------------------------------- Kubernetes manifests

PEER_LOST_EXIT = 75  # the worker script's exit code when it loses the cluster (EX_TEMPFAIL in sysexits.h: retry)
USAGE_EXIT = 2  # argparse's exit code for a wrong command line: restarting cannot fix it
GPU_RESOURCE = "nvidia.com/gpu"  # the NVIDIA device plugin's resource name (and the taint of many GPU node pools)
DEADLINE_S = 6 * 3600  # default activeDeadlineSeconds: the whole job, restarts included, ends by then
_UNITS = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15,
          "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50}


def quantity(value: Any) -> float:
    """A Kubernetes resource quantity (``"500m"``, ``"8Gi"``, ``2``) as a plain number (cores, bytes).

    Example:
        >>> quantity("500m"), quantity("1Gi"), quantity(2)
        (0.5, 1073741824.0, 2.0)
    """
    if isinstance(value, bool):
        raise ValueError(f"value={value!r}: use a quantity such as 2, '500m' or '8Gi'.")
    if isinstance(value, (int, float)):
        return float(value)
    found = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)([a-zA-Z]*)\s*", str(value))
    if not found or found.group(2) not in _UNITS:
        units = ", ".join(u for u in _UNITS if u)
        raise ValueError(f"value={value!r}: use a quantity such as 2, '500m' or '8Gi' (units: none, {units}).")
    return float(found.group(1)) * _UNITS[found.group(2)]


def _worker_container(name: str, image: str, args: Sequence[str], port: int, resources: Mapping[str, Any],
                      env: list[dict[str, Any]], port_name: str) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": image, "args": [str(a) for a in args]}
    if env:
        container["env"] = env
    container["ports"] = [{"name": port_name, "containerPort": port}]
    container["resources"] = copy.deepcopy(dict(resources))
    container["volumeMounts"] = [{"name": "checkpoints", "mountPath": "/checkpoints"},
                                 {"name": "dshm", "mountPath": "/dev/shm"}]
    return container


def _pod_spec(container: dict[str, Any], claim: str, gpus: int, shm: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [container]}
    if gpus:  # GPU nodes are often tainted so that only pods that ask for GPUs land there
        spec["tolerations"] = [{"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}]
    spec["volumes"] = [{"name": "checkpoints", "persistentVolumeClaim": {"claimName": claim}},
                       {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": shm}}]
    return spec


def _check_manifest_args(name: str, n_workers: int, port: int, gpus: int, cpus: Any = 1, memory: Any = "1Gi",
                         shm: Any = "1Gi", deadline_s: Any = DEADLINE_S) -> None:
    if not isinstance(name, str) or not re.fullmatch(r"[a-z]([-a-z0-9]{0,40}[a-z0-9])?", name):
        raise ValueError(f"name={name!r}: use lower-case letters, digits and '-', starting with a letter, at most "
                         "42 characters (a Service name is a DNS-1035 label, with room for the pod index).")
    if not isinstance(n_workers, int) or isinstance(n_workers, bool) or not 1 <= n_workers <= 1000:
        raise ValueError(f"n_workers={n_workers!r}: use an integer from 1 to 1000.")
    if not isinstance(port, int) or not 1 <= port <= 65535:
        raise ValueError(f"port={port!r}: use a TCP port from 1 to 65535.")
    if not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 0:
        raise ValueError(f"gpus={gpus!r}: use an integer >= 0 (GPUs per worker).")
    for label, value in (("cpus", cpus), ("memory", memory), ("shm", shm)):
        try:
            ok = quantity(value) > 0
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"{label}={value!r}: use a positive Kubernetes quantity such as 4, '500m' or '16Gi'.")
    if quantity(shm) >= quantity(memory):
        raise ValueError(f"shm={shm!r}: /dev/shm lives in the worker's memory, so keep it below memory={memory!r}.")
    if not isinstance(deadline_s, int) or isinstance(deadline_s, bool) or deadline_s < 60:
        raise ValueError(f"deadline_s={deadline_s!r}: use whole seconds, at least 60 (activeDeadlineSeconds).")


def worker_resources(gpus: int, cpus: Any = 4, memory: Any = "16Gi") -> dict[str, Any]:
    """A worker container's ``resources``: CPU and memory requested, memory and GPUs limited.

    The memory limit equals the request, so the scheduler places the pod where its whole memory
    fits; the CPU has no limit (a limit throttles a busy worker, and the all-reduce waits for the
    slowest); GPUs are set in ``limits`` (an extended resource: a request, if any, must equal it).

    Example:
        >>> worker_resources(1, cpus=4, memory="16Gi")
        {'requests': {'cpu': '4', 'memory': '16Gi'}, 'limits': {'memory': '16Gi', 'nvidia.com/gpu': 1}}
    """
    limits: dict[str, Any] = {"memory": str(memory)}
    if gpus:
        limits[GPU_RESOURCE] = gpus
    return {"requests": {"cpu": str(cpus), "memory": str(memory)}, "limits": limits}


def volume_claim(name: str, storage: str = "1Gi") -> dict[str, Any]:
    """The ``PersistentVolumeClaim`` for the checkpoints of job `name`, shared by every pod (``ReadWriteMany``).

    Example:
        >>> volume_claim("tf-train")["metadata"]["name"]
        'tf-train-checkpoints'
    """
    return {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": f"{name}-checkpoints", "labels": {"app": name}},
        "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": storage}}},
    }


def worker_hosts(name: str, n_workers: int, port: int = 2222, service: str | None = None) -> list[str]:
    """The ``host:port`` of each pod of Indexed Job `name` behind headless Service `service`.

    Example:
        >>> worker_hosts("tf-train", 2)
        ['tf-train-0.tf-train:2222', 'tf-train-1.tf-train:2222']
    """
    service = service or name
    return [f"{name}-{i}.{service}:{port}" for i in range(n_workers)]


def indexed_job(name: str, image: str, n_workers: int, args: Sequence[str] = (), port: int = 2222,
                gpus: int = 1, storage: str = "1Gi", cpus: Any = 4, memory: Any = "16Gi", shm: Any = "1Gi",
                deadline_s: int = DEADLINE_S) -> list[dict[str, Any]]:
    """The manifests that run the worker script as an Indexed Job on Kubernetes, in apply order.

    * a ``PersistentVolumeClaim`` for the checkpoints, which every pod mounts (``ReadWriteMany``);
    * a headless ``Service`` (``clusterIP: None``): DNS gives each pod the name
      ``<name>-<index>.<name>``, so the workers find each other;
    * a ``Job`` with ``completionMode: Indexed``: pod ``i`` gets ``JOB_COMPLETION_INDEX=i``, and the
      worker script builds its ``TF_CONFIG`` from that index and ``WORKER_HOSTS``. A failed pod is
      replaced (``restartPolicy: Never``), with the same index and name, and resumes from the last
      checkpoint; ``podFailurePolicy`` fails the whole Job at once on a wrong command line (exit code
      2), counts a lost peer (exit code 75) against ``backoffLimit``, and does not count a pod that
      Kubernetes itself evicted or preempted; ``activeDeadlineSeconds`` ends the Job, whatever hangs.
      Each pod asks for `cpus` and `memory`, `gpus` GPUs, tolerates the GPU nodes' taint, and mounts
      a memory-backed ``/dev/shm`` of `shm` (NCCL's shared memory).

    Example:
        >>> [d["kind"] for d in indexed_job("tf-train", "example.org/tf-worker:1", 2)]
        ['PersistentVolumeClaim', 'Service', 'Job']
    """
    _check_manifest_args(name, n_workers, port, gpus, cpus, memory, shm, deadline_s)
    labels = {"app": name}
    env = [
        {"name": "WORKER_HOSTS", "value": ",".join(worker_hosts(name, n_workers, port))},
        {"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
            "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}},
    ]
    claim = volume_claim(name, storage)
    service = {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "labels": labels},
        "spec": {"clusterIP": "None", "selector": labels,
                 "ports": [{"name": "grpc", "port": port, "targetPort": port}]},
    }
    container = _worker_container("worker", image, args, port, worker_resources(gpus, cpus, memory), env, "grpc")
    pod = {"subdomain": name, "restartPolicy": "Never",
           **_pod_spec(container, claim["metadata"]["name"], gpus, str(shm))}
    on_exit = [(USAGE_EXIT, "FailJob"), (PEER_LOST_EXIT, "Count")]
    rules: list[dict[str, Any]] = [  # an empty onPodConditions: the schemas of 1.25 to 1.30 require the field
        {"action": action, "onExitCodes": {"containerName": "worker", "operator": "In", "values": [code]},
         "onPodConditions": []} for code, action in on_exit]
    rules.append({"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]})
    job = {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "completionMode": "Indexed",
            "completions": n_workers,
            "parallelism": n_workers,
            "backoffLimit": 4 * n_workers,
            "activeDeadlineSeconds": deadline_s,
            "podFailurePolicy": {"rules": rules},
            "template": {"metadata": {"labels": labels}, "spec": pod},
        },
    }
    return [claim, service, job]


def tfjob(name: str, image: str, n_workers: int, args: Sequence[str] = (), port: int = 2222,
          gpus: int = 1, storage: str = "1Gi", cpus: Any = 4, memory: Any = "16Gi", shm: Any = "1Gi",
          deadline_s: int = DEADLINE_S) -> list[dict[str, Any]]:
    """The volume claim and a Kubeflow ``TFJob`` that runs the same workers, in apply order.

    The training operator writes each ``TF_CONFIG``; it needs the container to be called
    ``tensorflow`` and reads its port ``tfjob-port``. ``runPolicy`` bounds the restarts
    (``backoffLimit``) and the time (``activeDeadlineSeconds``); resources, tolerations and
    ``/dev/shm`` are those of :func:`indexed_job`.

    Example:
        >>> [d["kind"] for d in tfjob("tf-train", "example.org/tf-worker:1", 2)]
        ['PersistentVolumeClaim', 'TFJob']
    """
    _check_manifest_args(name, n_workers, port, gpus, cpus, memory, shm, deadline_s)
    claim = volume_claim(name, storage)
    container = _worker_container("tensorflow", image, args, port, worker_resources(gpus, cpus, memory), [],
                                  "tfjob-port")
    job = {
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": name},
        "spec": {
            "runPolicy": {"backoffLimit": 4 * n_workers, "activeDeadlineSeconds": deadline_s,
                          "cleanPodPolicy": "Running"},
            "tfReplicaSpecs": {"Worker": {
                "replicas": n_workers,
                "restartPolicy": "OnFailure",
                "template": {"spec": _pod_spec(container, claim["metadata"]["name"], gpus, str(shm))},
            }},
        },
    }
    return [claim, job]


def to_yaml(docs: dict[str, Any] | Sequence[dict[str, Any]]) -> str:
    """Manifests as one YAML text, documents separated by ``---`` (what ``kubectl apply -f`` reads).

    Example:
        >>> print(to_yaml({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"}}))
        apiVersion: v1
        kind: Service
        metadata:
          name: x
        <BLANKLINE>
    """
    import yaml

    class Dumper(yaml.SafeDumper):
        def ignore_aliases(self, data: Any) -> bool:  # write shared dicts out in full, no &id001 anchors
            return True

    docs = [docs] if isinstance(docs, Mapping) else list(docs)
    return "---\n".join(yaml.dump(d, Dumper=Dumper, sort_keys=False, default_flow_style=False, width=120)
                         for d in docs)


# --------------------------------------------------------------------------- schemas and checks

def _manifest_sha256(name: str) -> str | None:
    path = data.DATA_DIR / "MANIFEST"
    if not path.exists():
        return None
    for line in path.read_text().splitlines():
        parts = line.split(maxsplit=1)
        if len(parts) == 2 and parts[1].strip().lstrip("*") == name:
            return parts[0]
    return None


def load_tfjob_crd(path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The Kubeflow ``TFJob`` CustomResourceDefinition shipped in ``data/``, checked against its sha256.

    Example:
        >>> load_tfjob_crd()["spec"]["names"]["kind"]
        'TFJob'
    """
    import yaml

    path = Path(path) if path is not None else data.DATA_DIR / CRD_FILE
    expected = _manifest_sha256(CRD_FILE)
    if not path.exists():
        raise data.DataIntegrityError(f"{path} is missing: restore data/ from the repository (git checkout data/).")
    if expected is None:
        raise data.DataIntegrityError(f"{CRD_FILE} has no entry in {data.DATA_DIR / 'MANIFEST'}.")
    actual = data.sha256(path)
    if actual != expected:
        raise data.DataIntegrityError(f"{path} does not match its sha256 in MANIFEST (expected {expected[:12]}..., "
                                      f"got {actual[:12]}...): restore it with `git checkout data/`.")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with open(path) as f:
        return yaml.load(f, Loader=loader)  # noqa: S506  (a safe loader, the C one when there is one)


def crd_schema(crd: Mapping[str, Any], version: str = "v1") -> dict[str, Any]:
    """The ``openAPIV3Schema`` of `version` in a CustomResourceDefinition.

    Example:
        >>> sorted(crd_schema(load_tfjob_crd())["properties"])
        ['apiVersion', 'kind', 'metadata', 'spec', 'status']
    """
    for entry in crd.get("spec", {}).get("versions", []):
        if entry.get("name") == version:
            return entry["schema"]["openAPIV3Schema"]
    names = [v.get("name") for v in crd.get("spec", {}).get("versions", [])]
    raise ValueError(f"version={version!r}: this CRD defines {names}.")


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of an OpenAPI schema that refuses unknown fields (``additionalProperties: false``).

    Wherever a schema lists ``properties`` and says nothing about others, others become errors,
    as ``kubectl apply`` treats them by default (server-side field validation), where plain JSON
    Schema lets them pass. Schemas marked
    ``x-kubernetes-preserve-unknown-fields`` keep accepting anything.

    Example:
        >>> strict_schema({"type": "object", "properties": {"a": {"type": "integer"}}})["additionalProperties"]
        False
    """
    def walk(node: Any) -> Any:
        if not isinstance(node, Mapping):
            return node
        out = dict(node)
        if isinstance(node.get("properties"), Mapping):
            out["properties"] = {name: walk(sub) for name, sub in node["properties"].items()}
            if "additionalProperties" not in node and not node.get("x-kubernetes-preserve-unknown-fields"):
                out["additionalProperties"] = False
        if isinstance(node.get("additionalProperties"), Mapping):
            out["additionalProperties"] = walk(node["additionalProperties"])
        if isinstance(node.get("items"), Mapping):
            out["items"] = walk(node["items"])
        for key in ("anyOf", "allOf", "oneOf"):
            if isinstance(node.get(key), list):
                out[key] = [walk(sub) for sub in node[key]]
        return out

    return walk(copy.deepcopy(dict(schema)))


def schema_errors(doc: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """Every place where `doc` breaks JSON Schema `schema`, as ``path: message`` lines.

    Example:
        >>> schema_errors({"a": "x"}, {"type": "object", "properties": {"a": {"type": "integer"}}})
        ["a: 'x' is not of type 'integer'"]
    """
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(doc), key=lambda e: [str(p) for p in e.absolute_path])
    return [f"{'.'.join(str(p) for p in e.absolute_path) or '(top)'}: {e.message}" for e in errors]


def kubernetes_versions() -> list[str]:
    """The Kubernetes versions whose schemas ``kubernetes-validate`` bundles (``major.minor``).

    Example:
        >>> "1.25" in kubernetes_versions()
        True
    """
    colab.ensure("kubernetes_validate")  # on Colab and Kaggle: installed when first needed
    import kubernetes_validate.utils as kv

    return sorted({kv.major_minor(v) for v in kv.all_versions()}, key=lambda v: tuple(int(p) for p in v.split(".")))


def kubernetes_errors(doc: Mapping[str, Any], versions: Sequence[str] | None = None,
                      strict: bool = True) -> list[str]:
    """What ``kubernetes-validate`` finds wrong with `doc` against each of `versions` (default: all).

    An error that holds for several versions is listed once, with their range. A kind it has no
    schema for (a custom resource such as ``TFJob``) is an error here, not a silent pass.

    Example:
        >>> kubernetes_errors({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"},
        ...                    "spec": {"clusterIP": "None", "ports": [{"port": 2222}]}}, ["1.30"])
        []
    """
    import kubernetes_validate

    found: dict[str, list[str]] = {}
    for version in versions or kubernetes_versions():
        try:
            kubernetes_validate.validate(dict(doc), version, strict=strict)
        except kubernetes_validate.ValidationError as error:
            path = ".".join(str(p) for p in error.path) or "(top)"
            found.setdefault(f"{path}: {error.message}", []).append(version)
        except kubernetes_validate.SchemaNotFoundError as error:
            return [f"no schema: {error.message}"]
    return [f"Kubernetes {v[0] if len(v) == 1 else f'{v[0]} to {v[-1]}'}: {message}" for message, v in found.items()]


def _labels_match(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def consistency_errors(docs: Sequence[Mapping[str, Any]], gpus: int | None = None) -> list[str]:
    """What the schemas cannot see: the parts of the manifests that must agree with each other.

    `docs` is one file, applied on its own. For an Indexed Job and its headless Service:
    ``completionMode`` is ``Indexed``, completions equal parallelism equal the number of
    ``WORKER_HOSTS``, each host is ``<job>-<i>.<service>:<port>`` in index order, the Service is
    headless, selects the Job's pods and serves the container's port, the pods' ``subdomain`` is the
    Service, a ``podFailurePolicy`` comes with ``restartPolicy: Never``, and the Job has a deadline.
    For a ``TFJob``: known replica types, a known ``restartPolicy``, a container named
    ``tensorflow``, and a deadline. For every pod: each volume claim it mounts is declared in `docs`
    (none is dangling), limits are at least the requests, a GPU limit equals `gpus` (when given) and
    any GPU request, a pod with GPUs tolerates the GPU nodes' taint and mounts a memory-backed
    ``/dev/shm`` with a size limit that fits in its memory limit.

    Example:
        >>> consistency_errors(indexed_job("tf-train", "example.org/tf-worker:1", 2))
        []
    """
    errors: list[str] = []
    services = {d["metadata"]["name"]: d for d in docs if d.get("kind") == "Service"}
    claims = {d["metadata"]["name"] for d in docs if d.get("kind") == "PersistentVolumeClaim"}
    for doc in docs:
        kind, name = doc.get("kind"), doc.get("metadata", {}).get("name", "?")
        if kind == "Job":
            spec = doc.get("spec", {})
            pod = spec.get("template", {}).get("spec", {})
            labels = spec.get("template", {}).get("metadata", {}).get("labels", {})
            where = f"Job {name}"
            if spec.get("completionMode") != "Indexed":
                errors.append(f"{where}: completionMode is {spec.get('completionMode')!r}, not 'Indexed': the pods get "
                              "no JOB_COMPLETION_INDEX, so no worker knows its place in TF_CONFIG.")
            if spec.get("completions") != spec.get("parallelism"):
                errors.append(f"{where}: completions {spec.get('completions')} != parallelism "
                              f"{spec.get('parallelism')}: every worker must run at the same time.")
            if pod.get("restartPolicy") not in ("OnFailure", "Never"):
                errors.append(f"{where}: a Job's restartPolicy must be OnFailure or Never.")
            if spec.get("podFailurePolicy") and pod.get("restartPolicy") != "Never":
                errors.append(f"{where}: a podFailurePolicy needs restartPolicy 'Never' in the pod template, not "
                              f"{pod.get('restartPolicy')!r}.")
            errors += _deadline_errors(where, spec.get("activeDeadlineSeconds"))
            service = services.get(pod.get("subdomain", ""))
            if service is None:
                errors.append(f"{where}: subdomain {pod.get('subdomain')!r} is not the name of a Service here, so the "
                              "pods get no DNS names.")
            for container in pod.get("containers", []):
                env = {e.get("name"): e.get("value") for e in container.get("env", [])}
                ports = [p.get("containerPort") for p in container.get("ports", [])]
                hosts = (env.get("WORKER_HOSTS") or "").split(",") if env.get("WORKER_HOSTS") else []
                if len(hosts) != spec.get("completions"):
                    errors.append(f"{where}: WORKER_HOSTS lists {len(hosts)} hosts for {spec.get('completions')} "
                                  "completions.")
                if service is not None and ports:
                    expected = worker_hosts(name, len(hosts), ports[0], service["metadata"]["name"])
                    if hosts and hosts != expected:
                        errors.append(f"{where}: WORKER_HOSTS should be {','.join(expected)} (pod DNS names in index "
                                      f"order), not {','.join(hosts)}.")
            if service is not None:
                sspec = service.get("spec", {})
                if sspec.get("clusterIP") != "None":
                    errors.append(f"Service {service['metadata']['name']}: clusterIP must be 'None' (headless), so "
                                  "that DNS names each pod.")
                if not _labels_match(sspec.get("selector", {}), labels):
                    errors.append(f"Service {service['metadata']['name']}: its selector {sspec.get('selector')} does "
                                  f"not select the Job's pods (labels {labels}).")
                served = {p.get("targetPort", p.get("port")) for p in sspec.get("ports", [])}
                wanted = {p.get("containerPort") for c in pod.get("containers", []) for p in c.get("ports", [])}
                if not wanted <= served:
                    errors.append(f"Service {service['metadata']['name']}: serves ports {sorted(served)}, the workers "
                                  f"listen on {sorted(wanted)}.")
            errors += _pod_errors(where, pod, claims, gpus)
        elif kind == "TFJob":
            where = f"TFJob {name}"
            specs = doc.get("spec", {}).get("tfReplicaSpecs", {})
            errors += _deadline_errors(where, doc.get("spec", {}).get("runPolicy", {}).get("activeDeadlineSeconds"))
            for replica_type, replica in specs.items():
                if replica_type not in TFJOB_REPLICA_TYPES:
                    errors.append(f"{where}: replica type {replica_type!r} is unknown: use one of "
                                  f"{', '.join(TFJOB_REPLICA_TYPES)}.")
                if replica.get("restartPolicy", "Never") not in RESTART_POLICIES:
                    errors.append(f"{where}: restartPolicy {replica.get('restartPolicy')!r} is unknown: use one of "
                                  f"{', '.join(RESTART_POLICIES)}.")
                containers = replica.get("template", {}).get("spec", {}).get("containers", [])
                if "tensorflow" not in [c.get("name") for c in containers]:
                    errors.append(f"{where}: {replica_type} needs a container named 'tensorflow' (the operator "
                                  "gives that one its TF_CONFIG and port).")
                errors += _pod_errors(where, replica.get("template", {}).get("spec", {}), claims, gpus, replica_type)
    return errors


def _deadline_errors(where: str, deadline: Any) -> list[str]:
    if isinstance(deadline, int) and not isinstance(deadline, bool) and deadline > 0:
        return []
    return [f"{where}: no activeDeadlineSeconds: a worker that hangs (alive, never exiting) keeps the job running, "
            "and its GPUs taken, for ever."]


def _fits(size: Any, limit: Any) -> bool | None:
    try:
        return quantity(size) <= quantity(limit)
    except ValueError:
        return None  # reported where the limit is compared with its request


def _pod_errors(where: str, pod: Mapping[str, Any], claims: set[str], gpus: int | None,
                replica: str = "") -> list[str]:
    where = f"{where}: {replica}" if replica else f"{where}:"
    errors = []
    volumes = {v.get("name"): v for v in pod.get("volumes", [])}
    for volume in volumes.values():
        claim = volume.get("persistentVolumeClaim", {}).get("claimName")
        if claim is not None and claim not in claims:
            errors.append(f"{where} volume {volume.get('name')!r} mounts claim {claim!r}, which is dangling: no "
                          "PersistentVolumeClaim in this file declares it, so applied alone its pods stay Pending.")
    for container in pod.get("containers", []):
        for mount in container.get("volumeMounts", []):
            if mount.get("name") not in volumes:
                errors.append(f"{where} volumeMount {mount.get('name')!r} names no volume of its pod: the API "
                              "server refuses the pod (volumeMounts.name: Not found).")
        resources = container.get("resources", {})
        requests, limits = resources.get("requests", {}), resources.get("limits", {})
        for resource in sorted(set(requests) & set(limits)):
            try:
                below = quantity(limits[resource]) < quantity(requests[resource])
            except ValueError as error:
                errors.append(f"{where} {resource}: {error}")
                continue
            if below:
                errors.append(f"{where} limit {resource}={limits[resource]} is below its request "
                              f"{requests[resource]}: Kubernetes refuses a limit below the request.")
        gpu_limit = limits.get(GPU_RESOURCE, 0)
        if GPU_RESOURCE in requests and requests[GPU_RESOURCE] != gpu_limit:
            errors.append(f"{where} {GPU_RESOURCE} request {requests[GPU_RESOURCE]} != limit {gpu_limit}: GPUs "
                          "cannot be shared or overcommitted, so a request must equal the limit.")
        if gpus is not None and gpu_limit != gpus:
            errors.append(f"{where} {GPU_RESOURCE} limit is {gpu_limit}, not the {gpus} GPU(s) per worker the job "
                          "is for.")
        if "NCCL" in container.get("args", []) and not gpu_limit:
            errors.append(f"{where} --collective NCCL without a {GPU_RESOURCE} limit: NCCL needs a GPU per worker.")
        if not gpu_limit:
            continue
        tolerated = any(t.get("key") == GPU_RESOURCE and t.get("effect") in ("NoSchedule", None, "")
                        and (t.get("operator") == "Exists" or t.get("value") is not None)
                        for t in pod.get("tolerations", []))
        if not tolerated:
            errors.append(f"{where} no toleration for the taint {GPU_RESOURCE}:NoSchedule that GPU nodes often "
                          "carry: the pod may find no node.")
        shm = [m.get("name") for m in container.get("volumeMounts", []) if m.get("mountPath") == "/dev/shm"]
        backing = volumes.get(shm[0], {}).get("emptyDir", {}) if shm else {}
        if not shm or backing.get("medium") != "Memory" or "sizeLimit" not in backing:
            errors.append(f"{where} no memory-backed /dev/shm with a sizeLimit (an emptyDir, medium Memory, mounted "
                          "at /dev/shm): NCCL's shared memory gets the container runtime's small default.")
        elif "memory" in limits and _fits(backing["sizeLimit"], limits["memory"]) is False:
            errors.append(f"{where} /dev/shm's sizeLimit {backing['sizeLimit']} exceeds the memory limit "
                          f"{limits['memory']}: a memory-backed emptyDir counts against it.")
    return errors


def manifest_errors(docs: Sequence[Mapping[str, Any]], crd: Mapping[str, Any] | None = None,
                    versions: Sequence[str] | None = None, gpus: int | None = None) -> dict[str, list[str]]:
    """Every check on a set of manifests: ``{"kind/name": [errors]}`` (an empty list: valid).

    Built-in kinds go through ``kubernetes-validate`` (strict, every bundled version); a ``TFJob``
    through the CRD's schema made strict; then :func:`consistency_errors` on the whole set, which is
    one file applied on its own (`gpus`: the GPUs each worker must get, when you know it).

    Example:
        >>> manifest_errors(indexed_job("tf-train", "example.org/tf-worker:1", 2), versions=["1.33"])
        {'persistentvolumeclaim/tf-train-checkpoints': [], 'service/tf-train': [], 'job/tf-train': []}
    """
    report: dict[str, list[str]] = {}
    schema = None
    for doc in docs:
        key = f"{doc.get('kind', '?').lower()}/{doc.get('metadata', {}).get('name', '?')}"
        if doc.get("kind") == "TFJob":
            if schema is None:
                schema = strict_schema(crd_schema(crd if crd is not None else load_tfjob_crd()))
            report[key] = schema_errors(doc, schema)
        else:
            report[key] = kubernetes_errors(doc, versions)
    for error in consistency_errors(docs, gpus):
        kind, name = error.split(":", 1)[0].split(" ", 1)
        report.setdefault(f"{kind.lower()}/{name}", []).append(error)
    return report


# --------------------------------------------------------------------------- Docker

def dockerfile(tf_version: str, script: str = "worker.py", data_file: str = "fashion_mnist_subset.npz",
               keras_version: str | None = None, port: int = 2222) -> str:
    """A Dockerfile that runs the worker script on TensorFlow's official GPU image.

    Example:
        >>> dockerfile("2.21.0").splitlines()[0]
        'FROM tensorflow/tensorflow:2.21.0-gpu'
    """
    if not isinstance(tf_version, str) or not re.fullmatch(r"\d+\.\d+\.\d+", tf_version):
        raise ValueError(f"tf_version={tf_version!r}: use a release such as '2.21.0' (pinned, never 'latest').")
    keras = f"RUN python -m pip install --no-cache-dir keras=={keras_version}\n" if keras_version else ""
    return (f"FROM tensorflow/tensorflow:{tf_version}-gpu\n"
            f"{keras}"
            "WORKDIR /app\n"
            f"COPY {script} {data_file} /app/\n"
            "ENV PYTHONUNBUFFERED=1 TF_CPP_MIN_LOG_LEVEL=2\n"
            f"EXPOSE {port}\n"
            f'ENTRYPOINT ["python", "/app/{script}"]\n'
            f'CMD ["--data", "/app/{data_file}", "--checkpoints", "/checkpoints"]\n')


_INSTRUCTIONS = {"FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT", "VOLUME", "USER",
                 "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL", "MAINTAINER"}


def _instructions(text: str) -> list[tuple[str, str]]:
    joined = re.sub(r"\\\n", " ", text)
    out = []
    for line in joined.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def dockerfile_problems(text: str, tf_version: str, context: str | os.PathLike[str] | None = None,
                        script: str = "worker.py") -> list[str]:
    """What keeps a Dockerfile from running the worker script on the pinned TensorFlow GPU image.

    Checks the instructions are known; ``FROM tensorflow/tensorflow:<tf_version>-gpu`` (pinned, the
    course's version); nothing reinstalls TensorFlow (that would replace the image's GPU build); the
    ``ENTRYPOINT``/``CMD`` are exec-form JSON arrays (so signals reach Python) and run `script`;
    every ``COPY`` source exists in the build `context` folder when one is given.

    Example:
        >>> dockerfile_problems(dockerfile("2.21.0"), "2.21.0")
        []
        >>> broken = "FROM tensorflow/tensorflow:latest-gpu\\nCMD python worker.py"
        >>> for problem in dockerfile_problems(broken, "2.21.0"):
        ...     print(problem[:62])
        FROM 'tensorflow/tensorflow:latest-gpu': use tensorflow/tensor
        CMD python worker.py: use the exec form, a JSON list such as [
        No ENTRYPOINT or CMD runs worker.py.
    """
    problems: list[str] = []
    steps = _instructions(text)
    if not steps or steps[0][0] not in ("FROM", "ARG"):
        problems.append("The first instruction must be FROM.")
    wanted = f"tensorflow/tensorflow:{tf_version}-gpu"
    bases = [rest.split()[0] for word, rest in steps if word == "FROM" and rest]
    if not bases or bases[-1] != wanted:
        problems.append(f"FROM {bases[-1] if bases else ''!r}: use {wanted} (TensorFlow's GPU image, pinned to the "
                        "course's version).")
    runs_script = False
    for word, rest in steps:
        if word not in _INSTRUCTIONS:
            problems.append(f"{word}: not a Dockerfile instruction.")
        elif word == "RUN" and re.search(r"pip3?\b.*\binstall\b.*\btensorflow(\[|[=<>~ ]|$)", rest):
            problems.append(f"RUN {rest}: the image has TensorFlow with its GPU libraries; installing it again "
                            "replaces them.")
        elif word in ("ENTRYPOINT", "CMD"):
            try:
                command = json.loads(rest)
                if not isinstance(command, list) or not all(isinstance(p, str) for p in command):
                    raise ValueError
            except ValueError:
                problems.append(f"{word} {rest}: use the exec form, a JSON list such as "
                                f"[\"python\", \"/app/{script}\"], so that the worker is PID 1 and receives the stop "
                                "signal.")
                continue
            runs_script = runs_script or any(Path(p).name == script for p in command)
        elif word in ("COPY", "ADD") and context is not None:
            parts = [p for p in rest.split() if not p.startswith("--")]
            for source in parts[:-1]:
                if not (Path(context) / source).exists():
                    problems.append(f"{word} {source}: no such file in the build context {context}.")
    if not runs_script:
        problems.append(f"No ENTRYPOINT or CMD runs {script}.")
    return problems


# --------------------------------------------------------------------------- what each check catches

def all_checks(docs: Sequence[Mapping[str, Any]], crd: Mapping[str, Any] | None = None,
               versions: Sequence[str] | None = None, gpus: int | None = None) -> dict[str, list[str]]:
    """The errors each kind of check finds in `docs`: lenient schemas, strict schemas, cross-checks.

    *Lenient* is ``kubernetes-validate`` without ``strict`` and the CRD schema as shipped; *strict*
    refuses unknown fields in both (see :func:`strict_schema`); *cross-checks* is
    :func:`consistency_errors`.

    Example:
        >>> all_checks(indexed_job("tf-train", "example.org/tf-worker:1", 2), versions=["1.33"])
        {'lenient schema': [], 'strict schema': [], 'cross-checks': []}
    """
    found: dict[str, list[str]] = {"lenient schema": [], "strict schema": [], "cross-checks": []}
    schema = None
    for doc in docs:
        if doc.get("kind") == "TFJob":
            schema = schema or crd_schema(crd if crd is not None else load_tfjob_crd())
            found["lenient schema"] += schema_errors(doc, schema)
            found["strict schema"] += schema_errors(doc, strict_schema(schema))
        else:
            found["lenient schema"] += kubernetes_errors(doc, versions, strict=False)
            found["strict schema"] += kubernetes_errors(doc, versions, strict=True)
    found["cross-checks"] = consistency_errors(docs, gpus)
    return found


def caught_table(caught: Mapping[str, Mapping[str, list[str]]], width: int = 110) -> str:
    """A table of which check rejects which broken manifest, then the first error of each rejection.

    Example:
        >>> print(caught_table({"typo": {"lenient schema": [], "strict schema": ["spec: bad"]}}))
        broken copy  lenient schema  strict schema
        typo         passes          rejects
        <BLANKLINE>
        typo, strict schema: spec: bad
    """
    from helpers import tables

    checks = list(next(iter(caught.values())))
    rows = [["broken copy", *checks]]
    rows += [[label, *("rejects" if found[c] else "passes" for c in checks)] for label, found in caught.items()]
    lines = [tables.text_table(rows), ""]
    for label, found in caught.items():
        for check in checks:
            if found[check]:
                first = f"{label}, {check}: {found[check][0]}"
                lines.append(first if len(first) <= width else first[:width - 3] + "...")
    return "\n".join(lines)
