"""Checks of notebook 08: model answers pass; constants and plausible mistakes are refused with the right hint."""

import json
import math

import numpy as np
import pytest

from helpers.check import nb08 as check


# --------------------------------------------------------------------------- exercise 1: resume_epoch
def model_resume_epoch(save_every, killed_at):
    return (killed_at - 1) // save_every * save_every


def test_resume_epoch_model_answer_passes():
    fb = check.resume_epoch(model_resume_epoch)
    assert fb.ok, fb.message


def test_resume_epoch_written_other_ways_passes():
    def with_a_loop(save_every, killed_at):
        last = 0
        for epoch in range(1, killed_at):  # the epochs finished before the kill
            if epoch % save_every == 0:
                last = epoch
        return last

    for answer in (with_a_loop, lambda s, k: int((k - 1) / s) * s, lambda s, k: math.floor((k - 1) / s) * s,
                   lambda s, k: max(e for e in range(0, k) if e % s == 0), lambda s, k: np.int64(k - 1) // s * s):
        fb = check.resume_epoch(answer)
        assert fb.ok, fb.message


@pytest.mark.parametrize("answer, hint", [
    (..., "Not answered yet"),
    (2, "Answer with a function"),
    (lambda s, k: None, "returns None"),
    (lambda s, k: 2, "whatever the job"),  # right for the first made-up job only
    (lambda s, k: k - 1, "the epoch before the kill"),
    (lambda s, k: k // s * s, "that save never happened"),
    (lambda s, k: k, "not finished"),
    (lambda s, k: (k - 1) // s, "multiply by save_every"),
    (lambda s, k: -(-(k - 1) // s) * s, "Round down"),
    (lambda s, k: (k - 2) // s * s, "resume_epoch(1, 1) gave -1: a job killed before its first save"),
    (lambda s, k: (k - 1) - (k % s), "You take away killed_at % save_every"),  # was blamed on negative epochs
    (lambda s, k: 1 / 0, "raised ZeroDivisionError"),
    (lambda s, k: "two", "whole number"),
    (lambda s, k: (k - 1) / s * s, "`/` is true division: (killed_at - 1) / save_every * save_every gives"),
    (lambda s, k: (k - 1) / s, "leaves a fraction"),  # 1.5 for (2, 4)
    (lambda s, k: float((k - 1) // s * s), "want an int"),  # right values, as floats
    (lambda s, k: np.float64((k - 1) // s * s), "want an int"),
    (lambda s, k: round((k - 1) / s) * s, "round() goes to the nearest save"),
    (lambda s, k: max(0, (k - 1) // s * s - s), "Saves happen after epochs"),  # one save too far back
])
def test_resume_epoch_refuses_constants_and_mistakes_with_a_hint(answer, hint):
    fb = check.resume_epoch(answer)
    assert not fb.ok
    assert hint in fb.message, fb.message


# --------------------------------------------------------------------------- exercise 2: pod_tf_config
def model_pod_tf_config(job, service, n_workers, index, port):
    hosts = [f"{job}-{i}.{service}:{port}" for i in range(n_workers)]
    return {"cluster": {"worker": hosts}, "task": {"type": "worker", "index": index}}


def hosts_of(make_host):
    def answer(job, service, n_workers, index, port):
        return {"cluster": {"worker": [make_host(job, service, i, port) for i in range(n_workers)]},
                "task": {"type": "worker", "index": index}}
    return answer


def test_pod_tf_config_model_answer_passes_as_dict_or_json():
    fb = check.pod_tf_config(model_pod_tf_config)
    assert fb.ok, fb.message
    assert check.pod_tf_config(lambda *a: json.dumps(model_pod_tf_config(*a))).ok


def test_pod_tf_config_accepts_the_optional_environment_key_and_refuses_others():
    def with_environment(job, service, n_workers, index, port):
        hosts = [f"{job}-{i}.{service}:{port}" for i in range(n_workers)]
        return {"cluster": {"worker": hosts}, "task": {"type": "worker", "index": index}, "environment": "cloud"}

    assert check.pod_tf_config(with_environment).ok

    def with_hosts_too(job, service, n_workers, index, port):
        out = with_environment(job, service, n_workers, index, port)
        return {**out, "hosts": out["cluster"]["worker"]}

    fb = check.pod_tf_config(with_hosts_too)
    assert not fb.ok and "'environment' and 'rpc_layer' may be added, nothing else" in fb.message, fb.message


def test_pod_tf_config_written_other_ways_passes():
    def with_a_loop(job, service, n_workers, index, port):
        hosts = []
        for i in range(n_workers):
            hosts.append("%s-%d.%s:%d" % (job, i, service, port))  # noqa: UP031 - another way to write it
        return {"task": {"index": index, "type": "worker"}, "cluster": {"worker": hosts}}

    def with_a_tuple(job, service, n_workers, index, port):  # json.dumps writes a tuple as a list
        return {"cluster": {"worker": tuple(f"{job}-{i}.{service}:{port}" for i in range(n_workers))},
                "task": {"type": "worker", "index": int(str(index))}}

    for answer in (with_a_loop, with_a_tuple):
        fb = check.pod_tf_config(answer)
        assert fb.ok, fb.message


@pytest.mark.parametrize("answer, hint", [
    (..., "Not answered yet"),
    ({"cluster": {"worker": ["tf-train-0.tf-train:2222"]}}, "Answer with a function"),
    (lambda *a: None, "returns None"),
    (lambda *a: model_pod_tf_config("tf-train", "tf-train", 2, 0, 2222), "whatever the job"),  # a constant
    (lambda *a: "TF_CONFIG", "not JSON"),
    (lambda j, s, n, i, p: {"worker": [j] * n}, "two keys"),
    (hosts_of(lambda j, s, i, p: f"127.0.0.1:{p + i}"), "own loopback"),
    (hosts_of(lambda j, s, i, p: f"{j}-{i}:{p}"), "does not resolve"),
    (hosts_of(lambda j, s, i, p: f"{j}-{i}.{s}"), "needs its port"),
    (hosts_of(lambda j, s, i, p: f"{j}-{i + 1}.{s}:{p}"), "start at 0"),
    (hosts_of(lambda j, s, i, p: f"{j}-{i}.{s}:2222"), "the port you were given"),
    (lambda j, s, n, i, p: {"cluster": {"worker": [f"{j}-{i}.{s}:{p}"]}, "task": {"type": "worker", "index": i}},
     "The cluster lists every worker"),
    (lambda j, s, n, i, p: {"cluster": {"worker": [f"{j}-{k}.{s}:{p}" for k in range(2)]},
                            "task": {"type": "worker", "index": i}}, "use n_workers"),
    (lambda j, s, n, i, p: {"cluster": {"worker": [f"{j}-{k}.{s}:{p}" for k in reversed(range(n))]},
                            "task": {"type": "worker", "index": i}}, "index order"),
    (lambda j, s, n, i, p: {**model_pod_tf_config(j, s, n, i, p), "task": {"type": "worker", "index": str(i)}},
     "int(...)"),
    (lambda j, s, n, i, p: {**model_pod_tf_config(j, s, n, i, p), "task": {"type": "worker", "index": i + 1}},
     "counted from 0"),
    (lambda j, s, n, i, p: {**model_pod_tf_config(j, s, n, i, p), "task": {"type": "chief", "index": i}},
     "'type' is 'worker'"),
    (lambda j, s, n, i, p: {"cluster": {"chief": [f"{j}-0.{s}:{p}"]}, "task": {"type": "worker", "index": i}},
     "every pod here is a worker"),
    (lambda *a: 1 / 0, "raised ZeroDivisionError"),
    (hosts_of(lambda j, s, i, p: f"{j}-{i}.{s}.default.svc.cluster.local:{p}"), "resolves only in the namespace"),
    (lambda j, s, n, i, p: {**model_pod_tf_config(j, s, n, i, p), "task": {"type": "worker", "index": float(i)}},
     "a float"),
    (lambda j, s, n, i, p: {**model_pod_tf_config(j, s, n, i, p), "task": {"type": "worker", "index": i == 1}},
     "a bool"),
    (lambda j, s, n, i, p: {**model_pod_tf_config(j, s, n, i, p), "task": {"type": "worker", "index": i,
                                                                            "trial": 0}}, "this pod's own"),
])
def test_pod_tf_config_refuses_constants_and_mistakes_with_a_hint(answer, hint):
    fb = check.pod_tf_config(answer)
    assert not fb.ok
    assert hint in fb.message, fb.message


# --------------------------------------------------------------------------- exercise 3: dangling_claims
def model_dangling_claims(docs):
    declared = {d["metadata"]["name"] for d in docs if d["kind"] == "PersistentVolumeClaim"}
    pods = [d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Job"]
    pods += [r["template"]["spec"] for d in docs if d["kind"] == "TFJob" for r in d["spec"]["tfReplicaSpecs"].values()]
    mounted = {v["persistentVolumeClaim"]["claimName"] for p in pods for v in p.get("volumes", [])
               if "persistentVolumeClaim" in v}
    return sorted(mounted - declared)


def _pods(doc):
    if doc["kind"] == "Job":
        return [doc["spec"]["template"]["spec"]]
    if doc["kind"] == "TFJob":
        return [r["template"]["spec"] for r in doc["spec"]["tfReplicaSpecs"].values()]
    return []


def test_dangling_claims_model_answer_passes():
    fb = check.dangling_claims(model_dangling_claims)
    assert fb.ok, fb.message


def test_dangling_claims_written_other_ways_passes():
    def with_loops(docs):
        declared, found = [], []
        for doc in docs:
            if doc["kind"] == "PersistentVolumeClaim":
                declared.append(doc["metadata"]["name"])
        for doc in docs:
            for pod in _pods(doc):
                for volume in pod.get("volumes", []):
                    claim = volume.get("persistentVolumeClaim", {}).get("claimName")
                    if claim and claim not in declared and claim not in found:
                        found.append(claim)
        return sorted(found)

    def from_the_helper(docs):  # the course's own cross-check, read back
        import re

        from helpers import manifests
        errors = manifests.consistency_errors(docs)
        return sorted({m for e in errors for m in re.findall(r"mounts claim '([^']+)', which is dangling", e)})

    for answer in (with_loops, from_the_helper):
        fb = check.dangling_claims(answer)
        assert fb.ok, fb.message


def _only_jobs(docs):
    return model_dangling_claims([d for d in docs if d["kind"] != "TFJob"])


def _volume_names(docs):
    declared = {d["metadata"]["name"] for d in docs if d["kind"] == "PersistentVolumeClaim"}
    return sorted({v["name"] for d in docs for p in _pods(d) for v in p.get("volumes", [])
                   if "persistentVolumeClaim" in v} - declared)


def _every_volume(docs):
    declared = {d["metadata"]["name"] for d in docs if d["kind"] == "PersistentVolumeClaim"}
    return sorted({v.get("persistentVolumeClaim", {}).get("claimName", v["name"]) for d in docs for p in _pods(d)
                   for v in p.get("volumes", [])} - declared)


def _declared_ones(docs):
    declared = {d["metadata"]["name"] for d in docs if d["kind"] == "PersistentVolumeClaim"}
    return sorted(declared & {v["persistentVolumeClaim"]["claimName"] for d in docs for p in _pods(d)
                              for v in p.get("volumes", []) if "persistentVolumeClaim" in v})


def _claims_of(pods, declared):
    return sorted({v["persistentVolumeClaim"]["claimName"] for p in pods for v in p.get("volumes", [])
                   if "persistentVolumeClaim" in v} - set(declared))


def _declared_all(docs):
    return {d["metadata"]["name"] for d in docs if d["kind"] == "PersistentVolumeClaim"}


def _worker_only(docs):  # reads tfReplicaSpecs["Worker"] only
    pods = [d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Job"]
    pods += [d["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"] for d in docs if d["kind"] == "TFJob"]
    return _claims_of(pods, _declared_all(docs))


def _first_type_only(docs):  # the first replica type of each TFJob
    pods = [d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Job"]
    pods += [next(iter(d["spec"]["tfReplicaSpecs"].values()))["template"]["spec"] for d in docs if d["kind"] == "TFJob"]
    return _claims_of(pods, _declared_all(docs))


def _first_claim_next(docs):  # the first PersistentVolumeClaim taken as the only one declared
    first = next((d["metadata"]["name"] for d in docs if d["kind"] == "PersistentVolumeClaim"), None)
    return _claims_of([p for d in docs for p in _pods(d)], [first])


def _first_claim_next_bare(docs):  # the same with next(...) and no default: StopIteration on a file without claims
    first = next(d["metadata"]["name"] for d in docs if d["kind"] == "PersistentVolumeClaim")
    return _claims_of([p for d in docs for p in _pods(d)], [first])


def _first_doc(docs):  # docs[0] taken as the declared claim
    return _claims_of([p for d in docs for p in _pods(d)], [docs[0]["metadata"]["name"]])


def _everything_else_is_a_job(docs):  # every document but claims and TFJobs read as a Job: a Service has no template
    pods = [d["spec"]["template"]["spec"] for d in docs if d["kind"] not in ("PersistentVolumeClaim", "TFJob")]
    pods += [r["template"]["spec"] for d in docs if d["kind"] == "TFJob" for r in d["spec"]["tfReplicaSpecs"].values()]
    return _claims_of(pods, _declared_all(docs))


def _prefix_match(docs):  # a claim counts as declared when a declared name starts with it
    declared = _declared_all(docs)
    mounted = _claims_of([p for d in docs for p in _pods(d)], [])
    return [c for c in mounted if not any(d.startswith(c) for d in declared)]


def _prefix_match_other_way(docs):  # ... or when it starts with a declared name
    declared = _declared_all(docs)
    mounted = _claims_of([p for d in docs for p in _pods(d)], [])
    return [c for c in mounted if not any(c.startswith(d) for d in declared)]


def _volumes_without_get(docs):  # pod["volumes"]: a pod that mounts nothing may have no such key
    pods = [p for d in docs for p in _pods(d)]
    return sorted({v["persistentVolumeClaim"]["claimName"] for p in pods for v in p["volumes"]
                   if "persistentVolumeClaim" in v} - _declared_all(docs))


@pytest.mark.parametrize("answer, hint", [
    (_worker_only, "You read tfReplicaSpecs['Worker'] only"),
    (_first_type_only, "the first replica type of a TFJob only"),
    (_first_claim_next, "You took the first PersistentVolumeClaim as the only one declared"),
    (_first_doc, "You took the first PersistentVolumeClaim as the only one declared"),
    (_first_claim_next_bare, "next(...) found no PersistentVolumeClaim"),
    (_everything_else_is_a_job, "a Service (like any other kind) has no spec.template"),
    (_prefix_match, "Your names match by their beginning"),
    (_prefix_match_other_way, "Your names match by their beginning"),
    (_volumes_without_get, "pod.get('volumes', [])"),
])
def test_dangling_claims_names_each_reading_mistake(answer, hint):
    """Each of these passes the first files; the files with two claims, a chief, a Service, a pod without
    volumes and names that start alike refuse it, with a hint naming what it did."""
    fb = check.dangling_claims(answer)
    assert not fb.ok
    assert hint in fb.message, fb.message


def test_dangling_claims_files_cover_services_chiefs_and_pods_without_volumes():
    kinds = {d["kind"] for _, docs, _ in check.FILES for d in docs}
    assert "Service" in kinds
    assert any("volumes" not in d["spec"]["template"]["spec"] for _, docs, _ in check.FILES for d in docs
               if d["kind"] == "Job")


@pytest.mark.parametrize("answer, hint", [
    (..., "Not answered yet"),
    (["tf-train-checkpoints"], "Answer with a function"),
    (lambda docs: None, "returns None"),
    (lambda docs: [], "not ['ckpt']"),  # a constant: right on the complete files only
    (_only_jobs, "You looked at Jobs only"),  # the old cross-check's blind spot
    (lambda docs: model_dangling_claims(docs) if any(d["kind"] == "PersistentVolumeClaim" for d in docs) else [],
     "the very gap the old cross-check had"),  # the old `claims and ...` condition
    (_volume_names, "Those are the volumes' names"),
    (_every_volume, "dshm is an emptyDir"),
    (_declared_ones, "Those are the claims the file does declare"),
    (lambda docs: set(model_dangling_claims(docs)), "return a list, sorted"),
    (lambda docs: tuple(model_dangling_claims(docs)), "return a list, sorted"),
    (lambda docs: sorted(model_dangling_claims(docs), reverse=True), "a claim out of order"),
    (lambda docs: [c for d in docs for p in _pods(d) for v in p.get("volumes", []) if "persistentVolumeClaim" in v
                   for c in [v["persistentVolumeClaim"]["claimName"]]
                   if c not in {x["metadata"]["name"] for x in docs if x["kind"] == "PersistentVolumeClaim"}],
     "a claim twice"),
    (lambda docs: len(model_dangling_claims(docs)), "return a list of claim names"),
    (lambda docs: docs[0]["spec"]["template"], "raised KeyError"),
])
def test_dangling_claims_refuses_constants_and_mistakes_with_a_hint(answer, hint):
    fb = check.dangling_claims(answer)
    assert not fb.ok
    assert hint in fb.message, fb.message
