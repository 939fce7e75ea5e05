"""Who owns an output (and a history staging directory) right now: owner files with a heartbeat.

An owner file holds the run's token, host, pid, the pid's start time and the run's start time. It is
created exclusively (HadoopFS.create_exclusive: atomic on HDFS and, through O_EXCL, on local disks), so
of two runs onto the same output only one gets it; its modification time is renewed by a heartbeat thread,
so the file of a run that died without clean-up (SIGKILL, a lost machine) is recognised:
- on the same host: its process is gone (or is another process now, or the machine restarted), at once;
- on another host: no heartbeat for `stale_seconds` (--lock-stale-minutes).
Such a file is taken over (moved aside, checked to be the one judged stale, then removed) and the dead
run's staging directories removed. A live run's files are never touched. Before it replaces the output,
a run checks that the lock still holds its own token, so even a lock taken over wrongly (a heartbeat
missed for longer than the stale age) ends in a clear failure, never in two runs both replacing DIR.
"""
from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import asdict, dataclass

from ..errors import DedupError
from .hadoop_fs import FileExists, HadoopFS, java_message

log = logging.getLogger("simhash_dedup")


def new_token() -> str:
    return uuid.uuid4().hex[:12]


def _read_first_line(path: str) -> str | None:
    try:
        with open(path) as fh:
            return fh.readline().strip()
    except OSError:
        return None


def boot_id() -> str | None:
    """Changes when the machine restarts: every pid recorded before is dead then."""
    return _read_first_line("/proc/sys/kernel/random/boot_id")


def process_start(pid: int) -> int | None:
    """Start time of a process in clock ticks since boot (Linux /proc), to tell a reused pid from the owner."""
    line = _read_first_line(f"/proc/{pid}/stat")
    if not line:
        return None
    fields = line.rsplit(")", 1)[-1].split()  # after "(command name)", which may hold spaces
    return int(fields[19]) if len(fields) > 19 else None


def process_alive(pid: int, started: int | None) -> bool:
    """Is process `pid` (this host) still the one that started at `started` (None: not recorded)?"""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    line = _read_first_line(f"/proc/{pid}/stat")
    if line and line.rsplit(")", 1)[-1].split()[:1] == ["Z"]:
        return False  # exited, not yet reaped by its parent
    now = process_start(pid)
    return started is None or now is None or now == started


@dataclass
class Owner:
    token: str
    host: str
    pid: int
    pid_start: int | None
    boot_id: str | None
    started: str  # UTC, ISO 8601
    output: str = ""

    @classmethod
    def this_process(cls, token: str, output: str = "") -> "Owner":
        pid = os.getpid()
        return cls(token, socket.gethostname(), pid, process_start(pid), boot_id(),
                   time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), output)

    def to_bytes(self) -> bytes:
        return (json.dumps(asdict(self)) + "\n").encode("utf-8")

    @classmethod
    def parse(cls, data: bytes | None) -> "Owner | None":
        """None for a missing, empty (still being written) or foreign file."""
        try:
            d = json.loads((data or b"").decode("utf-8"))
            return cls(**{k: d.get(k) for k in cls.__dataclass_fields__})
        except (ValueError, TypeError, UnicodeDecodeError):
            return None

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}, started {self.started}"


def stale_reason(owner: Owner | None, age_seconds: float, stale_seconds: float, host: str, this_boot: str | None,
                 alive=process_alive) -> str | None:
    """Why an owner file belongs to a dead run (None: it may be alive, leave it alone).

    age_seconds: since the file's last heartbeat (its modification time)."""
    if owner is None:
        return f"unreadable and untouched for {age_seconds:.0f} s" if age_seconds > stale_seconds else None
    if owner.host == host:
        if owner.boot_id and this_boot and owner.boot_id != this_boot:
            return f"{owner.describe()}: this machine restarted since"
        if not alive(int(owner.pid), owner.pid_start):
            return f"{owner.describe()}: that process is gone"
    if age_seconds > stale_seconds:
        return f"{owner.describe()}: no heartbeat for {age_seconds / 60:.0f} minutes"
    return None


