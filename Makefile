# Med-R2 Studio. The two commands a newcomer needs:
#   make demo   set up everything and serve the demo on http://127.0.0.1:8000 (SQLite, a Celery worker on an embedded broker)
#   make test   set up everything, make sure PostgreSQL and Redis run, run the whole suite
PYTHON ?= python3
VENV   := .venv
REQ_HASH := $(shell sha256sum requirements.txt | cut -c1-12)
STAMP  := $(VENV)/.installed-$(REQ_HASH)

.PHONY: demo demo-data test bench venv clean-demo label-studio

venv: $(STAMP)

$(STAMP): requirements.txt
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	@echo "Installing torch==2.13.0 (pinned explicitly; the local CPU wheel where one lies on disk) and the pinned requirements into $(VENV) ..."
	$(VENV)/bin/pip install -q --disable-pip-version-check torch==2.13.0
	$(VENV)/bin/pip install -q --disable-pip-version-check -r requirements.txt
	@rm -f $(VENV)/.installed-* && touch $@

# make demo WITH_LABEL_STUDIO=1 also starts Label Studio (own venv) and pushes the demo batch
demo: $(STAMP)
	WITH_LABEL_STUDIO=$(WITH_LABEL_STUDIO) ./scripts/demo.sh

# prepare the demo database and data without serving (used by the tests of the demo)
demo-data: $(STAMP)
	WITH_LABEL_STUDIO=$(WITH_LABEL_STUDIO) DEMO_SERVE=0 ./scripts/demo.sh

test: $(STAMP)
	./scripts/test.sh $(ARGS)

bench: $(STAMP)
	./scripts/services.sh && $(VENV)/bin/python bench/ingest.py

clean-demo:
	rm -rf var/demo
# Label Studio alone (own virtualenv .venv-ls, var/label-studio, port 8080)
label-studio: $(STAMP)
	./scripts/labelstudio.sh start
