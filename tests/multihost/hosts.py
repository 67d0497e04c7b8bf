"""Test hosts: pretend machines on this one, for jobs whose ranks span hosts.

A host is a set of namespaces of its own: network, mount (its own ``/sys`` and a private tmpfs
on ``/dev/shm``), UTS (its hostname), IPC and PID. One process holds them, the host's PID 1
(``in_host.py init``, started by ``unshare``). Hosts hang off a bridge in a switch (one more
holder, with a network namespace of its own) by veth pairs: ``eth0`` in the host, ``port<i>``
on the bridge, addresses ``10.77.0.<i + 1>/24``. Ranks are entered into a host with
``nsenter``, so each sees the host's hostname, ``/dev/shm``, mount and PID namespaces: ctran's
host identity (hostname, boot id, mount and PID namespaces) differs between hosts with no
RCCLX_HOST_ID, and ranks on different hosts reach each other only through the veths.

Why holder processes and not named namespaces (``ip netns add``): nothing is made in the root
namespace or on the file system. Every namespace, veth, bridge and mount lives exactly as long
as its holder, so killing the holders (``Cluster.close``) removes all of it, and so does the
death of the process that made them, even a SIGKILL: unshare gets PR_SET_PDEATHSIG and passes
death on to the holder (``--kill-child``); a PID namespace's processes die with its PID 1. The
addresses and interface names are private to the namespaces, so runs side by side do not
collide. A holder carries HOLDER_ENV naming the process that made it; ``remove_stale`` (run
before every cluster) kills the holders whose maker is gone.

``Cluster.start`` runs a function as N ranks placed on hosts (``placement[r]`` is rank r's
host), like launcher.launch: it returns launcher.RankResults, each rank gets a context with the
launcher's interface (``unique_id()``, ``store()``, ``barrier()``) whose store is a FileStore in
a directory every host sees (the mount namespaces share the root file system), so the
rendezvous needs no network of its own and outlives any rank.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import launcher
from launcher import RankResult

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
IN_HOST = HERE / "in_host.py"
SUBNET = "10.77.0"
HOLDER_ENV = "RCCLX_TEST_HOST_HOLDER"
JOB_PREFIX = "rcclx-multihost-"
TOOLS = ("unshare", "nsenter", "ip")
# Variables of the launching process that must not reach a rank: its own rendezvous (each
# launch sets what it means) and anything that would fake the host separation.
DROPPED_ENV = re.compile(
    r"^(RANK|WORLD_SIZE|LOCAL_RANK|LOCAL_WORLD_SIZE|GROUP_RANK|MASTER_ADDR|MASTER_PORT|"
    r"NCCL_COMM_ID|RCCLX_HOST_ID|RCCLX_BOOTSTRAP_ADDR|RCCLX_LISTEN_ADDR|SLURM_.*|OMPI_.*|PMI_.*|"
    r"TORCHELASTIC_.*|TORCHCOMM_.*)$"
)


class HostSetupError(RuntimeError):
    pass


def unavailable_reason() -> str | None:
    """None when test hosts can be made here, else why not (for a skip)."""
    if os.geteuid() != 0:
        return "test hosts need root (network, mount and PID namespaces, veths, a bridge)"
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        return f"test hosts need {', '.join(TOOLS)}; not found: {', '.join(missing)}"
    probe = subprocess.run(
        [
            "unshare",
            "--fork",
            "--pid",
            "--mount-proc",
            "--net",
            "--uts",
            "--ipc",
            "--",
            "ip",
            "link",
            "add",
            "probe0",
            "type",
            "veth",
            "peer",
            "name",
            "probe1",
        ],
        capture_output=True,
        text=True,
        timeout=20,
    )
    if probe.returncode != 0:
        return f"cannot make namespaces with a veth here: {probe.stderr.strip()}"
    return None


# --- processes ------------------------------------------------------------------------------


def _die_with_parent() -> None:
    """preexec_fn: this child gets SIGKILL when the process that started it dies."""
    import ctypes

    ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


def _start_time(pid: int) -> str | None:
    """Field 22 of /proc/PID/stat (start time in ticks), None when the process is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2 :].split()[19]


