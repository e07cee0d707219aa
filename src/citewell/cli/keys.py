"""``citewell keys``: API keys for the HTTP API (``citewell serve``).

``citewell keys create --workspace NAME [--platform]`` creates the workspace when it is
missing, makes a key, and prints the key alone on the last line of stdout (so
``KEY=$(citewell keys create --workspace acme | tail -n 1)`` works); what it is for goes
to stderr. The store keeps only the key's SHA-256 (:mod:`citewell.keys`): a lost key
cannot be shown again, only replaced. ``citewell keys list`` shows every key's id,
prefix, workspace (name and ``organization_id``) and kind; ``citewell keys revoke ID``
(an id or a prefix) deletes one: requests with it get 401 ``INVALID_API_KEY``.
"""

from __future__ import annotations

from pathlib import Path
import json
from typing import Optional

import typer
from rich.console import Console

from ..engine import Engine
from ..errors import NotFoundError
from ..settings import Settings
from ..store.base import iso_utc
from .options import BlobsOpt, ConfigOpt, StoreOpt, opened_store

keys_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, help="API keys for citewell serve.")
_err = Console(stderr=True, highlight=False, soft_wrap=True)


@keys_app.command("create")
def create(
    workspace: Optional[str] = typer.Option(None, "--workspace", help="Workspace the key belongs to (created "
                                            "when missing; env CITEWELL_WORKSPACE; default: default)."),
    platform: bool = typer.Option(False, "--platform", help="A platform key: may act for other workspaces "
                                  "(organization_id) and their users (user_id + user_email)."),
    store: Optional[str] = StoreOpt,
    blobs: Optional[str] = BlobsOpt, config: Optional[Path] = ConfigOpt,
) -> None:
    """Make an API key; the key alone is printed on the last line of stdout."""
    settings = Settings.resolve(store=store, workspace=workspace, config=config)
    with Engine(settings.store, workspace=settings.workspace) as engine:
        key, record = engine.create_key(platform=platform)
    kind = "platform key" if record.platform else "key"
    _err.print(f"{kind} {record.prefix}… for workspace {settings.workspace!r} (organization_id "
               f"{record.workspace_id}) in {settings.store_location}. It is shown once: store it now.", markup=False)
    typer.echo(key)


@keys_app.command("list")
def list_keys(
    workspace: Optional[str] = typer.Option(None, "--workspace", help="Only this workspace's keys."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON array."),
    store: Optional[str] = StoreOpt,
    blobs: Optional[str] = BlobsOpt, config: Optional[Path] = ConfigOpt,
) -> None:
    """List API keys (id, prefix, workspace, kind, creation time); never the keys themselves."""
    with opened_store(store, config) as opened:
        workspace_id = opened.workspace_id(workspace, create=False) if workspace is not None else None
        rows = [{"id": k.id, "prefix": k.prefix, "workspace": opened.workspace_name(k.workspace_id),
                 "organization_id": k.workspace_id, "platform": k.platform, "created_at": iso_utc(k.created_at)}
                for k in opened.api_keys(workspace_id)]
    if as_json:
        typer.echo(json.dumps(rows, ensure_ascii=False))
        return
    for row in rows:
        kind = "platform" if row["platform"] else "key"
        typer.echo(f"{row['id']}  {row['prefix']}…  {kind:<8}  {row['workspace']} ({row['organization_id']})  "
                   f"{row['created_at']}")
    if not rows:
        _err.print("no API keys" + (f" in workspace {workspace!r}" if workspace else ""), markup=False)


@keys_app.command("revoke")
def revoke(
    key_id: str = typer.Argument(..., help="The key's id or prefix (see citewell keys list)."),
    store: Optional[str] = StoreOpt,
    blobs: Optional[str] = BlobsOpt, config: Optional[Path] = ConfigOpt,
) -> None:
    """Revoke an API key: requests with it are refused from now on."""
    with opened_store(store, config) as opened:
        if not opened.delete_api_key(key_id):
            raise NotFoundError(f"no API key with id or prefix {key_id!r} (or the prefix names several)")
    _err.print(f"revoked {key_id}", markup=False)
