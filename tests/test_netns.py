"""helpers.netns: notebook 08's workers in a private network (a Linux network namespace with only loopback),
checked from the host while they listen; the warning where no namespace can be made."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from helpers import cluster, netns

LINUX = sys.platform.startswith("linux")
NOTEBOOK = cluster.ROOT / "notebooks" / "08_gpu_clusters.ipynb"

# A server like TensorFlow's: it listens on every interface (gRPC turns 0.0.0.0 into a dual-stack [::]).
WILDCARD_SERVER = """
    import json, os, socket, sys, time
    port = int(sys.argv[1])
    server = socket.socket(socket.AF_INET6)
    server.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    server.bind(("::", port))
    server.listen(8)
    print("listening", flush=True)
    time.sleep(120)
"""
# Connects to a port on 127.0.0.1 and says whether it could.
CLIENT = """
    import socket, sys
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5).close()
        print("connected", flush=True)
    except OSError as error:
        print("refused", error, flush=True)
"""
# A TensorFlow gRPC server, the one every MultiWorkerMirroredStrategy worker starts.
TF_SERVER = """
    import json, os, time
    import tensorflow as tf
    config = json.loads(os.environ["TF_CONFIG"])
    server = tf.distribute.Server(tf.train.ClusterSpec(config["cluster"]), job_name="worker",
                                  task_index=config["task"]["index"], protocol="grpc", start=True)
    print("listening", server.target, flush=True)
    time.sleep(120)
