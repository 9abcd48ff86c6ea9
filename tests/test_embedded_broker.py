"""The embedded broker (medr2/embedded_broker.py), what `make demo` runs its Celery worker on: message files
in a folder, Celery's file result backend beside them, no server. Here the transport itself: a
`filesystem://` broker URL selects it, a consumer never reads half a message, and two consumers never get
the same one. A real worker on it running evaluation runs: tests/workers/test_embedded_worker.py.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from kombu import Connection, Exchange, Queue

ROOT = Path(__file__).resolve().parents[1]
TRANSPORT = "medr2.embedded_broker:Transport"


# --- the transport --------------------------------------------------------------------------------------

def _connection(folder: Path) -> Connection:
    return Connection("filesystem://", transport=TRANSPORT, transport_options={"folder": str(folder)})


def test_a_filesystem_broker_url_selects_the_embedded_transport_and_the_file_backend(tmp_path):
    env = {**os.environ, "CELERY_BROKER_URL": "filesystem://", "CELERY_BROKER_FOLDER": str(tmp_path / "broker"),
           "DJANGO_SETTINGS_MODULE": "medr2.settings"}
    for name in ("CELERY_RESULT_BACKEND", "CELERY_TASK_ALWAYS_EAGER"):
        env.pop(name, None)
    out = subprocess.run(
        [sys.executable, "-c", "import json, django; django.setup(); from django.conf import settings as s; "
         "from medr2.celery import app; print(json.dumps([s.CELERY_BROKER_TRANSPORT, s.CELERY_RESULT_BACKEND, "
         "s.CELERY_TASK_ALWAYS_EAGER, type(app.connection_for_write().transport).__module__, "
         "type(app.backend).__name__]))"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    transport, backend, eager, module, backend_class = json.loads(out.stdout.strip().splitlines()[-1])
    assert transport == TRANSPORT and module == "medr2.embedded_broker"
    assert backend == (tmp_path / "broker" / "results").as_uri() and backend_class == "FilesystemBackend"
    assert (tmp_path / "broker" / "results").is_dir()
    assert eager is False   # a broker is configured: tasks go to the worker unless eager is asked for


def test_a_consumer_never_reads_a_message_that_is_still_being_written(tmp_path):
    queue = Queue("big", Exchange("big", type="direct"), routing_key="big")
    payloads = [{"i": i, "blob": "x" * 400_000} for i in range(60)]
    received: list[int] = []
    errors: list[BaseException] = []
    done = threading.Event()

    def consume():
        try:
            with _connection(tmp_path) as conn:
                simple = conn.SimpleQueue(queue)
                while not (done.is_set() and len(received) == len(payloads)):
                    try:
                        message = simple.get(timeout=0.05)
                    except simple.Empty:
                        continue
                    assert len(message.payload["blob"]) == 400_000
                    received.append(message.payload["i"])
                    message.ack()
        except BaseException as exc:   # noqa: BLE001 - reported below
            errors.append(exc)

    consumer = threading.Thread(target=consume)
    consumer.start()
    with _connection(tmp_path) as conn:
        producer = conn.SimpleQueue(queue)
        for payload in payloads:
            producer.put(payload)
    done.set()
    consumer.join(timeout=60)
    assert not errors, errors
    assert sorted(received) == list(range(len(payloads)))
    assert not list((tmp_path / "tmp").iterdir()) and not list((tmp_path / "claimed").iterdir())


def test_two_consumers_never_get_the_same_message(tmp_path):
    queue = Queue("shared", Exchange("shared", type="direct"), routing_key="shared")
    with _connection(tmp_path) as conn:
        producer = conn.SimpleQueue(queue)
        for i in range(300):
            producer.put({"i": i})
    got: dict[int, list[int]] = {0: [], 1: []}

    def consume(k: int):
        with _connection(tmp_path) as conn:
            simple = conn.SimpleQueue(queue)
            while True:
                try:
                    message = simple.get(timeout=0.3)
                except simple.Empty:
                    return
                got[k].append(message.payload["i"])
                message.ack()

    threads = [threading.Thread(target=consume, args=(k,)) for k in got]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(got[0] + got[1]) == list(range(300))   # every message once: none lost, none doubled


def test_concurrent_binders_of_one_exchange_keep_every_binding(tmp_path):
    exchange = Exchange("fan", type="direct")
    start = threading.Barrier(8)
    errors: list[BaseException] = []

    def bind(k: int):
        try:
            with _connection(tmp_path) as conn:
                channel = conn.channel()
                start.wait(timeout=30)
                for n in range(5):
                    Queue(f"q{k}-{n}", exchange, routing_key=f"r{k}-{n}")(channel).declare()
        except BaseException as exc:   # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=bind, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    table = json.loads((tmp_path / "control" / "fan.exchange").read_text())
    assert sorted(q for _, _, q in table) == sorted(f"q{k}-{n}" for k in range(8) for n in range(5))
    assert not list((tmp_path / "tmp").iterdir())


def test_a_message_published_while_this_process_writes_the_binding_is_routed(tmp_path, monkeypatch):
    """kombu records a binding in the process's memory before its table file exists; a thread publishing in
    between (here: the file is never written) still routes the message."""
    from medr2 import embedded_broker

    monkeypatch.setattr(embedded_broker.Channel, "_queue_bind", lambda self, *args: None)   # the file is never written
    queue = Queue("early", Exchange("early", type="direct"), routing_key="early")
    with _connection(tmp_path) as consumer_conn, _connection(tmp_path) as producer_conn:
        consumer = consumer_conn.SimpleQueue(queue)
        producer_conn.SimpleQueue(queue).put({"n": 1})
        assert not (tmp_path / "control" / "early.exchange").exists()
        assert consumer.get(timeout=5).payload == {"n": 1}
