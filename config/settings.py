"""Quorum settings: one module, driven by the environment.

With no environment at all this is the embedded default: SQLite file, in-memory channel
layer, background work in server threads. DATABASE_URL / REDIS_URL switch to the full stack.
"""

from __future__ import annotations

from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from config.env import envbool, envchoice, envint, envlist, envproxyheader, envsecret, envstr

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(envstr("QUORUM_VAR_DIR", str(BASE_DIR / "var")))

DATABASE_URL = envstr("DATABASE_URL")
REDIS_URL = envstr("REDIS_URL")
EMBEDDED = not DATABASE_URL and not REDIS_URL

# The embedded default is for a laptop: DEBUG on unless told otherwise. The full stack is a
# server: DEBUG off unless told otherwise, and then a real SECRET_KEY is mandatory.
DEBUG = envbool("DEBUG", default=EMBEDDED)
SECRET_KEY = envsecret("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off.")
    SECRET_KEY = "insecure-development-key-only-for-debug"  # noqa: S105

ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", ["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "ninja",
    "django_htmx",
    "allauth",
    "allauth.account",
    "allauth.socialaccount",
    "workspaces",
    "reviews",
    "guardrails",
]

MIDDLEWARE = [
    "config.middleware.RequestIdMiddleware",  # first: every answer and log line has the id
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "config.bodylimit.body_limit_middleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django_htmx.middleware.HtmxMiddleware",  # request.htmx
    "config.middleware.HtmxLoginRedirectMiddleware",  # expired session: HX-Redirect to sign in
    "config.middleware.OwnWritesMiddleware",  # when a person last wrote: pages show it after
    "config.inputguard.MalformedInputMiddleware",  # NUL, lone surrogates: 400 with a message
    "workspaces.middleware.ArchivedReviewsReadOnly",
    "config.errors.ApplicationErrorMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "allauth.account.middleware.AccountMiddleware",
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.csp",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "workspaces.context_processors.navigation",
            ],
            "builtins": ["reviews.templatetags.review_extras"],
        },
    },
]

# The database password apart from the URL (DATABASE_PASSWORD_FILE: a Docker/K8s secret).
DATABASE_PASSWORD = envsecret("DATABASE_PASSWORD")
# Each process keeps a pool of at most QUORUM_DB_POOL_MAX connections (psycopg's pool, checked
# before each use): a request, a task or a tool call takes one and gives it back when it ends,
# and a step gives its own back while it waits on the model. 0 turns the pool off (a connection
# per request and per task, e.g. behind PgBouncer). Sizing: docs/operations.md.
QUORUM_DB_POOL_MAX = envint("QUORUM_DB_POOL_MAX", 6, minimum=0)
QUORUM_DB_POOL_MIN = envint("QUORUM_DB_POOL_MIN", 1, minimum=0)
QUORUM_DB_POOL_TIMEOUT = envint("QUORUM_DB_POOL_TIMEOUT", 30, minimum=1)
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=0)}
    if DATABASE_PASSWORD:
        DATABASES["default"]["PASSWORD"] = DATABASE_PASSWORD
    if QUORUM_DB_POOL_MAX:
        # Checked as the pool hands it out: a connection PostgreSQL dropped (a restart,
        # pg_terminate_backend) is replaced before anyone gets it.
        DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
            "min_size": min(QUORUM_DB_POOL_MIN, QUORUM_DB_POOL_MAX),
            "max_size": QUORUM_DB_POOL_MAX,
            "timeout": QUORUM_DB_POOL_TIMEOUT,
        }
else:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(VAR_DIR / "quorum.sqlite3"),
            # Background threads write too: wait for the lock instead of failing at once.
            "OPTIONS": {
                "timeout": 20,
                "transaction_mode": "IMMEDIATE",
                "init_command": "PRAGMA journal_mode=WAL;",
            },
            # Kept open between requests: the one thread the websocket consumers share for
            # the ORM otherwise opens a file (and sets WAL) for every socket it checks.
            "CONN_MAX_AGE": 60,
            # A file, not shared-cache memory: the pipeline's threads need SQLite's busy
            # timeout, which in-memory shared-cache databases ignore ("table is locked").
            "TEST": {"NAME": VAR_DIR / "test.sqlite3"},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # redis-py 8 reads with a 5 s socket timeout by default, but channels_redis blocks
            # on Redis for up to 5 s when a channel is quiet: the read timed out and killed
            # live consumers (seen in tests/bench/bench_ws_fanout.py). No timeout on reads.
            "CONFIG": {
                "hosts": [{"address": REDIS_URL, "socket_timeout": None}],
                "capacity": 1500,
                "expiry": 60,
            },
        }
    }
    CACHES = {
        "default": {
            # Redis, and a local stand-in while it does not answer (config/cache.py): sign-in
            # keeps its rate limits through a Redis restart instead of failing.
            "BACKEND": "config.cache.FallbackRedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 2},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Celery only exists in the full stack; the embedded default runs background work in threads
# of the server process (config/background.py).
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_TASK_ACKS_LATE = True  # tasks are idempotent: redelivery after a crash is safe
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A worker runs its tasks on threads, not in forked processes: a step spends most of its time
# waiting on the model, and a thread waiting costs little (the model calls of all its threads
# are limited together below). One process per core serves tens of steps at once.
CELERY_WORKER_POOL = "threads"
CELERY_WORKER_CONCURRENCY = envint("QUORUM_WORKER_THREADS", 16, minimum=1)
# A message a dead worker held comes back after this long. Steps renew their own lease while
# they run, so a redelivered duplicate of a live step finds it taken and does nothing.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": envint("QUORUM_CELERY_VISIBILITY_TIMEOUT", 3600, minimum=1),
    # A broker that is down must fail a publish quickly (the web answers 503, the sweeper
    # retries) rather than hang a request; keepalive notices a half-open socket.
    "socket_connect_timeout": 5,
    "socket_keepalive": True,
}
# Workers reconnect to a restarted broker for as long as it takes (not 100 tries); a publish
# gives up after about a second: the rows it was for stay queued for the sweeper.
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 3,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.5,
}
# A lost broker connection does not stop running steps: they hold their own leases and finish.
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
CELERY_TASK_DEFAULT_QUEUE = envstr("QUORUM_CELERY_QUEUE", "quorum")
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]
LOGIN_URL = "account_login"
CSRF_FAILURE_VIEW = "config.errors.csrf_failure"
LOGIN_REDIRECT_URL = "home"
ACCOUNT_LOGOUT_REDIRECT_URL = "account_login"