def _alive(pid: int) -> bool:
    """The process exists and has not exited (a zombie holds no namespaces any more)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


def _owner_tag(pid: int | None = None) -> str:
    pid = os.getpid() if pid is None else pid
    return f"{pid}-{_start_time(pid)}"


def _owner_alive(tag: str) -> bool:
    pid, _, start = tag.partition("-")
    return pid.isdigit() and _start_time(int(pid)) == start


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _children(pid: int) -> list[int]:
    out = []
    for p in _pids():
        try:
            stat = Path(f"/proc/{p}/stat").read_text()
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2 :].split()[1]) == pid:
            out.append(p)
    return out


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return "?"


def remove_stale() -> list[int]:
    """Kills the holders (and removes the job directories) of makers that are gone; returns
    the pids killed."""
    killed = []
    for p in _pids():
        try:
            environ = Path(f"/proc/{p}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        mark = next((e for e in environ if e.startswith(HOLDER_ENV.encode() + b"=")), None)
        if mark is not None and not _owner_alive(mark.split(b"=", 1)[1].decode()):
            _kill(p)
            killed.append(p)
    for d in Path(tempfile.gettempdir()).glob(JOB_PREFIX + "*"):
        tag = d.name[len(JOB_PREFIX) :].rsplit("-", 1)[0]
        if not _owner_alive(tag):
            shutil.rmtree(d, ignore_errors=True)
    return killed


def _run(argv: Sequence[str], input: str | None = None, timeout: float = 10) -> str:
    done = subprocess.run(argv, input=input, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise HostSetupError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


# --- hosts ----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Counters:
    """An interface's statistics (/sys/class/net/IF/statistics in its network namespace)."""

    tx_bytes: int
    rx_bytes: int
    tx_packets: int
    rx_packets: int

    def __sub__(self, other: Counters) -> Counters:
        return Counters(
            *(a - b for a, b in zip(dataclasses.astuple(self), dataclasses.astuple(other)))
        )


def read_counters(sys_root: str = "", ifname: str = "eth0") -> Counters:
    """`ifname`'s counters from the sysfs at ``sys_root + /sys`` (a rank passes ""; the
    launching process reads a host's through /proc/PID/root)."""
    base = f"{sys_root}/sys/class/net/{ifname}/statistics"

    def get(name: str) -> int:
        with open(f"{base}/{name}") as f:
            return int(f.read())

    return Counters(get("tx_bytes"), get("rx_bytes"), get("tx_packets"), get("rx_packets"))


