"""`--model-args KEY=VALUE,...`: how a big Hugging Face checkpoint is loaded (the lm-eval convention).

The models people check for bias before release are 7B-70B checkpoints that need sharding over
GPUs (`device_map=auto`), 4/8-bit quantization, custom code or a PEFT adapter. These options go
to `from_pretrained`; the parsed values are plain JSON (strings, booleans) so that run.json and
the resume fingerprint record them, and a resumed run loads the model the same way.

Keys: see `MODEL_ARGS`. Precision stays with `--dtype` and placement of unsharded models with
`--device`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bold_eval.core.errors import UsageError

# key -> (type, what it does); the type is how VALUE is read.
MODEL_ARGS: dict[str, tuple[type, str]] = {
    "device_map": (str, "shard the model over devices: auto, balanced, sequential, or one device (cuda:0, cpu)"),
    "offload_folder": (str, "folder for weights that fit on no device (with device_map)"),
    "trust_remote_code": (bool, "run the checkpoint's own modelling code"),
    "attn_implementation": (str, "eager, sdpa, flash_attention_2, ..."),
    "revision": (str, "branch, tag or commit of the Hub repository"),
    "subfolder": (str, "folder of the checkpoint inside the repository"),
    "variant": (str, "weights variant, e.g. fp16"),
    "load_in_4bit": (bool, "bitsandbytes 4-bit quantization"),
    "load_in_8bit": (bool, "bitsandbytes 8-bit quantization"),
    "bnb_4bit_quant_type": (str, "nf4 or fp4"),
    "bnb_4bit_compute_dtype": (str, "dtype of 4-bit matmuls (default: --dtype)"),
    "bnb_4bit_use_double_quant": (bool, "quantize the quantization constants too"),
    "peft": (str, "PEFT adapter (folder or Hub id) applied on top of the model"),
}
_ELSEWHERE = {"dtype": "--dtype", "torch_dtype": "--dtype", "device": "--device", "pretrained": "--model",
              "gguf_file": "--gguf-file"}
_TRUE, _FALSE = {"true", "1", "yes"}, {"false", "0", "no"}


def parse_model_args(spec: str | Mapping[str, Any] | None) -> dict[str, Any]:
    """`"device_map=auto,load_in_4bit=True,peft=/adapters/x"` -> {key: typed value}, keys sorted.

    Also takes an already parsed mapping (run.json, the Python API) and validates it the same way.
    """
    if spec is None or spec == "":
        return {}
    pairs: list[tuple[str, Any]] = []
    if isinstance(spec, Mapping):
        pairs = list(spec.items())
    else:
        for piece in str(spec).split(","):
            if not piece.strip():
                continue
            key, equals, value = piece.partition("=")
            if not equals:
                raise UsageError(f"--model-args {piece.strip()!r}: expected KEY=VALUE (comma-separated)")
            pairs.append((key.strip(), value.strip()))
    parsed: dict[str, Any] = {}
    for key, value in pairs:
        if key in _ELSEWHERE:
            raise UsageError(f"--model-args {key}: use {_ELSEWHERE[key]} instead")
        if key not in MODEL_ARGS:
            raise UsageError(f"--model-args: unknown key {key!r}; valid: {', '.join(MODEL_ARGS)}")
        if key in parsed:
            raise UsageError(f"--model-args: {key} given twice")
        parsed[key] = _typed(key, value)
    if parsed.get("load_in_4bit") and parsed.get("load_in_8bit"):
        raise UsageError("--model-args: load_in_4bit and load_in_8bit exclude each other")
    stray = [key for key in parsed if key.startswith("bnb_4bit_") and not parsed.get("load_in_4bit")]
    if stray:
        raise UsageError(f"--model-args {', '.join(stray)} need load_in_4bit=true")
    return dict(sorted(parsed.items()))


def _typed(key: str, value: Any) -> Any:
    kind = MODEL_ARGS[key][0]
    if kind is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE | _FALSE:
            return text in _TRUE
        raise UsageError(f"--model-args {key}={value!r}: expected true or false")
    text = str(value).strip()
    if not text:
        raise UsageError(f"--model-args {key}: empty value")
    return text


def is_quantized(model_args: Mapping[str, Any]) -> bool:
    return bool(model_args.get("load_in_4bit") or model_args.get("load_in_8bit"))


def places_itself(model_args: Mapping[str, Any]) -> bool:
    """Whether from_pretrained puts the weights on devices itself (device_map, bitsandbytes):
    such a model must not be moved with `.to(device)` afterwards."""
    return "device_map" in model_args or is_quantized(model_args)


def check_data_parallel(model_args: Mapping[str, Any], num_processes: int | None = None) -> None:
    """Refuse `device_map` under several processes (accelerate launch / torchrun).

    device_map spreads one copy of the model over every visible GPU; N data-parallel processes
    would each load a copy spread over the same GPUs (N times the memory, GPUs shared at random).
    `num_processes` defaults to $WORLD_SIZE, which both launchers set.
    """
    processes = num_processes if num_processes is not None else int(os.environ.get("WORLD_SIZE", "1") or 1)
    if processes > 1 and "device_map" in model_args:
        raise UsageError(
            f"--model-args device_map={model_args['device_map']} shards one model over all visible GPUs in one "
            f"process, but this run has {processes} processes (accelerate launch / torchrun). Run bold-eval as a "
            "single process to shard a model too big for one GPU, or drop device_map so that each process "
            "holds a whole copy on its own GPU (data parallelism)."
        )


def quantization_config(model_args: Mapping[str, Any], torch_dtype: Any) -> Any:
    """The BitsAndBytesConfig that `load_in_4bit` / `load_in_8bit` ask for (None without them)."""
    if not is_quantized(model_args):
        return None
    import torch
    from transformers import BitsAndBytesConfig

    if model_args.get("load_in_8bit"):
        return BitsAndBytesConfig(load_in_8bit=True)
    compute = model_args.get("bnb_4bit_compute_dtype")
    if compute is not None:
        if not isinstance(getattr(torch, compute, None), torch.dtype):
            raise UsageError(f"--model-args bnb_4bit_compute_dtype={compute!r} is not a torch dtype (e.g. bfloat16)")
        compute_dtype = getattr(torch, compute)
    else:
        compute_dtype = torch_dtype
    kwargs: dict[str, Any] = {"load_in_4bit": True, "bnb_4bit_compute_dtype": compute_dtype}
    if "bnb_4bit_quant_type" in model_args:
        if model_args["bnb_4bit_quant_type"] not in ("nf4", "fp4"):
            raise UsageError(f"--model-args bnb_4bit_quant_type={model_args['bnb_4bit_quant_type']!r}: nf4 or fp4")
        kwargs["bnb_4bit_quant_type"] = model_args["bnb_4bit_quant_type"]
    if "bnb_4bit_use_double_quant" in model_args:
        kwargs["bnb_4bit_use_double_quant"] = model_args["bnb_4bit_use_double_quant"]
    return BitsAndBytesConfig(**kwargs)


def _require(module: str, what: str, install: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ImportError(f"--model-args {what} needs the {module} package, which is not installed: "
                          f"{install}") from error


def pretrained_kwargs(model_args: Mapping[str, Any], *, torch_dtype: Any, revision: str | None = None) -> dict[str,
                                                                                                               Any]:
    """Keyword arguments for `AutoModelForCausalLM.from_pretrained` (dtype included)."""
    args = parse_model_args(model_args)
    kwargs: dict[str, Any] = {"dtype": torch_dtype}
    for key in ("device_map", "offload_folder", "trust_remote_code", "attn_implementation", "subfolder", "variant"):
        if key in args:
            kwargs[key] = args[key]
    chosen = merged_revision(args, revision)
    if chosen is not None:
        kwargs["revision"] = chosen
    if is_quantized(args):
        _require("bitsandbytes", "load_in_4bit / load_in_8bit",
                 "pip install bitsandbytes (it quantizes on CUDA GPUs)")
        kwargs["quantization_config"] = quantization_config(args, torch_dtype)
    return kwargs


def tokenizer_kwargs(model_args: Mapping[str, Any], revision: str | None = None) -> dict[str, Any]:
    """Keyword arguments for `AutoTokenizer.from_pretrained` (the tokenizer of the same revision)."""
    kwargs: dict[str, Any] = {}
    chosen = merged_revision(model_args, revision)
    if chosen is not None:
        kwargs["revision"] = chosen
    if model_args.get("trust_remote_code"):
        kwargs["trust_remote_code"] = True
    if "subfolder" in model_args:
        kwargs["subfolder"] = model_args["subfolder"]
    return kwargs


def merged_revision(model_args: Mapping[str, Any], revision: str | None) -> str | None:
    """`--revision` and `--model-args revision=` must agree when both are given."""
    given = model_args.get("revision")
    if given is not None and revision is not None and given != revision:
        raise UsageError(f"--revision {revision!r} and --model-args revision={given!r} disagree; give one")
    return given if given is not None else revision


def apply_adapter(model: Any, model_args: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """Load `peft=PATH` on top of `model`; LoRA-style adapters are merged into the weights of an
    unquantized model (generation then runs at the base model's speed). Returns (model, info)."""
    path = model_args.get("peft")
    if not path:
        return model, {}
    peft = _require("peft", f"peft={path}", "pip install peft")
    model = peft.PeftModel.from_pretrained(model, path)
    config = model.peft_config.get("default")
    info: dict[str, Any] = {"path": str(path), "peft_type": str(getattr(config, "peft_type", "")),
                            "base_model": getattr(config, "base_model_name_or_path", None), "merged": False}
    folder = Path(path).expanduser()
    for name in ("adapter_model.safetensors", "adapter_model.bin"):
        if (folder / name).is_file():
            from bold_eval.core.resources import sha256_of

            info["sha256"] = sha256_of(folder / name)
            break
    if not is_quantized(model_args) and hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()
        info["merged"] = True
    return model, info


def load_pretrained(name: str, model_args: Mapping[str, Any], *, torch_dtype: Any,
                    revision: str | None = None) -> tuple[Any, Any, dict[str, Any]]:
    """Tokenizer and causal LM of `name` loaded as `model_args` say (for `loading.load_causal_lm`).

    Returns (model, tokenizer, info); info holds the parsed model_args, the device map of a
    sharded model and the adapter. OSError from a missing checkpoint propagates unchanged.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    args = parse_model_args(model_args)
    check_data_parallel(args)
    tokenizer = AutoTokenizer.from_pretrained(name, **tokenizer_kwargs(args, revision))
    model = AutoModelForCausalLM.from_pretrained(name, **pretrained_kwargs(args, torch_dtype=torch_dtype,
                                                                           revision=revision))
    info: dict[str, Any] = {"model_args": args}
    if "device_map" in args:  # transformers sets hf_device_map only when the plan spans several devices
        device_map = getattr(model, "hf_device_map", None) or {"": model.device}
        info["device_map"] = {str(module): str(device) for module, device in device_map.items()}
    model, adapter = apply_adapter(model, args)
    if adapter:
        info["peft"] = adapter
    return model, tokenizer, info
