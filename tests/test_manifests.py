"""helpers.manifests: the Kubernetes manifests, each complete on its own, the validators that must reject
broken copies (a dangling volume claim, resources that do not add up), the Dockerfile check."""

from __future__ import annotations

import copy

import pytest

from helpers import data, manifests

# --------------------------------------------------------------------------- manifests and their validators

IMAGE = "registry.example.com/tf-worker:2.21.0"


@pytest.fixture(scope="module")
def crd():
    return manifests.load_tfjob_crd()


@pytest.fixture
def job_docs():
    return manifests.indexed_job("tf-train", IMAGE, 3, args=["--epochs", "5"])


@pytest.fixture
def tf_docs():
    return manifests.tfjob("tf-train", IMAGE, 3, args=["--epochs", "5"])


@pytest.fixture
def tf_job(tf_docs):
    return tf_docs[1]


def test_generated_manifests_are_valid_on_every_bundled_kubernetes(job_docs, tf_docs, crd):
    assert manifests.kubernetes_versions()[0] == "1.25" and manifests.kubernetes_versions()[-1] == "1.37"
    report = manifests.manifest_errors(job_docs, crd, gpus=1)  # every version
    assert report == {"persistentvolumeclaim/tf-train-checkpoints": [], "service/tf-train": [], "job/tf-train": []}
    report = manifests.manifest_errors(tf_docs, crd, gpus=1)
    assert report == {"persistentvolumeclaim/tf-train-checkpoints": [], "tfjob/tf-train": []}
    hosts = next(e["value"] for e in job_docs[2]["spec"]["template"]["spec"]["containers"][0]["env"]
                 if e["name"] == "WORKER_HOSTS")
    assert hosts == "tf-train-0.tf-train:2222,tf-train-1.tf-train:2222,tf-train-2.tf-train:2222"
    assert "&id" not in manifests.to_yaml(job_docs)


def test_kubernetes_validate_strict_rejects_an_unknown_field_that_lenient_lets_pass(job_docs):
    job = copy.deepcopy(job_docs[2])
    job["spec"]["completionsMode"] = job["spec"].pop("completionMode")
    assert manifests.kubernetes_errors(job, ["1.25", "1.37"], strict=False) == []
    errors = manifests.kubernetes_errors(job, ["1.25", "1.37"], strict=True)
    assert errors == ["Kubernetes 1.25 to 1.37: spec: Additional properties are not allowed ('completionsMode' was "
                      "unexpected)"]


def test_kubernetes_validate_rejects_a_wrong_type_even_when_lenient(job_docs):
    job = copy.deepcopy(job_docs[2])
    job["spec"]["parallelism"] = "two"
    assert any("'two' is not of type 'integer'" in e for e in manifests.kubernetes_errors(job, ["1.30"], strict=False))


def test_kubernetes_validate_has_no_schema_for_tfjob_and_says_so(tf_job):
    assert manifests.kubernetes_errors(tf_job, ["1.37"]) == [
        "no schema: Couldn't find schema for kind TFJob with api version kubeflow.org/v1 for kubernetes version 1.37"]


