# syntax=docker/dockerfile:1
# scorecar: the OpenTelemetry trace-scoring sidecar.
#
#   docker build -t scorecar .
#   docker run --read-only --user 10001:10001 -v scorecar-data:/var/lib/scorecar \
#     -v $PWD/scorecar.yaml:/etc/scorecar/config.yaml:ro -p 4317:4317 -p 4318:4318 -p 9464:9464 \
#     scorecar -c /etc/scorecar/config.yaml
#
# Runtime dependencies come from requirements/runtime.txt (exact versions, the whole closure,
# installed without resolution and checked with `pip check`); scorecar itself is installed from
# this source tree without dependencies. tests/deploy/test_image_layout.py runs these RUN steps
# in a temporary root and starts `scorecar serve` from the result as user 10001 with the root
# filesystem read-only, so keep every step a plain shell command.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/scorecar
COPY requirements/runtime.txt /src/requirements/runtime.txt
RUN --mount=type=cache,target=/root/.cache/pip \
    /opt/scorecar/bin/pip install --no-deps --only-binary=:all: -r /src/requirements/runtime.txt
COPY pyproject.toml README.md /src/
COPY collector /src/collector
COPY transforms /src/transforms
COPY scorers /src/scorers
COPY exporters /src/exporters
RUN --mount=type=cache,target=/root/.cache/pip \
    /opt/scorecar/bin/pip install --no-deps /src && /opt/scorecar/bin/pip check

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="scorecar" \
      org.opencontainers.image.description="OpenTelemetry trace-scoring sidecar for LLM agents" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /opt/scorecar /opt/scorecar
RUN groupadd --system --gid 10001 scorecar \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /var/lib/scorecar \
       --shell /usr/sbin/nologin scorecar \
    && mkdir -p /var/lib/scorecar /etc/scorecar \
    && chown 10001:10001 /var/lib/scorecar
# The queue, the write-ahead span log and every temporary file (Python's and SQLite's) live on
# the data volume; nothing else is written, so the root filesystem can be read-only.
ENV PATH=/opt/scorecar/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    SCORECAR_STORAGE__PATH=/var/lib/scorecar \
    TMPDIR=/var/lib/scorecar \
    HOME=/var/lib/scorecar
VOLUME ["/var/lib/scorecar"]
WORKDIR /opt/scorecar
USER 10001:10001
# OTLP/gRPC, OTLP/HTTP, /metrics + /healthz + /readyz
EXPOSE 4317 4318 9464
ENTRYPOINT ["/opt/scorecar/bin/scorecar", "serve"]
CMD ["--log-format", "json"]
