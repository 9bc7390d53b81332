"""How the texts were asked of the model (the chat protocol, `bold_eval.generation.chat`), in plain words.

A chat model's texts depend on how it was asked: raw (`none`), continuing a prefilled reply (`prefill`) or
answering an instruction (`instruct`), under which system prompt. The report's first screen says which, and
how many texts ended inside a thinking trace (kept out of every number); `compare` warns when runs differ.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from bold_eval.runfolder.records import RunRecord, chat_protocol

PROTOCOL_WORDS = {
    "none": "the prompt fed raw, as the paper fed its models: the text is the prompt plus what the model added",
    "prefill": "the model's chat template, with the BOLD prompt as the beginning of the assistant's reply, which the "
               "model continued: the text is the prompt plus what the model added",
    "instruct": "a user message asking the model to continue the prompt; its reply was joined to the prompt as a "
                "continuation (a restated prompt removed once)",
    "lm-eval user message": "lm-eval's --apply_chat_template on a task without gen_prefix: the prompt was the user's "
                            "whole message, with no instruction to continue it, and the reply is scored after the "
                            "prompt (use the bold_<domain>_chat tasks for the prefill protocol)",
    "lighteval user message": "lighteval's chat template: the prompt was the user's whole message, with no instruction "
                              "to continue it, and the reply is scored after the prompt",
}
# What `compare` checks, in the order it names the differences.
COMPARED_FIELDS = {"protocol": "chat protocol (--chat-template)", "system_instruction": "system instruction",
                   "chat_instruction": "user instruction (--chat-instruction)",
                   "chat_template_kwargs": "template keywords (--chat-template-kwargs)",
                   "think_end_token": "thinking-trace end marker"}


def protocol_lines(record: RunRecord) -> list[str]:
    """The how-to-read bullet on the chat protocol ([] where none applies: Wikipedia, Gibbs, `score`)."""
    protocol = chat_protocol(record)
    if protocol is None:
        return []
    name = protocol["protocol"]
    chat_info = (record.model_info or {}).get("chat") or {}
    chosen = f" ({chat_info['chosen_by']})" if chat_info.get("chosen_by") else ""
    line = f"- **Chat protocol: {name}**{chosen}: {PROTOCOL_WORDS.get(name, 'see run.json')}."
    if name != "none":
        system = protocol["system_instruction"]
        if protocol["chat_instruction"] is not None:
            line += f" User message: {json.dumps(protocol['chat_instruction'])}."
        line += (" System prompt: " + (json.dumps(system) if system is not None
                                       else "the chat template's own default (none sent)") + ".")
        if protocol["chat_template_kwargs"]:
            line += f" Template keywords: {json.dumps(protocol['chat_template_kwargs'])}."
        if protocol["think_end_token"]:
            line += (f" Thinking traces end at `{protocol['think_end_token']}` and are never scored"
                     + _trace_count(record) + ".")
    decoding = (record.generator_settings or {}).get("decoding") or {}
    if decoding.get("stop_at_newline") is False:
        line += " **Line-break rule off** (`--no-stop-at-newline`): texts are kept whole, past their first line break."
    elif decoding:
        line += " Texts end before their first line break (the rule of every protocol)."
    return [line]


def _trace_count(record: RunRecord) -> str:
    thinking = record.thinking or {}
    if not thinking:
        return ""
    return f"; {thinking['ended_in_trace']:,} of {_texts(thinking['texts'])} ended inside one"


def trace_lines(record: RunRecord) -> list[str]:
    """The first screen's warning when texts ended inside a thinking trace (they are in no number)."""
    thinking = record.thinking or {}
    if not thinking.get("ended_in_trace"):
        return []
    marker = (chat_protocol(record) or {}).get("think_end_token") or "the end marker"
    tokens = ((record.generator_settings or {}).get("decoding") or {}).get("max_new_tokens")
    budget = f" within {tokens} new tokens" if tokens else ""
    return [f"> **{thinking['ended_in_trace']:,} of {_texts(thinking['texts'])} ended inside the model's thinking "
            f"trace** (no `{marker}`{budget}). They have no answer: they stay in generations.jsonl with "
            "`ended_in_trace: true` and are left out of every number below "
            f"({_prompts_without_text(thinking['prompts_without_text'])}). Raise --max-new-tokens (it counts "
            "the trace too), or switch thinking off (--chat-template-kwargs enable_thinking=false).", ""]


def protocol_differences(records: Mapping[str, RunRecord]) -> list[str]:
    """How the runs' chat protocols differ, one phrase per differing field naming each run's value; runs
    without a protocol (the Wikipedia baseline, Gibbs sampling, `bold-eval score`) are left out."""
    protocols = {label: chat_protocol(record) for label, record in records.items()}
    known = {label: protocol for label, protocol in protocols.items() if protocol is not None}
    chat = {label: protocol for label, protocol in known.items() if protocol["protocol"] != "none"}
    differences = []
    for key, name in COMPARED_FIELDS.items():
        # the protocol over every run; what only a chat protocol sends (instructions, ...) over those that chatted
        values = {label: protocol[key] for label, protocol in (known if key == "protocol" else chat).items()}
        if len({json.dumps(value, sort_keys=True) for value in values.values()}) > 1:
            differences.append(f"{name}: " + ", ".join(f"{label} {_shown(value)}" for label, value in values.items()))
    return differences


def _shown(value: Any) -> str:
    if value is None:
        return "(none)"
    return value if isinstance(value, str) and "\n" not in value and len(value) < 40 else json.dumps(value)


def protocol_banner(differences: list[str]) -> list[str]:
    """compare.md's warning, before any number, when the runs' texts were asked for differently."""
    if not differences:
        return []
    return ["> **The runs used different chat protocols or system prompts:** " + "; ".join(differences) + ". A "
            "difference between them may come from how the model was asked, not from the model: compare runs "
            "made with the same --chat-template, --system-instruction and --chat-instruction.", ""]


def _texts(count: int) -> str:
    return f"{count:,} text{'' if count == 1 else 's'}"


def _prompts_without_text(count: int) -> str:
    return f"{count:,} prompt has no scored text" if count == 1 else f"{count:,} prompts have no scored text"
