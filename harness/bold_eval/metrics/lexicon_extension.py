"""Lexicon extension (Section 4.4, the paper's method [6]): predict the 8 norms of unrated words from word vectors.

Section 4.4 extends the seed lexicon "to cover a larger vocabulary" with the multi-task
feed-forward network of Buechel and Hahn (2018) / Buechel et al. (2020, MEmoLon): word
embedding -> two shared hidden layers (256 and 128 units, leaky ReLU, dropout) -> one output
per variable, trained jointly with mean squared error and Adam. `extend_lexicon` trains it on
the rated words that have a vector, reports held-out Pearson r per variable, and predicts the
rest of the embedding's vocabulary (or of `vocabulary`). The paper uses fastText vectors; any
gensim `KeyedVectors`, or mapping word -> vector, works here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from bold_eval.core.errors import InputError
from bold_eval.metrics.lexicon import (
    VARIABLES,
    Lexicon,
    LexiconSource,
    clip_scaled,
    load_lexicon,
    unscale_norms,
)


@dataclass(frozen=True)
class ExtensionReport:
    """How well the network predicts held-out rated words, and how many words it added."""

    pearson_r: dict[str, float]  # held-out Pearson r per variable
    n_train: int
    n_test: int
    n_known_without_vector: int  # rated words the embedding lacks (kept, with their ratings)
    n_predicted: int  # words added to the lexicon


class MultiTaskNorms(nn.Module):
    """Shared layers and one linear output per variable (Buechel and Hahn 2018's MTLFFN)."""

    def __init__(self, dim: int, hidden: tuple[int, ...] = (256, 128), dropout: float = 0.1,
                 n_outputs: int = len(VARIABLES)):
        super().__init__()
        layers: list[nn.Module] = [nn.Dropout(dropout)]
        width = dim
        for size in hidden:
            layers += [nn.Linear(width, size), nn.LeakyReLU(0.01), nn.Dropout(dropout)]
            width = size
        self.shared = nn.Sequential(*layers)
        self.heads = nn.Linear(width, n_outputs)  # one output unit per variable, all sharing `shared`

    def forward(self, vectors: torch.Tensor) -> torch.Tensor:
        return self.heads(self.shared(vectors))


def embedding_matrix(embeddings: Any, words: Iterable[str] | None = None) -> tuple[list[str], np.ndarray]:
    """Lowercase keys and their vectors from KeyedVectors, a mapping, or any object with keys + `__getitem__`.

    When several keys lowercase to the same word (e.g. "Apple", "apple"), the first in the
    embedding's order wins (for word2vec/fastText files, the most frequent one).
    """
    is_keyed_vectors = hasattr(embeddings, "index_to_key") and hasattr(embeddings, "vectors")
    if is_keyed_vectors:
        keys = list(embeddings.index_to_key)
    else:
        keys = list(embeddings.keys()) if hasattr(embeddings, "keys") else list(embeddings)

    wanted = None if words is None else set(words)
    chosen: dict[str, int] = {}
    for position, key in enumerate(keys):
        word = str(key).lower()
        if word not in chosen and (wanted is None or word in wanted):
            chosen[word] = position
    if not chosen:
        return [], np.zeros((0, 0), dtype=np.float32)
    if is_keyed_vectors:  # one gather from the (possibly memory-mapped) matrix, no per-row views
        rows = np.fromiter(chosen.values(), dtype=np.int64, count=len(chosen))
        matrix = np.asarray(embeddings.vectors)[rows].astype(np.float32, copy=False)
    else:
        matrix = np.stack([np.asarray(embeddings[keys[position]], dtype=np.float32) for position in chosen.values()])
    return list(chosen), matrix


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    if x.size < 2 or np.std(x) == 0 or np.std(y) == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


def _held_out_split(n_known: int, test_size: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(test rows, train rows): a random `test_size` share of the rated words, fixed by `seed`, is held out."""
    generator = np.random.default_rng(seed)
    order = generator.permutation(n_known)
    n_test = max(1, int(round(test_size * n_known)))
    return order[:n_test], order[n_test:]


def _train_network(
    x_train: np.ndarray,
    y_train: np.ndarray,
    *,
    hidden: tuple[int, ...],
    dropout: float,
    learning_rate: float,
    batch_size: int,
    epochs: int,
    seed: int,
) -> MultiTaskNorms:
    """Fit the multi-task network jointly on all variables (summed MSE, Adam); returned in eval mode."""
    torch.manual_seed(seed)
    model = MultiTaskNorms(x_train.shape[1], tuple(hidden), dropout, len(VARIABLES))
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    inputs = torch.from_numpy(x_train)
    targets = torch.from_numpy(y_train)
    shuffle = torch.Generator().manual_seed(seed)
    model.train()
    for _ in range(epochs):
        for batch in torch.randperm(len(x_train), generator=shuffle).split(batch_size):
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(inputs[batch]), targets[batch])
            loss.backward()
            optimizer.step()
    model.eval()
    return model


def _predict_norms(model: MultiTaskNorms, x: np.ndarray, mean: np.ndarray, std: np.ndarray) -> np.ndarray:
    """The network's norms for word vectors `x`, back on Section 4.4 scales (targets were standardized)."""
    with torch.no_grad():
        out = torch.cat([model(chunk) for chunk in torch.from_numpy(x).split(4096)]) if len(x) else torch.zeros(0,
                                                                                                                len(VARIABLES))
    return out.numpy().astype(np.float64) * std + mean


def _trained_predictor(
    x_train: np.ndarray, y_train: np.ndarray, **training: Any
) -> Callable[[np.ndarray], np.ndarray]:
    """Train the network on the rated words (`training`: `_train_network`'s keywords); return a function
    from word vectors to norms on Section 4.4 scales."""
    # Standardize targets so the 8 heads contribute comparably to the summed MSE.
    mean = y_train.mean(axis=0)
    std = y_train.std(axis=0) + 1e-8
    model = _train_network(x_train, ((y_train - mean) / std).astype(np.float32), **training)
    return lambda x: _predict_norms(model, x, mean, std)


def _extended_table(base: Lexicon, new_words: list[str], new_values: np.ndarray) -> pd.DataFrame:
    """`word`, the 8 variables on raw scales, and `source`: the rated words first, then the predicted ones."""
    frame = pd.DataFrame(unscale_norms(np.vstack([base.values, new_values])), columns=list(VARIABLES))
    frame.insert(0, "word", list(base.words) + new_words)
    frame["source"] = ["lexicon"] * len(base) + ["predicted"] * len(new_words)
    return frame


def extend_lexicon(
    lexicon: LexiconSource,
    embeddings: Any,
    vocabulary: Iterable[str] | None = None,
    *,
    hidden: tuple[int, ...] = (256, 128),
    dropout: float = 0.1,
    learning_rate: float = 1e-3,
    batch_size: int = 128,
    epochs: int = 50,
    test_size: float = 0.1,
    seed: int = 0,
) -> tuple[pd.DataFrame, ExtensionReport]:
    """Train the multi-task network on the rated words and predict norms for unrated words.

    `lexicon`: anything `bold_eval.metrics.lexicon.load_lexicon` accepts (None = Warriner). `embeddings`:
    gensim KeyedVectors, a dict word -> vector, or an object with `keys()` and `__getitem__`.
    `vocabulary`: the words to predict (default: every embedding word not in the lexicon), e.g.
    the distinct words of the texts to score. A random `test_size` share of the rated words
    (fixed by `seed`) is held out to report Pearson r; the predictions come from that same
    network. Returns a table `word` + the 8 variables on raw scales (VAD 1-9, BE5 1-5, clipped)
    plus `source` ("lexicon" or "predicted"), which the metric accepts as `lexicon=`, and the report.
    """
    base: Lexicon = load_lexicon(lexicon)
    vocab_words = None if vocabulary is None else {str(word).lower() for word in vocabulary}
    wanted = None if vocab_words is None else vocab_words | set(base.words)
    words, vectors = embedding_matrix(embeddings, wanted)
    position = {word: i for i, word in enumerate(words)}
    known = [word for word in base.words if word in position]
    if len(known) < 10:
        raise InputError(f"only {len(known)} rated words have a vector; need at least 10 to train and test")

    test_rows, train_rows = _held_out_split(len(known), test_size, seed)
    x_known = vectors[[position[word] for word in known]]
    y_known = base.values[[base.index[word] for word in known]]  # Section 4.4 scales
    predict = _trained_predictor(
        x_known[train_rows], y_known[train_rows], hidden=hidden, dropout=dropout, learning_rate=learning_rate,
        batch_size=batch_size, epochs=epochs, seed=seed,
    )
    predicted_test = predict(x_known[test_rows])
    pearson = {v: _pearson(predicted_test[:, k], y_known[test_rows, k]) for k, v in enumerate(VARIABLES)}

    new_words = [word for word in words if word not in base.index and (vocab_words is None or word in vocab_words)]
    new_values = predict(vectors[[position[word] for word in new_words]]) if new_words else np.zeros((0,
                                                                                                      len(VARIABLES)))
    new_values = clip_scaled(new_values)
    report = ExtensionReport(pearson_r=pearson, n_train=len(train_rows), n_test=len(test_rows),
                             n_known_without_vector=len(base) - len(known), n_predicted=len(new_words))
    return _extended_table(base, new_words, new_values), report
