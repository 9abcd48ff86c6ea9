#!/usr/bin/env bash
# The end-to-end demo on embedded defaults, no service needed: SQLite, bundled demo data, and one real
# Celery worker on the embedded broker (message files under $MEDR2_VAR_DIR/celery; medr2/embedded_broker.py).
#   preparation: every step below runs its tasks in-process (CELERY_TASK_ALWAYS_EAGER), so the demo data
#                come out the same on every machine; MEDR2_DEBUG=1 there, because the demo-only commands
#                (create_demo_users, report_demo) refuse to run anywhere else.
#   serving (DEMO_SERVE=1, the default): the worker (log: $MEDR2_VAR_DIR/celery-worker.log) and runserver
#                with DEBUG off; what the pages start (a run, a report, a push) goes through the worker.
#                Ctrl-C stops both: the worker finishes the task it is running and puts back what it had
#                not started (a run continues when the demo is started again).
# DEMO_SERVE=0 (make demo-data, the tests) prepares and exits: no worker, no server, no process left behind.
set -euo pipefail
cd "$(dirname "$0")/.."

export MEDR2_VAR_DIR="${MEDR2_VAR_DIR:-$PWD/var/demo}"
PY=.venv/bin/python
mkdir -p "$MEDR2_VAR_DIR"
# nothing from the shell's environment reaches a service: no PostgreSQL, no Redis
unset DATABASE_URL CELERY_RESULT_BACKEND CELERY_BROKER_FOLDER CELERY_TASK_ALWAYS_EAGER
export CELERY_BROKER_URL="filesystem://"
# a secret key of this demo only, generated once beside its database (never a key in the code)
DEMO_SECRET_FILE="$MEDR2_VAR_DIR/secret-key.demo-only"
[ -s "$DEMO_SECRET_FILE" ] || (umask 077 && $PY -c "import secrets; print(secrets.token_urlsafe(50))" > "$DEMO_SECRET_FILE")
SECRET_KEY="$(cat "$DEMO_SECRET_FILE")"
export SECRET_KEY
# the phantoms are synthetic: a fixed de-identification salt keeps their patient-level split (and so every
# demo number) the same on every machine; it is the salt the demo has always used
export MEDR2_DEID_SALT="salt:medr2-insecure-development-key-do-not-use-in-production"
export ALLOWED_HOSTS="127.0.0.1,localhost"
export MEDR2_SECURE_COOKIES=0   # plain http on loopback: the browser must send the session cookie back
# preparation (see above)
export MEDR2_DEBUG=1 CELERY_TASK_ALWAYS_EAGER=1

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
# planted-behaviour models (workers/backends/planted.py): simulated answer patterns whose failures are
# known, so the adjudication queue has real model disagreements (the random-weight tiny VLM answers
# nothing parseable, and baselines never count as models in the detection rules)
$PY manage.py register_model cue-follower cue_follower --display-name "Cue follower (planted)" \
  --params '{"p": 0.6, "accuracy": 0.7, "seed": 1}'
$PY manage.py register_model stage-decay stage_decay --display-name "Stage decay (planted)" \
  --params '{"accuracies": [0.9, 0.7, 0.5, 0.3], "seed": 3}'
$PY manage.py register_model text-only text_only --display-name "Text only (planted)" \
  --params '{"accuracy": 0.5, "seed": 2}'
# the demo's reference run (docs/adjudication.md: only reference runs open adjudication cases),
# marked by the demo curator once it is scored
$PY manage.py run_evaluation --models tiny-vlm,cue-follower,stage-decay,text-only,random-baseline,prior-baseline \
  --name "Demo evaluation" --split "${DEMO_SPLIT:-test}" --batch-size 64 --skip-if-done \
  --reference --user demo-curator ${DEMO_PROGRESS:---no-progress}
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

[ "${DEMO_SERVE:-1}" = "1" ] || exit 0

# --- serving: DEBUG off, tasks through the worker --------------------------------------------------
export MEDR2_DEBUG=0 CELERY_TASK_ALWAYS_EAGER=0
PORT="${DEMO_PORT:-8000}"
WORKER_LOG="$MEDR2_VAR_DIR/celery-worker.log"
WORKER_PIDFILE="$MEDR2_VAR_DIR/celery-worker.pid"
WORKER_PID="" SERVER_PID="" SYNC_PID=""

