"""``python -m citewell`` runs the command line."""

from __future__ import annotations

from .cli.app import main

main()
