# The kuota image: `make image` (docker build -t kuota:<version> .).
#
# Stage 1 builds a wheel of kuota and of every runtime dependency at the versions
# pyproject.toml pins, the `kubernetes` extra included (the image runs the operator);
# stage 2 installs only those wheels into a slim Python, without
# compilers, pip caches, tests or the dev tools, and runs as an unprivileged user (the
# UID the manifests' securityContext names). `kuota` is the entrypoint: the operator
# Deployment runs `kuota operator ...`, the extender `kuota extender ...`, a Redis pool
# `kuota scheduler` / `kuota worker`.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY quota ./quota
COPY queueing ./queueing
COPY admission ./admission
COPY placement ./placement
COPY multicluster ./multicluster
COPY kuota ./kuota
RUN pip wheel --no-cache-dir --wheel-dir /wheels '.[kubernetes]'

FROM ${PYTHON_IMAGE}
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index --find-links /wheels 'kuota[kubernetes]' \
    && rm -rf /wheels \
    && useradd --uid 65532 --user-group --no-create-home --shell /usr/sbin/nologin kuota
USER 65532:65532
ENTRYPOINT ["kuota"]
CMD ["--help"]
