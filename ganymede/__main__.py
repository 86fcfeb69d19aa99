"""``python -m ganymede`` runs the CLI."""

from ganymede.cli.main import run

run()
