#!/usr/bin/env bash
# Label Studio in its OWN virtualenv (.venv-ls; it pins Django 5.2 and an older DRF, never next to
# the app), on loopback, with a preset admin and API token, analytics and version checks off.
#   ./scripts/labelstudio.sh install   create .venv-ls from requirements-labelstudio.txt (once)
#   ./scripts/labelstudio.sh start     install if needed, migrate the data dir once, start in background
#   ./scripts/labelstudio.sh add-user --email E --password P   a reader, alone in a Label Studio organization of their own
#   ./scripts/labelstudio.sh stop | status | init
# Settings: LABEL_STUDIO_PORT (8080), LABEL_STUDIO_DATA_DIR (var/label-studio), LABEL_STUDIO_API_KEY,
# LABEL_STUDIO_ADMIN_PASSWORD (development defaults otherwise; see docs/labelstudio.md).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
LS_VENV="${LABEL_STUDIO_VENV:-.venv-ls}"
REQ_HASH="$(sha256sum requirements-labelstudio.txt | cut -c1-12)"
STAMP="$LS_VENV/.installed-$REQ_HASH"

install() {
  if [ -f "$STAMP" ]; then return 0; fi
  echo "Installing Label Studio into its own virtualenv $LS_VENV (a few minutes, once) ..."
  test -x "$LS_VENV/bin/python" || "$PYTHON" -m venv "$LS_VENV"
  "$LS_VENV/bin/pip" install -q --disable-pip-version-check -r requirements-labelstudio.txt 2>&1 \
    | grep -v "^WARNING: Location" || true
  # (not `label-studio --version`: it sets up a default data dir under ~/.local and migrates it)
  "$LS_VENV/bin/python" -c "import label_studio" \
    || { echo "error: Label Studio did not install into $LS_VENV" >&2; exit 1; }
  rm -f "$LS_VENV"/.installed-* && touch "$STAMP"
}

cmd="${1:-start}"
case "$cmd" in
  install) install ;;
  init|start|stop|status|add-user)
    [ "$cmd" = stop ] || [ "$cmd" = status ] || install
    shift
    LABEL_STUDIO_VENV="$LS_VENV" .venv/bin/python -m labelstudio.server "$cmd" "$@" ;;
  *) echo "usage: $0 install|init|start|stop|status|add-user --email E --password P" >&2; exit 2 ;;
esac
