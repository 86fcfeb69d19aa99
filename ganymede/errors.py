"""Every error Ganymede raises on purpose, in one tree.

Each door (CLI exit codes, HTTP statuses, host error codes, MCP tool errors) maps these in one
place; the pure packages and ``core/`` only ever raise them, never a door's own error type.

    GanymedeError
    ├── UsageError(ValueError)              bad arguments, bad ``-p`` syntax        CLI exit 2
    ├── ConfigError(ValueError)             unknown or mistyped key in ganymede.toml CLI exit 2
    ├── PathError(ValueError)               a path that leaves the root              host "denied"
    ├── GrantDenied(PermissionError)        a host call the notebook's grant lacks   host "denied"
    ├── NotebookNotFound(FileNotFoundError) no such notebook or directory
    ├── InvalidNotebook(ValueError)         unreadable, not JSON, not nbformat       CLI exit 5
    │   └── UnreadableDocument              a file its registered document type cannot read
    ├── FrameError(ValueError)              a room frame that breaks the protocol    ws close 1007
    │   └── UnsupportedFrame                well-formed, of a kind rooms do not speak ws close 1003
    ├── KernelNotFound(LookupError)         no running kernel with that id           HTTP 404
    ├── CellNotFound(LookupError)           no cell with that id in the document     HTTP 404
    ├── SourceMismatch(ValueError)          a cell changed since the caller read it  HTTP 409
    ├── EditRefused                         an agent's edit of a cell it has not seen HTTP 409
    ├── ReadOnlyRoom(UsageError)            another server owns the file; its mode   HTTP 409
    ├── UnknownMark / UnknownSession(LookupError)  an agent's stale id            HTTP 404
    ├── RequestNotQueued(TimeoutError)      a named previous request never came      HTTP 408
    ├── ServerUnreachable(ConnectionError)  a server that does not answer            CLI exit 1
    ├── ServerRefused                       a refusal no narrower error names        MCP tool error
    ├── ServerStartFailed                   an in-process server that never listened CLI exit 1
    ├── HostCallError                       a host call that failed, with its code   host .code
    ├── PackageError                        pip could not install or uninstall       CLI exit 1
    │   └── NotInstalled(LookupError)       uninstalling what is not installed       CLI exit 1
    └── RunError                            a headless run that did not finish ok
        ├── RunTimeout(TimeoutError)        a cell ran past its timeout              CLI exit 3
        └── KernelDied                      the kernel died or could not start       CLI exit 4
"""

from __future__ import annotations


class GanymedeError(Exception):
    """Root of every error Ganymede raises on purpose; its ``str`` is one line for a person."""


class UsageError(GanymedeError, ValueError):
    """The caller asked for something malformed (a flag, a parameter, a body)."""


class ConfigError(GanymedeError, ValueError):
    """A config file Ganymede cannot use; the message names the file and the key."""


class PathError(GanymedeError, ValueError):
    """A path that is absolute, climbs out with ``..``, or resolves outside the root."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path!r}: {reason}")
        self.path = path
        self.reason = reason


class GrantDenied(GanymedeError, PermissionError):
    """A kernel asked for what its notebook's grant does not cover; names the grant it needs."""

    def __init__(self, grant: str, path: str) -> None:
        where = path if path else "the root"
        if grant == "edit_self":
            super().__init__(f"needs edit_self granted for {where}")
        else:
            super().__init__(f"needs a {grant} grant covering {where}")
        self.grant = grant
        self.path = path


class NotebookNotFound(GanymedeError, FileNotFoundError):
    """The path names no notebook (or directory, for listings) under the root."""

    def __init__(self, path: str) -> None:
        super().__init__(f"{path}: no such file or directory")
        self.path = path


