"""The `specload` command line: parses arguments and calls one function per subcommand.

Each subcommand's work lives in its own module and is imported only when that
subcommand runs, so `specload --help` stays fast and `specload report` never imports
Locust. Errors that are the user's (bad scenario, unreachable server, missing folder)
surface as one line on stderr and a non-zero exit status, never as a traceback. Output
piped into a reader that stops early (`specload report RUN | head`) ends the command
quietly with the status a shell gives a process killed by SIGPIPE.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from specload import __version__, engines
from specload.config.settings import Simulator, add_options, problems
from specload.errors import UserError
from specload.host import stdout_pipe
from specload.ladder.rungs import DEFAULT_LADDER, LadderError, parse_ladder, validate_ladder


class _Parser(argparse.ArgumentParser):
    """Usage mistakes are one line too (with where to find the usage), exit status 2."""

    def error(self, message: str) -> NoReturn:
        sub = self.prog.removeprefix("specload").strip()
        where = f"{sub}: " if sub else ""
        self.exit(2, f"specload: error: {where}{message} (see {self.prog} --help)\n")


def _add_adaptive_schedule(p: argparse.ArgumentParser) -> None:
    """The simulated engine's adaptive schedule as text, for `sim` and `sim-curve` (a
    scenario's `adaptive_schedule` is its JSON form)."""
    p.add_argument("--adaptive-schedule", default=None, metavar="SCHEDULE",
                   help="--spec schedule: k per batch size instead of the profile's "
                   "speculative.adaptive, as 1-15:3,16-:0 or JSON [[1, 15, 3], "
                   "[16, 100000, 0]] (k = 0: no drafting, the drafter's sync cost stays)")


def _add_sim(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sim",
        help="serve a simulated OpenAI-compatible inference server",
        description="Serve a simulated inference server (continuous batching and "
        "speculative decoding on a roofline cost model) until SIGINT/SIGTERM.",
    )
    add_options(p, Simulator)
    _add_adaptive_schedule(p)
    p.add_argument("--host", default="127.0.0.1", help="address to listen on")
    p.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    p.add_argument("--model-name", default=None, help="model id served (default: profile's)")
    p.add_argument("--trace", default=None, help="write ground-truth JSON lines to FILE")
    p.add_argument("--metrics", action="store_true",
                   help="serve /metrics where the engine needs a flag for it (llama.cpp's "
                   "--metrics; without it llamacpp answers 501)")
    p.add_argument("--api-key", default=None, metavar="KEY",
                   help="require this key on the routes the flavor's engine guards "
                   "(vllm: /v1/*; llamacpp: all but /health, /v1/health)")
    p.add_argument("--api-key-env", default=None, metavar="NAME",
                   help="like --api-key, with the key read from this environment variable "
                   "(keeps it off the command line)")
    p.add_argument("--connection-close", action="store_true",
                   help="streamed responses say `Connection: close` and end the connection")
    p.set_defaults(func=_run_sim)


def _ladder(text: str) -> list[int]:
    """`--ladder 1,2,5`: increasing positive whole numbers, else an argparse error."""
    try:
        users = parse_ladder(text)
    except LadderError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    problems = validate_ladder(users)
    if problems:
        raise argparse.ArgumentTypeError("; ".join(problems))
    return users


