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

# evaluation: the tiny VLM (random weights, built offline) and two baselines on every variant
MODEL_DIR="$MEDR2_VAR_DIR/models/tiny-vlm"
export HF_HUB_OFFLINE=1
$PY manage.py build_tiny_vlm "$MODEL_DIR"
$PY manage.py register_model tiny-vlm transformers --display-name "Tiny VLM (random weights)" \
  --params "{\"path\": \"$MODEL_DIR\", \"max_new_tokens\": 4, \"batch_size\": 16}"
$PY manage.py register_model random-baseline random --display-name "Random baseline"
$PY manage.py register_model prior-baseline prior --display-name "Prior baseline (train split)"
$PY manage.py run_evaluation --models tiny-vlm,random-baseline,prior-baseline --name "Demo evaluation" \
  --batch-size 64 --skip-if-done ${DEMO_PROGRESS:---no-progress}
$PY manage.py verify_audit

if [ "${DEMO_SERVE:-1}" = "1" ]; then
  echo
  echo "Serving Med-R2 Studio on http://127.0.0.1:${DEMO_PORT:-8000}/  (log in with a demo user above; Ctrl-C to stop)"
  exec $PY manage.py runserver "127.0.0.1:${DEMO_PORT:-8000}"
fi
