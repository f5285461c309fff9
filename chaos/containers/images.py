"""Images built here, with no registry: a minimal root filesystem made of the host's own binaries and
the libraries they load (found by ldd), imported with `docker import`. An image's tag is a hash of
what went into it, so it is built once per machine and rebuilt when a binary changes."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import subprocess
import tarfile
import tempfile
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from chaos.containers import engine
from chaos.errors import ConfigError, HarnessError

REPOSITORY = "queue-chaos"
# Debian's merged /usr: the top-level directories are links into /usr, in the image as on the host; but
# /sbin is a folder of its own, where the engine mounts its init (docker run --init) even over a /usr
# mounted read-only.
MERGED = {"/bin": "usr/bin", "/sbin": "usr/sbin", "/lib": "usr/lib", "/lib64": "usr/lib64"}
LINKED = ("/bin", "/lib", "/lib64")
LAYOUT = 3  # the root filesystem's layout, in every tag: a change of it here builds every image again
_LDD_PATH = re.compile(r"(/\S+)")
_BUILDING = threading.Lock()  # one build at a time per process: parallel cells share the image


@dataclass(frozen=True)
class ImageSpec:
    """An image: host files and folders (each binary brings the libraries it loads), written files, users,
    folders owned by a user, and the Dockerfile instructions `docker import` applies (ENV, CMD, USER)."""

    name: str
    host_paths: tuple[str, ...]
    files: dict[str, str] = field(default_factory=dict)  # path in the image -> text
    executables: tuple[str, ...] = ()  # of `files`, the ones to mark executable
    owned_dirs: dict[str, int] = field(default_factory=dict)  # path -> uid (gid the same)
    changes: tuple[str, ...] = ()

    def tag(self) -> str:
        digest = hashlib.sha256(json.dumps([LAYOUT, self.name, self.host_paths, self.files, self.executables,
                                            self.owned_dirs, self.changes, _stamps(self.host_paths)]).encode())
        return f"{REPOSITORY}/{self.name}:{digest.hexdigest()[:12]}"


def ensure(spec: ImageSpec) -> str:
    """The spec's image, built now unless the engine has it; its tag."""
    import docker

    tag = spec.tag()
    with _BUILDING:
        client = engine.client()
        try:
            client.images.get(tag)
            return tag
        except docker.errors.ImageNotFound:
            pass
        with tempfile.TemporaryFile() as archive:
            _write_rootfs(spec, archive)
            archive.seek(0)
            repository, _, version = tag.partition(":")
            try:
                client.api.import_image_from_data(archive.read(), repository=repository, tag=version,
                                                  changes=list(spec.changes))
            except docker.errors.APIError as exc:
                raise HarnessError(f"docker import of {tag} failed: {exc}") from exc
    return tag


def _stamps(paths: Iterable[str]) -> list[tuple[str, int, int]]:
    """Size and modification time of each host path, so a changed binary gives a new tag."""
    stamps = []
    for path in paths:
        try:
            found = os.stat(path)
        except OSError as exc:
            raise ConfigError(f"An image of the suite is built from the host's {path}, which is missing "
                              f"({exc.strerror}). "
                              "Install the backend's Debian package (bash ci/setup.sh does).") from exc
        stamps.append((path, found.st_size, int(found.st_mtime)))
    return stamps


def _write_rootfs(spec: ImageSpec, out: io.BufferedRandom | tempfile._TemporaryFileWrapper[bytes]) -> None:
    with tarfile.open(fileobj=out, mode="w") as tar:
        rootfs = _Rootfs(tar)
        for top in LINKED:
            rootfs.link(top, MERGED[top])
        for folder in ("/tmp", "/etc", "/sbin", "/usr/bin", "/usr/lib"):
            rootfs.directory(folder, mode=0o1777 if folder == "/tmp" else 0o755)
        for path in spec.host_paths:
            rootfs.host(path)
        for binary in [path for path in list(rootfs.added) if _is_elf(path)]:
            for library in _libraries(binary):
                rootfs.host(library)
        for path, text in spec.files.items():
            rootfs.text(path, text, 0o755 if path in spec.executables else 0o644)
        for path, uid in spec.owned_dirs.items():
            rootfs.directory(path, uid=uid, mode=0o700)


