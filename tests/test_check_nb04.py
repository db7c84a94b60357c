"""Checks of notebook 04: model answers pass; constants and plausible mistakes are refused with the right hint."""

import pytest

from helpers.check import nb04 as check

tf = pytest.importorskip("tensorflow")
A = tf.data.AUTOTUNE


# --------------------------------------------------------------------------- exercise 1: bottleneck
def model_bottleneck(input_s, compute_s):
    step = max(input_s, compute_s)
    return ("input" if input_s > compute_s else "compute"), (step - compute_s) / step


def test_bottleneck_model_answer_passes():
    fb = check.bottleneck(model_bottleneck)
    assert fb.ok, fb.message
    assert check.bottleneck(lambda i, c: ("input" if i > c else "compute", max(0.0, 1 - c / i))).ok


def test_bottleneck_accepts_right_answers_written_otherwise():
    import numpy as np

    def by_idle_first(input_s, compute_s):
        idle = max(input_s - compute_s, 0) / max(input_s, compute_s)
        return ("input" if idle > 0 else "compute"), idle

    def with_numpy(input_s, compute_s):
        step = np.maximum(input_s, compute_s)
        return ("compute", np.float32(0.0)) if compute_s >= input_s else ("input", np.float64(1 - compute_s / step))

    for answer in (by_idle_first, with_numpy):
        fb = check.bottleneck(answer)
        assert fb.ok, fb.message


