"""Prebuilt JupyterLab extensions: install them with pip, list what JupyterLab would load.

Extensions ship as ordinary Python distributions whose data files land in
``<prefix>/share/jupyter/labextensions/``; pip installs them into the environment
``ganymede serve`` runs in, and the distribution's own file list says what it brought.
"""

from ganymede.lab.extensions import LabExtension, installed_extensions
from ganymede.lab.packages import InstallReport, UninstallReport, install, uninstall

__all__ = [
    "InstallReport",
    "LabExtension",
    "UninstallReport",
    "install",
    "installed_extensions",
    "uninstall",
]
