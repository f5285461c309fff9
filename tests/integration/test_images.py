"""Images are built here from the host's own binaries (no registry): the root filesystem holds each
binary with every library ldd lists and the dynamic loader, Debian's merged-/usr links, a /sbin of its
own (where the engine mounts its init), and the tag changes when a binary does. No engine is needed to
see what goes into an image."""

from __future__ import annotations

import io
import os
import shutil
import tarfile
from pathlib import Path

from chaos.containers.images import ImageSpec, _write_rootfs, passwd


def rootfs(spec: ImageSpec) -> tarfile.TarFile:
    data = io.BytesIO()
    _write_rootfs(spec, data)  # type: ignore[arg-type]
    data.seek(0)
    return tarfile.open(fileobj=data)


def test_a_binary_comes_with_its_libraries_and_loader() -> None:
    redis_server = shutil.which("redis-server")
    assert redis_server is not None
    tar = rootfs(ImageSpec("redis", (redis_server,), files=passwd(("postgres", 999))))
    names = set(tar.getnames())
    assert "usr/bin/redis-server" in names
    assert any(name.endswith("/libc.so.6") for name in names)
    assert any("ld-linux" in name for name in names)
    assert tar.getmember("bin").issym() and tar.getmember("bin").linkname == "usr/bin"
    assert tar.getmember("sbin").isdir()
    assert "postgres:x:999:999" in tar.extractfile("etc/passwd").read().decode()  # type: ignore[union-attr]


def test_the_tag_follows_the_binary(tmp_path: Path) -> None:
    binary = tmp_path / "true"
    shutil.copy("/usr/bin/true", binary)
    spec = ImageSpec("probe", (str(binary),))
    before = spec.tag()
    assert before == ImageSpec("probe", (str(binary),)).tag()
    os.utime(binary, (1, 1))
    assert spec.tag() != before
    assert before.startswith("queue-chaos/probe:")


def test_a_folder_made_as_a_links_parent_is_still_copied_whole(tmp_path: Path) -> None:
    """A link followed into a folder first makes that folder as its target's parent; the folder, named
    later, must still come with everything in it (Erlang's bin/epmd links into erts-*/bin)."""
    (tmp_path / "erts" / "bin").mkdir(parents=True)
    (tmp_path / "erts" / "bin" / "epmd").write_text("epmd")
    (tmp_path / "erts" / "bin" / "beam").write_text("beam")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "epmd").symlink_to("../erts/bin/epmd")
    names = set(rootfs(ImageSpec("links", (str(tmp_path / "bin"), str(tmp_path / "erts")))).getnames())
    inside = str(tmp_path).lstrip("/")
    assert {f"{inside}/bin/epmd", f"{inside}/erts/bin/epmd", f"{inside}/erts/bin/beam"} <= names
