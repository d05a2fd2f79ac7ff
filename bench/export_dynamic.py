#!/usr/bin/env python3
"""Exports small transformers with a dynamic sequence axis, for the shape
buckets of `xcomp compile --dynamic` (docs/cli.md) and their tests.

  gpt2-dyn    GPT-2 (e2e_torch.build "gpt2"): 2 layers, d 64, 4 heads,
              vocabulary 512, causal attention, learned positions
  llama-dyn   Llama-style (e2e_torch.build "llama"): 2 layers, d 64, 4 query
              heads, 2 key/value heads (GQA), RoPE, RMSNorm, SwiGLU
  encoder-dyn a BERT-style encoder: input_ids and attention_mask, additive
              mask (1 - mask) * -10000, no causal mask

Each is exported with the dynamo exporter (opset 18), input dims
[1, seq] with seq symbolic in 1..256, random weights (seeded). For each
model the script also writes PyTorch's outputs at seq 13 and the inputs,
as <name>/test_data_set_0/{input,output}_K.pb (ONNX TensorProto), so the
exported graph is checked against the framework it came from.

Usage: export_dynamic.py --out DIR   (needs torch and onnx)
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def encoder(torch):
    nn = torch.nn
    F = torch.nn.functional

    class Layer(nn.Module):
        def __init__(self, d, h):
            super().__init__()
            self.h, self.hd = h, d // h
            self.qkv = nn.Linear(d, 3 * d)
            self.o = nn.Linear(d, d)
            self.n1 = nn.LayerNorm(d)
            self.n2 = nn.LayerNorm(d)
            self.fc = nn.Linear(d, 4 * d)
            self.proj = nn.Linear(4 * d, d)

        def forward(self, x, bias):
            b, s, d = x.shape
            q, k, v = self.qkv(x).split(d, dim=-1)
            q = q.view(b, s, self.h, self.hd).transpose(1, 2)
            k = k.view(b, s, self.h, self.hd).transpose(1, 2)
            v = v.view(b, s, self.h, self.hd).transpose(1, 2)
            a = torch.softmax(q @ k.transpose(-1, -2) / self.hd ** 0.5 + bias, dim=-1)
            y = (a @ v).transpose(1, 2).reshape(b, s, d)
            x = self.n1(x + self.o(y))
            return self.n2(x + self.proj(F.gelu(self.fc(x))))

    class Encoder(nn.Module):
        def __init__(self, vocab=512, d=64, h=4, layers=2, ctx=256):
            super().__init__()
            self.wte = nn.Embedding(vocab, d)
            self.wpe = nn.Embedding(ctx, d)
            self.layers = nn.ModuleList(Layer(d, h) for _ in range(layers))

        def forward(self, ids, mask):
            s = ids.shape[1]
            x = self.wte(ids) + self.wpe(torch.arange(s, device=ids.device))
            bias = (1.0 - mask[:, None, None, :].to(x.dtype)) * -10000.0
            for layer in self.layers:
                x = layer(x, bias)
            return x

    return Encoder()


def save_pb(onnx, numpy_array, path):
    from onnx import numpy_helper
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(numpy_array).SerializeToString())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seq", type=int, default=13)
    args = ap.parse_args()
    import onnx
    import torch
    from e2e_torch import build
    torch.manual_seed(0)
    small = dict(layers=2, d=64, heads=4, ff=256, vocab=512, ctx=256)
    models = {
        "gpt2-dyn": (build("gpt2", torch, kv_heads=4, **small), False),
        "llama-dyn": (build("llama", torch, kv_heads=2, **small), False),
        "encoder-dyn": (encoder(torch), True),
    }
    seq = torch.export.Dim("seq", min=2, max=256)
    for name, (model, with_mask) in models.items():
        model.eval()
        d = os.path.join(args.out, name)
        os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
        ids = torch.randint(0, 512, (1, args.seq))
        inputs = (ids,)
        names = ["input_ids"]
        shapes = {"ids": {1: seq}}
        if with_mask:
            mask = torch.ones(1, args.seq, dtype=torch.int64)
            mask[0, -3:] = 0
            inputs = (ids, mask)
            names = ["input_ids", "attention_mask"]
            shapes = {"ids": {1: seq}, "mask": {1: seq}}
        path = os.path.join(d, "model.onnx")
        torch.onnx.export(model, inputs, path, dynamo=True, opset_version=18, input_names=names,
                          output_names=["out"], dynamic_shapes=shapes, external_data=False)
        m = onnx.load(path)
        dims = [[x.dim_param or x.dim_value for x in i.type.tensor_type.shape.dim] for i in m.graph.input]
        with torch.no_grad():
            y = model(*inputs)
        for k, t in enumerate(inputs):
            save_pb(onnx, t.numpy(), os.path.join(d, "test_data_set_0", f"input_{k}.pb"))
        save_pb(onnx, y.numpy(), os.path.join(d, "test_data_set_0", "output_0.pb"))
        ops = sorted({n.op_type for n in m.graph.node})
        print(f"{name}: inputs {dims}, {len(m.graph.node)} nodes, ops {' '.join(ops)}")


if __name__ == "__main__":
    main()
