"""Find the run files behind a path and read them into DataFrames.

A path given to `specload report` is one of: a sweep folder (its `manifest.json` names
the arms, their roles, how each was served and its repeat folders, each holding the
prefix `locust`); a scenario
folder of such runs (the latest, by its UTC timestamp name, is reported); a folder
without a manifest (every `*_requests.csv` below it is one arm, `<arm>/rep-N/` folders
are repeats); or a single Locust `--csv` prefix from a web-UI or plain `locust` run.
Discovery returns a `RunSource` (what to read); `read_rep` reads one prefix's files,
with every load process's times moved to the master's clock (`report/clock_align.py`).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_type_hints

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from specload.engines import resolve_engine
from specload.errors import UserError
from specload.report import clock_align
from specload.runfiles import records
from specload.runfiles.manifest import MANIFEST, Manifest, RepEntry, read_manifest

SWEEP_PREFIX_NAME = "locust"
_REP_DIR = re.compile(r"^rep-(\d+)$")

# The request record's columns the report reads, typed by the record's own fields
# (`records.RequestRecord`): a new field is read without a line here. Whole ints and flags
# are ints; floats, and ints that may be missing, floats; text is text, except the few
# columns of few values (categorical) and the long lists (kept in Arrow).
_UNREAD = ("request_id", "user_id", "seq", "reply_text")
_ARROW_COLS = ("chunk_gaps_us", "chunk_tokens", "reply_blocks")
_CATEGORY_COLS = ("client_id", "category")  # few values, many rows


def _typed_columns() -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """The record's read columns as (floats, ints, texts), in the record's order."""
    hints = get_type_hints(records.RequestRecord)
    read = [n for n in records.REQUEST_COLUMNS if n not in (*_UNREAD, *_CATEGORY_COLS)]
    ints = tuple(n for n in read if hints[n] in (int, bool))
    texts = tuple(n for n in read if hints[n] is str)
    return tuple(n for n in read if n not in (*ints, *texts)), ints, texts


_FLOAT_COLS, _INT_COLS, _STR_COLS = _typed_columns()
# Cells read as missing: pandas' default list, so old and new readers agree.
_NULL_VALUES = ["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan",
                "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a",
                "nan", "null"]


@dataclass(frozen=True, slots=True)
class RepSource:
    """One repeat of one arm: the Locust `--csv` prefix its files share."""

    rep: int
    prefix: Path
    done: bool = False  # the sweep finished it: its files are written no more


@dataclass(slots=True)
class ArmSource:
    """One arm of a run: how it was served and where its repeats are."""

    name: str
    role: str  # "spec_on", "spec_off" or "other"
    spec: str | None = None
    kind: str | None = None
    k: int | None = None
    reps: list[RepSource] = field(default_factory=list)
    acceptance: float | None = None  # the mean acceptance length its server was set to
    context: str | None = None  # the prompt length its requests were sent with (`contexts`)
    engine: str | None = None  # "vllm", "sglang", ... (specload.engines)
    engine_version: str | None = None  # as the scenario names it
    engine_source: str = "unknown"  # how the engine is known
    command: str | None = None  # the start command of a `command:` arm
    profile: str | None = None  # the simulator profile of a `sim:` arm


@dataclass(slots=True)
class RunSource:
    """Everything discovery learned: arms, the output folder and the manifest, if any."""

    out_dir: Path
    arms: list[ArmSource]
    manifest: Manifest | None = None
    notes: list[str] = field(default_factory=list)  # reps that have no data, etc.


@dataclass(slots=True)
class RepData:
    """The files of one prefix; optional files are None when absent or empty."""

    requests: pd.DataFrame
    rungs: pd.DataFrame | None
    server: pd.DataFrame | None
    client: pd.DataFrame | None
    history: pd.DataFrame | None
    clock: pd.DataFrame | None = None  # workers' clock rounds (distributed runs)
    events: pd.DataFrame | None = None  # what the master noticed about its workers


def role_from_name(name: str) -> str:
    """Guess an arm's role from its name: a word "off"/"nospec"/"baseline" or "on"."""
    words = set(re.split(r"[^a-z0-9]+", name.lower()))
    if words & {"off", "nospec", "baseline", "nospeculative"}:
        return "spec_off"
    if words & {"on", "spec", "eagle", "eagle3", "mtp", "ngram"}:
        return "spec_on"
    return "other"


