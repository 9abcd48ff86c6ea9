# syntax=docker/dockerfile:1
#
# Med-R2 Studio: ONE image for every process of the stack (gunicorn web, Celery workers, beat,
# the one-shot migrate job). Only the torch build differs between the CPU and the GPU image, and
# that is a build argument, not a separate stage:
#
#   CPU image (web, migrate, worker-cpu, beat):
#     docker build -t medr2-studio .
#   GPU image (worker-gpu):
#     docker build -t medr2-studio-gpu --build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cu130 .
#
# Why no nvidia/cuda base image: the CUDA builds of torch on download.pytorch.org bring the CUDA
# user-space libraries they need (cuBLAS, cuDNN, NCCL, ...) as nvidia-* pip wheels. The only piece
# that must come from outside is the driver (libcuda.so), and the NVIDIA Container Toolkit mounts
# that into the container at run time when the container asks for a GPU (see worker-gpu in
# docker-compose.yml). So python:3.11-slim + a CUDA torch wheel is a complete GPU image, with the
# same Python, the same requirements and the same code as the CPU image. Pick the cuXYZ index that
# publishes torch 2.13.0 and that the host driver supports (https://pytorch.org/get-started/).
#
# Secrets are never baked in: SECRET_KEY below is a throwaway used only by `collectstatic` during
# the build; the containers get the real one from the environment (.env via docker compose).

ARG PYTHON_IMAGE=python:3.11-slim
FROM ${PYTHON_IMAGE}

# Where torch comes from. The default is the CPU-only build (small, no CUDA wheels); the GPU
# image overrides it with a CUDA index. TORCH_VERSION must match the pin in requirements.txt.
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ARG TORCH_VERSION=2.13.0

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# System libraries: psycopg[binary] ships libpq; Pillow, numpy and torch ship their shared libraries
# inside their wheels (torch brings its own libgomp) and need only glibc and libstdc++, which every
# Debian image has; pydicom and nibabel are pure Python. The one exception is WeasyPrint (model
# reports as PDF, reports/render.py): it loads Pango, HarfBuzz's subsetter and fontconfig through
# cffi, and needs a font (DejaVu, the one the report's CSS and figures name). The healthchecks in
# docker-compose.yml use Python, so not even curl is installed.
RUN apt-get update \
    && apt-get install -y --no-install-recommends libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz-subset0 \
       libfontconfig1 fonts-dejavu-core \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app

# 1) torch first, from the PyTorch index chosen above. Its local version (2.13.0+cpu, 2.13.0+cuXYZ)
#    satisfies the `torch==2.13.0` pin in requirements.txt (PEP 440 ignores the local label), so
#    step 2 keeps it instead of pulling the default PyPI build (which, on Linux, is the large CUDA one).
RUN pip install --index-url "${TORCH_INDEX_URL}" "torch==${TORCH_VERSION}"

# 2) the rest of the pinned requirements from PyPI. Copied alone so code changes reuse this layer.
COPY requirements.txt ./
RUN pip install -r requirements.txt \
    && python -c "import torch; print('torch', torch.__version__, 'cuda build:', torch.version.cuda)"

# 3) the application. Only what runs in production is copied (explicit list rather than `COPY .`,
#    so a local .env, .venv, var/ or test output can never end up in the image).
COPY manage.py ./
COPY medr2 ./medr2
COPY common ./common
COPY accounts ./accounts
COPY audit ./audit
COPY annotation ./annotation
COPY validity ./validity
COPY workers ./workers
COPY labelstudio ./labelstudio
COPY adjudication ./adjudication
COPY releases ./releases
COPY finetune ./finetune
COPY reports ./reports
COPY dashboard ./dashboard
COPY templates ./templates
COPY static ./static

# Static files are collected at build time into /app/staticfiles and served by WhiteNoise.
# settings.py refuses to start without SECRET_KEY unless MEDR2_DEBUG is on; this value exists only
# for this RUN step and is not an ENV of the image. collectstatic touches no database.
RUN SECRET_KEY="build-only-collectstatic-not-a-secret" python manage.py collectstatic --noinput -v 0

# Non-root user. The code stays root-owned and read-only for it; only /data is writable.
#   /data/storage  content-addressed image store (MEDR2_STORAGE_ROOT), a named volume in compose
#   /data/beat     Celery beat's schedule file, so "last run" survives restarts
# A named volume mounted on these paths is initialised with this ownership on first use.
RUN groupadd --system --gid 10001 medr2 \
    && useradd --system --uid 10001 --gid medr2 --home-dir /home/medr2 --create-home --shell /usr/sbin/nologin medr2 \
    && mkdir -p /data/storage /data/beat \
    && chown -R medr2:medr2 /data

# gunicorn reads WEB_CONCURRENCY (number of worker processes) and GUNICORN_CMD_ARGS (any other
# flag) from the environment itself; override either per deployment. The upload API imports files
# synchronously inside the request (up to MEDR2_UPLOAD_MAX_BYTES per file), hence the long timeout.
ENV MEDR2_STORAGE_ROOT=/data/storage \
    WEB_CONCURRENCY=3 \
    GUNICORN_CMD_ARGS="--timeout 300 --graceful-timeout 30 --worker-tmp-dir /dev/shm --access-logfile -"

VOLUME ["/data/storage"]

# Numeric, so runtimes that enforce "non-root" (e.g. Kubernetes runAsNonRoot) can verify it.
USER 10001:10001
EXPOSE 8000

CMD ["gunicorn", "medr2.wsgi:application", "--bind", "0.0.0.0:8000"]
