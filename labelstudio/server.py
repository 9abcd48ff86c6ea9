"""Run a real Label Studio server from its OWN virtualenv (it pins Django 5.2 and an older DRF, so
it never shares ours). Used by `scripts/labelstudio.sh`, the demo, the tests and `bench/ls_push.py`.

Label Studio 1.23 facts this relies on (docs/labelstudio.md):
- a preset API token needs LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN=true when the data dir is created;
- webhooks to loopback need SSRF_PROTECTION_ENABLED=false;
- a fresh data dir takes about a minute to migrate, so `ensure_template()` migrates once and
  `start()` runs on a copy (a few seconds).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]   # labelstudio/server.py -> the repository root
DEFAULT_VENV = REPO / ".venv-ls"
OVERLAY = Path(__file__).resolve().parent / "ls_overlay"   # imported by Label Studio, never by us
ADMIN_EMAIL = "admin@medr2.local"
# development defaults only: production sets LABEL_STUDIO_API_KEY / LABEL_STUDIO_ADMIN_PASSWORD
DEV_API_KEY = "medr2devlabelstudiotoken00000000000000000"
DEV_PASSWORD = "medr2-label-studio"

_ADD_USERS = """
import json, os
from users.models import User
from organizations.models import Organization
from rest_framework.authtoken.models import Token
org = Organization.objects.first()
for spec in json.loads(os.environ["MEDR2_LS_USERS"]):
    email = spec["email"].strip().lower()   # Label Studio lowercases the email at login
    user, _ = User.objects.get_or_create(email=email, defaults={"username": email})
    user.set_password(spec["password"])
    user.first_name = spec.get("first_name", "")
    user.active_organization = org
    user.save()
    org.add_user(user)
    if spec.get("token"):
        Token.objects.filter(user=user).delete()
        Token.objects.create(user=user, key=spec["token"])
print("users ok")
"""

# A reader's own organization (docs/labelstudio.md, "Independent readers"): Community shows every
# annotation of a project and every project of an organization to every member, so each reader is the
# only reader in an organization made for them, owned by a service account whose token the platform
# keeps. The reader leaves every other organization. Idempotent: the same reader gets the same one.
_PROVISION_READER = """
import hashlib, json, os
from django.db import transaction
from users.models import User
from organizations.models import Organization, OrganizationMember
from rest_framework.authtoken.models import Token
spec = json.loads(os.environ["MEDR2_LS_READER"])
email = spec["email"].strip().lower()
service_email = "medr2-service-" + hashlib.sha256(email.encode()).hexdigest()[:16] + "@medr2.local"
with transaction.atomic():
    reader, _ = User.objects.get_or_create(email=email, defaults={"username": email})
    if spec.get("password"):
        reader.set_password(spec["password"])
    service, made = User.objects.get_or_create(email=service_email, defaults={"username": service_email})
    if made:
        service.set_unusable_password()
        service.first_name = "Med-R2 service"
        service.save()
    org = Organization.objects.filter(created_by=service).first()
    if org is None:
        org = Organization.create_organization(created_by=service, title="Med-R2 reader " + email)
    org.add_user(service)
    org.add_user(reader)
    OrganizationMember.objects.filter(user=reader).exclude(organization=org).delete()
    service.active_organization = org
    service.save()
    reader.active_organization = org
    reader.save()
    token, _ = Token.objects.get_or_create(user=service)
print("MEDR2_JSON " + json.dumps({"email": email, "user_id": reader.id, "organization_id": org.id,
                                  "service_email": service_email, "token": token.key}))
