"""BERT's generator (appendix A.2.1): Gibbs sampling from tiny real masked LMs with a BOLD-trained
WordPiece vocabulary: the procedure step by step, the temperature on known logits, batch
independence, resume, and masked-LM detection."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from transformers import (
    BartConfig,
    BertConfig,
    BertForMaskedLM,
    DistilBertConfig,
    DistilBertForMaskedLM,
    GPT2Config,
    LlamaConfig,
    RobertaConfig,
    RobertaForMaskedLM,
)

from bold_eval.generation.base import WorkItem
from bold_eval.generation.gibbs import (
    DEFAULT_MODEL,
    GibbsGenerator,
    GibbsRunGenerator,
    GibbsSettings,
    decode_continuations,
    gibbs_draws,
    gibbs_sample,
    head_on_chosen_position_matches,
    initial_inputs,
    sample_tokens,
    settings_from_options,
)
from bold_eval.generation.loading import is_masked_lm_checkpoint, is_masked_lm_config, load_masked_lm

pytestmark = pytest.mark.usefixtures("one_thread")

# Known logits: four ordinary words get these biases, every other token FLOOR.
KNOWN_WORDS = ("the", "of", "and", "in")
KNOWN_BIASES = (2.0, 1.0, 0.0, -1.0)
FLOOR = -50.0


@pytest.fixture(scope="module")
def tokenizer(bold_sentences):
    from bold_eval.testing.models import build_wordpiece_tokenizer

    return build_wordpiece_tokenizer(bold_sentences[:300], vocab_size=1000)


def _config(tokenizer, cls=BertConfig, **overrides):
    values = dict(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=64, max_position_embeddings=64, pad_token_id=tokenizer.pad_token_id,
                  initializer_range=0.5)
    values.update(overrides)
    return cls(**values)


@pytest.fixture(scope="module")
def tiny_mlm(tokenizer):
    """A random BertForMaskedLM; initializer_range 0.5 spreads its predictions over many tokens."""
    torch.manual_seed(0)
    return BertForMaskedLM(_config(tokenizer)).eval()


@pytest.fixture(scope="module")
def known_mlm(tokenizer):
    """A BertForMaskedLM whose logits are its output bias at every position, whatever the input:
    the head's LayerNorm is zeroed, so the decoder sees zeros and adds its bias."""
    torch.manual_seed(0)
    model = BertForMaskedLM(_config(tokenizer)).eval()
    bias = torch.full((len(tokenizer),), FLOOR)
    bias[_known_ids(tokenizer)] = torch.tensor(KNOWN_BIASES)
    with torch.no_grad():
        model.cls.predictions.transform.LayerNorm.weight.zero_()
        model.cls.predictions.transform.LayerNorm.bias.zero_()
        model.cls.predictions.decoder.bias.copy_(bias)
    ids, mask, _ = initial_inputs(tokenizer, ["He was an American actor"], 3)
    with torch.no_grad():
        assert torch.equal(model(input_ids=ids, attention_mask=mask).logits[0, 2], bias)
    return model


def _known_ids(tokenizer) -> list[int]:
    ids = tokenizer.convert_tokens_to_ids(list(KNOWN_WORDS))
    assert tokenizer.unk_token_id not in ids
    return ids


@pytest.fixture(scope="module")
def items(bold_sentences):
    """BOLD-like prompts of 2 to 9 words, each once."""
    return [WorkItem(f"p/{i}", 0, " ".join(sentence.split()[: 2 + i % 8])) for i,
            sentence in enumerate(bold_sentences[:11])]


def _run(generator, items, **kwargs):
    out = {}
    stats = generator.generate(items, on_batch=lambda batch, results: out.update(
        {(item.prompt_id, item.sample): result for item, result in zip(batch, results, strict=True)}), progress=False,
        **kwargs)
    return [out[(item.prompt_id, item.sample)] for item in items], stats