"""


def write(folder: Path, name: str, code: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(code))
    return path


def no_namespace():
    return None, {}, "fake: this machine cannot make a network namespace", []


@pytest.fixture(scope="module")
def network():
    made = netns.PrivateNetwork()
    if not made.private:
        pytest.skip(f"no network namespace here: {made.why_not}")
    yield made
    made.close()


# --------------------------------------------------------------------------- what TensorFlow does, and the fix

@pytest.mark.skipif(not LINUX, reason="network namespaces are Linux's")
def test_tensorflow_listens_on_every_interface_and_the_private_network_keeps_it_off_the_host(tmp_path, network):
    """The finding and its fix, measured with a real TensorFlow server while it listens."""
    script = write(tmp_path, "tf_server.py", TF_SERVER)
    ports = cluster.free_ports(2)
    configs = [cluster.tf_config([f"127.0.0.1:{port}"], 0) for port in ports]
    with cluster.LocalCluster(script, configs[:1], log_dir=tmp_path / "open") as open_, \
            cluster.LocalCluster(script, configs[1:], log_dir=tmp_path / "private", network=network) as private:
        assert open_.wait_for(0, "listening", timeout=120), open_.log(0)
        assert private.wait_for(0, "listening", timeout=120), private.log(0)
        without = netns.exposure(open_.ports, open_.pids)
        within = netns.exposure(private.ports, private.pids)
        inner_interfaces = netns.interfaces(private.pids[0])
    # Without a private network TensorFlow's server is reachable from the network (GrpcServer::Init binds 0.0.0.0).
    assert without == {"ports": [ports[0]], "exposed": [ports[0]], "inside": [ports[0]]}
    # In one, the host sees nothing listening on the port; the server listens inside, where only loopback exists.
    assert within == {"ports": [ports[1]], "exposed": [], "inside": [ports[1]]}
    assert inner_interfaces == ["lo"]


@pytest.mark.skipif(not LINUX, reason="network namespaces are Linux's")
def test_a_restarted_worker_joins_the_same_private_network_and_the_host_cannot_connect(tmp_path, network):
    assert network.mode in netns.MODES and network.interfaces == ["lo"]
    server, client = write(tmp_path, "server.py", WILDCARD_SERVER), write(tmp_path, "client.py", CLIENT)
    port = cluster.free_ports(1)[0]
    with cluster.LocalCluster(server, [None], args=[port], log_dir=tmp_path / "a", network=network) as first:
        assert first.wait_for(0, "listening", timeout=30)
        assert netns.exposure([port], first.pids) == {"ports": [port], "exposed": [], "inside": [port]}
        with cluster.LocalCluster(client, [None], args=[port], log_dir=tmp_path / "b", network=network) as later:
            assert later.wait(timeout=30) == [0]
        assert later.log(0).startswith("connected"), later.log(0)  # a later cluster shares the namespace
        with pytest.raises(OSError):  # this kernel, on the host's network, cannot reach the worker
            socket.create_connection(("127.0.0.1", port), timeout=2).close()


@pytest.mark.skipif(not LINUX, reason="network namespaces are Linux's")
def test_a_worker_that_cannot_enter_the_network_never_starts(tmp_path):
    script = write(tmp_path, "hello.py", "print('started')\n")
    broken = netns.PrivateNetwork(make=lambda: ("netns", {"net": os.open(os.devnull, os.O_RDONLY)}, "", ["lo"]))
    try:
        with cluster.LocalCluster(script, [None], log_dir=tmp_path, network=broken) as c:
            assert c.wait(timeout=30) == [cluster.LAUNCH_FAILED]
        assert "could not enter the workers' private network (net)" in c.log(0) and "started" not in c.log(0)
    finally:
        broken.close()
    with pytest.raises(ValueError, match="network is closed"):
        cluster.LocalCluster(script, [None], log_dir=tmp_path, network=broken)
    with pytest.raises(RuntimeError, match="closed"):
        broken.setns_args()
    broken.close()  # twice is fine


@pytest.mark.skipif(not (LINUX and os.geteuid() == 0 and shutil.which("setpriv") and os.access("/usr/bin/python3",
                                                                                              os.X_OK)),
                    reason="needs Linux, root to drop to an ordinary user, setpriv and /usr/bin/python3")
def test_an_ordinary_user_gets_a_private_network_through_a_user_namespace():
    folder = Path(tempfile.mkdtemp())
    try:
        folder.chmod(0o755)
        shutil.copy(Path(netns.__file__), folder / "netns.py")
        (folder / "launcher.py").write_text(cluster._LAUNCHER)
        write(folder, "server.py", WILDCARD_SERVER)
        write(folder, "run.py", """
            import importlib.util, json, os, subprocess, sys
            spec = importlib.util.spec_from_file_location("netns", sys.argv[1] + "/netns.py")
            netns = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(netns)
            launcher = open(sys.argv[1] + "/launcher.py").read()
            network = netns.PrivateNetwork(make=lambda: netns._make_namespace(python=sys.executable))
            out = {"uid": os.getuid(), "mode": network.mode, "why": network.why_not}
            if network.private:
                worker = subprocess.Popen([sys.executable, "-c", launcher, str(os.getpid()), "1", *network.setns_args(),
                                           sys.executable, sys.argv[1] + "/server.py", sys.argv[2]],
                                          stdout=subprocess.PIPE, text=True, pass_fds=tuple(network.fds.values()))
                out["said"] = worker.stdout.readline().strip()
                out["inside"] = netns.listening_ports(worker.pid)
                out["interfaces"] = netns.interfaces(worker.pid)
                out["host"] = netns.listening_ports(os.getpid())
                worker.kill()
                worker.wait()
            network.close()
            print(json.dumps(out))
        """)
        for path in folder.iterdir():
            path.chmod(0o644)
        port = cluster.free_ports(1)[0]
        done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3",
                               str(folder / "run.py"), str(folder), str(port)], capture_output=True, text=True,
                              timeout=60)
        out = json.loads(done.stdout.splitlines()[-1])
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert out["uid"] == 65534
    if out["mode"] is None:
        pytest.skip(f"this kernel gives ordinary users no user namespace: {out['why']}")
    assert out["mode"] == "userns" and out["said"] == "listening" and out["interfaces"] == ["lo"]
    assert ["::", port] in out["inside"] and not any(p == port for _, p in out["host"])


# --------------------------------------------------------------------------- no namespace: a warning first

def test_without_a_namespace_the_reading_is_a_plain_warning():
    failed = netns.PrivateNetwork(make=no_namespace)
    assert not failed.private and failed.mode is None
    text = failed.reading()
    assert text.startswith("Warning: the workers' gRPC servers will listen on every network interface")
    assert "fake: this machine cannot make a network namespace" in text and "firewall" in text


@pytest.mark.parametrize("hosted, advice", [("colab", "hosted"), ("kaggle", "hosted"), (None, "elsewhere")])
def test_a_refused_namespace_says_who_can_reach_the_workers_and_what_to_do_there(hosted, advice):
    """Colab, Kaggle, Docker, Ubuntu 24.04's AppArmor default and most clusters refuse the namespace."""
    failed = netns.PrivateNetwork(make=no_namespace, hosted=hosted)
    assert failed.advice == advice and netns.ADVICE[advice] in failed.reading()
    assert "127.0.0.1" in failed.reading()  # reachable from every process of this machine, not only the network
    with netns.PrivateNetwork(make=lambda: ("userns", {}, "", ["lo"]), hosted=hosted) as private:
        assert private.advice is None
    with pytest.raises(ValueError, match="hosted="):
        netns.PrivateNetwork(make=no_namespace, hosted="binder")


