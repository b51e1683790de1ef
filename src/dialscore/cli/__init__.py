"""The ``dialscore`` command."""

from __future__ import annotations

import typer

from dialscore.cli.admin import admin
from dialscore.cli.imports import imports
from dialscore.cli.server import register

app = typer.Typer(
    help="dialscore: contact scoring and enrichment service",
    no_args_is_help=True,
    add_completion=False,
)
register(app)
app.add_typer(admin, name="admin")
app.add_typer(imports, name="import")


def main() -> None:
    app()
