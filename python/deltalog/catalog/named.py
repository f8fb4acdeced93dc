"""Named catalogs: ``deltalog.load_catalog("prod")`` from a configuration file and environment
variables (issue #34, item 1), as pyiceberg users know it from ``~/.pyiceberg.yaml``.

The file is YAML, the first that exists of ``$DELTALOG_HOME/.deltalog.yaml``,
``~/.deltalog.yaml`` and ``./.deltalog.yaml``::

    default-catalog: prod
    catalog:
      prod:
        type: rest
        uri: https://catalog.example.com
        token: ${PROD_CATALOG_TOKEN}        # secrets come from the environment
        storage_options:
          AWS_REGION: eu-west-1
      local:
        type: sqlite
        path: /data/catalog.db
        warehouse: /data/warehouse

Each catalog is the configuration :func:`deltalog.connect_catalog` takes (Lance catalog
specification, "Configurations"), plus ``storage_options`` for its tables. Environment
variables add catalogs and override the file key by key: ``DELTALOG_CATALOG__PROD__TYPE=rest``,
``DELTALOG_CATALOG__PROD__STORAGE_OPTIONS__AWS_REGION=eu-west-1`` (names and keys are case
insensitive; storage option keys keep their case); ``DELTALOG_DEFAULT_CATALOG`` names the
default. ``${VAR}`` in a value is replaced by the variable, and a secret (``token``,
``password``, ``secret``, ...) written literally in the file is refused: the file is often
shared, the environment is the place for credentials.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deltalog.exceptions import InvalidArgumentError

if TYPE_CHECKING:
    from deltalog.catalog.base import Catalog
    from deltalog.table.delta_table import DeltaTable

FILE_NAME = ".deltalog.yaml"
ENV_PREFIX = "DELTALOG_CATALOG__"
ENV_DEFAULT = "DELTALOG_DEFAULT_CATALOG"
ENV_HOME = "DELTALOG_HOME"
STORAGE_OPTIONS = "storage_options"
#: Keys whose values are credentials: never written literally in the file.
SECRET_KEYS = frozenset({"token", "password", "secret", "client_secret", "credential"})
#: Most bytes of configuration file read (a configuration, not a data file).
MAX_FILE_BYTES = 1 << 20
_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


@dataclass
class NamedCatalog:
    """One configured catalog: its properties (references not yet replaced), its storage
    options, and where it was configured (the file, the environment, or both)."""

    name: str
    properties: dict[str, str] = field(default_factory=dict)
    storage_options: dict[str, str] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)

    @property
    def type(self) -> str:
        return self.properties.get("type", "")

    @property
    def location(self) -> str:
        """The server, database or directory (``uri`` or ``path``) as configured (``${VAR}``
        references kept)."""
        return self.properties.get("uri") or self.properties.get("path") or ""

    @property
    def shown_location(self) -> str:
        """:attr:`location` for listings: each ``${VAR}`` replaced by the variable (a reference
        to an unset one kept, marked), and any password in it masked."""
        from deltalog._redact import redact

        def one(match: re.Match[str]) -> str:
            found = os.environ.get(match.group(1))
            return match.group(0) + " (unset)" if found is None else found

        return redact(_REFERENCE.sub(one, self.location))


@dataclass
class CatalogConfig:
    """Every configured catalog, the default's name, and the file read (if any)."""

    catalogs: dict[str, NamedCatalog]
    default: str | None
    file: Path | None

    def get(self, name: str | None) -> NamedCatalog:
        """The catalog ``name`` (the default when None), or a one-line error naming what is
        configured."""
        if name is None:
            name = self.default
            if name is None:
                raise InvalidArgumentError(
                    "no default catalog: name one, set default-catalog in "
                    f"{FILE_NAME} or {ENV_DEFAULT} ({self._configured()})"
                )
        found = self.catalogs.get(name.lower())
        if found is None:
            raise InvalidArgumentError(f"no catalog named {name!r} ({self._configured()})")
        return found

    def _configured(self) -> str:
        names = ", ".join(sorted(self.catalogs)) or "none"
        where = str(self.file) if self.file is not None else f"no {FILE_NAME} found"
        return f"configured: {names}; file: {where}"


def config_files() -> list[Path]:
    """Where the configuration file is looked for, in order."""
    out = []
    home = os.environ.get(ENV_HOME)
    if home:
        out.append(Path(home) / FILE_NAME)
    out.append(Path.home() / FILE_NAME)
    out.append(Path.cwd() / FILE_NAME)
    return out


