"""Settings: flag > environment (``CITEWELL_…``) > config file > default.

The config file is ``citewell.toml`` in the user config directory (or the file given
with ``--config`` / ``CITEWELL_CONFIG``), with top-level keys ``store`` and
``workspace``. The default store is ``citewell.sqlite`` in the user data directory.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from .errors import UsageError

APP = "citewell"
DEFAULT_WORKSPACE = "default"
CONFIG_KEYS = ("store", "workspace")


def default_store_path() -> Path:
    """``<user data dir>/citewell/citewell.sqlite`` (e.g. ``~/.local/share/citewell/…``)."""
    return Path(platformdirs.user_data_dir(APP)) / "citewell.sqlite"


def default_config_path() -> Path:
    """``<user config dir>/citewell/citewell.toml``."""
    return Path(platformdirs.user_config_dir(APP)) / "citewell.toml"


def _load_config(path: Path | None) -> dict[str, Any]:
    explicit = path is not None
    path = path or default_config_path()
    if not path.is_file():
        if explicit:
            raise UsageError(f"config file {path} does not exist")
        return {}
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except (OSError, ValueError) as exc:  # TOMLDecodeError and UnicodeDecodeError are ValueErrors
        raise UsageError(f"config file {path}: {exc}") from exc


@dataclass(frozen=True)
class Settings:
    """Resolved settings: ``store`` (path of the SQLite file) and ``workspace`` (name)."""

    store: Path
    workspace: str

    @classmethod
    def resolve(cls, *, store: str | os.PathLike[str] | None = None, workspace: str | None = None,
                config: str | os.PathLike[str] | None = None) -> "Settings":
        """Resolve each setting from flag, then ``CITEWELL_STORE``/``CITEWELL_WORKSPACE``,
        then the config file (``CITEWELL_CONFIG`` or the default path), then the default.

        A relative ``store`` in a config file is relative to that file's folder. Raises
        :class:`UsageError` for an unreadable config file, unknown config keys or an empty
        workspace name.
        """
        config_path = config or os.environ.get("CITEWELL_CONFIG") or None
        explicit = Path(config_path).expanduser() if config_path else None
        file_values = _load_config(explicit)
        unknown = sorted(set(file_values) - set(CONFIG_KEYS))
        if unknown:
            raise UsageError(f"config file {explicit or default_config_path()}: unknown key(s) {', '.join(unknown)}; "
                             f"known: {', '.join(CONFIG_KEYS)}")
        store_path: Path | None = None
        if store is not None:
            store_path = Path(store).expanduser()
        elif os.environ.get("CITEWELL_STORE"):
            store_path = Path(os.environ["CITEWELL_STORE"]).expanduser()
        elif file_values.get("store"):
            # a relative path in a config file is relative to that file's folder
            store_path = ((explicit or default_config_path()).parent / str(file_values["store"])).expanduser()
        if workspace is not None:
            ws = workspace
        elif os.environ.get("CITEWELL_WORKSPACE") is not None:
            ws = os.environ["CITEWELL_WORKSPACE"]
        else:
            ws = str(file_values.get("workspace", DEFAULT_WORKSPACE))
        ws = ws.strip()
        if not ws:
            raise UsageError("the workspace name is empty")
        try:
            ws.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise UsageError("the workspace name is not valid UTF-8") from exc
        return cls(store=store_path or default_store_path(), workspace=ws)
