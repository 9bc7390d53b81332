"""BOLD as an Inspect task: `inspect eval bold_eval/bold --model PROVIDER/MODEL`.

The same evaluation as `bold-eval run`, inside Inspect:

- the prompts: BOLD's (`data.bold.load_bold`: `data_dir`, else `$BOLD_DATA_DIR`, else the pinned upstream files),
  all five domains by default, `-T domains=gender,race`, and `-T limit=N` the seeded stratified sample of
  `bold-eval run --limit N` (`data.selection.select_prompts`, `-T sample_seed=` its `--sample-seed`); one Inspect
  sample per prompt (its id is the prompt_id), `-T samples=k` continuations per prompt as Inspect's epochs;
- the chat protocol (`generation.chat`): `none` feeds the prompt raw (a completions provider:
  `openai-api-completions/...`, `vllm-completions/...`), `prefill` puts it at the start of the assistant's reply
  (`continue_final_message`, sent as `extra_body` to OpenAI-compatible servers such as vLLM), `instruct` asks for
  a continuation and joins the reply to the prompt; `auto` (the default) is `none` on completions providers and
  `mockllm`, else `instruct`, as `bold-eval run --api completions / chat` chooses. The reply becomes the scored
  continuation exactly as in `bold-eval run` (`ChatProtocol.finish`: thinking trace cut, stopping rule);
- decoding: the task's `GenerateConfig` holds the paper's GPT-2 setting (appendix A.2.2: temperature 1, top-k
  40, top-p 0.95), 30 new tokens and seed 0 (`bold-eval run`'s defaults); Inspect's `--temperature`,
  `--max-tokens`, `--seed`, ... override them;
- the scorer (`bold_scorer`): every metric of `bold-eval run` through its scorers (`scoring.indicators`), on the
  text `bold-eval run` scores; a metric whose resource is missing offline is skipped with `bold-eval run`'s
  message. Each tested label is one value of the score (`sentiment_negative`, `toxicity_toxic`, ...), reported
  per group (`grouped(mean())`: the group's rate) with a standard error clustered by name within the group
  (`grouped(stderr(cluster="name"))`), and over all samples.

The log comes back with `bold-eval score LOG.eval --out DIR` (`scoring.external`): the report, report.html,
compare and leaderboard, with the name-level intervals and tests that Inspect's metrics do not give.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
from inspect_ai import Epochs, Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    ContentReasoning,
    GenerateConfig,
)
from inspect_ai.scorer import Metric, Score, Target, grouped, mean, metric, scorer, stderr
from inspect_ai.solver import Generate, TaskState, solver

from bold_eval.core.errors import UsageError
from bold_eval.core.options import AUTO, DEFAULT_MAX_NEW_TOKENS, INSTRUCT, NONE
from bold_eval.data.bold import load_bold
from bold_eval.data.selection import select_prompts
from bold_eval.generation.chat import ChatOptions, ChatProtocol
from bold_eval.generation.decoding import PRESETS, make_decoding
from bold_eval.runfolder.layout import BOLD_COLUMNS, TRACE_COLUMN
from bold_eval.scoring.indicators import TextScorer
from bold_eval.scoring.inspect_logs import CONTINUATION, PROTOCOL

# Providers that send the prompt as it is (no chat template): `auto` feeds them the raw prompt.
COMPLETIONS_PROVIDERS = ("openai-api-completions", "vllm-completions", "mockllm")
# What each sample's metadata holds (BOLD's columns); the solver adds CONTINUATION, ENDED_IN_TRACE and PROTOCOL for
# the scorer and for `bold-eval score` (scoring.inspect_logs).
BOLD_METADATA = ("prompt_id", *BOLD_COLUMNS)
ENDED_IN_TRACE = TRACE_COLUMN
# Rates per BOLD group (group names are unique across domains), standard errors clustered by name within a group.
GROUP, CLUSTER = "group", "name"
# The paper's GPT-2 decoding (appendix A.2.2) with `bold-eval run`'s length and seed.
PAPER_CONFIG = GenerateConfig(temperature=PRESETS["gpt2"]["temperature"], top_p=PRESETS["gpt2"]["top_p"],
                              top_k=PRESETS["gpt2"]["top_k"], max_tokens=DEFAULT_MAX_NEW_TOKENS, seed=0)


def _names(value: str | Sequence[str] | None) -> list[str] | None:
    """`-T domains=gender,race` (text) or a YAML list, as names; None for all."""
    if value is None or value == "all":
        return None
    names = [item.strip() for item in (value.split(",") if isinstance(value, str) else value) if str(item).strip()]
    return names or None


def bold_dataset(domains: str | Sequence[str] | None = None, limit: int | None = None, sample_seed: int = 0,
                 data_dir: str | None = None) -> MemoryDataset:
    """BOLD's prompts as Inspect samples, chosen as `bold-eval run --domains --limit --sample-seed` chooses them."""
    frame = select_prompts(load_bold("all", data_dir=data_dir).to_pandas(), _names(domains), limit, seed=sample_seed)
    samples = [Sample(input=row["prompt"], target=row["wikipedia"], id=row["prompt_id"],
                      metadata={column: row[column] for column in BOLD_METADATA})
               for row in frame.to_dict("records")]
    return MemoryDataset(samples, name="bold", shuffled=False)


def chat_protocol(options: ChatOptions, model: str) -> ChatProtocol:
    """The protocol for `model` (Inspect's `provider/name`): the one given, else `none` on a completions
    provider and `instruct` on a chat one."""
    provider = model.split("/", 1)[0]
    if provider in COMPLETIONS_PROVIDERS:
        return options.resolve(NONE, f"Inspect provider {provider} (a raw prompt)")
    return options.resolve(INSTRUCT, f"Inspect provider {provider} (a chat API)")


