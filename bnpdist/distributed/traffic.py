"""What computations cost a Dask cluster: tasks run, graph bytes sent, bytes the workers served,
and (:func:`tasks_run`) each task's compute seconds.

:func:`watch` installs :class:`TrafficPlugin` on the scheduler; :func:`traffic` reads the running
totals (difference two readings for one pass).  Graph bytes are the pickled task specifications
the client submitted — a value passed inside a task (rather than as the result of another task)
counts here; bytes served are what the workers sent to peers and to the client (Dask's
``transfer_outgoing_bytes_total``).
"""
from __future__ import annotations

import pickle
import time
from contextlib import contextmanager
from typing import Iterator

import dask
from distributed import Client, SchedulerPlugin, get_task_stream

NAME = "bnpdist-traffic"


class TrafficPlugin(SchedulerPlugin):
    """Counts tasks sent to workers and the pickled size of every task specification received
    (once per key while the scheduler knows it: a graph also lists the keys it depends on)."""

    name = NAME

    def __init__(self):
        self.tasks, self.graph_bytes = 0, 0
        self._known: set = set()

    async def start(self, scheduler):
        self.reset(scheduler)

    def reset(self, scheduler):
        """Counts from zero; the tasks the scheduler holds now were sent before."""
        self.tasks, self.graph_bytes = 0, 0
        self._known = set(scheduler.tasks)

    def update_graph(self, scheduler, *, tasks, **kw):
        for key in tasks:
            ts = scheduler.tasks.get(key)
            if key not in self._known and ts is not None and ts.run_spec is not None:
                self._known.add(key)
                self.graph_bytes += len(pickle.dumps(ts.run_spec, protocol=5))

    def transition(self, key, start, finish, *args, **kw):
        self.tasks += finish == "processing"
        if finish == "forgotten":
            self._known.discard(key)


def _reset(dask_scheduler) -> bool:
    plugin = dask_scheduler.plugins.get(NAME)
    if plugin is not None:
        plugin.reset(dask_scheduler)
    return plugin is not None


def _totals(dask_scheduler):
    plugin = dask_scheduler.plugins[NAME]
    return plugin.tasks, plugin.graph_bytes


def _served(dask_worker):
    return dask_worker.transfer_outgoing_bytes_total


def watch(client: Client) -> None:
    """Start counting on ``client``'s scheduler (again: the counts restart from zero)."""
    if not client.run_on_scheduler(_reset):
        client.register_plugin(TrafficPlugin(), name=NAME)


def traffic(client: Client) -> dict[str, int]:
    """Totals since :func:`watch`: ``tasks``, ``graph_bytes``, ``served_bytes`` (summed over the
    workers now alive)."""
    tasks, graph = client.run_on_scheduler(_totals)
    return {"tasks": tasks, "graph_bytes": graph, "served_bytes": sum(client.run(_served).values())}


@contextmanager
def tasks_run(client: Client) -> Iterator[list[dict]]:
    """The tasks ``client``'s cluster runs inside the block: on exit the list yielded holds one
    dict per task, ``key``, ``worker``, ``start`` (on this process's ``time.perf_counter``
    clock) and ``compute`` (seconds spent computing it), from Dask's task stream."""
    records: list[dict] = []
    with get_task_stream(client=client) as ts:
        yield records
    shift = time.time() - time.perf_counter()
    for r in ts.data:
        spans = [s for s in r["startstops"] if s["action"] == "compute"]
        if spans:
            records.append({"key": str(r["key"]), "worker": r["worker"],
                            "start": min(s["start"] for s in spans) - shift,
                            "compute": sum(s["stop"] - s["start"] for s in spans)})


def spill_target() -> float:
    """The fraction of its memory limit past which a Dask worker spills to disk."""
    return float(dask.config.get("distributed.worker.memory.target"))
