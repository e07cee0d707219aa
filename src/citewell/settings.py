"""Settings: flag > environment (``CITEWELL_…``) > config file > default.

The config file is ``citewell.toml`` in the user config directory (or the file given
with ``--config`` / ``CITEWELL_CONFIG``), with top-level keys ``store``, ``blobs``, ``workspace``,
``generator``, the ``llm_*`` keys of :class:`LLMSettings` and the ``embed_*`` keys of
:class:`EmbedSettings`. The default store is ``citewell.sqlite`` in the user data
directory; ``--store`` / ``CITEWELL_STORE`` / ``store`` name a SQLite file or a PostgreSQL
database by URL (``postgresql://user[:password]@host[:port]/database``, see
:func:`citewell.store.open_store`).
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import urlsplit

import platformdirs

from .errors import UsageError
from .locations import is_url, safe_location

APP = "citewell"
DEFAULT_WORKSPACE = "default"
#: The answer writers ``--generator`` / ``generator`` may name.
GENERATORS = ("extractive", "llm")
#: Settings of the LLM endpoint: (name, type). Flag ``--llm-NAME`` (dashes), environment
#: ``CITEWELL_LLM_NAME``, config key ``llm_NAME``.
LLM_FIELDS: tuple[tuple[str, type], ...] = (("base_url", str), ("model", str), ("api_key", str),
                                            ("temperature", float), ("max_tokens", int), ("timeout", float),
                                            ("answer_timeout", float), ("retries", int), ("judge", bool),
                                            ("fallback", bool))
#: Settings of the embeddings endpoint: environment ``CITEWELL_EMBED_NAME``, config ``embed_NAME``.
EMBED_FIELDS: tuple[tuple[str, type], ...] = (("base_url", str), ("model", str), ("api_key", str),
                                              ("timeout", float), ("batch_size", int))
CONFIG_KEYS = ("store", "blobs", "workspace", "generator", *(f"llm_{n}" for n, _ in LLM_FIELDS),
               *(f"embed_{n}" for n, _ in EMBED_FIELDS))


def default_store_path() -> Path:
    """``<user data dir>/citewell/citewell.sqlite`` (e.g. ``~/.local/share/citewell/…``)."""
    return Path(platformdirs.user_data_dir(APP)) / "citewell.sqlite"


def default_config_path() -> Path:
    """``<user config dir>/citewell/citewell.toml``."""
    return Path(platformdirs.user_config_dir(APP)) / "citewell.toml"


def _config_values(config: str | os.PathLike[str] | None) -> tuple[Path | None, dict[str, Any]]:
    """``(explicit config path or None, its values)``: ``config``, else ``CITEWELL_CONFIG``,
    else the default file (absent: no values). Raises :class:`UsageError` for an
    unreadable file or unknown keys."""
    config_path = config or os.environ.get("CITEWELL_CONFIG") or None
    explicit = Path(config_path).expanduser() if config_path else None
    values = _load_config(explicit)
    unknown = sorted(set(values) - set(CONFIG_KEYS))
    if unknown:
        raise UsageError(f"config file {explicit or default_config_path()}: unknown key(s) {', '.join(unknown)}; "
                         f"known: {', '.join(CONFIG_KEYS)}")
    return explicit, values


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


def _convert(name: str, raw: Any, kind: type, where: str) -> Any:
    """``raw`` (a flag, environment or config value) as ``kind``; :class:`UsageError`
    naming ``where`` when it is not one."""
    try:
        if kind is bool:
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text in _TRUE or text in _FALSE:
                return text in _TRUE
            raise ValueError(raw)
        if kind is str:
            text = str(raw).strip()
            return text or None
        value = kind(raw)
    except (TypeError, ValueError):
        raise UsageError(f"{where}: {raw!r} is not a valid {name} ({kind.__name__})") from None
    if kind is float and not math.isfinite(value):
        raise UsageError(f"{where}: {raw!r} is not a finite number")
    return value


def _pick(name: str, kind: type, flag: Any, env_names: tuple[str, ...], config_key: str,
          file_values: Mapping[str, Any]) -> tuple[Any, str | None]:
    """One setting: flag > environment (first set of ``env_names``) > config file; returns
    ``(value or None, where it came from)``."""
    if flag is not None:
        return _convert(name, flag, kind, f"--{config_key.replace('_', '-')}"), "flag"
    for env in env_names:
        if os.environ.get(env, "") != "":
            return _convert(name, os.environ[env], kind, env), env
    if config_key in file_values:
        return _convert(name, file_values[config_key], kind, f"config key {config_key}"), "config"
    return None, None


def _is_openai(base_url: str | None) -> bool:
    return base_url is not None and (urlsplit(base_url).hostname or "").lower() == "api.openai.com"


@dataclass(frozen=True)
class LLMSettings:
    """The OpenAI-compatible chat endpoint (``citewell ask --generator llm``).

    ``base_url`` (e.g. ``http://127.0.0.1:8080/v1``), ``model``, ``api_key`` (None: the
    endpoint needs none), ``temperature`` (default 0), ``max_tokens`` (default 700 per
    answer; an endpoint that writes past it is cut client-side, see
    :data:`citewell.generate.llm.CHARS_PER_TOKEN`), ``timeout`` (seconds: connecting, and
    the longest silence while reading; 60), ``answer_timeout`` (seconds the whole answer
    may take, from the request to its last piece, whatever the endpoint sends meanwhile —
    keep-alive comments, a word now and then; None, the default: derived per answer from
    the prompt's size and the endpoint's measured speed,
    :meth:`citewell.generate.llm.LLMGenerator.budget`), ``retries`` (attempts after a
    429/5xx or a connection failure, with exponential backoff; 2), ``judge`` (ask the
    same endpoint about ``uncertain`` citations), and ``fallback`` (answer extractively,
    with a warning, when the endpoint fails before the answer has begun).

    Each comes from the flag ``--llm-NAME``, else ``CITEWELL_LLM_NAME``, else the config
    key ``llm_NAME``, else the default; ``base_url`` also falls back to
    ``OPENAI_BASE_URL``. ``OPENAI_API_KEY`` is used only for the endpoint of
    ``OPENAI_BASE_URL`` or for api.openai.com, never sent to another server.
    """

    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    temperature: float = 0.0
    max_tokens: int = 700
    timeout: float = 60.0
    answer_timeout: float | None = None
    retries: int = 2
    judge: bool = False
    fallback: bool = False

    @property
    def configured(self) -> bool:
        """True when an endpoint is configured (a base URL)."""
        return self.base_url is not None

    @classmethod
    def resolve(cls, flags: Mapping[str, Any] | None = None, *,
                config: str | os.PathLike[str] | None = None) -> "LLMSettings":
        """Resolve every field (see the class docstring). ``flags``: field name → flag value
        (None: not given). Raises :class:`UsageError` for a bad value, a base URL that is
        not ``http(s)://…``, or a base URL without a model."""
        flags = flags or {}
        _, file_values = _config_values(config)
        values: dict[str, Any] = {}
        origin: dict[str, str | None] = {}
        for name, kind in LLM_FIELDS:
            env = (f"CITEWELL_LLM_{name.upper()}",) + (("OPENAI_BASE_URL",) if name == "base_url" else ())
            values[name], origin[name] = _pick(name, kind, flags.get(name), env, f"llm_{name}", file_values)
        if values["api_key"] is None and os.environ.get("OPENAI_API_KEY") and (
                origin["base_url"] == "OPENAI_BASE_URL" or _is_openai(values["base_url"])):
            values["api_key"] = os.environ["OPENAI_API_KEY"]
        base_url = values["base_url"]
        if base_url is not None:
            parts = urlsplit(base_url)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise UsageError(f"the LLM base URL must be http(s)://host[:port]/path, not {base_url!r}")
            if values["model"] is None:
                raise UsageError("an LLM endpoint is configured but no model: set CITEWELL_LLM_MODEL, "
                                 "--llm-model or the config key llm_model")
        for name in ("max_tokens", "retries"):
            if values[name] is not None and values[name] < (1 if name == "max_tokens" else 0):
                raise UsageError(f"llm {name} must be at least {1 if name == 'max_tokens' else 0}")
        for name in ("timeout", "answer_timeout"):
            if values[name] is not None and values[name] <= 0:
                raise UsageError(f"the llm {name.replace('_', ' ')} must be a positive number of seconds")
        return cls(**{k: v for k, v in values.items() if v is not None})


