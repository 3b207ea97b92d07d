"""`placement --model M --tp N [--pp P] [--ep E] [--dp-attention] --gpus-per-node G`: which
operations of a decode step, a prefill chunk and a request cross the scale-out fabric.

Nothing runs and no result file is read: the table comes from the model's sizes
(models.py, checked against the C++ presets) and the layout (placement.py). Exit codes: 0
printed; 2 bad usage or a layout that cannot be placed.
"""

from __future__ import annotations

import sys

from ..models import ModelError, preset
from .command import add_layout_options
from .placement import FABRIC, LINK_WORDS, Placement, PlacementError

EXIT_PRINTED, EXIT_USAGE = 0, 2


def add_parser(sub) -> None:
    p = sub.add_parser("placement", help="which operations of a deployment cross the scale-out "
                                         "fabric, which stay on NVLink (a table; nothing runs)")
    p.add_argument("--model", required=True, help="model preset: llama3-8b, llama3-70b, "
                                                  "llama3-405b, deepseek-v3")
    p.add_argument("--tp", type=int, default=8, help="tensor parallelism (default 8)")
    p.add_argument("--ep", type=int, help="expert parallelism (models with experts)")
    add_layout_options(p)
    p.add_argument("--decode-batch", type=int, default=32, help="sequences per decode step "
                                                                "(default 32)")
    p.add_argument("--prefill-chunk", type=int, default=2048, help="tokens of a prefill chunk "
                                                                   "(default 2048; 0: none)")
    p.add_argument("--prompt", type=int, default=8192, help="prompt tokens of a request "
                                                            "(default 8192)")
    p.add_argument("--block-tokens", type=int, default=16, help="tokens per KV block "
                                                                "(default 16)")
    p.set_defaults(func=run_placement)


def placement_lines(place: Placement, decode_batch: int, prefill_chunk: int, prompt: int,
                    block_tokens: int) -> list:
    lines = [f"placement of {place.describe()}:"]
    lines += [f"  {s}" for s in place.statements()]
    for op in place.table(decode_batch, prefill_chunk or None, prompt, block_tokens):
        lines.append(f"  {op.describe()}")
    fabric = [op for op in place.table(decode_batch, prefill_chunk or None, prompt, block_tokens)
              if op.link == FABRIC]
    lines.append("on " + LINK_WORDS[FABRIC] + ": " + ("; ".join(
        f"{op.count} x {op.name} per {op.phase}" for op in fabric) or "nothing"))
    lines += [f"  note: {n}" for n in place.notes()]
    return lines


def run_placement(args) -> int:
    try:
        if min(args.decode_batch, args.prompt, args.block_tokens) < 1 or args.prefill_chunk < 0:
            raise PlacementError("--decode-batch, --prompt and --block-tokens must be at least 1, "
                                 "--prefill-chunk 0 or more")
        model = preset(args.model)
        place = Placement(model, args.tp, args.pp, args.ep, args.dp_attention, args.gpus_per_node,
                          args.nodes_per_nvlink_domain, not args.colocated)
        lines = placement_lines(place, args.decode_batch, args.prefill_chunk, args.prompt,
                                args.block_tokens)
    except (ModelError, PlacementError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print("\n".join(lines))
    return EXIT_PRINTED