@solver
def bold_continuation(chat_template: str = AUTO, chat_instruction: str | None = None,
                      system_instruction: str | None = None, think_end_token: str | None = None,
                      stop_at_newline: bool = True, one_sentence: bool = False):
    """Put the prompt to the model under the chat protocol, generate, and keep the scored continuation (the
    reply finished as `bold-eval run` finishes it) in the sample's metadata. `think_end_token` None: `</think>`
    under a chat protocol (`--think-end-token`'s default)."""
    options = ChatOptions.pop_from({"chat_template": chat_template, "chat_instruction": chat_instruction,
                                    "system_instruction": system_instruction, "think_end_token": think_end_token})
    decoding = make_decoding(stop_at_newline=stop_at_newline, one_sentence=one_sentence)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        protocol = chat_protocol(options, str(state.model))
        prompt = state.metadata["prompt"]
        config: dict[str, Any] = {}
        if protocol.chat:
            state.messages = [_message(message) for message in protocol.messages(prompt)]
            if protocol.request_fields():
                config["extra_body"] = protocol.request_fields()
        else:
            state.messages = [ChatMessageUser(content=prompt)]
            if stop_at_newline:
                config["stop_seqs"] = ["\n"]
        state = await generate(state, **config)
        reasoning = "".join(part.reasoning for part in state.output.message.content
                            if isinstance(part, ContentReasoning)) if not isinstance(
            state.output.message.content, str) else ""
        stop = "length" if state.output.stop_reason == "max_tokens" else state.output.stop_reason
        finished = protocol.finish_api(state.output.completion, reasoning or None, stop, prompt, decoding)
        state.metadata[CONTINUATION] = finished.text
        state.metadata[ENDED_IN_TRACE] = finished.ended_in_trace
        state.metadata[PROTOCOL] = protocol.protocol
        return state

    return solve


def _message(message: Mapping[str, str]) -> ChatMessageSystem | ChatMessageUser | ChatMessageAssistant:
    kinds = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant}
    return kinds[message["role"]](content=message["content"])


def _report_skipped(text_scorer: TextScorer) -> None:
    for line in text_scorer.skipped_lines():
        print(line, file=sys.stderr)


@metric
def rate() -> Metric:
    """Each group's rate of the label (the mean of its 0/1 values), and over all samples (`rate_all`)."""
    return grouped(mean(), GROUP, all_label="all")


@metric
def rate_stderr() -> Metric:
    """The standard error of each group's rate with the name as the cluster (a group's prompts about one person
    are not independent: the unit of `bold-eval score`'s intervals too), and over all samples."""
    return grouped(stderr(cluster=CLUSTER), GROUP, all_label="all")


@scorer(metrics={"*": [rate(), rate_stderr()]})
def bold_scorer(metrics: str | Sequence[str] | None = None,
                metric_options: Mapping[str, Mapping[str, Any]] | None = None, anonymize: bool = True,
                score_on: str = "full"):
    """Every requested metric (default: all) on the sample's continuation, one 0/1 value per tested label
    (`scoring.indicators`); NaN where a metric does not apply to the sample's domain or the text ended inside
    a thinking trace (Inspect leaves NaN out of its metrics)."""
    text_scorer = TextScorer(_names(metrics), metric_options, anonymize=anonymize, score_on=score_on)
    _report_skipped(text_scorer)

    async def score(state: TaskState, target: Target) -> Score:
        continuation = state.metadata.get(CONTINUATION)
        if continuation is None:
            raise UsageError("bold_scorer needs the bold_continuation solver (it keeps the scored continuation)")
        if state.metadata.get(ENDED_IN_TRACE):
            return Score(value=dict.fromkeys(text_scorer.keys, math.nan), answer="",
                         explanation="the reply ended inside its thinking trace: not scored")
        frame = pd.DataFrame([{**{key: state.metadata[key] for key in BOLD_METADATA}, CONTINUATION: continuation}])
        (values,) = text_scorer.score(frame)
        return Score(value=values, answer=continuation)

    return score


@task
def bold(domains: str | Sequence[str] | None = None, limit: int | None = None, samples: int = 1,
         sample_seed: int = 0, chat_template: str = AUTO, chat_instruction: str | None = None,
         system_instruction: str | None = None, think_end_token: str | None = None,
         stop_at_newline: bool = True, one_sentence: bool = False, metrics: str | Sequence[str] | None = None,
         metric_options: Mapping[str, Mapping[str, Any]] | None = None, anonymize: bool = True,
         score_on: str = "full", data_dir: str | None = None) -> Task:
    """BOLD (Dhamala et al., FAccT 2021): open-ended continuations of Wikipedia prompts about groups of five
    domains, scored with the paper's five metrics. The arguments are `bold-eval run`'s flags of the same names
    (`samples` is `--num-samples`)."""
    if samples < 1:
        raise UsageError(f"-T samples must be >= 1, got {samples}")
    return Task(
        dataset=bold_dataset(domains, limit, sample_seed, data_dir),
        solver=bold_continuation(chat_template, chat_instruction, system_instruction, think_end_token,
                                 stop_at_newline, one_sentence),
        scorer=bold_scorer(metrics, metric_options, anonymize, score_on),
        config=PAPER_CONFIG,
        epochs=Epochs(samples, "mean"),
        version=1,
        metadata={"benchmark": "BOLD", "paper": "Dhamala et al., FAccT 2021"},
    )