def read_config(
    path: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None
) -> CatalogConfig:
    """The configured catalogs: the file ``path`` (else the first of :func:`config_files`
    that exists) overridden by the environment ``environ`` (else ``os.environ``)."""
    env = os.environ if environ is None else environ
    file = (
        Path(path) if path is not None else next((p for p in config_files() if p.is_file()), None)
    )
    catalogs: dict[str, NamedCatalog] = {}
    default: str | None = None
    if file is not None:
        default = _read_file(file, catalogs)
    for key, value in sorted(env.items()):
        if key.upper().startswith(ENV_PREFIX):
            _read_env(key, value, catalogs)
    default = env.get(ENV_DEFAULT) or default
    if default is None and len(catalogs) == 1:
        default = next(iter(catalogs))
    return CatalogConfig(catalogs, default.lower() if default else None, file)


def load_catalog(
    name: str | None = None,
    path: str | os.PathLike[str] | None = None,
    create: bool = False,
    **properties: str,
) -> Catalog:
    """The catalog configured as ``name`` (the default catalog when None), connected: see
    the module documentation for the file and the environment variables. ``properties``
    override the configured ones (``load_catalog("prod", timeout="5")``). A configured
    catalog is opened, never created by mistake: ``create=True`` (or ``deltalog catalog
    create``) creates one that does not exist yet.

    Raises:
        InvalidArgumentError: no such catalog, no default, an unreadable file, a variable a
            value refers to that is not set, or a secret written literally in the file.
        CatalogNotFoundError: the catalog's directory, database file or deltalog schema does
            not exist (without ``create``).
    """
    from deltalog.catalog import connect_catalog
    from deltalog.catalog.stores.existence import CatalogNotFoundError

    config = read_config(path)
    named = config.get(name)
    merged = {**named.properties, **{k.lower(): str(v) for k, v in properties.items()}}
    resolved = {k: _expand(named.name, k, v) for k, v in merged.items()}
    storage = {k: _expand(named.name, k, v) for k, v in named.storage_options.items()}
    try:
        return connect_catalog(resolved, storage or None, create=create)
    except CatalogNotFoundError as e:
        raise e.named(named.name) from None


def table_of_catalog(text: str, version: int | None = None) -> DeltaTable | None:
    """``dl.DeltaTable("prod.sales.orders")``: the table ``sales.orders`` of the named catalog
    ``prod``, loaded through it (at ``version``), when ``text`` is unambiguously such a name:
    no URI scheme or path separator, no local file or directory of that name, and its first
    part a configured catalog. None otherwise (``text`` is then a location)."""
    if "://" in text or "/" in text or "\\" in text or "." not in text:
        return None
    if os.path.exists(text):
        return None
    first, _, rest = text.partition(".")
    if not rest or not _NAME.fullmatch(first):
        return None
    try:
        config = read_config()
    except InvalidArgumentError:
        return None  # a broken configuration never turns a location into an error
    if first.lower() not in config.catalogs:
        return None
    return load_catalog(first).load_table(rest, version)


def not_a_catalog(text: str) -> str | None:
    """Why ``text``, which :func:`table_of_catalog` took for a location that holds no table,
    may have been meant as a table of a named catalog: it has two or three dotted parts
    (``catalog.table``, ``catalog.namespace.table``), no scheme or path separator, no local
    path of that name, and its first part is no configured catalog. Says which catalogs are
    configured and suggests the closest name; None when ``text`` does not look like one."""
    import difflib

    if "://" in text or "/" in text or "\\" in text or os.path.exists(text):
        return None
    parts = text.split(".")
    if len(parts) not in (2, 3) or not all(parts) or not _NAME.fullmatch(parts[0]):
        return None
    looks = f"{text!r} looks like a catalog table name (catalog.namespace.table)"
    try:
        config = read_config()
    except InvalidArgumentError as e:
        return f"{looks}, but the catalog configuration cannot be read: {e}"
    first = parts[0].lower()
    if first in config.catalogs:
        return None  # a configured catalog: loaded through it, its own error said why
    if not config.catalogs:
        where = f"file: {config.file}" if config.file is not None else f"no {FILE_NAME} found"
        return (
            f"{looks}, but no catalogs are configured ({where} in ${ENV_HOME}, ~ or the "
            f"working directory; no {ENV_PREFIX}<NAME>__TYPE variables)"
        )
    closest = difflib.get_close_matches(first, sorted(config.catalogs), n=1, cutoff=0.6)
    meant = ""
    if closest:
        meant = f": did you mean {'.'.join([closest[0], *parts[1:]])!r}?"
    return f"{looks}, but {parts[0]!r} is not a configured catalog ({config._configured()}){meant}"