@pytest.mark.parametrize("answer, hint", [
    (..., "Not answered yet"),
    (("input", 0.75), "Answer with a function"),
    (lambda i, c: None, "returns None"),
    (lambda i, c: ("input", 0.75), "whatever the timings"),  # right for the first made-up timing only
    (lambda i, c: "input", "Return a pair"),
    (lambda i, c: 1 / 0, "raised ZeroDivisionError"),
    (lambda i, c: ("compute" if i > c else "input", max(0.0, i - c) / max(i, c)), "swapped"),
    (lambda i, c: ("gpu" if i < c else "input", 0.0), "Name the side"),
    # the side spelled otherwise, and a list instead of the tuple the task asks for
    (lambda i, c: ("Input" if i > c else "Compute", max(0.0, i - c) / max(i, c)), "in lower case"),
    (lambda i, c: ("INPUT " if i > c else "compute", max(0.0, i - c) / max(i, c)), "['INPUT ']"),
    (lambda i, c: ["input" if i > c else "compute", max(0.0, i - c) / max(i, c)], "Return a tuple"),
    (lambda i, c: ("input" if i > c else "compute", 100 * max(0.0, i - c) / max(i, c)), "percentage"),
    (lambda i, c: ("input" if i > c else "compute", (i - c) / max(i, c)), "negative"),
    (lambda i, c: ("input" if i > c else "compute", max(0.0, (i - c) / c)), "divided the wait by the compute"),
    (lambda i, c: ("input" if i > c else "compute", i / (i + c)), "overlaps"),
    (lambda i, c: ("input" if i > c else "compute", c / max(i, c)), "1 minus it"),
    (lambda i, c: ("input" if i >= 0.01 else "compute", max(0.0, i - c) / max(i, c)), "bounds the step"),
    (lambda i, c: ("input" if i > c else "compute", 0.0), "does wait"),
    # the idle time in seconds, not the fraction of the step
    (lambda i, c: ("input" if i > c else "compute", max(0.0, i - c)), "That is a time"),
    (lambda i, c: ("input" if i > c else "compute", max(i, c) - c), "divide it by the step"),
    # the right formula, rounded
    (lambda i, c: ("input" if i > c else "compute", round((max(i, c) - c) / max(i, c), 2)), "did you round"),
    (lambda i, c: ("input" if i > c else "compute", round((max(i, c) - c) / max(i, c), 1)), "did you round"),
    # a step without prefetch (input + compute), the pair the wrong way round, the fraction as text
    (lambda i, c: ("input" if i > c else "compute", max(0.0, i - c) / (i + c)), "without prefetch"),
    (lambda i, c: (max(0.0, i - c) / max(i, c), "input" if i > c else "compute"), "other way round"),
    (lambda i, c: ("input" if i > c else "compute", f"{max(0.0, i - c) / max(i, c):.0%}"), "should be a number"),
    # integer division gives 0 for every step
    (lambda i, c: ("input" if i > c else "compute", (max(i, c) - c) // max(i, c)), "does wait"),
])
def test_bottleneck_refuses_constants_and_mistakes_with_a_hint(answer, hint):
    fb = check.bottleneck(answer)
    assert not fb.ok and hint.lower() in fb.message.lower(), fb.message


# --------------------------------------------------------------------------- exercise 2: build_pipeline
def tuned(files, load, augment, batch_size):
    return (files.map(load, num_parallel_calls=A).cache().shuffle(100).map(augment, num_parallel_calls=A)
            .batch(batch_size).prefetch(A))


def test_build_pipeline_model_answer_and_variants_pass():
    assert check.build_pipeline(tuned).ok

    def partial_shuffle(files, load, augment, batch_size):  # a small buffer: a new order each epoch, locally
        return (files.map(load, num_parallel_calls=A).cache().shuffle(4).map(augment, num_parallel_calls=A)
                .batch(batch_size).prefetch(A))

    def batch_then_cache(files, load, augment, batch_size):
        return files.map(load, num_parallel_calls=A).batch(batch_size).cache().shuffle(10) \
            .map(augment, num_parallel_calls=A).prefetch(A)

    def with_options(files, load, augment, batch_size):
        return tuned(files, load, augment, batch_size).with_options(tf.data.Options())

    def step_by_step(files, load, augment, batch_size):
        ds = files.map(load, num_parallel_calls=A)
        ds = ds.cache()
        ds = ds.shuffle(buffer_size=len(list(files)), reshuffle_each_iteration=True)
        ds = ds.map(augment, num_parallel_calls=4, deterministic=False)
        return ds.batch(batch_size).prefetch(2)

    fixed_calls = _order("load_p4", "cache", "shuffle", "augment_p4", "batch", "prefetch")  # 4 calls: parallel too
    for answer in (partial_shuffle, batch_then_cache, with_options, step_by_step, fixed_calls):
        fb = check.build_pipeline(answer)
        assert fb.ok, (getattr(answer, "__name__", answer), fb.message)
        assert "every one of the 24 made-up files came out" in fb.message


def test_build_pipeline_accepts_a_small_shuffle_buffer_and_says_so():
    fb = check.build_pipeline(_order("load", "cache", "shuffle4", "augment", "batch", "prefetch"))
    assert fb.ok and "Your shuffle buffer (4) is smaller than the 24 files" in fb.message, fb.message
    assert "smaller than" not in check.build_pipeline(tuned).message


def test_build_pipeline_success_message_counts_what_it_saw():
    fb = check.build_pipeline(tuned)
    assert "load ran 24 times in 2 epochs" in fb.message and "the second epoch gave the images other" in fb.message


def _order(*steps):
    """A pipeline built from named steps, e.g. _order('load', 'cache', 'augment', 'batch', 'prefetch')."""
    def build(files, load, augment, batch_size):
        ds = files
        for step in steps:
            ds = {"load": lambda d: d.map(load, num_parallel_calls=A), "load1": lambda d: d.map(load),
                  "augment": lambda d: d.map(augment, num_parallel_calls=A), "augment1": lambda d: d.map(augment),
                  "load_p1": lambda d: d.map(load, num_parallel_calls=1),
                  "augment_p1": lambda d: d.map(augment, num_parallel_calls=1),
                  "load_p4": lambda d: d.map(load, num_parallel_calls=4),
                  "augment_p4": lambda d: d.map(augment, num_parallel_calls=4),
                  "shuffle": lambda d: d.shuffle(100), "shuffle1": lambda d: d.shuffle(1),
                  "shuffle4": lambda d: d.shuffle(4),
                  "batch_drop": lambda d: d.batch(batch_size, drop_remainder=True),
                  "rebatch": lambda d: d.batch(batch_size).unbatch().batch(batch_size),
                  "shuffle_once": lambda d: d.shuffle(100, reshuffle_each_iteration=False),
                  "cache": lambda d: d.cache(), "batch": lambda d: d.batch(batch_size),
                  "batch32": lambda d: d.batch(32),
                  "prefetch": lambda d: d.prefetch(A), "repeat": lambda d: d.repeat(), "take": lambda d: d.take(10),
                  "take20": lambda d: d.take(20), "skip2": lambda d: d.skip(2),
                  "odd": lambda d: d.filter(lambda image, label: label % 2 == 1),
                  "dup": lambda d: d.concatenate(d)}[step](ds)
        return ds
    return build


def _files_take(n):
    def build(files, load, augment, batch_size):
        return (files.take(n).map(load, num_parallel_calls=A).cache().shuffle(100)
                .map(augment, num_parallel_calls=A).batch(batch_size).prefetch(A))
    return build


@pytest.mark.parametrize("answer, hint", [
    (..., "Not answered yet"),
    ("files.map(load).cache()", "Answer with a function"),
    (lambda files, load, augment, batch_size: None, "returns None"),
    (lambda files, load, augment, batch_size: [1, 2], "Return a tf.data.Dataset"),
    (_order("load", "augment", "cache", "shuffle", "batch", "prefetch"), "Cache after load, before augment"),
    (_order("load", "augment", "batch", "prefetch"), "Add .cache() right after the map that loads"),
    (_order("cache", "load", "augment", "batch", "prefetch"), "Add .cache() right after the map that loads"),
    (_order("load1", "cache", "shuffle", "augment", "batch", "prefetch"), "num_parallel_calls"),
    (_order("load", "cache", "shuffle", "augment1", "batch", "prefetch"), "num_parallel_calls"),
    (_order("load", "cache", "shuffle", "augment", "prefetch", "batch"), "not last (the pipeline ends with .batch())"),
    (_order("load", "cache", "shuffle", "augment", "batch"), "end the pipeline with .prefetch"),
    (_order("load", "cache", "augment", "batch32", "prefetch"), "Use the batch_size argument"),
    (_order("load", "cache", "augment", "batch", "prefetch", "repeat"), "Leave .repeat() out"),
    (_order("load", "cache", "augment", "prefetch"), "Group them with .batch(batch_size)"),
    (_order("load", "cache", "batch", "prefetch"), "augmentation never ran"),
    (_order("augment", "batch", "prefetch"), "raised"),  # augment before load: images are still file names
    # files left out: the hint names the dropped files, never "load ran 20 times" as a success
    (_files_take(20), "dropped 4 of the 24 files"),
    (_order("load", "cache", "take20", "shuffle", "augment", "batch", "prefetch"), "dropped 4 of the 24 files"),
    (_order("load", "cache", "take", "augment", "batch", "prefetch"), "dropped 14 of the 24 files"),
    (_order("skip2", "load", "cache", "shuffle", "augment", "batch", "prefetch"), "files 0, 1 never came out"),
    (_order("load", "odd", "cache", "shuffle", "augment", "batch", "prefetch"), "dropped 12 of the 24 files"),
    (_order("load", "cache", "dup", "augment", "batch", "prefetch"), "come out more than once"),
    # drop_remainder leaves out the last, partial batch: the task keeps every file (batch 5 and 7 do not divide 24)
    (_order("load", "cache", "shuffle", "augment", "batch_drop", "prefetch"), "leave drop_remainder out"),
    # a shuffle with a buffer of one element changes nothing; batching twice around .unbatch() adds a serial map
    (_order("load", "cache", "shuffle1", "augment", "batch", "prefetch"), "a buffer of 1 element"),
    (_order("load", "cache", "shuffle", "augment", "rebatch", "prefetch"), "calls .unbatch()"),
    # num_parallel_calls=1 is a parallel map in name only
    (_order("load_p1", "cache", "augment_p1", "batch", "prefetch"), "num_parallel_calls=1"),
    (_order("load", "cache", "augment_p1", "batch", "prefetch"), "num_parallel_calls=1"),
    # an augment before the cache is frozen, even when another one runs after it
    (_order("load", "augment", "cache", "augment", "batch", "prefetch"), "replays its 'random' result"),
    (_order("load", "cache", "augment", "augment", "batch", "prefetch"), "more than once"),
    # a shuffle before the cache (or before load) is replayed every epoch
    (_order("load", "shuffle", "cache", "augment", "batch", "prefetch"), "Shuffle after the cache"),
    (_order("shuffle", "load", "cache", "augment", "batch", "prefetch"), "Shuffle after the cache"),
    # augment after the cache, but each epoch pairs the same draws with the same images
    (_order("load", "cache", "augment", "batch", "prefetch"), "add .shuffle(buffer_size) after .cache()"),
    (_order("load", "cache", "shuffle_once", "augment", "batch", "prefetch"), "reshuffle_each_iteration=False"),
    (_order("load", "cache", "augment", "shuffle", "batch", "prefetch"), "comes after .map(augment"),
])
def test_build_pipeline_refuses_wrong_orders_with_a_hint(answer, hint):
    fb = check.build_pipeline(answer)
    assert not fb.ok and hint in fb.message, fb.message
    assert "Right" not in fb.message


def test_build_pipeline_check_never_raises_on_a_broken_function():
    def broken(files, load, augment, batch_size):
        return files.map(lambda png, label: (tf.strings.to_number(png) / "x", label))

    fb = check.build_pipeline(broken)
    assert not fb.ok and "raised" in fb.message


PINNED = """
import json, sys
import tensorflow as tf
from helpers.check import nb04 as check
A = tf.data.AUTOTUNE

def solution(files, load, augment, batch_size):  # the notebook's solution_2
    return (files.map(load, num_parallel_calls=A).cache().shuffle(1000).map(augment, num_parallel_calls=A)
            .batch(batch_size).prefetch(A))

def unshuffled(files, load, augment, batch_size):
    return (files.map(load, num_parallel_calls=A).cache().map(augment, num_parallel_calls=A)
            .batch(batch_size).prefetch(A))

verdicts = []
for seed in (None, 0, 1, 7, 2024):
    if seed is not None:
        tf.random.set_seed(seed)
    verdicts.append([check.build_pipeline(solution).ok, check.build_pipeline(unshuffled).ok])
print(json.dumps(verdicts))
"""


def _verdicts(prefix):
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    out = subprocess.run([*prefix, sys.executable, "-c", PINNED], capture_output=True, text=True, cwd=check.__file__
                         .rsplit("/helpers/", 1)[0], env=env, timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_build_pipeline_verdict_is_the_same_on_one_core_and_for_every_seed():
    """Pinned to one core (taskset -c 0), the solution passed and an unshuffled pipeline was refused, whatever the seed.

    Before, the check compared two epochs drawn by parallel maps on several threads: a multi-core machine paired
    the draws with other images by chance, one core replayed them, and the verdict followed the core count.
    """
    import shutil

    if shutil.which("taskset") is None:
        pytest.skip("taskset is not installed")
    assert _verdicts(["taskset", "-c", "0"]) == [[True, False]] * 5


def test_build_pipeline_verdict_is_the_same_on_every_core_for_every_seed():
    for seed in (None, 3):
        if seed is not None:
            tf.random.set_seed(seed)
        assert check.build_pipeline(tuned).ok
        fb = check.build_pipeline(_order("load", "cache", "augment", "batch", "prefetch"))
        assert not fb.ok and "add .shuffle(buffer_size)" in fb.message, fb.message


# --------------------------------------------------------------------------- exercise 3: read_time
def model_read_time(n_files, cycle_length, latency_s, read_s):
    import math

    return math.ceil(n_files / cycle_length) * (latency_s + read_s)


def test_read_time_model_answer_passes():
    fb = check.read_time(model_read_time)
    assert fb.ok, fb.message


def test_read_time_accepts_right_answers_written_otherwise():
    import numpy as np

    def by_negative_floor(n_files, cycle_length, latency_s, read_s):
        return -(-n_files // cycle_length) * (latency_s + read_s)

    def round_by_round(n_files, cycle_length, latency_s, read_s):
        total, left = 0.0, n_files
        while left > 0:
            total += latency_s + read_s
            left -= cycle_length
        return total

    def with_numpy(n_files, cycle_length, latency_s, read_s):
        return np.float32(np.ceil(n_files / cycle_length)) * np.float64(latency_s + read_s)

    for answer in (by_negative_floor, round_by_round, with_numpy):
        fb = check.read_time(answer)
        assert fb.ok, fb.message


@pytest.mark.parametrize("answer, hint", [
    (..., "Not answered yet"),
    (0.2, "Answer with a function"),
    (lambda n, k, lat, r: None, "returns None"),
    (lambda n, k, lat, r: 0.16, "whatever the shards"),
    (lambda n, k, lat, r: f"{n * lat} s", "return a number of seconds"),
    (lambda n, k, lat, r: n / k * (lat + r), "true division"),  # a partial round counted as part of one
    (lambda n, k, lat, r: n // k * (lat + r), "drops the last, partial round"),  # floor division
    (lambda n, k, lat, r: (n // k + 1) * (lat + r), "one round too many"),  # off by one on multiples
    (lambda n, k, lat, r: 1000 * model_read_time(n, k, lat, r), "milliseconds"),  # units
    (lambda n, k, lat, r: n * (lat + r), "one file after the other"),  # cycle_length ignored
    (lambda n, k, lat, r: model_read_time(n, k, lat, 0.0), "add read_s to latency_s"),  # dropped item
    (lambda n, k, lat, r: model_read_time(n, k, lat, 0.0) + n * r, "read_s is waiting"),  # reads one by one
    (lambda n, k, lat, r: round(model_read_time(n, k, lat, r), 2), "rounded to 2 decimals"),  # rounding
    (lambda n, k, lat, r: round(model_read_time(n, k, lat, r), 3), "rounded to 3 decimals"),  # passed before
    (lambda n, k, lat, r: round(n / k) * (lat + r), "round(n_files / cycle_length) rounds to the nearest"),
    (lambda n, k, lat, r: max(1, n // k) * (lat + r), "max(1, n_files // cycle_length) mends"),
    (lambda n, k, lat, r: -(-n // k), "the number of rounds, not a time"),  # units: rounds, not seconds
    (lambda n, k, lat, r: 1 / 0, "raised ZeroDivisionError"),
])
def test_read_time_refuses_plausible_mistakes_with_the_right_hint(answer, hint):
    fb = check.read_time(answer)
    assert not fb.ok
    assert hint in fb.message, fb.message


def test_read_time_hints_agree_with_the_page():
    """The page says the waits overlap and the CPU work of reading is left to share the cores: the exercise
    counts read_s as waiting (so it overlaps too) and says the rounds model holds for equal shards only."""
    fb = check.read_time(lambda n, k, lat, r: model_read_time(n, k, lat, 0.0) + n * r)
    assert "The reading overlaps too" not in fb.message and "CPU work" in fb.message, fb.message
    ok = check.read_time(model_read_time)
    assert "equal shards" in ok.message and "as soon as any open one is finished" in ok.message, ok.message
    assert (7, 3, 0.0123, 0.00045) in check.SHARD_CASES



@pytest.mark.parametrize("name", ["bottleneck", "build_pipeline", "read_time"])
def test_a_function_left_returning_none_is_not_answered_yet_not_a_mistake(name):
    """The student copies' tally counts these as "not filled in yet" (helpers/check/_feedback.py's wording)."""
    feedback = getattr(check, name)(lambda *args: None)
    assert not feedback.ok and feedback.message.startswith("Not answered yet"), feedback.message
    assert f"`{name}` returns None" in feedback.message
