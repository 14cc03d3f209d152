"""Before the first rung: the scenario's prompts checked against the server's context.

The context length is read from the server's `/v1/models` entry (or the route its engine
lists it on) and prompts are counted by the engine's own tokenizer route, both where the
engine's `ContextWindow` says (`specload.engines`); an engine that also limits a prompt alone has
that limit folded into each prompt's output budget. `prompt_fit.plan` then decides by
`request.over_context`. The sweep's
first server decides for the whole sweep: the manifest keeps the fit, so every arm,
repeat and resumed run sends the same prompts. A later server (with a smaller context,
or after a first one that could not be checked) is checked against the prompts the sweep
sends, and warned about. A trace's requests are counted by their lengths, and those
that cannot fit are warned about. Synthetic prompts, chat sessions and engines without
a declared window are not checked; a server that will not count is named and its prompts go
unchecked.
"""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import orjson

from specload import engines
from specload.config.api_key import bearer
from specload.config.scenario import Arm, Scenario
from specload.runfiles.manifest import PromptFitEntry
from specload.runner.health_checks import listed_models, probe
from specload.traffic import prompt_fit
from specload.traffic.kinds import TRACE
from specload.traffic.prompt_sets import load_prompts
from specload.traffic.prompts import Prompt
from specload.traffic.shapes import LengthSpec

COUNT_TIMEOUT_S = 30.0
COUNT_THREADS = 4
ALTERNATIVES = {"skip": "`trim` shortens them instead, `send` sends them as they are",
                "trim": "", "send": "`skip` leaves them out, `trim` shortens them"}


class CountError(Exception):
    """The server would not count a prompt's tokens; the message says how it answered."""


@dataclass
class Checked:
    """What the check found for one arm: the sweep's fit (new or kept), what to say."""

    fit: PromptFitEntry | None
    lines: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # for the arm's manifest entry
    failed: str | None = None  # why the arm cannot run


@dataclass(frozen=True, slots=True)
class Listed:
    """What a server lists: its context, and the limit on a prompt alone if it has one."""

    context: int
    input_limit: int | None = None

    def words(self) -> str:
        # one less than the context (TGI's default) never binds: any output needs a token
        alone = (f" ({self.input_limit} for a prompt alone)"
                 if self.input_limit is not None and self.input_limit < self.context - 1
                 else "")
        return f"context of {self.context} tokens{alone}"

    def budgets(self, wanted: list[int]) -> list[int]:
        """Each prompt's output budget with the prompt-alone limit folded in: a prompt
        fits when prompt + budget <= context and prompt <= the limit."""
        if self.input_limit is None:
            return wanted
        return [max(b, self.context - self.input_limit) for b in wanted]


def listing(base_url: str, window: engines.ContextWindow, models_body: bytes | None,
            api_key: str | None, tls: ssl.SSLContext | None) -> bytes | None:
    """The answer that lists the context: the `/v1/models` one already fetched, or the
    engine's own route's."""
    if window.listed_route == engines.MODELS_ROUTE:
        return models_body
    result = probe(base_url + window.listed_route, COUNT_TIMEOUT_S, api_key, tls)
    return result.body if result.ok else None


def _dig(body: bytes | None, window: engines.ContextWindow,
         keys: tuple[str, ...]) -> int | None:
    try:
        value = orjson.loads(body or b"null")
        if window.listed_route == engines.MODELS_ROUTE:
            value = value["data"][0]
        for key in keys:
            value = value[key]
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def listed_context(body: bytes | None, window: engines.ContextWindow) -> int | None:
    """The context length the listing answer gives (`listing`), if any."""
    return _dig(body, window, window.listed)


def listed(body: bytes | None, window: engines.ContextWindow) -> Listed | None:
    """The context and the prompt-alone limit the listing answer gives, if any."""
    context = listed_context(body, window)
    if context is None:
        return None
    limit = _dig(body, window, window.input_limit) if window.input_limit else None
    return Listed(context, limit)


