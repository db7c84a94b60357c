"""TensorFlow's C++ log stays off the page in a kernel; real warnings and errors still show."""

from __future__ import annotations

import pytest

from helpers import tflog

INFO = "I0000 00:00:1795491101.622107    6296 device_compiler.h:188] Compiled cluster using XLA!  This line is logged at most once for the lifetime of the process."  # noqa: E501
GPU_INFO = "I0000 00:00:1795491104.060142    6296 gpu_device.cc:2020] Created device /job:localhost/replica:0/task:0/device:GPU:0 with 13942 MB memory:  -> device: 0, name: Tesla T4, pci bus id: 0000:00:04.0, compute capability: 7.5"  # noqa: E501
OLD_STYLE_INFO = "2024-05-01 12:00:00.123456: I tensorflow/core/util/port.cc:113] oneDNN custom operations are on."
FACTORY = "E0000 00:00:1795491101.1 6296 cuda_dnn.cc:8310] Unable to register cuDNN factory: Attempting to register factory for plugin cuDNN when one has already been registered"  # noqa: E501
CUINIT = "E0000 00:00:1795491101.1 6296 cuda_executor.cc:1228] failed call to cuInit: INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)"  # noqa: E501
UNKNOWN_ERROR = "E0000 00:00:1795491101.1 6296 op_kernel.cc:1842] OP_REQUIRES failed at xla_ops.cc:580 : INVALID_ARGUMENT: Trying to access resource located in device CPU:1 from device CPU:0"  # noqa: E501
UNKNOWN_WARNING = "W0000 00:00:1795491101.1 6296 loop_optimizer.cc:933] Skipping loop optimization for Merge node"


@pytest.mark.parametrize("line", [INFO, GPU_INFO, OLD_STYLE_INFO, FACTORY, tflog._NOTICE, INFO + "\n"])
def test_info_lines_notices_and_benign_warnings_are_dropped(line):
    assert tflog.should_drop(line, environ={})


@pytest.mark.parametrize("line", [UNKNOWN_ERROR, UNKNOWN_WARNING, "F0000 00:00:1.1 1 x.cc:1] Check failed: fatal",
                                  "Segmentation fault", "", "Could not load dynamic library 'libcudart.so.12'"])
def test_warnings_errors_and_unprefixed_text_are_kept(line):
    assert not tflog.should_drop(line, environ={})


def test_cuinit_failure_is_dropped_only_when_gpus_are_hidden_on_purpose():
    assert tflog.should_drop(CUINIT, environ={"CUDA_VISIBLE_DEVICES": "-1"})
    assert tflog.should_drop(CUINIT, environ={"CUDA_VISIBLE_DEVICES": ""})
    assert not tflog.should_drop(CUINIT, environ={}), "a driver that fails with GPUs wanted is a real problem"
    assert not tflog.should_drop(CUINIT, environ={"CUDA_VISIBLE_DEVICES": "0"})


def test_continuation_lines_follow_their_message():
    f = tflog.LineFilter(environ={})
    dump = ["I0000 00:00:1.0 1 bfc_allocator.cc:1100] Stats:", "Limit:        15695151104", "InUse:  15695151104"]
    assert [f.drop(x) for x in dump] == [True, True, True]
    error = [UNKNOWN_ERROR, "\t [[{{node StatefulPartitionedCall}}]]"]
    assert [f.drop(x) for x in error] == [False, False], "the rest of a kept error is kept too"
    assert f.drop("") is False and f.drop("a line after a blank one") is False


def test_every_benign_pattern_has_a_reason_and_matches_a_real_message():
    samples = [FACTORY, "computation placer already registered. Please check linkage",
               "TF-TRT Warning: Could not find TensorRT", "Delay kernel timed out: measured time has sub-optimal accuracy",  # noqa: E501
               "ptxas warning : Registers are spilled to local memory in function 'loop_fusion'",
               "Allocator (GPU_0_bfc) ran out of memory trying to allocate 4.00GiB (rounded to 4294967296)",
               "Garbage collection: deallocate free memory regions (i.e., allocations) so that we can re-allocate"]
    for pattern, reason in tflog.BENIGN:
        assert reason and any(pattern.search(s) for s in samples), pattern.pattern


def test_outside_a_kernel_nothing_is_installed():
    assert tflog.keep_off_page() is False


KERNEL_CELL = r'''
import os, sys, time
os.write(2, ({info!r} + "\n").encode())
os.write(2, ({factory!r} + "\n").encode())
os.write(2, ({error!r} + "\n").encode())
os.write(2, b"partial line without newline")
time.sleep(0.3)
print("python stderr still shows", file=sys.stderr)
'''


@pytest.mark.notebook
def test_in_a_kernel_setup_keeps_info_off_the_page_and_shows_real_errors(tmp_path, monkeypatch):
    """Fails without the filter: the kernel forwards descriptor 2 to the page."""
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("COURSE_SCRATCH", str(tmp_path / "scratch"))
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "0")  # TensorFlow as chatty as a GPU run
    monkeypatch.delenv("PYTEST_CURRENT_TEST", raising=False)  # else ipykernel leaves descriptor 2 alone
    cells = [
        "import helpers\nhw = helpers.setup(SMOKE=True, SEED=0, RESULTS_PATH='')",
        "import tensorflow as tf\nf = tf.function(lambda x: tf.matmul(x, x) + 1, jit_compile=True)\n"
        "print(float(f(tf.ones((8, 8))).numpy().sum()))",
        KERNEL_CELL.format(info=INFO, factory=FACTORY, error=UNKNOWN_ERROR),
        "import time\ntime.sleep(0.3)\nprint(len(helpers.tflog.dropped()) >= 2)",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(nb, kernel_name="python3", timeout=300, resources={"metadata": {"path": str(tmp_path)}}).execute()
    red = "".join(o.get("text", "") for c in nb.cells for o in c.outputs if o.get("name") == "stderr")
    shown = "".join(o.get("text", "") for c in nb.cells for o in c.outputs if o.get("name") == "stdout")
    assert "Compiled cluster" not in red and "Unable to register" not in red and "I0000" not in red, red
    assert "Trying to access resource" in red, "a real error must still reach the page"
    assert "partial line without newline" in red and "python stderr still shows" in red, red
    assert shown.strip().endswith("True"), shown
