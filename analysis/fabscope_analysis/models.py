"""Served models and the message sizes they put on the fabric (docs/models.md).

The C++ side (src/model/ModelSpec.cpp, TrafficSizes.cpp) is the source of truth: this is
its Python copy for the analysis, and analysis/tests/test_impact.py checks every preset
and formula here against src/model/ModelSpec.cpp and against `fabscope list --model`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Dict, Optional

DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp8": 1, "fp32": 4}
DTYPE_SPELLINGS = {"bf16": "bf16", "bfloat16": "bf16", "fp16": "fp16", "float16": "fp16",
                   "half": "fp16", "fp8": "fp8", "float8": "fp8", "e4m3": "fp8",
                   "fp8_e4m3": "fp8", "e5m2": "fp8", "fp8_e5m2": "fp8", "fp32": "fp32",
                   "float32": "fp32", "float": "fp32"}


class ModelError(ValueError):
    """A model or deployment that cannot be described (unknown preset, bad field)."""


@dataclass(frozen=True)
class Mla:
    kv_lora_rank: int
    rope_head_dim: int


@dataclass(frozen=True)
class Moe:
    experts: int
    shared_experts: int
    experts_per_token: int
    intermediate_size: int


@dataclass(frozen=True)
class ModelSpec:
    name: str
    hidden_size: int
    layers: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    dtype: str = "bf16"
    kv_dtype: Optional[str] = None
    mla: Optional[Mla] = None
    moe: Optional[Moe] = None

    @property
    def kv_cache_dtype(self) -> str:
        return self.kv_dtype or self.dtype


# Copy of src/model/ModelSpec.cpp buildPresets() (published config.json values).
PRESETS: Dict[str, ModelSpec] = {
    m.name: m for m in (
        ModelSpec("llama3-8b", 4096, 32, 32, 8, 128),
        ModelSpec("llama3-70b", 8192, 80, 64, 8, 128),
        ModelSpec("llama3-405b", 16384, 126, 128, 8, 128),
        ModelSpec("deepseek-v3", 7168, 61, 128, 128, 128, mla=Mla(512, 64),
                  moe=Moe(256, 1, 8, 2048)),
    )
}

_ALIASES = {"hidden_size": ("hidden_size", "hidden"),
            "layers": ("layers", "num_layers", "num_hidden_layers"),
            "attention_heads": ("attention_heads", "num_attention_heads"),
            "kv_heads": ("kv_heads", "num_key_value_heads"),
            "head_dim": ("head_dim",), "dtype": ("dtype", "torch_dtype"),
            "kv_dtype": ("kv_dtype", "kv_cache_dtype"), "mla": ("mla",), "moe": ("moe",),
            "preset": ("preset",), "name": ("name",)}


def preset(name: str) -> ModelSpec:
    if name not in PRESETS:
        raise ModelError(f"unknown model preset '{name}'; known presets: "
                         + ", ".join(PRESETS))
    return PRESETS[name]


def _dtype(value, field: str) -> str:
    text = str(value).lower()
    if text not in DTYPE_SPELLINGS:
        raise ModelError(f"model.{field}: '{value}' is not a dtype (bf16, fp16, fp8, fp32)")
    return DTYPE_SPELLINGS[text]


def _positive(value, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ModelError(f"model.{field}: expected a positive integer, got {value!r}")
    return value


def model_from_scenario(node) -> ModelSpec:
    """The `model:` value of a scenario: a preset name, a preset with overrides, or
    explicit fields (docs/models.md "In a scenario"; Hugging Face spellings accepted)."""
    if isinstance(node, str):
        return preset(node)
    if not isinstance(node, dict):
        raise ModelError(f"model: expected a preset name or a mapping, got {node!r}")
    fields = {}
    for key, value in node.items():
        canon = next((c for c, names in _ALIASES.items() if key in names), None)
        if canon is None:
            raise ModelError(f"model: unknown key '{key}'")
        if canon in fields:
            raise ModelError(f"model: '{canon}' given twice")
        fields[canon] = value
    if "preset" in fields:
        spec = preset(str(fields.pop("preset")))
        modified = bool(fields)
        name = spec.name + (" (modified)" if modified else "")
    else:
        for required in ("hidden_size", "layers", "attention_heads"):
            if required not in fields:
                raise ModelError(f"model: '{required}' is required without a preset")
        spec, name = None, "custom"
    if "name" in fields:
        name = str(fields.pop("name"))
    values = {} if spec is None else dict(spec.__dict__)
    values["name"] = name
    for key in ("hidden_size", "layers", "attention_heads", "kv_heads", "head_dim"):
        if key in fields:
            values[key] = _positive(fields[key], key)
    if "dtype" in fields:
        values["dtype"] = _dtype(fields["dtype"], "dtype")
    if "kv_dtype" in fields:
        values["kv_dtype"] = _dtype(fields["kv_dtype"], "kv_dtype")
    _structures(fields, values)
    return _complete(values)


def _structures(fields: dict, values: dict) -> None:
    """The scenario's `mla` and `moe` mappings into values (Hugging Face spellings too)."""
    if "mla" in fields:
        m = fields["mla"] or {}
        values["mla"] = Mla(_positive(m.get("kv_lora_rank"), "mla.kv_lora_rank"),
                            int(m.get("rope_head_dim", m.get("qk_rope_head_dim", 0))))
    if "moe" in fields:
        m = fields["moe"] or {}
        get = lambda *names: next((m[n] for n in names if n in m), None)  # noqa: E731
        values["moe"] = Moe(_positive(get("experts", "n_routed_experts"), "moe.experts"),
                            int(get("shared_experts", "n_shared_experts") or 0),
                            _positive(get("experts_per_token", "num_experts_per_tok"),
                                      "moe.experts_per_token"),
                            int(get("intermediate_size", "moe_intermediate_size") or 0))


