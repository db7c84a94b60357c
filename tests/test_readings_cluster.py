"""Property tests of the sentences helpers.cluster and helpers.netns write: each agrees with its numbers."""

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import cluster, manifests, netns

losses = st.floats(min_value=0, max_value=10, allow_nan=False)
epochs = st.integers(0, 20)


# --------------------------------------------------------------------------- restart_reading
@given(before=losses, after=losses, killed=epochs, resumed=epochs, steps=st.integers(1, 100),
       step_off=st.sampled_from([0, 0, 1, -1]), extra=st.integers(0, 5))
def test_restart_reading_agrees_with_the_losses_and_epochs_it_prints(before, after, killed, resumed, steps,
                                                                     step_off, extra):
    step = resumed * steps + step_off
    first = resumed + 1
    run_2 = [(first + i, after) for i in range(extra + 1)]
    text = cluster.restart_reading({"run 1": [(1, before)], "run 2": run_2}, killed, resumed, step, steps, [])
    assert text.startswith(f"Run 2 restored {resumed} finished epochs")
    trained = f"epoch {first}." if extra == 0 else f"epochs {first} to {first + extra}."
    assert f"then trained {trained}" in text
    if step_off:
        assert f"came back as {step}, not {resumed * steps}" in text
    else:
        assert f"{step} = {resumed} x {steps} steps" in text
    shown_after, shown_before = f"{after:.3f}", f"{before:.3f}"
    assert f"mean loss of {shown_after}, " in text and f"first epoch ({shown_before})" in text
    assert ("below run 1's" in text) == (float(shown_after) < float(shown_before))
    assert ("training went on from the checkpoint" in text) == (float(shown_after) < float(shown_before))
    assert ("equal to run 1's" in text) == (shown_after == shown_before)
    if killed >= 1 and killed - 1 >= resumed:
        assert f"half of epoch {killed}" in text
        assert ("finished epoch(s) after the last checkpoint" in text) == (killed - 1 > resumed)
        if killed - 1 > resumed:
            assert f"and {killed - 1 - resumed} finished epoch(s)" in text
    else:
        assert "Lost to the crash" not in text


@given(base=st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), n=st.integers(2, 8),
       offset=st.floats(min_value=0, max_value=1e3), tolerance=st.sampled_from([0.0, 1e-9, 1e-6, 1e-3]))
def test_restart_reading_calls_weights_identical_only_within_the_stated_tolerance(base, n, offset, tolerance):
    checksums = [base] * (n - 1) + [base + offset]
    text = cluster.restart_reading({"run 2": [(1, 0.5)]}, 1, 0, 0, 10, checksums, tolerance=tolerance)
    same = max(checksums) - min(checksums) <= tolerance * max(1.0, abs(max(checksums, key=abs)))
    assert ("identical weights" in text) == same
    assert ("weights differ" in text) == (not same)
    who = "Both workers" if n == 2 else f"All {n} workers"
    if same:
        assert f"{who} end with identical weights" in text
        assert (f"within {tolerance:.0e} relative" if tolerance else "exactly equal") in text
    else:
        low, high = re.search(r"from (\S+) to (\S+), (more than|not exactly)", text).groups()[:2]
        assert float(low) == pytest.approx(min(checksums)) and float(high) == pytest.approx(max(checksums))


def test_restart_reading_with_one_worker_nan_and_nothing_recorded():
    one = cluster.restart_reading({"run 2": [(1, 0.5)]}, 1, 0, 0, 10, [3.0])
    assert "The one worker ends" in one and "identical" not in one
    nan = cluster.restart_reading({"run 1": [(1, 1.0)], "run 2": [(2, float("nan"))]}, 2, 1, 10, 10,
                                  [1.0, float("nan")])
    assert "below" not in nan and "diverged" in nan and "identical" not in nan
    assert "no epoch" in cluster.restart_reading({"run 1": [(1, 1.0)]}, 2, 1, 10, 10, [])
    with pytest.raises(ValueError, match="tolerance="):
        cluster.restart_reading({"run 2": [(1, 0.5)]}, 1, 0, 0, 10, [], tolerance=-1)


