"""jupyterlab-nvdashboard is pinned, installed at that version and switched on in `make lab`'s JupyterLab.

Fast checks for `make test`; `tests/test_browser_dashboard.py` opens its panels in a real browser. The
server side is read from the installed package: `_jupyter_server_extension_points` and the
`jupyter_server_config.d/jupyterlab_nvdashboard.json` file pip installs switch it on;
`handlers.setup_handlers` registers the GPU websockets only when `apps.gpu.ngpus > 0`.
"""

from __future__ import annotations

import json
import re
from importlib import metadata
from pathlib import Path

import pytest
from jupyter_core.paths import jupyter_config_path, jupyter_path

ROOT = Path(__file__).resolve().parent.parent
NAME = "jupyterlab-nvdashboard"


def pinned_version() -> str:
    [version] = re.findall(rf"^{NAME}==(\S+)\s*$", (ROOT / "requirements.txt").read_text(), flags=re.M)
    return version


def test_requirements_pin_the_dashboard_and_say_it_runs_without_a_gpu():
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    above = lines[: next(i for i, line in enumerate(lines) if line.startswith(f"{NAME}=="))]
    comment = []  # the comment lines right above the pin
    while above and above[-1].startswith("#"):
        comment.insert(0, above.pop().lstrip("# "))
    comment = " ".join(comment).lower()
    assert re.fullmatch(r"\d+\.\d+\.\d+", pinned_version())
    assert "without a gpu" in comment and "machine resources" in comment, comment


def test_the_pinned_version_is_installed_with_its_frontend():
    assert metadata.version("jupyterlab_nvdashboard") == pinned_version()
    found = [Path(d) / NAME / "package.json" for d in jupyter_path("labextensions")]
    [package] = [json.loads(p.read_text()) for p in found if p.exists()][:1]
    assert package["version"] == pinned_version(), package["version"]


def test_the_server_extension_is_enabled_for_jupyterlab():
    enabled = {}
    for folder in reversed(jupyter_config_path()):  # the first folder wins, as in jupyter_server
        for config in sorted(Path(folder).glob("jupyter_server_config.d/*.json")):
            enabled.update(json.loads(config.read_text()).get("ServerApp", {}).get("jpserver_extensions", {}))
    assert enabled.get("jupyterlab_nvdashboard") is True, enabled


class FakeWebApp:
    settings = {"base_url": "/"}

    def __init__(self):
        self.routes = []

    def add_handlers(self, host, handlers):
        self.routes += [pattern for pattern, _ in handlers]


@pytest.mark.parametrize("ngpus, gpu_routes", [(0, 0), (2, 5)])
def test_without_a_gpu_the_server_offers_the_machine_panel_and_no_gpu_data(monkeypatch, ngpus, gpu_routes):
    from jupyterlab_nvdashboard import apps, handlers

    monkeypatch.setattr(apps.gpu, "ngpus", ngpus)
    app = FakeWebApp()
    handlers.setup_handlers(app)
    assert "/nvdashboard/cpu_resource" in app.routes and "/nvdashboard/accelerators/check" in app.routes
    assert len([r for r in app.routes if re.search(r"gpu_|pci_|nvlink_", r)]) == gpu_routes, app.routes
