"""`python3 -m chaos.reference` rewrites the reference pages in docs/reference/ that no longer match their
sources (after a change to the CLI, a registry, a scenario, a suite file or the violation catalogue)."""

from chaos.reference.pages import write

for name in write():
    print(f"wrote docs/{name}")
