"""The grant policy of one root: which grant a notebook's kernel has, and whether a call passes.

Checks resolve symlinks on both sides before the pure rules compare them: the path a kernel
asks about, and every path its grant names. So a symlink inside a granted folder that leads
elsewhere reaches only what its target is granted, a grant that names a symlink covers where
the link leads (never more than its caller's grant, since intersections are taken on resolved
paths too), and anything that leads out of the root is refused outright.
"""

from __future__ import annotations

from pathlib import Path

from ganymede.config import Config
from ganymede.core.paths import resolve
from ganymede.errors import ConfigError, GrantDenied, PathError
from ganymede.fileid import FileIdStore
from ganymede.grant.model import Grant, grant_from_config
from ganymede.grant.paths import covered, minimal, normalize_target
from ganymede.grant.store import GrantStore


def host_defaults(config: Config) -> Grant:
    """The grant ``[host]`` gives every notebook without its own; a path there that no grant
    may hold is a ConfigError naming the file (``ganymede serve`` checks it before starting)."""
    host = config.host
    try:
        return grant_from_config(host.read, host.run, host.edit_self)
    except PathError as error:
        raise ConfigError(f"{config.source}: [host]: {error}") from None


class Grants:
    """Defaults from ``[host]`` and the per-notebook grants of ``store``, for files under root."""

    def __init__(
        self, root: Path, defaults: Grant, store: GrantStore, file_ids: FileIdStore
    ) -> None:
        self.root = root.resolve()
        self.defaults = defaults
        self.store = store
        self.file_ids = file_ids

    @classmethod
    def from_config(
        cls, root: Path, config: Config, file_ids: FileIdStore, store: GrantStore | None = None
    ) -> Grants:
        """Defaults from ``[host]``; a path there that no grant may hold is a ConfigError."""
        defaults = host_defaults(config)
        return cls(root, defaults, store if store is not None else GrantStore(), file_ids)

    def for_notebook(self, api_path: str | None) -> Grant:
        """The notebook's own grant over the defaults; the defaults for no notebook or no file.

        The store is read on every call, so a change made by ``ganymede grant`` without the
        server applies to the next host call as well.
        """
        if api_path is None:
            return self.defaults
        try:
            file_id = self.file_ids.get_id(normalize_target(api_path))
        except PathError:
            return self.defaults
        own = self.store.get(file_id) if file_id is not None else None
        return own.over(self.defaults) if own is not None else self.defaults

    def check_read(self, grant: Grant, caller_path: str | None, target: str) -> str:
        """The normalized ``target`` when ``grant`` lets it be read; a notebook reads itself."""
        normalized = normalize_target(target)
        real = self._real(normalized)
        if caller_path is not None and real == self._real(normalize_target(caller_path)):
            return normalized
        if not covered(self.resolved(grant.read), real):
            raise GrantDenied("read", normalized)
        return normalized

    def check_run(self, grant: Grant, target: str) -> str:
        """The normalized ``target`` when ``grant`` lets it be run."""
        normalized = normalize_target(target)
        if not covered(self.resolved(grant.run), self._real(normalized)):
            raise GrantDenied("run", normalized)
        return normalized

    def check_edit_self(self, grant: Grant, caller_path: str | None) -> str:
        """The caller's own normalized path when it may edit itself through ``self.*``."""
        if caller_path is None or not grant.edit_self:
            raise GrantDenied("edit_self", caller_path or "")
        return normalize_target(caller_path)

    def may_read(self, grant: Grant, caller_path: str | None, target: str) -> bool:
        """``check_read`` as a yes or no, for filtering listings and search hits."""
        try:
            self.check_read(grant, caller_path, target)
        except (GrantDenied, PathError):
            return False
        return True

    def narrow(self, caller: Grant, called: Grant) -> Grant:
        """The grant of a run: what both allow once symlinks in either are resolved."""
        return self.resolve_grant(caller).intersect(self.resolve_grant(called))

    def resolve_grant(self, grant: Grant) -> Grant:
        """The same grant naming where its paths lead; paths leading out of the root are gone."""
        return Grant(self.resolved(grant.read), self.resolved(grant.run), grant.edit_self)

    def resolved(self, paths: tuple[str, ...]) -> tuple[str, ...]:
        real = []
        for path in paths:
            try:
                real.append(self._real(path))
            except PathError:
                continue  # a granted path that leads out of the root covers nothing
        return minimal(real)

    def _real(self, normalized: str) -> str:
        """Where a normalized API path leads, as an API path; PathError when out of the root."""
        real = resolve(self.root, normalized)
        return "/".join(real.relative_to(self.root).parts)
