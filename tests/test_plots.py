"""Plot helpers keep colours per name and refuse empty input."""

import pytest

from helpers import plots


def test_curve_plotter_keeps_each_names_colour_across_plots():
    p = plots.CurvePlotter()
    ax1 = p.plot({"sgd": [1, 0.5], "adam": [1, 0.2]}, xlabel="epoch", ylabel="loss")
    ax2 = p.plot({"adam": [0.5, 0.9], "sgd": [0.4, 0.6]}, ylabel="accuracy")
    colour = {line.get_label(): line.get_color() for line in ax1.lines}
    assert all(colour[line.get_label()] == line.get_color() for line in ax2.lines)
    assert colour["sgd"] != colour["adam"]


def test_bars_annotate_values_and_empty_input_is_refused():
    ax = plots.bars({"CPU": 1.0, "GPU": 13.76})
    assert [t.get_text() for t in ax.texts] == ["1", "13.8"]
    with pytest.raises(ValueError, match="values is empty"):
        plots.bars({})
    with pytest.raises(ValueError, match="curves is empty"):
        plots.CurvePlotter().plot({})
