"""Plotting code too long to inline into a notebook (01 and later: curves and bars).

:class:`CurvePlotter` keeps each run's colour from plot to plot, so "Adam" is the same colour in
the loss plot and the accuracy plot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


class CurvePlotter:
    """Plot named curves with a colour that stays with each name.

    Example:
        >>> p = CurvePlotter()
        >>> ax = p.plot({"sgd": [1.0, 0.8], "adam": [1.0, 0.5]}, xlabel="epoch", ylabel="loss")
        >>> p.colour("sgd") == p.colour("sgd")
        True
    """

    def __init__(self) -> None:
        import matplotlib.pyplot as plt

        self._cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        self._colours: dict[str, str] = {}

    def colour(self, name: str) -> str:
        if name not in self._colours:
            self._colours[name] = self._cycle[len(self._colours) % len(self._cycle)]
        return self._colours[name]

    def plot(self, curves: Mapping[str, Sequence[float]], *, x: Sequence[float] | None = None,
             xlabel: str = "", ylabel: str = "", title: str = "", ax: Any = None,
             logx: bool = False, logy: bool = False, style: Mapping[str, str] | None = None) -> Any:
        """Draw each curve; `style` maps a name to a line style (e.g. "--" for validation)."""
        import matplotlib.pyplot as plt

        if not curves:
            raise ValueError("curves is empty: pass at least one {name: values}.")
        if ax is None:
            _, ax = plt.subplots(figsize=(6, 3.5))
        for name, values in curves.items():
            xs = list(x) if x is not None else list(range(1, len(values) + 1))
            ax.plot(xs, list(values), (style or {}).get(name, "-"), marker="o", markersize=3,
                    color=self.colour(name.split(" ")[0]), label=name)
        ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
        if logx:
            ax.set_xscale("log", base=2)
        if logy:
            ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
        ax.legend()
        return ax


def bars(values: Mapping[str, float], *, ylabel: str = "", title: str = "", ax: Any = None,
         fmt: str = "{:.3g}") -> Any:
    """A labelled bar chart of name -> value, each bar annotated with its value.

    Example:
        >>> ax = bars({"CPU": 1.0, "GPU": 13.8}, ylabel="speed-up")
    """
    import matplotlib.pyplot as plt

    if not values:
        raise ValueError("values is empty: pass at least one {name: value}.")
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    names = list(values)
    heights = [float(values[n]) for n in names]
    rects = ax.bar(names, heights, color=[f"C{i}" for i in range(len(names))])
    ax.bar_label(rects, labels=[fmt.format(h) for h in heights], padding=2)
    ax.set(ylabel=ylabel, title=title)
    ax.grid(True, axis="y", alpha=0.3)
    return ax