class _Rootfs:
    """The tar being written: each path once, its parent folders first, links kept as links."""

    def __init__(self, tar: tarfile.TarFile) -> None:
        self.tar = tar
        self.added: set[str] = set()
        self.copied: set[str] = set()  # host folders copied with their contents

    def directory(self, path: str, uid: int = 0, mode: int = 0o755) -> None:
        self._parents(path)
        if path in self.added:
            return
        info = tarfile.TarInfo(path.lstrip("/"))
        info.type, info.mode, info.uid, info.gid = tarfile.DIRTYPE, mode, uid, uid
        self.tar.addfile(info)
        self.added.add(path)

    def link(self, path: str, target: str) -> None:
        self._parents(path)
        info = tarfile.TarInfo(path.lstrip("/"))
        info.type, info.linkname = tarfile.SYMTYPE, target
        self.tar.addfile(info)
        self.added.add(path)

    def text(self, path: str, text: str, mode: int) -> None:
        self._parents(path)
        data = text.encode()
        info = tarfile.TarInfo(path.lstrip("/"))
        info.size, info.mode = len(data), mode
        self.tar.addfile(info, io.BytesIO(data))
        self.added.add(path)

    def host(self, path: str) -> None:
        """A host file or folder (recursively), at its path with the merged top-level links resolved. A
        folder already made as the parent of something else is still copied whole."""
        path = _in_usr(os.path.normpath(path))
        if os.path.isdir(path) and not os.path.islink(path):
            if path not in self.copied:
                self.copied.add(path)
                self.directory(path)
                for entry in sorted(os.listdir(path)):
                    self.host(os.path.join(path, entry))
            return
        if path in self.added:
            return
        if os.path.islink(path):
            target = os.readlink(path)
            self.link(path, target)
            self.host(os.path.join(os.path.dirname(path), target))
        elif os.path.isfile(path):
            self._parents(path)
            self.tar.add(path, arcname=path.lstrip("/"), recursive=False)
            self.added.add(path)

    def _parents(self, path: str) -> None:
        parent = os.path.dirname(path)
        if parent not in ("/", "") and parent not in self.added:
            self.directory(parent)


def _in_usr(path: str) -> str:
    for top, into in MERGED.items():
        if path == top or path.startswith(top + "/"):
            return "/" + into + path[len(top):]
    return path


def _is_elf(path: str) -> bool:
    if os.path.islink(path) or not os.path.isfile(path):
        return False
    with open(path, "rb") as file:
        return file.read(4) == b"\x7fELF"


def _libraries(binary: str) -> list[str]:
    """The shared libraries `binary` loads, and the dynamic loader, as ldd lists them."""
    try:
        listed = subprocess.run(["ldd", binary], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HarnessError(f"ldd {binary} failed: {exc}") from exc
    return [found.group(1) for line in listed.splitlines() if (found := _LDD_PATH.search(line.split("=>")[-1]))]


def passwd(*users: tuple[str, int]) -> dict[str, str]:
    """/etc/passwd and /etc/group with root and `users` (name, uid): servers that refuse root need one."""
    entries = [("root", 0), *users]
    return {"/etc/passwd": "".join(f"{name}:x:{uid}:{uid}::/tmp:/bin/sh\n" for name, uid in entries),
            "/etc/group": "".join(f"{name}:x:{uid}:\n" for name, uid in entries)}


def shell() -> tuple[str, ...]:
    """A POSIX shell (dash) as /bin/sh, for entrypoints and testcontainers' exec checks."""
    return ("/usr/bin/dash", "/usr/bin/sh")


def host_path(path: Path | str) -> str:
    return str(Path(path).resolve())
