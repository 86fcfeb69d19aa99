"""``ganymede.toml``: a small typed config, one dataclass per section.

Looked up as ``--config PATH``, else ``<root>/ganymede.toml``, else
``<jupyter_config_dir>/ganymede.toml``. An unknown section or key, or a value of the wrong type,
is a ConfigError naming the file and the key, so a typo never silently does nothing. So is a
value out of its range (a zero save delay, a port past 65535, ``settle`` above ``settle_max``),
which would otherwise surface later as a server that spins, fails to bind, or never settles.
"""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ganymede.errors import ConfigError

CONFIG_NAME = "ganymede.toml"
PORT_MAX = 65535

# (section, key) -> (lowest allowed, whether the lowest itself is allowed); None values pass.
LOWER_BOUNDS: dict[tuple[str, str], tuple[float, bool]] = {
    ("serve", "port"): (0, True),  # 0: the OS picks a free port
    ("serve", "save_delay"): (0, False),
    ("serve", "settle"): (0, False),
    ("serve", "settle_max"): (0, False),
    ("serve", "max_body_size"): (1, True),
    ("serve", "ping_interval"): (0, True),  # 0: no pings
    ("serve", "ping_timeout"): (0, False),
    ("serve", "client_queue_messages"): (1, True),
    ("serve", "max_rooms_mb"): (0, True),  # 0: no budget
    ("serve", "pack_idle_after"): (0, True),  # 0: never
    ("execute", "timeout"): (0, False),
    ("execute", "startup_timeout"): (0, False),
    ("execute", "cache_max_mb"): (0, False),
    ("agent", "settle"): (0, True),  # 0: report each change at once
    ("agent", "presence_idle"): (0, False),
    ("history", "max_age_days"): (0, False),
    ("history", "max_mb_per_document"): (0, False),
}


@dataclass
class ServeConfig:
    ip: str = "127.0.0.1"
    port: int = 8888
    root: str = ""
    token: str | None = None
    open_browser: bool = True
    save_delay: float = 1.0
    settle: float = 0.5
    settle_max: float = 5.0
    max_body_size: int = 64 * 1024 * 1024
    ping_interval: float = 30.0
    ping_timeout: float = 90.0
    client_queue_messages: int = 10_000
    server_side_execution: bool = True
    max_rooms_mb: float = 0.0  # 0: no budget
    pack_idle_after: float = 60.0  # 0: never


@dataclass
class HostConfig:
    read: list[str] = field(default_factory=lambda: [""])
    run: list[str] = field(default_factory=list)
    edit_self: bool = True


@dataclass
class ExecuteConfig:
    timeout: float | None = None
    startup_timeout: float = 60.0
    kernel: str | None = None
    gateway_url: str | None = None
    """Run kernels on this Jupyter kernel gateway (``--gateway-url``); None: on this machine."""
    cache: str | None = None
    """The run cache's directory (``--cache``), relative to the config file's; None: no cache."""
    cache_max_mb: float = 1024.0
    """The run cache's bound; the least recently used entries go past it."""


@dataclass
class AgentConfig:
    settle: float = 3.0
    wake: Literal["requests", "any"] = "requests"
    presence_idle: float = 300.0
    mode: Literal["edit", "suggest"] = "edit"
    """``suggest``: agents' cell edits are suggestions unless a call says otherwise."""


@dataclass
class HistoryConfig:
    """Each document's history (``ganymede.history``): whether rooms record it, and its bounds
    (oldest points go first)."""

    enabled: bool = True
    max_age_days: float = 30.0
    max_mb_per_document: float = 50.0


@dataclass
class Config:
    serve: ServeConfig = field(default_factory=ServeConfig)
    host: HostConfig = field(default_factory=HostConfig)
    execute: ExecuteConfig = field(default_factory=ExecuteConfig)
    agent: AgentConfig = field(default_factory=AgentConfig)
    history: HistoryConfig = field(default_factory=HistoryConfig)
    source: Path | None = None


