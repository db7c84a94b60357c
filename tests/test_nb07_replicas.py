"""Notebook 07 with another N_REPLICAS: too many are refused before TensorFlow starts.

Four replicas training is make test's pass 1 of 07 (tests/notebook_session.py VARIANTS)."""

import os

import nbrun
import pytest

from helpers import distribute

NAME = "07_multi_gpu_mirrored_strategy.ipynb"


@pytest.mark.notebook
def test_notebook_07_refuses_too_many_replicas_before_tensorflow_starts(tmp_path, monkeypatch):
    import nbformat
    import papermill as pm

    too_many = distribute.replica_limit(distribute.visible_gpu_count(), os.cpu_count() or 1) + 1
    if too_many > 64:
        pytest.skip("this machine holds 64 replicas, the most the parameter rule allows")
    monkeypatch.delenv("COURSE_SMOKE", raising=False)
    monkeypatch.setenv("COURSE_SCRATCH", str(tmp_path / "scratch"))
    out = tmp_path / NAME
    with pytest.raises(pm.PapermillExecutionError) as err:
        pm.execute_notebook(str(nbrun.NOTEBOOKS / NAME), str(out), parameters={"SMOKE": True, "N_REPLICAS": too_many},
                            cwd=str(tmp_path), kernel_name="python3", progress_bar=False)
    assert err.value.ename == "ValueError" and f"N_REPLICAS={too_many} is not allowed" in err.value.evalue
    executed = nbformat.read(out, as_version=4)
    text = "\n".join(o.get("text", "") for c in executed.cells for o in c.get("outputs", []))
    assert "Hardware:" not in text, "helpers.setup ran (and started TensorFlow) before the refusal"


# --------------------------------------------------------------------------- 07's device cells, on fake machines
def _cell(cell_id: str) -> str:
    import json

    nb = json.loads((nbrun.NOTEBOOKS / NAME).read_text())
    return "".join(next(c for c in nb["cells"] if c.get("id") == cell_id)["source"])


def _pick_devices(n_gpus: int, n_replicas: int, capsys) -> tuple[dict, str]:
    """helpers.setup's device step, then 07's "N devices on any machine" cell, on a fake machine."""
    from types import SimpleNamespace

    import fakes

    import helpers
    from helpers import session

    tf = fakes.FakeTF(n_gpus=n_gpus)
    assert session.configure_devices(tf, logical_devices=n_replicas, nvml=fakes.FakeNVML()) == []
    namespace = {"tf": tf, "hw": SimpleNamespace(gpu_count=n_gpus), "N_REPLICAS": n_replicas, "helpers": helpers,
                 "results": {}}
    exec(_cell("cell-08"), namespace)
    return namespace, capsys.readouterr().out


def test_notebook_07_uses_two_of_eight_gpus_and_says_so(capsys):
    namespace, out = _pick_devices(8, 2, capsys)
    assert namespace["devices"] == ["/device:GPU:0", "/device:GPU:1"] and namespace["n"] == 2
    assert namespace["results"]["devices_available"] == 8
    assert "2 replicas on 2 GPUs, one replica each" in out
    assert "This kernel has 8 GPUs; the replicas use the first 2" in out


def test_notebook_07_splits_one_gpu_into_small_fixed_parts(capsys):
    namespace, out = _pick_devices(1, 2, capsys)
    assert namespace["devices"] == ["/device:GPU:0", "/device:GPU:1"]
    assert "/physical_device:GPU:0: 2 logical device(s), memory limits [256, 256] MiB" in out


def test_every_mirrored_strategy_in_notebook_07_names_its_devices():
    """MirroredStrategy() without devices takes every GPU: 8 replicas on an 8-GPU server asked for 2. The
    notebook's `mirrored(devices, ...)` passes its devices on."""
    import ast
    import json

    nb = json.loads((nbrun.NOTEBOOKS / NAME).read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"
                     and not "".join(c["source"]).startswith("%%"))
    calls = [n for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Call)
             and (ast.unparse(n.func).endswith("MirroredStrategy") or ast.unparse(n.func) == "mirrored")]
    assert len(calls) >= 2, "07 creates its strategies with tf.distribute.MirroredStrategy (through `mirrored`)"
    for call in calls:
        assert call.args or any(k.arg == "devices" for k in call.keywords), ast.unparse(call)


