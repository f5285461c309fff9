"""Registries that installed packages extend, as pytest's plugins do: a backend kind, a fault kind or a
target declared under an entry-point group (`queue_chaos.backend_kinds`, `queue_chaos.fault_kinds`,
`queue_chaos.targets`) joins the suite's own. The entry points are read, and their code imported, on a
registry's first use, never by `import chaos`, so a worker's import stays what it was.

A plugin that does not load, or that takes a name the suite (or another plugin) already uses, is the
installation's mistake: a `PluginError` (exit 2) naming the package, the entry point and how to fix it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, TypeVar

from chaos.errors import PluginError

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

GROUP_PREFIX = "queue_chaos."
V = TypeVar("V")


class Registry(Mapping[str, V]):
    """The suite's own entries (`built_in`) and those of the entry-point group `group`, each turned into its
    value by `load` (which raises ValueError saying what is wrong with what the entry point names)."""

    def __init__(self, group: str, what: str, built_in: Callable[[], Mapping[str, V]],
                 load: Callable[[EntryPoint], V]) -> None:
        self.group = GROUP_PREFIX + group
        self.what = what  # "backend kind", for the errors
        self._built_in = built_in
        self._load = load
        self._entries: dict[str, V] | None = None

    def _all(self) -> dict[str, V]:
        if self._entries is None:
            entries = dict(self._built_in())
            for point in _entry_points(self.group):
                entries[point.name] = self._plugin(point, entries)
            self._entries = entries
        return self._entries

    def _plugin(self, point: EntryPoint, taken: Mapping[str, V]) -> V:
        source = _source(point)
        fix = f"Fix that package, or uninstall it{_uninstall(point)}."
        if point.name in taken:
            raise PluginError(f"The installed package {source} adds a {self.what} named {point.name!r} (entry point "
                              f"{point.name} = {point.value!r} in group {self.group}), but the suite or another "
                              f"package already has a {self.what} of that name. Rename it in that package's entry "
                              f"points, or uninstall it{_uninstall(point)}.")
        try:
            return self._load(point)
        except ValueError as exc:
            raise PluginError(f"The installed package {source} adds the {self.what} {point.name!r} (entry point "
                              f"{point.name} = {point.value!r} in group {self.group}), but {exc}. {fix}") from None
        except Exception as exc:  # noqa: BLE001 - a plugin's import may fail any way at all
            raise PluginError(f"The installed package {source} adds the {self.what} {point.name!r} (entry point "
                              f"{point.name} = {point.value!r} in group {self.group}), which failed to load: "
                              f"{type(exc).__name__}: {exc}. {fix}") from None

    def built_in(self) -> Mapping[str, V]:
        """The suite's own entries alone (what `chaos` ships, whatever is installed beside it)."""
        return self._built_in()

    def __getitem__(self, name: str) -> V:
        return self._all()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


def _entry_points(group: str) -> list[EntryPoint]:
    """The group's entry points, each once (a distribution on sys.path twice lists its entry points twice)."""
    from importlib.metadata import entry_points  # read on a registry's first use only

    unique: dict[tuple[str, str], EntryPoint] = {}
    for point in entry_points(group=group):
        unique.setdefault((point.name, point.value), point)
    return sorted(unique.values(), key=lambda point: point.name)


def _source(point: EntryPoint) -> str:
    dist = point.dist
    return f"{dist.name} {dist.version}" if dist is not None else "(unknown distribution)"


def _uninstall(point: EntryPoint) -> str:
    return f" (pip uninstall {point.dist.name})" if point.dist is not None else ""