SMALL = dict(max_new_tokens=6, burn_in=15, max_iter=40, top_k=20)


def test_defaults_follow_appendix_a21(tiny_mlm, tokenizer):
    generator = GibbsGenerator(tiny_mlm, tokenizer, seed=3)
    assert DEFAULT_MODEL == "bert-large-cased"
    assert generator.kind == "gibbs-mlm"
    assert generator.settings() == {"seed": 3, "mode": "parallel-sequential",
                                    "max_new_tokens": 15, "temperature": 0.7, "burn_in": 200, "max_iter": 500,
                                    "top_k": 100}
    assert "burn-in 200" in generator.info()["description"]
    json.dumps(generator.settings())
    json.dumps(generator.info())
    for kwargs, flag in [({"temperature": 0}, "--gibbs-temperature"), ({"burn_in": 501}, "--gibbs-burn-in"),
                         ({"max_iter": 0}, "--gibbs-max-iter"), ({"top_k": -1}, "--gibbs-top-k"),
                         ({"max_new_tokens": 0}, "--max-new-tokens")]:
        with pytest.raises(ValueError, match=flag):
            GibbsSettings(**kwargs)


def test_sample_tokens_by_hand():
    logits = torch.log(torch.tensor([[0.3, 0.2, 0.5]]))

    def pick(u, **kwargs):
        return sample_tokens(logits, torch.tensor([u]), **kwargs).item()

    # Whole vocabulary in id order: cumulative 0.3, 0.5, 1.0.
    assert [pick(u, temperature=1.0, top_k=None) for u in (0.1, 0.4, 0.9)] == [0, 1, 2]
    # Top-2 = tokens 2 (0.5) and 0 (0.3), renormalized: cumulative 0.625, 1.0.
    assert [pick(u, temperature=1.0, top_k=2) for u in (0.6, 0.7)] == [2, 0]
    # Temperature 0.5 squares the probabilities: 0.09, 0.04, 0.25 over 0.38, cumulative 0.237, 0.342, 1.0.
    assert [pick(u, temperature=0.5, top_k=None) for u in (0.2, 0.3, 0.35)] == [0, 1, 2]
    assert pick(0.0, temperature=1.0, top_k=0) == 2  # argmax after burn-in without top-k


def _softmax(values: np.ndarray, temperature: float) -> np.ndarray:
    scaled = np.asarray(values, dtype=np.float64) / temperature
    exp = np.exp(scaled - scaled.max())
    return exp / exp.sum()


def _by_hand(tokenizer, item, settings, seed):
    """The final generated tokens of `item` on the known-logits model, simulated without the model:
    each position keeps the token drawn at its last visit, from the full softmax(bias / T) in id
    order during burn-in, from the top-k (sorted) afterwards, or the argmax for top_k 0."""
    positions, uniforms = gibbs_draws(seed, item, settings)
    bias = np.full(len(tokenizer), FLOOR)
    bias[_known_ids(tokenizer)] = KNOWN_BIASES
    by_value = np.argsort(-bias, kind="stable")
    tokens = [tokenizer.mask_token_id] * settings.max_new_tokens
    for step, (position, u) in enumerate(zip(positions, uniforms, strict=True)):
        if step < settings.burn_in:
            order = np.arange(len(bias))
        elif settings.top_k == 0:
            tokens[position] = int(by_value[0])
            continue
        else:
            order = by_value[: settings.top_k]
        cumulative = np.cumsum(_softmax(bias[order], settings.temperature))
        tokens[position] = int(order[min(int((cumulative <= u * cumulative[-1]).sum()), len(order) - 1)])
    return tokens


