"""The sandbox: every command a tool starts is confined by its thread's policy, by the kernel.

- ``policy.py``: the policy value (mode, network, writable roots, TMPDIR, hidden paths).
- ``layout.py``: what a policy makes writable and read-only on this filesystem (git dirs).
- ``landlock.py``, ``seccomp.py``, ``namespaces.py``, ``libc.py``: the kernel interfaces.
- ``confine.py``: applies a policy to the current process before exec.
- ``forkserver.py`` / ``launcher.py``: a single-threaded process that forks, confines and
  execs commands for the threaded daemon, and the daemon's trio client of it.
- ``support.py``: what this kernel can enforce, tried for real at start.
- ``runtime.py``: the daemon's sandbox: support, fork server, per-thread policies.
"""