@dataclass(frozen=True)
class EmbedSettings:
    """An optional OpenAI-compatible embeddings endpoint replacing the shipped MiniLM:
    ``base_url``, ``model``, ``api_key``, ``timeout`` (seconds, 60), ``batch_size``
    (texts per request, 64). From ``CITEWELL_EMBED_NAME``, else the config key
    ``embed_NAME`` (``OPENAI_API_KEY`` as for :class:`LLMSettings`)."""

    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    timeout: float = 60.0
    batch_size: int = 64

    @property
    def configured(self) -> bool:
        """True when an embeddings endpoint is configured."""
        return self.base_url is not None

    @classmethod
    def resolve(cls, *, config: str | os.PathLike[str] | None = None) -> "EmbedSettings":
        """Resolve every field; :class:`UsageError` for a bad value or a base URL without
        a model."""
        _, file_values = _config_values(config)
        values = {name: _pick(name, kind, None, (f"CITEWELL_EMBED_{name.upper()}",), f"embed_{name}",
                              file_values)[0] for name, kind in EMBED_FIELDS}
        if values["api_key"] is None and os.environ.get("OPENAI_API_KEY") and _is_openai(values["base_url"]):
            values["api_key"] = os.environ["OPENAI_API_KEY"]
        if values["base_url"] is not None:
            parts = urlsplit(values["base_url"])
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise UsageError(f"the embeddings base URL must be http(s)://host[:port]/path, not "
                                 f"{values['base_url']!r}")
            if values["model"] is None:
                raise UsageError("an embeddings endpoint is configured but no model: set CITEWELL_EMBED_MODEL")
        if values["batch_size"] is not None and values["batch_size"] < 1:
            raise UsageError("embed batch_size must be at least 1")
        return cls(**{k: v for k, v in values.items() if v is not None})