"""


class LabelStudioServerError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class LabelStudioServer:
    data_dir: Path
    port: int = 8080
    venv: Path = DEFAULT_VENV
    api_key: str = DEV_API_KEY
    admin_email: str = ADMIN_EMAIL
    admin_password: str = DEV_PASSWORD
    log_path: Path | None = None
    process: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def executable(self) -> Path:
        return self.venv / "bin" / "label-studio"

    def environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("DJANGO_", "LABEL_STUDIO_", "CELERY_", "MEDR2_", "DATABASE_"))}
        env.pop("SECRET_KEY", None)
        env.update({
            "LABEL_STUDIO_BASE_DATA_DIR": str(self.data_dir),
            "LABEL_STUDIO_USERNAME": self.admin_email,
            "LABEL_STUDIO_PASSWORD": self.admin_password,
            "LABEL_STUDIO_USER_TOKEN": self.api_key,
            "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true",
            "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "true",
            "SSRF_PROTECTION_ENABLED": "false",
            "SENTRY_DSN": "", "FRONTEND_SENTRY_DSN": "",
            "COLLECT_ANALYTICS": "false", "LATEST_VERSION_CHECK": "false",
            "LABEL_STUDIO_SECRET_KEY": os.environ.get("LABEL_STUDIO_SECRET_KEY", "medr2-label-studio-dev-secret"),
            "PYTHONWARNINGS": "ignore",
            # its sitecustomize installs our organization guard (labelstudio/ls_overlay, docs/labelstudio.md)
            "PYTHONPATH": str(OVERLAY),
        })
        return env

    def _check_installed(self) -> None:
        if not self.executable.exists():
            raise LabelStudioServerError(
                f"Label Studio is not installed in {self.venv}: run ./scripts/labelstudio.sh install")

    def initialized(self) -> bool:
        return (self.data_dir / "label_studio.sqlite3").exists()

    def init(self) -> None:
        """Migrate a fresh data dir and create the admin with the preset token (about a minute)."""
        self._check_installed()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        out = subprocess.run([str(self.executable), "init", "--no-browser", "--quiet"],  # no project: batches make them
                             env=self.environment(), cwd=self.data_dir, capture_output=True, text=True)
        if out.returncode != 0 or not self.initialized():
            raise LabelStudioServerError(f"label-studio init failed ({out.returncode}): {out.stderr[-2000:]}")

    def add_users(self, users: list[dict]) -> None:
        """Create Label Studio users (email, password, optional preset token) in the organization.
        Runs Label Studio's own Django shell against the data dir (server may be running)."""
        self.run_shell(_ADD_USERS, extra_env={"MEDR2_LS_USERS": json.dumps(users)})

    def provision_reader(self, email: str, *, password: str | None = None) -> dict:
        """The reader's own organization (created once), the reader alone in it with the platform's
        service account: {email, user_id, organization_id, service_email, token}."""
        out = self.run_shell(_PROVISION_READER, extra_env={"MEDR2_LS_READER": json.dumps(
            {"email": email, "password": password or ""})})
        lines = [line for line in out.splitlines() if line.startswith("MEDR2_JSON ")]
        if not lines:
            raise LabelStudioServerError(f"provisioning {email!r} printed no result: {out[-500:]}")
        return json.loads(lines[-1].removeprefix("MEDR2_JSON "))

    def _manage_py(self) -> Path:
        found = list((self.venv / "lib").glob("python3*/site-packages/label_studio/manage.py"))
        if not found:
            raise LabelStudioServerError(f"label_studio/manage.py not found under {self.venv}")
        return found[0]

    def run_shell(self, code: str, *, extra_env: dict[str, str] | None = None) -> str:
        manage = self._manage_py()
        out = subprocess.run([str(self.venv / "bin" / "python"), str(manage), "shell", "-c", code],
                             env={**self.environment(), **(extra_env or {})}, cwd=manage.parent,
                             capture_output=True, text=True)
        if out.returncode != 0:
            raise LabelStudioServerError(f"label studio shell failed: {out.stderr[-2000:]}")
        return out.stdout

    def start(self, *, timeout_s: float = 180.0) -> LabelStudioServer:
        self._check_installed()
        if not self.initialized():
            self.init()
        log = open(self.log_path or (self.data_dir / "server.log"), "ab")
        self.process = subprocess.Popen(
            [str(self.executable), "start", "--no-browser", "--host", "127.0.0.1", "--port", str(self.port),
             "--internal-host", "127.0.0.1"],
            env=self.environment(), cwd=self.data_dir, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.wait_healthy(timeout_s=timeout_s)
        return self

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=2) as response:
                return response.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def wait_healthy(self, *, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise LabelStudioServerError(
                    f"Label Studio exited with {self.process.returncode}; see {self.data_dir / 'server.log'}")
            if self.healthy():
                return
            time.sleep(0.5)
        raise LabelStudioServerError(f"Label Studio did not answer on {self.url} within {timeout_s:.0f} s")

    def stop(self) -> None:
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=20)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        self.process = None
        # the port must be free before a restart binds it again
        for _ in range(50):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) != 0:
                    return
            time.sleep(0.1)


