"""`--model-args` on tiny real models: parsing, from_pretrained kwargs, sharding, adapters, refusals."""

from __future__ import annotations

import json
import sys

import pytest

from bold_eval.generation.model_args import (
    check_data_parallel,
    load_pretrained,
    parse_model_args,
    places_itself,
    pretrained_kwargs,
    quantization_config,
)


def test_parse_reads_the_lm_eval_convention_into_json():
    parsed = parse_model_args("device_map=auto, trust_remote_code=True,attn_implementation=eager,"
                              "revision=main,load_in_4bit=true,bnb_4bit_quant_type=nf4,peft=/adapters/x")
    assert parsed == {"attn_implementation": "eager", "bnb_4bit_quant_type": "nf4", "device_map": "auto",
                      "load_in_4bit": True, "peft": "/adapters/x", "revision": "main", "trust_remote_code": True}
    assert list(parsed) == sorted(parsed)  # one spelling per setting for the resume fingerprint
    assert json.loads(json.dumps(parsed)) == parsed
    assert parse_model_args(parsed) == parsed  # run.json values validate the same way
    assert parse_model_args("") == {} and parse_model_args(None) == {}


@pytest.mark.parametrize(("spec", "message"), [
    ("device_map", "expected KEY=VALUE"),
    ("max_batch=3", "unknown key 'max_batch'; valid: device_map"),
    ("dtype=float16", "use --dtype"),
    ("trust_remote_code=maybe", "expected true or false"),
    ("load_in_4bit=true,load_in_8bit=true", "exclude each other"),
    ("bnb_4bit_quant_type=nf4", "need load_in_4bit=true"),
    ("revision=a,revision=b", "given twice"),
])
def test_parse_errors_name_the_key(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_model_args(spec)


def test_quantization_config_from_model_args():
    import importlib.metadata

    import torch

    try:
        importlib.metadata.version("bitsandbytes")
    except importlib.metadata.PackageNotFoundError:
        import transformers
        from packaging.version import Version

        if Version(transformers.__version__) < Version("5.0"):
            # transformers 4.x's BitsAndBytesConfig reads bitsandbytes' package metadata in __init__
            pytest.skip("transformers<5 cannot build a BitsAndBytesConfig without bitsandbytes installed")

    config = quantization_config(parse_model_args("load_in_4bit=true,bnb_4bit_quant_type=nf4,"
                                                  "bnb_4bit_use_double_quant=true"), torch.bfloat16)
    assert config.load_in_4bit and config.bnb_4bit_quant_type == "nf4" and config.bnb_4bit_use_double_quant
    assert config.bnb_4bit_compute_dtype == torch.bfloat16  # --dtype unless bnb_4bit_compute_dtype says otherwise
    eight = quantization_config({"load_in_8bit": True}, torch.float16)
    assert eight.load_in_8bit and not eight.load_in_4bit
    assert quantization_config({}, torch.float32) is None
    assert places_itself({"load_in_8bit": True}) and places_itself({"device_map": "auto"}) and not places_itself({})


def test_quantization_without_bitsandbytes_is_a_clear_error(monkeypatch):
    import torch

    monkeypatch.setitem(sys.modules, "bitsandbytes", None)  # what an environment without it looks like
    with pytest.raises(ImportError, match="load_in_4bit / load_in_8bit needs the bitsandbytes package.*pip install"):
        pretrained_kwargs({"load_in_4bit": True}, torch_dtype=torch.float32)


def test_revision_flag_and_model_arg_must_agree():
    import torch

    assert pretrained_kwargs({"revision": "v1"}, torch_dtype=torch.float32, revision="v1")["revision"] == "v1"
    with pytest.raises(ValueError, match="--revision 'v2' and --model-args revision='v1' disagree"):
        pretrained_kwargs({"revision": "v1"}, torch_dtype=torch.float32, revision="v2")


def test_device_map_refuses_data_parallel(monkeypatch):
    with pytest.raises(ValueError, match="device_map=auto shards one model.*2 processes.*torchrun"):
        check_data_parallel({"device_map": "auto"}, 2)
    check_data_parallel({"device_map": "auto"}, 1)
    check_data_parallel({"attn_implementation": "eager"}, 4)  # whole copies per process are fine
    monkeypatch.setenv("WORLD_SIZE", "8")  # set by accelerate launch and torchrun
    with pytest.raises(ValueError, match="8 processes"):
        check_data_parallel({"device_map": "auto"})


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory, bold_sentences):
    from bold_eval.testing.models import build_tiny_causal_lm

    return build_tiny_causal_lm(tmp_path_factory.mktemp("tiny_lm"), bold_sentences[:200])


@pytest.mark.slow
def test_load_model_with_device_map_and_attention(tiny_lm, one_thread):
    from bold_eval.generation.base import WorkItem
    from bold_eval.generation.decoding import make_decoding
    from bold_eval.generation.hf_causal import generate_items
    from bold_eval.generation.loading import load_causal_lm

    loaded = load_causal_lm(str(tiny_lm), dtype="float32", device="cpu",
                        model_args=parse_model_args("device_map=auto,attn_implementation=eager"))
    assert loaded.model.config._attn_implementation == "eager"
    assert loaded.info["model_args"] == {"attn_implementation": "eager", "device_map": "auto"}
    assert set(loaded.info["device_map"].values()) == {"cpu"}  # accelerate's plan on a machine without GPUs
    out = []
    generate_items(loaded.model, loaded.tokenizer, [WorkItem("p", 0, "Jacob Zachar is")],
                   make_decoding(max_new_tokens=4),
                   seed=0, on_batch=lambda items, results: out.extend(results), progress=False)
    assert len(out) == 1 and out[0].num_new_tokens == 4
    with pytest.raises(ValueError, match="not GGUF"):
        load_causal_lm("embedded", model_args={"attn_implementation": "eager"})


@pytest.mark.slow
# peft 0.21 calls a transformers method deprecated in transformers 5 (inside peft, not here).
@pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning")
def test_peft_adapter_is_applied_and_merged(tiny_lm, tmp_path, one_thread):
    peft = pytest.importorskip("peft")
    import torch
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(tiny_lm)
    adapted = peft.get_peft_model(base, peft.LoraConfig(r=2, lora_alpha=4, target_modules=["c_attn"],
                                                        fan_in_fan_out=True,
                                                        init_lora_weights=False))  # random B: a visible change
    adapted.save_pretrained(tmp_path / "adapter")
    ids = torch.tensor([[1, 5, 9, 17]])
    with torch.no_grad():
        expected = adapted(input_ids=ids).logits
        plain = AutoModelForCausalLM.from_pretrained(tiny_lm)(input_ids=ids).logits
    model, _, info = load_pretrained(str(tiny_lm), {"peft": str(tmp_path / "adapter")}, torch_dtype=torch.float32)
    with torch.no_grad():
        got = model(input_ids=ids).logits
    assert not torch.allclose(plain, expected)
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)
    assert info["peft"]["merged"] and info["peft"]["peft_type"].endswith("LORA") and len(info["peft"]["sha256"]) == 64
    assert type(model).__name__ == "GPT2LMHeadModel"  # merged back into a plain transformers model


def test_peft_missing_is_a_clear_error(tiny_lm, monkeypatch):
    import torch

    monkeypatch.setitem(sys.modules, "peft", None)
    with pytest.raises(ImportError, match="peft=/some/adapter needs the peft package.*pip install peft"):
        load_pretrained(str(tiny_lm), {"peft": "/some/adapter"}, torch_dtype=torch.float32)
