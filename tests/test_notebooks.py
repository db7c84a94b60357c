"""Notebook runs beside `make test`'s main one, and the claims modules' presence.

The main run of every notebook (its claims, twice in a row in one kernel, and nbval's recorded outputs,
all in one kernel) is collected from ``notebooks/`` by the plugin ``tests/notebook_session.py``. Here: the
probe of the GPU compile path that run takes (the variants it takes: CUDA hidden, oneDNN off, four replicas, are
its ``VARIANTS``), and the learner-size runs (``test_learner_runs``, ``make test-full``).
Each notebook's claims (``tests/claims/nbNN.py``) assert on the key results it writes to RESULTS_PATH.
"""

import importlib

import nbrun
import pytest

NOTEBOOKS = nbrun.present()


def claims_for(name: str):
    return importlib.import_module(f"claims.nb{name[:2]}")


GPU_PATH_PROBE = """
import os, json, keras, tensorflow as tf
def compiled(**kw):
    m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    m.compile(optimizer="sgd", loss="mse", **kw)
    return bool(m.jit_compile)
with tf.distribute.OneDeviceStrategy("/cpu:0").scope():
    under_strategy = compiled()
print(json.dumps({"auto": compiled(), "explicit_false": compiled(jit_compile=False), "strategy": under_strategy,
                  "marker": os.environ.get("COURSE_KERAS_JIT_AS_ON_GPU")}))
"""


@pytest.mark.notebook
@pytest.mark.parametrize("gpu_path", [True, False])
def test_the_gpu_compile_path_makes_keras_choose_xla_as_on_a_gpu(gpu_path, tmp_path):
    """Keras' "auto" is XLA on a GPU, off on this CPU: the claims run takes the GPU's choice."""
    import json

    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(GPU_PATH_PROBE)])
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("PYTEST_CURRENT_TEST", raising=False)
        for key, value in nbrun.kernel_environment(tmp_path, gpu_path=gpu_path).items():
            mp.setenv(key, value)
        client = NotebookClient(nb, kernel_name="python3", timeout=300, resources={"metadata": {"path": str(tmp_path)}})
        client.execute()
    found = json.loads(nb.cells[0].outputs[-1]["text"].strip().splitlines()[-1])
    assert found["auto"] is gpu_path, found
    assert found["explicit_false"] is False and found["strategy"] is False, found
    assert (found["marker"] == "1") is gpu_path


def test_every_notebook_has_claims():
    for name in NOTEBOOKS:
        assert hasattr(claims_for(name), "check"), f"tests/claims/nb{name[:2]}.py needs check(run)"


@pytest.mark.slow
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_learner_runs(name, tmp_path, monkeypatch):
    """Learner sizes (SMOKE False). Prints the wall time; the 120 s target is checked in benchmarks/."""
    monkeypatch.delenv("COURSE_SMOKE", raising=False)
    run = nbrun.run_notebook(name, tmp_path, smoke=False, timeout=1200)
    print(f"\n{name}: learner run {run.seconds:.1f} s")
    claims_for(name).check(run)