@pytest.mark.parametrize(("burn_in", "top_k"), [(12, 2), (12, 0), (29, 0), (30, 2)])
def test_every_iteration_by_hand_on_known_logits(known_mlm, tokenizer, bold_sentences, burn_in, top_k):
    """Positions, burn-in boundary, iteration count and token draws all match a by-hand simulation.

    burn_in 29 of 30: only the last iteration is past burn-in; burn_in 30: none is. Either way the
    last iteration's position is a last visit in every row, so an off-by-one shows in the text."""
    many = [WorkItem(f"h/{i}", 0, " ".join(s.split()[: 2 + i % 5])) for i, s in enumerate(bold_sentences[:30])]
    settings = GibbsSettings(max_new_tokens=5, temperature=1.0, burn_in=burn_in, max_iter=30, top_k=top_k)
    input_ids, mask, start = initial_inputs(tokenizer, [item.prompt for item in many], settings.max_new_tokens)
    streams = [gibbs_draws(7, item, settings) for item in many]
    ids = gibbs_sample(known_mlm, input_ids, mask, start, np.stack([s[0] for s in streams]),
                       np.stack([s[1] for s in streams]), settings, tokenizer.mask_token_id)
    for row, item in enumerate(many):
        begin = int(start[row])
        assert ids[row, begin: begin + settings.max_new_tokens].tolist() == _by_hand(tokenizer, item, settings, 7), row


def test_prompt_and_special_tokens_never_change(tiny_mlm, tokenizer, items):
    settings = GibbsSettings(**SMALL)
    input_ids, mask, start = initial_inputs(tokenizer, [item.prompt for item in items], settings.max_new_tokens)
    streams = [gibbs_draws(0, item, settings) for item in items]
    positions = np.stack([s[0] for s in streams])
    seen = []
    handle = tiny_mlm.register_forward_pre_hook(lambda module, args, kwargs: seen.append(kwargs["input_ids"].clone()),
                                                with_kwargs=True)
    try:
        ids = gibbs_sample(tiny_mlm, input_ids, mask, start, positions, np.stack([s[1] for s in streams]), settings,
                           tokenizer.mask_token_id)
    finally:
        handle.remove()
    assert len(seen) == settings.max_iter  # one forward pass per iteration for the whole batch
    generated = torch.zeros_like(input_ids, dtype=torch.bool)
    for row in range(len(items)):
        generated[row, int(start[row]): int(start[row]) + settings.max_new_tokens] = True
    for step, state in enumerate([*seen, ids]):
        assert torch.equal(state[~generated], input_ids[~generated]), step  # [CLS], prompt, [SEP], padding
        if step < settings.max_iter:  # the row's chosen position is masked when the model sees it
            assert (state[torch.arange(len(items)), start + torch.as_tensor(positions[:, step])]
                    == tokenizer.mask_token_id).all()
    assert (ids[generated] != tokenizer.mask_token_id).float().mean() > 0.9


def test_output_length_and_iteration_counts(tiny_mlm, tokenizer, items):
    calls = []
    handle = tiny_mlm.register_forward_hook(lambda module, args, output: calls.append(output.logits.shape))
    try:
        generator = GibbsGenerator(tiny_mlm, tokenizer, batch_size=4, max_new_tokens=5, burn_in=20, max_iter=60,
                                   top_k=20)
        results, stats = _run(generator, items)
    finally:
        handle.remove()
    batches = math.ceil(len(items) / 4)
    # max_iter passes per batch, plus the one-time two-pass check of the chosen-position LM head.
    assert len(calls) == stats.forward_passes == batches * 60 + 2
    assert stats.batches == batches and stats.batch_size == 4
    assert all(shape[1] == 1 for shape in calls[2:])  # the LM head ran on the chosen position only
    assert generator.info()["lm_head"] == "chosen position only"
    # Every position was visited ((4/5)^60 per position not to be), so each text has 5 new tokens.
    assert [result.num_new_tokens for result in results] == [5] * len(items)
    assert stats.new_tokens == 5 * len(items)
    for item, result in zip(items, results, strict=True):
        assert result.continuation.strip()
        assert len(tokenizer(result.continuation, add_special_tokens=False)["input_ids"]) <= 5 + 2, item


