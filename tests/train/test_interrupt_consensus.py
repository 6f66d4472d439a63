"""A stop asked in one process of a distributed run ends every process at the same batch, even
when the signal is handled while a collective is in flight (as with Ctrl-C, which reaches the
ranks at slightly different times): the loop acts on the collective's answer, never on a flag
it reads again afterwards, so the ranks' collectives stay paired.

Two threads stand in for two ranks; their ``any_process`` is a real exchange through a barrier,
so a rank that stopped one batch early would pair its next collective with the other rank's
wrong one (before the fix: a false "non-finite loss in another process" on the other rank)."""

from __future__ import annotations

import threading

from helpers import train_toy as toy

from ember.train.strategy import TrainingStrategy


class _Exchange:
    """``any`` of two threads' flags: each call of one meets the same-numbered call of the other."""

    def __init__(self):
        self.barrier = threading.Barrier(2, timeout=30)
        self.flags = [False, False]

    def any(self, rank: int, flag: bool) -> bool:
        self.flags[rank] = flag
        self.barrier.wait()
        result = any(self.flags)
        self.barrier.wait()  # both have read the result before either writes its next flag
        return result


class _ThreadRank(TrainingStrategy):
    """One of the two ranks; ``signal_at``: the collective during which its stop is asked."""

    def __init__(self, rank: int, exchange: _Exchange, signal_at: int | None = None):
        self.rank, self.exchange, self.signal_at = rank, exchange, signal_at
        self.interrupter = None
        self.calls = 0

    def any_process(self, flag: bool) -> bool:
        self.calls += 1
        result = self.exchange.any(self.rank, flag)
        if self.calls == self.signal_at:  # the handler runs as the wait returns to Python
            self.interrupter.stop("Ctrl-C")
        return result


def _train_steps(directory) -> int:
    lines = (directory / "train" / "epoch-1" / "Loss.log").read_text().splitlines()
    return sum(1 for line in lines if not line.endswith(",final"))


def test_a_stop_during_a_collective_ends_both_ranks_at_the_same_batch(tmp_path):
    exchange = _Exchange()
    # Collectives per batch: the non-finite-loss check, then the stop check; the 6th is batch
    # 3's stop check, so both ranks must stop after batch 4 (whose checks see the stop).
    strategies = [_ThreadRank(0, exchange), _ThreadRank(1, exchange, signal_at=6)]
    results, errors = [None, None], [None, None]

    def run(rank: int) -> None:
        training = toy.training(tmp_path / f"rank{rank}", epochs=2).with_training_strategy(strategies[rank])
        strategies[rank].interrupter = training.interrupter()
        try:
            results[rank] = training.launch(toy.learner(seed=0, dropout=0.0))
        except BaseException as exc:  # reported below; frees the other rank
            errors[rank] = exc
            exchange.barrier.abort()

    threads = [threading.Thread(target=run, args=(rank,)) for rank in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a rank is still waiting"
    assert errors == [None, None], errors
    assert [r.interrupted for r in results] == [True, True]
    assert [_train_steps(tmp_path / f"rank{rank}") for rank in (0, 1)] == [4, 4]
    assert strategies[0].calls == strategies[1].calls
