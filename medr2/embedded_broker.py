"""The embedded Celery broker: messages as files in one folder, no server (the demo, one-machine trials).

Chosen with `CELERY_BROKER_URL=filesystem://`: medr2/settings.py then sets `CELERY_BROKER_TRANSPORT` to
the class below and the transport option `folder` to `CELERY_BROKER_FOLDER` (default `$MEDR2_VAR_DIR/celery`),
which holds `queue/` (one file per message), `control/` (fanout bindings), `tmp/` and `claimed/`.

It is kombu's filesystem transport with the two changes that matter once a web process and a worker
share the folder:

- a message appears in `queue/` only once it is completely written (written under `tmp/`, then
  renamed), so a consumer never reads half a message. kombu's own transport creates the file under
  its final name and writes it afterwards;
- a consumer claims a message by renaming it into `claimed/` on the same filesystem, so exactly one
  consumer gets it. kombu moves it to the system temporary folder, which is a copy, not an atomic
  claim, when that folder is on another filesystem.

Messages are ordered by their wall-clock time in nanoseconds (kombu uses a monotonic clock in
milliseconds, which restarts with the machine). Fanout (the workers' remote control) works as in kombu.

What it does not do, unlike Redis: there is no visibility timeout. A task acked late stays in the
worker's memory until it finishes. A pool process that dies is handled by Celery (the task is rejected
and requeued: `task_reject_on_worker_lost`) and a warm shutdown puts unacked messages back in the
queue, but a worker killed outright (SIGKILL of its main process) loses the messages it held; for an
evaluation run the run page's *resume* action sends every batch that is not done again.
"""
from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from queue import Empty

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads


class Channel(filesystem.Channel):
    """kombu's filesystem channel in one folder, with atomic publish and claim (see the module docstring)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for folder in (self.data_folder_in, self.control_folder, self.tmp_folder, self.claimed_folder):
            Path(folder).mkdir(parents=True, exist_ok=True)

    @property
    def root(self) -> Path:
        folder = self.transport_options.get("folder")
        if not folder:
            raise ChannelError("the embedded broker needs the transport option `folder` (CELERY_BROKER_FOLDER)")
        return Path(folder)

    @property
    def data_folder_in(self) -> str:
        return str(self.root / "queue")

    data_folder_out = data_folder_in

    @property
    def control_folder(self) -> Path:
        return self.root / "control"

    @property
    def tmp_folder(self) -> str:
        return str(self.root / "tmp")

    @property
    def claimed_folder(self) -> str:
        return str(self.root / "claimed")

    def _put(self, queue, payload, **kwargs):
        name = f"{time.time_ns():020d}_{uuid.uuid4().hex}.{queue}.msg"
        tmp = os.path.join(self.tmp_folder, name)
        try:
            with open(tmp, "wb") as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(tmp, os.path.join(self.data_folder_out, name))
        except OSError as exc:
            raise ChannelError(f"cannot add message {name!r} to {self.data_folder_out!r}") from exc

    def get_table(self, exchange):
        """kombu creates an exchange's binding file empty and then locks and writes it, so a reader can open
        it in between and read nothing (a JSONDecodeError, or a message routed to no queue). An empty or
        half-written table is read again until it is whole."""
        for _ in range(200):
            try:
                return super().get_table(exchange)
            except ValueError:       # json.JSONDecodeError: the file is being created
                time.sleep(0.005)
        return super().get_table(exchange)

    def _get(self, queue, timeout=None):
        wanted = f"{queue}.msg"
        for name in sorted(os.listdir(self.data_folder_in)):
            if name.partition(".")[2] != wanted:
                continue
            claimed = os.path.join(self.claimed_folder, f"{os.getpid()}-{name}")
            try:
                os.rename(os.path.join(self.data_folder_in, name), claimed)
            except FileNotFoundError:
                continue  # another consumer claimed it first
            try:
                with open(claimed, "rb") as f:
                    payload = f.read()
            finally:
                os.unlink(claimed)
            return loads(bytes_to_str(payload))
        raise Empty()


class Transport(filesystem.Transport):
    Channel = Channel

    @property
    def default_connection_params(self) -> dict:
        return {"port": self.default_port, "hostname": ""}   # a folder has no host (kombu warns about "localhost")