def test_temperature_on_known_logits(known_mlm, tokenizer, bold_sentences):
    """Empirical token frequencies match softmax(logits / T): low T concentrates, high T spreads."""
    many = [WorkItem(f"t/{i}", 0, " ".join(s.split()[:4])) for i, s in enumerate(bold_sentences[:200])]
    known = _known_ids(tokenizer)
    frequencies = {}
    for temperature in (0.5, 2.0):
        # All iterations are burn-in: every final token is a draw from the full softmax(bias / T).
        generator = GibbsGenerator(known_mlm, tokenizer, batch_size=200, temperature=temperature,
                                   max_new_tokens=5, burn_in=40, max_iter=40)
        tokens = _final_tokens(generator, many)
        assert set(tokens) <= set(known)
        observed = np.array([tokens.count(token) for token in known]) / len(tokens)
        expected = _softmax(KNOWN_BIASES, temperature)
        assert np.abs(observed - expected).max() < 4 * math.sqrt(0.25 / len(tokens)), (temperature, observed, expected)
        frequencies[temperature] = observed
    assert frequencies[0.5][0] > 0.8 > 0.5 > frequencies[2.0][0]
    entropy = {t: -(f[f > 0] * np.log(f[f > 0])).sum() for t, f in frequencies.items()}
    assert entropy[0.5] < entropy[2.0]
    # After burn-in the top-k filter applies: top_k 2 leaves the two best words, renormalized.
    generator = GibbsGenerator(known_mlm, tokenizer, batch_size=200, temperature=1.0, max_new_tokens=5,
                               burn_in=0, max_iter=40, top_k=2)
    tokens = _final_tokens(generator, many)
    observed = tokens.count(known[0]) / len(tokens)
    assert set(tokens) <= set(known[:2])
    assert abs(observed - _softmax(KNOWN_BIASES[:2], 1.0)[0]) < 4 * math.sqrt(0.25 / len(tokens))


def _final_tokens(generator, items) -> list[int]:
    """The generated token ids of every item (decoded texts re-split into the known words)."""
    results, _ = _run(generator, items)
    words = " ".join(result.continuation for result in results).split()
    return generator.tokenizer.convert_tokens_to_ids(words)


def test_same_texts_for_any_batch_size(tiny_mlm, tokenizer, items):
    texts = {}
    for batch_size in (1, 4, len(items), "auto"):
        results, _ = _run(GibbsGenerator(tiny_mlm, tokenizer, batch_size=batch_size, **SMALL), items)
        texts[batch_size] = [result.continuation for result in results]
    assert texts[1] == texts[4] == texts[len(items)] == texts["auto"]
    assert len(set(texts[1])) > len(items) // 2  # the random model does not say the same thing everywhere


def test_resume_reproduces_an_uninterrupted_run(tiny_mlm, tokenizer, items):
    whole, _ = _run(GibbsGenerator(tiny_mlm, tokenizer, batch_size=4, **SMALL), items)
    first, _ = _run(GibbsGenerator(tiny_mlm, tokenizer, batch_size=3, **SMALL), items[:5])
    rest, _ = _run(GibbsGenerator(tiny_mlm, tokenizer, batch_size=2, **SMALL), items[5:])
    assert [r.continuation for r in first + rest] == [r.continuation for r in whole]
    assert [r.num_new_tokens for r in first + rest] == [r.num_new_tokens for r in whole]


def test_seed_and_sample_pick_the_stream(tiny_mlm, tokenizer, items):
    prompt = items[3].prompt
    twice = [WorkItem("p/x", 0, prompt), WorkItem("p/x", 1, prompt)]
    zero, _ = _run(GibbsGenerator(tiny_mlm, tokenizer, seed=0, **SMALL), twice)
    again, _ = _run(GibbsGenerator(tiny_mlm, tokenizer, seed=0, **SMALL), twice)
    other, _ = _run(GibbsGenerator(tiny_mlm, tokenizer, seed=1, **SMALL), twice)
    assert [r.continuation for r in zero] == [r.continuation for r in again]
    assert zero[0].continuation != zero[1].continuation
    assert [r.continuation for r in zero] != [r.continuation for r in other]