def has_requests(prefix: Path) -> bool:
    path = Path(f"{prefix}{records.REQUESTS_SUFFIX}")
    return path.is_file() and path.stat().st_size > 0


def discover(path: str | Path) -> RunSource:
    """What to read for `path`; raises UserError with a one-line reason if nothing is there."""
    p = Path(path)
    text = str(path)
    if text.endswith(records.REQUESTS_SUFFIX) and p.is_file():
        p = Path(text[: -len(records.REQUESTS_SUFFIX)])
    elif p.is_dir() and (p / MANIFEST).is_file():
        return _from_manifest(p)
    elif p.is_dir():
        runs = sorted(d for d in p.iterdir() if (d / MANIFEST).is_file())
        if runs:  # a scenario folder of timestamped runs: the latest one
            return _from_manifest(runs[-1])
        return _from_folder(p)
    if has_requests(p):
        name = p.name or "run"
        arm = ArmSource(name, role_from_name(name), reps=[RepSource(1, p)])
        return RunSource(p.parent, [arm])
    if not p.exists() and not p.parent.is_dir():
        raise UserError(f"{path}: no such folder or Locust --csv prefix")
    raise UserError(
        f"{path}: no run data (expected a sweep folder with {MANIFEST}, a folder with "
        f"*{records.REQUESTS_SUFFIX} files, or a Locust --csv prefix P with "
        f"P{records.REQUESTS_SUFFIX})"
    )


def _scenario_arm(manifest: Manifest, name: str) -> dict[str, Any]:
    arms = manifest.scenario.get("arms")
    found = (a for a in arms if isinstance(a, dict) and a.get("name") == name) \
        if isinstance(arms, list) else iter(())
    return next(found, {})


def _from_manifest(run_dir: Path) -> RunSource:
    manifest = read_manifest(run_dir)
    arms: list[ArmSource] = []
    notes: list[str] = []
    for entry in manifest.arms:
        planned = _scenario_arm(manifest, entry.name)
        engine, engine_source = resolve_engine(planned, entry.engine)
        command = planned.get("command")
        arm = ArmSource(name=entry.name, role=entry.role or role_from_name(entry.name),
                        spec=entry.spec, kind=entry.kind, k=entry.k, engine=engine,
                        engine_source=engine_source,
                        command=command.get("start") if isinstance(command, dict) else None,
                        profile=entry.profile, acceptance=entry.acceptance,
                        context=entry.context, engine_version=planned.get("engine_version"))
        for rep in entry.reps:
            prefix = run_dir / rep.dir / SWEEP_PREFIX_NAME
            if has_requests(prefix):
                arm.reps.append(RepSource(rep.rep, prefix, done=rep.status == "done"))
                notes += _incomplete(entry.name, rep, prefix, len(entry.ladder))
            elif not (entry.by_hand and rep.status == "pending"):  # waits for the user
                why = rep.error or rep.status
                notes.append(f"arm {entry.name} rep {rep.rep} has no request records ({why})")
        if arm.reps:
            arms.append(arm)
    if not arms:
        raise UserError(f"{run_dir}: no arm has request records yet (see {MANIFEST})")
    if manifest.status in ("running", "interrupted"):
        notes.append(f"the sweep did not finish ({_STOPPED[manifest.status]}): resume it with "
                     f"`specload sweep --resume {run_dir}`")
    return RunSource(run_dir, arms, manifest, notes)


_STOPPED = {"running": "stopped while running: killed, or still running",
            "interrupted": "interrupted", "failed": "failed", "pending": "not started"}


def _incomplete(arm: str, rep: RepEntry, prefix: Path, planned: int) -> list[str]:
    """What a repeat with records lacks: rungs not run, a row cut short by a kill."""
    notes = []
    if rep.status != "done":
        rungs = records.rungs_path(prefix)
        done = (rungs.read_bytes()[:records.complete_length(rungs)].count(b"\n") - 1
                if rungs.is_file() else 0)
        why = rep.error or _STOPPED.get(rep.status, rep.status)
        of = f" of {planned}" if planned else ""
        notes.append(f"arm {arm} rep {rep.rep}: {max(done, 0)}{of} rungs finished ({why})")
    path = Path(f"{prefix}{records.REQUESTS_SUFFIX}")
    if records.complete_length(path) < path.stat().st_size:
        notes.append(f"arm {arm} rep {rep.rep}: the last row of {path.name} was cut short "
                     "as its writer was killed; it is left out")
    return notes