class OwnerFile:
    """An owner file of this run (exclusive create, heartbeat, release)."""

    def __init__(self, fs: HadoopFS, path: str, owner: Owner, stale_seconds: float):
        self.fs, self.path, self.owner, self.stale_seconds = fs, path, owner, stale_seconds
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def create(self) -> None:
        """Create the file (FileExists if another run's is there) and start its heartbeat."""
        self.fs.create_exclusive(self.path, self.owner.to_bytes())
        interval = max(1.0, self.stale_seconds / 5)
        self._thread = threading.Thread(target=self._beat, args=(interval,), name=f"heartbeat {self.path}", daemon=True)
        self._thread.start()

    def _beat(self, interval: float) -> None:
        while not self._stop.wait(interval):
            try:
                self.fs.touch(self.path, int(time.time() * 1000))
            except Exception as exc:  # a missed beat only makes the lock look older
                log.warning("could not renew %s: %s", self.path, java_message(exc))

    def held(self) -> bool:
        """Does the file still hold this run's token (not taken over as stale by another run)?"""
        found = Owner.parse(self.fs.read(self.path))
        return found is not None and found.token == self.owner.token

    def current(self) -> Owner | None:
        return Owner.parse(self.fs.read(self.path))

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        try:
            if self.held():
                self.fs.delete(self.path)
        except Exception as exc:  # the next run takes a dead run's lock over
            log.warning("could not remove %s: %s", self.path, java_message(exc))


def judge(fs: HadoopFS, path: str, stale_seconds: float) -> tuple[Owner | None, str | None]:
    """(owner, why it is stale or None) of an existing owner file; (None, None) when it is gone."""
    status = fs.status(path)
    if status is None:
        return None, None
    owner = Owner.parse(fs.read(path))
    age = max(0.0, time.time() - status[1] / 1000)
    return owner, stale_reason(owner, age, stale_seconds, socket.gethostname(), boot_id())


def take_over(fs: HadoopFS, path: str, dead: Owner | None, mine: str) -> bool:
    """Remove the stale owner file `path` judged to be `dead`'s, unless another run replaced it meanwhile:
    moved aside first (atomic), checked, then removed (or moved back if it is not the dead run's)."""
    aside = f"{path}.stale-{mine}"
    if not fs.rename(path, aside):
        return False  # gone meanwhile: someone else took it over
    moved = Owner.parse(fs.read(aside))
    if (moved.token if moved else None) == (dead.token if dead else None):
        fs.delete(aside)
        return True
    if not fs.exists(path):
        fs.rename(aside, path)  # a live run's: put it back
    return False


def acquire(fs: HadoopFS, path: str, owner: Owner, stale_seconds: float, what: str) -> OwnerFile:
    """Create this run's owner file at `path`, taking over a dead run's; DedupError naming the live owner
    otherwise. `what`: what the lock guards, for the messages."""
    lock = OwnerFile(fs, path, owner, stale_seconds)
    for _ in range(5):
        try:
            lock.create()
            return lock
        except FileExists:
            pass
        except Exception as exc:
            raise DedupError(f"cannot create the lock file {path} beside {what} ({java_message(exc)}): choose "
                             "an --output in a directory this job can write to, or fix that directory's permissions"
                             ) from None
        other, why = judge(fs, path, stale_seconds)
        if why is None and other is None and fs.exists(path):
            time.sleep(1)  # created this instant, not yet written: look again
            other, why = judge(fs, path, stale_seconds)
        if why is None and fs.exists(path):
            who = other.describe() if other else "a run whose lock file is still being written"
            raise DedupError(
                f"{what} is being written by another run ({who}; lock {path}): wait for it to finish, or if that "
                f"run is no longer running remove {path} (a dead run's lock is taken over by itself once its "
                f"process is gone on that host, or after {stale_seconds / 60:.0f} minutes without a heartbeat: "
                "--lock-stale-minutes)")
        if why is not None:
            log.warning("taking over the lock %s of a dead run (%s)", path, why)
            take_over(fs, path, other, owner.token)
    raise DedupError(f"could not take the lock {path} for {what}: other runs keep taking it; run one job at a time")
