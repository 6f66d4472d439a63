"""Scaling of the AG News training step on one machine: 1 process × 2 threads against
2 MPI processes × 1 thread (data-parallel, the same global batch), in samples/s, and the
gradient all-reduce time per step of the 2-process run.

    python bench/distributed_scaling.py                 # the AG News sizes (batch 32, seq 256)
    python bench/distributed_scaling.py --steps 2 --seq 32 --d-model 32 --layers 1   # a smoke run

It runs itself twice as a worker (``--worker``): once alone with ``EMBER_NUM_THREADS=2``, once
under ``python -m ember.distributed.launch -n 2 --threads-per-rank 1``; each worker times
``--steps`` training steps (forward, backward, gradient mean across ranks, Adam) after one
warm-up step and prints one JSON line, which this driver reads. Needs mpi4py and an mpiexec
(``pip install "ember[distributed]"``). On a GPU machine, ``--device cuda`` times the same with
one GPU per rank over NCCL (needs as many GPUs as ranks).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conftest  # noqa: F401   (ember's thread settings, as in the other benchmarks)
import numpy as np
from sizes import BATCH, CLASSES, D_FF, D_MODEL, HEADS, SEQ, VOCAB

RESULT_TAG = "distributed_scaling:"


def _args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10, help="timed steps per run (after 1 warm-up)")
    parser.add_argument("--batch", type=int, default=BATCH, help="global batch (split across ranks)")
    parser.add_argument("--seq", type=int, default=SEQ)
    parser.add_argument("--d-model", type=int, default=D_MODEL)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--device", default="cpu", help="cpu, or cuda (one GPU per rank, NCCL)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def _worker(args) -> None:
    import ember
    from ember import nn
    from ember.distributed import GradientAverager, MpiCommunicator, NcclCommunicator, launched_distributed
    from ember.optim import AdamConfig, GradientsParams

    communicator = None
    if launched_distributed():
        communicator = NcclCommunicator() if args.device.startswith("cuda") else MpiCommunicator()
    rank, world = (communicator.rank, communicator.world_size) if communicator else (0, 1)
    device = f"cuda:{communicator.device}" if args.device.startswith("cuda") and communicator else args.device
    d_ff = args.d_model * D_FF // D_MODEL

    class TextClassifier(nn.Module):
        def __init__(self):
            self.tok = nn.EmbeddingConfig(VOCAB, args.d_model).init(device)
            self.pos = nn.EmbeddingConfig(args.seq, args.d_model).init(device)
            self.encoder = nn.TransformerEncoderConfig(
                args.d_model, d_ff, HEADS, args.layers, norm_first=True, quiet_softmax=True
            ).init(device)
            self.head = nn.LinearConfig(args.d_model, CLASSES).init(device)

        def forward(self, tokens, mask):
            b, s = tokens.shape
            pos = ember.arange(s, device=tokens.device).unsqueeze(0).expand(b, s)
            x = (self.pos(pos) + self.tok(tokens)) / 2
            return self.head(self.encoder(nn.TransformerEncoderInput(x).mask_pad(mask))[:, 0])

    ember.seed(0)
    model = TextClassifier()
    loss_fn = nn.CrossEntropyLossConfig().init()
    optim = AdamConfig().init()
    averager = GradientAverager(communicator) if communicator else None
    local = args.batch // world
    rng = np.random.default_rng(rank)
    tokens = rng.integers(1, VOCAB, (local, args.seq))
    lengths = rng.integers(args.seq // 4, args.seq + 1, local)
    mask = np.arange(args.seq)[None, :] >= lengths[:, None]
    tokens[mask] = 0
    labels = rng.integers(0, CLASSES, local)
    tokens, mask, labels = (ember.tensor(a, device=device) for a in (tokens, mask, labels))

    def step() -> float:
        nonlocal model
        loss = loss_fn(model(tokens, mask), labels)
        grads = GradientsParams.from_grads(loss.backward(), model)
        reduce_s = 0.0
        if averager is not None:
            started = time.perf_counter()
            grads = averager.average(grads, model, 1.0 / world)
            reduce_s = time.perf_counter() - started
        model = optim.step(1e-4, model, grads)
        if device.startswith("cuda"):
            ember.cuda.synchronize()
        return reduce_s

    step()  # warm-up: kernel compilation, buffers
    if communicator:
        communicator.barrier()
    reduce_times = []
    started = time.perf_counter()
    for _ in range(args.steps):
        reduce_times.append(step())
    if communicator:
        communicator.barrier()
    elapsed = time.perf_counter() - started
    if rank == 0:
        result = {
            "processes": world,
            "threads": os.environ.get("EMBER_NUM_THREADS", "default"),
            "samples_per_s": args.steps * local * world / elapsed,
            "step_s": elapsed / args.steps,
            "allreduce_ms": 1e3 * float(np.median(reduce_times)) if averager else 0.0,
            "params": model.num_params(),
        }
        print(RESULT_TAG + json.dumps(result), flush=True)


def _run(command: list[str], env: dict) -> dict:
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(
            f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-4000:]}"
        )
    for line in done.stdout.splitlines():
        if line.startswith(RESULT_TAG):
            return json.loads(line[len(RESULT_TAG) :])
    raise SystemExit(f"no result from {' '.join(command)}:\n{done.stdout[-2000:]}")


def main(argv=None) -> None:
    args = _args(argv)
    if args.worker:
        _worker(args)
        return
    forwarded = [
        "--worker", "--steps", str(args.steps), "--batch", str(args.batch), "--seq", str(args.seq),
        "--d-model", str(args.d_model), "--layers", str(args.layers), "--device", args.device,
    ]  # fmt: skip
    script = os.path.abspath(__file__)
    threads = str(args.ranks)
    env = {k: v for k, v in os.environ.items() if k not in ("EMBER_NUM_THREADS", "NUMBA_NUM_THREADS")}
    one = _run(
        [sys.executable, script, *forwarded],
        {**env, "EMBER_NUM_THREADS": threads, "OMP_NUM_THREADS": threads},
    )
    launcher = [
        sys.executable,
        "-m",
        "ember.distributed.launch",
        "-n",
        str(args.ranks),
        "--threads-per-rank",
        "1",
    ]
    many = _run([*launcher, script, *forwarded], env)
    print(
        f"AG News training step, global batch {args.batch}, seq {args.seq}, d_model {args.d_model}, "
        f"{args.layers} layers ({one['params']:,} parameters), {args.steps} timed steps, {args.device}"
    )
    print(f"{'run':<28}{'samples/s':>12}{'s/step':>10}{'all-reduce ms/step':>22}")
    for name, r in ((f"1 process x {threads} threads", one), (f"{args.ranks} processes x 1 thread", many)):
        print(f"{name:<28}{r['samples_per_s']:>12.1f}{r['step_s']:>10.3f}{r['allreduce_ms']:>22.2f}")
    print(f"speed-up: {many['samples_per_s'] / one['samples_per_s']:.2f}x")


if __name__ == "__main__":
    main()
