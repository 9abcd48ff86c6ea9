"""Settings, all from the environment.

Embedded defaults give the zero-setup demo (SQLite, Celery eager, files under ./var).
Tests and production set DATABASE_URL (PostgreSQL) and CELERY_BROKER_URL (Redis).
See docs/configuration.md for every variable.
"""
from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF, UNSAFE_INLINE
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    return int(value) if value.strip() else default


DEBUG = env_bool("MEDR2_DEBUG", False)

SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. Export SECRET_KEY (production) or MEDR2_DEBUG=1 (local demo)."
        )
    SECRET_KEY = "medr2-insecure-development-key-do-not-use-in-production"

ALLOWED_HOSTS = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost").split(",") if h.strip()]
CSRF_TRUSTED_ORIGINS = [o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "axes",              # login throttling; before `audit`, whose receivers read what axes decided
    "csp",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "common",            # no models: template tags (medr2_format), format modules, the names registry
    "accounts",
    "audit",
    "annotation",
    "validity",
    "workers",
    "labelstudio",
    "adjudication",
    "releases",
    "finetune",
    "reports",
    "dashboard",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",      # static files answer here, before everything below
    "csp.middleware.CSPMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Cache-Control: no-store on every response of the application; who made a change (for audit
    # events written below a service); 403s announced (audit records `auth.refused`). common/middleware.py
    "common.middleware.NoStoreMiddleware",
    "common.middleware.CurrentRequestMiddleware",
    "common.middleware.RefusalMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",                  # last (django-axes): turns a locked-out login into 429
]

ROOT_URLCONF = "medr2.urls"
WSGI_APPLICATION = "medr2.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "accounts.context_processors.roles",
            ],
        },
    },
]

# --- data ---------------------------------------------------------------------------------
VAR_DIR = Path(os.environ.get("MEDR2_VAR_DIR", BASE_DIR / "var"))
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{VAR_DIR / 'medr2.sqlite3'}"),
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 0),
    )
}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # The demo's web process and its Celery worker write one SQLite file. WAL: pages read while a batch
    # writes. IMMEDIATE: a transaction takes the write lock when it begins, so one that reads and then
    # writes (every audit_record) waits its turn instead of failing with "database is locked".
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"init_command": "PRAGMA journal_mode=WAL", "transaction_mode": "IMMEDIATE", "timeout": 30})
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Content-addressed image store (rendered PNGs, de-identified sources).
MEDR2_STORAGE_ROOT = Path(os.environ.get("MEDR2_STORAGE_ROOT", VAR_DIR / "storage"))
# Keyed remapping of DICOM UIDs and patient ids. Keep it secret and stable: changing it
# changes every remapped UID and split key.
MEDR2_DEID_SALT = os.environ.get("MEDR2_DEID_SALT", "") or f"salt:{SECRET_KEY}"
MEDR2_MAX_IMAGE_PIXELS = env_int("MEDR2_MAX_IMAGE_PIXELS", 64_000_000)
MEDR2_MAX_FILE_BYTES = env_int("MEDR2_MAX_FILE_BYTES", 512 * 1024 * 1024)
MEDR2_UPLOAD_MAX_BYTES = env_int("MEDR2_UPLOAD_MAX_BYTES", 256 * 1024 * 1024)
MEDR2_MAX_DECODED_BYTES = env_int("MEDR2_MAX_DECODED_BYTES", 256 * 1024 * 1024)
MEDR2_ZIP_MAX_MEMBERS = env_int("MEDR2_ZIP_MAX_MEMBERS", 10_000)
MEDR2_ZIP_MAX_TOTAL_BYTES = env_int("MEDR2_ZIP_MAX_TOTAL_BYTES", 4 * 1024 ** 3)
MEDR2_ZIP_MAX_RATIO = env_int("MEDR2_ZIP_MAX_RATIO", 200)
FILE_UPLOAD_MAX_MEMORY_SIZE = 8 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 8 * 1024 * 1024

# --- cache (docs/deploy.md) -----------------------------------------------------------------
# Derived pages (a run's results, a model comparison: keyed on what they are computed from, so never
# stale) and small lookups (category titles). Default: each process's own memory. MEDR2_CACHE_URL
# (redis://host:6379/1) shares one Redis cache between every process: a comparison is computed once.
MEDR2_CACHE_URL = os.environ.get("MEDR2_CACHE_URL", "").strip()
if MEDR2_CACHE_URL and not MEDR2_CACHE_URL.startswith(("redis://", "rediss://", "unix://")):
    raise ImproperlyConfigured("MEDR2_CACHE_URL must be a redis://, rediss:// or unix:// URL (or empty)")
CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": MEDR2_CACHE_URL}
          if MEDR2_CACHE_URL else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache",
                                   "OPTIONS": {"MAX_ENTRIES": 5000}}}   # a run list page caches 50 progresses

# --- auth -----------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
     "OPTIONS": {"min_length": env_int("MEDR2_PASSWORD_MIN_LENGTH", 12)}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# django-axes first: it refuses a locked-out username+address before the password is even checked.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Login throttling (django-axes, docs/security.md "Sign-in"): after MEDR2_LOGIN_FAILURE_LIMIT failed
# sign-ins for one username from one address, that pair is refused (HTTP 429) for
# MEDR2_LOGIN_COOLOFF_MINUTES; each further attempt during the lockout restarts the cool-off.
AXES_FAILURE_LIMIT = env_int("MEDR2_LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("MEDR2_LOGIN_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "accounts.security.client_ip"
AXES_LOCKOUT_CALLABLE = "accounts.security.lockout_response"
# Lockouts are read in the audit trail (`auth.lockout`) and lifted by the cool-off or by an operator with
# `manage.py axes_reset_username NAME`; axes' own admin pages stay off.
AXES_ENABLE_ADMIN = False
# How many reverse proxies append to X-Forwarded-For in front of the app (0: use the socket's address).
MEDR2_PROXY_COUNT = env_int("MEDR2_PROXY_COUNT", 0)
LOGIN_URL = "accounts:login"
LOGIN_REDIRECT_URL = "dashboard:index"
LOGOUT_REDIRECT_URL = "accounts:login"
# Label Studio serves on another port of the same host; browsers ignore ports for cookies.
SESSION_COOKIE_NAME = "medr2_sessionid"
CSRF_COOKIE_NAME = "medr2_csrftoken"
SESSION_COOKIE_HTTPONLY = True
# Idle timeout: a session ends MEDR2_SESSION_IDLE_MINUTES after its last request (each request renews it).
SESSION_COOKIE_AGE = env_int("MEDR2_SESSION_IDLE_MINUTES", 30) * 60
SESSION_SAVE_EVERY_REQUEST = True
SESSION_COOKIE_SECURE = env_bool("MEDR2_SECURE_COOKIES", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("MEDR2_SECURE_COOKIES", not DEBUG)
X_FRAME_OPTIONS = "DENY"
# Behind a TLS-terminating reverse proxy that sets X-Forwarded-Proto (docs/deploy.md, "TLS").
if env_bool("MEDR2_TLS_PROXY", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = True
    SECURE_HSTS_SECONDS = env_int("MEDR2_HSTS_SECONDS", 31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("MEDR2_HSTS_INCLUDE_SUBDOMAINS", False)
    SECURE_HSTS_PRELOAD = env_bool("MEDR2_HSTS_PRELOAD", False)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
# Content-Security-Policy (django-csp; docs/security.md "Browser protections"): scripts only from our own
# files (no inline script, no inline event handler, no eval). Inline *styles* are allowed: matplotlib's inline
# SVG figures carry <style> and style attributes, pages set swatch colours with style="", and Swagger UI
# styles itself inline. `data:`/`blob:` images: the viewer's and Swagger UI's generated images.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF, UNSAFE_INLINE],
        "img-src": [SELF, "data:", "blob:"],
        "font-src": [SELF, "data:"],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "common.pagination.StandardPagination",
    # one error shape for every API (common/errors.py, docs/architecture.md "Errors")
    "EXCEPTION_HANDLER": "common.errors.exception_handler",
    "PAGE_SIZE": 50,
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_SCHEMA_CLASS": "common.schema.AutoSchema",   # errors, pages, component names (common/schema.py)
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Med-R2 Studio API",
    "DESCRIPTION": ("Images, taxonomy, stepwise QA chains, versioned items, adversarial variants, evaluation "
                    "runs, Label Studio batches, adjudication, shortcut audits, releases, model reports (versions, "
                    "signatures), audit trail. Every error "
                    "answers with the `Error` schema: {code, detail, fields?} (docs/architecture.md)."),
    # the one error shape of common.errors.exception_handler, published for clients
    "APPEND_COMPONENTS": {"schemas": {"Error": {
        "type": "object", "required": ["code", "detail"],
        "properties": {
            "code": {"type": "string", "description": (
                "invalid, not_authenticated, permission_denied, not_found, method_not_allowed, not_acceptable, "
                "conflict, too_large, unsupported_media_type, throttled, unavailable")},
            "detail": {"type": "string", "description": "one readable sentence"},
            "fields": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}},
                       "description": "only when the error names input fields"},
        },
        "additionalProperties": True,
    }}},
    "VERSION": "0.2.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "ENUM_NAME_OVERRIDES": {"ReleaseStatusEnum": "releases.models.Release.Status",
                            "ShortcutAuditStatusEnum": "validity.models.ShortcutAudit.Status",
                            "AnnotationBatchStatusEnum": "labelstudio.models.AnnotationBatch.Status",
                            "ReportBuildStatusEnum": "reports.models.BuildStatus",
                            "VerdictEnum": "adjudication.models.Verdict",
                            "AnnotationBatchModeEnum": "labelstudio.models.AnnotationBatch.Mode"},
    "SERVE_PERMISSIONS": ["accounts.permissions.HasAnyRole"],
    # Swagger UI assets ship with drf-spectacular-sidecar: the docs page works offline
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # The schema's documentation quality (component names, operation ids) is not a deployment matter:
    # keep its warnings out of `check --deploy` (docs/deploy.md, "Checking a deployment").
    "ENABLE_DJANGO_DEPLOY_CHECK": False,
}

