"""Run a command with the network cut: only this machine (loopback) can be reached.

    .venv/bin/python tools/offline.py -- COMMAND [ARGS...]

Where the machine allows it, the command runs in a new network namespace with only the loopback
interface up (`unshare -n`, then `ip link set lo up`): nothing can leave, whatever language the
code is in. Otherwise every Python it starts gets the socket guard in `tools/offline_guard/`, which
refuses connections and name lookups that leave the machine. `COURSE_OFFLINE` tells the command
which of the two is in force ("netns" or "socket-guard"); the tests print it and check it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

GUARD = Path(__file__).resolve().parent / "offline_guard"


def netns_works() -> bool:
    """True when `unshare -n` can make a namespace here and `ip` can bring its loopback up."""
    if not (shutil.which("unshare") and shutil.which("ip")):
        return False
    probe = subprocess.run(["unshare", "-n", "ip", "link", "set", "lo", "up"], capture_output=True)
    return probe.returncode == 0


def command(argv: list[str], environ: dict[str, str] | None = None) -> tuple[list[str], dict[str, str]]:
    """The command line and environment that run `argv` offline."""
    if not argv:
        raise ValueError("give the command to run after --, e.g. tools/offline.py -- pytest tests")
    env = dict(os.environ if environ is None else environ)
    if netns_works():
        env["COURSE_OFFLINE"] = "netns"
        return ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "offline", *argv], env
    env["COURSE_OFFLINE"] = "socket-guard"
    env["COURSE_SOCKET_GUARD"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(GUARD), env.get("PYTHONPATH", "")) if p)
    return list(argv), env


def main(argv: list[str]) -> int:
    if argv[:1] == ["--"]:
        argv = argv[1:]
    try:
        cmd, env = command(argv)
    except ValueError as exc:
        print(f"tools/offline.py: {exc}", file=sys.stderr)
        return 2
    print(f"Network cut ({env['COURSE_OFFLINE']}): only this machine can be reached.", flush=True)
    return subprocess.run(cmd, env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
