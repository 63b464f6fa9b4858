"""Three PyTorch models, written by hand and initialised from a fixed seed (nothing downloaded).

    build(name, seed=0) -> (model in eval mode, example inputs tuple)

* ``mlp``: 784-512-256-10 with ReLU; input ``float32[1, 784]``.
* ``resnet18``: ResNet-18-shaped CNN (BasicBlock x [2, 2, 2, 2], 64-128-256-512 channels,
  batch norm); input ``float32[1, 3, 224, 224]``, 1000 classes. Batch norm runs in eval mode
  with running statistics calibrated on random data, so activations stay in a realistic range.
* ``gpt2``: GPT-2-style decoder, 4 layers, d_model 256, 4 heads, 128 positions, causal
  self-attention, pre-layer-norm, tanh-GELU MLP (see `gelu_tanh`), token + learned position
  embeddings, vocab 1024, tied output projection; input ``int64[1, 128]`` token ids ->
  logits ``float32[1, 128, 1024]``.

Needs only torch (no torchvision).
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

MODELS = ("mlp", "resnet18", "gpt2")


# --- MLP ---------------------------------------------------------------------------------------


class MLP(nn.Module):
    def __init__(self, sizes=(784, 512, 256, 10)):
        super().__init__()
        layers = []
        for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
            layers.append(nn.Linear(a, b))
            if i < len(sizes) - 2:
                layers.append(nn.ReLU())
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


# --- ResNet-18 ---------------------------------------------------------------------------------


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + identity)


class ResNet18(nn.Module):
    def __init__(self, num_classes: int = 1000, blocks=(2, 2, 2, 2), widths=(64, 128, 256, 512)):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        stages, cin = [], 64
        for i, (n, cout) in enumerate(zip(blocks, widths)):
            stride = 1 if i == 0 else 2
            stage = [BasicBlock(cin, cout, stride)]
            stage += [BasicBlock(cout, cout, 1) for _ in range(n - 1)]
            stages.append(nn.Sequential(*stage))
            cin = cout
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x):
        x = self.maxpool(F.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def calibrate_batchnorm(model: nn.Module, shape, batches: int = 2, batch: int = 4):
    """Sets every BatchNorm's running statistics (and random affine terms) from random inputs.

    With freshly initialised statistics (mean 0, variance 1) eval-mode batch norm is close to the
    identity and activations grow layer after layer; calibrated statistics keep them near unit
    scale, like a trained network's.
    """
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.reset_running_stats()
            m.momentum = None  # cumulative average over the calibration batches
            with torch.no_grad():
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(torch.randn(batch, *shape[1:]))
    model.eval()


# --- GPT-2-style decoder -----------------------------------------------------------------------


def gelu_tanh(x):
    """GPT-2's tanh-approximated GELU, spelled out as GPT-2 (and Hugging Face's `NewGELU`) do.

    Not `F.gelu(x, approximate="tanh")`: torch-mlir (in iree-base-compiler 3.13) lowers
    `aten.gelu` with approximate="tanh" using sqrt(2/pi) = 0.7977240352174656, which is
    sqrt(2/(22/7)), not 0.7978845608...; that costs ~5e-5 absolute error per activation
    and ~9e-5 relative error in this model's logits. The elementwise ops lower exactly.
    """
    return (
        0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
    )


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, seq_len: int):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        mask = torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool))
        self.register_buffer("mask", mask.view(1, 1, seq_len, seq_len), persistent=False)

    def forward(self, x):
        b, t, c = x.shape
        h = self.n_heads
        q, k, v = self.qkv(x).split(c, dim=2)
        q = q.view(b, t, h, c // h).transpose(1, 2)
        k = k.view(b, t, h, c // h).transpose(1, 2)
        v = v.view(b, t, h, c // h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // h))
        att = att.masked_fill(~self.mask[:, :, :t, :t], float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, c)
        return self.proj(y)


class DecoderBlock(nn.Module):
    def __init__(self, d_model: int, n_heads: int, seq_len: int):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_heads, seq_len)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc = nn.Linear(d_model, 4 * d_model)
        self.out = nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.out(gelu_tanh(self.fc(self.ln2(x))))


class GPT2(nn.Module):
    def __init__(self, vocab=1024, seq_len=128, d_model=256, n_heads=4, n_layers=4):
        super().__init__()
        self.wte = nn.Embedding(vocab, d_model)
        self.wpe = nn.Embedding(seq_len, d_model)
        self.blocks = nn.ModuleList(
            [DecoderBlock(d_model, n_heads, seq_len) for _ in range(n_layers)]
        )
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied, as in GPT-2
        self.register_buffer("pos", torch.arange(seq_len).view(1, seq_len), persistent=False)
        for name, p in self.named_parameters():
            if name.endswith(".weight") and p.dim() == 2:
                nn.init.normal_(p, 0.0, 0.02)
            elif name.endswith(".bias"):
                nn.init.zeros_(p)

    def forward(self, ids):
        x = self.wte(ids) + self.wpe(self.pos[:, : ids.shape[1]])
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


# --- entry point -------------------------------------------------------------------------------


def build(name: str, seed: int = 0):
    """(model in eval mode, example inputs) for one of MODELS, deterministic in `seed`."""
    torch.manual_seed(seed)
    if name == "mlp":
        model = MLP().eval()
        inputs = (torch.randn(1, 784),)
    elif name == "resnet18":
        model = ResNet18()
        calibrate_batchnorm(model, (1, 3, 224, 224))
        inputs = (torch.randn(1, 3, 224, 224),)
    elif name == "gpt2":
        model = GPT2().eval()
        inputs = (torch.randint(0, 1024, (1, 128), dtype=torch.int64),)
    else:
        raise ValueError(f"unknown model {name!r}; expected one of {', '.join(MODELS)}")
    for p in model.parameters():
        p.requires_grad_(False)
    return model, inputs