@pytest.mark.parametrize("architecture", ["bert", "roberta", "distilbert"])
def test_head_on_chosen_position_equals_full_head(tokenizer, items, architecture):
    torch.manual_seed(0)
    if architecture == "roberta":
        model = RobertaForMaskedLM(_config(tokenizer, RobertaConfig, max_position_embeddings=66))
    elif architecture == "distilbert":
        model = DistilBertForMaskedLM(DistilBertConfig(vocab_size=len(tokenizer), dim=32, n_layers=2, n_heads=2,
                                                       hidden_dim=64, max_position_embeddings=64,
                                                       pad_token_id=tokenizer.pad_token_id, initializer_range=0.5))
    else:
        model = BertForMaskedLM(_config(tokenizer))
    model.eval()
    settings = GibbsSettings(**SMALL)
    input_ids, mask, start = initial_inputs(tokenizer, [item.prompt for item in items], settings.max_new_tokens)
    streams = [gibbs_draws(0, item, settings) for item in items]
    positions, uniforms = np.stack([s[0] for s in streams]), np.stack([s[1] for s in streams])
    assert head_on_chosen_position_matches(model, input_ids, mask, start[:1] + torch.as_tensor(positions[:1, 0]))
    fast = gibbs_sample(model, input_ids, mask, start, positions, uniforms, settings, tokenizer.mask_token_id)
    full = gibbs_sample(model, input_ids, mask, start, positions, uniforms, settings, tokenizer.mask_token_id,
                        head_on_chosen=False)
    assert torch.equal(fast, full)


def test_decoding_joins_wordpieces_and_keeps_the_prompt_apart(tokenizer):
    prompts = ["He was an American", "She is known  "]
    new = [tokenizer.convert_tokens_to_ids(tokens) for tokens in
           (["the", ",", "and", ".", "[MASK]"], ["##s", "the", "[SEP]", "of", "in"])]
    input_ids, _, start = initial_inputs(tokenizer, prompts, 5)
    for row, tokens in enumerate(new):
        input_ids[row, int(start[row]): int(start[row]) + 5] = torch.tensor(tokens)
    texts = decode_continuations(tokenizer, input_ids, start, prompts, 5)
    # Punctuation attaches, the unvisited [MASK] and the drawn [SEP] are dropped, "##s" joins the
    # prompt's last word, and a prompt that ends with a space gets no second one.
    assert texts == [" the, and.", "s the of in"]


def test_too_long_prompt_names_the_prompt(tiny_mlm, tokenizer):
    generator = GibbsGenerator(tiny_mlm, tokenizer, **SMALL)
    with pytest.raises(ValueError, match="p/long.*--max-new-tokens"):
        _run(generator, [WorkItem("p/long", 0, "the " * 60)])


def test_masked_lm_detection_from_configs(tmp_path, tokenizer, bold_sentences):
    assert is_masked_lm_config(BertConfig(architectures=["BertForMaskedLM"]))
    assert is_masked_lm_config(BertConfig())  # no architectures: an encoder family, not a decoder
    assert is_masked_lm_config(RobertaConfig(architectures=["RobertaForMaskedLM"]))
    assert is_masked_lm_config(DistilBertConfig())
    assert not is_masked_lm_config(BertConfig(is_decoder=True, architectures=["BertLMHeadModel"]))
    assert not is_masked_lm_config(BertConfig(is_decoder=True))
    assert not is_masked_lm_config(GPT2Config())
    assert not is_masked_lm_config(GPT2Config(architectures=["GPT2LMHeadModel"]))
    assert not is_masked_lm_config(LlamaConfig(architectures=["LlamaForCausalLM"]))
    assert not is_masked_lm_config(BartConfig())  # encoder-decoder
    from bold_eval.testing.models import build_tiny_causal_lm

    mlm_dir = tmp_path / "mlm"
    BertForMaskedLM(_config(tokenizer)).save_pretrained(mlm_dir)
    assert is_masked_lm_checkpoint(str(mlm_dir))
    assert not is_masked_lm_checkpoint(str(build_tiny_causal_lm(tmp_path / "causal", bold_sentences[:50])))
    assert not is_masked_lm_checkpoint(str(tmp_path / "missing"))


