#!/usr/bin/env bash
# Old entry point, kept so that `MASTER_PORT=5557 scripts/start-worker.sh MASTER_HOST [N]` still
# works. Use `specload worker MASTER_HOST --port 5557 --processes N` (docs/distributed.md).
exec "${PYTHON:-python3}" -m specload.cli worker "${1:?usage: $0 MASTER_HOST [N]}" --port "${MASTER_PORT:-5557}" ${2:+--processes "$2"}
