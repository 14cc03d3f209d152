#!/bin/sh
# The specload image's entrypoint (see Dockerfile, docs/distributed.md).
#
# A subcommand runs specload: `worker MASTER_HOST --processes N`, `sweep FILE --out DIR`,
# `report DIR`; no argument prints specload's help. Options run Locust itself, as the
# Locust Kubernetes operator starts its pods (`--master ARGS`, `--worker --master-host SVC
# ARGS`: locustio/k8s-operator, locust_operator/objects.py), with specload's ladder
# locustfile unless `-f`, LOCUST_LOCUSTFILE or a ./locustfile.py (the operator mounts its
# locustfile there) names another.
set -eu
case "${1:-}" in
    "")
        exec specload --help
        ;;
    -*)
        if [ -z "${LOCUST_LOCUSTFILE:-}" ] && [ ! -e locustfile.py ]; then
            LOCUST_LOCUSTFILE=$(python -c \
                'from specload.runner.locust_proc import LOCUSTFILE; print(LOCUSTFILE)')
            export LOCUST_LOCUSTFILE
        fi
        exec locust "$@"
        ;;
    *)
        exec specload "$@"
        ;;
esac