running() { [ -n "$1" ] && jobs -rp | grep -qx "$1"; }   # our child, still running (not a zombie)

stop_worker() {
  # SIGTERM = Celery's warm shutdown: the running task finishes, unstarted messages go back to the queue;
  # after DEMO_WORKER_STOP_S (default 60) the worker and its pool are killed (a run is then resumed on its page)
  running "$WORKER_PID" || return 0
  echo "Stopping the Celery worker (it finishes the task it is running; log: $WORKER_LOG) ..."
  kill -TERM "$WORKER_PID" 2>/dev/null || true
  local waited=0
  while running "$WORKER_PID" && [ "$waited" -lt "$(( ${DEMO_WORKER_STOP_S:-60} * 10 ))" ]; do
    sleep 0.1; waited=$((waited + 1))
  done
  if running "$WORKER_PID"; then
    echo "The worker did not stop within ${DEMO_WORKER_STOP_S:-60} s; killing it." >&2
    kill -KILL -- "-$WORKER_PID" 2>/dev/null || kill -KILL "$WORKER_PID" 2>/dev/null || true
  fi
  wait "$WORKER_PID" 2>/dev/null || true
  rm -f "$WORKER_PIDFILE"
}

cleanup() {
  trap - EXIT INT TERM
  if running "$SERVER_PID"; then kill -TERM "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  if running "$SYNC_PID"; then kill -TERM "$SYNC_PID" 2>/dev/null || true; wait "$SYNC_PID" 2>/dev/null || true; fi
  stop_worker
  if [ "${WITH_LABEL_STUDIO:-0}" = "1" ]; then ./scripts/labelstudio.sh stop || true; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# a worker left behind by a demo that was killed outright would consume this demo's queue: stop it first
if [ -s "$WORKER_PIDFILE" ]; then
  old="$(cat "$WORKER_PIDFILE")"
  if ps -p "$old" -o args= 2>/dev/null | grep -q "celery -A medr2 worker"; then
    echo "Stopping the Celery worker of an earlier demo (pid $old) ..."
    kill -TERM "$old" 2>/dev/null || true
    for _ in $(seq 1 300); do kill -0 "$old" 2>/dev/null || break; sleep 0.2; done
    kill -KILL -- "-$old" 2>/dev/null || kill -KILL "$old" 2>/dev/null || true
  fi
  rm -f "$WORKER_PIDFILE"
fi

# one worker on every queue (gpu: model batches and fine-tuning, cpu: scoring, reports, releases; sync: Label
# Studio), in its own session where `setsid` exists so that Ctrl-C reaches it only through cleanup() above
SETSID=""; command -v setsid >/dev/null 2>&1 && SETSID="setsid"
$SETSID $PY -m celery -A medr2 worker -Q gpu,cpu,sync --concurrency="${DEMO_WORKER_CONCURRENCY:-2}" \
  --prefetch-multiplier=1 -n "demo@%h" --without-gossip --without-mingle --loglevel=INFO >"$WORKER_LOG" 2>&1 &
WORKER_PID=$!
echo "$WORKER_PID" > "$WORKER_PIDFILE"

echo
if [ "${WITH_LABEL_STUDIO:-0}" = "1" ]; then
  # no Celery beat in the demo: this loop is the reconciliation (webhooks are only hints)
  $PY manage.py labelstudio_sync --loop --interval 15 > "$MEDR2_VAR_DIR/labelstudio-sync.log" 2>&1 &
  SYNC_PID=$!
  echo "Label Studio on $LABEL_STUDIO_URL/  (demo-annotator@example.org / ${MEDR2_DEMO_PASSWORD:-medr2-demo-pass}); worklist: http://127.0.0.1:$PORT/annotate/"
fi
echo "Celery worker (pid $WORKER_PID) on the embedded broker in $MEDR2_VAR_DIR/celery; log: $WORKER_LOG"
echo "Serving Med-R2 Studio on http://127.0.0.1:$PORT/  (log in with a demo user above; Ctrl-C to stop)"
# DEBUG off: --insecure lets runserver serve static/ (and the apps' static files) straight from the source tree,
# as DEBUG would; a deployment collects them and WhiteNoise serves them (docs/deploy.md). --noreload: one
# process, stopped with the worker; restart the demo after changing code (the worker does not reload either).
$PY manage.py runserver "127.0.0.1:$PORT" --insecure --noreload &
SERVER_PID=$!
wait "$SERVER_PID"
