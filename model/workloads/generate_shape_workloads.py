#!/usr/bin/python3
"""Writes riseml-replay workloads of shapes the torchvision models do not have (issue 37).

    python3 model/workloads/generate_shape_workloads.py OUT_DIR [NAME ...]

Pure Python (no torch). The shapes the model must predict and the shipped CNNs do not show:

  gpt_tied      a GPT-2-style decoder (6 layers, d 768, 50257-token vocabulary, 1024 tokens)
                whose 38.6 M-parameter token embedding is tied to the output layer: its gradient
                is ready last, after the input's backward, and cannot be hidden at all
  t5_tied       an encoder-decoder transformer, 8+8 layers, d 512, vocabulary 32128, tied
                (held back: not used while the model was fixed)
  many_small    a deep narrow transformer, 48 layers of d 256: 580 tensors of 256 to 262144
                elements (negotiation, fusion and latency, not bandwidth)
  one_huge      a recommender: an MLP of 1.6 M parameters ready first, then one 64 Mi-element
                embedding table ready last
  vit_b16       a ViT-B/16 encoder (86 M parameters, 152 tensors) with a short backward
                (held back)
  bert_base     BERT-base pretraining (12 layers, d 768, 30522-token vocabulary, 512 tokens,
                the masked-LM decoder tied to the word embedding): added after the model's
                changes of issue 37 and never used to make them (held back)

Compute: every matrix product's FLOPs (2 x tokens x in x out forward, twice that backward, plus
attention's two products a layer), at an assumed sustained rate (RATE_TFLOPS below), forward one
third of the step. Each gradient is ready when the backward pass of its module ends; a tied
embedding when its last use (the input) has been differentiated. These are shapes to test the
model on, not measurements of any GPU: the rate is chosen so that the steps are 0.2-1 s, as in
the shipped workloads.
"""
import math
import os
import sys

RATE_TFLOPS = 8.0  # sustained fp32, a P100-class GPU (the shipped workloads: ResNet-50 at 5.4)


class Builder:
    """Collects modules in forward order: (name, [(param, shape)], forward FLOPs)."""

    def __init__(self, tokens):
        self.tokens = tokens
        self.modules = []

    def linear(self, name, fan_in, fan_out, bias=True):
        params = [(name + ".weight", (fan_out, fan_in))]
        if bias:
            params.append((name + ".bias", (fan_out,)))
        self.modules.append((name, params, 2 * self.tokens * fan_in * fan_out))

    def norm(self, name, d):
        self.modules.append((name, [(name + ".weight", (d,)), (name + ".bias", (d,))], 5 * self.tokens * d))

    def attention_products(self, name, seq, d, batch):
        # softmax(QK^T)V: two products of seq x seq x d per sequence
        self.modules.append((name, [], 2 * 2 * batch * seq * seq * d))

    def embedding(self, name, rows, d):
        self.modules.append((name, [(name + ".weight", (rows, d))], self.tokens * d))

    def uses(self, name, fan_in, fan_out):
        """A product with an existing parameter (a tied output layer): FLOPs, no new gradient."""
        self.modules.append((name, [], 2 * self.tokens * fan_in * fan_out))


def encoder_layer(b, prefix, d, ffn, seq, batch, cross=False):
    b.norm(prefix + ".ln1", d)
    b.linear(prefix + ".attn.qkv", d, 3 * d)
    b.attention_products(prefix + ".attn.products", seq, d, batch)
    b.linear(prefix + ".attn.out", d, d)
    if cross:
        b.norm(prefix + ".ln_cross", d)
        b.linear(prefix + ".cross.q", d, d)
        b.linear(prefix + ".cross.kv", d, 2 * d)
        b.attention_products(prefix + ".cross.products", seq, d, batch)
        b.linear(prefix + ".cross.out", d, d)
    b.norm(prefix + ".ln2", d)
    b.linear(prefix + ".mlp.in", d, ffn)
    b.linear(prefix + ".mlp.out", ffn, d)


def gpt_tied(layers=6, d=768, vocab=50257, seq=1024, batch=8):
    b = Builder(seq * batch)
    b.embedding("wte", vocab, d)
    b.embedding("wpe", seq, d)
    for i in range(layers):
        encoder_layer(b, "h.%d" % i, d, 4 * d, seq, batch)
    b.norm("ln_f", d)
    b.uses("lm_head(wte)", d, vocab)
    return b, "tied"


def t5_tied(layers=8, d=512, vocab=32128, seq=512, batch=16):
    b = Builder(seq * batch)
    b.embedding("shared", vocab, d)
    for i in range(layers):
        encoder_layer(b, "encoder.%d" % i, d, 4 * d, seq, batch)
    b.norm("encoder.ln_f", d)
    for i in range(layers):
        encoder_layer(b, "decoder.%d" % i, d, 4 * d, seq, batch, cross=True)
    b.norm("decoder.ln_f", d)
    b.uses("lm_head(shared)", d, vocab)
    return b, "tied"


