"""Allows ``python -m dialscore``."""

from dialscore.cli import main

main()
