"""A checkpoint's tokenizer, built with ``tokenizers`` (the lowering guide, "Real checkpoints").

An HF directory's ``tokenizer.json`` is loaded as it is. A GGUF file's ``tokenizer.ggml.*`` metadata
of model ``gpt2`` (byte-level BPE) becomes a ``tokenizers`` BPE model: the vocabulary and merges as
stored, byte-level pre-tokenization and decoding, and its control and user-defined tokens as added
tokens (control tokens special). Other GGUF tokenizer models (SentencePiece ``llama``, ...) are not
built: the checkpoint then decodes token ids only, and :attr:`TokenizerRef.note` says why.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs

CONTROL, USER_DEFINED = 3, 4
"""GGUF token types (``gguf.TokenType``) that become added tokens."""


@attrs.frozen
class TokenizerRef:
    """A tokenizer (``tokenizers.Tokenizer``) or None, and why there is none."""

    tokenizer: Any = None
    note: str = ""

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``, with the checkpoint's own special-token template."""
        return list(self._get().encode(text).ids)

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids`` (special tokens kept, as transformers' ``decode`` does by default)."""
        return str(self._get().decode(list(ids), skip_special_tokens=False))

    def _get(self) -> Any:
        if self.tokenizer is None:
            raise ValueError(self.note or "this model has no tokenizer")
        return self.tokenizer


def gguf_tokenizer(get: Callable[[str, Any], Any]) -> TokenizerRef:
    """The tokenizer of a GGUF file's metadata (``get(key, default)`` reads one field)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

    kind = get("tokenizer.ggml.model", None)
    if kind != "gpt2":
        return TokenizerRef(None, f"no tokenizer: GGUF tokenizer model {kind!r} is not byte-level BPE "
                            "('gpt2')")
    tokens: list[str] = get("tokenizer.ggml.tokens", [])
    types: list[int] = get("tokenizer.ggml.token_type", [])
    merges = [tuple(m.split(" ")) for m in get("tokenizer.ggml.merges", [])]
    if any(len(m) != 2 for m in merges) or len(types) not in (0, len(tokens)):
        return TokenizerRef(None, "no tokenizer: malformed tokenizer.ggml.merges or token_type")
    vocab = {t: i for i, t in enumerate(tokens)}
    if len(vocab) != len(tokens):
        return TokenizerRef(None, "no tokenizer: tokenizer.ggml.tokens repeats a token")
    tok = Tokenizer(models.BPE(vocab, merges))
    prefix = bool(get("tokenizer.ggml.add_space_prefix", False))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=prefix)
    tok.decoder = decoders.ByteLevel()
    tok.add_tokens([AddedToken(tokens[i], special=types[i] == CONTROL, normalized=False)
                    for i in range(len(types)) if types[i] in (CONTROL, USER_DEFINED)])
    bos = get("tokenizer.ggml.bos_token_id", None)
    if get("tokenizer.ggml.add_bos_token", False) and isinstance(bos, int) and 0 <= bos < len(tokens):
        tok.post_processor = processors.TemplateProcessing(single=f"{tokens[bos]} $A",
                                                           special_tokens=[(tokens[bos], bos)])
    return TokenizerRef(tok)


def hf_tokenizer(path: Any) -> TokenizerRef:
    """``tokenizer.json`` of an HF directory, or none (with the reason)."""
    from tokenizers import Tokenizer

    file = path / "tokenizer.json"
    if not file.is_file():
        return TokenizerRef(None, f"no tokenizer: {file} does not exist")
    try:
        return TokenizerRef(Tokenizer.from_file(str(file)))
    except Exception as exc:  # noqa: BLE001 - tokenizers raises its own Exception type on bad JSON
        return TokenizerRef(None, f"no tokenizer: {file}: {str(exc).splitlines()[0] if str(exc) else exc}")