def _complete(values: dict) -> ModelSpec:
    """Defaults and derived fields, then the spec, checked."""
    values.setdefault("dtype", "bf16")
    values.setdefault("kv_dtype", None)
    values.setdefault("mla", None)
    values.setdefault("moe", None)
    if "head_dim" not in values:
        values["head_dim"] = values["hidden_size"] // values["attention_heads"]
    if "kv_heads" not in values:
        if values["mla"] is None:
            raise ModelError("model: 'kv_heads' is required without mla")
        values["kv_heads"] = values["attention_heads"]
    spec = ModelSpec(**values)
    if spec.mla is None and spec.attention_heads % spec.kv_heads:
        raise ModelError(f"model '{spec.name}': attention_heads ({spec.attention_heads}) must "
                         f"be a multiple of kv_heads ({spec.kv_heads})")
    return spec


# --- sizes (src/model/TrafficSizes.cpp) -------------------------------------------------

def allreduce_bytes(model: ModelSpec, tokens: int) -> int:
    """One TP all-reduce of `tokens` tokens (decode batch or prefill chunk)."""
    return int(tokens) * model.hidden_size * DTYPE_BYTES[model.dtype]


# Leading dense layers of a model with experts (`first_k_dense_replace` of its
# config.json); the rest are MoE layers. A model with experts not listed here counts
# every layer as an MoE layer (an upper bound on MoE rounds). The C++ presets carry the
# same (src/model/ModelSpec.cpp, MoeSpec::leadingDenseLayers).
LEADING_DENSE_LAYERS = {"deepseek-v3": 3}


def dense_layers(model: ModelSpec) -> int:
    """Layers whose MLP is dense (every layer of a model without experts)."""
    if model.moe is None:
        return model.layers
    return LEADING_DENSE_LAYERS.get(model.name.split(" ")[0], 0)


def moe_layers(model: ModelSpec) -> int:
    return model.layers - dense_layers(model) if model.moe is not None else 0


def allreduces_per_step(model: ModelSpec, tp: int) -> int:
    """TP all-reduces per forward step: one per layer after attention and one per dense
    layer after its MLP (an MoE layer ends in the MoE combine); 0 at tp = 1. As
    `fabscope list --model` counts them (src/model/TrafficSizes.cpp)."""
    return 0 if tp <= 1 else model.layers + dense_layers(model)


def kv_heads_per_rank(model: ModelSpec, tp: int) -> int:
    if model.mla is not None:
        return 0
    kv = model.kv_heads
    if tp <= kv:
        if kv % tp:
            raise ModelError(f"model '{model.name}': tp={tp} does not divide kv_heads={kv}")
        return kv // tp
    if tp % kv:
        raise ModelError(f"model '{model.name}': tp={tp} is not a multiple of kv_heads={kv}")
    return 1


def kv_block_layer_bytes(model: ModelSpec, tp: int, block_tokens: int) -> int:
    b = DTYPE_BYTES[model.kv_cache_dtype]
    if model.mla is not None:
        return block_tokens * (model.mla.kv_lora_rank + model.mla.rope_head_dim) * b
    return 2 * block_tokens * kv_heads_per_rank(model, tp) * model.head_dim * b


def kv_request_bytes(model: ModelSpec, tp: int, block_tokens: int, prompt_tokens: int) -> int:
    """What a prefill rank hands to its decode peer for one request (one TP shard)."""
    blocks = math.ceil(prompt_tokens / block_tokens)
    return blocks * kv_block_layer_bytes(model, tp, block_tokens) * model.layers


def moe_dispatch_bytes_per_token(model: ModelSpec, dispatch_dtype: str = "fp8") -> int:
    if model.moe is None:
        raise ModelError(f"model '{model.name}' has no MoE layers")
    if dispatch_dtype == "fp8":
        return 16 + model.hidden_size + math.ceil(model.hidden_size / 128) * 4
    if dispatch_dtype == "bf16":
        return 16 + 2 * model.hidden_size
    raise ModelError("MoE dispatch dtype must be fp8 or bf16")


def with_tp_check(model: ModelSpec, tp: int) -> ModelSpec:
    """Raise ModelError when the layout makes no sense for the model."""
    if tp < 1:
        raise ModelError("tp must be at least 1")
    kv_heads_per_rank(model, tp)
    return replace(model)
