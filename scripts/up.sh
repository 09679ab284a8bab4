#!/usr/bin/env bash
# The main job for a newcomer: set up, load the committed H200 runs into the embedded SQLite
# database (first start only), and serve the API and dashboard on http://127.0.0.1:8000/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/perfwarden serve --host "${HOST:-127.0.0.1}" --port "${PORT:-8000}" --seed data/h200
