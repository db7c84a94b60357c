"""Property tests for the readings of notebook 05: every sentence agrees with the numbers it was given.

The reading functions of ``helpers.batching`` are fed edge cases (equal values, zero, tiny, huge, one-element
inputs) by hypothesis; the sentences the notebook writes in its own cells (the throughput gain, the scaling
rule, the loss curves' edge of stability) are run from the notebook's source with made-up numbers, so the
rule a learner reads on the page is the rule tested here.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from helpers import batching

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "05_batch_size_and_learning_rate.ipynb"
CELLS = ["".join(c["source"]) for c in json.loads(NOTEBOOK.read_text())["cells"] if c["cell_type"] == "code"]

batches = st.integers(1, 2**20)
byte_counts = st.floats(0, 1e12, allow_nan=False)
positive_bytes = st.floats(1.0, 1e12, allow_nan=False)


def numbers_in(text: str) -> list[float]:
    return [float(n.replace(",", "")) for n in re.findall(r"-?\d[\d,]*(?:\.\d+)?", text)]


# ---------------------------------------------------------------- error_line
@given(st.sampled_from(batching.OOM_TEXTS), st.text(alphabet="abc []{}_0123456789", max_size=40),
       st.text(alphabet="abc 0123456789[]", max_size=40))
def test_error_line_starts_at_the_out_of_memory_text_and_keeps_it(oom, before, after):
    message = f"{{{{function_node __inference_f_1}}}} {before}{oom}{after}\n\t [[{{{{node a}}}}]]"
    line = batching.error_line(message)
    assert line.startswith(oom) and line in message


@given(st.text(max_size=80))
def test_error_line_is_a_line_of_the_message_or_empty(message):
    line = batching.error_line(message)
    assert line == "" or line in message or line in re.sub(r"^\{\{function_node [^}]*\}\}\s*", "", message.strip())


# ---------------------------------------------------------------- wall_lines
peaks_maps = st.dictionaries(st.integers(1, 2**17), positive_bytes, max_size=6)


@given(peaks_maps, st.sampled_from([None, "oom", "other"]), st.integers(1, 2**18),
       st.one_of(st.none(), st.floats(0, 9, allow_nan=False)))
def test_wall_lines_name_the_case_that_happened_and_its_batches(peaks, case, failed_at, loss_after):
    answer = {"peaks": peaks, "failed_at": None if case is None else failed_at, "out_of_memory": case == "oom",
              "error_type": {"oom": "ResourceExhaustedError", "other": "InternalError", None: None}[case],
              "error": "OOM when allocating tensor" if case == "oom" else "cuDNN failed" if case else "",
              "loss_after": loss_after}
    text = " ".join(batching.wall_lines(answer, "this device"))
    fitted = max(peaks, default=None)
    if case == "oom":
        assert f"batch {failed_at} raised ResourceExhaustedError" in text and "no wall" not in text
        assert (f"batch {fitted} fitted" in text) if fitted else "the first size tried" in text
        assert ("After catching it" in text) is (loss_after is not None)
    elif case == "other":
        assert "which is not an out-of-memory error, so it is no wall" in text and "raised" not in text
    else:
        assert f"every batch up to {fitted} fitted: no wall within the sweep" in text


@given(st.integers(1, 2**16), st.integers(1, 2**16))
def test_wall_lines_say_the_int32_cap_only_when_the_next_doubling_passes_it(fitted, per_sample):
    text = batching.wall_lines({"peaks": {fitted: 1e6}, "failed_at": None}, "this GPU", per_sample=per_sample)[0]
    assert ("would put more than 2**31 - 1 elements" in text) is (2 * fitted * per_sample > batching.INT32_MAX)


def test_wall_lines_without_an_answer_say_the_child_failed():
    assert "gave no answer (exit code 1)" in batching.wall_lines({}, "this GPU", child_error="exit code 1")[0]


# ---------------------------------------------------------------- prediction_line
@given(st.integers(0, 2**24), st.one_of(st.none(), st.integers(1, 2**20)), st.one_of(st.none(), st.integers(1, 2**21)))
def test_prediction_line_agrees_with_the_bracket_it_was_given(predicted, fitted, failed_at):
    assume(fitted is None or failed_at is None or fitted < failed_at)
    line = batching.prediction_line(predicted, fitted, failed_at)
    assert f"about {predicted:,} samples" in line
    if failed_at:
        inside = (fitted or 0) <= predicted < failed_at
        assert ("the measured wall: the bytes per sample of the sweep do not hold" in line) is not inside
        if not inside:
            assert ("above" in line) is (predicted >= failed_at) and ("below" in line) is (predicted < failed_at)
    elif fitted is None:
        assert "nothing measured" in line
    else:
        assert ("agrees with finding no wall" in line) is (predicted >= fitted)
        assert ("beyond every batch tried" in line) is (predicted > fitted)
        assert ("overestimate" in line) is (predicted < fitted)


def test_prediction_line_at_exactly_the_largest_batch_is_not_beyond_it():
    line = batching.prediction_line(1024, 1024, None)
    assert "beyond" not in line and "exactly the largest batch tried" in line


def test_prediction_line_below_a_first_size_that_failed_agrees():
    line = batching.prediction_line(300, None, 512)
    assert "do not hold" not in line and "below batch 512, the first size tried" in line


# ---------------------------------------------------------------- dips_note
@given(st.dictionaries(st.integers(1, 4096), st.floats(1.0, 1e10, allow_nan=False), min_size=2, max_size=8))
def test_dips_note_names_exactly_the_batches_whose_peak_fell(peaks):
    note = batching.dips_note(peaks)
    points = sorted(peaks.items())
    fell = [(a, b, pa - pb) for (a, pa), (b, pb) in zip(points, points[1:], strict=False) if pb < pa]
    assert bool(note) is bool(fell)
    named = re.findall(r"[Bb]atch (\d+) peaked ([\d.e+-]+) MB below batch (\d+)", note)
    assert [(int(b), int(a)) for b, _, a in named] == [(b, a) for a, b, _ in fell]
    for (_, gap, _), (_, _, true_gap) in zip(named, fell, strict=True):
        assert float(gap) > 0 and math.isclose(float(gap), true_gap / 1e6, rel_tol=0.5, abs_tol=0.05)


def test_dips_note_never_prints_a_dip_of_zero():
    assert "peaked 0.0 MB" not in batching.dips_note({32: 37_000_000.0, 64: 36_990_000.0})


@pytest.mark.parametrize("peaks", [{32: 5e6}, {}])
def test_dips_note_refuses_fewer_than_two_sizes(peaks):
    with pytest.raises(ValueError, match="peaks"):
        batching.dips_note(peaks)


# ---------------------------------------------------------------- peak_parts_line
@given(st.integers(1, 4096), byte_counts, byte_counts, byte_counts, byte_counts)
def test_peak_parts_line_splits_only_when_the_parts_add_up(batch, peak, before, scratch, chunk):
    line = batching.peak_parts_line(batch, peak, before, scratch, chunk)
    assert line.startswith(f"At batch {batch} the peak was {peak / 1e6:.2f} MB: {before / 1e6:.2f} MB")
    adds_up = peak - before - chunk >= 0 and chunk >= scratch
    assert ("the split below does not apply" in line) is not adds_up
    if adds_up:
        assert f"the other {(peak - before - chunk) / 1e6:.2f} MB" in line
        assert f"{(chunk - scratch) / 1e6:.2f} MB more" in line and "-" not in line.split(":", 1)[1]


@pytest.mark.parametrize("bad", [float("nan"), -1.0, float("inf"), "35 MB"])
def test_peak_parts_line_refuses_bad_byte_counts(bad):
    with pytest.raises(ValueError, match="peak"):
        batching.peak_parts_line(32, bad, 0.0, 0.0, 0.0)


# ---------------------------------------------------------------- allocator_note
@given(st.text(max_size=60))
def test_allocator_note_speaks_only_when_the_cpu_allocator_is_named(error):
    assert batching.allocator_note(error) == ""
    named = batching.allocator_note(error + " by allocator bfc_cpu_allocator_for_gpu")
    assert "does not mean a GPU" in named and "process_state.cc" in named


# ---------------------------------------------------------------- tables
@given(st.dictionaries(st.integers(1, 4096), st.fixed_dictionaries(
    {"constant": st.floats(0, 1, allow_nan=False), "scaled": st.floats(0, 1, allow_nan=False)}), min_size=1,
    max_size=8))
def test_accuracy_table_difference_has_the_sign_of_scaled_minus_constant(acc):
    rows = batching.accuracy_table(acc, {b: 1 for b in acc}).splitlines()[1:]
    for row, (batch, a) in zip(rows, sorted(acc.items()), strict=True):
        cells = row.split()
        assert int(cells[0]) == batch and cells[-1] == f"{a['scaled'] - a['constant']:+.3f}"


@given(st.dictionaries(st.integers(1, 4096), st.floats(1, 1e12, allow_nan=False), min_size=2, max_size=8))
def test_memory_table_quotes_each_peak_and_its_share_per_sample(peaks):
    rows = batching.memory_table(peaks).splitlines()[1:]
    for row, (batch, peak) in zip(rows, sorted(peaks.items()), strict=True):
        assert row.split() == [str(batch), f"{peak / 1e6:.1f}", f"{peak / batch / 1e3:.1f}"]


# ---------------------------------------------------------------- the notebook's own sentences
def cell(marker: str) -> str:
    hits = [c for c in CELLS if marker in c]
    assert len(hits) == 1, f"{len(hits)} cells hold {marker!r}"
    return hits[0]


class _Batching:
    """helpers.batching for a cell run here: the real functions, no plots."""

    def __getattr__(self, name):
        return (lambda *a, **k: None) if name.startswith("plot_") else getattr(batching, name)


STUBS = {"math": math, "helpers": SimpleNamespace(batching=_Batching()), "plt": SimpleNamespace(show=lambda: None)}


def run_cell(marker: str, namespace: dict) -> tuple[str, dict]:
    """Run the notebook cell that holds `marker` on made-up numbers; what it printed, and its variables."""
    out: list[str] = []
    namespace = {**STUBS, "print": lambda *a, end="\n", **k: out.append(" ".join(map(str, a)) + end), **namespace}
    source = "\n".join(line for line in cell(marker).splitlines() if not line.startswith("import matplotlib"))
    exec(compile(source, marker, "exec"), namespace)  # the notebook's own cell
    return "".join(out), namespace


steps = st.floats(1e-5, 10, allow_nan=False)


@given(st.lists(steps, min_size=3, max_size=6))
def test_the_throughput_reading_follows_its_rule(step_times):
    sizes = [32 * 2**i for i in range(len(step_times))]
    step_s = dict(zip(sizes, step_times, strict=True))
    samples_per_s = {b: b / s for b, s in step_s.items()}
    text, _ = run_cell("GAIN = 1.1", {"sizes": sizes, "step_s": step_s, "samples_per_s": samples_per_s,
                                      "device": "CPU"})
    gain = samples_per_s[sizes[-1]] / samples_per_s[sizes[0]]
    assert f"processes {gain:.2f}x as many samples per second" in text
    assert ("shared by more samples" in text) is (gain > 1.1)
    assert ("does not help here" in text) is (gain <= 1.1)


accuracies = st.floats(0, 1, allow_nan=False)


@given(st.lists(st.tuples(accuracies, accuracies), min_size=2, max_size=5))
def test_the_scaling_rule_reading_agrees_with_the_accuracies(pairs):
    trained = [32 * 2**i for i in range(len(pairs))]
    final_accuracy = {b: {"constant": c, "scaled": s} for b, (c, s) in zip(trained, pairs, strict=True)}
    final_accuracy[32]["scaled"] = final_accuracy[32]["constant"]
    text, _ = run_cell('helped = [b for b in trained[1:]', {
        "trained": trained, "final_accuracy": final_accuracy, "base_batch": 32, "epochs": 2,
        "updates": {b: 20000 // b for b in trained}})
    big, base = trained[-1], final_accuracy[32]["constant"]
    constant, scaled = final_accuracy[big]["constant"], final_accuracy[big]["scaled"]
    assert ("reaches a higher accuracy than without it" in text) is (scaled > constant)
    assert ("did not reach a higher accuracy" in text) is (scaled <= constant)
    if scaled > constant and base > constant:
        share = (scaled - constant) / (base - constant)
        assert f"{share:.0%} of the way back" in text
    assert "of the way back" not in text or base > constant  # no share of a gap that does not exist
    assert ("(and beyond it)" in text) is (scaled > constant and scaled > base)
    helped = [b for b in trained[1:] if final_accuracy[b]["scaled"] > final_accuracy[b]["constant"]]
    assert f"Sizes the rule helped (scaled above constant): {', '.join(map(str, helped)) or 'none'};" in text


losses_ = st.floats(0.01, 50, allow_nan=False)


@given(st.lists(losses_, min_size=2, max_size=12))
def test_the_edge_of_stability_reading_agrees_with_the_curve(curve_losses):
    curve = [(i / 8, loss) for i, loss in enumerate(curve_losses)]
    text, _ = run_cell("ROSE = 1.2", {"trained": [32, 512], "losses": {512: {"scaled": curve}}, "base_lr": 0.01,
                                      "base_batch": 32, "results": {}, "scaled": 0.5, "constant": 0.4, "skipped": [],
                                      "final_accuracy": {}, "helped": [512]})
    start, worst, end = curve_losses[0], max(curve_losses), curve_losses[-1]
    assert f"{start:.2f} at the start, at most {worst:.2f}, {end:.2f} at the end" in text
    rose = worst > 1.2 * start
    assert ("never rose" in text) is not rose
    assert ("past the loss of guessing" in text) is (rose and worst > math.log(10))
    assert ("came back below its start" in text) is (rose and end < start)
    assert ("past the edge" in text) is (rose and end >= start)


@given(st.lists(st.floats(0.5, 30, allow_nan=False), min_size=3, max_size=6))
def test_the_convergence_budget_skips_only_middle_sizes_and_says_so(run_times):
    sizes = [32 * 2**i for i in range(len(run_times))]
    clock = {"now": 0.0}
    per_run = dict(zip(sizes, run_times, strict=True))

    def train(batch, rule):  # a made-up run that takes per_run[batch] seconds on a made-up clock
        clock["now"] += per_run[batch]
        return [(0, 2.3)], 0.5, 10

    text, ns = run_cell("BUDGET_S = 45", {"sizes": sizes, "SMOKE": False, "base_batch": sizes[0], "train": train,
                                          "time": SimpleNamespace(perf_counter=lambda: clock["now"])})
    trained, skipped = ns["trained"], ns["skipped"]
    assert sizes[0] in trained and sizes[-1] in trained and sorted(trained + skipped) == sizes
    assert f"Trained batch {', '.join(map(str, trained))} in {ns['spent']:.0f} s" in text
    assert ("; not trained: batch " + ", ".join(map(str, sorted(skipped))) in text) is bool(skipped)
    # the rule on the page: a middle size starts only when the time so far plus the last size's time fits
    now, last, expected = 0.0, 0.0, []
    for b in [sizes[0], sizes[-1], *sizes[-2:0:-1]]:
        if b in (sizes[0], sizes[-1]) or now + last <= ns["BUDGET_S"]:
            last = per_run[b] * (1 if b == sizes[0] else 2)
            now, expected = now + last, [*expected, b]
    assert trained == sorted(expected), (trained, expected)
    assert all(f"batch {b:>4}, constant rate" in text for b in trained)


@given(st.floats(1e6, 1e9, allow_nan=False), st.floats(0, 1e6, allow_nan=False))
def test_the_fixed_part_cell_quotes_the_buffer_it_computes(peak, before):
    text, _ = run_cell("state_bytes = 3 * 4", {
        "model": SimpleNamespace(count_params=lambda: 12810), "sweep": SimpleNamespace(
            answer={"in_use_before": {"32": before}}), "sizes": [32, 64, 128],
        "peaks": {32: peak, 64: peak, 128: peak + 1}, "hw": SimpleNamespace(gpu_count=0)})
    assert "3 x 4 B x 12,810 = 154 kB" in text
    assert "an im2col buffer of 304 images, 21,187,584 bytes" in text
