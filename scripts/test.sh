#!/usr/bin/env bash
# The whole test suite against real PostgreSQL and Redis (started if needed), a real Celery
# worker process, and Debian Chromium for the browser tests (installed if missing).
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/services.sh
# Label Studio runs as a real server in its OWN virtualenv (the tests start it from a migrated copy)
./scripts/labelstudio.sh install

if ! command -v chromium >/dev/null 2>&1; then
  echo "Installing Debian chromium for the browser tests ..."
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/tmp/medr2-chromium-install.log 2>&1 \
      || { echo "error: could not install chromium (see /tmp/medr2-chromium-install.log)" >&2; exit 1; }
  else
    echo "error: chromium is missing; install Debian's chromium package (needs root)" >&2; exit 1
  fi
fi

# axe-core (pinned in tests/e2e/package-lock.json) for the every-page accessibility check; the demo never needs it
if [ ! -f tests/e2e/node_modules/axe-core/axe.min.js ]; then
  if ! command -v npm >/dev/null 2>&1; then
    [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null \
      && (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm) >/tmp/medr2-npm-install.log 2>&1 \
      || { echo "error: npm is missing and could not be installed (Debian's npm package; see /tmp/medr2-npm-install.log)" >&2; exit 1; }
  fi
  npm ci --prefix tests/e2e --no-audit --no-fund --loglevel=error
fi

export SECRET_KEY="${SECRET_KEY:-medr2-test-secret-key}"
export DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/medr2}"
export CELERY_BROKER_URL="${TEST_CELERY_BROKER_URL:-redis://127.0.0.1:6379/14}"
export CELERY_TASK_ALWAYS_EAGER="${CELERY_TASK_ALWAYS_EAGER:-false}"
export MEDR2_DEBUG=0
export PYTHONDONTWRITEBYTECODE=1

# lint and import order first (pyproject.toml): seconds, and a failure names the file and line
echo "ruff check ..."
.venv/bin/ruff check --quiet .

exec .venv/bin/python -m pytest "$@"
