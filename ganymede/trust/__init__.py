"""Signing notebooks and checking signatures, shared with ``jupyter trust`` and jupyter_server.

nbformat's NotebookNotary keeps the secret and the database, so a signature made here is one
every Jupyter tool reads (same secret, same ``nbsignatures.db`` in the Jupyter data dir).
"""

from ganymede.trust.notary import (
    TrustReport,
    check_files,
    is_signed,
    sign_data,
    sign_files,
)

__all__ = ["TrustReport", "check_files", "is_signed", "sign_data", "sign_files"]