# --------------------------------------------------------------------------- worker_devices' sentence
@given(gpus=st.integers(0, 8), workers=st.integers(1, 8), parent=st.sampled_from([None, "", "-1", "2,3", "0,1,2,3"]))
def test_worker_devices_sentence_names_the_collective_it_chose(gpus, workers, parent):
    envs, collective, text = cluster.worker_devices(gpus, workers, parent=parent)
    assert len(envs) == workers
    assert f"{workers} workers" in text
    assert ("NCCL, as on a GPU cluster" in text) == (collective == "NCCL")
    if collective == "NCCL":  # NCCL only when every worker has a GPU of its own
        assert len({env["CUDA_VISIBLE_DEVICES"] for env in envs}) == workers
    assert ("No GPU" in text) == all(env["CUDA_VISIBLE_DEVICES"] == "-1" for env in envs)
    for env in envs:
        if env["CUDA_VISIBLE_DEVICES"] != "-1":
            assert env["CUDA_VISIBLE_DEVICES"] in text


# --------------------------------------------------------------------------- caught_table
@given(found=st.dictionaries(st.sampled_from(["a", "typo", "bad value"]),
                             st.fixed_dictionaries({c: st.lists(st.text("xyz: ", min_size=1, max_size=5), max_size=2)
                                                    for c in ("lenient schema", "strict schema", "cross-checks")}),
                             min_size=1))
def test_caught_table_says_rejects_exactly_where_a_check_found_errors(found):
    table = manifests.caught_table(found)
    rows = table.split("\n\n")[0].splitlines()[1:]
    columns = list(next(iter(found.values())))  # the table's columns: the first copy's checks, in order
    for row, (label, checks) in zip(rows, found.items(), strict=True):
        assert row.startswith(label)
        words = row[len(label):].split()
        assert words == ["rejects" if checks[c] else "passes" for c in columns]


# --------------------------------------------------------------------------- netns.exposure_reading
port_lists = st.lists(st.integers(1024, 65535), min_size=1, max_size=6, unique=True)


@given(ports=port_lists, data=st.data())
def test_exposure_reading_counts_the_ports_it_was_given(ports, data):
    exposed = data.draw(st.one_of(st.none(), st.lists(st.sampled_from(ports), unique=True)))
    inside = data.draw(st.lists(st.sampled_from(ports), unique=True))
    text = netns.exposure_reading({"ports": ports, "exposed": exposed, "inside": inside})
    if exposed is None:
        assert "cannot check" in text and str(sorted(ports)) in text
    elif exposed:
        assert text.startswith(f"Warning: {len(exposed)} of the {len(ports)} worker ports (")
        assert ", ".join(map(str, sorted(exposed))) in text
    else:
        assert f"none of the {len(ports)} worker ports listens beyond loopback" in text
    if exposed is None or not exposed:
        inner = (f"all {len(ports)} listen" if sorted(inside) == sorted(ports) else
                 f"{len(inside)} of {len(ports)} listen")
        assert text.endswith(f"inside the workers' network {inner}.")
    assert ("Warning" in text) == bool(exposed)


def test_exposure_reading_ignores_ports_that_are_not_the_workers_and_refuses_none():
    text = netns.exposure_reading({"ports": [1, 2], "exposed": [3], "inside": [1, 2, 3]})
    assert text.startswith("Seen from this kernel, none of the 2") and text.endswith("all 2 listen.")
    with pytest.raises(ValueError, match="ports"):
        netns.exposure_reading({"ports": [], "exposed": [], "inside": []})


# --------------------------------------------------------------------------- PrivateNetwork.reading
@given(mode=st.sampled_from([None, *sorted(netns.MODES)]), why=st.text("abc ", max_size=20),
       interfaces=st.lists(st.sampled_from(["lo", "eth0"]), max_size=2, unique=True))
def test_private_network_reading_warns_exactly_when_there_is_no_private_network(mode, why, interfaces):
    network = netns.PrivateNetwork(make=lambda: (mode, {}, why, interfaces))
    text = network.reading()
    assert text.startswith("Warning") == (mode is None)
    if mode is None:
        assert f"({why})" in text
    else:
        assert netns.MODES[mode] in text and (", ".join(interfaces) or "lo") in text
    assert not math.isnan(len(text))


# --------------------------------------------------------------------------- survivors_reading
codes = st.sampled_from([75, 75, -9, 1, 0, None])
times = st.one_of(st.none(), st.floats(min_value=-5, max_value=200, allow_nan=False))