# --- i18n / static ----------------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
# one date format on every page ("2 Dec 2026, 14:05"): common/formats/en, common.formatting.DATETIME_FORMAT
FORMAT_MODULE_PATH = ["common.formats"]
STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]

# --- celery -------------------------------------------------------------------------------------
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "")
# `filesystem://` = the embedded broker (medr2/embedded_broker.py), what `make demo` runs its worker on: messages
# are files under CELERY_BROKER_FOLDER and results are files beside them (Celery's `file://` backend).
# No server; one machine, one worker. Production uses Redis.
EMBEDDED_BROKER = CELERY_BROKER_URL.startswith("filesystem://")
CELERY_BROKER_FOLDER = Path(os.environ.get("CELERY_BROKER_FOLDER", "") or VAR_DIR / "celery").absolute()
if EMBEDDED_BROKER:
    CELERY_BROKER_TRANSPORT = "medr2.embedded_broker:Transport"
    (CELERY_BROKER_FOLDER / "results").mkdir(parents=True, exist_ok=True)   # Celery's file backend needs it
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND") or (
    (CELERY_BROKER_FOLDER / "results").as_uri() if EMBEDDED_BROKER else CELERY_BROKER_URL or None)
# No broker configured -> tasks run in-process (a local run; the demo's preparation asks for it explicitly).
# With a broker, eager is only on when asked for; we never fall back silently to synchronous execution.
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", not CELERY_BROKER_URL)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "cpu"
# Every route in one place, by the task name's app prefix. `gpu` is chosen per batch (a model's
# queue, workers/services/runs.py); worker-cpu listens on cpu,sync; the gpu worker on gpu.
CELERY_TASK_ROUTES = {
    "audit.*": {"queue": "cpu"},
    "validity.*": {"queue": "cpu"},
    "workers.run_finalize": {"queue": "cpu"},
    "workers.runs_reconcile": {"queue": "cpu"},
    "workers.run_score": {"queue": "cpu"},
    "labelstudio.*": {"queue": "sync"},
    "adjudication.*": {"queue": "cpu"},
    "releases.*": {"queue": "cpu"},
    "finetune.*": {"queue": "gpu"},   # training: one job per GPU worker (concurrency 1)
    "reports.*": {"queue": "cpu"},
    "annotation.*": {"queue": "cpu"},   # import chunks (annotation/tasks.py)
}
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 6 * 3600),
    # kombu sweeps for unacked messages of dead workers every interval × throttle seconds (~100 s)
    "unacked_restore_interval": env_int("CELERY_UNACKED_RESTORE_INTERVAL", 10),
    "unacked_restore_throttle": env_int("CELERY_UNACKED_RESTORE_THROTTLE", 10),
    # a worker killed during that sweep leaves its Redis lock behind; no sweep runs until it expires
    "unacked_mutex_expire": env_int("CELERY_UNACKED_MUTEX_EXPIRE", 300),
}
if EMBEDDED_BROKER:   # its folder, and how often an idle worker looks for new message files
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "folder": str(CELERY_BROKER_FOLDER),
        "polling_interval": float(os.environ.get("CELERY_BROKER_POLLING_INTERVAL", "") or 0.2)}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_RESULT_EXPIRES = 24 * 3600