@dataclasses.dataclass
class Host:
    """One pretend machine: `pid` is its PID 1 as the root namespace sees it."""

    index: int
    name: str
    address: str | None
    pid: int
    holder: subprocess.Popen
    pid_ns: str = ""
    services: set = dataclasses.field(default_factory=set)  # its processes that are not ranks

    def path(self, p: str) -> str:
        """`p` as this host sees it (its mounts: its /sys, its /dev/shm)."""
        return f"/proc/{self.pid}/root{p}"

    def enter(self) -> list[str]:
        """argv prefix that runs a command inside every namespace of this host."""
        return ["nsenter", "-t", str(self.pid), "-n", "-m", "-u", "-i", "-p", "--"]

    def run(self, *argv: str, input: str | None = None, timeout: float = 10) -> str:
        """Runs a command inside every namespace of this host; returns its output."""
        return _run(self.enter() + list(argv), input=input, timeout=timeout)

    def net(self, *argv: str, input: str | None = None, timeout: float = 10) -> str:
        """Runs a command (ip, tc) in this host's network namespace only: a pid it names is
        one of the root namespace."""
        argv = ["nsenter", "-t", str(self.pid), "-n", "--", *argv]
        return _run(argv, input=input, timeout=timeout)

    def counters(self, ifname: str = "eth0") -> Counters:
        return read_counters(self.path(""), ifname)

    def processes(self, services: bool = False) -> list[int]:
        """Root-namespace pids of this host's live processes other than its PID 1 (and,
        unless `services`, other than its rank server)."""
        out = []
        for p in _pids():
            if p == self.pid or (p in self.services and not services):
                continue
            try:
                if os.readlink(f"/proc/{p}/ns/pid") == self.pid_ns and _alive(p):
                    out.append(p)
            except OSError:
                continue
        return out

    def root_pid(self, inner: int) -> int:
        """The root namespace's pid of this host's process `inner`."""
        for p in _pids():
            try:
                if os.readlink(f"/proc/{p}/ns/pid") != self.pid_ns:
                    continue
                status = Path(f"/proc/{p}/status").read_text()
            except OSError:
                continue
            nspid = next(
                line.split()[1:] for line in status.splitlines() if line.startswith("NSpid:")
            )
            if int(nspid[-1]) == inner:
                return p
        raise HostSetupError(f"{self.name}: no process {inner}")

    def shm_files(self) -> list[str]:
        return sorted(os.listdir(self.path("/dev/shm")))

    def set_link(self, up: bool) -> None:
        """``ip link set eth0 up|down`` in this host: down, it reaches no other host."""
        self.net("ip", "link", "set", "eth0", "up" if up else "down")

    def popen(self, argv: Sequence[str], env: dict[str, str], log: str) -> subprocess.Popen:
        """Starts a program inside every namespace of this host (a launcher such as torchrun),
        its output to the file `log`; it dies with the process that started it. Stop what it
        left with kill_all()."""
        with open(log, "wb") as out:
            return subprocess.Popen(
                self.enter() + list(argv),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=str(TESTS.parent),
                preexec_fn=_die_with_parent,
            )

    def kill_all(self) -> list[str]:
        """Kills this host's processes (not its rank server); returns their command lines."""
        killed = []
        for p in self.processes():
            killed.append(_cmdline(p))
            _kill(p)
        return killed

    def limit_rate(self, rate: str, burst: str = "64kb", latency: str = "200ms") -> None:
        """Shapes what this host sends to `rate` (a tc rate, e.g. "200mbit") with tbf."""
        self.net(
            "tc",
            "qdisc",
            "replace",
            "dev",
            "eth0",
            "root",
            "tbf",
            "rate",
            rate,
            "burst",
            burst,
            "latency",
            latency,
        )


def _start_holder(index: int, name: str) -> Host:
    env = {
        "PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
        HOLDER_ENV: _owner_tag(),
    }
    argv = [
        "unshare",
        "--fork",
        "--kill-child",
        "--pid",
        "--mount-proc",
        "--net",
        "--uts",
        "--ipc",
        "--",
        sys.executable,
        str(IN_HOST),
        "init",
        name,
    ]
    holder = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        preexec_fn=_die_with_parent,
    )
    import selectors

    with selectors.DefaultSelector() as sel:
        sel.register(holder.stdout, selectors.EVENT_READ)
        ready = sel.select(timeout=15) and holder.stdout.readline().strip() == b"ready"
    if not ready:
        holder.kill()
        err = holder.communicate(timeout=5)[1].decode(errors="replace")
        raise HostSetupError(f"host {name} did not start: {err.strip()}")
    deadline = time.monotonic() + 5
    while not (kids := _children(holder.pid)):
        if time.monotonic() > deadline:
            holder.kill()
            raise HostSetupError(f"host {name}: no PID 1 under unshare {holder.pid}")
        time.sleep(0.01)
    pid = kids[0]
    return Host(index, name, None, pid, holder, os.readlink(f"/proc/{pid}/ns/pid"))


def _quiet_ipv6(host: Host) -> None:
    """No IPv6 on the interfaces made next in `host`: no neighbour discovery or router
    solicitations, so an interface's counters move only with the job's traffic."""
    host.net(
        "sh",
        "-c",
        "echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6 && "
        "echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6",
    )


