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
def tf_job():
    return manifests.tfjob("tf-train", IMAGE, 3, args=["--epochs", "5"])


def test_generated_manifests_are_valid_on_every_bundled_kubernetes(job_docs, tf_job, crd):
    assert manifests.kubernetes_versions()[0] == "1.25" and manifests.kubernetes_versions()[-1] == "1.37"
    report = manifests.manifest_errors(job_docs + [tf_job], crd)  # every version
    assert report == {"persistentvolumeclaim/tf-train-checkpoints": [], "service/tf-train": [], "job/tf-train": [],
                      "tfjob/tf-train": []}
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
     "not declared here"),
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
    assert "resources" not in manifests.tfjob("x", IMAGE, 2, gpus=0)["spec"]["tfReplicaSpecs"]["Worker"]["template"][
        "spec"]["containers"][0]


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


