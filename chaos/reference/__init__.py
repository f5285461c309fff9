"""The documentation site's reference pages, made from their sources (the CLI's parser, the registries, the
bundled scenarios, the suite files, the violation catalogue and its captured witnesses) when the site is
built, so that no page restates data that can drift. docs/hooks.py hands them to MkDocs."""