def remote_counter(url: str, model: str | None, api_key: str | None,
                   tls: ssl.SSLContext | None, field_name: str) -> prompt_fit.Counter:
    """A counter that POSTs a prompt's chat request to the engine's counting route."""

    def count(prompt: Prompt) -> int:
        body = {"messages": list(prompt.messages), **({"model": model} if model else {})}
        req = urllib.request.Request(url, data=orjson.dumps(body), method="POST",
                                     headers={"Content-Type": "application/json",
                                              **bearer(api_key)})
        try:
            with urllib.request.urlopen(req, timeout=COUNT_TIMEOUT_S, context=tls) as resp:
                value = orjson.loads(resp.read()).get(field_name)
        except urllib.error.HTTPError as exc:
            raise CountError(f"{url}: HTTP {exc.code}") from exc
        except (urllib.error.URLError, OSError, orjson.JSONDecodeError, AttributeError) as exc:
            raise CountError(f"{url}: {getattr(exc, 'reason', exc)}") from exc
        if isinstance(value, list):  # the tokens themselves
            return len(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise CountError(f"{url}: no `{field_name}` count in its answer")
        return value

    return count


def prefetched(count: prompt_fit.Counter, prompts: list[Prompt]) -> prompt_fit.Counter:
    """`count`, with `prompts` counted beforehand a few at a time (by identity)."""
    with ThreadPoolExecutor(COUNT_THREADS) as pool:
        known = dict(zip(map(id, prompts), pool.map(count, prompts), strict=True))
    return lambda p: known[id(p)] if id(p) in known else count(p)


def budgets(scenario: Scenario, prompts: list[Prompt]) -> list[int]:
    """The output tokens each prompt asks for (1 where they are drawn: only its prompt
    is checked then)."""
    if scenario.request.output_tokens:
        return [1] * len(prompts)
    return [p.max_tokens or scenario.request.max_tokens for p in prompts]


def checked(scenario: Scenario) -> bool:
    """Whether the scenario's requests come from its prompt set (not synthetic, not
    chat sessions, not a trace's), so there is a set to check."""
    kind = scenario.workload_kind
    synthetic = bool(scenario.request.prompt_tokens or scenario.contexts)
    return not synthetic and kind != TRACE and not kind.holds_sessions(scenario.workload.unit)


def trace_lines(scenario: Scenario, found: Listed) -> list[str]:
    """What a trace's lengths ask of the server's context: the requests that cannot fit
    (the engine refuses them) named, the replay left as the trace has it."""
    requests = scenario.trace_window.requests
    over = [r.input_tokens + r.output_tokens for r in requests
            if r.input_tokens + r.output_tokens > found.context]
    if not over:
        return [f"trace: all {len(requests)} requests fit the server's {found.words()}"]
    return [f"warning: trace: {len(over)} of {len(requests)} requests ask for more than "
            f"the server's {found.words()} (up to {max(over)} tokens): it will refuse "
            "them, and they count as failures"]


def context_fits(scenario: Scenario, context: str, found: Listed,
                 known: PromptFitEntry | None) -> Checked:
    """An arm's context (`contexts:`) against the server's: the arm fails, in one line,
    when its longest prompt and reply cannot fit; an unbounded length is warned about."""
    req = scenario.request
    prompt = LengthSpec.parse(context).largest
    reply = (LengthSpec.parse(req.output_tokens).largest if req.output_tokens
             else float(req.max_tokens))
    if prompt is None or reply is None:
        return Checked(known, [f"warning: context {context}: its longest prompts and replies "
                               f"may not fit the server's {found.words()}"])
    if prompt + reply > found.context:
        return Checked(known, failed=(
            f"context {context}: prompts of {prompt:.0f} tokens and replies of {reply:.0f} "
            f"do not fit the server's {found.words()}"))
    return Checked(known, [f"context {context}: fits the server's {found.words()}"])


def fit_prompts(scenario: Scenario, arm: Arm, engine: str | None, base_url: str,
                models_body: bytes | None, api_key: str | None, tls: ssl.SSLContext | None,
                known: PromptFitEntry | None, first: bool = True) -> Checked:
    """Check the arm's server. The sweep's fit is `known` when an earlier server made it;
    without one, only the `first` server of the sweep (no other arm or repeat has run)
    makes it: a later one must not change the prompts after an arm ran them all."""
    entry = engines.get(engine)
    window = entry.context if entry is not None else None
    if window is None or not (checked(scenario) or scenario.workload_kind == TRACE
                              or arm.context is not None):
        return Checked(known)
    found = listed(listing(base_url, window, models_body, api_key, tls), window)
    if found is None:
        return Checked(known, [f"note: {base_url}{window.listed_route} lists no context "
                               "length: prompts not checked against it"])
    if arm.context is not None:
        return context_fits(scenario, arm.context, found, known)
    if not checked(scenario):
        return Checked(known, trace_lines(scenario, found))
    if known is not None and found.context >= known.context and found.input_limit is None:
        return Checked(known)  # what the sweep sends fits: nothing to count or load
    ids = listed_models(models_body or b"")
    model = scenario.request.model or (ids[0] if ids else None)
    count = remote_counter(base_url + window.count_route, model, api_key, tls,
                           window.count_field)
    prompts = load_prompts(scenario.request.prompts, scenario.request.prompt_format)
    try:
        if known is None and first:
            return _first(scenario, arm, prompts, found, count)
        return _later(scenario, known, prompts, found, count)
    except CountError as exc:
        return Checked(known, [f"note: could not count prompt tokens ({exc}): prompts "
                               f"not checked against the server's {found.words()}"])


def _plan(scenario: Scenario, prompts: list[Prompt], found: Listed,
          count: prompt_fit.Counter, policy: str) -> prompt_fit.Fit:
    wanted = found.budgets(budgets(scenario, prompts))
    template = count(Prompt(({"role": "user", "content": ""},), "probe"))
    maybe = prompt_fit.candidates(prompts, wanted, found.context, template)
    count = prefetched(count, [prompts[i] for i in maybe])
    return prompt_fit.plan(prompts, wanted, found.context, count, template, policy)


def _first(scenario: Scenario, arm: Arm, prompts: list[Prompt], found: Listed,
           count: prompt_fit.Counter) -> Checked:
    policy = scenario.request.over_context
    fit = _plan(scenario, prompts, found, count, policy)
    context = found.context
    entry = PromptFitEntry(arm=arm.name, context=context, policy=policy,
                           prompts=len(prompts), over=list(fit.over), skip=list(fit.skip),
                           cut=fit.cut, counted=fit.counted, longest=fit.longest)
    asked = _asked(scenario, prompts)
    if not fit.over:
        return Checked(entry, [f"prompts: all {len(prompts)} fit the server's "
                               f"{found.words()} with {asked}"])
    if len(fit.skip) == len(prompts):
        return Checked(entry, failed=f"no prompt fits the server's {found.words()} with "
                       f"{asked}")
    said = (f"{len(fit.over)} of {len(prompts)} prompts exceed the server's "
            f"{found.words()} with {asked} (the longest has {fit.longest} tokens): "
            + _done(fit, policy))
    if ALTERNATIVES[policy]:
        said += f" (request.over_context: {policy}; {ALTERNATIVES[policy]})"
    return Checked(entry, [f"warning: {said}"], [said])


def _asked(scenario: Scenario, prompts: list[Prompt]) -> str:
    if scenario.request.output_tokens:
        return "their output lengths drawn (only the prompts are checked)"
    if any(p.max_tokens for p in prompts):
        return "the max_tokens each asks for"
    return f"max_tokens {scenario.request.max_tokens}"


def _done(fit: prompt_fit.Fit, policy: str) -> str:
    if policy == "send":
        return "sent as they are; expect failed or cut-short requests"
    parts = []
    if fit.cut:
        parts.append(f"{len(fit.cut)} shortened to fit")
    if fit.skip:
        few = " (too little of them would be left)" if policy == "trim" else ""
        parts.append(f"{len(fit.skip)} left out{few}")
    return " and ".join(parts) + " on every arm"


def _later(scenario: Scenario, known: PromptFitEntry | None, prompts: list[Prompt],
           found: Listed, count: prompt_fit.Counter) -> Checked:
    """A server after the first: warn when what the sweep sends does not fit it."""
    sent = prompt_fit.apply(prompts, known.skip, known.cut) if known else prompts
    fit = _plan(scenario, sent, found, count, "send")
    if not fit.over:
        return Checked(known)
    why = (f"they were fitted to {known.arm}'s {known.context}" if known else
           "an arm ran before them whose server could not be checked, so the prompts are "
           "not changed mid-sweep")
    said = (f"{len(fit.over)} of the {len(sent)} prompts the sweep sends exceed this "
            f"server's {found.words()} with {_asked(scenario, sent)} ({why}): "
            "expect failed or cut-short requests")
    return Checked(known, [f"warning: {said}"], [said])