def _add_sim_curve(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sim-curve",
        help="predict a simulated server's steady-state tok/s per concurrency (no sleeping)",
    )
    add_options(p, Simulator, only=("profile", "spec", "k", "seed", "acceptance_length",
                                    "flavor"))
    _add_adaptive_schedule(p)
    p.add_argument("--ladder", type=_ladder, default=list(DEFAULT_LADDER),
                   help="comma-separated increasing concurrencies (default: %(default)s)")
    p.add_argument("--max-tokens", type=int, default=None,
                   help="output tokens per request (default: the profile's workload)")
    p.add_argument("--prompt-tokens", type=int, default=None,
                   help="prompt tokens per request (default: the profile's workload)")
    p.add_argument("--shared-prefix-tokens", type=int, default=None,
                   help="of them, the same for every request, kept by the prefix cache "
                   "(default: the profile's workload)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=_run_sim_curve)


def _add_sim_fit(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sim-fit",
        help="fit a simulator profile to a sweep of a real server",
        description="Fit a simulator profile's free parameters to a sweep folder (client "
        "tok/s per rung, and the server's running requests and acceptance where /metrics "
        "was sampled), print the residual per rung and write the fitted profile YAML.",
    )
    p.add_argument("run_dir", nargs="+",
                   help="a sweep folder of the server to stand in for; several (repeats "
                   "of one scenario) are fitted by their mean per rung")
    p.add_argument("--out", required=True, help="profile YAML to write")
    p.add_argument("--base", default="seed-glm",
                   help="built-in profile name or YAML path to start from (default: %(default)s)")
    p.add_argument("--free", default=None, metavar="PARAM,...",
                   help="parameters to fit, e.g. hardware.eta_mem,overheads.step_s "
                   "(default: achieved bandwidth, host overheads, drafter costs)")
    p.add_argument("--prompt-tokens", type=int, default=None,
                   help="prompt length of the run's requests (default: their mean)")
    p.add_argument("--output-tokens", type=int, default=None,
                   help="output length of the run's requests (default: their mean)")
    p.add_argument("--max-evals", type=int, default=400,
                   help="simulated candidate profiles at most (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="seed of the fit's simulations")
    p.set_defaults(func=_run_sim_fit)


def _add_sweep(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep",
        help="run every arm of a scenario through the concurrency ladder, then report",
    )
    p.add_argument("scenario", nargs="?", default=None,
                   help="scenario YAML file (not needed with --resume)")
    p.add_argument("--out", default=None, help="output root (default: reports/)")
    p.add_argument("--processes", type=int, default=None,
                   help="Locust load processes on this machine (-1: one per core)")
    p.add_argument("--arms", default=None, help="comma-separated arm names to run")
    p.add_argument("--repeats", type=int, default=None,
                   help="repeats of every arm (default: the scenario's `repeats`)")
    p.add_argument("--resume", default=None, metavar="RUN_DIR",
                   help="complete an interrupted run folder")
    p.add_argument("--dry-run", action="store_true", help="validate and print the plan")
    p.add_argument("--metrics-port", type=int, default=None, metavar="PORT",
                   help="serve the live figures for Prometheus at /metrics on PORT "
                        "(0: any free port, printed)")
    p.add_argument("--metrics-host", default="127.0.0.1",
                   help="the address --metrics-port listens on")
    p.set_defaults(func=_run_sweep)


def _add_worker(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "worker",
        help="run Locust workers on a load machine for a distributed sweep's master",
        description="Run Locust worker processes for the master of a distributed sweep "
        "(scenario key `distributed`) and start them again for every arm and repeat, "
        "until SIGINT/SIGTERM.",
    )
    p.add_argument("master_host", metavar="MASTER_HOST",
                   help="host name or address of the machine running `specload sweep`")
    p.add_argument("--port", type=int, default=5557,
                   help="the master's port: the scenario's distributed.master_bind_port "
                   "(default: %(default)s)")
    p.add_argument("--processes", type=int, default=None,
                   help="worker processes on this machine, one per core "
                   "(default: the cores this process may use)")
    p.add_argument("--loglevel", default="WARNING",
                   help="Locust's log level in the workers (default: %(default)s; INFO also "
                   "shows attempts to reach the master)")
    p.set_defaults(func=_run_worker)


def _add_report(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="build summary.csv, summary.json and report.html from a run folder",
    )
    p.add_argument("run_dir", help="a sweep folder, or a Locust --csv prefix")
    p.set_defaults(func=_run_report)


def _add_compare(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help="overlay several runs' tok/s, speedups and C* (e.g. before and after an engine "
        "upgrade): compare.html and compare.csv",
        description="Compare runs: every other run against the first (the baseline), per "
        "rung, with the noise band of each difference. Reads the runs' files only.",
    )
    p.add_argument("runs", nargs="+", metavar="RUN",
                   help="sweep folders (or anything `specload report` reads); the first is "
                   "the baseline")
    p.add_argument("--out", default=None,
                   help="output folder (default: reports/compare/<UTC timestamp>)")
    p.add_argument("--labels", default=None,
                   help="comma-separated names for the runs (default: their folder names)")
    p.set_defaults(func=_run_compare)


def _add_engines(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "engines",
        help="list the engines this installation knows: built in, and those installed "
        "packages add (the `specload.engines` entry point group)")
    p.set_defaults(func=_run_engines)


def _entry(module: str) -> Callable[[argparse.Namespace], int]:
    """A subcommand that imports `module` only when it runs and calls its `main(args)`."""

    def run(args: argparse.Namespace) -> int:
        return importlib.import_module(module).main(args)

    return run


def _run_sim(args: argparse.Namespace) -> int:
    """`specload sim`, once the simulator's declared settings hold (`settings.Simulator`)."""
    found = problems(args, Simulator)
    if args.flavor not in engines.sim_flavors():
        found.append(f"--flavor must be one of {', '.join(engines.sim_flavors())}, got "
                     f"{args.flavor!r}")
    if found:
        raise UserError("sim: " + "; ".join(found))
    return _entry("specload.sim.server")(args)


_run_sim_curve = _entry("specload.sim.curve")
_run_sim_fit = _entry("specload.fit_run")
_run_sweep = _entry("specload.runner.sweep")
_run_report = _entry("specload.report.render")
_run_compare = _entry("specload.report.compare")
_run_worker = _entry("specload.runner.worker")
_run_engines = _entry("specload.engines.listing")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="specload",
        description="Load-test OpenAI-compatible LLM servers through a concurrency ladder "
        "and find where speculative decoding stops paying off.",
    )
    parser.add_argument("--version", action="version", version=f"specload {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add in (_add_sweep, _add_worker, _add_report, _add_compare, _add_sim, _add_sim_curve,
                _add_sim_fit, _add_engines):
        add(sub)
    return parser


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def reference() -> str:
    """docs/cli.md's text: each subcommand, what it does and its options with their
    defaults, from the parser itself (a test keeps the page so)."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out: list[str] = []
    said = {a.dest: a.help for a in sub._choices_actions}
    for name, p in sub.choices.items():
        out += [f"## specload {name}", "", _cell(p.description or said[name]), "",
                "| option | default | meaning |", "|---|---|---|"]
        for a in p._actions:
            if isinstance(a, argparse._HelpAction):
                continue
            flags = ", ".join(f"`{f}`" for f in a.option_strings) or f"`{a.dest.upper()}`"
            shown = "" if a.default in (None, argparse.SUPPRESS, (), []) or a.default is False \
                else f"`{a.default}`"
            helped = (a.help or "").replace("%(default)s", str(a.default))
            out.append(f"| {flags} | {_cell(shown)} | {_cell(helped)} |")
        out.append("")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        status = int(args.func(args) or 0)
        sys.stdout.flush()  # here, not at exit, so that a reader gone away is caught below
        return status
    except UserError as exc:
        print(f"specload: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("specload: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        if not stdout_pipe.discard_if_gone():
            raise  # a server's connection, say: not the reader of our output
        return 128 + signal.SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