def test_every_compile_in_notebooks_02_and_07_turns_xla_off_explicitly():
    import ast
    import json

    for name in ("02_gpu_detection_and_placement.ipynb", NAME):
        nb = json.loads((nbrun.NOTEBOOKS / name).read_text())
        code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"
                         and not "".join(c["source"]).startswith("%%"))
        calls = [n for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Call)
                 and isinstance(n.func, ast.Attribute) and n.func.attr == "compile"]
        assert calls, name
        for call in calls:
            jit = [k.value for k in call.keywords if k.arg == "jit_compile"]
            assert jit and isinstance(jit[0], ast.Constant) and jit[0].value is False, (name, ast.unparse(call))


NCCL_ON_CPU = ("No OpKernel was registered to support Op 'NcclAllReduce' used by {{node NcclAllReduce}} with these "
               "attrs: [reduction=\"sum\", shared_name=\"c0\", T=DT_FLOAT, num_devices=2]")  # as TensorFlow 2.21 says


def _choices(kind: str, n: int, gpu_count: int) -> dict:
    """07's cross_device_ops cell on a fake machine: which choices it runs, and what it records for the others."""
    from types import SimpleNamespace

    class OpError(Exception):
        pass

    class Ops:
        def __init__(self, *args, **kwargs):
            pass

    ops = {name: type(name, (Ops,), {}) for name in ("HierarchicalCopyAllReduce", "ReductionToOneDevice",
                                                      "NcclAllReduce")}
    tf = SimpleNamespace(distribute=SimpleNamespace(
        MirroredStrategy=lambda devices, cross_device_ops=None: SimpleNamespace(ops=cross_device_ops), **ops),
        errors=SimpleNamespace(OpError=OpError))

    def time_all_reduce(strategy, shapes, repeats):  # NCCL on CPUs fails as TensorFlow's op does: no CPU kernel
        if kind == "CPU" and type(strategy.ops).__name__ == "NcclAllReduce":
            raise OpError(NCCL_ON_CPU)
        return SimpleNamespace(median=0.001)

    namespace = {"tf": tf, "kind": kind, "n": n, "hw": SimpleNamespace(gpu_count=gpu_count),
                 "devices": [f"/device:{kind}:{i}" for i in range(n)], "time_all_reduce": time_all_reduce,
                 "mirrored": tf.distribute.MirroredStrategy,
                 "grad_shapes": [[784, 256]], "repeats": 2, "model_grads": "the model's gradients",
                 "reduce_s": {"the model's gradients": 0.002}}
    exec(_cell("allreduce-5"), namespace)
    return namespace["choice_s"]


def test_notebook_07_runs_nccl_only_where_every_replica_has_its_own_gpu():
    own = _choices("GPU", 2, gpu_count=2)
    assert own["NcclAllReduce"] == 0.001 and own["default (CollectiveAllReduce)"] == 0.002  # reused, not retimed
    split = _choices("GPU", 2, gpu_count=1)
    assert split["NcclAllReduce"] == "not run: logical GPUs of one card (NCCL refuses two ranks on one GPU)"
    assert split["ReductionToOneDevice"] == 0.001 and split["HierarchicalCopyAllReduce"] == 0.001
    cpu = _choices("CPU", 2, gpu_count=0)
    nccl = cpu["NcclAllReduce"]
    assert nccl.startswith("failed: OpError: No OpKernel was registered to support Op 'NcclAllReduce'"), nccl
    kept = nccl.removeprefix("failed: OpError: ").removesuffix(" ...")
    assert NCCL_ON_CPU.startswith(kept) and NCCL_ON_CPU[len(kept)] == " ", "cut between words"
    assert cpu["default (CollectiveAllReduce)"] == 0.002


def test_each_strategy_of_notebook_07_gets_collective_numbers_of_its_own():
    """Strategies made one after another in one process (07 makes several, and a learner may run it twice in one
    kernel) must not share collective numbers: two all-reduces of different shapes under one number fail with
    "Shape mismatch in the collective instance". `mirrored` raises the key base before each strategy."""
    import json

    import tensorflow as tf

    nb = json.loads((nbrun.NOTEBOOKS / NAME).read_text())
    source = next("".join(c["source"]) for c in nb["cells"] if "".join(c["source"]).startswith("def mirrored("))
    namespace = {"tf": tf}
    exec(source, namespace)
    first = namespace["mirrored"](["/cpu:0"])
    second = namespace["mirrored"](["/cpu:0"])
    keys = [s.extended._collective_keys.get_group_key(["/cpu:0"]) for s in (first, second)]
    assert keys[1] - keys[0] >= 100_000, keys