# --- evaluation runs (workers/) ----------------------------------------------------------------
# The longest a single batch may take; the broker's visibility timeout must exceed it, or a
# batch still running would be redelivered to a second worker (a system check enforces this).
MEDR2_EVAL_MAX_BATCH_SECONDS = env_int("MEDR2_EVAL_MAX_BATCH_SECONDS", 3600)
MEDR2_EVAL_MAX_RETRIES = env_int("MEDR2_EVAL_MAX_RETRIES", 8)      # backend unavailable: batch retries
MEDR2_EVAL_RETRY_BASE_S = float(os.environ.get("MEDR2_EVAL_RETRY_BASE_S", "5"))
MEDR2_EVAL_RETRY_MAX_S = float(os.environ.get("MEDR2_EVAL_RETRY_MAX_S", "300"))
# Dispatch (workers/services/dispatch.py): at most WINDOW batches of one run are in the broker at a time,
# each finished batch sends the next. The sweep (every RECONCILE_S, Celery beat) re-sends a batch sent
# LOST_GRACE_S ago that never started while its queue is empty, or one whose worker has not reported
# for STALE_S (longer than the slowest model takes for WRITE_EVERY predictions).
# An upload page import at least this large (bytes) is spooled and imported in chunks on the Celery workers
# (annotation/services/ingest_parallel.py); smaller ones, and any without a broker, import in the request.
MEDR2_IMPORT_PARALLEL_MIN_BYTES = env_int("MEDR2_IMPORT_PARALLEL_MIN_BYTES", 64 * 1024 * 1024)
MEDR2_EVAL_DISPATCH_WINDOW = env_int("MEDR2_EVAL_DISPATCH_WINDOW", 256)
MEDR2_EVAL_LOST_GRACE_S = env_int("MEDR2_EVAL_LOST_GRACE_S", 60)
MEDR2_EVAL_STALE_S = env_int("MEDR2_EVAL_STALE_S", 900)
MEDR2_EVAL_RECONCILE_S = float(os.environ.get("MEDR2_EVAL_RECONCILE_S", "60"))
# The import sweep (annotation/services/ingest_reconcile.py, Celery beat every IMPORT_RECONCILE_S) sends a chunk
# again when it was sent IMPORT_LOST_GRACE_S ago and never started while its queue is empty, or when its worker
# has shown no progress for IMPORT_STALE_S (longer than the slowest single file takes); it finishes a batch
# whose chunks are all done.
MEDR2_IMPORT_LOST_GRACE_S = env_int("MEDR2_IMPORT_LOST_GRACE_S", 60)
MEDR2_IMPORT_STALE_S = env_int("MEDR2_IMPORT_STALE_S", 900)
MEDR2_IMPORT_RECONCILE_S = float(os.environ.get("MEDR2_IMPORT_RECONCILE_S", "60"))
# A chunk's retries import one file at a time (annotation/services/ingest_retry.py): a file whose import killed
# its worker in IMPORT_FILE_MAX_DEATHS such retries is recorded failed ("worker_lost") and the rest imported; a
# chunk started more than IMPORT_CHUNK_MAX_ATTEMPTS times records its remaining files failed, so the batch ends.
MEDR2_IMPORT_FILE_MAX_DEATHS = env_int("MEDR2_IMPORT_FILE_MAX_DEATHS", 2)
MEDR2_IMPORT_CHUNK_MAX_ATTEMPTS = env_int("MEDR2_IMPORT_CHUNK_MAX_ATTEMPTS", 8)
MEDR2_FINETUNE_ROOT = Path(os.environ.get("MEDR2_FINETUNE_ROOT", str(VAR_DIR / "finetune")))
MEDR2_FINETUNE_PROGRESS_S = float(os.environ.get("MEDR2_FINETUNE_PROGRESS_S", "1"))
MEDR2_MODEL_DIR = Path(os.environ.get("MEDR2_MODEL_DIR", str(VAR_DIR / "models")))

