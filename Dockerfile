# syntax=docker/dockerfile:1.7
# One image for every Roomtax service. The command picks the service and the role:
#   python -m <registry|filing|assessment|distribution> migrate|api|worker|relay|consumer
# (see docker-compose.yml and deploy/k8s/). The workspace members are installed
# editable on purpose: each service finds its Alembic tree next to its package
# (services/<svc>/migrations), which a wheel install would not ship.

ARG PYTHON_IMAGE=python:3.11-slim
# The uv that wrote uv.lock (lock format revision 5).
ARG UV_VERSION=0.13.9

FROM ghcr.io/astral-sh/uv:${UV_VERSION} AS uv

FROM ${PYTHON_IMAGE} AS build
COPY --from=uv /uv /uvx /usr/local/bin/
ENV UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PYTHON_DOWNLOADS=never \
    UV_PYTHON=/usr/local/bin/python3.11 \
    UV_PROJECT_ENVIRONMENT=/app/.venv
WORKDIR /app

# Third-party dependencies first: this layer changes only with uv.lock.
COPY pyproject.toml uv.lock ./
COPY libs/taxcore/pyproject.toml libs/taxcore/pyproject.toml
COPY libs/servicekit/pyproject.toml libs/servicekit/pyproject.toml
COPY services/registry/pyproject.toml services/registry/pyproject.toml
COPY services/filing/pyproject.toml services/filing/pyproject.toml
COPY services/assessment/pyproject.toml services/assessment/pyproject.toml
COPY services/distribution/pyproject.toml services/distribution/pyproject.toml
COPY services/notify/pyproject.toml services/notify/pyproject.toml
COPY services/web/pyproject.toml services/web/pyproject.toml
COPY clients/cli/pyproject.toml clients/cli/pyproject.toml
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --frozen --no-dev --no-install-workspace

# Then the code (libraries, services with their migrations, the topic list).
COPY libs libs
COPY services services
COPY clients clients
COPY deploy/topics.yaml deploy/topics.yaml
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --frozen --no-dev \
 && python -m compileall -q libs services


FROM ${PYTHON_IMAGE} AS runtime
ENV PATH=/app/.venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# WeasyPrint (official documents, servicekit.documents) needs Pango and a font.
RUN apt-get update \
 && apt-get install -y --no-install-recommends libpango-1.0-0 libpangoft2-1.0-0 fonts-dejavu-core \
 && rm -rf /var/lib/apt/lists/*
RUN groupadd --system --gid 10001 roomtax \
 && useradd --system --uid 10001 --gid roomtax --no-create-home --home-dir /nonexistent roomtax
WORKDIR /app
COPY --from=build --chown=root:root /app /app
# Numeric so that Kubernetes' runAsNonRoot can verify it.
USER 10001:10001
EXPOSE 8000 8001 8002 8003 8004 8005
CMD ["python", "-m", "registry", "--help"]
