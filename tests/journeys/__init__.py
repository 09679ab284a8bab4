"""Journeys: a user through several features together (ingest, traces, gate, bisect,
experiments, the GitHub Action, the README's tour); conftest.py and shell.py run the commands
as a user types them."""
