"""`bold-eval run`'s flags folded into a generator kind and its options: command-line work, kept out of the stages.

--base-url picks the HTTP generator (--api), --generator auto detects a masked LM from its config, and the chat,
API and Gibbs flags become generator options; a flag the chosen generator would ignore is refused, naming it.
The stages take the result (`RunConfig.generator`, `RunConfig.generator_options`) and never see the flags.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from bold_eval.core.errors import UsageError
from bold_eval.generation.base import ALIASES, GIBBS_MLM, HF_CAUSAL
from bold_eval.generation.choice import generator_kind


class GeneratorChoiceError(UsageError):
    """Flags that contradict each other or the chosen generator; `prefix` names the command in the message."""

    def __init__(self, message: str, *, prefix: str = "bold-eval run") -> None:
        super().__init__(message)
        self.prefix = prefix


def _generator_options(pairs: Sequence[str]) -> dict:
    """--generator-option KEY=VALUE pairs; VALUE is JSON when it parses, else a string."""
    options = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key:
            raise GeneratorChoiceError(f"--generator-option {pair!r}: expected KEY=VALUE", prefix="bold-eval")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return options


# `run` flags that set the causal decoding (appendix A.2.2/A.2.3) and so mean nothing to Gibbs sampling.
_CAUSAL_DECODING_FLAGS = {"decoding": "--decoding", "top_k": "--top-k", "top_p": "--top-p",
                          "temperature": "--temperature", "repetition_penalty": "--repetition-penalty",
                          "control_code": "--control-code", "greedy": "--greedy", "one_sentence": "--one-sentence"}
# --gibbs-* flag -> gibbs-mlm generator option (bold_eval.generation.gibbs.OPTION_TYPES).
_GIBBS_FLAGS = {"gibbs_burn_in": "burn_in", "gibbs_max_iter": "max_iter", "gibbs_temperature": "temperature",
                "gibbs_top_k": "top_k"}


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def _set_from_flag(options: dict, key: str, value: Any, flag: str) -> None:
    """Set generator option `key` from a flag's `value` (None: the flag was not given). A
    --generator-option that says otherwise is refused; `flag` says what it contradicts."""
    if value is None:
        return
    if key in options and options[key] != value:
        raise GeneratorChoiceError(f"--generator-option {key}={options[key]} contradicts {flag}")
    options[key] = value


def _gibbs_options(args: Any, kind: str, options: dict) -> dict:
    """Fold the --gibbs-* flags and --max-new-tokens into the gibbs-mlm generator options; refuse
    flags that the chosen generator would otherwise ignore without a word."""
    given_gibbs = [dest for dest in _GIBBS_FLAGS if getattr(args, dest) is not None]
    if kind != GIBBS_MLM:
        if given_gibbs:
            raise GeneratorChoiceError(f"{', '.join(map(_flag, given_gibbs))} apply to --generator gibbs-mlm "
                             f"(masked LMs), not to {kind}")
        return options
    ignored = [flag for dest, flag in _CAUSAL_DECODING_FLAGS.items() if getattr(args, dest) not in (None, False)]
    if ignored:
        raise GeneratorChoiceError(f"{', '.join(ignored)} set causal-LM decoding (appendix A.2.2/A.2.3); "
                         f"{args.model} generates by Gibbs sampling ({GIBBS_MLM}, appendix A.2.1), whose settings are "
                         "--max-new-tokens, --gibbs-temperature, --gibbs-burn-in, --gibbs-max-iter, --gibbs-top-k")
    options = dict(options)
    flags = {"max_new_tokens": args.max_new_tokens, **{key: getattr(args, dest) for dest, key in _GIBBS_FLAGS.items()}}
    for key, value in flags.items():
        _set_from_flag(options, key, value, f"the flag for {key} ({value}); give one of them")
    return options


# --flag -> option of the openai-* generators (bold_eval.generation.openai_compatible.GENERATOR_OPTIONS).
_API_FLAGS = {"base_url": "base_url", "concurrency": "concurrency", "api_key_env": "api_key_env"}
# --flag -> chat option of hf-causal and the openai-* generators (bold_eval.generation.chat.CHAT_OPTIONS).
_CHAT_FLAGS = ("chat_template", "chat_instruction", "system_instruction", "chat_template_kwargs", "think_end_token")


def _chat_options(args: Any, kind: str, options: dict) -> dict:
    """Fold the chat flags into the options of a generator that talks to a chat model (hf-causal, openai-*);
    refuse them for the others."""
    from bold_eval.generation.chat import parse_template_kwargs
    from bold_eval.generation.openai_compatible import KINDS as API_KINDS

    given = [dest for dest in _CHAT_FLAGS if getattr(args, dest) is not None]
    if kind != HF_CAUSAL and kind not in API_KINDS.values():
        if given:
            raise GeneratorChoiceError(f"{', '.join(map(_flag, given))} apply to a causal LM ({HF_CAUSAL}) or a "
                             f"model behind a server, not to {kind}")
        return options
    options = dict(options)
    for dest in given:
        value = getattr(args, dest)
        if dest == "chat_template_kwargs":
            value = parse_template_kwargs(value)  # a UsageError names the bad pair
        _set_from_flag(options, dest, value, _flag(dest))
    return options


def choose_generator(args: Any) -> tuple[str, dict]:
    """The generator kind and its options from the `run` flags: --base-url picks the HTTP generator
    (--api), --generator auto detects a masked LM from its config; flags that the chosen generator
    would ignore are refused."""
    from bold_eval.generation.openai_compatible import KINDS as API_KINDS

    options = _generator_options(args.generator_option)
    api_kinds = set(API_KINDS.values())
    requested = ALIASES.get(args.generator, args.generator)
    if args.base_url:
        # a chat protocol needs the chat endpoint: --chat-template prefill / instruct implies --api chat
        chat_protocol = args.chat_template in ("prefill", "instruct")
        kind = API_KINDS[args.api or ("chat" if chat_protocol else "completions")]
        if requested in api_kinds and args.api is None:
            kind = requested
        if requested not in ("auto", kind):
            raise GeneratorChoiceError(f"--base-url generates through a server ({kind}); "
                             f"--generator {args.generator} contradicts it")
        for flag, value in (("--gguf-file", args.gguf_file), ("--model-args", args.model_args)):
            if value:
                raise GeneratorChoiceError(f"{flag} loads a checkpoint locally; with --base-url the server "
                                 "loads the model")
    else:
        kind = generator_kind(SimpleNamespace(model=args.model, generator=args.generator, gguf_file=args.gguf_file,
                                              revision=args.revision))
    if kind in api_kinds:
        if args.api and API_KINDS[args.api] != kind:
            raise GeneratorChoiceError(f"--api {args.api} contradicts --generator {kind}")
        for dest, key in _API_FLAGS.items():
            _set_from_flag(options, key, getattr(args, dest), _flag(dest))
    else:
        given = [_flag(dest) for dest in ("api", *_API_FLAGS) if getattr(args, dest) is not None]
        if given:
            raise GeneratorChoiceError(f"{', '.join(given)} apply to a model behind a server; give --base-url URL")
    if args.model_args:
        if kind != HF_CAUSAL:
            raise GeneratorChoiceError(f"--model-args applies to causal LMs loaded here ({HF_CAUSAL}), not to {kind}")
        from bold_eval.generation.model_args import parse_model_args

        try:
            options["model_args"] = parse_model_args(args.model_args)
        except ValueError as error:
            raise GeneratorChoiceError(f"{error}") from error
    return kind, _gibbs_options(args, kind, _chat_options(args, kind, options))
