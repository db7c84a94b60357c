"""``helpers.setup``: the first thing every notebook's setup cell calls; ``scratch_dir`` for the files it writes.

Order matters, and it is the same in every notebook:

1. validate the parameters (fails in milliseconds, before TensorFlow is imported);
2. import TensorFlow quietly;
3. apply device settings (memory growth, logical devices) - idempotent, so running the setup cell
   twice, or after TensorFlow has already started, gives a note instead of a crash;
4. seed Python, NumPy and TensorFlow;
5. print one line about the hardware and return the full :class:`helpers.env.Report`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from helpers import env, params, tflog
from helpers import nvml as nvml_api

MIB = 1024**2
ROOT = Path(__file__).resolve().parent.parent


def _check_options(memory_growth: Any, logical_devices: Any, logical_memory_mb: Any) -> None:
    if not isinstance(memory_growth, bool):
        raise ValueError(f"memory_growth={memory_growth!r}: use True or False.")
    if logical_devices is not None and (not isinstance(logical_devices, int) or isinstance(logical_devices, bool)
                                        or not 1 <= logical_devices <= 64):
        raise ValueError(f"logical_devices={logical_devices!r}: use None or an integer from 1 to 64.")
    if logical_memory_mb is not None and (not isinstance(logical_memory_mb, int) or logical_memory_mb < 64):
        raise ValueError(f"logical_memory_mb={logical_memory_mb!r}: use None or an integer >= 64 (MiB).")


SPLIT_MEMORY_MB = 256
"""MiB of GPU memory each logical GPU gets when :func:`configure_devices` splits a GPU.

Sized for what notebook 07 trains, the only notebook that splits a GPU, worst case on one device:

* weights: a 784-256-10 network has 203,530 float32 weights, 0.8 MB; with its gradients and Adam's
  two moments a copy takes 4 x 0.8 = 3.3 MB; 07 keeps six copies (the initial one, ``fit``'s, the
  unbuilt step's and three runs') on its first device: 20 MB;
* data: the "1 replica, same global batch" run puts 64 x ``N_REPLICAS`` images of 784 float32 on
  one device, at most 64 x 64 x 784 x 4 B = 12.8 MB (``N_REPLICAS`` <= 64), three batches at a time
  with two prefetched: 38 MB;
* activations: 4,096 x (256 + 10) float32 = 4.4 MB forward, about three times that with the backward
  pass: 13 MB.

