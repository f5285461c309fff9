"""A registry is its built-in entries plus those installed distributions declare in its entry-point group,
read on first use; a plugin that does not load or reuses a name is the installation's error (PluginError,
exit 2), naming the distribution and how to fix it. The distributions here are real metadata on sys.path
(a dist-info folder), found by importlib.metadata as pip's would be."""

from __future__ import annotations

import json
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from chaos.errors import PluginError
from chaos.plugins import Registry


def install(site: Path, entry_points: str) -> None:
    dist_info = site / "chaos_unit_plugin-1.2.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: chaos-unit-plugin\nVersion: 1.2\n")
    (dist_info / "entry_points.txt").write_text(entry_points)


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def registry(loaded: list[str]) -> Registry[object]:
    def load(point: EntryPoint) -> object:
        loaded.append(point.name)
        value: object = point.load()
        if value is None:
            raise ValueError("it names None")
        return value

    return Registry("unit_things", "unit thing", lambda: {"built": "in"}, load)


def test_installed_entries_join_the_built_in_ones_on_first_use(site: Path) -> None:
    install(site, "[queue_chaos.unit_things]\ndumper = json:dumps\n")
    loaded: list[str] = []
    things = registry(loaded)
    assert loaded == []  # nothing is read before the registry is used
    assert dict(things) == {"built": "in", "dumper": json.dumps}
    assert loaded == ["dumper"] and things.built_in() == {"built": "in"}


@pytest.mark.parametrize(("entry_points", "phrases"), [
    ("[queue_chaos.unit_things]\nbuilt = json:dumps\n",
     ["chaos-unit-plugin 1.2 adds a unit thing named 'built'", "already has a unit thing of that name",
      "Rename it in that package's entry points, or uninstall it (pip uninstall chaos-unit-plugin)"]),
    ("[queue_chaos.unit_things]\nghost = chaos_no_such_module:thing\n",
     ["adds the unit thing 'ghost' (entry point ghost = 'chaos_no_such_module:thing' in group "
      "queue_chaos.unit_things), which failed to load: ModuleNotFoundError", "pip uninstall chaos-unit-plugin"]),
    ("[queue_chaos.unit_things]\nnothing = json:__spec__.loader_state\n",
     ["adds the unit thing 'nothing'", "but it names None. Fix that package"]),
])
def test_a_plugin_that_fails_or_collides_names_its_package(site: Path, entry_points: str, phrases: list[str]) -> None:
    install(site, entry_points)
    with pytest.raises(PluginError) as raised:
        dict(registry([]))
    assert raised.value.exit_code == 2
    assert all(phrase in str(raised.value) for phrase in phrases), str(raised.value)
