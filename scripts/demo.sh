#!/usr/bin/env bash
# The end-to-end demo on embedded defaults: SQLite, eager Celery, bundled demo data.
set -euo pipefail
cd "$(dirname "$0")/.."

export MEDR2_DEBUG=1
export MEDR2_VAR_DIR="${MEDR2_VAR_DIR:-$PWD/var/demo}"
unset DATABASE_URL CELERY_BROKER_URL
PY=.venv/bin/python
mkdir -p "$MEDR2_VAR_DIR"

$PY manage.py migrate --noinput -v 0
$PY manage.py create_demo_users
$PY manage.py load_demo_data --phantoms "${DEMO_PHANTOMS:-48}" --assign-to demo-annotator,demo-adjudicator
$PY manage.py generate_chains --user demo-curator --no-progress
$PY manage.py check_items
# the demo curator reviews the synthetic chains (a real curator reads them on /items/ first)
$PY manage.py review_items --user demo-curator --set approved --source-dataset "Med-R2 synthetic phantoms" --skip-invalid \
  --note "demo: approved in bulk"
$PY manage.py generate_variants --no-progress
$PY manage.py verify_audit

if [ "${DEMO_SERVE:-1}" = "1" ]; then
  echo
  echo "Serving Med-R2 Studio on http://127.0.0.1:${DEMO_PORT:-8000}/  (log in with a demo user above; Ctrl-C to stop)"
  exec $PY manage.py runserver "127.0.0.1:${DEMO_PORT:-8000}"
fi