def _from_folder(folder: Path) -> RunSource:
    found = sorted(folder.rglob(f"*{records.REQUESTS_SUFFIX}"))
    if not found:
        raise UserError(
            f"{folder}: empty run folder (no {MANIFEST} and no *{records.REQUESTS_SUFFIX})"
        )
    arms: dict[str, ArmSource] = {}
    for path in found:
        prefix = Path(str(path)[: -len(records.REQUESTS_SUFFIX)])
        rel = prefix.parent.relative_to(folder)
        rep = 1
        match = _REP_DIR.match(rel.name)
        if match:
            rep, rel = int(match.group(1)), rel.parent
        name = rel.as_posix() if rel.parts else prefix.name
        if rel.parts and prefix.name != SWEEP_PREFIX_NAME:
            name = f"{name}/{prefix.name}"
        arm = arms.setdefault(name, ArmSource(name, role_from_name(name)))
        arm.reps.append(RepSource(rep, prefix))
    return RunSource(folder, list(arms.values()))


def _read_optional(path: Path, **kwargs: Any) -> pd.DataFrame | None:
    if not path.is_file() or path.stat().st_size == 0:
        return None
    try:
        df = pd.read_csv(_complete_lines(path), **kwargs)
    except pd.errors.EmptyDataError:
        return None
    except (ValueError, pd.errors.ParserError) as exc:
        raise UserError(f"{path} cannot be read as CSV: {exc}") from exc
    return df if len(df) else None


def _complete_lines(path: Path) -> Path | pa.BufferReader:
    """The file to read: itself, or its complete lines only when its last row was cut
    short (`records.complete_length`), mapped, not copied."""
    whole = records.complete_length(path)
    if whole == path.stat().st_size:
        return path
    return pa.BufferReader(pa.memory_map(str(path)).read_buffer(whole))


def _header(path: Path) -> list[str]:
    try:
        with path.open(newline="", encoding="utf-8-sig") as f:
            return next(csv.reader(f), [])
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise UserError(f"{path} cannot be read: {exc}") from exc


def read_requests(prefix: Path, rounds: pd.DataFrame | None = None) -> pd.DataFrame:
    """The request records of a prefix, with the types the report needs, their times on
    the master's clock (by its clock `rounds`; read from the prefix when not given).

    Read by Arrow's multithreaded CSV reader, only the columns the report uses. The
    chunk columns stay Arrow strings (never a Python object per row); `client_id` is a
    categorical; the other text columns are plain Python strings, empty where the file
    has none.
    """
    path = Path(f"{prefix}{records.REQUESTS_SUFFIX}")
    header = _header(path)
    missing = {"start", "end", "output_tokens", "chunk_gaps_us"} - set(header)
    if missing:
        raise UserError(f"{path} lacks the column(s) {', '.join(sorted(missing))}")
    wanted = [c for c in (*_FLOAT_COLS, *_INT_COLS, *_STR_COLS, *_CATEGORY_COLS)
              if c in header]
    types = {c: pa.float64() for c in (*_FLOAT_COLS, *_INT_COLS)}  # ints may be empty
    types.update({c: pa.string() for c in (*_STR_COLS, *_CATEGORY_COLS)})
    try:
        table = pa_csv.read_csv(
            _complete_lines(path),
            parse_options=pa_csv.ParseOptions(newlines_in_values=True),
            convert_options=pa_csv.ConvertOptions(
                include_columns=wanted, column_types={c: types[c] for c in wanted},
                null_values=_NULL_VALUES, strings_can_be_null=True),
        )
    except (OSError, pa.ArrowException) as exc:
        raise UserError(f"{path} cannot be read as a requests file: {exc}") from exc
    if rounds is None:
        rounds = read_clock(prefix)
    return clock_align.align(_frame(table), rounds, _ALIGNED)