class Cluster:
    """`nhosts` hosts on one bridge. Use as a context manager, or call close()."""

    def __init__(self, nhosts: int, preload: Sequence[str] = ()):
        """`preload`: modules the hosts' rank servers import once for every rank (torch)."""
        self.preload = tuple(preload)
        if not 1 <= nhosts <= 200:
            raise ValueError(f"nhosts {nhosts}: 1 to 200")
        remove_stale()
        self.hosts: list[Host] = []
        self.servers: dict[int, RankServer] = {}
        self.leftovers: list[str] = []  # processes a launch had to kill after its ranks ended
        self.switch = _start_holder(-1, "rcclx-switch")
        try:
            _quiet_ipv6(self.switch)
            self.switch.net(
                "ip", "-batch", "-", input="link add br0 type bridge\nlink set br0 up\n"
            )
            for i in range(nhosts):
                host = _start_holder(i, f"rcclx-host{i}")
                self.hosts.append(host)
                host.address = f"{SUBNET}.{i + 1}"
                _quiet_ipv6(host)
                host.net(
                    "ip",
                    "link",
                    "add",
                    "eth0",
                    "type",
                    "veth",
                    "peer",
                    "name",
                    f"port{i}",
                    "netns",
                    str(self.switch.pid),
                )
                host.net(
                    "ip",
                    "-batch",
                    "-",
                    input=f"addr add {host.address}/24 dev eth0\nlink set eth0 up\n",
                )
                self.switch.net("ip", "link", "set", f"port{i}", "master", "br0", "up")
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def addresses(self) -> list[str]:
        return [h.address for h in self.hosts]

    def start(
        self,
        fn: Callable,
        placement: Sequence[int],
        *args,
        env: dict | None = None,
        rank_env: Callable[[int], dict] | None = None,
        transport: str | None = None,
    ) -> Job:
        """Starts ``fn(HostRankContext, *args)`` as rank r on host ``placement[r]`` for every
        r. ``transport`` sets RCCLX_NET_TRANSPORT, the transport between hosts (None: the
        library's default); ranks of one host keep what the library picks among themselves."""
        return Job(self, fn, list(placement), args, env, rank_env, transport)

    def launch(
        self,
        fn: Callable,
        placement: Sequence[int],
        *args,
        timeout: float = 60.0,
        expect_errors: bool = False,
        **kw,
    ) -> list[RankResult]:
        """start() then wait(): one RankResult per rank (as launcher.launch)."""
        return self.start(fn, placement, *args, **kw).wait(timeout, expect_errors)

    def server(self, host: int) -> RankServer:
        """Host `host`'s rank server, started on first use."""
        if host not in self.servers:
            self.servers[host] = RankServer(self.hosts[host], self.preload)
        return self.servers[host]

    def processes(self) -> dict[str, list[str]]:
        """Every host's processes other than its PID 1, as command lines."""
        return {h.name: [_cmdline(p) for p in h.processes()] for h in self.hosts}

    def close(self) -> None:
        """Kills every holder, which removes the hosts' namespaces, veths, the bridge and the
        hosts' mounts with them; waits until the hosts' processes are gone."""
        for server in self.servers.values():
            server.close()
        self.servers.clear()
        everyone = self.hosts + ([self.switch] if getattr(self, "switch", None) else [])
        for h in everyone:
            for p in h.processes(services=True):
                _kill(p)
            h.holder.kill()
        for h in everyone:
            try:
                h.holder.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            for stream in (h.holder.stdout, h.holder.stderr):
                if stream:
                    stream.close()
        deadline = time.monotonic() + 10
        while any(_alive(h.pid) for h in everyone) and time.monotonic() < deadline:
            time.sleep(0.01)

    def remaining(self) -> list[str]:
        """What of this cluster still exists after close(): live holders or processes in a
        host's namespaces (empty when it closed cleanly)."""
        out = []
        for h in self.hosts + [self.switch]:
            if h.holder.poll() is None:
                out.append(f"{h.name}: unshare {h.holder.pid} still running")
            if _alive(h.pid):
                out.append(f"{h.name}: PID 1 ({h.pid}) still running")
            out += [f"{h.name}: {_cmdline(p)}" for p in h.processes(services=True)]
        return out


# --- ranks ----------------------------------------------------------------------------------