# django-allauth: email + password; verification optional unless the deployment demands it.
ACCOUNT_LOGIN_METHODS = {"email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "password1*", "password2*"]
ACCOUNT_UNIQUE_EMAIL = True
ACCOUNT_EMAIL_VERIFICATION = envchoice(
    "ACCOUNT_EMAIL_VERIFICATION", "optional", {"none", "optional", "mandatory"}
)
ACCOUNT_RATE_LIMITS = {
    "login": "30/m/ip",
    "login_failed": "10/m/ip,5/5m/key",
    "signup": "20/m/ip",
    "reset_password": "20/m/ip,5/m/key",
}
ACCOUNT_ADAPTER = "workspaces.adapters.AccountAdapter"
SOCIALACCOUNT_PROVIDERS: dict = {}
GITHUB_OAUTH_CLIENT_ID = envstr("GITHUB_OAUTH_CLIENT_ID")
GITHUB_OAUTH_SECRET = envsecret("GITHUB_OAUTH_SECRET")
if GITHUB_OAUTH_CLIENT_ID and GITHUB_OAUTH_SECRET:
    INSTALLED_APPS.append("allauth.socialaccount.providers.github")
    SOCIALACCOUNT_PROVIDERS["github"] = {
        "APPS": [{"client_id": GITHUB_OAUTH_CLIENT_ID, "secret": GITHUB_OAUTH_SECRET}],
        "SCOPE": ["read:user", "user:email"],
    }
elif GITHUB_OAUTH_CLIENT_ID or GITHUB_OAUTH_SECRET:
    raise ImproperlyConfigured(
        "Set both GITHUB_OAUTH_CLIENT_ID and GITHUB_OAUTH_SECRET, or neither."
    )

# Printed to the console unless an SMTP host is configured (README "Environment").
EMAIL_BACKEND = envstr(
    "EMAIL_BACKEND",
    "django.core.mail.backends.smtp.EmailBackend"
    if envstr("EMAIL_HOST")
    else "django.core.mail.backends.console.EmailBackend",
)
EMAIL_HOST = envstr("EMAIL_HOST", "localhost")
EMAIL_PORT = envint("EMAIL_PORT", 25, minimum=1)
EMAIL_HOST_USER = envstr("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = envsecret("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = envbool("EMAIL_USE_TLS", default=False)
EMAIL_TIMEOUT = envint("EMAIL_TIMEOUT", 20, minimum=1)
DEFAULT_FROM_EMAIL = envstr("DEFAULT_FROM_EMAIL", "quorum@localhost")
# Approval notices: the webhook's first retry delay (their links start with QUORUM_PUBLIC_URL).
QUORUM_WEBHOOK_BACKOFF_SECONDS = envint("QUORUM_WEBHOOK_BACKOFF_SECONDS", 10, minimum=0)

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
# Serve straight from the finders when collectstatic has not run (tests, runserver).
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = envbool("SESSION_COOKIE_SECURE", default=not DEBUG and not EMBEDDED)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
# HTTPS switches (README "HTTPS, security headers and request limits"), off by default: Quorum
# cannot know whether TLS ends at a proxy. `manage.py check --deploy` says what a server lacks.
SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", default=False)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # health checks probe over plain HTTP
SECURE_PROXY_SSL_HEADER = envproxyheader("SECURE_PROXY_SSL_HEADER")
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", default=False)
# Content Security Policy (docs/security.md): scripts only from this origin and with
# the per-response nonce; styles may be inline because Mermaid writes <style> into its SVGs.
# 'self' covers same-origin ws:/wss: for the live-update socket (CSP level 3).
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF, CSP.UNSAFE_INLINE],
    "img-src": [CSP.SELF, "data:"],
    "font-src": [CSP.SELF],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    # "Sign in with GitHub" posts here and is redirected to GitHub; form-action covers that.
    "form-action": [CSP.SELF, *(["https://github.com"] if GITHUB_OAUTH_CLIENT_ID else [])],
    "frame-ancestors": [CSP.NONE],
}

