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
$PY manage.py load_demo_data --phantoms "${DEMO_PHANTOMS:-200}" --assign-to demo-annotator,demo-adjudicator
$PY manage.py generate_chains --user demo-curator --no-progress
$PY manage.py check_items
# the demo curator reviews the synthetic chains (a real curator reads them on /items/ first)
$PY manage.py review_items --user demo-curator --set approved --source-dataset "Med-R2 synthetic phantoms" --skip-invalid \
  --note "demo: approved in bulk"
$PY manage.py generate_variants --no-progress
# the shortcut audit: could a model that never sees the image answer the approved items? (/validity/shortcuts/)
$PY manage.py audit_shortcuts --user demo-curator --source-dataset "Med-R2 synthetic phantoms"

# evaluation: the tiny VLM (random weights, built offline) and two baselines on every variant of the
# held-out test split (patient level; the prior baseline was fitted on train and is never scored on it)
MODEL_DIR="$MEDR2_VAR_DIR/models/tiny-vlm"
export HF_HUB_OFFLINE=1
$PY manage.py build_tiny_vlm "$MODEL_DIR"
$PY manage.py register_model tiny-vlm transformers --display-name "Tiny VLM (random weights)" \
  --params "{\"path\": \"$MODEL_DIR\", \"max_new_tokens\": 4, \"batch_size\": 16}"
$PY manage.py register_model random-baseline random --display-name "Random baseline"
$PY manage.py register_model prior-baseline prior --display-name "Prior baseline (train split)"
$PY manage.py run_evaluation --models tiny-vlm,random-baseline,prior-baseline --name "Demo evaluation" \
  --split "${DEMO_SPLIT:-test}" --batch-size 64 --skip-if-done ${DEMO_PROGRESS:---no-progress}
# the adjudication queue: cases where models, gold and annotators disagree (scoring does it too)
$PY manage.py find_disagreements --run latest --save

# a signed, verified demo release (docs/releases.md). The platform signing key (releases, audit
# checkpoints) is generated for the demo only and kept beside the demo database; a real deployment sets
# MEDR2_SIGNING_KEY itself.
DEMO_KEY_FILE="$MEDR2_VAR_DIR/release-signing-key.demo-only"
[ -s "$DEMO_KEY_FILE" ] || $PY manage.py release_create --generate-key > "$DEMO_KEY_FILE"
export MEDR2_SIGNING_KEY="${MEDR2_SIGNING_KEY:-$(cat "$DEMO_KEY_FILE")}"
export MEDR2_RELEASE_SIGNING_KEY="${MEDR2_RELEASE_SIGNING_KEY:-$MEDR2_SIGNING_KEY}"
$PY manage.py release_create 1.0.0 --user demo-admin --skip-if-exists --build --publish \
  --title "Med-R2 demo release (synthetic phantoms)" ${DEMO_PROGRESS:---no-progress}
$PY manage.py release_verify "$MEDR2_VAR_DIR/releases/med-r2-1.0.0.tar.gz"
# optional (DEMO_FINETUNE=1): a short stepwise LoRA fine-tune of the tiny VLM on the release's train split
# (docs/finetuning.md); the fine-tuned model is registered and its paired evaluation runs on the test split
if [ "${DEMO_FINETUNE:-0}" = "1" ]; then
  $PY manage.py finetune --base tiny-vlm --release 1.0.0 --recipe stepwise --steps "${DEMO_FINETUNE_STEPS:-20}" \
    --name "Demo stepwise fine-tune" --skip-if-done --config '{"tokens_per_step": 1024, "eval_every": 5, "checkpoint_every": 5}' \
    ${DEMO_PROGRESS:---no-progress}
fi
# the model report of the demo run on that release, signed by the demo auditor (docs/reports.md); files verified
$PY manage.py report_demo --release 1.0.0 --skip-if-exists --out "$MEDR2_VAR_DIR/reports" ${DEMO_PROGRESS:---no-progress}

# optional: a real Label Studio (own virtualenv) with the demo batch pushed to it
if [ "${WITH_LABEL_STUDIO:-0}" = "1" ]; then
  export LABEL_STUDIO_PORT="${LABEL_STUDIO_PORT:-8080}"
  export LABEL_STUDIO_DATA_DIR="$MEDR2_VAR_DIR/label-studio"
  ./scripts/labelstudio.sh start
  export LABEL_STUDIO_URL="http://127.0.0.1:$LABEL_STUDIO_PORT"
  export LABEL_STUDIO_API_KEY="${LABEL_STUDIO_API_KEY:-medr2devlabelstudiotoken00000000000000000}"
  export LABEL_STUDIO_WEBHOOK_SECRET="${LABEL_STUDIO_WEBHOOK_SECRET:-medr2-demo-webhook-secret}"
  export MEDR2_PUBLIC_URL="http://127.0.0.1:${DEMO_PORT:-8000}"
  for who in demo-annotator demo-adjudicator; do
    ./scripts/labelstudio.sh add-user --email "$who@example.org" --password "${MEDR2_DEMO_PASSWORD:-medr2-demo-pass}"
  done
  $PY manage.py labelstudio_batch "Demo grounding batch" --user demo-curator \
    --source-dataset "Med-R2 synthetic phantoms" --limit 12 --annotators 2 \
    --readers demo-annotator,demo-adjudicator --push --skip-if-exists
fi
$PY manage.py verify_audit

if [ "${DEMO_SERVE:-1}" = "1" ]; then
  echo
  if [ "${WITH_LABEL_STUDIO:-0}" = "1" ]; then
    # no Celery beat in the demo: this loop is the reconciliation (webhooks are only hints)
    $PY manage.py labelstudio_sync --loop --interval 15 > "$MEDR2_VAR_DIR/labelstudio-sync.log" 2>&1 &
    trap 'kill %1 2>/dev/null; ./scripts/labelstudio.sh stop' EXIT
    echo "Label Studio on $LABEL_STUDIO_URL/  (demo-annotator@example.org / ${MEDR2_DEMO_PASSWORD:-medr2-demo-pass}); worklist: http://127.0.0.1:${DEMO_PORT:-8000}/annotate/"
  fi
  echo "Serving Med-R2 Studio on http://127.0.0.1:${DEMO_PORT:-8000}/  (log in with a demo user above; Ctrl-C to stop)"
  $PY manage.py runserver "127.0.0.1:${DEMO_PORT:-8000}"
fi