def _read_file(file: Path, catalogs: dict[str, NamedCatalog]) -> str | None:
    try:
        import yaml
    except ImportError:  # pragma: no cover - a dependency
        raise InvalidArgumentError(f"reading {file} needs PyYAML (pip install pyyaml)") from None
    try:
        with open(file, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise InvalidArgumentError(f"cannot read {file}: {e.strerror or e}") from None
    if len(data) > MAX_FILE_BYTES:
        raise InvalidArgumentError(f"{file} is larger than {MAX_FILE_BYTES} bytes")
    try:
        doc = yaml.safe_load(data.decode("utf-8")) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise InvalidArgumentError(f"{file} is not valid YAML: {_first_line(e)}") from None
    if not isinstance(doc, dict):
        raise InvalidArgumentError(f"{file}: the top level must be a mapping")
    unknown = set(doc) - {"catalog", "default-catalog"}
    if unknown:
        raise InvalidArgumentError(
            f"{file}: unknown top-level keys {sorted(map(str, unknown))} "
            "(expected catalog, default-catalog)"
        )
    section = doc.get("catalog") or {}
    if not isinstance(section, dict):
        raise InvalidArgumentError(f"{file}: 'catalog' must map names to configurations")
    for raw_name, body in section.items():
        name = _catalog_name(str(raw_name), str(file))
        if not isinstance(body, dict):
            raise InvalidArgumentError(f"{file}: catalog {name!r} must be a mapping")
        entry = catalogs.setdefault(name, NamedCatalog(name))
        entry.sources.append(str(file))
        for key, value in body.items():
            key = str(key).lower()
            if key == STORAGE_OPTIONS:
                if not isinstance(value, dict):
                    raise InvalidArgumentError(f"{file}: {name}.storage_options must be a mapping")
                for k, v in value.items():
                    entry.storage_options[str(k)] = _scalar(v, f"{name}.storage_options.{k}", file)
                continue
            text = _scalar(value, f"{name}.{key}", file)
            if key in SECRET_KEYS and not _REFERENCE.fullmatch(text.strip()):
                raise InvalidArgumentError(
                    f"{file}: {name}.{key} is a secret written in the file; write "
                    f"{key}: ${{SOME_VARIABLE}} and set the variable"
                )
            entry.properties[key] = text
    default = doc.get("default-catalog")
    return None if default is None else _catalog_name(str(default), str(file))


def _read_env(key: str, value: str, catalogs: dict[str, NamedCatalog]) -> None:
    parts = key[len(ENV_PREFIX) :].split("__")
    if len(parts) < 2 or not all(parts):
        raise InvalidArgumentError(
            f"{key}: expected {ENV_PREFIX}<NAME>__<KEY> or "
            f"{ENV_PREFIX}<NAME>__STORAGE_OPTIONS__<OPTION>"
        )
    name = _catalog_name(parts[0].lower(), key)
    entry = catalogs.setdefault(name, NamedCatalog(name))
    if "environment" not in entry.sources:
        entry.sources.append("environment")
    if parts[1].lower() == STORAGE_OPTIONS:
        if len(parts) != 3:
            raise InvalidArgumentError(f"{key}: expected ...__STORAGE_OPTIONS__<OPTION>")
        entry.storage_options[parts[2]] = value
        return
    if len(parts) != 2:
        raise InvalidArgumentError(f"{key}: expected {ENV_PREFIX}<NAME>__<KEY>")
    entry.properties[parts[1].lower()] = value


def _catalog_name(name: str, where: str) -> str:
    if not _NAME.fullmatch(name):
        raise InvalidArgumentError(
            f"{where}: {name[:80]!r} is not a catalog name (letters, digits, _ . -)"
        )
    return name.lower()


def _scalar(value: Any, what: str, file: Path) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise InvalidArgumentError(f"{file}: {what} must be a string or a number")


def _expand(catalog: str, key: str, value: str) -> str:
    """``value`` with every ``${VAR}`` replaced by the environment variable."""

    def one(match: re.Match[str]) -> str:
        variable = match.group(1)
        found = os.environ.get(variable)
        if found is None:
            raise InvalidArgumentError(
                f"catalog {catalog!r}: {key} refers to ${{{variable}}}, which is not set"
            )
        return found

    return _REFERENCE.sub(one, value)


def _first_line(e: BaseException) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


__all__ = [
    "CatalogConfig",
    "NamedCatalog",
    "config_files",
    "load_catalog",
    "not_a_catalog",
    "read_config",
    "table_of_catalog",
]
