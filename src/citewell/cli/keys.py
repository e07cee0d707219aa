"""``citewell keys``: API keys for the HTTP API (``citewell serve``).

``citewell keys create --workspace NAME [--platform]`` creates the workspace when it is
missing, makes a key, and prints the key alone on the last line of stdout (so
``KEY=$(citewell keys create --workspace acme | tail -n 1)`` works); what it is for goes
to stderr. The store keeps only the key's SHA-256 (:mod:`citewell.keys`): a lost key
cannot be shown again, only replaced.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from ..engine import Engine
from ..settings import Settings

keys_app = typer.Typer(no_args_is_help=True, help="API keys for citewell serve.")
_err = Console(stderr=True, highlight=False, soft_wrap=True)


@keys_app.command("create")
def create(
    workspace: Optional[str] = typer.Option(None, "--workspace", help="Workspace the key belongs to (created "
                                            "when missing; env CITEWELL_WORKSPACE; default: default)."),
    platform: bool = typer.Option(False, "--platform", help="A platform key: may act for other workspaces "
                                  "(organization_id) and their users (user_id + user_email)."),
    store: Optional[Path] = typer.Option(None, "--store", help="SQLite store file (env CITEWELL_STORE)."),
    config: Optional[Path] = typer.Option(None, "--config", help="citewell.toml to read settings from."),
) -> None:
    """Make an API key; the key alone is printed on the last line of stdout."""
    settings = Settings.resolve(store=store, workspace=workspace, config=config)
    with Engine(settings.store, workspace=settings.workspace) as engine:
        key, record = engine.create_key(platform=platform)
    kind = "platform key" if record.platform else "key"
    _err.print(f"{kind} {record.prefix}… for workspace {settings.workspace!r} (organization_id "
               f"{record.workspace_id}) in {settings.store}. It is shown once: store it now.", markup=False)
    typer.echo(key)