@dataclasses.dataclass
class HostRankContext(launcher.RankContext):
    """launcher.RankContext of a rank on a test host: its store is a FileStore in the job's
    directory; `host` (index), `host_name`, `address`, `local_rank` and `local_size` say where
    it runs, `addresses` every host's address (host 0's is where a job's rank 0 listens)."""

    store_dir: str = ""
    host: int = 0
    host_name: str = ""
    address: str = ""
    local_rank: int = 0
    local_size: int = 1
    addresses: tuple[str, ...] = ()

    unique_ids: int = 0  # how many unique_id() calls this rank made

    def store(self):
        import ctran

        return ctran.FileStore(self.store_dir)

    def unique_id(self) -> bytes:
        """Rank 0 creates a unique id and shares it through the job's store; unlike the
        launcher's, it may be called again (every rank in the same order) for the next
        communicator, so one launch can run several rank functions that each make one.

        The id is rcclx_core's, not ctran's: a communicator joined through an id that
        ctran.create_unique_id made does not know that its process hosts the id's store, so
        when that process leaves right after creating it the other ranks can fail to create
        theirs (test_multihost_launch.py, the xfail test of the unique id)."""
        store = self.store()
        key = f"launcher/unique_id/{self.unique_ids}"
        self.unique_ids += 1
        if self.rank == 0:
            import rcclx_core

            uid = rcclx_core.create_unique_id()
            store.set(key, uid)
            return uid
        return store.get(key)

    def init_torch_distributed(self, backend: str = "nccl"):
        raise NotImplementedError(
            "on test hosts, join torch.distributed by env:// (MASTER_ADDR = addresses[0])"
        )


def rank_base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not DROPPED_ENV.match(k)}
    env.pop("PYTEST_CURRENT_TEST", None)
    path = [str(TESTS), str(TESTS / "rcclx_core"), str(HERE)]
    env["PYTHONPATH"] = os.pathsep.join(
        path + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    )
    return env


class Job:
    """Ranks of one launch, running on the cluster's hosts (Cluster.start)."""

    def __init__(self, cluster, fn, placement, args, env, rank_env, transport):
        self.cluster = cluster
        self.placement = placement
        self.nranks = len(placement)
        self.dir = tempfile.mkdtemp(prefix=f"{JOB_PREFIX}{_owner_tag()}-")
        self.store_dir = os.path.join(self.dir, "store")
        os.mkdir(self.store_dir)
        with open(os.path.join(self.dir, "job.pkl"), "wb") as f:
            pickle.dump((fn, args), f)
        hosts = cluster.hosts
        base = rank_base_env()
        base.update(launcher.MULTICAST_OFF)
        base.update({k: str(v) for k, v in (env or {}).items()})
        if transport is not None:
            base["RCCLX_NET_TRANSPORT"] = transport
        for r, h in enumerate(placement):
            ctx = HostRankContext(
                rank=r,
                nranks=self.nranks,
                store_host="",
                store_port=0,
                device=None,
                store_dir=self.store_dir,
                host=h,
                host_name=hosts[h].name,
                address=hosts[h].address,
                local_rank=placement[:r].count(h),
                local_size=placement.count(h),
                addresses=tuple(cluster.addresses),
            )
            renv = dict(base)
            renv.update({k: str(v) for k, v in (rank_env(r) if rank_env else {}).items()})
            with open(os.path.join(self.dir, f"ctx-{r}.pkl"), "wb") as f:
                pickle.dump((ctx, renv), f)
        # Every rank forked at once, in rank order, by its host's server.
        self.pids = [cluster.server(h).fork(self.dir, r) for r, h in enumerate(placement)]

    def store(self):
        """The job's store, as the ranks see it."""
        import ctran

        return ctran.FileStore(self.store_dir)

    def _file(self, name: str) -> str:
        return os.path.join(self.dir, name)

    def _log(self, r: int, limit: int = 4000) -> str:
        try:
            text = Path(self._file(f"rank-{r}.log")).read_text(errors="replace")
        except OSError:
            return ""
        return text[-limit:]

    def _exit_code(self, r: int) -> int | None:
        try:
            return int(Path(self._file(f"exit-{r}")).read_text())
        except (OSError, ValueError):
            return None

    def _result(self, r: int) -> RankResult | None:
        try:
            with open(self._file(f"result-{r}.pkl"), "rb") as f:
                return pickle.load(f)
        except FileNotFoundError:
            return None

    def wait(self, timeout: float = 60.0, expect_errors: bool = False) -> list[RankResult]:
        """Waits for every rank (at most `timeout` s from now; ranks still running are killed
        and reported "Hung"); returns one RankResult each. Unless `expect_errors`, any rank's
        error fails with every failing rank's traceback and output. Processes left on a host
        after its ranks ended are killed and recorded in cluster.leftovers."""
        results: list[RankResult | None] = [None] * self.nranks
        deadline = time.monotonic() + timeout
        pending = set(range(self.nranks))
        while pending and time.monotonic() < deadline:
            for r in list(pending):
                code = self._exit_code(r)
                if code is None:
                    continue
                res = self._result(r) or RankResult(
                    r, error_type="Died", error=f"exit code {code}", traceback=self._log(r)
                )
                res.exitcode = code
                results[r] = res
                pending.discard(r)
            time.sleep(0.005)
        launcher.dump_stacks([self.pids[r] for r in pending])
        for r in pending:
            _kill(self.pids[r])
            results[r] = RankResult(
                r,
                error_type="Hung",
                error=f"still running after {timeout} s",
                traceback=self._log(r),
            )
        self._sweep()
        failed = [res for res in results if res.error_type is not None]
        try:
            if failed and not expect_errors:
                msg = "\n".join(
                    f"--- rank {res.rank} (host {self.placement[res.rank]}): {res.error_type}: "
                    f"{res.error}\n{res.traceback or ''}\n{self._log(res.rank, 1500)}"
                    for res in failed
                )
                raise launcher.LaunchError(f"{len(failed)} of {self.nranks} ranks failed:\n{msg}")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
        return results

    def _sweep(self) -> None:
        deadline = time.monotonic() + 3
        hosts = [self.cluster.hosts[h] for h in sorted(set(self.placement))]
        while any(h.processes() for h in hosts) and time.monotonic() < deadline:
            time.sleep(0.01)
        for h in hosts:
            for p in h.processes():
                self.cluster.leftovers.append(f"{h.name}: {_cmdline(p)}")
                _kill(p)


