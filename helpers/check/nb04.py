"""Checks for notebook 04 · Input pipelines and preprocessing on the GPU."""

from __future__ import annotations

import math
import numbers
import threading
from collections.abc import Callable
from typing import Any

from helpers.check._feedback import Feedback, not_filled, wrong

__all__ = ["bottleneck", "build_pipeline", "read_time"]

# Made-up timings (input_s, compute_s), in seconds: input-bound and compute-bound steps, GPU-fast and CPU-slow.
TIMINGS = ((0.120, 0.030), (0.004, 0.035), (0.050, 0.010), (0.0021, 0.0015), (0.009, 0.027), (0.030, 0.024))


def _expected(input_s: float, compute_s: float) -> tuple[str, float]:
    step = max(input_s, compute_s)
    return ("input" if input_s > compute_s else "compute"), (step - compute_s) / step


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-3, abs_tol=1e-6)


def _idle_hint(wrong_idles: list[tuple[float, float, float]]) -> str:
    """Name the likely mistake behind wrong idle fractions: the formula that fits every wrong (input, compute, got).

    A single timing cannot tell some mistakes apart (rounded 0.75 to 0.8, or input / (input + compute),
    both give 0.8 at 120 ms against 30 ms), so each hint must fit all the timings the answer got wrong.
    """
    def fits(formula: Callable[[float, float, float], float]) -> bool:
        return all(_close(got, formula(i, c, max(i, c))) for i, c, got in wrong_idles)

    def right(i: float, c: float, step: float) -> float:
        return (step - c) / step

    if any(got < 0 for _, _, got in wrong_idles):
        return ("The idle fraction came out negative. When compute takes longer than input, the accelerator never "
                "waits: the fraction is 0, not below.")
    if fits(lambda i, c, step: 0.0):
        return ("The accelerator does wait here: input takes longer than compute, so for (input_s - compute_s) of "
                "each step it has nothing to train on.")
    if fits(lambda i, c, step: 100 * right(i, c, step)):
        return "That looks like a percentage. Return a fraction between 0 and 1 (0.75, not 75)."
    if fits(lambda i, c, step: step - c):
        return ("That is a time, in seconds: how long the accelerator idles in each step. Divide it by the step, "
                "max(input_s, compute_s), to get the fraction of the step.")
    if fits(lambda i, c, step: max(0.0, i - c) / (i + c)):
        return ("You divided the wait by input_s + compute_s: that is a step without prefetch. With prefetch the two "
                "overlap, so a step lasts max(input_s, compute_s): divide by that.")
    if fits(lambda i, c, step: (i - c) / c):
        return ("You divided the wait by the compute time. Divide by the step time: with prefetch a step lasts as long "
                "as the longer side, max(input_s, compute_s).")
    if fits(lambda i, c, step: c / i) or fits(lambda i, c, step: c / step):
        return "That is the share of the step the accelerator is busy. The idle share is the rest: 1 minus it."
    if fits(lambda i, c, step: i / (i + c)) or fits(lambda i, c, step: i / step):
        return ("Your fraction treats the whole input time as waiting. With prefetch the input of the next batch "
                "overlaps with training on this one, so the accelerator waits only for the part of the input time "
                "that is longer than compute: (step - compute_s) / step, with step = max(input_s, compute_s).")
    for digits in range(4):
        if fits(lambda i, c, step, d=digits: round(right(i, c, step), d)):
            return ("Close: did you round? Your fractions match the right ones rounded to "
                    f"{digits} decimal{'s' if digits != 1 else ''}; return them unrounded (round only when you print).")
    return "With prefetch a step lasts max(input_s, compute_s); the accelerator idles (step - compute_s) / step of it."