@given(data=st.data(), n=st.integers(2, 6), bound=st.floats(min_value=0.5, max_value=120))
def test_survivors_reading_counts_a_survivor_as_exiting_by_itself_only_by_its_stated_rule(data, n, bound):
    exit_codes = data.draw(st.lists(codes, min_size=n, max_size=n))
    seconds = data.draw(st.lists(times, min_size=n, max_size=n))
    lost = data.draw(st.integers(0, n - 1))
    text = cluster.survivors_reading(exit_codes, seconds, lost, bound)
    assert text.startswith(f"Worker {lost} was killed.")
    by_itself = 0
    for i in range(n):
        if i == lost:
            continue
        t = seconds[i]
        printed = None if t is None else round(t, 1)
        ok = exit_codes[i] == 75 and printed is not None and printed <= bound
        by_itself += ok
        assert (f"Worker {i} exited by itself with code 75" in text) == ok
        if exit_codes[i] == -9:
            assert f"Worker {i} hung" in text
        if printed is not None and exit_codes[i] is not None:
            shown = f"{printed:.1f} s later" if printed >= 0 else f"{-printed:.1f} s before it"
            assert shown in text
    assert f"so {by_itself} of {n - 1} did" in text and f"within {bound:g} s" in text
    assert ("never fails, and is never replaced" in text) == (by_itself < n - 1)
    assert "still runs and never exits" not in text  # a worker that was killed is not alive


@given(data=st.data(), n=st.integers(2, 6), bound=st.floats(min_value=0.5, max_value=120))
def test_survivors_reading_of_a_hung_peer_never_promises_recovery_on_kubernetes(data, n, bound):
    """lost_alive: survivors that exit do not bring the job back on Kubernetes; SLURM's kill-on-bad-exit does."""
    exit_codes = data.draw(st.lists(codes, min_size=n, max_size=n))
    seconds = data.draw(st.lists(times, min_size=n, max_size=n))
    lost = data.draw(st.integers(0, n - 1))
    text = cluster.survivors_reading(exit_codes, seconds, lost, bound, lost_how="hung", lost_alive=True)
    all_exited = all(exit_codes[i] == 75 and seconds[i] is not None and round(seconds[i], 1) <= bound
                     for i in range(n) if i != lost)
    assert (f"worker {lost} still runs and never exits" in text) == all_exited
    assert ("makes no progress until activeDeadlineSeconds" in text) == all_exited
    assert ("srun --kill-on-bad-exit=1 ends the whole step" in text) == all_exited
    assert ("never fails, and is never replaced" in text) == (not all_exited)


@pytest.mark.parametrize("args, match", [
    (([75, -9], [1.0, 0.0], 2, 10), "lost=2"),
    (([75, -9], [1.0, 0.0], True, 10), "lost=True"),
    (([75, -9], [1.0], 1, 10), "seconds has 1 entries"),
    (([75, -9], [1.0, 0.0], 1, 0), "bound=0"),
])
def test_survivors_reading_refuses_bad_arguments(args, match):
    with pytest.raises(ValueError, match=match):
        cluster.survivors_reading(*args)


def test_survivors_reading_of_a_hang():
    text = cluster.survivors_reading([75, 75, -9], [3.04, 3.1, 0.0], 2, 8, lost_how="hung halfway through epoch 1")
    assert text.startswith("Worker 2 hung halfway through epoch 1. "
                           "Worker 0 exited by itself with code 75, 3.0 s later.")
    assert "so 2 of 2 did: on Kubernetes their pods fail and the Job replaces them." in text
    hung = cluster.survivors_reading([75, 75, -9], [3.04, 3.1, 0.0], 2, 8, lost_how="hung", lost_alive=True)
    assert ("the Job replaces them, but worker 2 still runs and never exits: the new workers wait for it to join, "
            "so on Kubernetes the job makes no progress until activeDeadlineSeconds") in hung


def test_survivors_reading_of_a_survivor_tensorflow_aborted_counts_it_as_ended_and_says_how():
    """On a loaded machine a timed-out collective sometimes makes TensorFlow abort the survivor (SIGABRT, -6)
    before the script's handler exits with 75: it still ended by itself within the bound and its pod fails."""
    text = cluster.survivors_reading([-6, -9], [3.04, 0.0], 1, 8, lost_how="hung", lost_alive=True)
    assert ("Worker 0 ended by itself 3.0 s later, but not with code 75: TensorFlow aborted the process (SIGABRT)"
            in text)
    assert "or by TensorFlow's abort (SIGABRT) within 8 s; so 1 of 1 did (1 by the abort)" in text
    assert "but worker 1 still runs and never exits" in text and "never fails, and is never replaced" not in text
    assert "exits with code 75 or crashes" in text
    late = cluster.survivors_reading([-6, -9], [9.0, 0.0], 1, 8)  # past the bound: not counted, and no abort rule
    assert "so 0 of 1 did" in late and "failed with exit code -6, not 75" in late and "by the abort" not in late
    normal = cluster.survivors_reading([75, -9], [3.04, 0.0], 1, 8)  # the usual run's sentence is unchanged
    assert 'ends with code 75 (the script\'s "lost the cluster") within 8 s; so 1 of 1 did:' in normal