# Quorum
QUORUM_WORKTREE_ROOT = Path(envstr("QUORUM_WORKTREE_ROOT", str(VAR_DIR / "worktrees")))
QUORUM_LOCAL_REPO_ROOTS = [
    Path(p) for p in envlist("QUORUM_LOCAL_REPO_ROOTS", [str(VAR_DIR / "repos")], sep=":")
]
GITHUB_API_URL = envstr("GITHUB_API_URL", "https://api.github.com").rstrip("/")
GITHUB_TOKEN = envsecret("GITHUB_TOKEN")
# Where git clones from; derived from GITHUB_API_URL when empty (github.com or GHE /api/v3).
GITHUB_GIT_URL = envstr("GITHUB_GIT_URL").rstrip("/")
GITHUB_APP_ID = envstr("GITHUB_APP_ID")
GITHUB_APP_PRIVATE_KEY_PATH = envstr("GITHUB_APP_PRIVATE_KEY_PATH")
GITHUB_WEBHOOK_SECRET = envsecret("GITHUB_WEBHOOK_SECRET")
# Where people reach this server (https://quorum.example.com): the GitHub check run's "Details"
# link to the review page (empty: no link) and the links in approval notices (empty: the origin
# of the request that asked, else http://localhost:8000).
QUORUM_PUBLIC_URL = envstr("QUORUM_PUBLIC_URL").rstrip("/")
QUORUM_LLM_PROVIDER = envchoice("QUORUM_LLM_PROVIDER", "", {"", "openai", "anthropic"})
QUORUM_LLM_BASE_URL = envstr("QUORUM_LLM_BASE_URL")
QUORUM_LLM_API_KEY = envsecret("QUORUM_LLM_API_KEY")
QUORUM_LLM_MODEL = envstr("QUORUM_LLM_MODEL")
# Server variables a reviewer's settings may name for its key: the operator's allow-list
# (docs/security.md "Model endpoints and keys"). Empty: none; the server's own key variables
# are refused by name whatever the list says.
QUORUM_MODEL_KEY_VARIABLES = envlist("QUORUM_MODEL_KEY_VARIABLES")
# The key that seals the model keys admins enter per reviewer (QUORUM_SECRETS_KEY_FILE works
# too). Never stored in the database; unset, one derived from SECRET_KEY is used.
QUORUM_SECRETS_KEY = envsecret("QUORUM_SECRETS_KEY")
if QUORUM_SECRETS_KEY and len(QUORUM_SECRETS_KEY) < 32:
    raise ImproperlyConfigured("QUORUM_SECRETS_KEY must be at least 32 characters long.")
