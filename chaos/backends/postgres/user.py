"""Who the server binaries run as (PostgreSQL refuses root), with what environment, and their output."""

from __future__ import annotations

import os
import pwd
import signal
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from chaos.backends.postgres import ENV_URL
from chaos.errors import ConfigError, HarnessError
from chaos.procs import die_with_parent


@dataclass(frozen=True)
class RunAs:
    """Who initdb and the server run as; PostgreSQL refuses to run as root."""

    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]
    switch: bool  # True when we are root and must drop to this user

    @property
    def user(self) -> int | None:
        return self.uid if self.switch else None

    @property
    def group(self) -> int | None:
        return self.gid if self.switch else None

    @property
    def extra_groups(self) -> list[int] | None:
        # Without this the child would keep root's supplementary groups.
        return list(self.groups) if self.switch else None


def resolve_run_as() -> RunAs:
    """Ourselves, or when root the 'postgres' system user (else 'nobody'), since postgres refuses root."""
    euid = os.geteuid()
    if euid != 0:
        try:
            name = pwd.getpwuid(euid).pw_name
        except KeyError:
            name = str(euid)
        return RunAs(name=name, uid=euid, gid=os.getegid(), groups=(), switch=False)
    for name in ("postgres", "nobody"):
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        groups = tuple(os.getgrouplist(name, entry.pw_gid))
        return RunAs(name=name, uid=entry.pw_uid, gid=entry.pw_gid, groups=groups, switch=True)
    raise ConfigError(
        "Running as root, the local PostgreSQL backend must start the server as an unprivileged user "
        "(PostgreSQL refuses to run as root), but neither a 'postgres' nor a 'nobody' user exists on "
        "this machine. Create one (e.g. 'useradd --system postgres'), run the suite as a normal user, "
        f"or use --backend external --backend-url DSN (or set {ENV_URL})."
    )


def can_traverse(path: Path, run_as: RunAs) -> bool:
    """Mode-bit check (owner, then group, then other), as the kernel does for search permission."""
    st = os.stat(path)
    if st.st_uid == run_as.uid:
        bit = stat.S_IXUSR
    elif st.st_gid == run_as.gid or st.st_gid in run_as.groups:
        bit = stat.S_IXGRP
    else:
        bit = stat.S_IXOTH
    return bool(st.st_mode & bit)


def server_env() -> dict[str, str]:
    """The caller's environment without PG* variables (PGDATA, PGPORT...) that would change the cluster."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PG")}
    env["LC_ALL"] = "C"
    return env


def run_as_user(args: list[str], run_as: RunAs, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run a server binary to completion as the server user, its output captured for messages; it dies with
    a runner killed outright, rather than go on writing a data dir that `chaos clean` is removing."""
    try:
        return subprocess.run(
            args,
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            cwd="/",
            env=server_env(),
            user=run_as.user,
            group=run_as.group,
            extra_groups=run_as.extra_groups,
            preexec_fn=die_with_parent(signal.SIGKILL),
            timeout=300,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise HarnessError(f"could not run {args[0]} as {run_as.name}: {exc}") from exc


def tail(output: str, lines: int = 25) -> str:
    """The last lines of a server binary's output: where it says why it failed."""
    return "\n".join(output.rstrip().splitlines()[-lines:])
