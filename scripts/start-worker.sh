#!/usr/bin/env bash
# Start N Locust worker processes on this machine for a specload master at MASTER_HOST.
#
#   scripts/start-worker.sh MASTER_HOST [N]      (N defaults to the number of cores)
#
# A sweep starts a fresh master for every arm and repeat, and workers exit when their
# master quits, so this script restarts them in a loop until you press Ctrl-C. The
# master port comes from MASTER_PORT (default 5557, the scenario's
# distributed.master_bind_port); PYTHON selects the interpreter that has specload
# installed (default: python3 on PATH). API keys are read by the workers from the
# environment variable the scenario names (request.api_key_env), so export it here too.
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 ]]; then
    echo "usage: $0 MASTER_HOST [N]" >&2
    exit 2
fi
MASTER_HOST=$1
N=${2:-$(nproc)}
MASTER_PORT=${MASTER_PORT:-5557}
PYTHON=${PYTHON:-python3}
if ! [[ $N =~ ^[1-9][0-9]*$ ]]; then
    echo "$0: N must be a positive whole number, got '$N'" >&2
    exit 2
fi
LOCUSTFILE=$("$PYTHON" -c 'import pathlib, specload
print(pathlib.Path(specload.__file__).resolve().parent / "loadgen" / "locustfile_ladder.py")')

child=0
stop() {
    trap - INT TERM
    if [[ $child -ne 0 ]]; then
        kill -INT "$child" 2>/dev/null || true
        wait "$child" 2>/dev/null || true
    fi
    exit 0
}
trap stop INT TERM

echo "specload workers: $N process(es) for master $MASTER_HOST:$MASTER_PORT (Ctrl-C to stop)"
while true; do
    "$PYTHON" -m locust -f "$LOCUSTFILE" --worker --master-host "$MASTER_HOST" \
        --master-port "$MASTER_PORT" --processes "$N" &
    child=$!
    wait "$child" || true
    child=0
    sleep 1
done
