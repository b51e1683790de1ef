"""The ``dialscore`` command."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from dialscore.cli.admin import admin
from dialscore.cli.enrichment_settings import add_enrichment_commands
from dialscore.cli.imports import imports
from dialscore.cli.output import DATA_DIR_ENV
from dialscore.cli.records import add_record_commands
from dialscore.cli.server import register

app = typer.Typer(
    help="dialscore: contact scoring and enrichment service",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def options(
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir",
            help=(
                "The service's data directory: its embedded database and generated secret key "
                f"(default ./var, or {DATA_DIR_ENV})"
            ),
            show_default=False,
        ),
    ] = None,
) -> None:
    """Options for every command; give them before the command's name."""
    if data_dir is not None:
        # Read by every command's settings, as if it had been set in the environment.
        os.environ[DATA_DIR_ENV] = str(data_dir)


register(app)
add_record_commands(admin)
add_enrichment_commands(admin)
app.add_typer(admin, name="admin")
app.add_typer(imports, name="import")


def main() -> None:
    app()
