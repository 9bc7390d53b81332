"""Batched classifier inference equals a naive one-text-at-a-time forward pass."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer, pipeline

from bold_eval.core.resources import ResourceNotFoundError
from bold_eval.metrics.classifier import (
    SequenceClassifier,
    is_multi_label,
    load_sequence_classifier,
    model_max_length,
    resolve_dtype,
)
from bold_eval.testing.models import (
    HATE_LABELS,
    REGARD_LABELS,
    TOXIC_BERT_LABELS,
    build_classifier,
    build_metric_classifier,
    build_wordpiece_tokenizer,
)

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: one torch thread (conftest)

MAX_POSITIONS = 64  # the tiny models' max_position_embeddings; their tokenizers set no limit


@pytest.fixture(scope="module")
def corpus(bold_sentences: list[str]) -> list[str]:
    return bold_sentences[:400]


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory, corpus) -> dict[str, str]:
    tokenizer = build_wordpiece_tokenizer(corpus)
    root = tmp_path_factory.mktemp("classifiers")
    return {
        kind: str(build_metric_classifier(root / kind, kind, tokenizer=tokenizer,
                                          max_position_embeddings=MAX_POSITIONS))
        for kind in ("toxicity", "regard", "hate")
    }


def load(directory: str, **kwargs) -> SequenceClassifier:
    return load_sequence_classifier(directory, default="unused/default", env_var="BOLD_TEST_UNUSED",
                                    resource="test classifier", **kwargs)


def naive_probabilities(directory: str, texts: list[str]) -> np.ndarray:
    """What a user would write: one text at a time, no padding, truncated at the position limit."""
    tokenizer = AutoTokenizer.from_pretrained(directory)
    model = AutoModelForSequenceClassification.from_pretrained(directory).eval()
    rows = []
    with torch.no_grad():
        for text in texts:
            encoded = tokenizer(text, truncation=True, max_length=MAX_POSITIONS, return_tensors="pt")
            logits = model(**encoded).logits[0]
            multi = model.config.problem_type == "multi_label_classification"
            rows.append((torch.sigmoid(logits) if multi else torch.softmax(logits, -1)).numpy())
    return np.stack(rows)


def test_labels_and_activation_come_from_the_config(model_dirs):
    toxic, regard, hate = (load(model_dirs[kind]) for kind in ("toxicity", "regard", "hate"))
    assert toxic.labels == TOXIC_BERT_LABELS and toxic.multi_label
    assert regard.labels == REGARD_LABELS and not regard.multi_label
    assert hate.labels == HATE_LABELS and not hate.multi_label
    assert toxic.max_length == MAX_POSITIONS  # tokenizer says "no limit": position embeddings decide


@pytest.mark.parametrize("kind", ["toxicity", "regard", "hate"])
def test_batched_equals_one_at_a_time(model_dirs, corpus, kind):
    long_text = " ".join(corpus[:40])  # hundreds of tokens, far past the 64 positions
    texts = corpus[:60] + ["", long_text, corpus[3], "  ", corpus[10].upper()]
    classifier = load(model_dirs[kind], batch_size=8)
    got = classifier(texts)
    expected = naive_probabilities(model_dirs[kind], texts)
    assert got.shape == (len(texts), len(classifier.labels))
    np.testing.assert_allclose(got, expected, atol=1e-5, rtol=0)
    if kind != "toxicity":
        np.testing.assert_allclose(got.sum(axis=1), 1.0, atol=1e-5)
    # The varied outputs make the comparison meaningful (not all texts scoring the same).
    assert got[:60].std(axis=0).max() > 0.01


@pytest.mark.parametrize("multiple", [8, 48])
def test_widths_rounded_up_as_on_a_gpu_give_the_same_scores(model_dirs, corpus, multiple):
    """On a GPU batches are padded to a multiple of `GPU_PAD_MULTIPLE` (fewer shapes to set up), never past the
    model's limit (48 rounds 50 tokens up to 96, capped at the 64 positions): padding is masked, scores keep."""
    long_text = " ".join(corpus[:40])
    texts = corpus[:40] + [long_text, ""]
    classifier = load(model_dirs["regard"], batch_size=7)
    exact = classifier(texts)
    widths = []
    classifier._pad_multiple = multiple
    batch = classifier._batch
    classifier._batch = lambda encodings, rows: widths.append((out := batch(encodings,
                                                                            rows))["input_ids"].shape[1]) or out
    np.testing.assert_allclose(classifier(texts), exact, atol=1e-5)
    assert all(width % multiple == 0 or width == MAX_POSITIONS for width in widths) and max(widths) == MAX_POSITIONS


def test_input_order_is_kept_and_duplicates_agree(model_dirs, corpus):
    classifier = load(model_dirs["regard"], batch_size=5)
    texts = corpus[:30]
    forward = classifier(texts)
    permutation = np.random.default_rng(0).permutation(len(texts))
    shuffled = classifier([texts[i] for i in permutation])
    np.testing.assert_allclose(shuffled, forward[permutation], atol=1e-6)
    repeated = classifier(texts + texts[:5])
    np.testing.assert_allclose(repeated[30:], forward[:5], atol=1e-6)


