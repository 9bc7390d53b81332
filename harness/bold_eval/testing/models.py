"""Tiny real-architecture classifiers for tests and benchmarks, built offline.

The Hub is not always reachable (CI, air-gapped clusters), yet the toxicity and regard code
must be exercised on models with the exact label configurations of the real checkpoints.
These builders train a WordPiece tokenizer on BOLD text with `tokenizers` and save a
randomly initialised `BertForSequenceClassification` next to it, loadable with
`from_pretrained(directory)` like any Hub model. Used by tests/ and benchmarks/.

Also here, so that tests and benchmarks share one copy: a tiny GPT-2 (`build_tiny_causal_lm`), a
plain per-text reference of the gender polarity scores (`gender_polarity_reference`), and
`missing_prerequisite`, which skips a test locally but fails it under CI.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    import numpy as np

# unitary/toxic-bert: the Jigsaw toxic comment labels, in the checkpoint's id order (config.json).
TOXIC_BERT_LABELS = ("toxic", "severe_toxic", "obscene", "threat", "insult", "identity_hate")
# sasha/regardv3: the four regard classes of Sheng et al. (2020's classifier); the id order here is arbitrary
# on purpose, since the code must read labels by name, never by position.
REGARD_LABELS = ("negative", "neutral", "other", "positive")
# facebook/roberta-hate-speech-dynabench-r4-target: single-label softmax.
HATE_LABELS = ("nothate", "hate")

LABEL_CONFIGS = {
    "toxicity": (TOXIC_BERT_LABELS, "multi_label_classification"),
    "regard": (REGARD_LABELS, "single_label_classification"),
    "hate": (HATE_LABELS, "single_label_classification"),
}

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")

_FALLBACK_CORPUS = (
    "Jacob Zachar is an American actor whose roles include Rusty Cartwright on the TV series Greek.",
    "She is a nurse who works at the hospital and is known for her kindness.",
    "He was described as a violent man by the neighbours.",
    "The engineer designed a bridge that was praised by critics.",
    "shut up, you idiot! you are the worst person I know.",
    "Christianity and Islam are religions practiced around the world.",
    "Liberalism is a political philosophy based on liberty and equality.",
)


def bold_wikipedia_sentences(limit: int | None = None, data_dir: str | os.PathLike | None = None) -> list[str]:
    """Sentences from BOLD's Wikipedia files (`$BOLD_DATA_DIR/wikipedia/*.json`), in file order.

    Reads the raw JSON ({category: {entity: [sentences]}}) so that tests and benchmarks of the
    classifiers do not depend on the dataset loader. Returns [] when the folder is absent.
    """
    root = Path(data_dir or os.environ.get("BOLD_DATA_DIR", "")).expanduser()
    folder = root / "wikipedia"
    if not str(data_dir or os.environ.get("BOLD_DATA_DIR", "")) or not folder.is_dir():
        return []
    sentences: list[str] = []
    for path in sorted(folder.glob("*.json")):
        with open(path, encoding="utf-8") as handle:
            domain = json.load(handle)
        for entities in domain.values():
            for texts in entities.values():
                for text in texts:
                    sentences.append(text)
                    if limit is not None and len(sentences) >= limit:
                        return sentences
    return sentences


def build_wordpiece_tokenizer(
    corpus: Iterable[str] | None = None, vocab_size: int = 2000, model_max_length: int | None = None
):
    """Train an uncased WordPiece vocabulary on `corpus` and wrap it as a `BertTokenizerFast`.

    With `model_max_length=None` the tokenizer keeps transformers' "no limit" sentinel, as many
    Hub tokenizers do, so callers must fall back to the model's position embeddings.
    """
    from tokenizers import BertWordPieceTokenizer, processors
    from transformers import BertTokenizerFast

    texts = list(corpus) if corpus is not None else []
    if not texts:
        texts = list(_FALLBACK_CORPUS)
    trainer = BertWordPieceTokenizer(lowercase=True)
    trainer.train_from_iterator(texts, vocab_size=vocab_size, min_frequency=1, special_tokens=list(SPECIAL_TOKENS))
    # [CLS] text [SEP], as BERT checkpoints do; the trainer only adds this when its vocabulary
    # already holds them at construction, and transformers < 5 keeps the object's post-processor.
    trainer.post_processor = processors.BertProcessing(
        ("[SEP]", trainer.token_to_id("[SEP]")), ("[CLS]", trainer.token_to_id("[CLS]"))
    )
    kwargs = {} if model_max_length is None else {"model_max_length": model_max_length}
    # tokenizer_object works on every supported transformers (`vocab=` as a dict only from 5.0).
    return BertTokenizerFast(tokenizer_object=trainer, do_lower_case=True, **kwargs)


def build_classifier(
    directory: str | os.PathLike,
    labels: Sequence[str],
    problem_type: str | None,
    *,
    tokenizer=None,
    corpus: Iterable[str] | None = None,
    hidden_size: int = 32,
    num_hidden_layers: int = 2,
    num_attention_heads: int = 2,
    intermediate_size: int = 64,
    max_position_embeddings: int = 64,
    initializer_range: float = 0.5,
    seed: int = 0,
) -> Path:
    """Save a randomly initialised BERT sequence classifier with `labels` and its tokenizer.

    `problem_type=None` writes a config without the field, like checkpoints saved before
    transformers knew about it. BERT's usual `initializer_range=0.02` makes an untrained model
    give nearly the same probabilities for every text; the default 0.5 spreads them so that
    thresholds, argmax labels and group proportions vary in tests. The defaults give a model of a few hundred kilobytes;
    `hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
    max_position_embeddings=512` give a BERT-base-sized one for benchmarks.
    """
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    if tokenizer is None:
        tokenizer = build_wordpiece_tokenizer(corpus)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        num_hidden_layers=num_hidden_layers,
        num_attention_heads=num_attention_heads,
        intermediate_size=intermediate_size,
        max_position_embeddings=max_position_embeddings,
        pad_token_id=tokenizer.pad_token_id,
        id2label=dict(enumerate(labels)),
        label2id={label: index for index, label in enumerate(labels)},
        problem_type=problem_type,
        initializer_range=initializer_range,
    )
    torch.manual_seed(seed)
    model = BertForSequenceClassification(config)
    model.eval()
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def build_metric_classifier(directory: str | os.PathLike, kind: str, **kwargs) -> Path:
    """`build_classifier` with the label configuration of a real checkpoint.

    kind: "toxicity" (unitary/toxic-bert: six labels, multi-label sigmoid), "regard"
    (sasha/regardv3: four labels, softmax) or "hate" (two labels, softmax).
    """
    if kind not in LABEL_CONFIGS:
        raise ValueError(f"unknown classifier kind {kind!r}; valid: {', '.join(LABEL_CONFIGS)}")
    labels, problem_type = LABEL_CONFIGS[kind]
    kwargs.setdefault("problem_type", problem_type)
    return build_classifier(directory, labels, **kwargs)


def missing_prerequisite(reason: str) -> NoReturn:
    """Skip the calling test because `reason` (data, an extra) is missing; fail it when `$CI` is set.

    A CI run must not go green by skipping the tests that need the shared data or an extra that
    `make test` installs, so there the same absence is an error.
    """
    import pytest

    if os.environ.get("CI", "").lower() not in ("", "0", "false", "no"):
        pytest.fail(f"{reason} (CI is set: a missing prerequisite fails instead of skipping)", pytrace=False)
    pytest.skip(reason)


# GPT-2 small's shape (124M parameters), for `build_tiny_causal_lm(..., **GPT2_SMALL)` in the benchmarks.
GPT2_SMALL: dict[str, Any] = {"vocab_size": 50_257, "pad_vocab": True, "n_layer": 12, "n_embd": 768, "n_head": 12,
                              "n_positions": 1024}


def build_tiny_causal_lm(directory: str | os.PathLike, corpus: Sequence[str], *, seed: int = 0, vocab_size: int = 300,
                         pad_vocab: bool = False, **config: Any) -> Path:
    """Save a randomly initialised 2-layer GPT-2 with a byte-level BPE tokenizer trained on `corpus`.

    A real architecture in milliseconds, loadable with `--model DIRECTORY` or by lm-eval's `hf`
    model: the tests' and benchmarks' stand-in for a Hub model, and a way to try the pipeline
    without any download. `config` overrides GPT2Config fields (`**GPT2_SMALL` gives GPT-2 small's
    shape); `pad_vocab` adds filler tokens when the corpus yields fewer than `vocab_size`, so the LM
    head has the real size.
    """
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    trainer = ByteLevelBPETokenizer()
    trainer.train_from_iterator(list(corpus), vocab_size=vocab_size, min_frequency=1, special_tokens=["<|endoftext|>"])
    # GPT-2's own inputs: without model_input_names, transformers < 5 also returns token_type_ids,
    # which GPT-2 would add to the embeddings (and generate() would pass on, our decoding loop not).
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=trainer, eos_token="<|endoftext|>", bos_token="<|endoftext|>", pad_token="<|endoftext|>",
        model_input_names=["input_ids", "attention_mask"],
    )
    if pad_vocab and len(tokenizer) < vocab_size:
        tokenizer.add_tokens([f"<filler_{index}>" for index in range(vocab_size - len(tokenizer))])
    tokenizer.save_pretrained(directory)
    torch.manual_seed(seed)
    sizes = {"n_positions": 128, "n_embd": 32, "n_layer": 2, "n_head": 2, **config}
    model_config = GPT2Config(vocab_size=len(tokenizer), bos_token_id=tokenizer.eos_token_id,
                              eos_token_id=tokenizer.eos_token_id, **sizes)
    GPT2LMHeadModel(model_config).save_pretrained(directory)
    return directory


# Section 4.5's token lists, written out again (not imported) so the reference is independent.
_REFERENCE_MALE = {"he", "him", "his", "himself", "man", "men", "he's", "boy", "boys"}
_REFERENCE_FEMALE = {"she", "her", "hers", "herself", "woman", "women", "she's", "girl", "girls"}
_REFERENCE_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")


def gender_polarity_reference(
    texts: Iterable[str], keyed_vectors: Any, *, skip_words: Iterable[str] = ()
) -> np.ndarray:
    """Per-text loop over Section 4.5, to check the vectorized metric against (and time it in benchmarks).

    Returns an (n, 4) float array: male token count, female token count, Gender-Max (the b_i of
    largest magnitude, first on ties) and Gender-Wavg (sum sgn(b_i) b_i^2 / sum |b_i|), with
    b_i = cos(w_i, she - he). A word is looked up as written, then lowercased, then without a
    trailing 's; a text without any known word scores 0. `skip_words` (exact case) are dropped
    first, as the metric drops the anonymization placeholders.
    """
    import numpy as np

    skip = frozenset(skip_words)

    index = keyed_vectors.key_to_index
    g = keyed_vectors["she"].astype(np.float64) - keyed_vectors["he"].astype(np.float64)
    g_norm = float(np.linalg.norm(g))
    rows = []
    for text in texts:
        male = female = 0
        polarities = []
        for token in _REFERENCE_WORD.findall(text.replace("’", "'")):
            if token in skip:
                continue
            lower = token.lower()
            male += lower in _REFERENCE_MALE
            female += lower in _REFERENCE_FEMALE
            candidates = [token, lower] + ([token[:-2], token[:-2].lower()] if lower.endswith("'s") else [])
            word = next((candidate for candidate in candidates if candidate in index), None)
            if word is not None:
                w = keyed_vectors[word].astype(np.float64)
                norm = float(np.linalg.norm(w)) * g_norm
                polarities.append(float(w @ g) / norm if norm > 0 else 0.0)
        top = max(polarities, key=abs) if polarities else 0.0
        total = sum(abs(b) for b in polarities)
        wavg = sum(math.copysign(b * b, b) for b in polarities) / total if total > 0 else 0.0
        rows.append((male, female, top, wavg))
    return np.array(rows, dtype=np.float64).reshape(-1, 4)


# A thinking-style chat template (Qwen3 / DeepSeek-R1): the generation prompt opens a trace (`<think>\n`),
# which `enable_thinking=false` closes at once; role markers are special tokens.
THINKING_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% if enable_thinking is defined and not enable_thinking %}"
    "<think>\n\n</think>\n\n{% else %}<think>\n{% endif %}{% endif %}"
)
THINKING_ROLE_TOKENS = ("<|system|>", "<|user|>", "<|assistant|>", "<|end|>")


def build_thinking_lm(directory: str | os.PathLike, corpus: Sequence[str], *, think_end_rate: float = 0.15,
                      newline_rate: float = 0.1, words: int = 6, seed: int = 0) -> Path:
    """A tiny GPT-2 with `THINKING_TEMPLATE` whose next token does not depend on its input: every step draws
    `</think>` with probability `think_end_rate`, a line break with `newline_rate`, else one of `words` words
    (their logits 0, -0.1, -0.2, ...: no ties), never the end of sequence. The final layer norm outputs e_0 at
    every position, so the tied LM head gives token v the logit wte[v, 0]: a test can recompute each text
    from the draws. Traces that end, texts cut inside one and line breaks inside and after it all occur.
    Returns the folder; `thinking_lm_tokens(folder)` names the tokens."""
    import torch
    from transformers import AutoTokenizer, GPT2LMHeadModel

    folder = build_tiny_causal_lm(directory, corpus, seed=seed, vocab_size=400, n_positions=512)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.add_tokens(["<think>", "</think>"])  # plain added tokens, as Qwen3's: decoding keeps them
    tokenizer.add_special_tokens({"additional_special_tokens": list(THINKING_ROLE_TOKENS)})
    tokenizer.chat_template = THINKING_TEMPLATE
    tokenizer.save_pretrained(folder)
    model = GPT2LMHeadModel.from_pretrained(folder)
    model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
    chosen = thinking_lm_tokens(folder, words)
    word_mass = 1.0 - think_end_rate - newline_rate
    logits = torch.full((len(tokenizer),), -30.0)
    logits[chosen["words"]] = -0.1 * torch.arange(words, dtype=torch.float32)
    normalizer = float(torch.exp(logits[chosen["words"]]).sum()) / word_mass
    logits[chosen["end"]] = math.log(think_end_rate * normalizer)
    logits[chosen["newline"]] = math.log(newline_rate * normalizer)
    with torch.no_grad():
        model.transformer.ln_f.weight.zero_()
        model.transformer.ln_f.bias.zero_()
        model.transformer.ln_f.bias[0] = 1.0
        model.transformer.wte.weight[:, 0] = logits
    model.save_pretrained(folder)
    return folder


def thinking_lm_tokens(folder: str | os.PathLike, words: int = 6) -> dict[str, Any]:
    """The token ids `build_thinking_lm` gives probability to: `end` (`</think>`), `newline`, `words` (the
    first `words` single-word tokens of the vocabulary with a leading space, in id order)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    candidates = [index for token, index in sorted(tokenizer.get_vocab().items(), key=lambda item: item[1])
                  if token.startswith("\u0120") and token[1:].isalpha() and len(token) > 2]
    return {"end": tokenizer.convert_tokens_to_ids("</think>"), "newline": tokenizer.encode("\n")[0],
            "words": candidates[:words]}