def jupyter_config_dir() -> Path:
    """Jupyter's config dir, honouring JUPYTER_CONFIG_DIR; jupyter_core is imported late."""
    from jupyter_core.paths import jupyter_config_dir as _dir

    return Path(_dir())


def find_config(explicit: Path | None, root: Path | None) -> Path | None:
    """The config file in force: the explicit one (which must exist), else the first that exists."""
    if explicit is not None:
        if not explicit.is_file():
            raise ConfigError(f"{explicit}: config file not found")
        return explicit
    candidates = [root / CONFIG_NAME] if root is not None else []
    candidates.append(jupyter_config_dir() / CONFIG_NAME)
    return next((path for path in candidates if path.is_file()), None)


def load_config(explicit: Path | None = None, root: Path | None = None) -> Config:
    """Read the config in force; defaults when there is none."""
    path = find_config(explicit, root)
    if path is None:
        return Config()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"{path}: cannot read config: {error}") from None
    return parse_config(data, path)


def parse_config(data: dict[str, Any], path: Path) -> Config:
    """Check every section and key of a parsed config file against the dataclasses."""
    sections = {f.name: f for f in dataclasses.fields(Config) if f.name != "source"}
    config = Config(source=path)
    for name, values in data.items():
        if name not in sections:
            known = ", ".join(f"[{s}]" for s in sections)
            raise ConfigError(f"{path}: unknown section [{name}] (known: {known})")
        if not isinstance(values, dict):
            raise ConfigError(f"{path}: [{name}] must be a table")
        section = getattr(config, name)
        setattr(config, name, _parse_section(section, values, f"{path}: [{name}]"))
    check_ranges(config, path)
    return config


def check_ranges(config: Config, path: Path) -> None:
    """Every number within its range, and the pairs that bound each other in order."""
    for (section, key), (lowest, inclusive) in LOWER_BOUNDS.items():
        value = getattr(getattr(config, section), key)
        if value is None:
            continue
        if value < lowest or (value == lowest and not inclusive):
            bound = f"at least {lowest}" if inclusive else f"more than {lowest}"
            raise ConfigError(f"{path}: [{section}] {key} must be {bound}, not {value}")
    serve = config.serve
    if serve.port > PORT_MAX:
        raise ConfigError(f"{path}: [serve] port must be at most {PORT_MAX}, not {serve.port}")
    if serve.settle > serve.settle_max:
        raise ConfigError(
            f"{path}: [serve] settle ({serve.settle}) must not exceed settle_max "
            f"({serve.settle_max})"
        )
    if serve.ping_interval > 0 and serve.ping_timeout < serve.ping_interval:
        raise ConfigError(
            f"{path}: [serve] ping_timeout ({serve.ping_timeout}) must not be shorter than "
            f"ping_interval ({serve.ping_interval})"
        )


def _parse_section(section: Any, values: dict[str, Any], where: str) -> Any:
    fields = {f.name: f for f in dataclasses.fields(section)}
    changes: dict[str, Any] = {}
    for key, value in values.items():
        if key not in fields:
            raise ConfigError(f"{where}: unknown key {key!r} (known: {', '.join(fields)})")
        default = getattr(section, key)
        changes[key] = _check_type(key, value, default, fields[key].type, where)
    return dataclasses.replace(section, **changes)


def _check_type(key: str, value: Any, default: Any, annotation: Any, where: str) -> Any:
    text = str(annotation)
    if "Literal" in text:
        allowed = [part.strip(" '\"") for part in text.split("[", 1)[1].rstrip("]").split(",")]
        if value not in allowed:
            raise ConfigError(f"{where}: {key} must be one of {', '.join(allowed)}, not {value!r}")
        return value
    if "None" in text and value is None:
        return value
    if "list" in text:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where}: {key} must be a list of strings")
        return value
    if "bool" in text:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: {key} must be true or false")
        return value
    if "float" in text:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where}: {key} must be a number")
        return float(value)
    if "int" in text:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: {key} must be an integer")
        return value
    if "str" in text:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: {key} must be a string")
        return value
    raise ConfigError(f"{where}: {key} has an unsupported type")  # pragma: no cover
