"""The course's socket guard: with COURSE_SOCKET_GUARD=1, a Python may reach only this machine.

`tools/offline.py` puts this folder on PYTHONPATH when it cannot cut the network with a network
namespace (`unshare -n`). Every Python started then (pytest, Jupyter kernels, the notebooks' child
processes) refuses connections and name lookups that leave the machine, so a notebook that reaches
the internet fails its test instead of passing on a connected machine.
"""

import errno
import ipaddress
import os
import socket

if os.environ.get("COURSE_SOCKET_GUARD") == "1":
    _connect, _connect_ex, _getaddrinfo = socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo

    def _local(host) -> bool:
        if host in ("localhost", "", None):
            return True
        try:
            return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
        except ValueError:
            return False

    def _refuse(address):
        return OSError(errno.ENETUNREACH,
                       f"network cut by the course's offline test: {address!r} is not on this machine")

    def connect(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _local(address[0]):
            raise _refuse(address)
        return _connect(self, address)

    def connect_ex(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _local(address[0]):
            return errno.ENETUNREACH
        return _connect_ex(self, address)

    def getaddrinfo(host, *args, **kwargs):
        if not _local(host):
            raise socket.gaierror(socket.EAI_NONAME, f"name lookup cut by the course's offline test: {host!r}")
        return _getaddrinfo(host, *args, **kwargs)

    socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo = connect, connect_ex, getaddrinfo
