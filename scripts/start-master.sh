#!/usr/bin/env bash
# Start a Locust master with the ladder shape and its web UI, for workers on other machines.
#
#   scripts/start-master.sh SERVER_URL [extra locust options, e.g. --ladder 1,10,100,250]
#
# The web UI listens on 127.0.0.1:8089 (set WEB_HOST to change it) and shows the ladder,
# both windows and the request options as custom parameters; press Start to run the
# ladder. Workers connect to MASTER_BIND_HOST:MASTER_PORT (defaults 127.0.0.1:5557; use
# MASTER_BIND_HOST=0.0.0.0 to accept workers from other machines, on a trusted network
# only) and are started with `specload worker THIS_HOST --port 5557 --processes N`.
# Results go to reports/manual/<UTC timestamp>/locust_* unless you pass --csv.
# For scripted, reproducible sweeps use `specload sweep` with `distributed:` instead.
set -euo pipefail

if [[ $# -lt 1 ]]; then
    echo "usage: $0 SERVER_URL [extra locust options]" >&2
    exit 2
fi
HOST_URL=$1
shift
PYTHON=${PYTHON:-python3}
MASTER_BIND_HOST=${MASTER_BIND_HOST:-127.0.0.1}
MASTER_PORT=${MASTER_PORT:-5557}
WEB_HOST=${WEB_HOST:-127.0.0.1}
LOCUSTFILE=$("$PYTHON" -c 'import pathlib, specload
print(pathlib.Path(specload.__file__).resolve().parent / "loadgen" / "locustfile_ladder.py")')
RUN_DIR="reports/manual/$(date -u +%Y%m%dT%H%M%SZ)"
CSV_ARGS=(--csv "$RUN_DIR/locust" --csv-full-history)
for arg in "$@"; do
    if [[ $arg == --csv || $arg == --csv=* ]]; then CSV_ARGS=(); fi
done
if [[ ${#CSV_ARGS[@]} -gt 0 ]]; then mkdir -p "$RUN_DIR"; fi

exec "$PYTHON" -m locust -f "$LOCUSTFILE" --master --host "$HOST_URL" \
    --master-bind-host "$MASTER_BIND_HOST" --master-bind-port "$MASTER_PORT" \
    --web-host "$WEB_HOST" "${CSV_ARGS[@]}" "$@"