def many_small(layers=48, d=256, seq=256, batch=32):
    b = Builder(seq * batch)
    b.linear("input", 64, d)
    for i in range(layers):
        encoder_layer(b, "block.%d" % i, d, 4 * d, seq, batch)
    b.norm("ln_f", d)
    b.linear("head", d, 10)
    return b, None


def one_huge(rows=1 << 20, d=64, batch=131072):
    b = Builder(batch)
    b.embedding("table", rows, d)  # 64 Mi elements, sparse in reality, dense here (Horovod's dense path)
    dims = [d + 13, 1024, 1024, 512, 256, 1]
    for i in range(len(dims) - 1):
        b.linear("mlp.%d" % i, dims[i], dims[i + 1])
    # The table's lookups cost little; the MLP dominates the compute.
    return b, None


def vit_b16(layers=12, d=768, seq=197, batch=64):
    b = Builder(seq * batch)
    b.linear("patch_embed", 3 * 16 * 16, d)
    b.modules.append(("pos_embed", [("pos_embed", (seq, d)), ("cls_token", (1, d))], 0))
    for i in range(layers):
        encoder_layer(b, "blocks.%d" % i, d, 4 * d, seq, batch)
    b.norm("norm", d)
    b.linear("head", d, 1000)
    return b, None


def bert_base(layers=12, d=768, vocab=30522, seq=512, batch=8):
    b = Builder(seq * batch)
    b.embedding("embeddings.word", vocab, d)
    b.embedding("embeddings.position", seq, d)
    b.embedding("embeddings.token_type", 2, d)
    b.norm("embeddings.ln", d)
    for i in range(layers):
        encoder_layer(b, "encoder.%d" % i, d, 4 * d, seq, batch)
    b.linear("pooler", d, d)
    b.linear("mlm.transform", d, d)
    b.norm("mlm.ln", d)
    b.uses("mlm.decoder(embeddings.word)", d, vocab)
    b.modules.append(("mlm.decoder.bias", [("mlm.decoder.bias", (vocab,))], 0))
    return b, "tied"


SHAPES = {"gpt_tied": gpt_tied, "t5_tied": t5_tied, "many_small": many_small,
          "one_huge": one_huge, "vit_b16": vit_b16, "bert_base": bert_base}


def workload_text(name, builder, tied):
    total = sum(f for _, _, f in builder.modules)
    step_ms = 3 * total / (RATE_TFLOPS * 1e12) * 1e3  # forward + backward (twice the forward)
    backward_us = step_ms * 2 / 3 * 1e3
    lines, pending_us, params = [], 0.0, 0
    tied_params = builder.modules[0][1] if tied else []
    for mod_name, mod_params, flops in reversed(builder.modules):
        pending_us += backward_us * flops / total
        if tied and mod_params is tied_params:
            continue  # ready last, below
        for p, shape in mod_params:
            lines.append("grad %.1f %s %s" % (pending_us, p, "x".join(map(str, shape))))
            pending_us = 0.0
            params += math.prod(shape)
    for p, shape in tied_params:
        lines.append("grad %.1f %s %s" % (pending_us, p, "x".join(map(str, shape))))
        pending_us = 0.0
        params += math.prod(shape)
    text = ("# %s: %.2f M parameters in %d gradient tensors, %.2f TFLOPs forward a step.\n"
            "# Written by generate_shape_workloads.py; do not edit by hand.\n"
            "# grad <compute before it is ready, us> <parameter> <shape>, in backward order.\n"
            "riseml-workload 1\n"
            "model %s\n"
            "source generate_shape_workloads.py: matrix-product FLOPs at an assumed %.0f TFLOP/s\n"
            "batch %d\n"
            "step_ms %.1f\n"
            "forward_ms %.1f\n" % (name, params / 1e6, len(lines), total / 1e12, name, RATE_TFLOPS,
                                   1, step_ms, step_ms / 3)) + "\n".join(lines) + "\n"
    if pending_us > 0:
        text += "tail_us %.1f\n" % pending_us
    return text, len(lines), params, step_ms


def main():
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    names = sys.argv[2:] or list(SHAPES)
    os.makedirs(out_dir, exist_ok=True)
    for name in names:
        if name not in SHAPES:
            sys.exit("generate_shape_workloads.py: no shape '%s' (have: %s)" % (name, ", ".join(SHAPES)))
        builder, tied = SHAPES[name]()
        text, tensors, params, step_ms = workload_text(name, builder, tied)
        with open(os.path.join(out_dir, name + ".workload"), "w") as f:
            f.write(text)
        print("%s: %d tensors, %.2f M parameters, step %.1f ms" % (name, tensors, params / 1e6, step_ms))


if __name__ == "__main__":
    main()