# Pipeline durability: a step whose worker vanished is re-run once its lease
# lapses; a round still unfinished after the timeout fails with a clear message.
QUORUM_STEP_LEASE_SECONDS = envint("QUORUM_STEP_LEASE_SECONDS", 120, minimum=3)
# An approved action's execution lease: past it, a request still `executing` (its worker died
# mid-call) is looked up where it acts and settled by the sweeper. Longer than any GitHub call
# with its retries (docs/durability.md).
QUORUM_APPROVAL_LEASE_SECONDS = envint("QUORUM_APPROVAL_LEASE_SECONDS", 600, minimum=3)
QUORUM_ROUND_TIMEOUT_SECONDS = envint("QUORUM_ROUND_TIMEOUT_SECONDS", 3 * 3600, minimum=10)
# How often a worker (or the embedded server) looks for stalled rounds: a lost task, a broker
# restart, a dead worker. 0 turns the sweeper off. See docs/durability.md.
QUORUM_SWEEP_SECONDS = envint("QUORUM_SWEEP_SECONDS", 15, minimum=0)
# How many rounds are admitted into work at once, cluster-wide; the others wait, queued, in the
# order they came, and a round that ends admits the oldest. About twice the workers' slots
# (processes x concurrency) keeps every slot busy while each admitted round is near its end;
# 0 admits every round at once (steps of all of them then interleave). See docs/durability.md.
QUORUM_ROUNDS_AT_ONCE = envint("QUORUM_ROUNDS_AT_ONCE", 8, minimum=0)
# How often a process with model calls in flight looks whether their rounds ended (superseded,
# cancelled), to stop them (reviews/pipeline/model_waits.py).
QUORUM_STOP_POLL_SECONDS = envint("QUORUM_STOP_POLL_SECONDS", 1, minimum=1)
# Model calls one process has in flight at once, in all and per provider endpoint; a 429 is
# waited out and sent again (reviews/agents/call_limits.py).
QUORUM_MODEL_CALLS_PER_PROCESS = envint("QUORUM_MODEL_CALLS_PER_PROCESS", 32, minimum=1)
QUORUM_MODEL_CALLS_PER_PROVIDER = envint("QUORUM_MODEL_CALLS_PER_PROVIDER", 16, minimum=1)
# A review page rendered this recently (milliseconds) is served again to the next viewer of its
# kind even if the review moved on meanwhile: it carries the version it was rendered at, and its
# socket sends what changed since. A person's own writes are always on the next page they load
# (config/middleware.py OwnWritesMiddleware). 0 renders every new version
# (reviews/web/section_renders.py).
QUORUM_PAGE_FRESH_MS = envint("QUORUM_PAGE_FRESH_MS", 1000, minimum=0)
# In the full stack a space's live events are gathered this long (milliseconds) and sent to its
# open pages as one update and one version (reviews/live/window.py). 0 sends each committed
# change at once.
QUORUM_LIVE_WINDOW_MS = envint("QUORUM_LIVE_WINDOW_MS", 500, minimum=0)
# How many HTTP requests a web process runs at once; the others wait their turn without a
# thread or a database connection (config/requests_at_once.py). By default as many as its
# database pool holds, so requests never wait on each other for a connection. 0: no bound.
QUORUM_REQUESTS_AT_ONCE = envint("QUORUM_REQUESTS_AT_ONCE", QUORUM_DB_POOL_MAX or 6, minimum=0)
QUORUM_API_TOKEN_PREFIX = "qrm_"  # noqa: S105 (a public marker, not a secret)
# Tenancy: a shared server is closed by default (the operator opens sign-up and workspace
# creation, grants local roots per workspace); the single-user embedded default is open.
QUORUM_OPEN_SIGNUP = envbool("QUORUM_OPEN_SIGNUP", default=EMBEDDED)
QUORUM_OPEN_WORKSPACES = envbool("QUORUM_OPEN_WORKSPACES", default=EMBEDDED)
QUORUM_SHARED_LOCAL_ROOTS = envbool("QUORUM_SHARED_LOCAL_ROOTS", default=EMBEDDED)
QUORUM_INVITATION_DAYS = envint("QUORUM_INVITATION_DAYS", 7, minimum=1)
# Request body caps in bytes (config/bodylimit.py): 413 before the body is buffered. GitHub
# sends webhook payloads of at most 25 MB.
QUORUM_MAX_WEBHOOK_BODY = envint("QUORUM_MAX_WEBHOOK_BODY", 25 * 1024 * 1024, minimum=1024)
QUORUM_MAX_API_BODY = envint("QUORUM_MAX_API_BODY", 10 * 1024 * 1024, minimum=1024)
QUORUM_MAX_FORM_BODY = envint("QUORUM_MAX_FORM_BODY", 1024 * 1024, minimum=1024)
QUORUM_MAX_MCP_BODY = envint("QUORUM_MAX_MCP_BODY", 1024 * 1024, minimum=1024)
# Django's own in-memory limit must not refuse (with a 400) what a path's cap allows.
DATA_UPLOAD_MAX_MEMORY_SIZE = max(
    QUORUM_MAX_WEBHOOK_BODY, QUORUM_MAX_API_BODY, QUORUM_MAX_FORM_BODY
)
# The audit chain's HMAC key (README "Audit trail"; QUORUM_AUDIT_KEY_FILE works too). It is
# never stored in the database. Unset, a key derived from SECRET_KEY is used, and a server with
# DEBUG off logs a warning at start-up: rotating SECRET_KEY would orphan the existing chains.
QUORUM_AUDIT_KEY = envsecret("QUORUM_AUDIT_KEY")
if QUORUM_AUDIT_KEY and len(QUORUM_AUDIT_KEY) < 32:
    raise ImproperlyConfigured("QUORUM_AUDIT_KEY must be at least 32 characters long.")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # Every line names its request (config/middleware.py; "-" outside one), as do the
    # X-Request-ID header and the 500 answers.
    "filters": {"request_id": {"()": "config.middleware.RequestIdFilter"}},
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"}
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["request_id"],
        }
    },
    "root": {"handlers": ["console"], "level": envstr("LOG_LEVEL", "INFO")},
    "loggers": {
        "daphne": {"level": "WARNING"},
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
        # stamina logs each retry without saying of what; the callers log their own line.
        "stamina": {"level": "ERROR"},
    },
}