class InvalidNotebook(GanymedeError, ValueError):
    """A file that is not a notebook Ganymede can read: not JSON, or not valid nbformat."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: not a valid notebook: {reason}")
        self.path = path
        self.reason = reason


class UnreadableDocument(InvalidNotebook):
    """A file of a type registered in the ``jupyter_ydoc`` entry points (a chat, a CAD model)
    that its type's class cannot read: a room treats it as it treats an unreadable notebook."""

    def __init__(self, path: str, type_: str, reason: str) -> None:
        ValueError.__init__(self, f"{path}: not a {type_} document its type can read: {reason}")
        self.path = path
        self.reason = reason
        self.type = type_


class FrameError(GanymedeError, ValueError):
    """A websocket frame a room cannot decode; it closes only the connection that sent it."""


class UnsupportedFrame(FrameError):
    """A frame that decodes, but of a message type or request the rooms do not handle."""


class KernelNotFound(GanymedeError, LookupError):
    def __init__(self, kernel_id: str) -> None:
        super().__init__(f"no kernel with id {kernel_id}")
        self.kernel_id = kernel_id


class CellNotFound(GanymedeError, LookupError):
    def __init__(self, cell_id: str) -> None:
        super().__init__(f"no cell with id {cell_id}")
        self.cell_id = cell_id


class SourceMismatch(GanymedeError, ValueError):
    """A cell's source no longer hashes to what the caller sent: it changed since it was read."""

    def __init__(self, cell_id: str) -> None:
        super().__init__(f"cell {cell_id} changed since it was read")
        self.cell_id = cell_id


class EditRefused(GanymedeError):
    """An agent's edit of a cell someone changed since the agent last read it; it carries the
    cell as it is now and who changed it, so the agent can redo its edit on top."""

    def __init__(self, cell: dict[str, object], by: str, reason: str) -> None:
        super().__init__(f"cell {cell.get('id')} {reason}")
        self.cell = cell
        self.by = by


class ReadOnlyRoom(UsageError):
    """A notebook this server shows read-only: another server owns its file, or its mode
    forbids writing it (``why`` says which)."""

    def __init__(self, path: str, why: str = "another server owns its file") -> None:
        super().__init__(f"{path} is read-only here: {why}")
        self.path = path
        self.why = why


class UnknownMark(GanymedeError, LookupError):
    def __init__(self, mark: str) -> None:
        super().__init__(f"no read mark {mark!r}: read the notebook again by its path")
        self.mark = mark


class UnknownSession(GanymedeError, LookupError):
    def __init__(self, session: str) -> None:
        super().__init__(f"no agent session {session!r}: it ended or the server restarted")
        self.session = session


class RequestNotQueued(GanymedeError, TimeoutError):
    """A request had to follow another one that was not queued in time."""

    def __init__(self, request_id: str) -> None:
        super().__init__(f"previous request {request_id} was not queued")
        self.request_id = request_id


class ServerUnreachable(GanymedeError, ConnectionError):
    """A server (found by its runtime file or named by URL) that did not answer."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"the server at {url} does not answer: {reason}")
        self.url = url
        self.reason = reason


class ServerRefused(GanymedeError):
    """A server's refusal of an API call, with its status, code and own sentence."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


class ServerStartFailed(GanymedeError):
    """A server ``ganymede mcp`` started in its own process that never came up; says why."""


class HostCallError(GanymedeError):
    """A host API call that failed; ``code`` is one of the wire's error codes (``host/api.py``)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class PackageError(GanymedeError):
    """pip refused or failed an install or uninstall; the message carries pip's own reason."""


class NotInstalled(PackageError, LookupError):
    """Distributions asked to be uninstalled that this environment does not have."""

    def __init__(self, names: list[str]) -> None:
        super().__init__(f"not installed: {', '.join(names)}")
        self.names = names


class RunError(GanymedeError):
    """A headless run that ended other than ok."""


class RunTimeout(RunError, TimeoutError):
    """A cell ran longer than the timeout, or the kernel took too long to start."""


class KernelDied(RunError):
    """The kernel exited mid-run or never became ready."""