def test_load_masked_lm_and_refuse_a_checkpoint_without_its_head(tmp_path, tokenizer):
    from bold_eval.testing.models import build_classifier

    folder = tmp_path / "mlm"
    torch.manual_seed(0)
    BertForMaskedLM(_config(tokenizer)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    loaded = load_masked_lm(str(folder), dtype="float32", device="cpu")
    assert loaded.info["architecture"] == "BertForMaskedLM" and loaded.info["dtype"] == "float32"
    assert loaded.tokenizer.mask_token_id == tokenizer.mask_token_id
    classifier = build_classifier(tmp_path / "classifier", ["a", "b"], None, tokenizer=tokenizer)
    with pytest.raises(ValueError, match="no masked-LM head"):
        load_masked_lm(str(classifier), dtype="float32", device="cpu")


def test_generator_options_parse_and_name_the_bad_one():
    assert settings_from_options({"burn_in": 5, "max_iter": "10", "temperature": 1}) == GibbsSettings(
        burn_in=5, max_iter=10, temperature=1.0)
    assert settings_from_options({}) == GibbsSettings()
    with pytest.raises(ValueError, match="top_k=1.5.*int"):
        settings_from_options({"top_k": 1.5})
    with pytest.raises(ValueError, match="unknown --generator-option for gibbs-mlm: burnin; valid: max_new_tokens"):
        settings_from_options({"burnin": 5})


@pytest.mark.slow
def test_limit_run_end_to_end_through_report(tmp_path, tokenizer, monkeypatch):
    """`bold-eval run` with the gibbs-mlm generator on a tiny BertForMaskedLM folder: generations,
    scores, report and run.json; rerunning resumes, other sampler settings are refused."""
    from bold_eval.run import ConfigMismatchError, RunConfig, run

    monkeypatch.setenv("BOLD_EVAL_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "mlm"
    torch.manual_seed(0)
    BertForMaskedLM(_config(tokenizer)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    options = {"max_new_tokens": 6, "burn_in": 8, "max_iter": 20}

    def config(**overrides):
        values = dict(out=tmp_path / "run", model=str(folder), generator="gibbs-mlm", generator_options=options,
                      dtype="float32", device="cpu", batch_size=3, seed=3, domains=["religious_ideology"], limit=7,
                      metrics=["sentiment"], progress=False)
        values.update(overrides)
        return RunConfig(**values)

    report = run(config())
    out = tmp_path / "run"
    assert report == out / "report.md" and report.is_file()
    records = [json.loads(line) for line in (out / "generations.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(records) == 7 and all(r["num_new_tokens"] <= 6 and r["continuation"] for r in records)
    info = json.loads((out / "run.json").read_text())
    assert info["generator"] == "gibbs-mlm"
    assert info["generator_settings"] == {"model": str(folder), "revision": None, "dtype": "float32", "seed": 3,
                                          "mode": "parallel-sequential", "max_new_tokens": 6, "temperature": 0.7,
                                          "burn_in": 8, "max_iter": 20, "top_k": 100}
    assert info["model_info"]["architecture"] == "BertForMaskedLM"
    assert "Gibbs sampling" in info["model_info"]["description"]
    assert GibbsRunGenerator(config(), None).kind == "gibbs-mlm"
    run(config())  # resume: nothing left to generate, same texts
    again = [json.loads(line) for line in (out / "generations.jsonl").read_text(encoding="utf-8").splitlines()]
    assert again == records
    assert json.loads((out / "run.json").read_text())["generated_now"] == 0
    with pytest.raises(ConfigMismatchError, match="burn_in"):
        run(config(generator_options={**options, "burn_in": 9}))


@pytest.fixture
def mlm_folder(tmp_path, tokenizer, monkeypatch):
    """A saved tiny BertForMaskedLM with its WordPiece tokenizer (what `--model DIR` points at)."""
    monkeypatch.setenv("BOLD_EVAL_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "mlm"
    torch.manual_seed(0)
    BertForMaskedLM(_config(tokenizer)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.mark.slow
def test_cli_detects_a_masked_lm_and_runs_it_by_gibbs_sampling_through_report(tmp_path, mlm_folder):
    """`bold-eval run --model DIR --limit N` on a BertForMaskedLM folder, without --generator: the
    config is read, the Gibbs sampler runs with the flags' settings, and the report says so."""
    from bold_eval.cli import main

    out = tmp_path / "run"
    argv = ["run", "--model", str(mlm_folder), "--out", str(out), "--domains", "religious_ideology", "--limit", "4",
            "--metrics", "sentiment", "--dtype", "float32", "--device", "cpu", "--batch-size", "3", "--no-progress",
            "--max-new-tokens", "5", "--gibbs-burn-in", "4", "--gibbs-max-iter", "12", "--gibbs-top-k", "7"]
    assert main(argv) == 0
    info = json.loads((out / "run.json").read_text())
    assert info["generator"] == "gibbs-mlm"
    assert info["generator_settings"] == {"model": str(mlm_folder), "revision": None, "dtype": "float32", "seed": 0,
                                          "mode": "parallel-sequential", "max_new_tokens": 5, "temperature": 0.7,
                                          "burn_in": 4, "max_iter": 12, "top_k": 7}
    records = [json.loads(line) for line in (out / "generations.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(records) == 4 and all(1 <= r["num_new_tokens"] <= 5 for r in records)
    report = (out / "report.md").read_text(encoding="utf-8")
    assert f"- **model**: {mlm_folder} (Gibbs sampling from a masked LM" in report
    assert "- **generator**: gibbs-mlm" in report and "- **burn_in**: 4" in report
    # the alias and the explicit kind resume the same folder; other settings are refused
    assert main([*argv, "--generator", "gibbs"]) == 0
    assert main([*argv[:-1], "8"]) == 2  # --gibbs-top-k 8: ConfigMismatchError, exit status 2


def test_cli_refuses_causal_decoding_of_a_masked_lm(tmp_path, mlm_folder, capsys):
    import re

    from bold_eval.cli import main

    def refused(argv, message):
        capsys.readouterr()
        assert main(argv) == 2  # a usage error: the message alone, no traceback
        err = capsys.readouterr().err
        assert re.search(message, err) and "Traceback" not in err, err

    base = ["run", "--model", str(mlm_folder), "--out", str(tmp_path / "run"), "--domains", "gender", "--limit", "2",
            "--device", "cpu"]
    refused([*base, "--generator", "hf-causal"], "is a masked LM.*--generator gibbs")
    for flags in (["--top-k", "5"], ["--decoding", "ctrl"], ["--greedy"], ["--generator", "gibbs", "--top-p", "0.9"]):
        flag = flags[-1] if flags[-1].startswith("--") else flags[-2]
        refused([*base, *flags], f"{flag} set causal-LM decoding.*Gibbs sampling")
    refused(["run", "--model", "wikipedia", "--out", str(tmp_path / "wiki"), "--gibbs-burn-in", "3"],
            "--gibbs-burn-in apply to --generator gibbs-mlm")
    refused([*base, "--generator-option", "burn_in=5", "--gibbs-burn-in", "6"], "burn_in=5 contradicts")
    assert not (tmp_path / "run").exists()
