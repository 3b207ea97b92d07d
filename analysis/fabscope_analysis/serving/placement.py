"""Where a deployment's traffic runs: which operations cross the scale-out fabric.

A served model is placed on GPUs by its parallelism (TP, PP, EP, attention data
parallelism, prefill/decode disaggregation) and the cluster's shape (GPUs per node, nodes
per NVLink domain). Every operation of a decode step, of a prefill chunk and of a request
runs over one link class:

- NVLink: the group's ranks sit inside one NVLink domain (one node, or several nodes of one
  NVLink switch system); the scale-out fabric does not carry it;
- the scale-out fabric: the group spans NVLink domains;
- the front-end network: a request's way in and its streamed tokens.

Ranks are placed in order (packed), as the engines place them: a TP group of 8 on 8-GPU
nodes is one node; pipeline stage k of a replica holds ranks [k x TP, (k+1) x TP); an EP group
of 64 spans 8 nodes. A group lies inside one domain when it is no larger than the domain and
divides it (otherwise some group straddles two).

Counts per decode step (the model's layers; docs/serving-fit.md, "Placement"):

- attention all-reduce: one per layer when TP > 1 and attention is tensor parallel; none
  with DP attention (each rank runs its own requests' attention);
- MLP all-reduce: one per dense layer when TP > 1 (a dense model: every layer; DeepSeek-V3:
  its first 3); none with DP attention (the dense MLPs data parallel too, as in SGLang's
  large-scale EP deployment);
- MoE dispatch + combine: one round per MoE layer (DeepSeek-V3: 58 of 61);
- PP activation send: one per stage boundary (PP - 1), tokens x hidden x bytes each.

A prefill chunk runs the same operations at the chunk's tokens. A request adds the KV
transfer prefill -> decode (disaggregated serving only) and the front end. Where the
cluster's shape is not given, every group is counted as crossing the fabric (an upper
bound, said as such).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

from ..models import DTYPE_BYTES, LEADING_DENSE_LAYERS, ModelError, ModelSpec, allreduce_bytes, \
    dense_layers, kv_request_bytes, moe_dispatch_bytes_per_token, moe_layers
from ..run_analysis import size_text

NVLINK, FABRIC, FRONTEND = "NVLink", "fabric", "front-end"
LINK_WORDS = {NVLINK: "NVLink, not this fabric", FABRIC: "this fabric",
              FRONTEND: "the front-end network, not this fabric"}
DECODE, PREFILL, REQUEST = "decode step", "prefill chunk", "request"



class PlacementError(ValueError):
    """A layout that cannot be placed (PP beyond the layers, EP without experts, ...)."""


@dataclass(frozen=True)
class Operation:
    """One kind of operation of a decode step, a prefill chunk or a request."""
    name: str          # "TP all-reduce (attention)", "MoE dispatch + combine", ...
    phase: str         # DECODE, PREFILL or REQUEST
    count: int         # per step / per chunk / per request
    bytes: int         # per operation per rank (0: not sized here)
    link: str          # NVLINK, FABRIC or FRONTEND
    group: str         # the ranks it runs over, in words
    cls: str = ""      # the serving class fit measures it as: tp, moe, pp, kv, api

    def describe(self) -> str:
        size = f" of {size_text(self.bytes)}" if self.bytes else ""
        return (f"{self.count} x {self.name}{size} per {self.phase} over {self.group}: "
                f"{LINK_WORDS[self.link]}")


@dataclass(frozen=True)
class Placement:
    model: ModelSpec
    tp: int = 1
    pp: int = 1
    ep: Optional[int] = None             # None: a model with experts spreads them over all ranks
    dp_attention: bool = False
    gpus_per_node: Optional[int] = None  # None: the cluster's shape is not known
    nodes_per_nvlink_domain: int = 1
    disaggregated: bool = True           # prefill and decode on separate instances

    def __post_init__(self) -> None:
        m = self.model
        if self.tp < 1 or self.pp < 1:
            raise PlacementError(f"tp and pp must be at least 1, got tp {self.tp}, pp {self.pp}")
        if self.pp > m.layers:
            raise PlacementError(f"pp {self.pp}: {m.name} has only {m.layers} layers to split")
        if self.ep is not None and (self.ep < 1 or m.moe is None):
            raise PlacementError(f"ep {self.ep}: " + ("must be at least 1" if self.ep < 1 else
                                                      f"{m.name} has no experts"))
        if self.dp_attention and (m.moe is None or self.tp != 1):
            raise PlacementError("DP attention: each rank runs its own requests' attention and "
                                 "the experts are spread over EP ranks: give a model with "
                                 "experts and tp 1" + (f" (got tp {self.tp})" if self.tp != 1
                                                       else f" ({m.name} has none)"))
        if self.gpus_per_node is not None and self.gpus_per_node < 1:
            raise PlacementError(f"gpus per node must be at least 1, got {self.gpus_per_node}")
        if self.nodes_per_nvlink_domain < 1:
            raise PlacementError("nodes per NVLink domain must be at least 1, got "
                                 f"{self.nodes_per_nvlink_domain}")

    # --- the model's layers -----------------------------------------------------------

    @property
    def dense_layers(self) -> int:
        """Layers whose MLP is dense (every layer of a model without experts; models.py)."""
        return dense_layers(self.model)

    @property
    def moe_layers(self) -> int:
        return moe_layers(self.model)

    # --- where groups sit -------------------------------------------------------------

    @property
    def domain_ranks(self) -> Optional[int]:
        """GPUs in one NVLink domain; None when the cluster's shape is not known."""
        return None if self.gpus_per_node is None \
            else self.gpus_per_node * self.nodes_per_nvlink_domain

    def link_of_group(self, ranks: Optional[int]) -> str:
        """NVLINK when a group of `ranks` consecutive ranks lies inside one NVLink domain."""
        domain = self.domain_ranks
        if domain is None or ranks is None:
            return FABRIC
        return NVLINK if ranks <= domain and domain % ranks == 0 else FABRIC

    def domain_words(self) -> str:
        if self.gpus_per_node is None:
            return "NVLink domain (size not given)"
        return "node" if self.nodes_per_nvlink_domain == 1 \
            else f"NVLink domain of {self.nodes_per_nvlink_domain} nodes"

    def _group_words(self, what: str, ranks: Optional[int]) -> str:
        if ranks is None:
            return f"{what} (every rank)"
        if self.domain_ranks is None:
            return f"{what} ({ranks} ranks)"
        if self.link_of_group(ranks) == NVLINK:
            return f"{what} ({ranks} ranks inside each {self.domain_words()})"
        spans = -(-ranks // self.domain_ranks)
        unit = "nodes" if self.nodes_per_nvlink_domain == 1 else "NVLink domains"
        return f"{what} ({ranks} ranks over {spans} {unit})"

    @property
    def instance_ranks(self) -> Optional[int]:
        """GPUs of one serving instance (what a request's KV moves between)."""
        if self.model.moe is not None and self.ep is None:
            return None
        return max(self.tp * self.pp, self.ep or 1)

    def pp_crossings(self) -> int:
        """Stage boundaries whose two stages sit in different NVLink domains."""
        domain = self.domain_ranks
        if domain is None:
            return self.pp - 1
        return sum(1 for k in range(1, self.pp)
                   if (k * self.tp - 1) // domain != (k * self.tp) // domain)

    # --- the operations ---------------------------------------------------------------

    def step_operations(self, tokens: int, phase: str = DECODE) -> List[Operation]:
        """The operations of one decode step (`tokens` = the decode batch) or of one prefill
        chunk (`tokens` = the chunk), over the whole model (every stage)."""
        m, ops = self.model, []
        tp_link = self.link_of_group(self.tp)
        tp_group = self._group_words(f"TP {self.tp}", self.tp)
        if self.tp > 1:   # DP attention has tp 1: each rank its own attention
            ops.append(Operation("TP all-reduce (attention)", phase, m.layers,
                                 allreduce_bytes(m, tokens), tp_link, tp_group, "tp"))
            if self.dense_layers:
                ops.append(Operation("TP all-reduce (dense MLP)", phase, self.dense_layers,
                                     allreduce_bytes(m, tokens), tp_link, tp_group, "tp"))
        if self.moe_layers:
            per_token = moe_dispatch_bytes_per_token(m, "fp8")
            ops.append(Operation("MoE dispatch + combine", phase, self.moe_layers,
                                 tokens * per_token, self.link_of_group(self.ep),
                                 self._group_words(f"EP {self.ep}" if self.ep else "EP", self.ep),
                                 "moe"))
        if self.pp > 1:
            send = tokens * m.hidden_size * DTYPE_BYTES[m.dtype]
            crossing = self.pp_crossings()
            if crossing:
                ops.append(Operation("PP activation send", phase, crossing, send, FABRIC,
                                     f"stage boundaries between {self.domain_words()}s", "pp"))
            if self.pp - 1 - crossing:
                ops.append(Operation("PP activation send", phase, self.pp - 1 - crossing, send,
                                     NVLINK, f"stage boundaries inside a {self.domain_words()}",
                                     "pp"))
        return ops

    def request_operations(self, prompt_tokens: int, block_tokens: int = 16) -> List[Operation]:
        """A request's own operations: the KV transfer prefill -> decode (disaggregated
        serving) and the front end."""
        ops = []
        if self.disaggregated:
            instance = self.instance_ranks
            pair_inside = (instance is not None and self.domain_ranks is not None
                           and 2 * instance <= self.domain_ranks)
            where = (f"a prefill and a decode instance of {instance} ranks each, both inside "
                     f"one {self.domain_words()}" if pair_inside else
                     "a prefill instance to a decode instance on other nodes")
            ops.append(Operation("KV transfer prefill -> decode", REQUEST, 1,
                                 kv_request_bytes(self.model, self.tp, block_tokens, prompt_tokens),
                                 NVLINK if pair_inside else FABRIC, where, "kv"))
        ops.append(Operation("front-end request and streamed tokens", REQUEST, 1, 0, FRONTEND,
                             "the client and the serving instance", "api"))
        return ops

    def fabric_count(self, cls: str, phase: str = DECODE, tokens: int = 1) -> int:
        """How many operations of class `cls` (tp, moe, pp) one step / chunk puts on the
        fabric."""
        return sum(op.count for op in self.step_operations(tokens, phase)
                   if op.cls == cls and op.link == FABRIC)

    def total_count(self, cls: str, phase: str = DECODE, tokens: int = 1) -> int:
        """How many operations of class `cls` one step / chunk runs, on any link."""
        return sum(op.count for op in self.step_operations(tokens, phase) if op.cls == cls)

    # --- in words ---------------------------------------------------------------------

    def describe(self) -> str:
        layout = ["DP attention" if self.dp_attention else f"TP {self.tp}"]
        if self.pp > 1:
            layout.append(f"PP {self.pp}")
        if self.model.moe is not None:
            layout.append(f"EP {self.ep}" if self.ep else "EP over all ranks")
        shape = ["cluster shape not given" if self.gpus_per_node is None
                 else f"{self.gpus_per_node} GPU{'s' if self.gpus_per_node > 1 else ''} per node"]
        if self.nodes_per_nvlink_domain > 1:
            shape.append(f"{self.nodes_per_nvlink_domain} nodes per NVLink domain")
        shape.append("disaggregated prefill/decode" if self.disaggregated else "colocated")
        return f"{self.model.name} {' x '.join(layout)} ({', '.join(shape)})"

    def statements(self) -> List[str]:
        """The placement in short, one phrase per parallel group: what the verdict line
        says ("TP 8 inside each node: NVLink, not this fabric")."""
        out = []
        if self.domain_ranks is None:
            out.append("cluster shape not given: every group counted as crossing this fabric "
                       "(an upper bound)")
        if self.dp_attention:
            out.append("attention data parallel: no TP all-reduce")
        elif self.tp > 1:
            out.append(f"{self._tp_phrase()}: {LINK_WORDS[self.link_of_group(self.tp)]}")
        if self.moe_layers:
            out.append(f"{self._group_words(f'EP {self.ep}' if self.ep else 'EP', self.ep)}: "
                       f"{LINK_WORDS[self.link_of_group(self.ep)]}")
        if self.pp > 1:
            crossing = self.pp_crossings()
            out.append(f"PP {self.pp}: {crossing} of {self.pp - 1} stage boundaries on this "
                       "fabric")
        kv = [op for op in self.request_operations(1) if op.cls == "kv"]
        out.append(f"KV prefill -> decode: {LINK_WORDS[kv[0].link]}" if kv else
                   "prefill and decode colocated: no KV transfer")
        return out

    def _tp_phrase(self) -> str:
        if self.domain_ranks is None:
            return f"TP {self.tp}"
        if self.link_of_group(self.tp) == NVLINK:
            return f"TP {self.tp} inside each {self.domain_words()}"
        return self._group_words(f"TP {self.tp}", self.tp)

    def table(self, decode_batch: int, prefill_chunk: Optional[int], prompt_tokens: int,
              block_tokens: int = 16) -> List[Operation]:
        ops = self.step_operations(decode_batch, DECODE)
        if prefill_chunk:
            ops += self.step_operations(prefill_chunk, PREFILL)
        return ops + self.request_operations(prompt_tokens, block_tokens)

    def notes(self) -> List[str]:
        out = []
        name = self.model.name.split(" ")[0]
        if self.model.moe is not None and name not in LEADING_DENSE_LAYERS:
            out.append(f"{self.model.name}: its dense layers are not known here: every layer "
                       "counted as an MoE layer (an upper bound on MoE rounds)")
        return out


def placement_of(deployment, pp: int = 1, dp_attention: bool = False,
                 gpus_per_node: Optional[int] = None, nodes_per_nvlink_domain: int = 1,
                 disaggregated: bool = True) -> Placement:
    """The placement of an impact.Deployment (model, tp, ep) with the layout's other parts."""
    try:
        return Placement(deployment.model, deployment.tp, pp,
                         deployment.ep if deployment.model.moe is not None else None,
                         dp_attention, gpus_per_node, nodes_per_nvlink_domain, disaggregated)
    except ModelError as exc:
        raise PlacementError(str(exc)) from None
