#!/usr/bin/python3
"""Writes the riseml-replay workload files of this folder from torchvision's models.

    /usr/bin/python3 model/workloads/generate_workloads.py [OUT_DIR]

Each file lists a model's gradient tensors in the order a backward pass makes them ready, and
the compute time before each, for one training step at batch 64 on one GPU:
  - the order: the model's leaf modules as a real forward pass runs them (forward hooks),
    reversed;
  - the step time: a published single-GPU throughput (the TensorFlow benchmarks, NVIDIA DGX-1,
    Tesla P100, synthetic ImageNet data, batch 64 per GPU; tensorflow/docs_src/performance/
    benchmarks.md, May 2017); ResNet-101 is not in that table and is interpolated by FLOPs
    between ResNet-50 and ResNet-152;
  - the split: forward one third of the step, backward two thirds (the backward pass computes
    gradients of inputs and of weights, twice the forward's work), and every module's share of
    the backward its share of the forward FLOPs (convolutions and linear layers counted
    exactly, element-wise layers as one FLOP per output element).
Needs python3-torchvision (Debian); no weights are downloaded.
"""
import os
import sys

import torch
import torchvision

# name -> (constructor, input side, images/s on one P100 at batch 64, where that number is from)
TF_BENCH = "TensorFlow benchmarks, DGX-1 (Tesla P100), synthetic data, batch 64 (benchmarks.md, May 2017)"
MODELS = {
    "resnet50": (torchvision.models.resnet50, 224, 219.0, TF_BENCH + ": 219 images/s"),
    "resnet101": (torchvision.models.resnet101, 224, None,
                  TF_BENCH + ": interpolated by FLOPs between ResNet-50 (219) and ResNet-152 (91.8)"),
    "inception_v3": (lambda: torchvision.models.inception_v3(aux_logits=True, init_weights=False), 299, 142.0,
                     TF_BENCH + ": 142 images/s"),
    "vgg16": (torchvision.models.vgg16, 224, 154.0, TF_BENCH + ": 154 images/s"),
}
BATCH = 64


def leaf_modules_in_forward_order(model, side):
    """Runs one forward pass (train mode, batch 2) and returns [(module, flops per sample)]."""
    order = []

    def hook(module, inputs, output):
        out = output[0] if isinstance(output, (tuple, list)) else output
        per_sample = out.numel() // out.shape[0]
        if isinstance(module, torch.nn.Conv2d):
            k = module.kernel_size[0] * module.kernel_size[1]
            flops = 2 * per_sample * (module.in_channels // module.groups) * k
        elif isinstance(module, torch.nn.Linear):
            flops = 2 * per_sample * module.in_features
        else:
            flops = per_sample
        order.append((module, flops))

    handles = [m.register_forward_hook(hook) for m in model.modules() if not list(m.children())]
    model.train()
    with torch.no_grad():
        model(torch.zeros(2, 3, side, side))
    for h in handles:
        h.remove()
    return order


def forward_flops(model, side):
    return sum(f for _, f in leaf_modules_in_forward_order(model, side))


def workload_text(name, model, side, batch, step_ms, source, forward_share=1 / 3):
    """A workload file for `model` (a torch.nn.Module) whose step at `batch` takes `step_ms`."""
    order = leaf_modules_in_forward_order(model, side)
    total = sum(f for _, f in order)
    backward_ms = step_ms * (1 - forward_share)
    names = {id(p): n for n, p in model.named_parameters()}
    lines = []
    pending_us = 0.0
    params = 0
    for module, flops in reversed(order):
        pending_us += backward_ms * 1e3 * flops / total
        for p in module.parameters(recurse=False):
            if not p.requires_grad:
                continue
            shape = "x".join(str(d) for d in p.shape)
            lines.append(f"grad {pending_us:.1f} {names[id(p)]} {shape}")
            pending_us = 0.0
            params += p.numel()
    text = (f"# {name}: {params / 1e6:.2f} M parameters in {len(lines)} gradient tensors, "
            f"{total / 1e9:.2f} GFLOPs forward per image at {side}x{side}.\n"
            "# Written by generate_workloads.py from torchvision " + torchvision.__version__ +
            "; do not edit by hand.\n"
            "# grad <compute before it is ready, us> <parameter> <shape>, in backward order.\n"
            "riseml-workload 1\n"
            f"model {name}\n"
            f"source {source}\n"
            f"batch {batch}\n"
            f"step_ms {step_ms:.1f}\n"
            f"forward_ms {step_ms * forward_share:.1f}\n" + "\n".join(lines) + "\n")
    if pending_us > 0:  # compute after the last gradient (the input layer's backward)
        text += f"tail_us {pending_us:.1f}\n"
    return text, len(lines), params


def write(name, out_dir, resnet_rates):
    make, side, rate, source = MODELS[name]
    model = make()
    if rate is None:  # ResNet-101: seconds per image linear in FLOPs between its neighbours
        (f50, r50), (f152, r152) = resnet_rates
        total = forward_flops(model, side)
        s = 1 / r50 + (total - f50) / (f152 - f50) * (1 / r152 - 1 / r50)
        rate = 1 / s
        source += f": {rate:.0f} images/s"
    step_ms = BATCH / rate * 1e3
    text, tensors, params = workload_text(name, model, side, BATCH, step_ms, source)
    with open(os.path.join(out_dir, name + ".workload"), "w") as f:
        f.write(text)
    print(f"{name}: {tensors} tensors, {params / 1e6:.2f} M parameters, step {step_ms:.1f} ms")


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    torch.manual_seed(0)
    resnet_rates = ((forward_flops(torchvision.models.resnet50(), 224), 219.0),
                    (forward_flops(torchvision.models.resnet152(), 224), 91.8))
    for name in MODELS:
        write(name, out_dir, resnet_rates)


if __name__ == "__main__":
    main()