def from_template(template: LabelStudioServer, data_dir: Path, *, port: int | None = None) -> LabelStudioServer:
    """A server on a COPY of an initialized data dir (seconds instead of a minute of migrations)."""
    if not template.initialized():
        template.init()
    if data_dir.exists():
        shutil.rmtree(data_dir)
    shutil.copytree(template.data_dir, data_dir, ignore=shutil.ignore_patterns("server.log", "media"))
    (data_dir / "media").mkdir(exist_ok=True)
    return LabelStudioServer(data_dir=data_dir, port=port or free_port(), venv=template.venv,
                             api_key=template.api_key, admin_email=template.admin_email,
                             admin_password=template.admin_password)


def server_from_env() -> LabelStudioServer:
    """The local Label Studio as scripts/labelstudio.sh runs it (LABEL_STUDIO_DATA_DIR, LABEL_STUDIO_VENV)."""
    return LabelStudioServer(
        data_dir=Path(os.environ.get("LABEL_STUDIO_DATA_DIR", str(REPO / "var" / "label-studio"))).absolute(),
        venv=Path(os.environ.get("LABEL_STUDIO_VENV", str(DEFAULT_VENV))).absolute(),
        port=int(os.environ.get("LABEL_STUDIO_PORT", "8080")))


def main(argv: list[str] | None = None) -> int:
    """`python -m labelstudio.server {init,start,stop,status}` (scripts/labelstudio.sh)."""
    parser = argparse.ArgumentParser(prog="labelstudio", description=main.__doc__)
    parser.add_argument("command", choices=["init", "start", "stop", "status", "add-user"])
    parser.add_argument("--email", help="add-user: the radiologist's email (same as their Med-R2 account)")
    parser.add_argument("--password", help="add-user: their Label Studio password")
    parser.add_argument("--data-dir",
                        default=os.environ.get("LABEL_STUDIO_DATA_DIR", str(REPO / "var" / "label-studio")))
    parser.add_argument("--port", type=int, default=int(os.environ.get("LABEL_STUDIO_PORT", "8080")))
    parser.add_argument("--venv", default=os.environ.get("LABEL_STUDIO_VENV", str(DEFAULT_VENV)))
    args = parser.parse_args(argv)
    server = LabelStudioServer(
        data_dir=Path(args.data_dir).absolute(), port=args.port, venv=Path(args.venv).absolute(),
        api_key=os.environ.get("LABEL_STUDIO_API_KEY") or DEV_API_KEY,
        admin_password=os.environ.get("LABEL_STUDIO_ADMIN_PASSWORD") or DEV_PASSWORD,
    )
    pidfile = server.data_dir / "server.pid"
    if args.command == "init":
        if server.initialized():
            print(f"Label Studio data dir {server.data_dir} is already initialized")
        else:
            print(f"Initializing Label Studio in {server.data_dir} (migrations, about a minute) ...")
            server.init()
        return 0
    if args.command == "add-user":
        if not (args.email and args.password):
            parser.error("add-user needs --email and --password")
        email = args.email.strip().lower()   # Label Studio lowercases the email at login
        made = server.provision_reader(email, password=args.password)
        print(f"Label Studio user {email} ready, alone in organization {made['organization_id']}")
        return 0
    if args.command == "status":
        print("up" if server.healthy() else "down", server.url)
        return 0 if server.healthy() else 1
    if args.command == "stop":
        if pidfile.exists():
            try:
                os.killpg(int(pidfile.read_text()), signal.SIGTERM)
            except ProcessLookupError:
                pass
            pidfile.unlink()
            print("Label Studio stopped")
        return 0
    if server.healthy():
        print(f"Label Studio already answers on {server.url}")
        return 0
    if not server.initialized():
        print(f"Initializing Label Studio in {server.data_dir} (migrations, about a minute) ...")
    server.start()
    pidfile.write_text(str(server.process.pid))
    print(f"Label Studio {server.url} (admin {server.admin_email}; log {server.data_dir / 'server.log'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