def bottleneck(answer: Any) -> Feedback:
    """Exercise 04.1: ``bottleneck(input_s, compute_s)`` -> ``(side, idle_fraction)``, with prefetch on.

    The check calls the function on made-up timings: input-bound and compute-bound steps of a fast
    GPU and of a slow CPU, so an answer that fits this machine only does not pass.

    Example:
        >>> bottleneck(lambda i, c: ("input" if i > c else "compute", max(0.0, i - c) / max(i, c))).ok
        True
    """
    if (fb := not_filled(answer)) is not None:
        return fb
    if not callable(answer):
        return wrong("Answer with a function: def bottleneck(input_s, compute_s): ... return side, idle.")
    got = []
    for input_s, compute_s in TIMINGS:
        try:
            out = answer(input_s, compute_s)
        except Exception as err:  # noqa: BLE001 - the learner's code may raise anything
            return wrong(f"bottleneck({input_s}, {compute_s}) raised {type(err).__name__}: {err}")
        if out is None:
            return Feedback(False, "Not answered yet: `bottleneck` returns None. Replace the `...` in it with "
                                   "your code, and end it with `return side, idle`.")
        if isinstance(out, list) and len(out) == 2:
            return wrong(f"bottleneck({input_s}, {compute_s}) returned the list {out!r}. Return a tuple, as the task "
                         "asks: `return side, idle` (no square brackets).")
        if not isinstance(out, tuple) or len(out) != 2:
            return wrong(f"bottleneck({input_s}, {compute_s}) returned {out!r}. Return a pair: (side, idle_fraction).")
        got.append(tuple(out))
    if len({repr(g) for g in got}) == 1:
        return wrong(f"Your function returns {got[0]!r} whatever the timings. Compute the answer from input_s and "
                     "compute_s.")
    sides = [_expected(i, c)[0] for i, c in TIMINGS]
    if all(isinstance(g[1], str) and not isinstance(g[0], str) for g in got):
        return wrong(f"You returned {got[0]!r}: the pair goes the other way round, (side, idle_fraction).")
    answered = [g[0] for g in got]
    if not all(isinstance(s, str) for s in answered):
        return wrong(f"The side should be the text 'input' or 'compute', not {type(got[0][0]).__name__}.")
    near = sorted({s for s in answered if s not in ("input", "compute") and s.strip().lower() in ("input", "compute")})
    if near:
        return wrong(f"Spell the side exactly 'input' or 'compute', in lower case and without spaces (you returned "
                     f"{near}): code that reads your answer compares the text as it is.")
    if set(answered) - {"input", "compute"}:
        other = sorted(set(answered) - {"input", "compute"})
        return wrong(f"Name the side 'input' or 'compute' (you returned {other}).")
    if all(a != s for a, s in zip(answered, sides, strict=True)):
        return wrong("The sides are swapped. The longer of the two times bounds the step: 'input' when preparing a "
                     "batch takes longer than training on it.")
    wrong_idles = []
    for (input_s, compute_s), side, (_, idle) in zip(TIMINGS, answered, got, strict=True):
        right_side, right_idle = _expected(input_s, compute_s)
        if side != right_side:
            return wrong(f"bottleneck({input_s}, {compute_s}): input takes {input_s * 1e3:g} ms and compute "
                         f"{compute_s * 1e3:g} ms, so '{right_side}' bounds the step, not '{side}'.")
        if isinstance(idle, bool) or not isinstance(idle, numbers.Real) or not math.isfinite(idle):
            return wrong(f"The idle fraction should be a number, not {idle!r}.")
        if not _close(float(idle), right_idle):
            wrong_idles.append((input_s, compute_s, float(idle)))
    if wrong_idles:
        input_s, compute_s, idle = wrong_idles[0]
        return wrong(f"bottleneck({input_s}, {compute_s}) gave idle {idle:.4g}. " + _idle_hint(wrong_idles))
    return Feedback(True, f"Right on all {len(TIMINGS)} made-up timings: with prefetch a step lasts as long as its "
                          "longer side, and the accelerator idles for the difference. A compute-bound step never "
                          "waits for input; only a faster device speeds it up.")


N_FILES = 24
AUGMENT_SEED = 404  # the op seed of the check's random augment


def _one_thread(tf: Any, ds: Any) -> Any:
    """The pipeline with all of tf.data's work on one thread: its random draws come in the order of the elements.

    With several threads, parallel maps draw in whatever order the threads run, which pairs draws with other
    images from epoch to epoch on a multi-core machine only; one thread makes the check the same on any core count.
    """
    options = tf.data.Options()
    options.threading.private_threadpool_size = 1
    return ds.with_options(options)


