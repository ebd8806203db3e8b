#!/usr/bin/env python3
"""A stand-in for torchrun, for the tests: Debian's torchrun (torch 1.13 on
Python 3.11) fails in its own argument handling before it starts a rank.

    torchrun_env.py N [--only R,...] [--agent-store] -- CMD ARGS...

starts N copies of CMD with torchrun's environment (RANK, LOCAL_RANK,
WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RUN_ID),
every one inheriting this process's stdin, stdout and stderr, as torchrun
does. When one of them fails, it kills the others, says which rank on
stderr and exits 1, as torchrun does (in one line); when all end with
status 0, it exits 0. --only starts those ranks alone (a rank that never
comes). --agent-store serves the ranks' TCPStore here and says so in
TORCHELASTIC_USE_AGENT_STORE, as torchrun's agent of torch ≥ 2 does. Its
ranks die with it (PR_SET_PDEATHSIG), and SIGINT or SIGTERM kill them.
"""

import ctypes
import os
import signal
import socket
import subprocess
import sys


def _die_with_parent():
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)


def main(argv):
    if "--" not in argv:
        print("usage: torchrun_env.py N [--only R,...] [--agent-store] -- CMD ARGS...", file=sys.stderr)
        return 2
    cut = argv.index("--")
    opts, cmd = argv[:cut], argv[cut + 1 :]
    n = int(opts[0])
    only = [int(r) for r in opts[opts.index("--only") + 1].split(",")] if "--only" in opts else range(n)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    agent = {}
    if "--agent-store" in opts:
        import datetime

        import torch.distributed as td

        timeout = datetime.timedelta(seconds=60)
        # Held in a variable: it serves while we run.
        store = td.TCPStore("127.0.0.1", port, n, True, timeout, wait_for_workers=False)  # noqa: F841
        agent = {"TORCHELASTIC_USE_AGENT_STORE": "True", "TORCHELASTIC_RESTART_COUNT": "0"}
    procs = {}
    for r in only:
        env = dict(
            os.environ,
            RANK=str(r),
            LOCAL_RANK=str(r),
            WORLD_SIZE=str(n),
            LOCAL_WORLD_SIZE=str(n),
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=str(port),
            TORCHELASTIC_RUN_ID="tests",
            **agent,
        )
        procs[r] = subprocess.Popen(cmd, env=env, preexec_fn=_die_with_parent)

    def stop(signum, frame):
        for p in procs.values():
            if p.poll() is None:
                p.kill()
        os._exit(128 + signum)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    by_pid = {p.pid: r for r, p in procs.items()}
    left = set(by_pid)
    while left:
        pid, status = os.wait()
        if pid not in left:
            continue
        left.discard(pid)
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            for p in procs.values():
                if p.pid in left:
                    p.kill()
            why = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
            print(
                f"torchrun_env: rank {by_pid[pid]} failed ({why}); the other ranks were killed",
                file=sys.stderr,
                flush=True,
            )
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
