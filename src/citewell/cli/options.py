"""Options shared by the commands: settings a flag exports to the environment."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from ..store import Store


def export_setting(env: str) -> Callable[[Any], Any]:
    """A flag callback that exports the flag's value (when given) to the environment
    variable ``env``: every store the command opens, and every process it starts, reads
    it (:func:`citewell.settings.configured_blobs`), and the flag still beats the
    environment."""

    def export(value: Any) -> Any:
        if value is not None and str(value).strip():
            os.environ[env] = str(value)
        return value

    return export


StoreOpt = typer.Option(None, "--store", help="The store: a SQLite file or a postgresql:// URL (env CITEWELL_STORE; "
                        "default: citewell.sqlite in the user data directory).")
WorkspaceOpt = typer.Option(None, "--workspace", help="Workspace name (env CITEWELL_WORKSPACE; default: default).")
ConfigOpt = typer.Option(None, "--config", callback=export_setting("CITEWELL_CONFIG"),
                         help="citewell.toml to read settings from (env CITEWELL_CONFIG).")
BlobsOpt = typer.Option(None, "--blobs", callback=export_setting("CITEWELL_BLOBS"), metavar="LOCATION",
                        help="Where the store keeps originals and page images: a folder or s3://bucket/prefix "
                             "(env CITEWELL_BLOBS, config key blobs; default: the folder beside a SQLite store).")


@contextmanager
def opened_store(store: str | None, config: Path | None) -> Iterator[Store]:
    """The store the flags name (``--store``, ``--config``, else the environment and the
    default: :meth:`citewell.settings.Settings.resolve`), opened and migrated for one
    command and closed after it. Raises :class:`~citewell.errors.StoreError` when it
    cannot be opened."""
    from ..settings import Settings
    from ..store import open_store

    opened = open_store(Settings.resolve(store=store, config=config).store)
    try:
        yield opened
    finally:
        opened.close()


__all__ = ["BlobsOpt", "ConfigOpt", "StoreOpt", "WorkspaceOpt", "export_setting", "opened_store"]
