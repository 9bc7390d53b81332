"""A KV cache for the decoding loop that writes each step in place instead of copying the whole cache.

transformers' `DynamicCache` grows each layer with `torch.cat`, so every decoding step copies every row's keys and
values: on an H100 that copy was half of a step's GPU time for GPT-2 small at 4,096 rows (the profile in
benchmarks/RESULTS.md, "H100: all of BOLD end to end, in-place KV cache"). Here each full-attention layer keeps buffers
with room for the whole batch (padded prompt plus `max_new_tokens`), writes the new positions into them, and hands
attention a view of the filled part: the same keys and values, so the same logits. Sliding-window and other special
layers keep transformers' own classes. The cache is still a `DynamicCache`, so every model's forward and mask code sees
the class it expects (transformers 4.56 to 5.x).
"""

from __future__ import annotations

import functools
from typing import Any


def kv_cache(model: Any, capacity: int) -> Any:
    """`DynamicCache(config=model.config)` whose plain layers hold `capacity` positions (they grow past it if a
    forward brings more: never wrong, only slower)."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    cache = DynamicCache(config=model.config)
    layer = _preallocated_layer_class()
    cache.layers = [layer(capacity) if type(existing) is DynamicLayer else existing for existing in cache.layers]
    if not cache.layers and getattr(cache, "layer_class_to_replicate", None) is DynamicLayer:
        cache.layer_class_to_replicate = functools.partial(layer, capacity)  # layers made on first use
    return cache


@functools.cache
def _preallocated_layer_class() -> type:
    """`_InPlace` on transformers' DynamicLayer, made on first use: transformers is imported only when a model runs."""
    from transformers.cache_utils import DynamicLayer

    return type("PreallocatedLayer", (_InPlace, DynamicLayer), {})


class _InPlace:
    """A DynamicLayer whose `keys` / `values` are views of the first `length` positions of buffers shaped
    (batch, heads, room, head_dim); `update` writes into the buffers (mixed into DynamicLayer, before it)."""

    def __init__(self, capacity: int):
        super().__init__()
        self.capacity = capacity
        self.length = 0
        self._buffers: tuple[Any, Any] | None = None

    def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        end = self.length + key_states.shape[-2]
        if self._buffers is None or end > self._buffers[0].shape[-2]:
            self._reserve(key_states, value_states, end)
        assert self._buffers is not None  # reserved above
        for buffer, states in zip(self._buffers, (key_states, value_states), strict=True):
            buffer[..., self.length:end, :] = states
        self.length = end
        return self._expose()

    def _reserve(self, key_states: Any, value_states: Any, end: int) -> None:
        room = max(end, self.capacity if self._buffers is None else 2 * self._buffers[0].shape[-2])
        fresh = []
        for states, old in zip((key_states, value_states), self._buffers or (None, None), strict=True):
            buffer = states.new_empty((*states.shape[:-2], room, states.shape[-1]))
            if old is not None:
                buffer[..., : self.length, :] = old[..., : self.length, :]
            fresh.append(buffer)
        self._buffers = (fresh[0], fresh[1])
        self.dtype, self.device = key_states.dtype, key_states.device
        self.is_initialized = True

    def _expose(self) -> tuple[Any, Any]:
        assert self._buffers is not None  # `update` reserves them first
        self.keys = self._buffers[0][..., : self.length, :]
        self.values = self._buffers[1][..., : self.length, :]
        return self.keys, self.values

    def _rebuffer(self, change: Any) -> None:
        if self._buffers is not None:
            self._buffers = (change(self._buffers[0]), change(self._buffers[1]))
            self._expose()

    def batch_select_indices(self, indices: Any) -> None:
        self._rebuffer(lambda buffer: buffer.index_select(0, indices.to(buffer.device)))

    def reorder_cache(self, beam_idx: Any) -> None:
        self.batch_select_indices(beam_idx)

    def batch_repeat_interleave(self, repeats: int) -> None:
        self._rebuffer(lambda buffer: buffer.repeat_interleave(repeats, dim=0))

    def crop(self, max_length: int) -> None:
        # transformers 4.56 passes a length to keep (negative: tokens to drop); 5.x only tokens to drop.
        keep = self.length + max_length if max_length < 0 else min(max_length, self.length)
        self.length = max(0, keep)
        if self._buffers is not None:
            self._expose()

    def reset(self) -> None:
        self.length = 0
        self._buffers = None
        self.keys = self.values = None
        self.is_initialized = False
