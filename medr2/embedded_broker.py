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

- an exchange's binding table is replaced whole, binders taking turns on a lock file beside it, so no
  binding is lost and a reader never reads a table that is still being written. kombu creates the
  table empty, then locks and writes it; and a publisher also routes by the bindings its own process has
  declared, which kombu records in memory before the file exists.

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

    def _queue_bind(self, exchange, routing_key, pattern, queue):
        """Add a binding to an exchange's table. kombu creates the table file empty and only then locks and
        writes it, so two binders (or a binder and a reader) can meet an empty file, and two first binders both
        truncate it, one binding lost. Here binders take turns on a separate lock file, and the table is
        replaced whole (written under `tmp/`, then renamed): a reader sees the old table or the new one."""
        file = self._exchange_file(exchange)
        self.control_folder.mkdir(exist_ok=True)
        binding = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")
        try:
            with open(file.with_suffix(".lock"), "a") as guard:
                filesystem.lock(guard, filesystem.LOCK_EX)
                try:
                    try:
                        table = [filesystem.exchange_queue_t(*q) for q in loads(bytes_to_str(file.read_bytes()))]
                    except (FileNotFoundError, ValueError):    # none yet, or one left empty by kombu's own code
                        table = []
                    if binding in table:
                        return
                    tmp = os.path.join(self.tmp_folder, f"{uuid.uuid4().hex}.exchange")
                    with open(tmp, "wb") as f:
                        f.write(str_to_bytes(dumps([binding, *table])))
                    os.replace(tmp, file)
                finally:
                    filesystem.unlock(guard)
        except OSError as exc:
            raise ChannelError(f"cannot bind {queue!r} to exchange {exchange!r} in {self.control_folder}") from exc

    def get_table(self, exchange):
        """The exchange's bindings: those in its table file, plus those this process has declared. kombu records a
        binding in the process's memory before it writes the file, so another thread of the same process could
        otherwise publish in between, find no file and drop the message as routed to no queue. kombu's own table
        files can also be read empty while kombu creates them: such a read is tried again until the file is
        whole."""
        for _ in range(200):
            try:
                table = super().get_table(exchange)
                break
            except ValueError:       # json.JSONDecodeError: the file is being created
                time.sleep(0.005)
        else:
            table = super().get_table(exchange)
        declared = (self.state.exchanges.get(exchange) or {}).get("table") or []
        declared = [filesystem.exchange_queue_t(*meta) for meta in declared]
        return table + [binding for binding in declared if binding not in table]

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