That is about 71 MB; 256 MiB (268 MB) leaves room for cuBLAS's workspace and the allocator's
rounding, and the rest of the card stays free for other processes (08 and 09 start children on the
same GPU). 07's split script in a fresh Python uses the same 256 MiB.
"""


def configure_devices(tf: Any, memory_growth: bool = True, logical_devices: int | None = None,
                      logical_memory_mb: int | None = None, nvml: Any | None = None) -> list[str]:
    """Apply device settings before TensorFlow initialises its devices; return notes for the learner.

    * ``memory_growth``: let each GPU's memory grow as needed instead of taking it all at start.
    * ``logical_devices=N``: make sure N devices of one kind exist for data parallelism. With N or
      more GPUs nothing changes (the caller picks N of them, e.g. ``MirroredStrategy(devices)``);
      with fewer GPUs each is split evenly (N must then be a multiple of the GPU count), each part a
      fixed ``logical_memory_mb`` or :data:`SPLIT_MEMORY_MB` MiB, never a share of the card, so the
      rest stays free for other processes; with no GPU the CPU is split into N logical CPUs.

    Settings can only change before TensorFlow initialises the devices. If it already has (the
    setup cell ran before in this kernel), a setting that already holds passes silently and one
    that does not gives a note that says to restart the kernel. A split that NVML says does not fit
    in a GPU's free memory gives a note too.

    Example:
        >>> notes = configure_devices(env.tensorflow(), memory_growth=True)  # [] or a note to restart
        >>> isinstance(notes, list)
        True
    """
    notes: list[str] = []
    gpus = tf.config.list_physical_devices("GPU")
    splits: list[tuple[Any, int]] = []  # (physical device, how many logical devices it becomes)
    if logical_devices and logical_devices > 1 and len(gpus) < logical_devices:
        if not gpus:
            splits = [(tf.config.list_physical_devices("CPU")[0], logical_devices)]
        elif logical_devices % len(gpus) == 0:
            splits = [(gpu, logical_devices // len(gpus)) for gpu in gpus]
        else:
            raise ValueError(f"logical_devices={logical_devices} with {len(gpus)} GPUs: use at most {len(gpus)}, "
                             f"or a multiple of {len(gpus)} so that every GPU splits evenly.")
    mb = logical_memory_mb or SPLIT_MEMORY_MB
    for index, (device, parts) in enumerate(splits):
        limit = mb if device.device_type == "GPU" else None  # a logical CPU takes no memory limit
        configs = [tf.config.LogicalDeviceConfiguration(memory_limit=limit) for _ in range(parts)]
        try:
            tf.config.set_logical_device_configuration(device, configs)
        except RuntimeError:
            have = len(tf.config.list_logical_devices(device.device_type))
            if have != logical_devices:
                notes.append(f"TensorFlow had already started with {have} logical {device.device_type}(s), so it "
                             f"cannot make {logical_devices} now: use Kernel > Restart, then run the notebook from "
                             "the top.")
            break
        if limit is not None:
            free = _free_mib(index, nvml)
            if free is not None and parts * limit > free:
                notes.append(f"GPU:{index} has {free:,} MiB free, less than the {parts} x {limit} MiB its logical "
                             "GPUs reserve: TensorFlow may run out of memory there. Free some (close other "
                             "notebooks on this GPU), then use Kernel > Restart.")
    if any(device.device_type == "GPU" for device, _ in splits):
        return notes  # once GPUs are split TensorFlow ignores memory growth: each part has a fixed limit
    if memory_growth:
        for gpu in gpus:
            try:
                tf.config.experimental.set_memory_growth(gpu, True)
            except RuntimeError:
                if not tf.config.experimental.get_memory_growth(gpu):
                    notes.append(f"{gpu.name}: TensorFlow had already started, so memory growth stays off "
                                 "in this kernel: use Kernel > Restart to turn it on.")
            except ValueError:  # not a GPU that supports it: nothing to set
                pass
    return notes


def _free_mib(tf_index: int, nvml: Any | None) -> int | None:
    """Free MiB of TensorFlow's GPU:tf_index by NVML (all processes), or None when NVML cannot tell."""
    nvml_index = nvml_api.index_for(tf_index, nvml=nvml)
    for r in nvml_api.readings(nvml) if nvml_index is not None else []:
        if r.index == nvml_index and r.memory_total_bytes is not None and r.memory_used_bytes is not None:
            return (r.memory_total_bytes - r.memory_used_bytes) // MIB
    return None


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and TensorFlow's random generators (through Keras)."""
    import keras

    keras.utils.set_random_seed(seed)


def setup(*, memory_growth: bool = True, logical_devices: int | None = None,
          logical_memory_mb: int | None = None, quiet: bool = False, **notebook_params: Any) -> env.Report:
    """Validate parameters, import TensorFlow quietly, apply device settings, seed, report hardware.

    Args:
        memory_growth: let GPU memory grow on demand (default True).
        logical_devices: ensure this many devices of one kind exist (notebook 07); see
            :func:`configure_devices`.
        logical_memory_mb: MiB of each logical GPU when a GPU is split (default :data:`SPLIT_MEMORY_MB`).
        quiet: do not print the hardware line.
        **notebook_params: the notebook's parameters (SMOKE, SEED, RESULTS_PATH, ...); each is
            checked against :data:`helpers.params.RULES`.

    Returns:
        The hardware and software report of this run.

    Example:
        >>> hw = setup(SMOKE=True, SEED=0, RESULTS_PATH="", quiet=True)
        >>> hw.gpu_count >= 0
        True
    """
    params.validate(notebook_params)
    _check_options(memory_growth, logical_devices, logical_memory_mb)
    tflog.keep_off_page()
    tf = env.tensorflow()
    notes = configure_devices(tf, memory_growth, logical_devices, logical_memory_mb)
    if "SEED" in notebook_params:
        seed_everything(notebook_params["SEED"])
    report = env.report(tf)
    report.notes = notes
    if not quiet:
        flags = " ".join(f"{k}={notebook_params[k]}" for k in ("SMOKE", "SEED") if k in notebook_params)
        print(f"Hardware: {report.summary()}" + (f" | {flags}" if flags else ""))
        for note in notes:
            print(f"Note: {note}")
    return report


def scratch_dir(name: str) -> Path:
    """The folder where notebook `name` may write files (created if needed).

    ``$COURSE_SCRATCH/<name>`` when that variable is set (tests point it at a temporary folder),
    else ``scratch/<name>`` at the top of the course.

    Example:
        >>> scratch_dir("00_environment_check").name
        '00_environment_check'
    """
    if not name or "/" in name or "\\" in name or name.startswith("."):
        raise ValueError(f"name={name!r}: use a plain folder name such as '04_input_pipelines'.")
    base = Path(os.environ.get("COURSE_SCRATCH") or ROOT / "scratch")
    path = base / name
    path.mkdir(parents=True, exist_ok=True)
    return path