def _synthetic(tf: Any) -> tuple[Any, Callable[..., Any], Callable[..., Any], dict[str, int]]:
    """Made-up 'files' (their number as text), a load that counts its calls, a random augment that counts images."""
    calls = {"load": 0, "augment": 0}
    lock = threading.Lock()

    def count(value: Any) -> Any:
        with lock:
            calls["load"] += 1
        return value

    def count_images(images: Any) -> Any:
        with lock:
            calls["augment"] += max(1, int(tf.size(images)) // 16)  # one image is 4x4x1; a batch holds several
        return images

    @tf.autograph.experimental.do_not_convert
    def load(png: Any, label: Any) -> tuple[Any, Any]:
        value = tf.py_function(count, [tf.strings.to_number(png)], tf.float32)
        return tf.fill([4, 4, 1], tf.ensure_shape(value, [])), label

    @tf.autograph.experimental.do_not_convert
    def augment(image: Any, label: Any) -> tuple[Any, Any]:
        # An op seed: each epoch's iterator draws the same sequence whatever the global seed (set or not), so
        # whether the draws land on other images in the next epoch depends on the pipeline only.
        out = image + tf.random.uniform([], 0.01, 0.5, seed=AUGMENT_SEED)
        return tf.ensure_shape(tf.py_function(count_images, [out], tf.float32), image.shape), label

    files = tf.data.Dataset.from_tensor_slices((tf.strings.as_string(tf.range(N_FILES)), tf.range(N_FILES)))
    return files, load, augment, calls


def _chain(ds: Any) -> list[str]:
    """The class names of a pipeline's datasets, from the last step back to the source."""
    names = []
    while ds is not None and len(names) < 50:
        names.append(type(ds).__name__)
        ds = getattr(ds, "_input_dataset", None)
    return names


def _parallel_calls(ds: Any) -> list[int]:
    """The num_parallel_calls of each parallel map in a pipeline (-1 for AUTOTUNE)."""
    found = []
    while ds is not None and len(found) < 50:
        value = getattr(ds, "_num_parallel_calls", None)
        if value is not None and "Map" in type(ds).__name__:
            try:
                found.append(int(value))
            except (TypeError, ValueError):
                pass
        ds = getattr(ds, "_input_dataset", None)
    return found


def _method(class_name: str) -> str:
    """'_ParallelMapDataset' -> '.map()': the method that adds a dataset of that class."""
    return "." + class_name.strip("_").replace("Dataset", "").replace("Parallel", "").lower() + "()"


def _drops_remainder(ds: Any) -> bool:
    """Whether a .batch() in the pipeline has drop_remainder=True."""
    for _ in range(50):
        if ds is None:
            return False
        if "Batch" in type(ds).__name__:
            try:
                if bool(ds._drop_remainder):
                    return True
            except (AttributeError, TypeError, ValueError):
                pass
        ds = getattr(ds, "_input_dataset", None)
    return False


def _epoch(ds: Any, limit: int) -> tuple[list[Any], list[Any]] | Feedback:
    images, labels = [], []
    for element in ds.take(limit):
        if not isinstance(element, (tuple, list)) or len(element) != 2:
            return wrong("Each element should stay a pair (images, labels), as load and augment return it.")
        images.append(element[0].numpy())
        labels.append(element[1].numpy())
    return images, labels


def _run(answer: Callable[..., Any], batch_size: int) -> Feedback | dict[str, Any]:
    import numpy as np
    import tensorflow as tf

    files, load, augment, calls = _synthetic(tf)
    try:
        ds = answer(files, load, augment, batch_size)
    except Exception as err:  # noqa: BLE001 - the learner's code may raise anything
        return wrong(f"build_pipeline(files, load, augment, {batch_size}) raised {type(err).__name__}: {err}")
    if ds is None:
        return Feedback(False, "Not answered yet: `build_pipeline` returns None. Replace the `...` in it with "
                               "your code, and end it with `return` and the dataset.")
    if not isinstance(ds, tf.data.Dataset):
        return wrong(f"Return a tf.data.Dataset (you returned {type(ds).__name__}).")
    if int(ds.cardinality()) == int(tf.data.INFINITE_CARDINALITY):
        return wrong("Your pipeline repeats forever. Leave .repeat() out: the training loop asks for each epoch.")
    limit = N_FILES + 2
    epochs, augmented = [], []
    for _ in range(2):
        before = calls["augment"]
        try:
            epoch = _epoch(_one_thread(tf, ds), limit)
        except Exception as err:  # noqa: BLE001
            return wrong(f"Reading your pipeline raised {type(err).__name__}: {str(err).splitlines()[0][:300]}")
        if isinstance(epoch, Feedback):
            return epoch
        epochs.append(epoch)
        augmented.append(calls["augment"] - before)
    images, labels = epochs[0]
    if not images:
        return wrong("Your pipeline is empty: start from `files` and keep every file.")
    if images[0].ndim == 3:
        return wrong("The elements are single images. Group them with .batch(batch_size).")
    largest = max(batch.shape[0] for batch in images)  # the partial batch may come first when batches are shuffled
    if largest != batch_size:
        return wrong(f"The largest batch holds {largest} images, but batch_size is {batch_size}. Use the "
                     "batch_size argument, not a fixed number.")
    seen = [int(v) for batch in labels for v in np.ravel(batch)]
    if len(seen) != len(set(seen)) or not set(seen) <= set(range(N_FILES)):
        return wrong(f"One epoch should hold each of the {N_FILES} files once; yours held {len(seen)} images with "
                     f"{len(set(seen))} different labels: some files come out more than once. Leave out "
                     ".repeat() and .concatenate().")
    remainder = N_FILES % batch_size  # batch_size does not divide N_FILES: the last batch is partial
    full = all(np.ravel(batch).size == batch_size for batch in labels)
    if remainder and full and len(seen) == N_FILES - remainder and _drops_remainder(ds):
        return wrong(f"Your pipeline dropped the last, partial batch: with batch_size={batch_size}, {remainder} of the "
                     f"{N_FILES} files never came out. That is .batch(batch_size, drop_remainder=True); the task keeps "
                     "every file, so leave drop_remainder out.")
    if len(seen) != N_FILES:
        missing = sorted(set(range(N_FILES)) - set(seen))
        return wrong(f"Your pipeline dropped {len(missing)} of the {N_FILES} files (with batch_size={batch_size}, "
                     f"files {', '.join(map(str, missing[:8]))}{' ...' if len(missing) > 8 else ''} never came out): "
                     ".take(), .skip() or .filter() leave files out of every epoch. Keep every file.")
    return {"calls": calls["load"], "augmented": augmented, "epochs": epochs, "chain": _chain(ds), "dataset": ds}


def _replay_hint(ds: Any, steps: list[str], shuffle: int | None) -> str:
    """Why augment ran in both epochs yet gave every image the same 'random' change: the draws met the same images."""
    start = ("augment ran again in the second epoch, yet every image got the same 'random' change as in the first: "
             "each epoch starts a new iterator, which replays the same random draws (with a seed set, as "
             "helpers.setup does, or an op seed) in the same order. ")
    if shuffle is None:
        return start + ("Nothing changes which image meets which draw: add .shuffle(buffer_size) after .cache() and "
                        "before .map(augment, ...), so every epoch pairs the draws with other images.")
    layer = ds
    for _ in range(50):
        if layer is None:
            break
        if "Shuffle" in type(layer).__name__ and getattr(layer, "_reshuffle_each_iteration", True) is False:
            return start + ("Your shuffle has reshuffle_each_iteration=False: it keeps one order for every epoch. "
                            "Leave that argument out, so each epoch gets a new order.")
        layer = getattr(layer, "_input_dataset", None)
    buffer = _shuffle_buffer(ds)
    if buffer is not None and 0 <= buffer <= 1:
        return start + (f"Your .shuffle() has a buffer of {buffer} element: it hands each element on as it comes, so "
                        "the order never changes. Give it a buffer of many elements, such as the number of files.")
    maps = [i for i, n in enumerate(steps) if "Map" in n]
    if maps and shuffle < min(maps):
        return start + ("Your .shuffle() comes after .map(augment, ...): each image gets its draw first, and only "
                        "then is the order shuffled. Shuffle after the cache and before augment.")
    return start + ("Shuffle after .cache() and before .map(augment, ...), so every epoch pairs the draws with other "
                    "images.")


def _shuffle_buffer(ds: Any) -> int | None:
    """The buffer size of the first .shuffle() in a pipeline, from the last step back (None: no shuffle)."""
    for _ in range(50):
        if ds is None:
            return None
        if "Shuffle" in type(ds).__name__:
            try:
                return int(ds._buffer_size)
            except (AttributeError, TypeError, ValueError):
                return None
        ds = getattr(ds, "_input_dataset", None)
    return None


def build_pipeline(answer: Any) -> Feedback:
    """Exercise 04.2: ``build_pipeline(files, load, augment, batch_size)`` returns a tuned ``tf.data`` pipeline.

    The check runs it on 24 made-up files with its own ``load`` (which counts its calls) and a
    random ``augment`` (which counts the images it sees), for two epochs and two batch sizes
    (5 and 7, neither divides 24), then reads the pipeline's steps: every file comes out once per
    epoch (no file dropped, not even a partial last batch), load runs once per file (cache after
    load), augment runs once per image in every epoch (cache before the random step), both maps run
    in parallel (AUTOTUNE or more than one call), a shuffle after the cache and before augment gives
    each epoch other augmentations, and prefetch comes last. The check runs the pipeline on one
    thread and its augment has an op seed, so the verdict is the same whatever seed is set and whatever the
    number of cores.

    Example:
        >>> def tuned(files, load, augment, batch_size):
        ...     import tensorflow as tf
        ...     return (files.map(load, num_parallel_calls=tf.data.AUTOTUNE).cache().shuffle(24)
        ...             .map(augment, num_parallel_calls=tf.data.AUTOTUNE).batch(batch_size).prefetch(tf.data.AUTOTUNE))
        >>> build_pipeline(tuned).ok
        True
    """
    if (fb := not_filled(answer)) is not None:
        return fb
    if not callable(answer):
        return wrong("Answer with a function: def build_pipeline(files, load, augment, batch_size): ... return ds.")
    import numpy as np

    runs = []
    for batch_size in (5, 7):  # neither divides the 24 files: every epoch ends with a partial batch
        run = _run(answer, batch_size)
        if isinstance(run, Feedback):
            return run
        runs.append(run)
    run = runs[0]
    if run["calls"] == 0:
        return wrong("load never ran. Start with files.map(load, ...): it reads and decodes each file.")
    if run["calls"] >= 2 * N_FILES:
        return wrong(f"load ran {run['calls']} times for {N_FILES} files over 2 epochs: it reads and decodes every "
                     "file again each epoch. Add .cache() right after the map that loads, so the second epoch reads "
                     "decoded images from memory.")
    (first_images, first_labels), (second_images, second_labels) = run["epochs"]

    def by_label(images: list[Any], labels: list[Any]) -> dict[int, Any]:
        return {int(lab): img for batch, labs in zip(images, labels, strict=False)
                for img, lab in zip(batch, np.ravel(labs), strict=False)}

    first, second = by_label(first_images, first_labels), by_label(second_images, second_labels)
    plain = {k: np.full_like(v, float(k)) for k, v in first.items()}
    if all(np.allclose(first[k], plain[k]) for k in first):
        return wrong("The images come out exactly as load made them: augmentation never ran. Add .map(augment, ...) "
                     "after the cache.")
    first_epoch, second_epoch = run["augmented"]
    if first_epoch > second_epoch:
        return wrong(f"augment ran on {first_epoch} images in the first epoch but on {second_epoch} in the second: a "
                     ".map(augment) before .cache() ran once, and the cache replays its 'random' result every epoch. "
                     "Cache after load, before augment.")
    if second_epoch > N_FILES:
        return wrong(f"augment ran on {second_epoch} images per epoch for {N_FILES} files: each image is augmented "
                     "more than once. Keep one .map(augment, ...), after the cache.")
    chain = run["chain"]
    steps = [n for n in chain if n != "_OptionsDataset"]
    if "_UnbatchDataset" in steps:
        return wrong("Your pipeline calls .unbatch(): it undoes a .batch() (and adds a map of its own that runs one "
                     "element at a time). Batch once, with .batch(batch_size) after augment.")
    if "_MapDataset" in steps:
        return wrong("At least one map runs one element at a time. Give both maps "
                     "num_parallel_calls=tf.data.AUTOTUNE so several files are read and augmented at once.")
    if any(calls == 1 for calls in _parallel_calls(run["dataset"])):
        return wrong("A map has num_parallel_calls=1: it still runs one element at a time. Use "
                     "num_parallel_calls=tf.data.AUTOTUNE (or a number above 1) on both maps.")
    cache = next((i for i, n in enumerate(steps) if "Cache" in n), None)
    shuffle = next((i for i, n in enumerate(steps) if "Shuffle" in n), None)
    if cache is not None and shuffle is not None and shuffle > cache:
        return wrong(".shuffle() comes before .cache(): the cache keeps the first epoch's order and replays it every "
                     "epoch, so the shuffle runs once. Shuffle after the cache, before augment.")
    if not any("Prefetch" in n for n in steps):
        return wrong("Nothing prepares the next batch while the model trains: end the pipeline with "
                     ".prefetch(tf.data.AUTOTUNE).")
    if "Prefetch" not in steps[0]:
        return wrong(f"Prefetch is there but not last (the pipeline ends with {_method(steps[0])}). Put "
                     ".prefetch(tf.data.AUTOTUNE) at the very end, after .batch(), so whole batches wait ready.")
    same = [k for k in first if k in second and np.allclose(first[k], second[k])]
    if len(same) == len(first):
        return wrong(_replay_hint(run["dataset"], steps, shuffle))
    buffer = _shuffle_buffer(run["dataset"])
    note = ("" if buffer is None or buffer < 0 or buffer >= N_FILES else
            f" Your shuffle buffer ({buffer}) is smaller than the {N_FILES} files: each epoch gets a new order, but an "
            "element moves only a few places; a buffer as large as the dataset shuffles it fully.")
    return Feedback(True, f"Right: every one of the {N_FILES} made-up files came out in each epoch, load ran "
                          f"{run['calls']} times in 2 epochs (cached), augment ran once per image in each epoch, "
                          "and the second epoch gave the images other random changes (cache before the random step, "
                          "a new order each epoch); both maps run in parallel and prefetch comes last; the batch "
                          "size follows the argument." + note)


# Made-up shard sets (n_files, cycle_length, latency_s, read_s): a multiple of the cycle, a partial last round,
# fewer files than the cycle, one file at a time, a cycle of one file more than half the files, and times with
# more decimals than a rounded answer keeps.
SHARD_CASES = ((8, 4, 0.02, 0.005), (10, 4, 0.05, 0.01), (3, 8, 0.1, 0.02), (6, 1, 0.03, 0.002),
               (1024, 16, 0.08, 0.04), (9, 5, 0.2, 0.1), (7, 3, 0.0123, 0.00045))


def _read_time(n_files: int, cycle_length: int, latency_s: float, read_s: float) -> float:
    return math.ceil(n_files / cycle_length) * (latency_s + read_s)


def _read_time_hint(got: list[tuple[tuple[int, int, float, float], float]],
                    every: list[tuple[tuple[int, int, float, float], float]]) -> str:
    """Name the mistake behind wrong read times.

    `got` holds the cases the answer got wrong, `every` all of them. A way of counting rounds that is
    right on some cases (round(n / k) rounds 9 / 5 up, max(1, n // k) mends 3 / 8) is told apart from
    plain floor division by the cases it got right too, so it is matched on every case.
    """
    def fits(formula: Callable[[int, int, float, float], float],
             cases: list[tuple[tuple[int, int, float, float], float]] = got) -> bool:
        return all(math.isclose(value, formula(*case), rel_tol=1e-6, abs_tol=1e-12) for case, value in cases)

    if fits(lambda n, k, lat, r: round(n / k) * (lat + r), every):
        return ("round(n_files / cycle_length) rounds to the nearest whole number, so it drops a last round that is "
                "less than half full (10 files in cycles of 4: 3 rounds, not 2). Round up: math.ceil.")
    if fits(lambda n, k, lat, r: max(1, n // k) * (lat + r), every):
        return ("max(1, n_files // cycle_length) mends the case of fewer files than cycle_length, but still drops a "
                "last, partial round (10 files in cycles of 4: 3 rounds, not 2). Round up: math.ceil.")
    if fits(lambda n, k, lat, r: math.ceil(n / k), every):
        return ("That is the number of rounds, not a time: multiply it by how long one round lasts, "
                "latency_s + read_s, to get seconds.")
    if fits(lambda n, k, lat, r: n / k * (lat + r)):
        return ("You divided n_files / cycle_length with true division: a last round with fewer files than "
                "cycle_length still lasts a whole round. Round the number of rounds up (math.ceil).")
    if fits(lambda n, k, lat, r: n // k * (lat + r)):
        return ("Floor division n_files // cycle_length drops the last, partial round (and gives 0 rounds when "
                "there are fewer files than cycle_length). Round up instead: math.ceil(n_files / cycle_length).")
    if fits(lambda n, k, lat, r: (n // k + 1) * (lat + r)):
        return ("n_files // cycle_length + 1 counts one round too many when n_files is a multiple of cycle_length. "
                "Round up instead: math.ceil(n_files / cycle_length).")
    if fits(lambda n, k, lat, r: 1000 * _read_time(n, k, lat, r)):
        return "Those are milliseconds. Keep the unit of latency_s and read_s: seconds."
    if fits(lambda n, k, lat, r: n * (lat + r)):
        return ("That is reading one file after the other (cycle_length=1). interleave opens cycle_length files at "
                "once, so the files go in rounds of cycle_length.")
    if fits(lambda n, k, lat, r: math.ceil(n / k) * lat):
        return "Each round also reads its files after the wait: add read_s to latency_s for every round."
    if fits(lambda n, k, lat, r: math.ceil(n / k) * lat + n * r):
        return ("You counted read_s as CPU work done one file after the other. In this exercise read_s is waiting "
                "too (the file's bytes arriving from storage), so the cycle_length files of a round, each with its "
                "own thread, wait for them together: a round lasts latency_s + read_s. (CPU work would be shared "
                "by the cores instead: that is why the measured speed-up above is smaller than this model's.)")
    if fits(lambda n, k, lat, r: math.ceil(n / k) * lat + r):
        return "Every round reads its files after its wait: the read time counts once per round, not once in all."
    return ("Files go in rounds of cycle_length, each round lasting latency_s + read_s: "
            "time = rounds x (latency_s + read_s), with rounds = n_files / cycle_length rounded up.")


def read_time(answer: Any) -> Feedback:
    """Exercise 04.3: ``read_time(n_files, cycle_length, latency_s, read_s)`` -> seconds to read every shard.

    The check calls the function on made-up shard sets (a multiple of the cycle, a partial last round,
    fewer files than the cycle, one file at a time), so a constant does not pass.

    Example:
        >>> read_time(lambda n, k, lat, r: -(-n // k) * (lat + r)).ok
        True
    """
    if (fb := not_filled(answer)) is not None:
        return fb
    if not callable(answer):
        return wrong("Answer with a function: def read_time(n_files, cycle_length, latency_s, read_s): ... "
                     "return seconds.")
    got = []
    for case in SHARD_CASES:
        try:
            out = answer(*case)
        except Exception as err:  # noqa: BLE001 - the learner's code may raise anything
            return wrong(f"read_time{case} raised {type(err).__name__}: {err}")
        if out is None:
            return Feedback(False, "Not answered yet: `read_time` returns None. Replace the `...` in it with "
                                   "your code, and end it with `return` and the time in seconds.")
        if hasattr(out, "numpy") and not isinstance(out, numbers.Number):
            out = out.numpy()
        if isinstance(out, bool) or not isinstance(out, numbers.Real) or not math.isfinite(float(out)):
            return wrong(f"read_time{case} returned {out!r}: return a number of seconds.")
        got.append((case, float(out)))
    if len({value for _, value in got}) == 1:
        return wrong(f"Your function returns {got[0][1]!r} whatever the shards. Compute the time from n_files, "
                     "cycle_length, latency_s and read_s.")
    wrong_cases = [(case, value) for case, value in got
                   if not math.isclose(value, _read_time(*case), rel_tol=1e-6, abs_tol=1e-12)]
    if wrong_cases:
        case, value = wrong_cases[0]
        for digits in range(7):
            if all(math.isclose(v, round(_read_time(*c), digits), abs_tol=1e-12) for c, v in wrong_cases):
                return wrong(f"read_time{case} gave {value!r}, the right time {_read_time(*case)!r} rounded to "
                             f"{digits} decimal{'s' if digits != 1 else ''}. Return it unrounded (round only when "
                             "you print).")
        return wrong(f"read_time{case} gave {value:.6g} s, not {_read_time(*case):.6g} s. "
                     + _read_time_hint(wrong_cases, got))
    return Feedback(True, f"Right on all {len(SHARD_CASES)} made-up shard sets: with equal shards, a parallel "
                          "interleave reads its files in rounds of cycle_length, so a cycle as long as the number of "
                          "files pays the wait once. That holds while there is a thread for every file that waits "
                          "(the private thread pool above) and while the CPU work of reading is small next to the "
                          "waits. Real shards of uneven size go differently: interleave opens the next file as soon "
                          "as any open one is finished, not when a whole round is.")