# --- Label Studio (labelstudio/, docs/labelstudio.md) ------------------------------------
# Empty LABEL_STUDIO_URL = the integration is off (pages say so; nothing is pushed or pulled).
LABEL_STUDIO_URL = os.environ.get("LABEL_STUDIO_URL", "").rstrip("/")
LABEL_STUDIO_API_KEY = os.environ.get("LABEL_STUDIO_API_KEY", "")
# what a radiologist's browser uses for "open in Label Studio" links (defaults to LABEL_STUDIO_URL)
LABEL_STUDIO_PUBLIC_URL = os.environ.get("LABEL_STUDIO_PUBLIC_URL", LABEL_STUDIO_URL).rstrip("/")
# shared secret Label Studio sends in the X-Medr2-Webhook-Secret header; empty = webhooks refused
LABEL_STUDIO_WEBHOOK_SECRET = os.environ.get("LABEL_STUDIO_WEBHOOK_SECRET", "")
# our own address as Label Studio and the radiologist's browser reach it (image URLs, webhook target)
MEDR2_PUBLIC_URL = os.environ.get("MEDR2_PUBLIC_URL", "http://127.0.0.1:8000").rstrip("/")
# how the Label Studio SERVER reaches us for webhooks (in a compose network: http://web:8000)
MEDR2_WEBHOOK_BASE_URL = os.environ.get("MEDR2_WEBHOOK_BASE_URL", MEDR2_PUBLIC_URL).rstrip("/")
LABEL_STUDIO_TIMEOUT_S = float(os.environ.get("LABEL_STUDIO_TIMEOUT_S", "15"))
LABEL_STUDIO_IMAGE_URL_MAX_AGE_S = env_int("LABEL_STUDIO_IMAGE_URL_MAX_AGE_S", 14 * 24 * 3600)
LABEL_STUDIO_PUSH_CHUNK = env_int("LABEL_STUDIO_PUSH_CHUNK", 500)
LABEL_STUDIO_SYNC_INTERVAL_S = env_int("LABEL_STUDIO_SYNC_INTERVAL_S", 60)
LABEL_STUDIO_MAX_RETRIES = env_int("LABEL_STUDIO_MAX_RETRIES", 10)
LABEL_STUDIO_RETRY_BASE_S = float(os.environ.get("LABEL_STUDIO_RETRY_BASE_S", "2"))
LABEL_STUDIO_RETRY_MAX_S = float(os.environ.get("LABEL_STUDIO_RETRY_MAX_S", "300"))
# agreement between annotators of one task: boxes match at IoU >= this
MEDR2_AGREEMENT_IOU = float(os.environ.get("MEDR2_AGREEMENT_IOU", "0.5"))

# --- releases (releases/, docs/releases.md) ------------------------------------------------------
# Built releases (folder + .tar.gz) live here; published ones are never rewritten.
MEDR2_RELEASE_ROOT = Path(os.environ.get("MEDR2_RELEASE_ROOT", str(VAR_DIR / "releases")))
# The Ed25519 private key that signs MANIFEST.sha256 (hex, base64 or PEM). From the environment only:
# never in the database or a release; the public key ships in each release (release.pub).
MEDR2_RELEASE_SIGNING_KEY = os.environ.get("MEDR2_RELEASE_SIGNING_KEY", "")

# --- model reports (reports/, docs/reports.md) ---------------------------------------------------
# Reports name roles and counts only; set to true where the board wants the annotators', adjudicators'
# and run creators' usernames in the report (they then enter its hash and every rendering).
MEDR2_REPORT_SHOW_NAMES = env_bool("MEDR2_REPORT_SHOW_NAMES", False)

# --- audit trail (audit/, docs/security.md) ----------------------------------------------------
# The platform's Ed25519 private key (hex, base64 or PEM; common/signing.py) that signs audit-chain
# checkpoints. From the environment only: never stored in the database; checkpoints store its public key.
MEDR2_SIGNING_KEY = os.environ.get("MEDR2_SIGNING_KEY", "")

CELERY_BEAT_SCHEDULE = {
    "audit-verify-chain-nightly": {"task": "audit.verify_chain", "schedule": 24 * 3600.0},
    # webhooks are only hints (Label Studio never retries them): reconciliation pulls every change
    "labelstudio-reconcile": {"task": "labelstudio.reconcile", "schedule": float(LABEL_STUDIO_SYNC_INTERVAL_S)},
    # a correction whose rescoring could not be sent (broker down at commit) is sent again
    "adjudication-rescore-pending": {"task": "adjudication.rescore_pending", "schedule": 300.0},
    # evaluation batches the broker lost (a Redis restart, a worker killed with its host) are sent again
    "workers-runs-reconcile": {"task": "workers.runs_reconcile", "schedule": MEDR2_EVAL_RECONCILE_S},
    # parallel-import chunks the broker lost (or whose worker died with its host) are sent again
    "annotation-imports-reconcile": {"task": "annotation.imports_reconcile", "schedule": MEDR2_IMPORT_RECONCILE_S},
}

# --- logging: structured, never patient data ----------------------------------------------------
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("MEDR2_LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}, "httpx": {"level": "WARNING"}},
}
