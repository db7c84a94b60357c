"""TensorFlow's C++ log stays off the page in a kernel; real warnings and errors still show."""

from __future__ import annotations

import sys

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
               "Skipping the delay kernel, measurement accuracy will be reduced",
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


# XLA's GPU timer while the autotuner times candidate kernels (xla/stream_executor/gpu/gpu_timer.cc,
# gpu_timer_kernel_cuda.cc, cuda/cuda_timer.cc), as a T4 or an A100 prints them at every XLA compile.
DELAY_SKIPPED = "W0000 00:00:1723232765.694990 1705064 gpu_timer.cc:114] Skipping the delay kernel, measurement accuracy will be reduced"  # noqa: E501
DELAY_NO_UVA = "W0000 00:00:1723232765.7 1705064 gpu_timer_kernel_cuda.cc:52] Skipping the delay kernel because the device does not support unified addressing"  # noqa: E501
DELAY_TIMED_OUT = "W0000 00:00:1723232765.8 1705064 cuda_timer.cc:88] Delay kernel timed out: measured time has sub-optimal accuracy. There may be a missing warmup execution, please investigate in Nsight Systems."  # noqa: E501
OLD_STYLE_DELAY = "2024-08-09 12:00:00.123456: W external/local_xla/xla/stream_executor/gpu/gpu_timer.cc:114] Skipping the delay kernel, measurement accuracy will be reduced"  # noqa: E501


@pytest.mark.parametrize("line", [DELAY_SKIPPED, DELAY_NO_UVA, DELAY_TIMED_OUT, OLD_STYLE_DELAY])
def test_the_xla_autotuners_delay_kernel_lines_are_dropped(line):
    assert tflog.should_drop(line, environ={})


@pytest.mark.parametrize("line", [
    "E0000 00:00:1.1 7 gpu_timer.cc:80] INTERNAL: Error stopping the timer",
    "E0000 00:00:1.1 7 gpu_timer.cc:130] Skipping the delay kernel: CUDA_ERROR_ILLEGAL_ADDRESS",  # not the message
    "W0000 00:00:1.1 7 gemm_fusion_autotuner.cc:1000] Compilation of autotuning candidate failed: INTERNAL",
])
def test_other_gpu_timer_and_autotuner_errors_still_show(line):
    assert not tflog.should_drop(line, environ={})


class ZMQInteractiveShell:  # named as ipykernel's shell; this test needs no ipykernel
    pass


class ColabShell(ZMQInteractiveShell):  # google.colab._shell.Shell: `class Shell(zmqshell.ZMQInteractiveShell)`
    pass


class TerminalInteractiveShell:
    pass


@pytest.mark.parametrize("shell,expected", [(ColabShell(), True), (ZMQInteractiveShell(), True),
                                            (TerminalInteractiveShell(), False), (None, False)])
def test_a_subclass_of_ipykernels_shell_counts_as_a_kernel(shell, expected, monkeypatch):
    import types

    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    assert tflog._in_kernel() is expected


# CUPTI's errors when 04's profiler starts on a GPU where this user may not profile (cupti_tracer.cc's
# RETURN_IF_CUPTI_ERROR, cupti_error_manager.cc's LOG_AND_DISABLE_IF_ERROR and what follows it).
CUPTI_PRIVILEGES = [
    "E0000 00:00:1.1 7 cupti_error_manager.cc:203] cuptiSubscribe: error 35: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES",
    "E0000 00:00:1.1 7 cupti_error_manager.cc:194] CuptiErrorManager is disabling profiling automatically.",
    "E0000 00:00:1.1 7 cupti_error_manager.cc:452] cuptiGetResultString: ignored due to a previous error.",
    "E0000 00:00:1.1 7 cupti_tracer.cc:1213] function cupti_interface_->Subscribe( &subscriber_, (CUpti_CallbackFunc)ApiCallback, this)failed with error ",  # noqa: E501
    "2020-06-12 14:31:54.097791: E tensorflow/core/profiler/internal/gpu/cupti_tracer.cc:1445] function cupti_interface_->EnableCallback( 0 , subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, cbid)failed with error CUPTI_ERROR_INSUFFICIENT_PRIVILEGES",  # noqa: E501
]
CUPTI_SUBSCRIBERS = "E0000 00:00:1.1 7 cupti_error_manager.cc:203] cuptiSubscribe: error 39: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"  # noqa: E501
CUPTI_INFO = ["I0000 00:00:1.1 7 cupti_tracer.cc:1213] Profiler found 1 GPUs",
              "I0000 00:00:1.1 7 cupti_tracer.cc:1364] CUPTI activity buffer flushed",
              "I0000 00:00:1.1 7 cupti_collector.cc:673]  GpuTracer has collected 909 callback api events and 909 activity events.",  # noqa: E501
              "2020-05-19 01:24:59.548374: I tensorflow/stream_executor/platform/default/dso_loader.cc:44] Successfully opened dynamic library libcupti.so.10.1"]  # noqa: E501


def test_cupti_errors_are_handled_by_kind_and_its_info_lines_dropped_as_info():
    f = tflog.LineFilter(environ={})
    decisions = [(f.drop(line), f.kind) for line in CUPTI_INFO + CUPTI_PRIVILEGES]
    assert decisions == [(True, None)] * len(CUPTI_INFO) + [(True, "cupti_privileges")] * len(CUPTI_PRIVILEGES)
    assert (f.drop(CUPTI_SUBSCRIBERS), f.kind) == (True, "cupti_subscribers")
    assert (f.drop(UNKNOWN_ERROR), f.kind) == (False, None), "an unrelated error after CUPTI's still shows"


def test_cuptis_clean_up_lines_alone_stay_on_the_page():
    f = tflog.LineFilter(environ={})
    assert [f.drop(line) for line in CUPTI_PRIVILEGES[1:4]] == [False, False, False]
    assert tflog.handled_kind(CUPTI_PRIVILEGES[1]) is None
    assert tflog.handled_kind(CUPTI_PRIVILEGES[1], {"cupti_subscribers"}) == "cupti_subscribers"


def test_emit_records_handled_lines_by_kind(monkeypatch):
    import os

    monkeypatch.setattr(tflog, "_handled", {})
    monkeypatch.setattr(tflog, "_dropped", [])
    read_fd, write_fd = os.pipe()
    f = tflog.LineFilter(environ={})
    try:
        for line in [CUPTI_PRIVILEGES[0], UNKNOWN_ERROR, CUPTI_PRIVILEGES[1]]:
            tflog._emit((line + "\n").encode(), write_fd, f)
        os.close(write_fd)
        shown = os.read(read_fd, 65536).decode()
    finally:
        os.close(read_fd)
    assert tflog.handled() == {"cupti_privileges": [CUPTI_PRIVILEGES[0], CUPTI_PRIVILEGES[1]]}
    assert shown == UNKNOWN_ERROR + "\n"


def test_a_fatal_line_is_kept_even_when_its_words_are_benign():
    fatal = ("F0000 00:00:1795491101.622107    6296 gpu_timer.cc:147] Delay kernel timed out: measured time has "
             "sub-optimal accuracy")
    warning = fatal.replace("F0000", "W0000", 1)
    assert tflog.should_drop(warning) is True
    assert tflog.should_drop(fatal) is False
