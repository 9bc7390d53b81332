"""Where and in which precision models run: one rule for the generated LM and the classifiers."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any

from bold_eval.core.errors import UsageError
from bold_eval.core.options import DTYPES  # `--dtype` choices; "auto" picks per device (`resolve_dtype`)

_DTYPE_ALIASES = {"float32": "float32", "fp32": "float32", "bfloat16": "bfloat16", "bf16": "bfloat16",
                  "float16": "float16", "fp16": "float16"}


def resolve_device(device: str | None = "auto") -> str:
    """`auto` (or None): CUDA when available, else Apple MPS, else CPU; anything else is kept as given."""
    import torch

    if device in (None, "", "auto"):
        if torch.cuda.is_available():
            return "cuda"
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return "mps"
        return "cpu"
    return str(device)


def check_device(device: str | None) -> str | None:
    """`device` when torch can place a model there on this machine: `auto`, `cpu`, or a CUDA / MPS / XPU device
    that exists here; anything else is a `UsageError` before any model loads."""
    if device in (None, "", "auto"):
        return device
    import torch

    try:
        parsed = torch.device(str(device))
    except (RuntimeError, ValueError):
        raise UsageError(f"--device {device!r} is not a device; use auto, cpu, cuda, cuda:N or mps") from None
    backend = {"cuda": torch.cuda, "mps": getattr(torch.backends, "mps", None), "xpu": getattr(torch, "xpu", None)}
    if parsed.type in backend:
        module = backend[parsed.type]
        if module is None or not module.is_available():
            raise UsageError(f"--device {device}: no {parsed.type} device on this machine; use --device auto or cpu")
        if parsed.type == "cuda" and parsed.index is not None and parsed.index >= torch.cuda.device_count():
            raise UsageError(f"--device {device}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    elif parsed.type != "cpu":
        raise UsageError(f"--device {device!r}: bold-eval runs models on auto, cpu, cuda, cuda:N or mps")
    return device


def resolve_dtype(dtype: str | None, device: str, *, bf16_on_cpu: bool = False) -> str:
    """`auto` (or None): bfloat16 on GPUs that support it (float16 otherwise); on CPU bfloat16 when
    `bf16_on_cpu` and the CPU has native bf16 matrix instructions (AVX512-BF16 / AMX), else float32.

    The generated LM passes `bf16_on_cpu=True` (bf16 halves memory traffic; `--dtype float32`
    computes with the exact weights); the classifiers keep float32 on CPU unless asked.
    """
    import torch

    if dtype not in (None, "auto"):
        name = str(dtype).replace("torch.", "").lower()
        if name not in _DTYPE_ALIASES:
            raise UsageError(f"unknown dtype {dtype!r}; valid: {', '.join(DTYPES)}")
        return _DTYPE_ALIASES[name]
    kind = str(device).split(":")[0]
    if kind == "cuda":
        return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
    if kind == "cpu" and bf16_on_cpu and _cpu_has_bf16():
        return "bfloat16"
    return "float32"


def _cpu_has_bf16() -> bool:
    import torch

    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


# cuDNN's attention builds an execution plan for every new (batch, length) shape: 55-400 ms each (measured by
# flashinfer and sglang developers), and decoding makes a new shape at every step. On an H100 that plan-building
# cost more than the attention itself (benchmarks/RESULTS.md, "H100: all of BOLD end to end, in-place KV
# cache"). The flash and memory-efficient kernels have no per-shape setup, so the models run with those (and the
# math kernel as the last resort).
CUDNN_ATTENTION = False


def attention_kernels(device: Any) -> AbstractContextManager[Any]:
    """The scaled-dot-product-attention backends to run a model with on `device`: on CUDA all but cuDNN's
    (unless `CUDNN_ATTENTION`), elsewhere torch's own choice."""
    if CUDNN_ATTENTION or not str(device).startswith("cuda"):
        return nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH])
