# syntax=docker/dockerfile:1
# specload on the official Locust image. One image for every role:
#   docker run IMAGE worker MASTER_HOST --processes 4     a load machine (`specload worker`)
#   docker run -v "$PWD:/work" IMAGE sweep /work/s.yaml --out /work/reports
#   docker run IMAGE --master ...                         Locust itself (the k8s operator)
# Build and push: docs/distributed.md. No argument prints specload's help.
#
# The base is the Locust release specload is tested with (`pip show locust` in the dev
# environment). That image (locustio/locust Dockerfile.ci) has Python and Locust in the
# venv /opt/venv, owned by the unprivileged user `locust` (uid 1000), who also installs
# and runs specload here. For reproducible builds pin its digest as well:
#   docker build --build-arg LOCUST_VERSION=2.47.0@sha256:<digest> ...
ARG LOCUST_VERSION=2.47.0

FROM locustio/locust:${LOCUST_VERSION} AS wheel
# Into the user's home: the build writes next to the sources, as `locust`.
COPY --chown=locust:locust pyproject.toml README.md /home/locust/specload/
COPY --chown=locust:locust src /home/locust/specload/src
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /home/locust/dist /home/locust/specload

FROM locustio/locust:${LOCUST_VERSION}
ARG LOCUST_VERSION
# `locust==` keeps the base image's Locust: specload's other dependencies are added to it.
RUN --mount=type=bind,from=wheel,source=/home/locust/dist,target=/tmp/dist \
    pip install --no-cache-dir "locust==${LOCUST_VERSION%%@*}" /tmp/dist/specload-*.whl \
    && specload --version
COPY --chmod=0755 deploy/docker/entrypoint.sh /usr/local/bin/specload-entrypoint
# `locust`, by number, so that Kubernetes' runAsNonRoot can check it.
USER 1000:1000
WORKDIR /home/locust
# 5557: the Locust master's port (workers connect to it); 8089: its web UI; 9464: a
# sweep's live figures for Prometheus (`specload sweep --metrics-port 9464`).
EXPOSE 5557 8089 9464
ENTRYPOINT ["specload-entrypoint"]
