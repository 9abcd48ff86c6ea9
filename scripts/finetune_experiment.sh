#!/usr/bin/env bash
# The fine-tuning experiment of docs/finetuning.md on embedded defaults (SQLite, eager Celery, no services):
# phantom content, a draft release (its train/val/test split), then manage.py finetune_experiment.
#   PHANTOMS=1060 PRETRAIN_STEPS=3000 STEPS=300 ./scripts/finetune_experiment.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export MEDR2_DEBUG=1 HF_HUB_OFFLINE=1
export MEDR2_VAR_DIR="${MEDR2_VAR_DIR:-$PWD/var/finetune-experiment}"
unset DATABASE_URL CELERY_BROKER_URL
PY=.venv/bin/python
mkdir -p "$MEDR2_VAR_DIR"
$PY manage.py migrate --noinput -v 0
$PY manage.py create_demo_users
$PY manage.py load_demo_data --phantoms "${PHANTOMS:-1060}"
$PY manage.py generate_chains --user demo-curator --no-progress
$PY manage.py review_items --user demo-curator --set approved --source-dataset "Med-R2 synthetic phantoms" \
  --skip-invalid --note "experiment: approved in bulk"
$PY manage.py generate_variants --no-progress
$PY manage.py release_create 1.0.0 --user demo-admin --skip-if-exists --title "Fine-tuning experiment items"
$PY manage.py finetune_experiment --release 1.0.0 --out "$MEDR2_VAR_DIR/experiment" \
  --pretrain-steps "${PRETRAIN_STEPS:-3000}" --steps "${STEPS:-300}" --seeds "${SEEDS:-0,1,2}"
