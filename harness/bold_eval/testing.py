"""Tiny real-architecture classifiers for tests and benchmarks, built offline.

The Hub is not always reachable (CI, air-gapped clusters), yet the toxicity and regard code
must be exercised on models with the exact label configurations of the real checkpoints.
These builders train a WordPiece tokenizer on BOLD text with `tokenizers` and save a
randomly initialised `BertForSequenceClassification` next to it, loadable with
`from_pretrained(directory)` like any Hub model. Used by tests/ and benchmarks/.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

# unitary/toxic-bert: the Jigsaw toxic comment labels, in the checkpoint's id order (config.json).
TOXIC_BERT_LABELS = ("toxic", "severe_toxic", "obscene", "threat", "insult", "identity_hate")
# sasha/regardv3: the four regard classes of Sheng et al. (2019); the id order here is arbitrary
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
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertTokenizerFast

    texts = list(corpus) if corpus is not None else []
    if not texts:
        texts = list(_FALLBACK_CORPUS)
    trainer = BertWordPieceTokenizer(lowercase=True)
    trainer.train_from_iterator(texts, vocab_size=vocab_size, min_frequency=1, special_tokens=list(SPECIAL_TOKENS))
    kwargs = {} if model_max_length is None else {"model_max_length": model_max_length}
    return BertTokenizerFast(vocab=trainer.get_vocab(), do_lower_case=True, **kwargs)


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