def test_batch_size_does_not_change_results(model_dirs, corpus):
    """Beyond float32 rounding: a batch pads to its longest text, and the masked positions still change the order
    of the sums (1.04e-5 once at the minimum versions, `make test-min`)."""
    classifier = load(model_dirs["toxicity"])
    texts = corpus[100:160]
    reference = classifier(texts, batch_size=1)
    for batch_size in (3, 16, 1000):
        np.testing.assert_allclose(classifier(texts, batch_size=batch_size), reference, atol=5e-5)


def test_matches_transformers_pipeline(model_dirs, corpus):
    """Same numbers as the pipeline Hugging Face's toxicity/regard measurements call."""
    for kind in ("toxicity", "hate"):
        classifier = load(model_dirs[kind])
        # The tiny tokenizers set no length limit, so the pipeline cannot truncate: short texts only.
        texts = [text for text in corpus[200:260] if len(classifier.tokenizer(text)["input_ids"]) <= MAX_POSITIONS]
        assert len(texts) > 20
        baseline = pipeline("text-classification", model=model_dirs[kind], top_k=None, truncation=True)
        rows = [{item["label"]: item["score"] for item in output} for output in baseline(texts)]
        expected = np.array([[row[label] for label in classifier.labels] for row in rows])
        np.testing.assert_allclose(classifier(texts), expected, atol=1e-5)


def test_missing_problem_type_with_jigsaw_labels_means_sigmoid(tmp_path, corpus):
    directory = build_classifier(tmp_path / "old-toxic-bert", TOXIC_BERT_LABELS, problem_type=None,
                                 corpus=corpus[:100], max_position_embeddings=MAX_POSITIONS)
    classifier = load(str(directory))
    assert classifier.multi_label
    model = AutoModelForSequenceClassification.from_pretrained(directory).eval()
    encoded = AutoTokenizer.from_pretrained(directory)(corpus[0], return_tensors="pt")
    with torch.no_grad():
        expected = torch.sigmoid(model(**encoded).logits[0]).numpy()
    np.testing.assert_allclose(classifier([corpus[0]])[0], expected, atol=1e-5)


def test_activation_rule():
    def config(problem_type, labels):
        return SimpleNamespace(problem_type=problem_type, num_labels=len(labels), id2label=dict(enumerate(labels)))

    assert is_multi_label(config("multi_label_classification", ["a", "b"]))
    assert not is_multi_label(config("single_label_classification", TOXIC_BERT_LABELS))
    assert is_multi_label(config(None, TOXIC_BERT_LABELS))
    assert not is_multi_label(config(None, REGARD_LABELS))
    assert is_multi_label(config(None, ["score"]))  # one output: sigmoid, as in the pipeline


def test_max_length_rules():
    sentinel = SimpleNamespace(model_max_length=int(1e30))
    bert = SimpleNamespace(max_position_embeddings=512, model_type="bert", pad_token_id=0)
    roberta = SimpleNamespace(max_position_embeddings=514, model_type="roberta", pad_token_id=1)
    assert model_max_length(sentinel, bert) == 512
    assert model_max_length(sentinel, roberta) == 512
    assert model_max_length(SimpleNamespace(model_max_length=128), bert) == 128
    assert model_max_length(SimpleNamespace(model_max_length=2048), bert) == 512
    assert model_max_length(sentinel, SimpleNamespace()) == 512


def test_empty_input_and_bad_text(model_dirs):
    classifier = load(model_dirs["toxicity"])
    assert classifier([]).shape == (0, 6)
    with pytest.raises(ValueError, match=r"texts\[2\] is None"):
        classifier(["fine", "also fine", None])
    with pytest.raises(ValueError, match="batch_size"):
        load(model_dirs["toxicity"], batch_size=0)


def test_dtype_and_device_options(model_dirs, corpus):
    assert resolve_dtype(None, "cpu") == "float32"
    assert resolve_dtype("bf16", "cpu") == "bfloat16"
    with pytest.raises(ValueError, match="unknown dtype"):
        resolve_dtype("int8", "cpu")
    classifier = load(model_dirs["regard"], dtype="bfloat16", device="cpu")
    texts = corpus[:40]
    reference = load(model_dirs["regard"])(texts)
    lowered = classifier(texts, progress=True)
    assert lowered.dtype == np.float32
    np.testing.assert_allclose(lowered.sum(axis=1), 1.0, atol=1e-5)
    difference = np.abs(lowered - reference)
    # Autocast really ran: bf16 keeps 8 mantissa bits, so some probability must move.
    assert difference.max() > 0
    # The tiny model's large random weights amplify rounding, and CPUs differ in their bf16
    # kernels, so single probabilities can move by ~0.1; on average and in the decision they
    # must agree with fp32.
    assert difference.mean() < 0.02
    assert (lowered.argmax(axis=1) == reference.argmax(axis=1)).mean() >= 0.9


def test_missing_model_names_the_id_and_how_to_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("BOLD_TEST_UNUSED", raising=False)
    with pytest.raises(ResourceNotFoundError) as caught:
        load_sequence_classifier(None, default="unitary/toxic-bert", env_var="BOLD_TEST_UNUSED",
                                 resource="toxicity classifier")
    message = str(caught.value)
    assert "unitary/toxic-bert" in message and "BOLD_TEST_UNUSED" in message and "model=" in message
    with pytest.raises(ResourceNotFoundError, match="no-such-folder"):
        load(str(tmp_path / "no-such-folder"))
