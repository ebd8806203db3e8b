"""PyTorch reference for selmix's training-step throughput (issue 3).

Times the same steps selmix's model benchmarks time, on CPU with 2 threads:
  ce   784-256-10 MLP, cross-entropy SGD step, B=128
  mix  784-256-128 MLP + head (K=10), SelMix feature-mixup step (x1, x2 as
       one 2B batch through the backbone), B=128
Run:  /usr/bin/python3 bench/torch_step.py   (Debian: python3-torch)
"""
import time
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(2)
torch.manual_seed(0)
B, K = 128, 10


def bench(step, n=2000):
    for _ in range(100):
        step()
    t = time.perf_counter()
    for _ in range(n):
        step()
    dt = time.perf_counter() - t
    return n / dt


def ce_step_fn():
    net = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, K))
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    x, y = torch.rand(B, 784), torch.randint(0, K, (B,))

    def step():
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(net(x), y).backward()
        opt.step()
    return step


def mix_step_fn():
    g = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU())
    head = nn.Linear(128, K)
    opt = torch.optim.SGD([{"params": g.parameters(), "lr": 3e-4},
                           {"params": head.parameters(), "lr": 3e-3}], momentum=0.9, weight_decay=5e-4)
    x1, x2 = torch.rand(B, 784), torch.rand(B, 784)
    beta = torch.rand(B, 1) * 0.4 + 0.6
    y = torch.randint(0, K, (B,))

    def step():
        opt.zero_grad(set_to_none=True)
        f = g(torch.cat([x1, x2]))
        mixed = beta * f[:B] + (1 - beta) * f[B:]
        F.cross_entropy(head(mixed), y).backward()
        opt.step()
    return step


print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
print(f"ce  784-256-10      B=128: {bench(ce_step_fn()):7.0f} steps/s")
print(f"mix 784-256-128+10  B=128: {bench(mix_step_fn()):7.0f} steps/s")