# the request times that `clock_align.align` puts on the master's clock
_ALIGNED = ("start", "end", "scheduled")


def _frame(table: pa.Table) -> pd.DataFrame:
    """The report's requests frame from an Arrow table of (some of) the record columns."""
    have = set(table.column_names)
    valid = pc.and_(pc.is_valid(table["start"]), pc.is_valid(table["end"]))
    if not pc.all(valid).as_py():
        table = table.filter(valid)
    df = pd.DataFrame(index=pd.RangeIndex(table.num_rows))
    for col in _FLOAT_COLS:
        df[col] = table[col].to_numpy() if col in have else float("nan")
    df["backoff_ms"] = df["backoff_ms"].fillna(0.0)
    for col in _INT_COLS:
        df[col] = pc.fill_null(table[col], 0).to_numpy().astype("int64") if col in have else 0
    for col in _STR_COLS:
        text = pc.fill_null(table[col], "") if col in have else pa.repeat("", table.num_rows)
        df[col] = pd.Series(pd.arrays.ArrowExtensionArray(text)) if col in _ARROW_COLS else (
            text.to_numpy(zero_copy_only=False).astype(object))
    for col in _CATEGORY_COLS:
        text = pc.fill_null(table[col], "") if col in have else pa.repeat("", table.num_rows)
        df[col] = text.dictionary_encode().to_pandas()
    return df


def frame_from_rows(rows: list[list[object]],
                    rounds: pd.DataFrame | None = None) -> pd.DataFrame:
    """The requests frame of record rows held in memory (`RequestRecord.row()` lists),
    typed exactly as `read_requests` types the same rows read from a file, and put on
    the master's clock with the clock `rounds` known so far (`clock_from_rows`)."""
    index = {name: i for i, name in enumerate(records.REQUEST_COLUMNS)}

    def column(name: str, kind: pa.DataType) -> pa.Array:
        i = index[name]
        values = [None if r[i] == "" else r[i] for r in rows]
        if kind == pa.string():
            values = [None if v is None else str(v) for v in values]
        return pa.array(values, type=kind)

    table = pa.table(
        {c: column(c, pa.float64()) for c in (*_FLOAT_COLS, *_INT_COLS)}
        | {c: column(c, pa.string()) for c in (*_STR_COLS, *_CATEGORY_COLS)})
    return clock_align.align(_frame(table), rounds, _ALIGNED)


def clock_from_rows(rows: list[list[object]]) -> pd.DataFrame | None:
    """Clock rounds held in memory, as the master writes them to `<prefix>_clock.csv`,
    typed as `read_clock` reads them."""
    if not rows:
        return None
    frame = pd.DataFrame(rows, columns=list(records.CLOCK_COLUMNS))
    frame["client_id"] = frame["client_id"].astype(str)
    for col in ("ts", "offset_s", "rtt_s"):
        frame[col] = frame[col].astype(float)
    return frame


def read_clock(prefix: Path) -> pd.DataFrame | None:
    """The workers' clock rounds of a prefix (`records.CLOCK_COLUMNS`), if any."""
    return _read_optional(Path(f"{prefix}{records.CLOCK_SUFFIX}"), dtype={"client_id": str})


def read_events(prefix: Path) -> pd.DataFrame | None:
    """What the master noticed about its workers (`records.EVENTS_COLUMNS`), if anything."""
    return _read_optional(Path(f"{prefix}{records.EVENTS_SUFFIX}"),
                          dtype={"client_id": str, "detail": str})


def read_rep(prefix: Path) -> RepData:
    """Read every file a prefix has; only the requests file is required."""
    rounds = read_clock(prefix)
    client = _read_optional(Path(f"{prefix}{records.CLIENT_STATS_SUFFIX}"))
    if client is not None:
        client = clock_align.align(client, rounds, ("ts",))
    return RepData(
        requests=read_requests(prefix, rounds),
        rungs=_read_optional(records.rungs_path(prefix)),
        server=_read_optional(Path(f"{prefix}{records.SERVER_METRICS_SUFFIX}")),
        client=client,
        history=_read_optional(Path(f"{prefix}{records.LOCUST_HISTORY_SUFFIX}")),
        clock=rounds,
        events=read_events(prefix),
    )
