"""``python -m ganymede`` runs the CLI."""

from ganymede.cli.launch import run

run()