class RankServer:
    """A host's rank server (in_host.py serve): forks ranks with the modules they need
    already imported."""

    def __init__(self, host: Host, preload: Sequence[str] = ()):
        self.host = host
        env = rank_base_env()
        env["RCCLX_TEST_HOST_PRELOAD"] = ",".join(preload)
        self.proc = subprocess.Popen(
            host.enter() + [sys.executable, str(IN_HOST), "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None,
            text=True,
            env=env,
            cwd=str(TESTS.parent),
            preexec_fn=_die_with_parent,
        )
        self._expect("ready", 60)
        # The server's own pid (as the root namespace sees it): the only child of nsenter.
        self.pid = next(iter(_children(self.proc.pid)), None)
        host.services.add(self.pid)

    def _expect(self, what: str, timeout: float) -> str:
        import selectors

        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            line = self.proc.stdout.readline() if sel.select(timeout) else ""
        if not line.startswith(what):
            self.proc.kill()
            raise HostSetupError(
                f"{self.host.name}: rank server: expected {what!r}, got "
                f"{line!r} (exit code {self.proc.poll()})"
            )
        return line

    def fork(self, jobdir: str, rank: int) -> int:
        """Forks rank `rank` of the job in `jobdir`; returns its pid in the root namespace."""
        self.proc.stdin.write(f"{jobdir} {rank}\n")
        self.proc.stdin.flush()
        inner = int(self._expect(f"{rank} ", 30).split()[1])
        return self.host.root_pid(inner)

    def close(self) -> None:
        """Kills the server (it holds nothing but imported modules) and its nsenter."""
        if self.pid is not None:
            _kill(self.pid)
        self.proc.kill()
        self.proc.wait(timeout=10)
        self.proc.stdin.close()
        self.proc.stdout.close()
        self.host.services.discard(self.pid)


def values(results: Sequence[RankResult]) -> list[Any]:
    return [r.value for r in results]