def resolve_generator(choice: str | None, llm: LLMSettings, *, config: str | os.PathLike[str] | None = None) -> str:
    """The generator to answer with: ``choice`` (flag), else ``CITEWELL_GENERATOR``, else
    the config key ``generator``, else ``llm`` when an endpoint is configured and
    ``extractive`` otherwise. :class:`UsageError` for an unknown name, or ``llm`` without
    an endpoint."""
    _, file_values = _config_values(config)
    name, _ = _pick("generator", str, choice, ("CITEWELL_GENERATOR",), "generator", file_values)
    name = (name or ("llm" if llm.configured else "extractive")).lower()
    if name not in GENERATORS:
        raise UsageError(f"generator must be one of {', '.join(GENERATORS)}, not {name!r}")
    if name == "llm" and not llm.configured:
        raise UsageError("the llm generator needs an endpoint: set CITEWELL_LLM_BASE_URL and CITEWELL_LLM_MODEL "
                         "(or --llm-base-url/--llm-model, or llm_base_url/llm_model in the config file)")
    return name


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


def blob_location(flag: str | os.PathLike[str] | None = None, *,
                  config: str | os.PathLike[str] | None = None) -> str | None:
    """Where stores keep originals and page images (:func:`citewell.blobs.open_blobs`: a
    folder or ``s3://bucket/prefix``): the flag ``--blobs``, else ``CITEWELL_BLOBS``, else
    the config key ``blobs`` (a relative folder there is relative to the config file's
    folder), else None (each store's own default: beside a SQLite file). Raises
    :class:`UsageError` for an unreadable config file."""
    if flag is not None and str(flag).strip():
        return _blob_text(flag)
    if os.environ.get("CITEWELL_BLOBS", "").strip():
        return _blob_text(os.environ["CITEWELL_BLOBS"])
    explicit, file_values = _config_values(config)
    value = str(file_values.get("blobs") or "").strip()
    if not value:
        return None
    if "://" in value:
        return value
    return str(((explicit or default_config_path()).parent / Path(value).expanduser()).resolve())


def _blob_text(value: str | os.PathLike[str]) -> str:
    text = str(value).strip()
    return text if "://" in text else str(Path(text).expanduser().resolve())


def configured_blobs() -> str | None:
    """The blob location of a store opened without one (:func:`citewell.store.open_store`):
    :func:`blob_location` from ``CITEWELL_BLOBS`` and the config file (a command's
    ``--blobs`` and ``--config`` are exported to those, see :mod:`citewell.cli.app`)."""
    return blob_location()


def store_value(value: str | os.PathLike[str], base: Path | None = None) -> Path | str:
    """A store setting as :func:`citewell.store.open_store` takes it: a PostgreSQL URL
    unchanged (a ``Path`` would fold its ``//``), anything else a file path (``~``
    expanded; relative to ``base`` when given: a config file's folder)."""
    if is_url(str(value)):
        return str(value)
    path = Path(value).expanduser()
    return (base / path).expanduser() if base is not None else path


def store_location(store: Path | str) -> str:
    """How messages name ``store``: a file's path, a URL without its password."""
    if is_url(str(store)):
        return safe_location(str(store))
    return str(store)


@dataclass(frozen=True)
class Settings:
    """Resolved settings: ``store`` (the path of a SQLite file, or a PostgreSQL URL as a
    string) and ``workspace`` (name). Where the store keeps its originals is
    :func:`configured_blobs`."""

    store: Path | str
    workspace: str

    @property
    def store_location(self) -> str:
        """The store as messages name it (never a password: :func:`store_location`)."""
        return store_location(self.store)

    @classmethod
    def resolve(cls, *, store: str | os.PathLike[str] | None = None, workspace: str | None = None,
                config: str | os.PathLike[str] | None = None) -> "Settings":
        """Resolve each setting from flag, then ``CITEWELL_STORE``/``CITEWELL_WORKSPACE``,
        then the config file (``CITEWELL_CONFIG`` or the default path), then the default.

        A store is a SQLite file or a PostgreSQL URL (:func:`store_value`); a relative file
        in a config file is relative to that file's folder. Raises :class:`UsageError` for
        an unreadable config file, unknown config keys or an empty workspace name.
        """
        explicit, file_values = _config_values(config)
        store_path: Path | str | None = None
        if store is not None:
            store_path = store_value(store)
        elif os.environ.get("CITEWELL_STORE"):
            store_path = store_value(os.environ["CITEWELL_STORE"])
        elif file_values.get("store"):
            # a relative path in a config file is relative to that file's folder
            store_path = store_value(str(file_values["store"]), (explicit or default_config_path()).parent)
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