def test_other_systems_have_no_namespace(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    mode, fds, why, names = netns._make_namespace()
    assert (mode, fds, names) == (None, {}, []) and "network namespaces are Linux's" in why and "darwin" in why


def notebook_code() -> list[str]:
    nb = json.loads(NOTEBOOK.read_text())
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


def test_the_notebook_prints_the_warning_before_any_worker_starts_when_no_namespace_can_be_made(
        monkeypatch, capsys, tmp_path):
    cells = notebook_code()
    first_start = next(i for i, c in enumerate(cells) if "LocalCluster(" in c)
    made = next(i for i, c in enumerate(cells) if "PrivateNetwork()" in c)
    assert made < first_start
    lines = [line for line in cells[made].splitlines() if re.match(r"(network = |print\(network\.)", line)]
    assert len(lines) == 2, cells[made]
    monkeypatch.setattr(netns, "_make_namespace", no_namespace)
    import helpers

    scope = {"helpers": helpers}
    exec("\n".join(lines), scope)  # the notebook's own lines, where no namespace can be made
    assert capsys.readouterr().out.startswith("Warning: the workers' gRPC servers will listen on every network")
    # Then the workers start on this machine's network: what the warning is about.
    server = write(tmp_path, "server.py", WILDCARD_SERVER)
    port = cluster.free_ports(1)[0]
    with cluster.LocalCluster(server, [None], args=[port], log_dir=tmp_path, network=scope["network"]) as c:
        assert c.wait_for(0, "listening", timeout=30)
        exposed = netns.exposure([port], c.pids)["exposed"]
    assert exposed in ([port], None), exposed


def test_every_worker_of_the_notebook_starts_in_its_private_network_and_the_network_is_closed_at_the_end():
    cells = notebook_code()
    starts = [c for c in cells if "LocalCluster(" in c]
    assert len(starts) == 3 and all("network=network" in c for c in starts)  # run 1, the hang, run 2
    assert all("helpers.netns.exposure(run_" in c for c in starts)
    last = max(i for i, c in enumerate(cells) if "LocalCluster(" in c)
    assert any("network.close()" in c for c in cells[last + 1:])


# --------------------------------------------------------------------------- reading sockets

@pytest.mark.parametrize("ip, loopback", [("127.0.0.1", True), ("::1", True), ("::ffff:127.0.0.1", True),
                                          ("0.0.0.0", False), ("::", False), ("192.168.1.20", False),
                                          ("fe80::1%eth0", False)])
def test_loopback_addresses(ip, loopback):
    assert netns._is_loopback(ip) is loopback


@pytest.mark.skipif(not LINUX, reason="/proc is Linux's")
def test_listening_ports_reads_both_families_from_proc():
    with socket.socket() as four, socket.socket(socket.AF_INET6) as six:
        four.bind(("127.0.0.1", 0))
        four.listen(1)
        six.bind(("::1", 0))
        six.listen(1)
        found = netns.listening_ports(os.getpid())
        assert ("127.0.0.1", four.getsockname()[1]) in found and ("::1", six.getsockname()[1]) in found
        assert netns.exposure([four.getsockname()[1], six.getsockname()[1]], [os.getpid()])["exposed"] == []
    assert netns.listening_ports(2**22 + 12345) == [] and netns.interfaces(2**22 + 12345) == []


def test_exposure_reading_says_what_was_measured():
    assert netns.exposure_reading({"ports": [1, 2], "exposed": [2], "inside": [1, 2]}).startswith(
        "Warning: 1 of the 2 worker ports (2) listen on every interface")
    assert "cannot check" in netns.exposure_reading({"ports": [1], "exposed": None, "inside": []})
    assert "1 of 2 listen" in netns.exposure_reading({"ports": [1, 2], "exposed": [], "inside": [1]})
    with pytest.raises(ValueError, match="mode="):
        netns.PrivateNetwork(make=lambda: ("vpn", {}, "", []))