def test_the_crd_schema_made_strict_rejects_unknown_fields_the_shipped_one_lets_pass(tf_job, crd):
    broken = copy.deepcopy(tf_job)
    broken["spec"]["tfReplicaSpecs"]["Worker"]["replica"] = broken["spec"]["tfReplicaSpecs"]["Worker"].pop("replicas")
    schema = manifests.crd_schema(crd)
    assert manifests.schema_errors(broken, schema) == []
    assert manifests.schema_errors(broken, manifests.strict_schema(schema)) == [
        "spec.tfReplicaSpecs.Worker: Additional properties are not allowed ('replica' was unexpected)"]
    deep = copy.deepcopy(tf_job)  # an unknown field deep in the pod template
    deep["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["imagePullPolice"] = "Always"
    assert any("imagePullPolice" in e for e in manifests.schema_errors(deep, manifests.strict_schema(schema)))
    typed = copy.deepcopy(tf_job)
    typed["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = "2"
    assert any("is not of type 'integer'" in e for e in manifests.schema_errors(typed, schema))


def test_strict_schema_copies_and_respects_preserve_unknown_fields():
    schema = {"type": "object", "properties": {
        "properties": {"type": "object", "properties": {"a": {"type": "string"}}},  # a field named "properties"
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {"b": {}}},
        "map": {"type": "object", "additionalProperties": {"type": "object", "properties": {"c": {}}}},
        "list": {"type": "array", "items": {"type": "object", "properties": {"d": {}}}},
    }}
    before = copy.deepcopy(schema)
    strict = manifests.strict_schema(schema)
    assert schema == before
    assert strict["additionalProperties"] is False
    assert strict["properties"]["properties"]["additionalProperties"] is False
    assert "additionalProperties" not in strict["properties"]["free"]
    assert strict["properties"]["map"]["additionalProperties"]["additionalProperties"] is False
    assert strict["properties"]["list"]["items"]["additionalProperties"] is False


def test_a_bad_enum_value_passes_both_schemas_and_the_cross_checks_catch_it(job_docs, crd):
    bad = copy.deepcopy(job_docs)
    bad[2]["spec"]["completionMode"] = "Indexd"
    found = manifests.all_checks(bad, crd, ["1.25", "1.37"])
    assert found["lenient schema"] == [] and found["strict schema"] == []
    assert found["cross-checks"] == ["Job tf-train: completionMode is 'Indexd', not 'Indexed': the pods get no "
                                     "JOB_COMPLETION_INDEX, so no worker knows its place in TF_CONFIG."]


@pytest.mark.parametrize("break_it, message", [
    (lambda d: d[1]["spec"].update(clusterIP="10.0.0.1"), "headless"),
    (lambda d: d[1]["spec"].update(selector={"app": "other"}), "does not select the Job's pods"),
    (lambda d: d[1]["spec"]["ports"][0].update(port=3333, targetPort=3333), "the workers listen on [2222]"),
    (lambda d: d[2]["spec"].update(parallelism=2), "completions 3 != parallelism 2"),
    (lambda d: d[2]["spec"]["template"]["spec"].update(subdomain="tf"), "is not the name of a Service"),
    (lambda d: d[2]["spec"]["template"]["spec"].update(restartPolicy="Always"), "OnFailure or Never"),
    (lambda d: d[2]["spec"]["template"]["spec"]["containers"][0]["env"][0].update(
        value="tf-train-1.tf-train:2222,tf-train-0.tf-train:2222,tf-train-2.tf-train:2222"), "in index order"),
    (lambda d: d[2]["spec"]["template"]["spec"]["containers"][0]["env"][0].update(value="a:1,b:1"),
     "lists 2 hosts for 3 completions"),
    (lambda d: d[2]["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"].update(claimName="x"),
     "which is dangling"),
    (lambda d: d[2]["spec"]["template"]["spec"].update(restartPolicy="OnFailure"), "podFailurePolicy needs"),
    (lambda d: d[2]["spec"].pop("activeDeadlineSeconds"), "no activeDeadlineSeconds"),
])
def test_cross_checks_catch_parts_that_disagree(job_docs, break_it, message):
    assert manifests.consistency_errors(job_docs) == []
    break_it(job_docs)
    errors = manifests.consistency_errors(job_docs)
    assert any(message in e for e in errors), errors


@pytest.mark.parametrize("break_it, message", [
    (lambda t: t["spec"]["tfReplicaSpecs"].update(worker=t["spec"]["tfReplicaSpecs"].pop("Worker")),
     "replica type 'worker' is unknown"),
    (lambda t: t["spec"]["tfReplicaSpecs"]["Worker"].update(restartPolicy="Sometimes"), "'Sometimes' is unknown"),
    (lambda t: t["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0].update(name="tf"),
     "container named 'tensorflow'"),
])
def test_tfjob_cross_checks(tf_job, crd, break_it, message):
    break_it(tf_job)
    assert manifests.all_checks([tf_job], crd)["strict schema"] == []  # the schema does not see these
    assert any(message in e for e in manifests.consistency_errors([tf_job]))


def test_manifest_generators_refuse_bad_arguments():
    for kwargs in ({"name": "TF_train"}, {"n_workers": 0}, {"port": 70000}, {"gpus": -1}):
        args = {"name": "tf-train", "image": IMAGE, "n_workers": 2, **kwargs}
        with pytest.raises(ValueError):
            manifests.indexed_job(**args)
        with pytest.raises(ValueError):
            manifests.tfjob(**args)
    for kwargs in ({"cpus": 0}, {"cpus": "two"}, {"memory": "16 GB"}, {"shm": "32Gi"}, {"deadline_s": 10},
                   {"deadline_s": 3600.0}, {"gpus": True}):
        with pytest.raises(ValueError, match=next(iter(kwargs))):
            manifests.indexed_job("tf-train", IMAGE, 2, **kwargs)
    pod = manifests.tfjob("x", IMAGE, 2, gpus=0)[1]["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]
    assert "nvidia.com/gpu" not in pod["containers"][0]["resources"]["limits"] and "tolerations" not in pod
    assert manifests.consistency_errors(manifests.tfjob("x", IMAGE, 2, gpus=0)) == []


# --------------------------------------------------------------------------- each file on its own

def test_a_file_that_mounts_a_claim_it_does_not_declare_is_caught(job_docs, tf_docs, crd):
    """The claim is declared in the other file only: applied alone, the pods would stay Pending.
    The old check looked at both files together, and not at a TFJob's volumes at all."""
    assert manifests.consistency_errors(tf_docs) == [] and manifests.consistency_errors(job_docs) == []
    for alone in ([tf_docs[1]], job_docs[1:]):
        errors = manifests.consistency_errors(alone)
        assert len(errors) == 1 and "claim 'tf-train-checkpoints', which is dangling" in errors[0], errors
        found = manifests.all_checks(alone, crd, ["1.37"])
        assert found["lenient schema"] == found["strict schema"] == [], found  # no schema sees it
    assert manifests.consistency_errors(job_docs[1:] + tf_docs[:1]) == []  # declared again: complete


# --------------------------------------------------------------------------- resources, tolerations, /dev/shm

def _pod(docs):
    return docs[2]["spec"]["template"]["spec"] if len(docs) == 3 else docs[1]["spec"]["tfReplicaSpecs"]["Worker"][
        "template"]["spec"]


@pytest.mark.parametrize("which", ["job", "tfjob"])
@pytest.mark.parametrize("break_it, message", [
    (lambda p: p["containers"][0]["resources"]["limits"].update(memory="8Gi"), "is below its request 16Gi"),
    (lambda p: p["containers"][0]["resources"]["limits"].update({"nvidia.com/gpu": 2}), "limit is 2, not the 1"),
    (lambda p: p["containers"][0]["resources"]["limits"].pop("nvidia.com/gpu"), "limit is 0, not the 1"),
    (lambda p: p["containers"][0]["resources"]["requests"].update({"nvidia.com/gpu": 2}), "request 2 != limit 1"),
    (lambda p: p.pop("tolerations"), "no toleration for the taint nvidia.com/gpu:NoSchedule"),
    (lambda p: p["tolerations"][0].update(key="gpu"), "no toleration"),
    (lambda p: p["containers"][0]["volumeMounts"].pop(), "no memory-backed /dev/shm"),
    (lambda p: p["volumes"][1]["emptyDir"].pop("medium"), "no memory-backed /dev/shm"),
    (lambda p: p["volumes"][1]["emptyDir"].pop("sizeLimit"), "no memory-backed /dev/shm"),
    (lambda p: p["volumes"][1]["emptyDir"].update(sizeLimit="17Gi"), "exceeds the memory limit 16Gi"),
    (lambda p: p["containers"][0]["resources"]["limits"].update(memory="16 GB"), "memory: value='16 GB'"),
])
def test_resources_that_do_not_add_up_are_caught(job_docs, tf_docs, crd, which, break_it, message):
    docs = job_docs if which == "job" else tf_docs
    assert manifests.consistency_errors(docs, gpus=1) == []
    break_it(_pod(docs))
    errors = manifests.consistency_errors(docs, gpus=1)
    assert any(message in e for e in errors), errors


def test_nccl_without_a_gpu_and_a_tfjob_without_a_deadline_are_caught(tf_docs):
    docs = manifests.indexed_job("tf-train", IMAGE, 2, args=["--collective", "NCCL"], gpus=0)
    assert any("NCCL needs a GPU per worker" in e for e in manifests.consistency_errors(docs))
    tf_docs[1]["spec"]["runPolicy"].pop("activeDeadlineSeconds")
    assert any("TFJob tf-train: no activeDeadlineSeconds" in e for e in manifests.consistency_errors(tf_docs))


def test_the_job_fails_at_once_on_a_usage_error_and_counts_a_lost_peer(job_docs):
    rules = job_docs[2]["spec"]["podFailurePolicy"]["rules"]
    assert [(r["action"], r.get("onExitCodes", {}).get("values")) for r in rules] == [
        ("FailJob", [manifests.USAGE_EXIT]), ("Count", [manifests.PEER_LOST_EXIT]), ("Ignore", None)]
    assert job_docs[2]["spec"]["template"]["spec"]["restartPolicy"] == "Never"


def test_quantity_reads_kubernetes_units():
    assert manifests.quantity("250m") == 0.25 and manifests.quantity("2Ki") == 2048 and manifests.quantity("1G") == 1e9
    for bad in ("1 Gi", "Gi", "1gi", True, "-1"):
        with pytest.raises(ValueError, match="value="):
            manifests.quantity(bad)


def test_the_shipped_crd_is_the_checked_upstream_file(tmp_path):
    path = data.DATA_DIR / manifests.CRD_FILE
    assert data.sha256(path) == "1fea6d2d9d3fec4697db322d4490be67b0d616478f42566e4c48ae865130a8c8"
    crd = manifests.load_tfjob_crd()
    assert crd["metadata"]["name"] == "tfjobs.kubeflow.org" and crd["spec"]["group"] == "kubeflow.org"
    copy_ = tmp_path / manifests.CRD_FILE
    copy_.write_text(path.read_text().replace("TFJob represents", "TFJob is"))
    with pytest.raises(data.DataIntegrityError, match="does not match its sha256"):
        manifests.load_tfjob_crd(copy_)
    with pytest.raises(ValueError, match="version='v2'"):
        manifests.crd_schema(crd, "v2")


def test_caught_table_cuts_long_errors_at_its_width():
    table = manifests.caught_table({"a": {"lenient schema": [], "strict schema": ["x" * 300]}}, width=40)
    assert "a            passes          rejects" in table and table.splitlines()[-1].endswith("...")
    assert len(table.splitlines()[-1]) == 40


# --------------------------------------------------------------------------- Docker

def test_the_dockerfile_passes_its_check_with_its_build_context(tmp_path):
    text = manifests.dockerfile("2.21.0", keras_version="3.15.1")
    assert text.startswith("FROM tensorflow/tensorflow:2.21.0-gpu\n"
                           "RUN python -m pip install --no-cache-dir keras==3.15.1\n")
    assert manifests.dockerfile_problems(text, "2.21.0") == []
    problems = manifests.dockerfile_problems(text, "2.21.0", context=tmp_path)
    assert problems == [f"COPY worker.py: no such file in the build context {tmp_path}.",
                        f"COPY fashion_mnist_subset.npz: no such file in the build context {tmp_path}."]
    (tmp_path / "worker.py").write_text("")
    (tmp_path / "fashion_mnist_subset.npz").write_text("")
    assert manifests.dockerfile_problems(text, "2.21.0", context=tmp_path) == []
    with pytest.raises(ValueError, match="pinned"):
        manifests.dockerfile("latest")


RUNS = 'ENTRYPOINT ["python", "/app/worker.py"]\n'


@pytest.mark.parametrize("text, message", [
    ("FROM tensorflow/tensorflow:latest-gpu\n" + RUNS, "use tensorflow/tensorflow:2.21.0-gpu"),
    ("FROM tensorflow/tensorflow:2.20.0-gpu\n" + RUNS, "FROM 'tensorflow/tensorflow:2.20.0-gpu'"),
    ("FROM tensorflow/tensorflow:2.21.0\n" + RUNS, "GPU image"),
    ("FROM tensorflow/tensorflow:2.21.0-gpu\nRUN pip install tensorflow==2.21.0\nCMD [\"python\", \"worker.py\"]\n",
     "installing it again replaces them"),
    ("FROM tensorflow/tensorflow:2.21.0-gpu\nCMD python /app/worker.py\n", "use the exec form"),
    ("FROM tensorflow/tensorflow:2.21.0-gpu\nCMD [\"python\", \"train.py\"]\n", "No ENTRYPOINT or CMD runs worker.py"),
    ("FROM tensorflow/tensorflow:2.21.0-gpu\nCOPYY worker.py /app/\nCMD [\"python\", \"worker.py\"]\n",
     "COPYY: not a Dockerfile instruction"),
    ("RUN echo\nFROM tensorflow/tensorflow:2.21.0-gpu\nCMD [\"python\", \"worker.py\"]\n", "first instruction"),
])
def test_the_dockerfile_check_rejects_broken_copies(text, message):
    problems = manifests.dockerfile_problems(text, "2.21.0")
    assert any(message in p for p in problems), problems


def test_keras_pin_install_is_not_mistaken_for_tensorflow():
    text = "FROM tensorflow/tensorflow:2.21.0-gpu\nRUN pip install keras==3.15.1 tensorflow-datasets\n" \
           "CMD [\"python\", \"worker.py\"]\n"
    assert manifests.dockerfile_problems(text, "2.21.0") == []




def test_a_name_must_start_with_a_letter_as_a_service_name_does():
    """Kubernetes refuses a Service named '2workers' (a DNS-1035 label starts with a letter); the old pattern let
    it pass every check."""
    for bad in ("2workers", "-train", "train-"):
        with pytest.raises(ValueError, match="starting with a letter"):
            manifests.indexed_job(bad, IMAGE, 2)
    assert manifests.indexed_job("w2", IMAGE, 2)[1]["metadata"]["name"] == "w2"


@pytest.mark.parametrize("which", ["job", "tfjob"])
def test_a_mount_that_names_no_volume_of_its_pod_is_caught(job_docs, tf_docs, which):
    """The API server refuses such a pod (volumeMounts.name: Not found); the old checks passed it."""
    docs = job_docs if which == "job" else tf_docs
    assert manifests.consistency_errors(docs) == []
    _pod(docs)["containers"][0]["volumeMounts"][0]["name"] = "checkpoint"  # a typo of the volume's name
    errors = manifests.consistency_errors(docs)
    assert any("volumeMount 'checkpoint' names no volume of its pod" in e for e in errors), errors
