"""The Debian packages each backend kind's local server comes from, declared by the kind (`SERVER_PACKAGE`
in its package), so ci/setup.sh installs a new kind's server without an edit of its own:
`python3 -m chaos.backends.packages` prints the missing ones. Standard library only: it runs before the
suite is installed."""

from __future__ import annotations

import glob
import importlib
import os
import shutil
from dataclasses import dataclass

from chaos.backends.registry import KINDS


@dataclass(frozen=True)
class DebianPackage:
    """A Debian package, present when one of its `binaries` is on PATH or one of its `paths` (globs) exists."""

    name: str
    binaries: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()

    def present(self) -> bool:
        return (any(shutil.which(binary) for binary in self.binaries)
                or any(os.path.exists(found) for pattern in self.paths for found in glob.glob(pattern)))


def missing() -> list[str]:
    """The server packages of every registered kind that this machine lacks."""
    needed = [importlib.import_module(package).SERVER_PACKAGE for package in KINDS.values()]
    return [package.name for package in needed if not package.present()]


if __name__ == "__main__":
    print(" ".join(missing()))
